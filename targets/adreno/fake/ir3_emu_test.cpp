// The ir3 emulator on hand-built instruction words. The words come from a small encoder
// (ir3_test_encode.h) written from the same Mesa 25.0.7 ir3-cat*.xml field layouts the decoder
// reads; the expected disassembly follows the XML display templates, and
// ir3_emu_kernels_test.cpp checks the rendering against Mesa's own disassembler.
#include "ir3_emu.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "ir3_decode.h"
#include "ir3_test_encode.h"

using namespace capgraph::adreno;
using namespace capgraph::adreno::enc;

namespace {

// One region of "GPU memory" and a dispatch of one workgroup of 64 fibers.
struct harness {
  static constexpr uint64_t base = 0x100000000ull;
  std::vector<uint8_t> mem = std::vector<uint8_t>(1 << 16, 0);
  ir3_dispatch d;
  ir3_counts counts;
  std::vector<ir3_finding> findings;
  std::string err;
  harness() {
    d.kernel = "test";
    d.local[0] = 64;
    d.full_regs = 16;
    d.local_id_regid = R(0, 0);
    d.workgroup_id_regid = R(48, 0);
    d.constlen_vec4 = 16;
    addr(0, 0x8000);  // c0.xy: where store_tail writes
  }
  ir3_region_find find() {
    return [this](uint64_t a) {
      return a >= base && a < base + mem.size() ? ir3_region{base, mem.size(), mem.data()}
                                                : ir3_region{};
    };
  }
  template <class T>
  T *at(uint64_t off) {
    return reinterpret_cast<T *>(mem.data() + off);
  }
  // c[n] = a GPU address as two words
  void addr(int cn, uint64_t off) {
    d.consts[cn] = uint32_t(base + off);
    d.consts[cn + 1] = uint32_t((base + off) >> 32);
  }
  bool run(const std::vector<uint64_t> &words) {
    std::vector<uint32_t> dw;
    for (uint64_t w : words) {
      dw.push_back(uint32_t(w));
      dw.push_back(uint32_t(w >> 32));
    }
    counts = ir3_counts();
    findings.clear();
    err.clear();
    if (!ir3_program_decode(dw.data(), words.size(), d.kernel, &d.program, &err)) return false;
    return ir3_dispatch_run(d, find(), &counts, &findings, &err);
  }
  bool has(ir3_hazard_kind k, uint32_t instr) const {
    for (const ir3_finding &f : findings)
      if (f.kind == k && f.instr == instr) return true;
    return false;
  }
  std::string findings_text() const {
    std::string s;
    for (const ir3_finding &f : findings) s += f.text + "\n";
    return s;
  }
};

// Stores r`reg` of every fiber to out[fiber] (32 bits at 0x8000 + 4 * fiber): the address from
// c0.xy in r1.x/r1.y, indexed by the local id r0.x.
constexpr uint64_t stg_a(int addr, int idx, int val) {  // stg.a.u32 g[addr+(idx)<<2], val, 1
  return 6ull << 61 | 3ull << 54 | 1ull << 52 | uint64_t(u32) << 49 | uint64_t(addr) << 41 |
         uint64_t(idx) << 32 | 1ull << 24 | 1ull << 23 | uint64_t(val) << 1;
}
std::vector<uint64_t> store_tail(int reg) {
  return {mov_c(u32, u32, R(1, 0), 0), mov_c(u32, u32, R(1, 1), 1), nop(5),
          stg_a(R(1, 0), R(0, 0), reg), end()};
}

uint16_t half_bits(float v) {  // exact for the small values the tests use
  if (v == 0) return 0;
  int e;
  const float m = std::frexp(v, &e);
  return uint16_t((e - 1 + 15) << 10 | int((m * 2 - 1) * 1024));
}
float half_value(uint16_t h) {
  return h == 0 ? 0.0f : std::ldexp(1.0f + (h & 0x3ff) / 1024.0f, (h >> 10) - 15);
}

std::vector<uint64_t> cat(std::vector<uint64_t> a, const std::vector<uint64_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

std::string text(uint64_t w, int at = 0) {
  ir3_instr i;
  std::string why;
  if (!ir3_decode(w, &i, &why)) return "error: " + why;
  return ir3_render(i, at);
}

}  // namespace

TEST_CASE(
    "ir3 decode: hand-built words of every category render as the XML display templates say") {
  CHECK(text(nop(2)) == "(rpt2)nop");
  CHECK(text(end()) == "end");
  CHECK(text(br(4)) == "br p0.x, #4");
  CHECK(text(br(-3, 1, true) | JP) == "(jp)br !p0.y, #-3");
  CHECK(text(jump(7), 10) == "jump #7");
  CHECK(ir3_render(
            [] {
              ir3_instr i;
              ir3_decode(jump(7), &i, nullptr);
              return i;
            }(),
            10, true) == "jump #l17");
  CHECK(text(predt()) == "predt");
  CHECK(text(cat2(add_f, R(0, 0), g(R(1, 1)), c(R(2, 3)))) == "add.f r0.x, r1.y, c2.w");
  CHECK(text(cat2(add_f, R(0, 0), g(R(1, 1), 1), flut(2)) | SS | SY) ==
        "(sy)(ss)add.f r0.x, (neg)r1.y, (1.0)");
  CHECK(text(cat2(add_s, R(1, 3), g(R(0, 0)), imm(-1), false) | R1 | R2) ==
        "(nop3) add.s hr1.w, hr0.x, h(-1)");
  CHECK(text(cat2(add_f, R(4, 1), g(R(3, 0)), g(R(4, 0))) | RPT(3) | R1) ==
        "(rpt3)add.f r4.y, (r)r3.x, r4.x");
  CHECK(text(cat2(cmps_u, P0X, g(R(0, 3)), imm(64), true, lt)) == "cmps.u.lt p0.x, r0.w, 64");
  CHECK(text(cat2(absneg_f, R(2, 0), g(R(1, 0), 2)) | SAT) == "(sat)absneg.f r2.x, (abs)r1.x");
  CHECK(text(cat2(add_f, R(0, 1), rel(5), g(R(1, 0)))) == "add.f r0.y, r<a0.x + 5>, r1.x");
  CHECK(text(cat3(mad_f32, R(1, 1), c3(R(12, 0)) | NEG1, R(1, 0), c3(R(12, 1)))) ==
        "mad.f32 r1.y, (neg)c12.x, r1.x, c12.y");
  CHECK(text(cat3(sel_b32, R(2, 1), g3(R(3, 0)), R(4, 0), g3(R(5, 0))) | R1) ==
        "(nop1) sel.b32 r2.y, r3.x, r4.x, r5.x");
  CHECK(text(cat3(shlg, R(0, 0), i3(8), R(1, 0), i3(12), true)) == "shlg r0.x, 8, r1.x, 12");
  CHECK(text(cat4(rcp, R(2, 2), g(R(0, 3)))) == "rcp r2.z, r0.w");
  CHECK(text(mov_c(f32, f32, R(0, 0), R(8, 0))) == "mov.f32f32 r0.x, c8.x");
  CHECK(text(mov_g(s32, s16, R(0, 0), R(0, 0))) == "cov.s32s16 hr0.x, r0.x");
  CHECK(text(mov_g(f32, f16, R(0, 0), R(0, 0), 1)) == "cov.f32f16 (even)hr0.x, r0.x");
  CHECK(text(mov_i(f16, f16, R(1, 1), 0x3900)) == "mov.f16f16 hr1.y, h(0.625000)");
  CHECK(text(mov_i(f32, f32, R(1, 1), bits_of(2.5f))) == "mov.f32f32 r1.y, (2.500000)");
  CHECK(text(mov_i(u32, u32, R(1, 1), 0x12345)) == "mov.u32u32 r1.y, 0x12345");
  CHECK(text(mov_i(s16, s16, A0X, 3)) == "mova a0.x, 3");
  CHECK(text(mov_rel(s32, s32, R(1, 0), 17, true)) == "mov.s32s32 r1.x, c<a0.x + 17>");
  CHECK(text(mov_to_rel(s32, s32, 4, R(2, 0))) == "mov.s32s32 r<a0.x + 4>, r2.x");
  CHECK(text(swz(u32, R(6, 2), R(7, 2), R(7, 2), R(6, 2))) == "swz.u32u32 r6.z, r7.z, r7.z, r6.z");
  CHECK(text(ldg(u32, R(1, 2), R(1, 2), 7, 1)) == "ldg.u32 r1.z, g[r1.z+7], 1");
  CHECK(text(ldg_a(f32, R(4, 1), R(0, 2), R(4, 1), 4)) == "ldg.a.f32 r4.y, g[r0.z+(r4.y)<<2], 4");
  CHECK(text(stg(s32, R(0, 2), 305, R(8, 1), 3)) == "stg.s32 g[r0.z+305], r8.y, 3");
  CHECK(text(ldl(f32, R(0, 2), R(0, 2), 12, 1)) == "ldl.f32 r0.z, l[r0.z+12], 1");
  CHECK(text(stl(f32, R(2, 3), 16, R(0, 0), 4)) == "stl.f32 l[r2.w+16], r0.x, 4");
  CHECK(text(ldp(u32, R(6, 0), R(2, 0), 0, 3)) == "ldp.u32 r6.x, p[r2.x], 3");
  CHECK(text(stib(f32, R(0, 0), R(1, 0), 2)) == "stib.b.typed.2d.f32.4.imm r0.x, r1.x, 2");
  CHECK(text(isam(f32, R(2, 0), R(0, 0), 1) | SY) == "(sy)isam (f32)(xyzw)r2.x, r0.x, s#0, t#1");
  CHECK(text(bar()) == "bar.g");
  CHECK(text(getfiberid(R(0, 0))) == "getfiberid.u32 r0.x");
  // dp4acc's bit 46 is its opcode bit, not DST_CONV: its DST is full, as Mesa renders it (a
  // flipped-bit word the cross-check of ir3_emu_kernels_test found rendered as hr7.w).
  CHECK(text(0x669ec01f002ea03cull) == "(nop2) dp4acc.unsigned.low r7.w, r15.x, r15.y, r11.z");
}

TEST_CASE(
    "ir3 decode: a word no a6xx encoding accepts is an error naming the kernel, the index and the "
    "word") {
  std::vector<ir3_instr> out;
  std::string err;
  // Category 7 with opcode 15 (none), then a nop with a "dontcare" bit (32) set: Mesa's decoder
  // reports both ("dontcare bits in nop").
  const uint64_t bad[] = {nop(), 7ull << 61 | 15ull << 55};
  const uint32_t dw[] = {uint32_t(bad[0]), uint32_t(bad[0] >> 32), uint32_t(bad[1]),
                         uint32_t(bad[1] >> 32)};
  CHECK_FALSE(ir3_program_decode(dw, 2, "conv3x3+Relu", &out, &err));
  CHECK(err.find("kernel conv3x3+Relu") != std::string::npos);
  CHECK(err.find("instruction 1") != std::string::npos);
  CHECK(err.find("0xe7800000_00000000") != std::string::npos);
  std::string why;
  ir3_instr i;
  CHECK_FALSE(ir3_decode(nop() | 1ull << 32, &i, &why));
  CHECK(why.find("dontcare") != std::string::npos);
  // An a7xx-only encoding (alias, cat7 opcode 8) is no a6xx instruction.
  CHECK_FALSE(ir3_decode(7ull << 61 | 8ull << 55 | 1ull << 54, &i, &why));
  // A const source with the dontcare bit 13 set ("x10"), a cat3 const source with bit 11 set.
  CHECK_FALSE(ir3_decode(cat2(add_f, R(0, 0), g(R(1, 0)), c(5) | 1u << 13), &i, &why));
  CHECK_FALSE(ir3_decode(cat3(mad_f32, R(0, 0), c3(5) | 1u << 11, R(1, 0), g3(R(2, 0))), &i, &why));
}

TEST_CASE(
    "ir3 emulator: integer and float ALU, (rpt) with (r), (nop), (sat), float table, const "
    "demotion") {
  harness h;
  h.d.consts[R(2, 0)] = bits_of(1.5f);
  h.d.consts[R(2, 1)] = 0x12345678;
  auto one = [&](std::vector<uint64_t> body, int reg) {
    REQUIRE(h.run(cat(body, store_tail(reg))));
    INFO(h.findings_text());
    CHECK(h.findings.empty());
    return h.at<uint32_t>(0x8000);
  };
  // r2.x = lid * 3 - 5 (signed), shifts, bit ops
  uint32_t *out = one({cat2(mul_u24, R(2, 0), g(R(0, 0)), imm(3)), nop(2),
                       cat2(add_s, R(2, 0), g(R(2, 0)), imm(-5))},
                      R(2, 0));
  for (int l = 0; l < 64; l++) CHECK(int32_t(out[l]) == l * 3 - 5);
  out = one({cat2(shl_b, R(2, 0), g(R(0, 0)), imm(4)), nop(2),
             cat2(xor_b, R(2, 0), g(R(2, 0)), imm(0x55)), nop(2),
             cat2(ashr_b, R(2, 0), g(R(2, 0), 1), imm(1))},  // (neg) on a bitwise op is NOT
            R(2, 0));
  for (int l = 0; l < 64; l++)
    CHECK(out[l] == uint32_t(int32_t(~((uint32_t(l) << 4) ^ 0x55u)) >> 1));
  // clz/cbits/bfrev; clz.b of 0 is -1 (Mesa's ufind_msb and find_lsb rely on it: a planted 32
  // made every int64 -> float32 conversion of a small value 0)
  out = one({cat2(cbits_b, R(2, 0), g(R(0, 0))), nop(2), cat2(clz_b, R(2, 1), g(R(0, 0))), nop(2),
             cat2(shl_b, R(2, 1), g(R(2, 1)), imm(8)), nop(2),
             cat2(or_b, R(2, 0), g(R(2, 0)), g(R(2, 1)))},
            R(2, 0));
  for (int l = 0; l < 64; l++)
    CHECK(out[l] ==
          (uint32_t(__builtin_popcount(l)) | (l ? uint32_t(__builtin_clz(l)) : ~0u) << 8));
  // clz.s counts the sign's copies below the sign bit, -1 for 0 and -1 (ifind_msb's lowering):
  // of lid - 32, 31 ... 1 and -1 for 0 and -1, as 31 - ifind_msb
  out = one({cat2(add_s, R(2, 0), g(R(0, 0)), imm(-32)), nop(2), cat2(clz_s, R(2, 0), g(R(2, 0)))},
            R(2, 0));
  for (int l = 0; l < 64; l++) {
    const int32_t x = l - 32, t = x < 0 ? ~x : x;
    CHECK(int32_t(out[l]) == (t ? __builtin_clz(uint32_t(t)) : -1));
  }
  // imul as Mesa lowers it (ir3_nir_imul.py): madsh.m16(b, a, madsh.m16(a, b, mull.u(a, b)))
  h.d.consts[R(2, 2)] = 0x9e3779b1;
  out =
      one({mov_c(u32, u32, R(3, 0), R(2, 2)), nop(2), cat2(mull_u, R(2, 0), g(R(0, 0)), g(R(3, 0))),
           nop(2), cat3(madsh_m16, R(2, 0), g3(R(0, 0)), R(3, 0), g3(R(2, 0))), nop(2),
           cat3(madsh_m16, R(2, 0), g3(R(3, 0)), R(0, 0), g3(R(2, 0)))},
          R(2, 0));
  for (int l = 0; l < 64; l++) CHECK(out[l] == uint32_t(l) * 0x9e3779b1u);
  // float: (lid + 1.5) * 2.0 (table), floor, with a (nop2) in place of nops
  out =
      one({mov_g(u32, f32, R(2, 0), R(0, 0)), nop(2),
           cat2(add_f, R(2, 0), g(R(2, 0)), c(R(2, 0))) | R1 | R2,
           cat2(mul_f, R(2, 0), g(R(2, 0)), flut(1)), nop(2), cat2(floor_f, R(2, 1), g(R(2, 0), 1)),
           nop(2), cat2(add_f, R(2, 0), g(R(2, 0)), g(R(2, 1)))},
          R(2, 0));
  for (int l = 0; l < 64; l++)
    CHECK(f32_of(out[l]) == (l + 1.5f) * 0.5f + std::floor(-((l + 1.5f) * 0.5f)));
  // (sat) and min/max; compares write 0/1
  out =
      one({mov_g(u32, f32, R(2, 0), R(0, 0)), nop(2), cat2(mul_f, R(2, 0), g(R(2, 0)), c(R(2, 0))),
           nop(2), cat2(add_f, R(2, 1), g(R(2, 0)), flut(0)) | SAT,
           cat2(cmps_f, R(2, 2), g(R(2, 0)), flut(4), true, gt), nop(2),
           mov_g(u32, f32, R(2, 2), R(2, 2)), nop(2), cat2(add_f, R(2, 0), g(R(2, 1)), g(R(2, 2)))},
          R(2, 0));
  for (int l = 0; l < 64; l++) {
    const float x = l * 1.5f;
    CHECK(f32_of(out[l]) == std::fmin(std::fmax(x, 0.0f), 1.0f) + (x > float(M_E) ? 1.0f : 0.0f));
  }
  // (rpt2) with (r): r3.y..r3.w = r2.x..r2.z + 1
  out = one({cat2(add_u, R(2, 0), g(R(0, 0)), imm(10)), cat2(add_u, R(2, 1), g(R(0, 0)), imm(20)),
             cat2(add_u, R(2, 2), g(R(0, 0)), imm(30)), nop(2),
             cat2(add_u, R(3, 1), g(R(2, 0)), imm(1)) | RPT(2) | R1, nop(2),
             cat2(add_u, R(3, 0), g(R(3, 1)), g(R(3, 3))), nop(2),
             cat2(add_u, R(3, 0), g(R(3, 0)), g(R(3, 2)))},
            R(3, 0));
  for (int l = 0; l < 64; l++) CHECK(out[l] == uint32_t(3 * l + 63));
  CHECK(h.counts.rpt_extra == 2);
  // swz swaps in parallel: r2.x = lid + 1, r2.y = 2 * lid, swapped, r2.x - r2.y = lid - 1.
  out = one({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)), cat2(shl_b, R(2, 1), g(R(0, 0)), imm(1)),
             nop(2), swz(u32, R(2, 0), R(2, 1), R(2, 1), R(2, 0)), nop(2),
             cat2(sub_u, R(2, 0), g(R(2, 0)), g(R(2, 1)))},
            R(2, 0));
  for (int l = 0; l < 64; l++) CHECK(out[l] == uint32_t(l - 1));
  // A half const register reads the 32-bit constant and converts it (CONSTANT_DEMOTION_ENABLE):
  // f2f16 in a float op, u2u16 in an integer one. hr4.x aliases the low half of r2.x.
  out = one({mov_i(u32, u32, R(2, 0), 0), cat2(add_f, R(4, 0), flut(0, true), c(R(2, 0)), false),
             cat2(add_u, R(4, 1), imm(0), c(R(2, 1)), false), nop(5)},
            R(2, 0));
  CHECK(out[0] == (0x5678u << 16 | 0x3e00u));
}

