// Is each step of a capture as fast as this machine allows? The check of issue 17's acceptance:
// no kernel below 30% of the FP32 peak except memory-bound ones, which reach >= 50% of the
// measured memory bandwidth (so a memory-bound kernel meets it with either). `capgraph profile
// --peak G --bandwidth B` prints it per step; scripts/bench_kernels.sh lists the misses over a set
// of models.
#pragma once
#include <cstdint>
#include <string>

#include "capgraph/capture_generated.h"

namespace capgraph {

// The bars, and the size under which a step counts as small: when the ideal time of a step
// (its FLOPs at the peak or its bytes at the bandwidth, whichever is longer) is under
// kSmallStepUs, the fixed cost of a launch (the call, loop prologues, the threads meeting after
// it: about 0.5-1 us on this project's machines, NOTES "replay overhead") is a large part of
// whatever it takes, so it cannot reach either bar and is reported as "small", not as a miss.
constexpr double kComputeBar = 0.30;
constexpr double kMemoryBar = 0.50;
constexpr double kSmallStepUs = 2.0;

// What one step does, from the capture alone.
struct StepWork {
  uint64_t flops = 0;
  // Bytes a step must move at least: the bytes its output takes (Launch.bytes_written: the
  // elements it stores) plus the whole size of every other buffer it is bound to (its inputs,
  // weights and intermediates: Launch.buffer_sizes[1..], each binding once). Reuse through the
  // caches is not counted, so GB/s is the compulsory traffic's rate; a step reading only part of
  // a bound buffer (a slice) is counted as reading all of it. A copy moves 2 x its size.
  uint64_t bytes = 0;
  // Threads that get a non-empty part of the launch when it runs on `threads` threads (launches
  // too small to split run on thread 0 alone, whoever splits them: the compiler, or the runtime
  // with the same rule when the thread count differs from the capture's).
  uint32_t active_threads = 1;
};

StepWork step_work(const fb::Step *s, uint32_t capture_threads, uint32_t threads);

enum class StepBound { compute, memory, small };

struct StepVerdict {
  StepBound bound = StepBound::small;
  double gflops = 0, gbps = 0, intensity = 0;  // measured rates; FLOP per byte
  double peak_share = 0, bandwidth_share = 0;  // of the peak and bandwidth its active threads have
  bool meets = true;                           // reaches its bar (always true for small steps)
};

// Classifies a step by arithmetic intensity against the machine balance (peak / bandwidth), both
// scaled to the step's share of the threads (linearly: a step on 1 of 2 threads gets half of
// each). peak_gflops and bandwidth_gbps are for all `threads` (fma_peak and mem_bw at that count).
StepVerdict step_verdict(const StepWork &w, double ms, uint32_t threads, double peak_gflops,
                         double bandwidth_gbps);

const char *step_bound_name(StepBound b);

}  // namespace capgraph
