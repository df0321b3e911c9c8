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
constexpr double kTexelsPerClock = 16, kL2ImageBytesPerS = 150e9, kSyTexClocks = 64;
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
         std::to_string(batch) + (image_b ? "+img" : "");
}

std::vector<AdrenoTileShape> adreno_tile_shapes() {
  if (const char *v = knob_get("CAPGRAPH_ADRENO_TILE")) {
    AdrenoTileShape s;
    std::string text = v;
    const std::string img = "+img";
    if (text.size() > img.size() && text.compare(text.size() - img.size(), img.size(), img) == 0) {
      s.image_b = true;
      text.resize(text.size() - img.size());
    }
    char tail = 0;
    const int got =
        std::sscanf(text.c_str(), "%u:%ux%u/%u%c", &s.group, &s.tm, &s.tn, &s.batch, &tail);
    if ((got != 3 && got != 4) || s.batch < 1 || s.batch > 8 ||
        (s.group != 64 && s.group != 128 && s.group != 256) || (s.tm != 4 && s.tm != 8) ||
        (s.tn != 4 && s.tn != 8))
      throw Error(std::string("CAPGRAPH_ADRENO_TILE=") + v +
                  ": want WORKGROUP:MxN[/BATCH][+img] with WORKGROUP 64, 128 or 256, M and N 4 "
                  "or 8, BATCH 1 to 8 (128:8x8, 128:4x4/1, 128:8x8+img)");
    return {s};
  }
  // 64 work items (one wave64 per workgroup, smaller tiles): more waves for the small late
  // layers whose few 128-item workgroups leave the SPs waiting (their estimate is one wave's
  // latency chain); 8 x 4 and 8 x 8: fewer shared-memory reads and staging steps per
  // multiply-add where the waves fill the SPs.
  std::vector<AdrenoTileShape> shapes = {
      {128, 4, 4}, {64, 4, 4}, {128, 8, 4}, {128, 8, 8}, {256, 8, 8}};
  // The same shapes reading the weight as an image (tinygrad's choice for the a630: its texture
  // cache instead of the shared-memory staging that bounds most of our estimates).
  if (!knob_get("CAPGRAPH_ADRENO_NO_IMAGES"))
    for (size_t i = 0, n = shapes.size(); i < n; i++) {
      AdrenoTileShape s = shapes[i];
      s.image_b = true;
      shapes.push_back(s);
    }
  return shapes;
}

AdrenoTileCost adreno_tile_cost(const Kernel &k, const GpuTilePlan &pl, const AdrenoTileShape &s,
                                unsigned wave, unsigned full_regs) {
  AdrenoTileCost c;
  const bool w128 = wave == 128;
  const int64_t GS = s.group, TM = pl.TM(), TN = pl.TN();
  int64_t outer = 1;
  for (int x : pl.outer) outer *= k.axes[x];
  const int64_t chunks = outer * ceil_div(k.axes[pl.chunk], pl.kc);
  // With the weight as an image (s.image_b) b is not staged: each work item fetches its tn
  // columns per 4 reduction points (one isaml per texel of 4 points, widened by the texture unit).
  const bool img = s.image_b;
  const int64_t steps_a = ceil_div(pl.kc * TM, GS), steps_b = img ? 0 : ceil_div(pl.kc * TN, GS);
  const int64_t steps = steps_a + steps_b;
  // (sy) waits per chunk: one per batch of staging loads.
  const int64_t batch = std::max<int64_t>(1, s.batch);
  const int64_t waits = ceil_div(steps_a, batch) + ceil_div(steps_b, batch);
  const double widen = (pl.elem_a == 2 ? pl.tm : 0) + (pl.elem_b == 2 && !img ? pl.tn : 0);
  // vec4 shared loads per reduction point, and with the image its isaml per point.
  const double loads = double(pl.tm + (img ? 0 : pl.tn)) / 4;
  const double fetches = img ? double(pl.tn) / 4 : 0;
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
                                         double(pl.kc) * (loads + fetches + kPointFlow)) +
                       results * (kResultFlow + result_loads) + stores;
  const double waves = double(pl.groups()) * double(ceil_div(GS, wave));
  const double slots =
      waves * (alu * (w128 ? kWave128Alu : 1) + other * (w128 ? kWave128Other : 1));
  c.issue_clk = slots / kSlotsPerClock;
  // Shared memory: each chunk stores the slabs once and every work item reads its operands.
  const double slab_bytes = double(pl.kc) * double(pl.elem_a * TM + (img ? 0 : pl.elem_b * TN));
  const double read_bytes =
      double(GS) * double(pl.kc) * double(pl.tm * pl.elem_a + (img ? 0 : pl.tn * pl.elem_b));
  c.lds_clk = double(pl.groups()) * double(chunks) * (slab_bytes + read_bytes) / kSharedBytesPerS *
              kClockHz;
  // The texture unit: texels per fiber (the emulator counts them so), their bytes through L2 at
  // the image rate. Padded work items fetch too (0 outside the image, still a fetch).
  const double texels =
      img ? double(pl.groups()) * double(chunks) * double(GS) * double(pl.kc) * fetches : 0;
  c.tex_clk = texels / kTexelsPerClock;
  c.l2_clk = double(pl.groups()) * double(chunks) * slab_bytes / kL2BytesPerS * kClockHz +
             texels * double(pl.elem_b * 4) / kL2ImageBytesPerS * kClockHz;
  // Latency: one wave's chain (its issue slots and waits) times the rounds of resident waves.
  const adreno::chip *a = adreno::chip_find("a630");
  const double reg_file = a ? a->reg_size_vec4 : 96, sps = a ? a->num_sp_cores : 2,
               shared = a ? a->shared_bytes : 32768;
  double resident = kMaxWaves;
  if (full_regs)
    resident =
        std::min(resident, std::floor(reg_file / (full_regs * (w128 ? 2 : 1))) * kWaveGranularity);
  const double shared_group =
      img ? double(pl.buffers * pl.kc * pl.elem_a * TM) : double(pl.shared_bytes());
  const double groups_per_sp = std::floor(shared / shared_group);
  resident = std::max(1.0, std::min(resident, groups_per_sp * double(ceil_div(GS, wave))));
  c.resident_waves = unsigned(resident);
  // Waits: (sy) per batch of staging loads and per store group of the epilogue (its loads),
  // (ss) per vec4 shared load of a reduction point; nops between dependent instructions add to
  // the issue slots (kNops, the emulator's nop slots over the zoo's tiled kernels).
  const double sy = double(chunks) * double(waits) + stores * (1 + result_loads);
  const double ss = double(chunks) * double(pl.kc) * loads;
  // An image's fetches: a (sy) per 4 points, at the texture's latency.
  const double sy_tex = img ? double(chunks) * double(pl.kc) / 4 : 0;
  const double chain =
      (alu + other) * kNops + sy * kSyClocks + sy_tex * kSyTexClocks + ss * kSsClocks;
  c.latency_clk = std::ceil(waves / (sps * resident)) * chain;
  const std::pair<double, const char *> terms[] = {{c.issue_clk, "issue"},
                                                   {c.lds_clk, "shared"},
                                                   {c.l2_clk, "l2"},
                                                   {c.tex_clk, "texture"},
                                                   {c.latency_clk, "latency"}};
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
