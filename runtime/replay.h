// The command list, built once at load from a verified capture, and its replay. Replay only walks
// this list: no allocation, no exceptions, no decisions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "elf_link.h"
#include "thread_pool.h"

namespace capgraph {

// The CPU kernel ABI (capture.fbs, table Kernel).
using kernel_entry = void (*)(void *const *buffers, const int64_t *scalars, int64_t begin,
                              int64_t end);

// Every call into a linked kernel goes through here (see CAPGRAPH_CALLS_LINKED_CODE).
CAPGRAPH_CALLS_LINKED_CODE inline void kernel_call(kernel_entry entry, void *const *buffers,
                                                   const int64_t *scalars, int64_t begin,
                                                   int64_t end) {
  entry(buffers, scalars, begin, end);
}

struct replay_step {
  kernel_entry entry;      // a launch, or nullptr for a copy
  void *const *buffers;    // launch: resolved buffer addresses
  const int64_t *scalars;  // launch: the scalars (nullptr when there are none)
  const int64_t *bounds;   // launch: thread t runs [bounds[t], bounds[t+1])
  void *dst;               // copy
  const void *src;         // copy
  size_t size;             // copy: bytes
  bool barrier_after;      // threads meet after this step (replay_plan_barriers decides)
};

struct replay_plan {
  int threads = 1;
  bool workers_idle = false;  // every step runs on thread 0 alone: replay without the pool
  std::vector<replay_step> steps;
  std::vector<void *> buffers;  // storage the steps point into
  std::vector<int64_t> scalars;
  std::vector<int64_t> bounds;
  // Where each `buffers` entry and each copy's ends were in the arena (k_not_arena for a weight),
  // kept so replay_plan_rebase can move them to caller memory and back (capgraph_bind_*).
  std::vector<uint64_t> buffers_at;
  std::vector<uint64_t>
      buffers_size;  // bytes each binding may touch from its start (the capture's)
  std::vector<uint64_t> copies_dst_at, copies_src_at;  // one per step (k_not_arena for a launch)
};

constexpr uint64_t k_not_arena = ~uint64_t(0);

// Splitting a launch between threads costs a barrier after it (and usually one before it): about
// 0.1-0.4 us when every thread is running, measured on a 2-core EPYC (tests/tools/replay_overhead,
// README "Performance"), far more when a thread has to be woken. Below this many flops plus bytes
// moved (a few microseconds of work) a launch is not worth it. The compiler's partitions
// (compiler/capture) and the runtime's own split use this one value.
constexpr uint64_t k_split_min_cost = uint64_t(1) << 16;

// Resolves every step of `c` against the arena, the weights (address of each blob) and the
// kernels' entry points. With threads == c->threads() the compiler's partitions are used;
// otherwise each work range is split evenly, except a launch of one unit of work or too small to
// be worth a barrier (flops + bytes read + bytes written < 2^16), which runs whole on thread 0.
// Throws std::bad_alloc only.
void replay_plan_build(const fb::Capture *c, uint8_t *arena,
                       const std::vector<const uint8_t *> &weights,
                       const std::vector<kernel_entry> &kernels, int threads, replay_plan *out);

// Sets every step's barrier_after. Threads must meet between two steps when a thread may read or
// overwrite what another wrote, so a barrier is kept unless every step since the previous barrier
// and the next step all run on one and the same thread (a launch whose work is one slice, a copy:
// thread 0): that thread runs them in program order, and the others have nothing to wait for.
// A chain of tiny launches the partition gives to one thread thus costs no barrier at all. The last
// step has none (the pool's end-of-run barrier follows). Also sets workers_idle. replay_plan_build
// calls it.
void replay_plan_barriers(replay_plan *plan);

// Points every launch binding and copy end that starts inside arena bytes [offset, offset + size)
// at `base` + its distance from `offset`: caller memory bound in place of an input or output, or
// `arena + offset` to unbind. Only pointers move, so a replay is as fast bound or not. The caller
// checks first that nothing crosses the range's edges (replay_plan_straddles).
void replay_plan_rebase(replay_plan *plan, uint64_t offset, uint64_t size, uint8_t *base);
// Whether a copy step or a launch binding reads or writes part of [offset, offset + size) and also
// bytes outside it (e.g. a kernel writing a larger buffer of which the range is a slice): such a
// step cannot be moved to caller memory. Returns the step's index, or -1 when none does.
int64_t replay_plan_straddles(const replay_plan &plan, uint64_t offset, uint64_t size);
// Replays the plan once. `pool` is nullptr for one thread (then nothing synchronises). Returns
// false when a thread did not reach a barrier within the pool's timeout (the pool is then broken
// and the replay incomplete).
bool replay_run(const replay_plan &plan, thread_pool *pool) noexcept;
// The same replay, also writing each step's wall time in nanoseconds (this replay puts a barrier
// after every step, so a step's time is from the end of the previous one until every thread
// finished it).
bool replay_run_timed(const replay_plan &plan, thread_pool *pool, uint64_t *step_ns) noexcept;

// How long a replay thread waits at a barrier for the others: 60 s, or CAPGRAPH_TIMEOUT_MS (1 ms
// to 1 hour). A step of a CPU replay is one launch, milliseconds even for large models, so the
// default only ever fires for a thread that is stuck. CAPGRAPH_ERR_ARGUMENT and *err for a value
// out of range.
capgraph_status replay_timeout_from_env(uint64_t *timeout_ns, std::string *err);

}  // namespace capgraph
