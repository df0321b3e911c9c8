// fma_peak [THREADS]: measures this CPU's FP32 peak with independent fused multiply-add chains
// (enough of them to hide FMA latency) on the widest vectors the CPU has (AVX-512, AVX2 or NEON),
// on 1..THREADS threads at once. Prints one JSON line:
// {"threads": T, "vector": "avx512", "lanes": 16, "gflops": G, "gflops_per_thread": G/T}.
// The benchmark script divides model FLOPs by this to report % of peak.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

namespace {

// 12 chains: FMA latency 4 cycles x 2 FMA units needs 8; 12 also covers 5-cycle latencies (Zen,
// Cortex-A75) while staying inside 16 registers. Sources: Intel Optimization Reference Manual
// (Skylake-SP and later: 2 FMA ports, latency 4), AMD Software Optimization Guides for Zen 4/5,
// Cortex-A75 Software Optimization Guide.
constexpr int kChains = 12;

// Inlined into each width's function so it is compiled with that width's instructions.
template <typename vec, int lanes>
__attribute__((always_inline)) inline double chains_run(long iters) {
  vec acc[kChains], a, b;
  for (int i = 0; i < lanes; i++) {
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
    for (int l = 0; l < lanes; l++) sink += acc[c][l];
  return sink;
}

#if defined(__x86_64__)
typedef float vec8 __attribute__((vector_size(32)));
typedef float vec16 __attribute__((vector_size(64)));
__attribute__((target("avx2,fma"))) double loop_avx2(long iters) {
  return chains_run<vec8, 8>(iters);
}
__attribute__((target("avx512f"))) double loop_avx512(long iters) {
  return chains_run<vec16, 16>(iters);
}
#else
typedef float vec4 __attribute__((vector_size(16)));
double loop_neon(long iters) { return chains_run<vec4, 4>(iters); }
#endif

struct Width {
  const char *name;
  int lanes;
  double (*loop)(long);
};

// The widest vector this CPU (and its OS: XSAVE state) runs.
Width width_widest() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {"avx512", 16, loop_avx512};
  return {"avx2", 8, loop_avx2};
#else
  return {"neon", 4, loop_neon};
#endif
}

}  // namespace

int main(int argc, char **argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (threads < 1) threads = 1;
  const Width w = width_widest();
  const long iters = 20000000;
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    std::vector<double> sinks(threads);
    for (int t = 0; t < threads; t++) pool.emplace_back([&, t] { sinks[t] = w.loop(iters); });
    for (auto &th : pool) th.join();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double gflops = 2.0 * w.lanes * kChains * (double)iters * threads / s / 1e9;
    if (gflops > best) best = gflops;
    if (sinks[0] == 42) std::printf(" ");  // keeps the loop alive
  }
  std::printf(
      "{\"threads\": %d, \"vector\": \"%s\", \"lanes\": %d, \"gflops\": %.1f, "
      "\"gflops_per_thread\": %.1f}\n",
      threads, w.name, w.lanes, best, best / threads);
  return 0;
}
