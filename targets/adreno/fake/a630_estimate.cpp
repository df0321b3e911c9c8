// The a630 cost model (a630_estimate.h). Sources, as ../shared/research/adreno_perf.md reads
// them: tinygrad PR #16229 "qcom mmapeak" (MAD peaks measured on a comma 3, 2026-05-16); Mesa
// 25.0.7 src/freedreno/common/freedreno_devices.py (a630: num_ccu 2, reg_size_vec4 96,
// max_waves 16, wave_granularity 2, cs_shared_mem_size 32 KiB), src/freedreno/ir3/ir3.h
// (soft_ss_delay, soft_sy_delay: Mesa's own latency estimates), ir3.c (the register- and
// shared-memory-dependent wave limits); microsoft/ArchProbe's a640 report (Pixel 4) and Chips and
// Cheese's a640 article (bandwidths, SFU rate), scaled to the a630 by 4/6 uSPTP x 675/585 MHz;
// WikiChip's Snapdragon 845 page (LPDDR4X-3733, 4 x 16 bit).
#include "a630_estimate.h"

#include <algorithm>
#include <cmath>

#include "adreno_chips.h"

namespace capgraph::adreno {

namespace {

constexpr double kClockHz = 675e6;           // f
constexpr double kSlotsPerClock = 4;         // P: wave64 ALU instructions per clock, GPU-wide
constexpr double kWave128Alu = 1.48;         // c_alu: a wave128 ALU instruction, in wave64 slots
constexpr double kWave128AluF16 = 1;         // c_alu: a wave128 half-precision ALU instruction
constexpr double kWave128Other = 2;          // w: a wave128 flow/memory/texture/SFU issue
constexpr double kSfuSlots = 8;              // k_sfu
constexpr double kTexelsPerClock = 16;       // R_tex
constexpr double kL2BytesPerS = 74e9;        // W_l2 (buffers)
constexpr double kL2ImageBytesPerS = 150e9;  // W_l2_image
constexpr double kDramBytesPerS = 26e9;      // W_dram
constexpr double kSharedBytesPerS = 76e9;    // W_lds
constexpr double kMaxWaves = 16;             // per SP
constexpr double kWaveGranularity = 2;
constexpr double kSsClocks = 10;            // L_ss
constexpr double kSyMemClocks = 110;        // L_sy after ldg (an L2 hit)
constexpr double kSyTexClocks = 64;         // L_sy after isam
constexpr double kLaunchUs = 5;             // t_launch
constexpr double kPeakF32Flops = 468.14e9;  // MAD peaks at THREAD128, tinygrad PR #16229
constexpr double kPeakF16Flops = 690.36e9;

}  // namespace

const std::vector<a630_constant> &a630_constants() {
  const chip *a = chip_find("a630");
  static const std::vector<a630_constant> table = {
      {"f", kClockHz / 1e6, "MHz", false,
       "the #16229 MAD peaks are exact multiples of 675 MHz (345.6 = 256 x 2 x 675); the "
       "sdm845.dtsi operating points top out at 710"},
      {"P", kSlotsPerClock, "wave64 ALU instr/clk", false,
       "#16229: 345.66 GFLOP/s fp32 MAD at THREAD64 = 256 lanes x 2 x 675 MHz"},
      {"c_alu wave128", kWave128Alu, "wave64 slots", true,
       "#16229: 468.14 GFLOP/s fp32 at THREAD128: 2 x 345.66 / 468.14 = 1.48"},
      {"c_alu wave128 f16", kWave128AluF16, "wave64 slots", true,
       "#16229: 690.36 GFLOP/s fp16 at THREAD128 = 2 x 345.6; Mesa ir3.h: only fp16 without "
       "conversion runs at the doubled rate"},
      {"w wave128 non-ALU", kWave128Other, "wave64 slots", false,
       "two halves of 64 fibers (Mesa ir3.h's note on wave128 issue), not measured"},
      {"k_sfu", kSfuSlots, "wave64 slots", false,
       "a640 (Chips and Cheese): RCP/RSQ 55 vs FMA 407 GOP/s; 8 SFU vs 64 FP32 lanes"},
      {"R_tex", kTexelsPerClock, "texels/clk", false,
       "4 uSPTP x 4 texture units (Linley; a640 per-uSPTP count); the 1x1 conv of "
       "driving_vision measured 14.6 texels/clk"},
      {"W_l2", kL2BytesPerS / 1e9, "GB/s", false, "a640 ArchProbe buffer 96.3 GB/s x 0.77"},
      {"W_l2 image", kL2ImageBytesPerS / 1e9, "GB/s", false,
       "a640 ArchProbe image 194.6 GB/s x 0.77"},
      {"W_dram", kDramBytesPerS / 1e9, "GB/s", false,
       "LPDDR4X-3733 x 64 bit = 29.9 GB/s peak (WikiChip) x 0.88 (the a640's 30.1 of 34.1 "
       "measured)"},
      {"W_lds", kSharedBytesPerS / 1e9, "GB/s", false,
       "a640 ArchProbe local memory 98.8 GB/s (its low end) x 0.77"},
      {"SP", double(a ? a->num_sp_cores : 2), "", false,
       "Mesa freedreno_devices.py a630 num_ccu (a device-table fact, not a measurement)"},
      {"W_res", kMaxWaves, "waves/SP", false,
       "Mesa max_waves 16, less by registers (reg_size_vec4 96 / (regs x (2 if wave128)) x 2) and "
       "by 32 KiB shared memory per SP (ir3.c)"},
      {"L_ss", kSsClocks, "clk", false, "Mesa ir3.h soft_ss_delay (its scheduler's estimate)"},
      {"L_sy", kSyMemClocks, "clk", false,
       "Mesa ir3.h soft_sy_delay: 109 + components for loads (L2 hit), 64 for isam"},
      {"t_launch", kLaunchUs, "us", false, "none published: a guess, to fit on a device"},
  };
  return table;
}

double a630_clock_hz() { return kClockHz; }

double a630_copy_us(uint64_t bytes) { return 1e6 * 2.0 * double(bytes) / kDramBytesPerS; }

a630_estimate a630_estimate_of(const ir3_counts &c, const a630_dispatch_shape &s) {
  a630_estimate e;
  const double w128 = s.wave128 ? 1 : 0;
  // Issue: ALU by precision at wave128 (half-precision float ops at the doubled rate), (rpt)
  // repetitions as ALU, SFU at 1/8 rate; nops take no slot another wave could use.
  const double alu_f16 = double(c.alu_f16), alu_other = double(c.alu - c.alu_f16);
  const double alu_slots =
      w128 ? alu_f16 * kWave128AluF16 + (alu_other + double(c.rpt_extra)) * kWave128Alu
           : alu_f16 + alu_other + double(c.rpt_extra);
  const double width = w128 ? kWave128Other : 1;
  const double slots = alu_slots + width * (double(c.flow) + double(c.mem) + double(c.tex) +
                                            kSfuSlots * double(c.sfu));
  e.issue_clk = slots / kSlotsPerClock;
  e.tex_clk = double(c.texels) / kTexelsPerClock;
  const double per_clock = 1 / kClockHz;
  e.l2_clk = (double(c.global_load_bytes + c.global_store_bytes + c.private_bytes) / kL2BytesPerS +
              double(c.texture_bytes) / kL2ImageBytesPerS) /
             per_clock;
  e.dram_clk = double(s.unique_bytes) / kDramBytesPerS / per_clock;
  e.lds_clk = double(c.shared_load_bytes + c.shared_store_bytes) / kSharedBytesPerS / per_clock;
  // Latency: waves resident at once per SP, limited by registers and shared memory; each round
  // of them takes one wave's chain of issue slots and sync waits.
  const chip *a = chip_find("a630");
  const double reg_file = a ? a->reg_size_vec4 : 96, sps = a ? a->num_sp_cores : 2,
               shared = a ? a->shared_bytes : 32768, wave = (a ? a->wave_size : 64) * (1 + w128);
  double resident = kMaxWaves;
  if (s.full_regs)
    resident =
        std::min(resident, std::floor(reg_file / (s.full_regs * (1 + w128))) * kWaveGranularity);
  if (s.shared_bytes) {
    const double groups = std::floor(shared / s.shared_bytes),
                 waves_per_group = std::ceil(double(std::max(1u, s.group_threads)) / wave);
    resident = std::min(resident, groups * waves_per_group);
  }
  resident = std::max(1.0, resident);
  e.resident_waves = uint32_t(resident);
  if (c.waves) {
    const double sy_clocks =
        c.tex + c.mem
            ? (kSyTexClocks * double(c.tex) + kSyMemClocks * double(c.mem)) / double(c.tex + c.mem)
            : kSyMemClocks;
    const double chain =
        (double(c.issue_slots) + kSsClocks * double(c.ss_waits) + sy_clocks * double(c.sy_waits)) /
        double(c.waves);
    e.latency_clk = std::ceil(double(c.waves) / (sps * resident)) * chain;
  }
  const std::pair<double, const char *> terms[] = {
      {e.issue_clk, "issue"}, {e.tex_clk, "texture"}, {e.l2_clk, "l2"},
      {e.dram_clk, "dram"},   {e.lds_clk, "shared"},  {e.latency_clk, "latency"}};
  const auto *top =
      std::max_element(std::begin(terms), std::end(terms),
                       [](const auto &x, const auto &y) { return x.first < y.first; });
  e.bound = top->second;
  e.us = kLaunchUs + 1e6 * top->first / kClockHz;
  return e;
}

a630_roofline a630_roofline_of(double flops, double f16_share, double texels, double unique_bytes) {
  a630_roofline r;
  const double f16 = std::clamp(f16_share, 0.0, 1.0);
  r.alu_us = 1e6 * flops * (f16 / kPeakF16Flops + (1 - f16) / kPeakF32Flops);
  r.texel_us = 1e6 * texels / kTexelsPerClock / kClockHz;
  r.dram_us = 1e6 * unique_bytes / kDramBytesPerS;
  r.us = r.alu_us, r.limit = "alu";
  if (r.texel_us > r.us) r.us = r.texel_us, r.limit = "texel";
  if (r.dram_us > r.us) r.us = r.dram_us, r.limit = "dram";
  return r;
}

}  // namespace capgraph::adreno
