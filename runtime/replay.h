// The command list, built once at load from a verified capture, and its replay. Replay only walks
// this list: no allocation, no exceptions, no decisions.
#pragma once
#include <cstdint>
#include <vector>

#include "capgraph/capture_generated.h"
#include "thread_pool.h"

namespace capgraph {

// The CPU kernel ABI (capture.fbs, table Kernel).
using kernel_entry = void (*)(void *const *buffers, const int64_t *scalars, int64_t begin,
                              int64_t end);

struct replay_step {
  kernel_entry entry;      // a launch, or nullptr for a copy
  void *const *buffers;    // launch: resolved buffer addresses
  const int64_t *scalars;  // launch: the scalars (nullptr when there are none)
  const int64_t *bounds;   // launch: thread t runs [bounds[t], bounds[t+1])
  void *dst;               // copy
  const void *src;         // copy
  size_t size;             // copy: bytes
};

struct replay_plan {
  int threads = 1;
  std::vector<replay_step> steps;
  std::vector<void *> buffers;  // storage the steps point into
  std::vector<int64_t> scalars;
  std::vector<int64_t> bounds;
};

// Resolves every step of `c` against the arena, the weights (address of each blob) and the
// kernels' entry points. With threads == c->threads() the compiler's partitions are used;
// otherwise each work range is split evenly. Throws std::bad_alloc only.
void replay_plan_build(const fb::Capture *c, uint8_t *arena,
                       const std::vector<const uint8_t *> &weights,
                       const std::vector<kernel_entry> &kernels, int threads, replay_plan *out);

// Replays the plan once. `pool` is nullptr for one thread (then nothing synchronises).
void replay_run(const replay_plan &plan, thread_pool *pool) noexcept;
// The same replay, also writing each step's wall time in nanoseconds (steps are separated by
// barriers, so a step's time is from the end of the previous one until every thread finished it).
void replay_run_timed(const replay_plan &plan, thread_pool *pool, uint64_t *step_ns) noexcept;

}  // namespace capgraph
