// A capture recorded into hardware queues once, replayed by writing a handful of words.
//
// Load: the arena, weights, code objects and kernel-argument blocks go into device memory; the
// whole launch list is encoded once into an indirect buffer for the compute queue (copies go to
// a copy queue, with signal/wait pairs between the two).
// Replay: wait for the previous replay; reset the cross-queue signal; write a few packets into
// the rings (call the indirect buffer, raise the timeline); ring the doorbells; wait with a
// timeout. Inputs and outputs live in the arena, which is CPU-visible (on a shadowed transport,
// transport.h, a host shadow: the inputs go up before the doorbell and the outputs come down after
// the wait), so no address changes between replays: what is written per replay does not depend
// on the number of kernels.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "encoder.h"
#include "host_twins.h"
#include "target.h"
#include "transport.h"

namespace capgraph::hcq {

struct graph_options {
  uint64_t timeout_ns = 10'000'000'000ull;  // one replay's bound
  uint64_t timeline_start = 0;              // first timeline value (tests start near 2^64)
  // The device's capture_attach hook (target.h), for the null device and the fakes; called once
  // the programs are in device memory. Empty for real devices.
  std::function<capgraph_status(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                std::string *err)>
      capture_attach;
};

// What graph::check found: the first launch whose device result differs from its host twin.
struct check_result {
  uint32_t launches_checked = 0;    // launches compared with their twins
  uint32_t launches_unchecked = 0;  // launches of kernels that carry no twin (not compared)
  bool differs = false;             // the rest is set only when true
  uint32_t step = 0, kernel = 0;
  uint64_t words_differ = 0;     // 32-bit words that differ
  double max_diff = 0;           // largest |device - twin| over the differing float words
  double tolerance = 0;          // what was allowed: 1e-3 * max |twin output| + 1e-5
  bool outside_outputs = false;  // a differing word lies outside the kernel's written bindings
  uint64_t first_offset = 0;     // arena byte offset of the first differing word
};

class graph {
 public:
  graph() = default;
  graph(const graph &) = delete;
  graph &operator=(const graph &) = delete;
  ~graph();

  // Builds on `dev` (kept; must outlive the graph), encoding with target `t`'s verbs. `c` must
  // have passed capture_verify for `t`. Errors start with `label`.
  static capgraph_status build(transport *dev, const target *t, const fb::Capture *c,
                               const char *label, const graph_options &opt,
                               std::unique_ptr<graph> *out, std::string *err);

  // One replay. No allocation, no exceptions on success.
  capgraph_status replay(std::string *err) noexcept;

  // One replay, step by step, for `--check`: each launch alone on the compute queue, waited for,
  // then its host twin run on a host copy of the arena as it was before the launch; the two
  // arenas are compared word by word (graph_check.cpp). Copies are done by the CPU. Stops at the
  // first launch that differs (*out says which and by how much; the status stays OK). The arena
  // then holds the device's results. Allocates; not for the hot path.
  capgraph_status check(const fb::Capture *c, const host_twins &twins, check_result *out,
                        std::string *err);
  // Zero-copy: the arena range [offset, offset + size) (one input or output) lives in the
  // caller's memory `host` (page-aligned, host_bytes >= size) for the following replays. Each
  // buffer is imported through the transport once (transport::import; kept until the graph
  // goes), then its address is patched into the kernel-argument blocks of the launches that use
  // the range: the words written depend on those launches, not on the kernel count. host ==
  // nullptr: back to the arena. Waits (bounded) for a replay still running. A range a copy step
  // touches cannot be bound (its address is inside the recorded commands).
  capgraph_status bind(uint64_t offset, uint64_t size, void *host, uint64_t host_bytes,
                       std::string *err);

  uint8_t *arena() const { return arena_.cpu; }
  // 32-bit words the CPU wrote to device-visible memory (rings, write pointers, doorbells,
  // signals) in the last replay.
  uint64_t words_written() const { return words_written_; }
  // Each step's device time in the last replay, in nanoseconds (from the engines' timestamps
  // after every step; count >= the number of steps). No allocation.
  void step_times(uint64_t *step_ns) const noexcept;
  uint32_t steps() const { return steps_; }
  uint64_t timeline() const { return timeline_; }

