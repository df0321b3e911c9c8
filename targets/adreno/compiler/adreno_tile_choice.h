// The shape of a tiled Adreno kernel (gpu_tile.h's schedule): work items per workgroup and the
// micro tile (accumulators per work item), chosen per kernel at compile time. The code generator
// compiles the kernel in each candidate shape with ir3 (adreno_codegen.cpp) and keeps the one
// with the lowest static a630 cost, computed here from the tile plan and what ir3 reports of the
// compiled variant (register footprint, wave size).
//
// The cost is the emulator's cost model (fake/a630_estimate.h) evaluated on counts predicted from
// the plan instead of counted by running the code: the compiler does not link the fake, and
// running every candidate in the emulator would cost seconds per kernel. Its terms are the
// estimator's: issue slots, shared-memory and global bytes, and the latency chain of one wave
// times the rounds of resident waves; the constants are the estimator's (a630_estimate.cpp),
// the instruction counts per staged element and per stored result are fitted to what the
// emulator counted for the zoo's tiled kernels (targets/adreno/README.md, "Kernel shapes").
// `adreno_estimates.sh` with CAPGRAPH_ADRENO_TILE forcing one shape for every kernel compares the
// choice with the estimator's own numbers.
#pragma once
#include <string>
#include <vector>

#include "codegen/gpu_tile.h"
#include "schedule/kernel.h"

namespace capgraph {

struct AdrenoTileShape {
  unsigned group = 128;  // work items per workgroup
  unsigned tm = 4, tn = 4;
  unsigned batch = 4;  // staging loads in flight together (GpuFacts::stage_batch)
  // The weight operand read as an image through the texture unit, not staged in shared memory
  // (adreno_nir_emit.h, adreno_image_operand; only where it qualifies).
  bool image_b = false;
  std::string text() const;  // "128:4x4/4", "128:8x8/4+img"
};

// The candidates, in the order ties are broken (the first, 128 work items and 4 x 4, is the shape
// every kernel had before the choice, but for the batch), then the same shapes with the weight as
// an image. CAPGRAPH_ADRENO_TILE=G:MxN[/B][+img] (e.g. 128:8x8, 128:4x4/1, 128:8x8+img) makes
// that shape the only candidate, and CAPGRAPH_ADRENO_NO_IMAGES=1 leaves the image shapes out, for
// comparisons (knobs: recorded in the capture).
std::vector<AdrenoTileShape> adreno_tile_shapes();

struct AdrenoTileCost {
  double us = 0;  // the estimate: launch + the largest term
  double issue_clk = 0, lds_clk = 0, l2_clk = 0, tex_clk = 0, latency_clk = 0;
  unsigned resident_waves = 0;  // per SP
  const char *bound = "";
};

// The static a630 cost of kernel k tiled by plan `pl` in shape `s`, in waves of `wave` work items
// (64 or 128, as ir3 chose) with `full_regs` vec4 registers per work item.
AdrenoTileCost adreno_tile_cost(const Kernel &k, const GpuTilePlan &pl, const AdrenoTileShape &s,
                                unsigned wave, unsigned full_regs);

// What ir3 reports of a compiled variant (ir3_info) that the window path's estimate reads: its
// code runs straight through (the reduction unrolled), so what a wave issues is its static code.
struct AdrenoStraightCode {
  unsigned instrs = 0;      // instructions, (rpt) expanded, nops included
  unsigned nops = 0;        // nop instructions
  unsigned alu = 0;         // cat1-cat3: moves, conversions, ALU
  unsigned sfu = 0;         // cat4
  unsigned mem = 0;         // cat5-cat7: texture, memory, barriers
  unsigned flow = 0;        // cat0 but nops
  unsigned ss = 0, sy = 0;  // sync bits
};

// The static a630 cost of a window-path kernel (adreno_nir_emit.h, adreno_window_lanes) of
// `work_items` work items in workgroups of `group`, in waves of `wave` with `full_regs` vec4
// registers: the estimator's issue and latency terms on ir3's static counts of the code.
AdrenoTileCost adreno_window_cost(int64_t work_items, unsigned group, unsigned wave,
                                  unsigned full_regs, const AdrenoStraightCode &code);

}  // namespace capgraph