TEST_CASE(
    "ir3 emulator: cov rounds toward zero by default, (even) to nearest; saturating float->int; "
    "8-bit sources sign-extend") {
  harness h;
  h.d.consts[R(2, 0)] =
      bits_of(1.0f + 3.0f / 2048);  // halfway between the halves 1 + 1/1024 and 1 + 2/1024
  h.d.consts[R(2, 1)] = bits_of(-3.7e9f);
  h.d.consts[R(2, 2)] = 0x1ff;  // low byte 0xff
  auto lane0 = [&](std::vector<uint64_t> body, int reg) {
    REQUIRE(h.run(cat(cat({mov_c(f32, f32, R(3, 0), R(2, 0)), mov_c(f32, f32, R(3, 1), R(2, 1)),
                           mov_c(u32, u32, R(3, 2), R(2, 2)), nop(2)},
                          body),
                      store_tail(reg))));
    INFO(h.findings_text());
    CHECK(h.findings.empty());
    return h.at<uint32_t>(0x8000)[0];
  };
  // hr8.x and hr8.y are the halves of r4.x in the merged register file.
  CHECK(lane0({mov_g(f32, f16, R(8, 0), R(3, 0)), mov_g(f32, f16, R(8, 1), R(3, 0), 1), nop(5)},
              R(4, 0)) == (0x3c02u << 16 | 0x3c01u));
  CHECK(int32_t(lane0({mov_g(f32, s32, R(4, 0), R(3, 1)), nop(2)}, R(4, 0))) == INT32_MIN);
  CHECK(lane0({nop(2), mov_i(u32, u32, R(4, 0), 0), mov_g(u8, s16, R(8, 0), 2 * R(3, 2)), nop(5)},
              R(4, 0)) == 0xffffu);
  CHECK(lane0({mov_g(f32, f16, R(8, 0), R(3, 0), 1), nop(2), mov_g(f16, f32, R(4, 1), R(8, 0)),
               nop(2)},
              R(4, 1)) == bits_of(1.0f + 2.0f / 1024));
  CHECK(lane0({mov_g(u32, f32, R(4, 0), R(3, 2)), nop(2)}, R(4, 0)) == bits_of(511.0f));
}

