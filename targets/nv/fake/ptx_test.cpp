// ctest `ptx_interp_test` (unit): the PTX interpreter on hand-written kernels, each result worked
// out by hand from the PTX ISA's definitions: SIMT divergence and reconvergence, bar.sync and the
// shared-memory race check, parameters read from the constant-bank bytes, vector loads and stores,
// rounding modes and saturation of cvt, fma against mul + add, f16, faults (unmapped, misaligned,
// a loop that does not end), and refusals that name the instruction and kernel. Real kernels from
// the compiler are executed by `fake-nv` (fake_nv_ptx_test.cpp, nv_e2e.sh, op_conformance_nv).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ptx_exec.h"
#include "ptx_parse.h"

using namespace capgraph::nv;

namespace {

constexpr uint64_t kGlobal = 0x7f0000000000ull, kShared = 1ull << 40, kLocal = 2ull << 40;

const char *kHeader = ".version 7.8\n.target sm_90\n.address_size 64\n";

// Runs entry `k` of `body` (after the header) over `mem` mapped at kGlobal; parameters are the
// 8-byte values `params`. Returns "" or the error.
std::string run(const std::string &body, std::vector<uint8_t> &mem, std::vector<uint64_t> params,
                uint32_t grid = 1, uint32_t bx = 32, uint32_t by = 1, ptx_counts *counts = nullptr,
                uint64_t budget = 1ull << 30) {
  ptx_module m;
  std::string err;
  if (!ptx_parse(kHeader + body, &m, &err)) return err;
  REQUIRE(m.kernels.size() == 1);
  ptx_launch l;
  l.kernel = &m.kernels.begin()->second;
  l.name = "kernel 0 'test'";
  l.grid[0] = grid;
  l.block[0] = bx, l.block[1] = by;
  l.params = reinterpret_cast<const uint8_t *>(params.data());
  l.param_bytes = 8 * params.size();
  l.shared_bytes = 48 * 1024;
  l.shared_window = kShared, l.local_window = kLocal;
  l.find = [&](uint64_t gpu) -> ptx_region {
    if (gpu - kGlobal < mem.size()) return {kGlobal, mem.size(), mem.data()};
    return {};
  };
  l.max_warp_instructions = budget;
  ptx_counts c;
  if (!ptx_launch_run(l, &c, &err)) return err;
  if (counts) *counts = c;
  return "";
}

template <typename T>
T at(const std::vector<uint8_t> &mem, size_t i) {
  T v;
  memcpy(&v, mem.data() + i * sizeof(T), sizeof(T));
  return v;
}

std::string parse_error(const std::string &body) {
  ptx_module m;
  std::string err;
  CHECK_FALSE(ptx_parse(kHeader + body, &m, &err));
  return err;
}

}  // namespace

TEST_CASE("ptx: divergent branches and a data-dependent loop reconverge; tid/ntid/ctaid read") {
  // out[gid] = (tid odd ? sum_{i<tid} i : 1000 + tid) + ctaid * 100000; a second store after the
  // join writes ntid.x to out[64 + gid] from every lane (reconvergence: all lanes reach it).
  const std::string k = R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [k_param_0];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  and.b32 %r4, %r1, 1;
  setp.eq.s32 %p1, %r4, 0;
  @%p1 bra $EVEN;
  mov.u32 %r5, 0;
  mov.u32 %r6, 0;
$LOOP:
  setp.ge.u32 %p2, %r6, %r1;
  @%p2 bra $JOIN;
  add.s32 %r5, %r5, %r6;
  add.s32 %r6, %r6, 1;
  bra.uni $LOOP;
$EVEN:
  add.s32 %r5, %r1, 1000;
$JOIN:
  mad.lo.s32 %r7, %r2, 100000, %r5;
  mad.lo.s32 %r8, %r2, %r3, %r1;
  mul.wide.u32 %rd2, %r8, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r7;
  st.global.u32 [%rd3+256], %r3;
  ret;
})";
  std::vector<uint8_t> mem(1024, 0);
  ptx_counts c;
  REQUIRE(run(k, mem, {kGlobal}, 2, 32, 1, &c) == "");
  for (uint32_t b = 0; b < 2; b++)
    for (uint32_t t = 0; t < 32; t++) {
      CAPTURE(t);
      const uint32_t want = (t % 2 ? t * (t - 1) / 2 : 1000 + t) + b * 100000;
      CHECK(at<uint32_t>(mem, b * 32 + t) == want);
      CHECK(at<uint32_t>(mem, 64 + b * 32 + t) == 32);
    }
  CHECK(c.blocks == 2);
  CHECK(c.warps == 2);
  CHECK(c.divergent_branches >= 2);  // the even/odd split and the loop exits
  CHECK(c.global_stores == 4);       // two per warp: every lane reconverged before them
  CHECK(c.global_write_bytes == 2 * 64 * 4);
}

