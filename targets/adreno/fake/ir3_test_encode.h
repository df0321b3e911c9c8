// A small ir3 encoder for tests, written from the field layouts of Mesa 25.0.7's
// src/freedreno/isa/ir3-cat*.xml (bit positions in the comments): hand-built words for the
// emulator's unit tests and seeds for the decoder cross-check against Mesa's own decoder.
#pragma once
#include <cstdint>

namespace capgraph::adreno::enc {

constexpr int R(int n, int c) { return n * 4 + c; }  // regid of rN.c (also hrN.c, cN.c)
constexpr uint64_t SS = 1ull << 44, SY = 1ull << 60, JP = 1ull << 59;
constexpr uint64_t RPT(int n) { return uint64_t(n) << 40; }
constexpr uint64_t P0X = R(62, 0), A0X = R(61, 0);

// Cat0 (ir3-cat0.xml): IMMED 0-31, BRTYPE 37-39, REPEAT 40-42, OPC_HI 49, INV1 52, COMP1 53-54,
// OPC 55-58.
constexpr uint64_t nop(int rpt = 0) { return RPT(rpt); }
constexpr uint64_t end() { return 6ull << 55; }
constexpr uint64_t br(int32_t off, int comp = 0, bool inv = false) {
  return uint64_t(uint32_t(off)) | uint64_t(inv) << 52 | uint64_t(comp) << 53 | 1ull << 55;
}
constexpr uint64_t jump(int32_t off) { return uint64_t(uint32_t(off)) | 2ull << 55; }
constexpr uint64_t predt() { return 1ull << 49 | 13ull << 55; }
constexpr uint64_t predf() { return 1ull << 49 | 14ull << 55; }
constexpr uint64_t prede() { return 1ull << 49 | 15ull << 55; }

// #multisrc (ir3-common.xml): 16 bits, the form in bits 11-13, ABSNEG 14-15.
constexpr uint32_t g(int reg, int absneg = 0) { return uint32_t(reg) | uint32_t(absneg) << 14; }
constexpr uint32_t c(int n) { return uint32_t(n) | 2u << 11; }
constexpr uint32_t imm(int v) { return uint32_t(v & 0x7ff) | 4u << 11; }
constexpr uint32_t flut(int i, bool half = false) {
  return uint32_t(i) | uint32_t(half) << 10 | 5u << 11;
}
constexpr uint32_t rel(int off, bool konst = false) {
  return uint32_t(off & 0x3ff) | uint32_t(konst) << 10 | 1u << 11;
}

// Cat2 (ir3-cat2.xml): SRC1 0-15, SRC2 16-31, DST 32-39, SAT 42, SRC1_R 43, DST_CONV 46, COND
// 48-50, SRC2_R 51, FULL 52, OPC 53-58.
constexpr uint64_t SAT = 1ull << 42, R1 = 1ull << 43, R2 = 1ull << 51, CONV = 1ull << 46;
enum op2 {
  add_f = 0,
  min_f = 1,
  max_f = 2,
  mul_f = 3,
  cmps_f = 5,
  absneg_f = 6,
  floor_f = 9,
  rndne_f = 11,
  add_u = 16,
  add_s = 17,
  sub_u = 18,
  cmps_u = 20,
  cmps_s = 21,
  min_s = 23,
  absneg_s = 26,
  and_b = 28,
  or_b = 29,
  not_b = 30,
  xor_b = 31,
  mul_u24 = 48,
  mul_s24 = 49,
  mull_u = 50,
  bfrev_b = 51,
  clz_s = 52,
  clz_b = 53,
  shl_b = 54,
  shr_b = 55,
  ashr_b = 56,
  cbits_b = 61
};
enum cond { lt = 0, le, gt, ge, eq, ne };
constexpr uint64_t cat2(int opc, int dst, uint32_t s1, uint32_t s2 = 0, bool full = true,
                        int cnd = 0) {
  return 2ull << 61 | uint64_t(opc) << 53 | uint64_t(full) << 52 | uint64_t(cnd) << 48 |
         uint64_t(dst) << 32 | uint64_t(s2) << 16 | s1;
}

// Cat3 (ir3-cat3.xml): SRC1 0-12, (alt) 13, SRC1_NEG 14, SRC2_R 15, SRC3 16-28, SRC3_R 29,
// SRC2_NEG 30, SRC3_NEG 31, DST 32-39, SAT/FULL 42, SRC1_R 43, DST_CONV 46, SRC2 47-54, OPC 55-58.
enum op3 {
  madsh_m16 = 3,
  mad_u24 = 4,
  mad_s24 = 5,
  mad_f16 = 6,
  mad_f32 = 7,
  sel_b32 = 9,
  shrm = 8,
  shlg = 11,
  andg = 12
};
constexpr uint32_t g3(int reg) { return uint32_t(reg); }
constexpr uint32_t c3(int n) { return uint32_t(n) | 1u << 12; }
constexpr uint32_t i3(int v) { return uint32_t(v) | 1u << 12; }
constexpr uint64_t NEG1 = 1ull << 14, NEG3 = 1ull << 31;
constexpr uint64_t cat3(int opc, int dst, uint32_t s1, int s2, uint32_t s3, bool alt = false,
                        bool full = true) {
  return 3ull << 61 | uint64_t(opc) << 55 | uint64_t(s2) << 47 | uint64_t(alt && full) << 42 |
         uint64_t(dst) << 32 | uint64_t(s3) << 16 | uint64_t(alt) << 13 | s1;
}

// Cat4: SRC 0-15, DST 32-39, FULL 52, OPC 53-58.
enum op4 { rcp = 0, rsq = 1, log2_ = 2, exp2_ = 3, sin_ = 4, cos_ = 5, sqrt_ = 6 };
constexpr uint64_t cat4(int opc, int dst, uint32_t s, bool full = true) {
  return 4ull << 61 | uint64_t(opc) << 53 | uint64_t(full) << 52 | uint64_t(dst) << 32 | s;
}

// Cat1 mov (ir3-cat1.xml): SRC 0-31, DST 32-39, SRC_R 43, DST_TYPE 46-48, DST_REL 49, SRC_TYPE
// 50-52, form 53-54 (00 gpr / relative, 01 const, 10 immediate), ROUND 55-56.
enum ty { f16 = 0, f32 = 1, u16 = 2, u32 = 3, s16 = 4, s32 = 5, u8 = 6 };
constexpr uint64_t mov_g(int st, int dt, int dst, int src, int round = 0) {
  return 1ull << 61 | uint64_t(round) << 55 | uint64_t(st) << 50 | uint64_t(dt) << 46 |
         uint64_t(dst) << 32 | uint64_t(src);
}
constexpr uint64_t mov_c(int st, int dt, int dst, int cn) {
  return mov_g(st, dt, dst, 0) | 1ull << 53 | uint64_t(cn);
}
constexpr uint64_t mov_i(int st, int dt, int dst, uint32_t v) {
  return mov_g(st, dt, dst, 0) | 2ull << 53 | v;
}
constexpr uint64_t mov_rel(int st, int dt, int dst, int off, bool konst = false) {
  return mov_g(st, dt, dst, 0) | uint64_t(off & 0x3ff) | uint64_t(konst) << 10 | 1ull << 11;
}
// swz (ir3-cat1.xml, multi-mov): SRC0 0-7, SRC1 8-15, DST1 16-23, DST0 32-39, OPC 57-58 = 10.
constexpr uint64_t swz(int t, int d0, int d1, int s0, int s1) {
  return 1ull << 61 | 2ull << 57 | uint64_t(t) << 50 | uint64_t(t) << 46 | uint64_t(d0) << 32 |
         uint64_t(d1) << 16 | uint64_t(s1) << 8 | uint64_t(s0);
}
constexpr uint64_t mov_to_rel(int st, int dt, int off, int src) {
  return mov_g(st, dt, 0, src) | 1ull << 49 | uint64_t(off & 0xff) << 32;
}

// Cat6 (ir3-cat6.xml): TYPE 49-51, OPC 54-58 (a3xx forms).
constexpr uint64_t ldg(int type, int dst, int addr, int off, int size) {
  return 6ull << 61 | uint64_t(type) << 49 | uint64_t(dst) << 32 | uint64_t(size) << 24 |
         1ull << 23 | uint64_t(addr) << 14 | uint64_t(off & 0x1fff) << 1 | 1;
}
constexpr uint64_t ldg_a(int type, int dst, int addr, int idx, int size, int shift = 0) {
  return 6ull << 61 | uint64_t(type) << 49 | uint64_t(dst) << 32 | uint64_t(size) << 24 |
         1ull << 23 | 1ull << 22 | uint64_t(addr) << 14 | uint64_t(shift) << 12 |
         uint64_t(idx) << 1 | 1;
}
constexpr uint64_t stg(int type, int addr, int off, int val, int size) {
  return 6ull << 61 | 3ull << 54 | uint64_t(type) << 49 | uint64_t(addr) << 41 |
         uint64_t(off & 0xff) << 32 | uint64_t(size) << 24 | 1ull << 23 |
         uint64_t((off >> 8) & 0x1f) << 9 | uint64_t(val) << 1;
}
constexpr uint64_t ld_local(int opc, int type, int dst, int addr, int off, int size) {
  return 6ull << 61 | uint64_t(opc) << 54 | uint64_t(type) << 49 | uint64_t(dst) << 32 |
         uint64_t(size) << 24 | 1ull << 23 | uint64_t(addr) << 14 | uint64_t(off & 0x1fff) << 1 | 1;
}
constexpr uint64_t st_local(int opc, int type, int addr, int off, int val, int size) {
  return 6ull << 61 | uint64_t(opc) << 54 | uint64_t(type) << 49 | uint64_t(addr) << 41 |
         1ull << 40 | uint64_t(off & 0xff) << 32 | uint64_t(size) << 24 | 1ull << 23 |
         uint64_t((off >> 8) & 0x1f) << 9 | uint64_t(val) << 1;
}
constexpr uint64_t ldl(int t, int d, int a, int off, int n) { return ld_local(1, t, d, a, off, n); }
constexpr uint64_t ldp(int t, int d, int a, int off, int n) { return ld_local(2, t, d, a, off, n); }
constexpr uint64_t stl(int t, int a, int off, int v, int n) { return st_local(4, t, a, off, v, n); }
constexpr uint64_t stp(int t, int a, int off, int v, int n) { return st_local(5, t, a, off, v, n); }
// stib.b (a6xx form): typed 2D, TYPE_SIZE 4, immediate IBO slot; coordinates 24-31, value 32-39.
constexpr uint64_t stib(int type, int val, int coords, int slot) {
  return 6ull << 61 | 1ull << 53 | uint64_t(type) << 49 | uint64_t(slot) << 41 |
         uint64_t(val) << 32 | uint64_t(coords) << 24 | 6ull << 20 | 0x1dull << 14 | 3ull << 12 |
         1ull << 11 | 1ull << 9;
}
// isam (ir3-cat5.xml): FULL 0, SRC1 1-8, bit 18 set (no .1d), TEX 25-31, DST 32-39, WRMASK
// 40-43, TYPE 44-46.
constexpr uint64_t isam(int type, int dst, int coords, int tex, int wrmask = 15) {
  return 5ull << 61 | uint64_t(type) << 44 | uint64_t(wrmask) << 40 | uint64_t(dst) << 32 |
         uint64_t(tex) << 25 | 1ull << 18 | uint64_t(coords) << 1 | 1;
}
// isaml (ir3-cat5.xml, OPC 1): as isam but bit 18 clear, the level of detail in SRC2 (9-16).
constexpr uint64_t isaml(int type, int dst, int coords, int lod, int tex, int wrmask = 15) {
  return 5ull << 61 | 1ull << 54 | uint64_t(type) << 44 | uint64_t(wrmask) << 40 |
         uint64_t(dst) << 32 | uint64_t(tex) << 25 | uint64_t(lod) << 9 | uint64_t(coords) << 1 | 1;
}
constexpr uint64_t bar() { return 7ull << 61 | 1ull << 54 | 1ull << 49; }
constexpr uint64_t getfiberid(int dst) {
  return 6ull << 61 | 1ull << 53 | uint64_t(u32) << 49 | uint64_t(dst) << 32 | 3ull << 22 |
         0x26ull << 14;
}

}  // namespace capgraph::adreno::enc
