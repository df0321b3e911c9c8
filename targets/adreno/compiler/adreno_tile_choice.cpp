// The shape choice of tiled Adreno kernels (adreno_tile_choice.h): the a630 cost model of
// fake/a630_estimate.cpp on counts predicted from the tile plan.
#include "adreno_tile_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "adreno_chips.h"
#include "error.h"
#include "knobs.h"

namespace capgraph {

namespace {

// The estimator's constants (fake/a630_estimate.cpp, where each is sourced; kept equal by hand).
constexpr double kClockHz = 675e6;    // f
constexpr double kSlotsPerClock = 4;  // P: wave64 ALU instructions per clock
constexpr double kWave128Alu = 1.48;  // c_alu of a wave128 float32 ALU instruction
constexpr double kWave128Other = 2;   // w: a wave128 flow or memory instruction
constexpr double kL2BytesPerS = 74e9, kSharedBytesPerS = 76e9;
constexpr double kMaxWaves = 16, kWaveGranularity = 2;
constexpr double kSsClocks = 10, kSyClocks = 110, kLaunchUs = 5;

// Wave instructions of the tiled kernel per work item, fitted to the emulator's counts of the
// zoo's tiled kernels (README.md, "Kernel shapes"): a staging step (its index arithmetic: the
// position and reduction point split into the axes, the bounds, the address; a global load and
// a shared store), and one result of the epilogue (its indices, the kernel's result expression,
// the bounds check; a store per result or per 4).
constexpr double kStageAlu = 40, kStageFlow = 1, kStageMem = 2;
constexpr double kResultAlu = 14, kResultFlow = 2;
constexpr double kPointAlu = 2, kPointFlow = 1;  // a reduction point's shared address, its loop
constexpr double kNops = 1.3;
constexpr double kChunkAlu = 6, kChunkFlow = 3;  // a chunk's loop and its barrier

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string AdrenoTileShape::text() const {
  return std::to_string(group) + ":" + std::to_string(tm) + "x" + std::to_string(tn) + "/" +
         std::to_string(batch);
}

std::vector<AdrenoTileShape> adreno_tile_shapes() {
  if (const char *v = knob_get("CAPGRAPH_ADRENO_TILE")) {
    AdrenoTileShape s;
    char tail = 0;
    const int got = std::sscanf(v, "%u:%ux%u/%u%c", &s.group, &s.tm, &s.tn, &s.batch, &tail);
    if ((got != 3 && got != 4) || s.batch < 1 || s.batch > 8 ||
        (s.group != 64 && s.group != 128 && s.group != 256) || (s.tm != 4 && s.tm != 8) ||
        (s.tn != 4 && s.tn != 8))
      throw Error(std::string("CAPGRAPH_ADRENO_TILE=") + v +
                  ": want WORKGROUP:MxN[/BATCH] with WORKGROUP 64, 128 or 256, M and N 4 or 8, "
                  "BATCH 1 to 8 (128:8x8, 128:4x4/1)");
    return {s};
  }
  // 64 work items (one wave64 per workgroup, smaller tiles): more waves for the small late
  // layers whose few 128-item workgroups leave the SPs waiting (their estimate is one wave's
  // latency chain); 8 x 4 and 8 x 8: fewer shared-memory reads and staging steps per
  // multiply-add where the waves fill the SPs.
  return {{128, 4, 4}, {64, 4, 4}, {128, 8, 4}, {128, 8, 8}, {256, 8, 8}};
}

AdrenoTileCost adreno_tile_cost(const Kernel &k, const GpuTilePlan &pl, const AdrenoTileShape &s,
                                unsigned wave, unsigned full_regs) {
  AdrenoTileCost c;
  const bool w128 = wave == 128;
  const int64_t GS = s.group, TM = pl.TM(), TN = pl.TN();
  int64_t outer = 1;
  for (int x : pl.outer) outer *= k.axes[x];
  const int64_t chunks = outer * ceil_div(k.axes[pl.chunk], pl.kc);
  const int64_t steps_a = ceil_div(pl.kc * TM, GS), steps_b = ceil_div(pl.kc * TN, GS);
  const int64_t steps = steps_a + steps_b;
  // (sy) waits per chunk: one per batch of staging loads.
  const int64_t batch = std::max<int64_t>(1, s.batch);
  const int64_t waits = ceil_div(steps_a, batch) + ceil_div(steps_b, batch);
  const double widen = (pl.elem_a == 2 ? pl.tm : 0) + (pl.elem_b == 2 ? pl.tn : 0);
  const double loads = double(pl.tm + pl.tn) / 4;  // vec4 shared loads per reduction point
  const double fmas = double(pl.tm * pl.tn), results = double(pl.tm * pl.tn);
  // The epilogue's loads per result (bias, residual: every load but the two operands), and its
  // stores: one per 4 results where they are neighbours.
  const double result_loads = double(std::max<int64_t>(0, int64_t(k.loads.size()) - 2));
  const double stores = pl.store_vector ? results / 4 : results;
  // Per work item (and so per wave: its work items go in lock step).
  const double alu = double(chunks) * (double(steps) * kStageAlu + kChunkAlu +
                                       double(pl.kc) * (fmas + widen + kPointAlu)) +
                     results * kResultAlu;
  const double other = double(chunks) * (double(steps) * (kStageFlow + kStageMem) + kChunkFlow +
                                         double(pl.kc) * (loads + kPointFlow)) +
                       results * (kResultFlow + result_loads) + stores;
  const double waves = double(pl.groups()) * double(ceil_div(GS, wave));
  const double slots =
      waves * (alu * (w128 ? kWave128Alu : 1) + other * (w128 ? kWave128Other : 1));
  c.issue_clk = slots / kSlotsPerClock;
  // Shared memory: each chunk stores the slabs once and every work item reads its operands.
  const double slab_bytes = double(pl.kc) * double(pl.elem_a * TM + pl.elem_b * TN);
  const double read_bytes =
      double(GS) * double(pl.kc) * double(pl.tm * pl.elem_a + pl.tn * pl.elem_b);
  c.lds_clk = double(pl.groups()) * double(chunks) * (slab_bytes + read_bytes) / kSharedBytesPerS *
              kClockHz;
  c.l2_clk = double(pl.groups()) * double(chunks) * slab_bytes / kL2BytesPerS * kClockHz;
  // Latency: one wave's chain (its issue slots and waits) times the rounds of resident waves.
  const adreno::chip *a = adreno::chip_find("a630");
  const double reg_file = a ? a->reg_size_vec4 : 96, sps = a ? a->num_sp_cores : 2,
               shared = a ? a->shared_bytes : 32768;
  double resident = kMaxWaves;
  if (full_regs)
    resident =
        std::min(resident, std::floor(reg_file / (full_regs * (w128 ? 2 : 1))) * kWaveGranularity);
  const double groups_per_sp = std::floor(shared / double(pl.shared_bytes()));
  resident = std::max(1.0, std::min(resident, groups_per_sp * double(ceil_div(GS, wave))));
  c.resident_waves = unsigned(resident);
  // Waits: (sy) per batch of staging loads and per store group of the epilogue (its loads),
  // (ss) per vec4 shared load of a reduction point; nops between dependent instructions add to
  // the issue slots (kNops, the emulator's nop slots over the zoo's tiled kernels).
  const double sy = double(chunks) * double(waits) + stores * (1 + result_loads);
  const double ss = double(chunks) * double(pl.kc) * loads;
  const double chain = (alu + other) * kNops + sy * kSyClocks + ss * kSsClocks;
  c.latency_clk = std::ceil(waves / (sps * resident)) * chain;
  const std::pair<double, const char *> terms[] = {
      {c.issue_clk, "issue"}, {c.lds_clk, "shared"}, {c.l2_clk, "l2"}, {c.latency_clk, "latency"}};
  const auto *top =
      std::max_element(std::begin(terms), std::end(terms),
                       [](const auto &x, const auto &y) { return x.first < y.first; });
  c.bound = top->second;
  c.us = kLaunchUs + 1e6 * top->first / kClockHz;
  return c;
}

AdrenoTileCost adreno_window_cost(int64_t work_items, unsigned group, unsigned wave,
                                  unsigned full_regs, const AdrenoStraightCode &code) {
  AdrenoTileCost c;
  const bool w128 = wave == 128;
  const double waves = double(ceil_div(work_items, group)) * double(ceil_div(group, wave));
  constexpr double kSfuSlots = 8;  // k_sfu
  const double slots =
      waves * (double(code.alu) * (w128 ? kWave128Alu : 1) +
               (double(code.flow) + double(code.mem) + kSfuSlots * double(code.sfu)) *
                   (w128 ? kWave128Other : 1));
  c.issue_clk = slots / kSlotsPerClock;
  const adreno::chip *a = adreno::chip_find("a630");
  const double reg_file = a ? a->reg_size_vec4 : 96, sps = a ? a->num_sp_cores : 2;
  double resident = kMaxWaves;
  if (full_regs)
    resident =
        std::min(resident, std::floor(reg_file / (full_regs * (w128 ? 2 : 1))) * kWaveGranularity);
  resident = std::max(1.0, resident);
  c.resident_waves = unsigned(resident);
  const double chain =
      double(code.instrs) + double(code.sy) * kSyClocks + double(code.ss) * kSsClocks;
  c.latency_clk = std::ceil(waves / (sps * resident)) * chain;
  c.bound = c.issue_clk >= c.latency_clk ? "issue" : "latency";
  c.us = kLaunchUs + 1e6 * std::max(c.issue_clk, c.latency_clk) / kClockHz;
  return c;
}

}  // namespace capgraph
