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

}  // namespace capgraph
