// The a630 cost model (a630_estimate.h) against the calibration points of
// ../shared/research/adreno_perf.md §6: the MAD peaks measured on a comma 3 (tinygrad PR #16229)
// and the published time of driving_vision's 1x1 192->64 convolution (kernel 672, tinygrad
// commit f6430a0559: 322.55 us); each term on counts whose answer is worked out by hand; the
// resident-wave limits; every constant with a source.
#include "a630_estimate.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

using namespace capgraph::adreno;

namespace {

double constant(const std::string &name) {
  for (const a630_constant &c : a630_constants())
    if (name == c.name) return c.value;
  FAIL("no constant " << name);
  return 0;
}

// GFLOP/s of a dispatch of `waves` waves, each `mads` mad instructions and nothing else.
double mad_gflops(bool wave128, bool f16, uint64_t waves, uint64_t mads) {
  ir3_counts c;
  c.waves = waves;
  c.instructions = c.alu = c.issue_slots = waves * mads;
  if (f16) c.alu_f16 = c.alu;
  c.fma_lanes = c.alu * (wave128 ? 128 : 64);
  a630_dispatch_shape s;
  s.wave128 = wave128;
  s.full_regs = 4;
  const a630_estimate e = a630_estimate_of(c, s);
  CHECK(std::string(e.bound) == "issue");
  return 2.0 * double(c.fma_lanes) / ((e.us - constant("t_launch")) * 1e3);
}

}  // namespace

TEST_CASE("a630 estimate: the MAD peaks measured on a comma 3 (tinygrad #16229)") {
  // Calibrated on them (P, f, c_alu), so this holds the constants to the measurements: 345.66
  // (fp32 and fp16 at THREAD64), 468.14 (fp32 at THREAD128), 690.36 (fp16 at THREAD128) GFLOP/s.
  CHECK(mad_gflops(false, false, 4096, 1000) == doctest::Approx(345.66).epsilon(0.01));
  CHECK(mad_gflops(false, true, 4096, 1000) == doctest::Approx(345.63).epsilon(0.01));
  CHECK(mad_gflops(true, false, 2048, 1000) == doctest::Approx(468.14).epsilon(0.01));
  CHECK(mad_gflops(true, true, 2048, 1000) == doctest::Approx(690.36).epsilon(0.01));
}

TEST_CASE("a630 estimate: driving_vision's 1x1 192->64 convolution (kernel 672, 322.55 us)") {
  // adreno_perf.md §6's counts of the published kernel (tinygrad r_512_16_4_4_48_4, half images,
  // the vendor compiler): 8192 fibers = 128 wave64 waves, ~3840 ALU instructions per wave, 48 x 8
  // image reads + 4 per fiber, ~1.3 MB from DRAM. Published: 322.55 us. The model must say it is
  // texture bound and land within 15%.
  ir3_counts c;
  c.waves = 128;
  c.alu = 128 * 3840;
  c.tex = 128 * (48 * 8 + 4);
  c.texels = 8192ull * (48 * 8 + 4);
  c.texture_bytes = c.texels * 8;
  c.issue_slots = c.alu + c.tex;
  c.sy_waits = 128 * 48;
  a630_dispatch_shape s;
  s.full_regs = 16;
  s.unique_bytes = 1300000;
  const a630_estimate e = a630_estimate_of(c, s);
  CHECK(std::string(e.bound) == "texture");
  CHECK(e.us == doctest::Approx(322.55).epsilon(0.15));
  MESSAGE("kernel 672: estimated " << e.us << " us, published 322.55 us");
}

TEST_CASE("a630 roofline: each limit by hand, and the calibration kernels reach it") {
  SUBCASE("ALU: 468.14 MFLOP in float32 is 1 ms, 690.36 in float16 too, mixed adds up") {
    CHECK(a630_roofline_of(468.14e6, 0, 0, 0).us == doctest::Approx(1000));
    CHECK(a630_roofline_of(690.36e6, 1, 0, 0).us == doctest::Approx(1000));
    CHECK(a630_roofline_of(468.14e6, 0.5, 0, 0).alu_us ==
          doctest::Approx(500 + 500 * 468.14 / 690.36));
    CHECK(std::string(a630_roofline_of(1e6, 0, 0, 0).limit) == "alu");
  }
  SUBCASE("texel: 16 a clock; DRAM: 26 GB/s; the longest names the limit") {
    const a630_roofline t = a630_roofline_of(1e3, 0, 16 * 675e6 / 1000, 1000);
    CHECK(t.texel_us == doctest::Approx(1000));
    CHECK(std::string(t.limit) == "texel");
    const a630_roofline d = a630_roofline_of(1e3, 0, 16, 26e6);
    CHECK(d.dram_us == doctest::Approx(1000));
    CHECK(std::string(d.limit) == "dram");
  }
  SUBCASE("driving_vision's kernel 672 is at its texel limit by the estimate (share > 0.9)") {
    // The counts of the test above: 8192 fibers x 388 texels, 1.3 MB, 2 x 8192 x 4 x 192 FLOPs.
    const a630_roofline r = a630_roofline_of(2.0 * 8192 * 4 * 192, 1, 8192.0 * 388, 1300000);
    CHECK(std::string(r.limit) == "texel");
    CHECK(r.us / 322.55 > 0.9);
  }
}

