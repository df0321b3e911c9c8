// An ESTIMATE of how long one compute dispatch would take on an Adreno 630, from what the ir3
// emulator counted while it ran the dispatch's machine code (ir3_counts) and the dispatch's shape:
// the cost model proposed in ../shared/research/adreno_perf.md §6. It is never a measurement:
// nothing here ran on an a630, several constants are inferred from its relative the a640, caches
// are not modelled (global bytes are charged at an L2 rate, the bytes the kernel's bounds give at
// the DRAM rate), neither are dual issue, bank conflicts, barrier waits or clock changes.
//
//   t = t_launch + max(T_issue, T_tex, T_l2, T_dram, T_lds, T_lat) / f
//   T_issue = (c_alu (alu + rpt) + flow + k_sfu sfu + w (mem + tex)) / P   [wave instructions]
//   T_tex   = texels / R_tex
//   T_l2    = (global + private bytes) / W_l2 + texture bytes / W_l2_image
//   T_dram  = unique bytes / W_dram      (unique: what the kernel's bounds say it touches)
//   T_lds   = shared bytes / W_lds
//   T_lat   = ceil(waves / (SP x W_res)) x L_wave
//   L_wave  = (issue slots + L_ss ss_waits + L_sy sy_waits) / waves   (one wave's latency chain)
//
// Every constant, its value, its source and whether it was measured or inferred is in
// a630_constants() (targets/adreno/README.md, "Estimated a630 time", prints them as a table).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ir3_emu.h"

namespace capgraph::adreno {

struct a630_constant {
  const char *name;    // "f", "P", ...
  double value;        //
  const char *unit;    // "MHz", ...
  bool measured;       // measured (on an a630, or the a640 where said) or inferred
  const char *source;  // where the number comes from
};
const std::vector<a630_constant> &a630_constants();

// What the estimate needs of a dispatch besides the counts.
struct a630_dispatch_shape {
  bool wave128 = false;        // THREADSIZE
  uint32_t full_regs = 1;      // FULLREGFOOTPRINT, vec4 registers per fiber
  uint32_t shared_bytes = 0;   // shared memory per workgroup
  uint32_t group_threads = 1;  // fibers per workgroup
  uint64_t unique_bytes = 0;   // bytes of global memory touched at least once (DRAM traffic)
};

struct a630_estimate {
  double us = 0;  // the estimate: t_launch + the largest term
  // Each term in GPU clocks, and which is largest ("issue", "texture", "l2", "dram", "shared",
  // "latency").
  double issue_clk = 0, tex_clk = 0, l2_clk = 0, dram_clk = 0, lds_clk = 0, latency_clk = 0;
  uint32_t resident_waves = 0;  // W_res: waves one SP holds at once
  const char *bound = "";
};

a630_estimate a630_estimate_of(const ir3_counts &c, const a630_dispatch_shape &s);

// The roofline bound of a kernel's work: how long it would take if it ran at the a630's limit
// for what it must do, with nothing else in its way. Not a second estimate: the estimate above
// over this says how far a kernel is from the hardware's limit (a share of 1 is at it).
//   ALU:     flops (the model's, Launch.flops) at the MAD peak measured for its precision:
//            468.14 GFLOP/s float32 (wave128), 690.36 float16 (wave128; tinygrad PR #16229)
//   texel:   the texels it fetched at R_tex
//   DRAM:    the unique bytes it touches at W_dram
struct a630_roofline {
  double us = 0;  // the longest of the three, no launch cost
  double alu_us = 0, texel_us = 0, dram_us = 0;
  const char *limit = "";  // "alu", "texel" or "dram": which of them is the longest
};

// f16_share: the part of its multiply-adds done in float16 (fma_f16_lanes / fma_lanes).
a630_roofline a630_roofline_of(double flops, double f16_share, double texels, double unique_bytes);

// A CP_MEMCPY of `bytes` (read and written at the DRAM rate).
double a630_copy_us(uint64_t bytes);

// The clock the estimate assumes, Hz (f).
double a630_clock_hz();

}  // namespace capgraph::adreno
