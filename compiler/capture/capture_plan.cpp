#include "capture/capture_plan.h"

#include <algorithm>

#include "error.h"
#include "replay.h"

namespace capgraph {

std::vector<ArenaRequest> capture_arena_requests(const Program &p,
                                                 std::vector<int> &arena_buffers) {
  std::vector<int> req_of(p.buffers.size(), -1);
  std::vector<ArenaRequest> reqs;
  for (size_t i = 0; i < p.buffers.size(); i++) {
    const Buffer &b = p.buffers[i];
    if (b.kind == Buffer::Kind::constant) continue;
    req_of[i] = (int)reqs.size();
    arena_buffers.push_back((int)i);
    ArenaRequest r;
    r.size = b.numel * dtype_size(b.dtype);
    r.first = INT32_MAX;
    r.last = -1;
    r.pinned = b.kind != Buffer::Kind::intermediate;
    reqs.push_back(r);
  }
  for (size_t s = 0; s < p.kernels.size(); s++) {
    auto touch = [&](int buf) {
      int r = req_of[buf];
      if (r < 0) return;
      reqs[r].first = std::min(reqs[r].first, (int)s);
      reqs[r].last = std::max(reqs[r].last, (int)s);
    };
    touch(p.kernels[s].store.buffer);
    for (const Access &a : p.kernels[s].loads) touch(a.buffer);
  }
  for (ArenaRequest &r : reqs)
    if (r.last < 0) r.first = r.last = 0;
  return reqs;
}

ArenaLayout capture_arena_plan(const Program &p) {
  ArenaLayout a;
  a.requests = capture_arena_requests(p, a.buffers);
  a.plan = arena_plan(a.requests, 64);
  if (!arena_plan_valid(a.requests, a.plan))
    throw Error("internal: the memory plan overlaps live buffers");
  return a;
}

uint64_t kernel_bytes_read(const Kernel &k, const Program &p) {
  uint64_t bytes = 0;
  for (const Access &a : k.loads)
    bytes += p.buffers[a.buffer].numel * dtype_size(p.buffers[a.buffer].dtype);
  return bytes;
}

uint64_t kernel_bytes_written(const Kernel &k) {
  int64_t out_elems = 1;
  for (int a = 0; a < k.n_parallel; a++) out_elems *= k.axes[a];
  return out_elems * dtype_size(k.store_dtype);
}

std::vector<std::vector<uint64_t>> capture_partitions_plan(const Program &p,
                                                           const CodegenResult &code, int threads) {
  std::vector<std::vector<uint64_t>> partitions;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const Kernel &k = p.kernels[i];
    const CodegenKernel &ck = code.kernels[i];
    // Even slices, except that a launch too small to pay for the threads meeting (one unit of
    // work, or under k_split_min_cost flops + bytes: a few microseconds) runs whole on thread 0,
    // so the runtime needs no barrier around it (runtime/replay.h, replay_plan_barriers).
    uint64_t cost = (uint64_t)k.flops + kernel_bytes_read(k, p) + kernel_bytes_written(k);
    bool whole = ck.work_size <= 1 || cost < k_split_min_cost;
    std::vector<uint64_t> partition;
    for (int th = 0; th <= threads; th++)
      partition.push_back(whole ? (th ? (uint64_t)ck.work_size : 0)
                                : (uint64_t)(ck.work_size * th / threads));
    partitions.push_back(std::move(partition));
  }
  return partitions;
}

CapturePlan capture_plan(const Program &p, const CodegenResult &code, int threads) {
  CapturePlan plan;
  plan.arena = capture_arena_plan(p);
  plan.partitions = capture_partitions_plan(p, code, threads);
  return plan;
}

}  // namespace capgraph