TEST_CASE("ptx: bar.sync orders shared memory across warps; without it the race is named") {
  // 64 threads: shared[t] = t * 3; bar.sync; out[t] = shared[63 - t].
  const std::string with = R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b32 %r<6>;
  .reg .b64 %rd<8>;
  .shared .align 4 .b8 tile[256];
  ld.param.u64 %rd1, [k_param_0];
  mov.u32 %r1, %tid.x;
  mul.lo.s32 %r2, %r1, 3;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd3, tile;
  add.s64 %rd4, %rd3, %rd2;
  st.shared.u32 [%rd4], %r2;
  BARRIER
  sub.s32 %r3, 63, %r1;
  mul.wide.u32 %rd5, %r3, 4;
  cvta.shared.u64 %rd6, %rd3;
  add.s64 %rd6, %rd6, %rd5;
  ld.u32 %r4, [%rd6];
  add.s64 %rd7, %rd1, %rd2;
  st.global.u32 [%rd7], %r4;
  ret;
})";
  std::vector<uint8_t> mem(256, 0);
  std::string k = with;
  k.replace(k.find("BARRIER"), 7, "bar.sync 0;");
  ptx_counts c;
  REQUIRE(run(k, mem, {kGlobal}, 1, 64, 1, &c) == "");
  for (uint32_t t = 0; t < 64; t++) CHECK(at<uint32_t>(mem, t) == (63 - t) * 3);
  CHECK(c.barriers == 1);
  CHECK(c.shared_write_bytes == 256);
  CHECK(c.shared_read_bytes == 256);  // the generic load found the shared window

  k = with;
  k.replace(k.find("BARRIER"), 7, "");
  const std::string err = run(k, mem, {kGlobal}, 1, 64, 1);
  CHECK(err.find("shared memory race") != std::string::npos);
  CHECK(err.find("kernel 0 'test'") != std::string::npos);
  // Warp 0 read word 63 before warp 1 wrote it: warp 1's store is where the order shows.
  CHECK(err.find("st.shared.u32") != std::string::npos);
  CHECK(err.find("was read by another thread") != std::string::npos);
}

TEST_CASE("ptx: a barrier only part of a block reaches waits for threads that exited only") {
  // Lanes >= 40 return first; the others meet at bar.sync and go on: the block ends.
  const std::string k = R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .pred %p<2>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  mov.u32 %r1, %tid.x;
  setp.ge.u32 %p1, %r1, 40;
  @%p1 ret;
  bar.sync 0;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r1;
  ret;
})";
  std::vector<uint8_t> mem(256, 0xee);
  REQUIRE(run(k, mem, {kGlobal}, 1, 64) == "");
  CHECK(at<uint32_t>(mem, 39) == 39);
  CHECK(at<uint32_t>(mem, 40) == 0xeeeeeeeeu);
}

TEST_CASE("ptx: parameters come from the constant bank bytes; vector loads and stores") {
  // Two pointers: copy a float4 from the second to the first, reversed, with .v4 and .v2.
  const std::string k = R"(
.visible .entry k(.param .u64 k_param_0, .param .u64 k_param_1)
{
  .reg .f32 %f<5>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [k_param_0];
  ld.param.u64 %rd2, [k_param_1];
  ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd2];
  st.global.v2.f32 [%rd1], {%f4, %f3};
  st.global.v2.f32 [%rd1+8], {%f2, %f1};
  ret;
})";
  std::vector<uint8_t> mem(64, 0);
  const float in[4] = {1.5f, -2.0f, 3.25f, 8.0f};
  memcpy(mem.data() + 32, in, 16);
  REQUIRE(run(k, mem, {kGlobal, kGlobal + 32}, 1, 1) == "");
  CHECK(at<float>(mem, 0) == 8.0f);
  CHECK(at<float>(mem, 1) == 3.25f);
  CHECK(at<float>(mem, 2) == -2.0f);
  CHECK(at<float>(mem, 3) == 1.5f);
  // One parameter too few in the bank: refused before anything runs.
  const std::string err = run(k, mem, {kGlobal}, 1, 1);
  CHECK(err.find("its parameters take 16 bytes, the constant bank holds 8") != std::string::npos);
}