TEST_CASE("ir3 emulator: mova and r<a0.x>/c<a0.x> relative operands") {
  harness h;
  for (int k = 0; k < 8; k++) h.d.consts[R(4, 0) + k] = 100 + k;
  // a0.x = lid & 7; r3.x = c<a0.x + 16> (c4.x + a0.x); r<a0.x + 24> = r3.x (r6.x + a0.x); r2.x =
  // r<a0.x + 24>.
  REQUIRE(h.run(cat(
      {cat2(and_b, R(2, 0), g(R(0, 0)), imm(7)), nop(2), mov_g(u32, s16, R(5, 0), R(2, 0)), nop(2),
       mov_g(s16, s16, A0X, R(5, 0)), nop(5), mov_rel(u32, u32, R(3, 0), R(4, 0), true), nop(2),
       mov_to_rel(u32, u32, R(6, 0), R(3, 0)), nop(2), mov_rel(u32, u32, R(2, 0), R(6, 0)), nop(2)},
      store_tail(R(2, 0)))));
  INFO(h.err);
  INFO(h.findings_text());
  CHECK(h.findings.empty());
  for (int l = 0; l < 64; l++) CHECK(h.at<uint32_t>(0x8000)[l] == uint32_t(100 + (l & 7)));
}

TEST_CASE(
    "ir3 emulator: divergent branches reconverge at the lowest pc; a missing (jp) is a finding") {
  harness h;
  // if (lid < 20) r2.x = 1 else r2.x = 2; r2.x += 10
  const std::vector<uint64_t> body = {cat2(cmps_u, P0X, g(R(0, 0)), imm(20), true, lt),  // 0
                                      nop(5),                                            // 1
                                      br(4, 0, true),                    // 2: !p0.x -> 6
                                      mov_i(u32, u32, R(2, 0), 1),       // 3
                                      jump(4),                           // 4 -> 8
                                      nop(),                             // 5 (skipped)
                                      mov_i(u32, u32, R(2, 0), 2) | JP,  // 6
                                      jump(1),                           // 7
                                      nop(2) | JP,                       // 8: both sides meet
                                      cat2(add_u, R(2, 0), g(R(2, 0)), imm(10)),  // 9
                                      nop(5)};
  REQUIRE(h.run(cat(body, store_tail(R(2, 0)))));
  for (int l = 0; l < 64; l++) CHECK(h.at<uint32_t>(0x8000)[l] == (l < 20 ? 11u : 12u));
  INFO(h.findings_text());
  CHECK(h.findings.empty());
  CHECK(h.counts.divergent_branches == 1);
  // Without (jp) where the parked fibers resume (6) and where both sides meet (8).
  std::vector<uint64_t> no_jp = body;
  no_jp[6] &= ~JP;
  no_jp[8] &= ~JP;
  REQUIRE(h.run(cat(no_jp, store_tail(R(2, 0)))));
  CHECK(h.has(ir3_hazard_kind::missing_jp, 6));
  CHECK(h.has(ir3_hazard_kind::missing_jp, 8));
  // A uniform branch needs no (jp).
  h.d.local[0] = 16;
  REQUIRE(h.run(cat(no_jp, store_tail(R(2, 0)))));
  CHECK(h.findings.empty());
}

