// An ESTIMATE of how long one launch would take on an H100 SXM5, from what the PTX interpreter
// counted (ptx_counts): a roofline with an issue term. It is never a measurement: no H100 ran
// these kernels for it; the counts are PTX instructions (ptxas's SASS differs in number and
// kind), the global bytes are every lane's accesses (no coalescing, no L1/L2: an upper bound on
// DRAM traffic for data read once, a lower one for nothing), and occupancy, latency, bank
// conflicts and clock changes are not modelled.
//
//   t = t_launch + max(T_fp32, T_issue, T_dram, T_shared)
//   T_fp32   = FP32 lane operations (an FMA is two) / F_fp32
//   T_issue  = warp instructions / (SMs x schedulers x f)
//   T_dram   = global bytes (read + written) / B_dram
//   T_shared = shared bytes / (SMs x B_smem_clk x f)
#pragma once
#include <vector>

#include "ptx_exec.h"

namespace capgraph::nv {

struct h100_constant {
  const char *name, *unit;
  double value;
  const char *source;
};
const std::vector<h100_constant> &h100_constants();

struct h100_estimate {
  double us = 0;
  double fp32_us = 0, issue_us = 0, dram_us = 0, shared_us = 0;
  const char *bound = "";  // the largest term: "fp32", "issue", "dram", "shared"
};
h100_estimate h100_estimate_of(const ptx_counts &c);

}  // namespace capgraph::nv
