// fma_peak [THREADS]: measures this CPU's FP32 peak with independent fused multiply-add chains
// (enough of them to hide FMA latency), on 1..THREADS threads at once. Prints one JSON line:
// {"threads": T, "gflops": G, "gflops_per_thread": G/T}. The benchmark script divides model
// FLOPs by this to report % of peak.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#define VEC_TARGET __attribute__((target("avx2,fma")))
constexpr int kLanes = 8;
#else
#define VEC_TARGET
constexpr int kLanes = 4;
#endif
typedef float vec __attribute__((vector_size(kLanes * 4)));

VEC_TARGET static double fma_loop(long iters) {
  constexpr int kChains = 12;
  vec acc[kChains], a, b;
  for (int i = 0; i < kLanes; i++) {
    a[i] = 1.0000001f;
    b[i] = 1e-7f;
  }
  for (int c = 0; c < kChains; c++) acc[c] = b * (float)c;
  // Unrolled so the chains stay in registers (a loop over c would keep them in memory).
  for (long i = 0; i < iters; i++) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; c++) acc[c] = acc[c] * a + b;
  }
  double sink = 0;
  for (int c = 0; c < kChains; c++)
    for (int l = 0; l < kLanes; l++) sink += acc[c][l];
  return sink;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (threads < 1) threads = 1;
  const long iters = 20000000;
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<double> sinks(threads);
    for (int t = 0; t < threads; t++) pool.emplace_back([&, t] { sinks[t] = fma_loop(iters); });
    for (auto &th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double gflops = 2.0 * kLanes * 12 * (double)iters * threads / s / 1e9;
    if (gflops > best) best = gflops;
    if (sinks[0] == 42) std::printf(" ");  // keeps the loop alive
  }
  std::printf("{\"threads\": %d, \"gflops\": %.1f, \"gflops_per_thread\": %.1f}\n", threads, best, best / threads);
  return 0;
}