TEST_CASE(
    "ir3 emulator: predt/predf/prede execute both sides with the other fibers' writes disabled") {
  harness h;
  REQUIRE(h.run(cat(
      {cat2(cmps_u, P0X, g(R(0, 0)), imm(33), true, ge), mov_i(u32, u32, R(2, 0), 5), nop(4),
       predt(), mov_i(u32, u32, R(2, 0), 7), predf(), mov_i(u32, u32, R(2, 0), 9), prede(), nop(2)},
      store_tail(R(2, 0)))));
  for (int l = 0; l < 64; l++) CHECK(h.at<uint32_t>(0x8000)[l] == (l >= 33 ? 7u : 9u));
  INFO(h.findings_text());
  CHECK(h.findings.empty());
}

TEST_CASE("ir3 emulator: SFU results, computed in double and rounded") {
  harness h;
  auto sfu = [&](int opc, float x) {
    h.d.consts[R(2, 0)] = bits_of(x);
    REQUIRE(
        h.run(cat({mov_c(f32, f32, R(3, 0), R(2, 0)), nop(5), cat4(opc, R(2, 0), g(R(3, 0))) | 0,
                   nop(), cat2(add_f, R(2, 0), g(R(2, 0)), flut(0)) | SS},
                  store_tail(R(2, 0)))));
    INFO(h.findings_text());
    CHECK(h.findings.empty());
    return f32_of(h.at<uint32_t>(0x8000)[3]);
  };
  CHECK(sfu(rcp, 4.0f) == 0.25f);
  CHECK(sfu(rsq, 16.0f) == 0.25f);
  CHECK(sfu(log2_, 8.0f) == 3.0f);
  CHECK(sfu(exp2_, -2.0f) == 0.25f);
  CHECK(sfu(sqrt_, 2.25f) == 1.5f);
  CHECK(sfu(sin_, 0.5f) == float(std::sin(0.5)));
  CHECK(sfu(cos_, 0.5f) == float(std::cos(0.5)));
  CHECK(std::isinf(sfu(rcp, 0.0f)));
  CHECK(sfu(rcp, 1e-40f) == INFINITY);  // the denormal input is flushed to zero
}

