#include "h100_estimate.h"

#include <algorithm>
#include <string>

namespace capgraph::nv {

namespace {

// Sources: NVIDIA H100 Tensor Core GPU datasheet (H100 SXM: FP32 67 TFLOPS, GPU memory bandwidth
// 3.35 TB/s); NVIDIA Hopper architecture whitepaper via glennklockwood.com/garden/processors/h100
// (132 SMs, 128 FP32 lanes and 4 warp schedulers per SM, 1.98 GHz boost); shared memory 128 bytes
// per clock per SM (32 banks of 4 bytes, CUDA C++ Programming Guide, "Shared Memory"); the launch
// cost is an assumption (a chained QMD, nv_hcq.h; nothing measured it).
const std::vector<h100_constant> kConstants = {
    {"F_fp32", "TFLOP/s", 67.0, "H100 SXM datasheet (FP32)"},
    {"SMs", "", 132, "H100 SXM5: 132 SMs"},
    {"schedulers", "per SM", 4, "Hopper SM: 4 warp schedulers, one warp instruction a clock each"},
    {"f", "GHz", 1.98, "H100 SXM5 boost clock"},
    {"B_dram", "TB/s", 3.35, "H100 SXM datasheet (HBM3)"},
    {"B_smem_clk", "bytes/clock/SM", 128, "32 banks x 4 bytes"},
    {"t_launch", "us", 2.0, "assumed (not measured): one chained launch"},
};

double constant(const char *name) {
  for (const h100_constant &c : kConstants)
    if (std::string(c.name) == name) return c.value;
  return 0;
}

}  // namespace

const std::vector<h100_constant> &h100_constants() { return kConstants; }

h100_estimate h100_estimate_of(const ptx_counts &c) {
  h100_estimate e;
  const double f = constant("f") * 1e9, sms = constant("SMs");
  e.fp32_us = double(c.flop_lanes) / (constant("F_fp32") * 1e12) * 1e6;
  e.issue_us = double(c.warp_instructions()) / (sms * constant("schedulers") * f) * 1e6;
  e.dram_us =
      double(c.global_read_bytes + c.global_write_bytes) / (constant("B_dram") * 1e12) * 1e6;
  e.shared_us =
      double(c.shared_read_bytes + c.shared_write_bytes) / (sms * constant("B_smem_clk") * f) * 1e6;
  const std::pair<double, const char *> terms[] = {
      {e.fp32_us, "fp32"}, {e.issue_us, "issue"}, {e.dram_us, "dram"}, {e.shared_us, "shared"}};
  const auto *top =
      std::max_element(std::begin(terms), std::end(terms),
                       [](const auto &a, const auto &b) { return a.first < b.first; });
  e.bound = top->second;
  e.us = constant("t_launch") + top->first;
  return e;
}

}  // namespace capgraph::nv