TEST_CASE("ptx: cvt rounding modes, saturation, NaN; fma is one rounding; f16") {
  // Each lane converts in[lane] several ways; results are per lane in 8 words.
  const std::string k = R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .b16 %rs<3>;
  .reg .b32 %r<8>;
  .reg .f32 %f<10>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [k_param_0];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.f32 %f1, [%rd3];
  mul.wide.u32 %rd4, %r1, 32;
  add.s64 %rd5, %rd1, %rd4;
  cvt.rni.s32.f32 %r2, %f1;
  cvt.rzi.s32.f32 %r3, %f1;
  cvt.rmi.s32.f32 %r4, %f1;
  cvt.rpi.s32.f32 %r5, %f1;
  cvt.rzi.u32.f32 %r6, %f1;
  st.global.v4.u32 [%rd5+64], {%r2, %r3, %r4, %r5};
  st.global.u32 [%rd5+80], %r6;
  cvt.rn.f16.f32 %rs1, %f1;
  cvt.f32.f16 %f2, %rs1;
  st.global.f32 [%rd5+84], %f2;
  cvt.rni.f32.f32 %f3, %f1;
  st.global.f32 [%rd5+88], %f3;
  ret;
})";
  const float in[8] = {2.5f, -2.5f, -2.7f, 1e10f, -1e10f, NAN, 3.5f, 1.0009765625f + 0.0004f};
  std::vector<uint8_t> mem(64 + 32 * 8, 0);
  memcpy(mem.data(), in, sizeof in);
  REQUIRE(run(k, mem, {kGlobal}, 1, 8) == "");
  auto lane = [&](int l, int w) { return at<int32_t>(mem, 16 + 8 * l + w); };
  auto lanef = [&](int l, int w) { return at<float>(mem, 16 + 8 * l + w); };
  // rni (to nearest even), rzi, rmi, rpi, then rzi to unsigned.
  CHECK(lane(0, 0) == 2);
  CHECK(lane(0, 1) == 2);
  CHECK(lane(0, 2) == 2);
  CHECK(lane(0, 3) == 3);
  CHECK(lane(1, 0) == -2);
  CHECK(lane(1, 1) == -2);
  CHECK(lane(1, 2) == -3);
  CHECK(lane(1, 3) == -2);
  CHECK(lane(2, 0) == -3);
  CHECK(lane(2, 1) == -2);
  CHECK(lane(2, 2) == -3);
  CHECK(lane(2, 3) == -2);
  CHECK(lane(1, 4) == 0);          // negative to unsigned saturates at 0
  CHECK(lane(3, 0) == INT32_MAX);  // saturation
  CHECK(uint32_t(lane(3, 4)) == 0xffffffffu);
  CHECK(lane(4, 0) == INT32_MIN);
  CHECK(lane(5, 0) == 0);
  CHECK(lane(5, 4) == 0);  // NaN -> 0
  CHECK(lane(6, 0) == 4);  // 3.5 -> 4 (even)
  CHECK(lanef(0, 6) == 2.0f);
  CHECK(lanef(6, 6) == 4.0f);
  CHECK(lanef(0, 5) == 2.5f);           // exact in f16
  CHECK(lanef(7, 5) == 1.0009765625f);  // rounded to the nearest f16
  CHECK(std::isinf(lanef(3, 5)));       // 1e10 overflows f16
  CHECK(std::isnan(lanef(5, 5)));
}

TEST_CASE("ptx: fma.rn rounds once, mul + add twice; integer wide multiply and bfe") {
  const std::string k = R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .f32 %f<6>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [k_param_0];
  ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1];
  fma.rn.f32 %f5, %f1, %f2, %f3;
  st.global.f32 [%rd1+16], %f5;
  mul.rn.f32 %f5, %f1, %f2;
  add.rn.f32 %f5, %f5, %f3;
  st.global.f32 [%rd1+20], %f5;
  mov.u32 %r1, -1;
  mul.wide.u32 %rd2, %r1, %r1;
  st.global.u64 [%rd1+24], %rd2;
  mul.hi.s32 %r2, %r1, 7;
  st.global.u32 [%rd1+32], %r2;
  mov.u32 %r3, 0xF0;
  bfe.s32 %r4, %r3, 4, 4;
  st.global.u32 [%rd1+36], %r4;
  bfe.u32 %r5, %r3, 4, 4;
  st.global.u32 [%rd1+40], %r5;
  ret;
})";
  // a * b = 1 - 2^-46 exactly; fma keeps it, mul rounds it to 1 first.
  const float a = 1.0f + std::ldexp(1.0f, -23), b = 1.0f - std::ldexp(1.0f, -23), c = -1.0f;
  std::vector<uint8_t> mem(64, 0);
  const float in[4] = {a, b, c, 0};
  memcpy(mem.data(), in, 16);
  REQUIRE(run(k, mem, {kGlobal}, 1, 1) == "");
  CHECK(at<float>(mem, 4) == -std::ldexp(1.0f, -46));
  CHECK(at<float>(mem, 5) == 0.0f);
  uint64_t wide;
  memcpy(&wide, mem.data() + 24, 8);
  CHECK(wide == 0xfffffffe00000001ull);
  CHECK(at<int32_t>(mem, 8) == -1);  // high half of -7
  CHECK(at<int32_t>(mem, 9) == -1);  // 0xF sign-extended from bit 3
  CHECK(at<int32_t>(mem, 10) == 15);
}

