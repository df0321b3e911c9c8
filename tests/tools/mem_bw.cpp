// mem_bw [THREADS] [MIB]: measures this machine's memory bandwidth with streaming loops over
// buffers well beyond the last-level cache, on THREADS threads at once (each on its own slice,
// touched first by that thread), with loads and stores of the widest vector the CPU has (AVX-512,
// AVX2 or NEON). Prints one JSON line:
// {"threads": T, "vector": "avx512", "buffer_mib": M, "llc_mib": L, "read_gbps": R, "copy_gbps": C,
//  "triad_gbps": D}
// read: sum of one buffer (bytes read); copy: b = a (bytes read + bytes written); triad:
// a = b + s * c (two reads + one write). Written bytes are counted once, as STREAM does: the
// write-allocate read of a store's cache line is real traffic the figure leaves out. Best of 5
// passes each. `capgraph profile --bandwidth` takes read_gbps as "the measured bandwidth" (the
// highest and so the hardest bar: a kernel's traffic is mostly reads). MIB is the size of each
// buffer (default: 4 x the last-level cache, at least 256 and at most 1024).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// Eight independent accumulators: the vector add latency (4 cycles) times two loads per cycle,
// so the loads, not the adds, set the pace. Sources: Intel Optimization Reference Manual
// (Skylake-SP and later: 2 loads per cycle, FP add latency 4); Arm Cortex-A76 Software
// Optimization Guide (2 loads per cycle).
constexpr int kAccumulators = 8;

// Inlined into each width's functions so they are compiled with that width's instructions.
// n: floats, a multiple of lanes * kAccumulators (the slices are cut so).
template <typename vec, int lanes>
__attribute__((always_inline)) inline float read_run(const float *a, size_t n) {
  vec acc[kAccumulators] = {};
  for (size_t i = 0; i < n; i += lanes * kAccumulators) {
#pragma GCC unroll 8
    for (int k = 0; k < kAccumulators; k++) {
      vec v;
      std::memcpy(&v, a + i + k * lanes, sizeof v);
      acc[k] += v;
    }
  }
  float s = 0;
  for (int k = 0; k < kAccumulators; k++)
    for (int l = 0; l < lanes; l++) s += acc[k][l];
  return s;
}

template <typename vec, int lanes>
__attribute__((always_inline)) inline void copy_run(float *b, const float *a, size_t n) {
  for (size_t i = 0; i < n; i += lanes * kAccumulators) {
#pragma GCC unroll 8
    for (int k = 0; k < kAccumulators; k++) {
      vec v;
      std::memcpy(&v, a + i + k * lanes, sizeof v);
      std::memcpy(b + i + k * lanes, &v, sizeof v);
    }
  }
}

template <typename vec, int lanes>
__attribute__((always_inline)) inline void triad_run(float *a, const float *b, const float *c,
                                                     float s, size_t n) {
  for (size_t i = 0; i < n; i += lanes * kAccumulators) {
#pragma GCC unroll 8
    for (int k = 0; k < kAccumulators; k++) {
      vec x, y;
      std::memcpy(&x, b + i + k * lanes, sizeof x);
      std::memcpy(&y, c + i + k * lanes, sizeof y);
      x += y * s;
      std::memcpy(a + i + k * lanes, &x, sizeof x);
    }
  }
}

struct Width {
  const char *name;
  int lanes;
  float (*read)(const float *, size_t);
  void (*copy)(float *, const float *, size_t);
  void (*triad)(float *, const float *, const float *, float, size_t);
};

#if defined(__x86_64__)
typedef float vec8 __attribute__((vector_size(32)));
typedef float vec16 __attribute__((vector_size(64)));
__attribute__((target("avx2,fma"))) float read_avx2(const float *a, size_t n) {
  return read_run<vec8, 8>(a, n);
}
__attribute__((target("avx2,fma"))) void copy_avx2(float *b, const float *a, size_t n) {
  copy_run<vec8, 8>(b, a, n);
}
__attribute__((target("avx2,fma"))) void triad_avx2(float *a, const float *b, const float *c,
                                                    float s, size_t n) {
  triad_run<vec8, 8>(a, b, c, s, n);
}
// "prefer-vector-width" is LLVM's; for GCC and clang alike the explicit 64-byte vector type is
// enough.
__attribute__((target("avx512f"))) float read_avx512(const float *a, size_t n) {
  return read_run<vec16, 16>(a, n);
}
__attribute__((target("avx512f"))) void copy_avx512(float *b, const float *a, size_t n) {
  copy_run<vec16, 16>(b, a, n);
}
__attribute__((target("avx512f"))) void triad_avx512(float *a, const float *b, const float *c,
                                                     float s, size_t n) {
  triad_run<vec16, 16>(a, b, c, s, n);
}
#else
typedef float vec4 __attribute__((vector_size(16)));
float read_neon(const float *a, size_t n) { return read_run<vec4, 4>(a, n); }
void copy_neon(float *b, const float *a, size_t n) { copy_run<vec4, 4>(b, a, n); }
void triad_neon(float *a, const float *b, const float *c, float s, size_t n) {
  triad_run<vec4, 4>(a, b, c, s, n);
}
#endif