TEST_CASE(
    "ir3 emulator: ldg/stg (vec4, .a forms), shared memory across waves with bar, private memory") {
  harness h;
  for (int k = 0; k < 256; k++) h.at<float>(0x1000)[k] = float(k);
  h.addr(R(0, 0) + 4 * 4, 0x1000);  // c4.xy: input
  h.d.constlen_vec4 = 16;
  // Each fiber loads in[4*lid .. +3] with one vec4 ldg.a, sums them and stores the sum.
  REQUIRE(h.run(cat(
      {mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)),
       cat2(shl_b, R(2, 2), g(R(0, 0)), imm(2)), nop(5), ldg_a(f32, R(3, 0), R(2, 0), R(2, 2), 4),
       cat2(add_f, R(4, 0), g(R(3, 0)), g(R(3, 1))) | SY,
       cat2(add_f, R(4, 1), g(R(3, 2)), g(R(3, 3))), nop(2),
       cat2(add_f, R(4, 0), g(R(4, 0)), g(R(4, 1)))},
      store_tail(R(4, 0)))));
  INFO(h.findings_text());
  CHECK(h.findings.empty());
  for (int l = 0; l < 64; l++) CHECK(h.at<float>(0x8000)[l] == float(16 * l + 6));
  CHECK(h.counts.global_load_bytes == 64 * 16);
  CHECK(h.counts.global_store_bytes == 64 * 4);
  // ldg with an immediate byte offset: element 2 of the input.
  REQUIRE(h.run(cat({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(5),
                     ldg(f32, R(3, 0), R(2, 0), 8, 1), mov_g(f32, f32, R(4, 0), R(3, 0)) | SY},
                    store_tail(R(4, 0)))));
  CHECK(h.at<float>(0x8000)[9] == 2.0f);
  // Two waves of 64: every fiber stores lid to shared[lid], bar, then reads shared[127 - lid].
  h.d.local[0] = 128;
  h.d.shared_bytes = 512;
  REQUIRE(
      h.run(cat({cat2(shl_b, R(2, 0), g(R(0, 0)), imm(2)), nop(5), stl(u32, R(2, 0), 0, R(0, 0), 1),
                 bar(), cat2(sub_u, R(2, 1), imm(127), g(R(0, 0))) | SS | SY, nop(2),
                 cat2(shl_b, R(2, 1), g(R(2, 1)), imm(2)), nop(5), ldl(u32, R(3, 0), R(2, 1), 0, 1),
                 mov_g(u32, u32, R(4, 0), R(3, 0)) | SS},
                store_tail(R(4, 0)))));
  INFO(h.findings_text());
  CHECK(h.findings.empty());
  for (int l = 0; l < 128; l++) CHECK(h.at<uint32_t>(0x8000)[l] == uint32_t(127 - l));
  CHECK(h.counts.waves == 2);
  CHECK(h.counts.barriers == 2);
  CHECK(h.counts.shared_store_bytes == 128 * 4);
  CHECK(h.counts.shared_load_bytes == 128 * 4);
  // Private memory is per fiber: store lid at p[8], load it back.
  h.d.local[0] = 64;
  h.d.private_bytes = 16;
  REQUIRE(h.run(cat({mov_i(u32, u32, R(2, 0), 0), nop(5), stp(u32, R(2, 0), 8, R(0, 0), 1),
                     ldp(u32, R(3, 0), R(2, 0), 8, 1), mov_g(u32, u32, R(4, 0), R(3, 0)) | SY},
                    store_tail(R(4, 0)))));
  for (int l = 0; l < 64; l++) CHECK(h.at<uint32_t>(0x8000)[l] == uint32_t(l));
  // A local address wraps in 32 bits (ir3 folds constants out of addresses whose register part
  // is then negative: nir_opt_offsets' allow_offset_wrap): l[r2.x+960] with r2.x = 4 * lid - 960
  // is shared[lid].
  h.d.shared_bytes = 256;
  REQUIRE(h.run(
      cat({cat2(shl_b, R(2, 0), g(R(0, 0)), imm(2)), nop(5),
           cat2(add_u, R(2, 0), g(R(2, 0)), imm(-960)), nop(5), stl(u32, R(2, 0), 960, R(0, 0), 1),
           ldl(u32, R(3, 0), R(2, 0), 960, 1), mov_g(u32, u32, R(4, 0), R(3, 0)) | SS},
          store_tail(R(4, 0)))));
  INFO(h.findings_text());
  for (int l = 0; l < 64; l++) CHECK(h.at<uint32_t>(0x8000)[l] == uint32_t(l));
  CHECK(h.counts.shared_store_bytes == 64 * 4);
}

