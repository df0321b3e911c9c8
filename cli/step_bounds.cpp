#include "cli/step_bounds.h"

#include <algorithm>

namespace capgraph {

StepWork step_work(const fb::Step *s, uint32_t capture_threads, uint32_t threads) {
  StepWork w;
  if (s->kind() == fb::StepKind::launch && s->launch()) {
    const fb::Launch *l = s->launch();
    w.flops = l->flops();
    w.bytes = l->bytes_written();
    const auto *sizes = l->buffer_sizes();
    for (uint32_t j = 1; sizes && j < sizes->size(); j++) w.bytes += sizes->Get(j);
    uint32_t active = 0;
    const auto *p = l->partition();
    for (uint32_t t = 0; p && t + 1 < p->size(); t++) active += p->Get(t + 1) > p->Get(t);
    // Split in the file: as written when the run uses the capture's thread count, else evenly.
    if (active > 1 && threads != capture_threads)
      active = (uint32_t)std::min<uint64_t>(l->work_size(), threads);
    w.active_threads = std::max(1u, active);
  } else if (s->copy()) {
    w.bytes = 2 * s->copy()->size();
  }
  return w;
}

StepVerdict step_verdict(const StepWork &w, double ms, uint32_t threads, double peak_gflops,
                         double bandwidth_gbps) {
  StepVerdict v;
  const double share = double(std::min(std::max(1u, w.active_threads), std::max(1u, threads))) /
                       std::max(1u, threads);
  const double peak = peak_gflops * share, bandwidth = bandwidth_gbps * share;
  const double seconds = ms / 1e3;
  v.gflops = seconds > 0 ? w.flops / seconds / 1e9 : 0;
  v.gbps = seconds > 0 ? w.bytes / seconds / 1e9 : 0;
  v.intensity = w.bytes ? double(w.flops) / double(w.bytes) : 0;
  v.peak_share = peak > 0 ? v.gflops / peak : 0;
  v.bandwidth_share = bandwidth > 0 ? v.gbps / bandwidth : 0;
  const double ideal_us = std::max(peak > 0 ? w.flops / (peak * 1e3) : 0.0,
                                   bandwidth > 0 ? w.bytes / (bandwidth * 1e3) : 0.0);
  if (ideal_us < kSmallStepUs) {
    v.bound = StepBound::small;
    v.meets = true;
  } else if (bandwidth > 0 && peak > 0 && v.intensity >= peak / bandwidth) {
    v.bound = StepBound::compute;
    v.meets = v.peak_share >= kComputeBar;
  } else {
    // The acceptance's words: no kernel below 30% of peak except memory-bound ones, which reach
    // 50% of the bandwidth. A memory-bound step at 30% of peak is not below the first bar.
    v.bound = StepBound::memory;
    v.meets = v.bandwidth_share >= kMemoryBar || v.peak_share >= kComputeBar;
  }
  return v;
}

const char *step_bound_name(StepBound b) {
  switch (b) {
    case StepBound::compute: return "compute";
    case StepBound::memory: return "memory";
    case StepBound::small: return "small";
  }
  return "?";
}

}  // namespace capgraph