TEST_CASE("a630 estimate: each term on counts worked out by hand") {
  const double f = constant("f") * 1e6, launch = constant("t_launch");
  SUBCASE("DRAM: 26 MB of unique bytes at 26 GB/s is 1 ms") {
    ir3_counts c;
    c.waves = 1;
    a630_dispatch_shape s;
    s.unique_bytes = 26000000;
    const a630_estimate e = a630_estimate_of(c, s);
    CHECK(std::string(e.bound) == "dram");
    CHECK(e.us == doctest::Approx(1000 + launch));
  }
  SUBCASE("L2: 74 MB of global loads at 74 GB/s is 1 ms") {
    ir3_counts c;
    c.waves = 1;
    c.global_load_bytes = 74000000;
    const a630_estimate e = a630_estimate_of(c, {});
    CHECK(std::string(e.bound) == "l2");
    CHECK(e.us == doctest::Approx(1000 + launch));
  }
  SUBCASE("shared: 76 MB at 76 GB/s is 1 ms") {
    ir3_counts c;
    c.waves = 1;
    c.shared_load_bytes = c.shared_store_bytes = 38000000;
    const a630_estimate e = a630_estimate_of(c, {});
    CHECK(std::string(e.bound) == "shared");
    CHECK(e.us == doctest::Approx(1000 + launch));
  }
  SUBCASE("SFU: 8 wave64 slots each, 4 slots a clock") {
    ir3_counts c;
    c.waves = 64;
    c.sfu = 675000;  // 8 x 675000 / 4 clocks = 2 ms at 675 MHz
    const a630_estimate e = a630_estimate_of(c, {});
    CHECK(std::string(e.bound) == "issue");
    CHECK(e.us == doctest::Approx(1e6 * 8 * 675000 / 4 / f + launch));
  }
  SUBCASE("latency: one wave's chain of slots and (ss)/(sy) waits, per round of resident waves") {
    ir3_counts c;
    c.waves = 1;
    c.instructions = c.issue_slots = 100;
    c.mem = 2;
    c.ss_waits = 1;
    c.sy_waits = 2;
    a630_dispatch_shape s;
    s.full_regs = 8;
    const a630_estimate e = a630_estimate_of(c, s);
    CHECK(std::string(e.bound) == "latency");
    CHECK(e.latency_clk == doctest::Approx(100 + 10 + 2 * 110));
    // 2 SP x 16 resident waves: 32 waves are one round, 33 are two.
    c.waves = 32;
    c.instructions = c.issue_slots = 100 * 32;
    c.ss_waits = 32;
    c.sy_waits = 64;
    CHECK(a630_estimate_of(c, s).latency_clk == doctest::Approx(100 + 10 + 2 * 110));
    c.waves = 33;
    c.instructions = c.issue_slots = 100 * 33;
    c.ss_waits = 33;
    c.sy_waits = 66;
    CHECK(a630_estimate_of(c, s).latency_clk == doctest::Approx(2 * (100 + 10 + 2 * 110)));
  }
}

TEST_CASE("a630 estimate: resident waves limited by registers and shared memory (Mesa ir3.c)") {
  ir3_counts c;
  c.waves = 1;
  a630_dispatch_shape s;
  s.full_regs = 4;
  CHECK(a630_estimate_of(c, s).resident_waves == 16);  // max_waves
  s.full_regs = 48;
  CHECK(a630_estimate_of(c, s).resident_waves == 4);  // 96 / 48 x 2
  s.wave128 = true;
  CHECK(a630_estimate_of(c, s).resident_waves == 2);  // 96 / (48 x 2) x 2
  s.wave128 = false;
  s.full_regs = 8;
  s.shared_bytes = 16384;  // two workgroups of 256 fibers (4 waves each) fit the 32 KiB
  s.group_threads = 256;
  CHECK(a630_estimate_of(c, s).resident_waves == 8);
}

TEST_CASE("a630 estimate: every constant has a source; the measured ones are the a630's") {
  int measured = 0;
  for (const a630_constant &c : a630_constants()) {
    INFO(c.name);
    CHECK(c.value > 0);
    CHECK(std::string(c.source).size() > 10);
    if (c.measured) {
      measured++;
      CHECK(std::string(c.source).find("#16229") != std::string::npos);
    }
  }
  CHECK(measured == 2);
  CHECK(a630_copy_us(13000000) == doctest::Approx(1000));  // read and written at 26 GB/s
}