TEST_CASE("ir3 emulator: wave128 and several workgroups: local and workgroup ids") {
  harness h;
  h.d.wave128 = true;
  h.d.local[0] = 256;
  h.d.groups[0] = 3;
  // r2.x = wgid * 256 + lid; store at out[r2.x]: r1 address + r2.x * 4
  REQUIRE(h.run({cat2(shl_b, R(2, 0), g(R(48, 0)), imm(8)), nop(2),
                 cat2(add_u, R(2, 0), g(R(2, 0)), g(R(0, 0))), mov_c(u32, u32, R(1, 0), 0),
                 mov_c(u32, u32, R(1, 1), 1), nop(5), stg_a(R(1, 0), R(2, 0), R(2, 0)), end()}));
  INFO(h.err);
  for (int k = 0; k < 768; k++) CHECK(h.at<uint32_t>(0x8000)[k] == uint32_t(k));
  CHECK(h.counts.waves == 6);
  CHECK(h.counts.workgroups == 3);
  // Host threads share the workgroups: the same results and counts.
  const ir3_counts one = h.counts;
  std::fill(h.mem.begin() + 0x8000, h.mem.begin() + 0x9000, 0);
  h.d.threads = 3;
  REQUIRE(h.run({cat2(shl_b, R(2, 0), g(R(48, 0)), imm(8)), nop(2),
                 cat2(add_u, R(2, 0), g(R(2, 0)), g(R(0, 0))), mov_c(u32, u32, R(1, 0), 0),
                 mov_c(u32, u32, R(1, 1), 1), nop(5), stg_a(R(1, 0), R(2, 0), R(2, 0)), end()}));
  for (int k = 0; k < 768; k++) CHECK(h.at<uint32_t>(0x8000)[k] == uint32_t(k));
  CHECK(h.counts.instructions == one.instructions);
  CHECK(h.counts.waves == one.waves);
  CHECK(h.counts.global_store_bytes == one.global_store_bytes);
  // A fault in workgroups 1 and 2 (address past the region): the error names workgroup 1 whatever
  // thread ran it.
  h.d.consts[0] = uint32_t(harness::base + 0xfc00);
  for (int t : {1, 3}) {
    h.d.threads = unsigned(t);
    CHECK_FALSE(
        h.run({cat2(shl_b, R(2, 0), g(R(48, 0)), imm(8)), nop(2),
               cat2(add_u, R(2, 0), g(R(2, 0)), g(R(0, 0))), mov_c(u32, u32, R(1, 0), 0),
               mov_c(u32, u32, R(1, 1), 1), nop(5), stg_a(R(1, 0), R(2, 0), R(2, 0)), end()}));
    CHECK(h.err.find("of workgroup (1,0,0)") != std::string::npos);
  }
}

TEST_CASE("ir3 emulator: faults and unmodelled instructions are errors naming the instruction") {
  harness h;
  h.addr(R(4, 0), 0x20000);  // past the 64 KiB region
  CHECK_FALSE(h.run({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(5),
                     ldg(u32, R(3, 0), R(2, 0), 0, 4), end()}));
  CHECK(h.err.find("kernel test: instruction 3 (ldg.u32 r3.x, g[r2.x], 4)") != std::string::npos);
  CHECK(h.err.find("memory fault") != std::string::npos);
  CHECK(h.err.find("0x100020000") != std::string::npos);
  h.d.shared_bytes = 64;
  CHECK_FALSE(h.run({stl(u32, R(0, 0), 0, R(0, 0), 1), end()}));
  CHECK(h.err.find("shared memory store of 4 bytes at 61 (fiber 61) is past the 64 bytes") !=
        std::string::npos);
  h.d.full_regs = 2;
  CHECK_FALSE(h.run({mov_i(u32, u32, R(3, 0), 1), end()}));
  CHECK(h.err.find("r3.x is past the register footprint") != std::string::npos);
  h.d.full_regs = 16;
  CHECK_FALSE(h.run({mov_c(u32, u32, R(3, 0), R(20, 0)), end()}));
  CHECK(h.err.find("c20.x is past the constants loaded") != std::string::npos);
  CHECK_FALSE(h.run({cat2(57, R(0, 0), g(R(0, 0)), g(R(0, 0))), end()}));  // bary.f
  CHECK(h.err.find("bary.f") != std::string::npos);
  CHECK(h.err.find("not modelled") != std::string::npos);
  CHECK_FALSE(h.run({mov_i(u32, u32, R(2, 0), 1)}));
  CHECK(h.err.find("without `end`") != std::string::npos);
  h.d.max_wave_instructions = 1000;
  CHECK_FALSE(h.run({jump(0)}));
  CHECK(h.err.find("without reaching `end`") != std::string::npos);
}