// The widest vector this CPU (and its OS: XSAVE state) runs.
Width width_widest() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return {"avx512", 16, read_avx512, copy_avx512, triad_avx512};
  return {"avx2", 8, read_avx2, copy_avx2, triad_avx2};
#else
  return {"neon", 4, read_neon, copy_neon, triad_neon};
#endif
}

long llc_bytes() {
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return std::max({l3, l2, 0L});
}

}  // namespace

int main(int argc, char **argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256) {
    std::fprintf(stderr,
                 "mem_bw: THREADS must be 1..256, got '%s'\nusage: mem_bw [THREADS] [MIB]\n",
                 argv[1]);
    return 2;
  }
  const long llc = llc_bytes();
  long mib = std::clamp(4 * llc >> 20, 256L, 1024L);
  if (argc > 2) {
    mib = std::atol(argv[2]);
    if (mib < 1 || mib > 16384) {
      std::fprintf(stderr,
                   "mem_bw: MIB must be 1..16384, got '%s'\nusage: mem_bw [THREADS] [MIB]\n",
                   argv[2]);
      return 2;
    }
  }
  const Width w = width_widest();
  // Each thread's slice is a whole number of unrolled steps, 4 KiB aligned.
  const size_t step = 1024;
  const size_t per_thread =
      std::max<size_t>(step, ((size_t)mib << 20) / sizeof(float) / threads / step * step);
  const size_t n = per_thread * threads;
  float *a = static_cast<float *>(std::aligned_alloc(4096, n * sizeof(float)));
  float *b = static_cast<float *>(std::aligned_alloc(4096, n * sizeof(float)));
  float *c = static_cast<float *>(std::aligned_alloc(4096, n * sizeof(float)));
  if (!a || !b || !c) {
    std::fprintf(stderr, "mem_bw: cannot allocate 3 x %ld MiB\n", mib);
    return 1;
  }
  // Each pass: all threads run `body(t, first, count)` on their slices at once; returns seconds.
  auto pass = [&](auto body) {
    auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; t++)
      pool.emplace_back([&, t] { body(t, per_thread * t, per_thread); });
    for (auto &th : pool) th.join();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  // First touch by the thread that will stream the slice (its NUMA node, its pages mapped).
  pass([&](int, size_t at, size_t count) {
    for (size_t i = at; i < at + count; i++) a[i] = 1.0f, b[i] = 2.0f, c[i] = 0.5f;
  });
  std::vector<float> sinks(threads);
  auto best_gbps = [&](double bytes, auto body) {
    double best = 0;
    for (int rep = 0; rep < 5; rep++) best = std::max(best, bytes / pass(body) / 1e9);
    return best;
  };
  const double bytes = double(n) * sizeof(float);
  const double read =
      best_gbps(bytes, [&](int t, size_t at, size_t count) { sinks[t] += w.read(a + at, count); });
  const double copy =
      best_gbps(2 * bytes, [&](int, size_t at, size_t count) { w.copy(b + at, a + at, count); });
  const double triad = best_gbps(3 * bytes, [&](int, size_t at, size_t count) {
    w.triad(a + at, b + at, c + at, 0.5f, count);
  });
  if (sinks[0] == 42) std::printf(" ");  // keeps the read loop alive
  std::printf(
      "{\"threads\": %d, \"vector\": \"%s\", \"buffer_mib\": %.0f, \"llc_mib\": %ld, "
      "\"read_gbps\": %.1f, \"copy_gbps\": %.1f, "
      "\"triad_gbps\": %.1f}\n",
      threads, w.name, bytes / (1 << 20), llc >> 20, read, copy, triad);
  std::free(a);
  std::free(b);
  std::free(c);
  return 0;
}