TEST_CASE("ptx: faults a GPU would raise are errors naming the kernel and instruction") {
  const std::string load = R"(
.visible .entry k(.param .u64 k_param_0)
{
  .reg .f32 %f<2>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [k_param_0];
  ld.global.f32 %f1, [%rd1+OFFSET];
  ret;
})";
  std::vector<uint8_t> mem(64, 0);
  std::string k = load;
  k.replace(k.find("OFFSET"), 6, "64");
  std::string err = run(k, mem, {kGlobal}, 1, 1);
  CHECK(err.find("is not mapped") != std::string::npos);
  CHECK(err.find("PTX line 10 'ld.global.f32") != std::string::npos);
  CHECK(err.find("kernel 0 'test'") != std::string::npos);
  k = load;
  k.replace(k.find("OFFSET"), 6, "2");
  err = run(k, mem, {kGlobal}, 1, 1);
  CHECK(err.find("not aligned to the 4-byte access") != std::string::npos);

  const std::string forever = R"(
.visible .entry k()
{
$L:
  bra.uni $L;
  ret;
})";
  err = run(forever, mem, {}, 1, 32, 1, nullptr, 1u << 20);
  CHECK(err.find("does not end") != std::string::npos);
}

TEST_CASE("ptx: what the interpreter does not know is refused by name, never skipped") {
  const std::string shfl = R"(
.visible .entry kern()
{
  .reg .b32 %r<3>;
  shfl.sync.bfly.b32 %r1, %r2, 1, 31, -1;
  ret;
})";
  std::string err = parse_error(shfl);
  CHECK(err.find("shfl.sync.bfly.b32") != std::string::npos);
  CHECK(err.find("kernel kern") != std::string::npos);
  CHECK(err.find("PTX line 8") != std::string::npos);
  err = parse_error(".visible .entry kern()\n{\n  add.s32 %r1, %r1, 1;\n  ret;\n}\n");
  CHECK(err.find("register %r1 is not declared") != std::string::npos);
  err = parse_error(".visible .entry kern()\n{\n.reg .b32 %r<2>;\n  add.cc.s32 %r1, %r1, 1;\n}\n");
  CHECK(err.find(".cc") != std::string::npos);
  err = parse_error(".visible .entry kern()\n{\n.reg .f32 %f<3>;\n  add.rn.f32 %f1, %f2;\n}\n");
  CHECK(err.find("has 1 source operands, add takes 2") != std::string::npos);
  err = parse_error(".visible .entry kern()\n{\n.reg .f32 %f<3>;\n  ld.global.f32 %f1, %f2;\n}\n");
  CHECK(err.find("must be an address") != std::string::npos);
  err = parse_error(".func f()\n{\n ret;\n}\n");
  CHECK(err.find(".func") != std::string::npos);
  err =
      parse_error(".visible .entry kern()\n{\n .reg .pred %p<2>;\n @%p1 bra $NOWHERE;\n ret;\n}\n");
  CHECK(err.find("$NOWHERE") != std::string::npos);
  // A combination the parser accepts but the lanes do not model: named when it runs.
  std::vector<uint8_t> mem(16, 0);
  err = run(".visible .entry k()\n{\n .reg .b16 %h<3>;\n add.rn.bf16 %h1, %h2, %h2;\n ret;\n}\n",
            mem, {}, 1, 1);
  CHECK(err.find("bf16 arithmetic is not modelled") != std::string::npos);
  CHECK(err.find("add.rn.bf16") != std::string::npos);
}

TEST_CASE("ptx: every prefix of a kernel parses or fails with a message, never crashes") {
  const std::string k = std::string(kHeader) + R"(
.visible .entry k(.param .u64 k_param_0)
.reqntid 32, 1, 1
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<4>;
  .shared .align 16 .b8 t[128];
  ld.param.u64 %rd1, [k_param_0];
  mov.u32 %r1, %tid.x;
  setp.lt.u32 %p1, %r1, 16;
  @!%p1 bra $L__BB0_2;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.nc.f32 %f1, [%rd3+-4];
  fma.rn.f32 %f2, %f1, 0f3F800000, 0fBF800000;
  st.global.f32 [%rd3], %f2;
$L__BB0_2:
  ret;
}
)";
  ptx_module full;
  std::string err;
  REQUIRE(ptx_parse(k, &full, &err));
  CHECK(full.kernels.at("k").reqntid[0] == 32);
  CHECK(full.kernels.at("k").shared_bytes == 128);
  size_t failed = 0;
  for (size_t n = 0; n < k.size(); n++) {
    ptx_module m;
    std::string why;
    if (!ptx_parse(k.substr(0, n), &m, &why)) {
      failed++;
      CHECK(!why.empty());
    }
  }
  CHECK(failed > k.size() / 2);
}
