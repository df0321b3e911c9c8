// What a capture is planned as before it is written: where each buffer lives in the arena, and
// how each launch's work is split over the replay threads. compile_model plans, capture_build
// (capture_write.h) only writes what was planned.
#pragma once
#include <cstdint>
#include <vector>

#include "codegen/cpu_codegen.h"
#include "memory/arena_plan.h"
#include "schedule/kernel.h"

namespace capgraph {

// The arena: every buffer that is not a weight, with its lifetime and its planned offset.
struct ArenaLayout {
  std::vector<int> buffers;            // Program buffers in the arena, in request order
  std::vector<ArenaRequest> requests;  // their sizes and lifetimes (capture_arena_requests)
  ArenaPlan plan;                      // one offset per request
};

struct CapturePlan {
  ArenaLayout arena;
  // Per Program kernel: threads + 1 bounds of the work items each thread runs (Launch.partition).
  std::vector<std::vector<uint64_t>> partitions;
};

// Buffer lifetimes in kernel steps, as the planner sees them (inputs/outputs pinned).
std::vector<ArenaRequest> capture_arena_requests(const Program &p, std::vector<int> &arena_buffers);

// The arena plan, checked: no two live buffers overlap.
ArenaLayout capture_arena_plan(const Program &p);

// Even slices of each launch's work range over `threads`, except that a launch too small to pay
// for the threads meeting runs whole on thread 0.
std::vector<std::vector<uint64_t>> capture_partitions_plan(const Program &p,
                                                           const CodegenResult &code, int threads);

// Both plans: what capture_build needs besides the program and its code.
CapturePlan capture_plan(const Program &p, const CodegenResult &code, int threads);

// The bytes a launch of k reads (every load's whole buffer) and writes (its output elements).
uint64_t kernel_bytes_read(const Kernel &k, const Program &p);
uint64_t kernel_bytes_written(const Kernel &k);

}  // namespace capgraph