TEST_CASE("ir3 emulator: isam and stib.b on RGBA float32 and float16 linear images, 0 outside") {
  for (const uint32_t fmt : {ir3_fmt6_32_32_32_32_float, ir3_fmt6_16_16_16_16_float}) {
    for (const int type : {f32, f16}) {
      INFO("format " << fmt << ", register type " << type);
      harness h;
      const int tb = fmt == ir3_fmt6_32_32_32_32_float ? 16 : 8;
      auto texel = [&](uint64_t at, int ch) -> float {
        return tb == 16 ? h.at<float>(at)[ch] : half_value(h.at<uint16_t>(at)[ch]);
      };
      // An 8x4 input image (pitch 256) holding (x, y, x + y, 1) per texel; an 8x8 output image.
      for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++)
          for (int ch = 0; ch < 4; ch++) {
            const float v = ch == 0 ? x : ch == 1 ? y : ch == 2 ? x + y : 1;
            if (tb == 16)
              h.at<float>(0x1000 + y * 256 + x * 16)[ch] = v;
            else
              h.at<uint16_t>(0x1000 + y * 256 + x * 8)[ch] = half_bits(v);
          }
      h.d.textures.push_back(ir3_image_rgba(fmt, 8, 4, 256, harness::base + 0x1000));
      h.d.ibos.push_back(ir3_image_rgba(fmt, 8, 8, 256, harness::base + 0x4000));
      // Fiber (x = lid & 7, y = lid >> 3) reads texel (x, y) (rows 4-7 are outside: 0) and
      // stores it to the output at (x, y).
      REQUIRE(h.run(
          {cat2(and_b, R(2, 0), g(R(0, 0)), imm(7)), cat2(shr_b, R(2, 1), g(R(0, 0)), imm(3)),
           nop(5), isam(type, R(3, 0), R(2, 0), 0), stib(type, R(3, 0), R(2, 0), 0) | SY, end()}));
      INFO(h.findings_text());
      CHECK(h.findings.empty());
      for (int y = 0; y < 8; y++)
        for (int x = 0; x < 8; x++) {
          const uint64_t at = 0x4000 + y * 256 + x * tb;
          const bool in = y < 4;
          CHECK(texel(at, 0) == (in ? x : 0));
          CHECK(texel(at, 1) == (in ? y : 0));
          CHECK(texel(at, 2) == (in ? x + y : 0));
          CHECK(texel(at, 3) == (in ? 1 : 0));
        }
      CHECK(h.counts.texels == 64);
      CHECK(h.counts.texture_bytes == uint64_t(32 * tb));  // rows 4-7 are outside
      CHECK(h.counts.image_stores == 64);
    }
  }
}

// isaml, what ir3 makes of NIR's txf (the tiled products' weights read as images, issue 28): at
// level 0 it reads as isam does, 0 outside; another level is refused by name.
TEST_CASE("ir3 emulator: isaml at level 0 reads texels, 0 outside; another level is refused") {
  CHECK(text(isaml(f32, R(3, 0), R(2, 0), R(4, 0), 0)).find("isaml") != std::string::npos);
  for (const uint32_t level : {0u, 1u}) {
    INFO("level " << level);
    harness h;
    // A 4x2 float16 input image (pitch 64) holding (x, y, 7, 1); an 8x8 float32 output image.
    for (int y = 0; y < 2; y++)
      for (int x = 0; x < 4; x++)
        for (int ch = 0; ch < 4; ch++)
          h.at<uint16_t>(0x1000 + y * 64 + x * 8)[ch] = half_bits(ch == 0   ? float(x)
                                                                  : ch == 1 ? float(y)
                                                                  : ch == 2 ? 7.0f
                                                                            : 1.0f);
    h.d.textures.push_back(
        ir3_image_rgba(ir3_fmt6_16_16_16_16_float, 4, 2, 64, harness::base + 0x1000));
    h.d.ibos.push_back(
        ir3_image_rgba(ir3_fmt6_32_32_32_32_float, 8, 8, 256, harness::base + 0x4000));
    const bool ran =
        h.run({cat2(and_b, R(2, 0), g(R(0, 0)), imm(7)), cat2(shr_b, R(2, 1), g(R(0, 0)), imm(3)),
               mov_i(u32, u32, R(4, 0), level), nop(5), isaml(f32, R(3, 0), R(2, 0), R(4, 0), 0),
               stib(f32, R(3, 0), R(2, 0), 0) | SY, end()});
    if (level) {
      CHECK_FALSE(ran);
      CHECK(h.err.find("isaml of level 1") != std::string::npos);
      continue;
    }
    REQUIRE(ran);
    INFO(h.findings_text());
    CHECK(h.findings.empty());
    for (int y = 0; y < 8; y++)
      for (int x = 0; x < 8; x++) {
        const float *t = h.at<float>(0x4000 + y * 256 + x * 16);
        const bool in = x < 4 && y < 2;
        CHECK(t[0] == (in ? x : 0));
        CHECK(t[1] == (in ? y : 0));
        CHECK(t[2] == (in ? 7 : 0));
        CHECK(t[3] == (in ? 1 : 0));
      }
    CHECK(h.counts.texels == 64);
    CHECK(h.counts.texture_bytes == 8 * 8);  // the 8 texels inside, 8 bytes each
  }
}