  // What was recorded, for golden tests and text dumps.
  const std::vector<uint32_t> &compute_commands() const { return ib_words_; }
  const std::vector<uint32_t> &copy_commands() const { return copy_words_; }
  const std::vector<uint32_t> &compute_ring_commands() const { return ring_words_; }

 private:
  // build()'s steps, in order; each fails with *err saying what (build puts the label first).
  capgraph_status memory_load(const fb::Capture *c, std::vector<uint64_t> *program_gpu,
                              std::string *err);
  capgraph_status kernels_resolve(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                  std::vector<dispatch> *kernels, std::string *err);
  capgraph_status kernargs_place(const fb::Capture *c, const std::vector<dispatch> &kernels,
                                 std::vector<uint64_t> *kernarg_at, std::string *err);
  capgraph_status commands_record(const fb::Capture *c, const std::vector<dispatch> &kernels,
                                  const std::vector<uint64_t> &kernarg_at, std::string *err);
  capgraph_status launch_prepare(uint32_t step, const fb::Launch *l,
                                 const std::vector<dispatch> &kernels,
                                 const std::vector<uint64_t> &kernarg_at, dispatch *out,
                                 std::string *err);
  capgraph_status device_ready(const fb::Capture *c, std::string *err);
  // Device memory the CPU can reach (a host shadow on a shadowed transport).
  capgraph_status alloc_visible(uint64_t size, memory_kind kind, memory *m, const char *what,
                                std::string *err);
  // A buffer's device address: the arena's, or a weight's.
  uint64_t address(const fb::BufferRef &b) const;

  transport *dev_ = nullptr;
  const target *target_ = nullptr;
  graph_options opt_;
  memory arena_, weights_, code_, kernargs_, signals_, ib_, scratch_;
  memory stamps_;  // steps + 1 clock values: before the first step, after each step
  uint32_t steps_ = 0;
  queue compute_, copy_;
  bool has_copy_queue_ = false;
  std::vector<uint32_t> ib_words_, copy_words_, ring_words_;
  std::vector<dispatch> launch_dispatch_;  // per step, as recorded (for check)
  std::vector<uint64_t> weight_at_;        // each weight's offset in weights_
  std::unique_ptr<encoder> ring_encoder_;
  uint64_t timeline_ = 0;  // value of the last submitted replay
  uint64_t words_written_ = 0;
  uint64_t words_pending_ = 0;  // written by bind() since the last replay
  // Zero-copy: every arena address written into a kernel-argument block, the arena ranges copy
  // steps touch, and the caller buffers imported so far.
  struct patch_site {
    uint64_t kernarg_at;    // byte offset in kernargs_
    uint64_t arena_offset;  // the address it holds, as an arena offset
  };
  std::vector<patch_site> patch_sites_;
  std::vector<std::pair<uint64_t, uint64_t>> copy_ranges_;  // (arena offset, bytes)
  std::vector<memory> imports_;
  bool submitted_ = false;
  // Shadowed transports (transport::shadowed): the arena ranges uploaded before each replay
  // (inputs) and downloaded after it (outputs), as (offset, bytes), and the kernel-argument words
  // bind() patched since the last replay (byte offsets in kernargs_).
  bool shadowed_ = false;
  std::vector<std::pair<uint64_t, uint64_t>> inputs_, outputs_;
  std::vector<uint64_t> patched_;
  // Shadowed: the patched kernel-argument words and the inputs to the device (before a replay or
  // a --check).
  capgraph_status shadow_inputs_upload(std::string *err);
  bool interrupt_ = false;  // the transport wakes waits on an interrupt
  uint64_t interrupt_mailbox_ = 0;
  uint32_t interrupt_id_ = 0;
};

// Signal slots in the graph's signal page.
constexpr uint64_t slot_timeline = 0;  // the replay timeline (value + timestamp)
constexpr uint64_t slot_sync = 16;     // compute <-> copy, reset to 0 before each replay

}  // namespace capgraph::hcq
