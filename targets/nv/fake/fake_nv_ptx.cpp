// The fake NVIDIA GPU's compute engine: each launch the QMD describes is executed from the PTX the
// capture carries beside the cubin (the interpreter, ptx_exec.h), with everything taken from what
// the GPU would see (constant bank 0 at the QMD's address, the grid and block in the QMD, the
// channel's shared and local windows) and nothing from the capture's launch list, so a parameter
// layout or window mistake in the encoder shows here. In check mode the kernel's host twin runs on
// the memory as it was before, and the words the kernel may write (KernelBounds) are compared by
// the rule of every check (runtime/hcq/word_compare.h).
#include <cmath>
#include <cstring>
#include <thread>

#include "fake_nv.h"
#include "h100_estimate.h"
#include "hcq/word_compare.h"

namespace capgraph::nv {

bool fake_rm::ptx_attach(std::string *err) {
  modules_.clear();
  ptx_of_.assign(capture_->kernels() ? capture_->kernels()->size() : 0, nullptr);
  // Kernels of one module share one string in the file (nv_kernel_write): parse each once.
  std::map<const void *, size_t> parsed;
  modules_.reserve(ptx_of_.size());
  for (uint32_t i = 0; i < ptx_of_.size(); ++i) {
    const fb::Kernel *k = capture_->kernels()->Get(i);
    const fb::NvKernel *n = k->facts_as_NvKernel();
    if (!n) continue;
    const std::string what = "kernel " + std::to_string(i) + " '" + k->name()->str() + "'";
    if (!n->ptx())
      return *err = what +
                    " carries no PTX (compiled with CAPGRAPH_NV_NO_PTX=1?); "
                    "fake-nv:twin runs its host twin instead",
             false;
    auto it = parsed.find(n->ptx());
    if (it == parsed.end()) {
      ptx_module m;
      std::string why;
      if (!ptx_parse(n->ptx()->str(), &m, &why)) return *err = what + ": " + why, false;
      modules_.push_back(std::move(m));
      it = parsed.emplace(n->ptx(), modules_.size() - 1).first;
    }
    auto entry = modules_[it->second].kernels.find(k->entry()->str());
    if (entry == modules_[it->second].kernels.end())
      return *err = what + ": its PTX has no entry '" + k->entry()->str() + "'", false;
    ptx_of_[i] = &entry->second;
  }
  return true;
}

bool fake_rm::kernel_run(const launch_args &a) {
  const fb::Kernel *k = capture_->kernels()->Get(a.kernel);
  const fb::NvKernel *n = k->facts_as_NvKernel();
  ptx_launch l;
  l.kernel = ptx_of_[a.kernel];
  l.name = "kernel " + std::to_string(a.kernel) + " '" + k->name()->str() + "'";
  for (int d = 0; d < 3; ++d) l.grid[d] = a.grid[d], l.block[d] = a.block[d];
  l.params = a.cbank + n->param_offset();
  l.param_bytes = n->cbank0_bytes() - n->param_offset();
  l.shared_bytes = a.shared_bytes;
  l.shared_window = a.shared_window;
  l.local_window = a.local_window;
  l.find = [this](uint64_t gpu) -> ptx_region {
    auto it = maps_.upper_bound(gpu);
    if (it == maps_.begin()) return {};
    --it;
    if (gpu - it->first >= it->second.size) return {};
    return {it->first, it->second.size, it->second.host};
  };
  l.threads = int(std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
  ptx_counts c;
  std::string err;
  if (!ptx_launch_run(l, &c, &err)) return raise(err);
  counts_[a.kernel].add(c);
  dispatches_[a.kernel]++;
  if (profile_) timeline_.push_back({a.kernel, h100_estimate_of(c).us});
  return true;
}

bool fake_rm::kernel_check(const launch_args &a, const std::vector<void *> &bufs,
                           const std::vector<int64_t> &scalars) {
  const fb::Kernel *k = capture_->kernels()->Get(a.kernel);
  // What the kernel may write: its written bindings as far as its bounds reach (checked at load).
  struct span {
    uint32_t binding;
    uint8_t *at;
    std::vector<uint8_t> before, device;
  };
  std::vector<span> spans;
  if (k->bounds() && k->bounds()->written())
    for (uint32_t w : *k->bounds()->written()) {
      const uint64_t size =
          w < k->bounds()->buffer_sizes()->size() ? k->bounds()->buffer_sizes()->Get(w) : 0;
      if (w >= bufs.size() || !size) continue;
      uint8_t *at = static_cast<uint8_t *>(bufs[w]);
      spans.push_back({w, at, std::vector<uint8_t>(at, at + size), {}});
    }
  if (!kernel_run(a)) return false;
  for (span &s : spans) {
    s.device.assign(s.at, s.at + s.before.size());
    memcpy(s.at, s.before.data(), s.before.size());
  }
  twins_.run(a.kernel, bufs.data(), scalars.empty() ? nullptr : scalars.data());
  hcq::word_tally tally;
  for (const span &s : spans) tally.reference(s.at, s.before.size());
  for (const span &s : spans)
    tally.compare(s.device.data(), s.at, s.before.size(), uint64_t(s.binding) << 40);
  // The interpreter's words stay (the replay goes on from what the "GPU" computed).
  for (span &s : spans) memcpy(s.at, s.device.data(), s.device.size());
  if (tally.match()) return true;
  char b[240];
  snprintf(b, sizeof b,
           "max |PTX - twin| = %g at written binding %llu byte %llu (tolerance %g), %llu words "
           "differ",
           tally.max_diff, (unsigned long long)(tally.worst_at >> 40),
           (unsigned long long)(tally.worst_at & 0xffffffffff), tally.tolerance(),
           (unsigned long long)tally.differ);
  return raise("check: kernel '" + k->name()->str() + "' (kernel " + std::to_string(a.kernel) +
               ") differs from its host twin: " + b);
}

}  // namespace capgraph::nv

namespace capgraph::nv {

namespace {

// The counts the profile shows per kernel, in the order of the text and the JSON.
std::vector<hcq::profile_count> counts_named(const ptx_counts &c) {
  return {{"blocks", double(c.blocks)},
          {"warps", double(c.warps)},
          {"warp_instructions", double(c.warp_instructions())},
          {"int", double(c.int_alu)},
          {"fp32", double(c.fp32)},
          {"fp16", double(c.fp16)},
          {"fp64", double(c.fp64)},
          {"sfu", double(c.sfu)},
          {"convert", double(c.convert)},
          {"control", double(c.control)},
          {"global_loads", double(c.global_loads)},
          {"global_stores", double(c.global_stores)},
          {"shared_loads", double(c.shared_loads)},
          {"shared_stores", double(c.shared_stores)},
          {"thread_instructions", double(c.thread_instructions)},
          {"fma_lanes", double(c.fma_lanes)},
          {"global_read_bytes", double(c.global_read_bytes)},
          {"global_write_bytes", double(c.global_write_bytes)},
          {"shared_read_bytes", double(c.shared_read_bytes)},
          {"shared_write_bytes", double(c.shared_write_bytes)},
          {"barriers", double(c.barriers)},
          {"divergent_branches", double(c.divergent_branches)}};
}

}  // namespace

hcq::device_profile fake_rm::profile_report() const {
  hcq::device_profile p;
  p.device = "fake-nv";
  p.hardware = "H100 SXM5 (132 SMs, 1.98 GHz)";
  p.model =
      "ESTIMATE, not a measurement: per launch t_launch + max(FP32, issue, DRAM, shared) from the "
      "PTX interpreter's counts (PTX, not SASS; every lane's bytes, no caches; "
      "targets/nv/fake/h100_estimate.h, targets/nv/README.md)";
  p.dispatches = timeline_;
  for (const hcq::profile_dispatch &d : timeline_) p.estimated_total_us += d.estimated_us;
  std::string &t = p.text;
  t = "fake-nv: what the PTX interpreter counted per kernel (warp instructions; bytes over active "
      "lanes) and an ESTIMATED H100 time (est_us: a roofline, not a measurement)\n";
  char b[400];
  snprintf(b, sizeof b, "%-36s %5s %7s %11s %10s %10s %7s %9s %9s %12s %12s %12s %8s %-6s %9s\n",
           "kernel", "disp", "blocks", "warp_instr", "int", "fp32", "sfu", "g_loads", "g_stores",
           "global_B", "shared_B", "fma_lanes", "barriers", "bound", "est_us");
  t += b;
  ptx_counts total;
  for (const auto &[k, c] : counts_) {
    const uint64_t disp = dispatches_.count(k) ? dispatches_.at(k) : 0;
    double us = 0;
    for (const hcq::profile_dispatch &d : timeline_)
      if (d.kernel == k) us += d.estimated_us;
    const h100_estimate e = h100_estimate_of(c);
    hcq::profile_kernel pk;
    pk.kernel = k;
    pk.name = k < kernel_names_.size() ? kernel_names_[k] : "?";
    pk.dispatches = disp;
    pk.counts = counts_named(c);
    pk.estimated_us = us;
    pk.bound = e.bound;
    p.kernels.push_back(pk);
    snprintf(b, sizeof b,
             "%-36.36s %5llu %7llu %11llu %10llu %10llu %7llu %9llu %9llu %12llu %12llu %12llu "
             "%8llu %-6s %9.1f\n",
             pk.name.c_str(), (unsigned long long)disp, (unsigned long long)c.blocks,
             (unsigned long long)c.warp_instructions(), (unsigned long long)c.int_alu,
             (unsigned long long)c.fp32, (unsigned long long)c.sfu,
             (unsigned long long)c.global_loads, (unsigned long long)c.global_stores,
             (unsigned long long)(c.global_read_bytes + c.global_write_bytes),
             (unsigned long long)(c.shared_read_bytes + c.shared_write_bytes),
             (unsigned long long)c.fma_lanes, (unsigned long long)c.barriers, e.bound, us);
    t += b;
    total.add(c);
  }
  snprintf(b, sizeof b,
           "total: %llu launches, %llu warp instructions, %llu FMA lanes, %llu global bytes, "
           "%llu shared bytes, %llu barriers; ESTIMATED H100 time %.1f us (not measured)\n",
           (unsigned long long)timeline_.size(), (unsigned long long)total.warp_instructions(),
           (unsigned long long)total.fma_lanes,
           (unsigned long long)(total.global_read_bytes + total.global_write_bytes),
           (unsigned long long)(total.shared_read_bytes + total.shared_write_bytes),
           (unsigned long long)total.barriers, p.estimated_total_us);
  t += b;
  return p;
}

}  // namespace capgraph::nv