// Each rule of the hazard checker, planted in a program that is otherwise correct, and named.
TEST_CASE("ir3 hazards: each planted hazard is named; the legal programs have none") {
  harness h;
  h.addr(R(4, 0), 0x1000);
  auto run = [&](const std::vector<uint64_t> &p) {
    REQUIRE(h.run(cat(p, {end()})));
    return h.findings_text();
  };
  using k = ir3_hazard_kind;
  // ALU -> ALU needs 3 slots: 2 nops are one short.
  run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)), nop(1), cat2(add_u, R(2, 1), g(R(2, 0)), imm(1))});
  CHECK(h.has(k::too_close, 2));
  CHECK(h.findings.at(0).missing == 1);
  run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)), nop(2), cat2(add_u, R(2, 1), g(R(2, 0)), imm(1))});
  CHECK(h.findings.empty());
  // (nopN) on the producer counts like nops; mad reads its third source 2 slots late.
  run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)) | R1 | R2,
       cat2(add_u, R(2, 1), g(R(2, 0)), imm(1))});
  CHECK(h.findings.empty());
  run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)),
       cat3(mad_u24, R(2, 1), g3(R(0, 0)), R(0, 0), g3(R(2, 0)))});
  CHECK(h.has(k::too_close, 1));
  run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)), nop(0),
       cat3(mad_u24, R(2, 1), g3(R(0, 0)), R(0, 0), g3(R(2, 0)))});
  CHECK(h.findings.empty());
  // A half read of a full ALU result needs 6 slots (merged registers), as does a non-ALU reader.
  run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)), nop(2),
       cat2(add_u, R(3, 0), g(R(4, 0)), imm(1), false)});
  CHECK(h.has(k::too_close, 2));
  run({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(2),
       ldg(u32, R(3, 0), R(2, 0), 0, 1), mov_g(u32, u32, R(3, 1), R(3, 0)) | SY});
  CHECK(h.has(k::too_close, 3));
  // swz takes 2 issue slots (its second move); a non-ALU read of its first destination is ready
  // 6 slots after it.
  run({swz(u32, R(2, 0), R(2, 1), R(2, 1), R(2, 0)), nop(4), mov_c(u32, u32, R(2, 1), R(4, 1)) | 0,
       cat4(rcp, R(3, 0), g(R(2, 0)))});
  CHECK(h.findings.empty());
  run({swz(u32, R(2, 0), R(2, 1), R(2, 1), R(2, 0)), nop(3), cat4(rcp, R(3, 0), g(R(2, 0)))});
  CHECK(h.has(k::too_close, 2));
  // A p0 write needs 6 slots before a branch reads it.
  run({cat2(cmps_u, P0X, g(R(0, 0)), imm(1), true, lt), nop(3), br(1), nop()});
  CHECK(h.has(k::too_close, 2));
  // An SFU result read without (ss), a load result without (sy).
  run({cat4(rcp, R(2, 0), g(R(0, 0))), nop(5), cat2(add_f, R(2, 1), g(R(2, 0)), flut(2))});
  CHECK(h.has(k::missing_ss, 2));
  run({cat4(rcp, R(2, 0), g(R(0, 0))), nop(5), cat2(add_f, R(2, 1), g(R(2, 0)), flut(2)) | SS});
  CHECK(h.findings.empty());
  run({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(5),
       ldg(u32, R(3, 0), R(2, 0), 0, 1), mov_g(u32, u32, R(3, 1), R(3, 0))});
  CHECK(h.has(k::missing_sy, 4));
  h.d.shared_bytes = 256;
  run({cat2(shl_b, R(2, 0), g(R(0, 0)), imm(2)), nop(5), ldl(u32, R(3, 0), R(2, 0), 0, 1),
       mov_g(u32, u32, R(3, 1), R(3, 0)) | SY});
  CHECK(h.has(k::missing_ss, 3));
  // Overwriting a source of an in-flight load (its address) before (sy)/(ss); its destination.
  run({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(5),
       ldg(u32, R(3, 0), R(2, 0), 0, 1), mov_i(u32, u32, R(2, 0), 0)});
  CHECK(h.has(k::war, 4));
  run({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(5),
       ldg(u32, R(3, 0), R(2, 0), 0, 1), mov_i(u32, u32, R(2, 0), 0) | SY});
  CHECK(h.findings.empty());
  run({mov_c(u32, u32, R(2, 0), R(4, 0)), mov_c(u32, u32, R(2, 1), R(4, 1)), nop(5),
       ldg(u32, R(3, 0), R(2, 0), 0, 1), mov_i(u32, u32, R(3, 0), 0)});
  CHECK(h.has(k::waw, 4));
  // After a barrier, the first instruction but nops carries (ss)(sy).
  h.d.local[0] = 64;
  run({bar(), nop(1), cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)) | SS});
  CHECK(h.has(k::barrier_sync, 2));
  run({bar(), nop(1) | SS, cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)) | SY});
  CHECK(h.findings.empty());
  // An isam of an image stored to earlier in the dispatch sees stale data (texture cache).
  h.d.textures = {ir3_image_rgba(ir3_fmt6_32_32_32_32_float, 8, 8, 128, harness::base + 0x2000)};
  h.d.ibos = {ir3_image_rgba(ir3_fmt6_32_32_32_32_float, 8, 8, 128, harness::base + 0x2000)};
  run({cat2(and_b, R(2, 0), g(R(0, 0)), imm(7)), cat2(shr_b, R(2, 1), g(R(0, 0)), imm(3)), nop(5),
       stib(f32, R(0, 0), R(2, 0), 0), isam(f32, R(3, 0), R(2, 0), 0)});
  CHECK(h.has(k::image_stale, 4));
  // A texture result read without (sy).
  run({cat2(and_b, R(2, 0), g(R(0, 0)), imm(7)), cat2(shr_b, R(2, 1), g(R(0, 0)), imm(3)), nop(5),
       isam(f32, R(3, 0), R(2, 0), 0), mov_g(u32, u32, R(4, 0), R(3, 1))});
  CHECK(h.has(k::missing_sy, 4));
  for (const ir3_finding &f : h.findings)
    if (f.kind == k::image_stale) CHECK(f.text.find("isam of t#0") != std::string::npos);
}

TEST_CASE("ir3 counters: instructions by class, (rpt) expansion, nops, syncs") {
  harness h;
  REQUIRE(h.run({cat2(add_u, R(2, 0), g(R(0, 0)), imm(1)) | RPT(3), nop(4),
                 cat4(rcp, R(3, 0), g(R(0, 0))) | RPT(1),
                 cat2(add_f, R(4, 0), g(R(3, 0)), g(R(3, 1))) | SS | R1 | R2, end()}));
  CHECK(h.counts.waves == 1);
  CHECK(h.counts.instructions == 5);
  CHECK(h.counts.alu == 2);
  CHECK(h.counts.sfu == 1);
  CHECK(h.counts.flow == 1);  // end
  CHECK(h.counts.nops == 5);  // (rpt4)nop
  CHECK(h.counts.rpt_extra == 4);
  CHECK(h.counts.nop_slots == 3);
  CHECK(h.counts.issue_slots == 4 + 5 + 2 + 4 + 1);
  CHECK(h.counts.ss_waits == 1);
}
