// ir3 (Adreno a6xx) instruction decoding: 64-bit machine words -> ir3_instr, and a text rendering
// in the form of Mesa's disassembler (for error messages and to cross-check against Mesa's own
// disassembly). Every encoding Mesa 25.0.7's isaspec description defines for an a6xx (gen 600-699)
// decodes, with the fixed bits each encoding requires checked; any other word is an error naming
// the word, its index and the kernel, never a silent skip.
//
// Sources: Mesa 25.0.7 src/freedreno/isa/ir3.xml, ir3-common.xml (register, const, immediate and
// relative source forms, the (nopN) encoding), ir3-cat0.xml .. ir3-cat7.xml (one bitset per
// instruction; fixed patterns are read most significant bit first), src/compiler/isaspec
// (field display rules: TYPE_BRANCH is relative to the instruction, TYPE_OFFSET prints "%+d").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::adreno {

// Every a6xx instruction: (enum name, Mesa's mnemonic, category). The mnemonic is the isaspec
// bitset name; mov covers mov/cov/mova/mova1 (one encoding, displayed by its types).
// clang-format off
#define IR3_OPS(X) \
  X(nop, "nop", 0) X(end, "end", 0) X(ret, "ret", 0) X(emit, "emit", 0) X(cut, "cut", 0) \
  X(chmask, "chmask", 0) X(chsh, "chsh", 0) X(flow_rev, "flow_rev", 0) X(shpe, "shpe", 0) \
  X(predt, "predt", 0) X(predf, "predf", 0) X(prede, "prede", 0) X(kill, "kill", 0) \
  X(jump, "jump", 0) X(call, "call", 0) X(bkt, "bkt", 0) X(getlast, "getlast", 0) \
  X(getone, "getone", 0) X(shps, "shps", 0) X(brac, "brac", 0) X(brax, "brax", 0) X(br, "br", 0) \
  X(bany, "bany", 0) X(ball, "ball", 0) X(brao, "brao", 0) X(braa, "braa", 0) X(mov, "mov", 1) \
  X(swz, "swz", 1) X(gat, "gat", 1) X(sct, "sct", 1) X(movmsk, "movmsk", 1) \
  X(bary_f, "bary.f", 2) X(flat_b, "flat.b", 2) X(add_f, "add.f", 2) X(min_f, "min.f", 2) \
  X(max_f, "max.f", 2) X(mul_f, "mul.f", 2) X(sign_f, "sign.f", 2) X(cmps_f, "cmps.f", 2) \
  X(absneg_f, "absneg.f", 2) X(cmpv_f, "cmpv.f", 2) X(floor_f, "floor.f", 2) \
  X(ceil_f, "ceil.f", 2) X(rndne_f, "rndne.f", 2) X(rndaz_f, "rndaz.f", 2) \
  X(trunc_f, "trunc.f", 2) X(add_u, "add.u", 2) X(add_s, "add.s", 2) X(sub_u, "sub.u", 2) \
  X(sub_s, "sub.s", 2) X(cmps_u, "cmps.u", 2) X(cmps_s, "cmps.s", 2) X(min_u, "min.u", 2) \
  X(min_s, "min.s", 2) X(max_u, "max.u", 2) X(max_s, "max.s", 2) X(absneg_s, "absneg.s", 2) \
  X(and_b, "and.b", 2) X(or_b, "or.b", 2) X(not_b, "not.b", 2) X(xor_b, "xor.b", 2) \
  X(cmpv_u, "cmpv.u", 2) X(cmpv_s, "cmpv.s", 2) X(mul_u24, "mul.u24", 2) \
  X(mul_s24, "mul.s24", 2) X(mull_u, "mull.u", 2) X(bfrev_b, "bfrev.b", 2) X(clz_s, "clz.s", 2) \
  X(clz_b, "clz.b", 2) X(shl_b, "shl.b", 2) X(shr_b, "shr.b", 2) X(ashr_b, "ashr.b", 2) \
  X(mgen_b, "mgen.b", 2) X(getbit_b, "getbit.b", 2) X(setrm, "setrm", 2) \
  X(cbits_b, "cbits.b", 2) X(shb, "shb", 2) X(msad, "msad", 2) X(mad_u16, "mad.u16", 3) \
  X(madsh_u16, "madsh.u16", 3) X(mad_s16, "mad.s16", 3) X(madsh_m16, "madsh.m16", 3) \
  X(mad_u24, "mad.u24", 3) X(mad_s24, "mad.s24", 3) X(mad_f16, "mad.f16", 3) \
  X(mad_f32, "mad.f32", 3) X(sel_b16, "sel.b16", 3) X(sel_b32, "sel.b32", 3) \
  X(sel_s16, "sel.s16", 3) X(sel_s32, "sel.s32", 3) X(sel_f16, "sel.f16", 3) \
  X(sel_f32, "sel.f32", 3) X(sad_s16, "sad.s16", 3) X(sad_s32, "sad.s32", 3) X(shrm, "shrm", 3) \
  X(shlm, "shlm", 3) X(shrg, "shrg", 3) X(shlg, "shlg", 3) X(andg, "andg", 3) \
  X(dp2acc, "dp2acc", 3) X(dp4acc, "dp4acc", 3) X(wmm, "wmm", 3) X(wmm_accu, "wmm.accu", 3) \
  X(rcp, "rcp", 4) X(rsq, "rsq", 4) X(log2, "log2", 4) X(exp2, "exp2", 4) X(sin, "sin", 4) \
  X(cos, "cos", 4) X(sqrt, "sqrt", 4) X(hrsq, "hrsq", 4) X(hlog2, "hlog2", 4) \
  X(hexp2, "hexp2", 4) X(isam, "isam", 5) X(isaml, "isaml", 5) X(isamm, "isamm", 5) \
  X(sam, "sam", 5) X(samb, "samb", 5) X(saml, "saml", 5) X(samgq, "samgq", 5) \
  X(getlod, "getlod", 5) X(conv, "conv", 5) X(convm, "convm", 5) X(getsize, "getsize", 5) \
  X(getbuf, "getbuf", 5) X(getpos, "getpos", 5) X(getinfo, "getinfo", 5) X(dsx, "dsx", 5) \
  X(dsy, "dsy", 5) X(gather4r, "gather4r", 5) X(gather4g, "gather4g", 5) \
  X(gather4b, "gather4b", 5) X(gather4a, "gather4a", 5) X(samgp0, "samgp0", 5) \
  X(samgp1, "samgp1", 5) X(samgp2, "samgp2", 5) X(samgp3, "samgp3", 5) X(dsxpp_1, "dsxpp.1", 5) \
  X(dsypp_1, "dsypp.1", 5) X(rgetpos, "rgetpos", 5) X(rgetinfo, "rgetinfo", 5) \
  X(tcinv, "tcinv", 5) X(brcst_active, "brcst.active", 5) \
  X(quad_shuffle_brcst, "quad_shuffle.brcst", 5) X(quad_shuffle_horiz, "quad_shuffle.horiz", 5) \
  X(quad_shuffle_vert, "quad_shuffle.vert", 5) X(quad_shuffle_diag, "quad_shuffle.diag", 5) \
  X(ldg, "ldg", 6) X(ldg_a, "ldg.a", 6) X(ldg_k, "ldg.k", 6) X(stg, "stg", 6) \
  X(stg_a, "stg.a", 6) X(ldl, "ldl", 6) X(ldp, "ldp", 6) X(ldlw, "ldlw", 6) X(ldlv, "ldlv", 6) \
  X(stl, "stl", 6) X(stp, "stp", 6) X(stlw, "stlw", 6) X(stc, "stc", 6) X(resinfo, "resinfo", 6) \
  X(atomic_add, "atomic.add", 6) X(atomic_sub, "atomic.sub", 6) X(atomic_xchg, "atomic.xchg", 6) \
  X(atomic_inc, "atomic.inc", 6) X(atomic_dec, "atomic.dec", 6) \
  X(atomic_cmpxchg, "atomic.cmpxchg", 6) X(atomic_min, "atomic.min", 6) \
  X(atomic_max, "atomic.max", 6) X(atomic_and, "atomic.and", 6) X(atomic_or, "atomic.or", 6) \
  X(atomic_xor, "atomic.xor", 6) X(atomic_g_add, "atomic.g.add", 6) \
  X(atomic_g_sub, "atomic.g.sub", 6) X(atomic_g_xchg, "atomic.g.xchg", 6) \
  X(atomic_g_inc, "atomic.g.inc", 6) X(atomic_g_dec, "atomic.g.dec", 6) \
  X(atomic_g_cmpxchg, "atomic.g.cmpxchg", 6) X(atomic_g_min, "atomic.g.min", 6) \
  X(atomic_g_max, "atomic.g.max", 6) X(atomic_g_and, "atomic.g.and", 6) \
  X(atomic_g_or, "atomic.g.or", 6) X(atomic_g_xor, "atomic.g.xor", 6) X(ldc, "ldc", 6) \
  X(ldc_k, "ldc.k", 6) X(getspid, "getspid", 6) X(getwid, "getwid", 6) \
  X(getfiberid, "getfiberid", 6) X(resinfo_b, "resinfo.b", 6) X(resbase, "resbase", 6) \
  X(stib_b, "stib.b", 6) X(ldib_b, "ldib.b", 6) X(atomic_b_add, "atomic.b.add", 6) \
  X(atomic_b_sub, "atomic.b.sub", 6) X(atomic_b_xchg, "atomic.b.xchg", 6) \
  X(atomic_b_cmpxchg, "atomic.b.cmpxchg", 6) X(atomic_b_min, "atomic.b.min", 6) \
  X(atomic_b_max, "atomic.b.max", 6) X(atomic_b_and, "atomic.b.and", 6) \
  X(atomic_b_or, "atomic.b.or", 6) X(atomic_b_xor, "atomic.b.xor", 6) X(shfl, "shfl", 6) \
  X(bar, "bar", 7) X(fence, "fence", 7) X(sleep, "sleep", 7) X(icinv, "icinv", 7) \
  X(dccln, "dccln", 7) X(dcinv, "dcinv", 7) X(dcflu, "dcflu", 7)
// clang-format on

enum class ir3_op : uint8_t {
#define X(e, name, cat) e,
  IR3_OPS(X)
#undef X
      count
};
const char *ir3_op_name(ir3_op op);
int ir3_op_category(ir3_op op);

// Element types (ir3-common.xml #type): cat1 src/dst types, cat5 and cat6 TYPE.
enum ir3_type : uint8_t {
  ir3_f16 = 0,
  ir3_f32 = 1,
  ir3_u16 = 2,
  ir3_u32 = 3,
  ir3_s16 = 4,
  ir3_s32 = 5,
  ir3_u8 = 6,
  ir3_u8_32 = 7
};
const char *ir3_type_name(uint8_t t);
// 16-bit register types (ir3-common.xml #type-half; cat1 also counts type 7, its "s8").
inline bool ir3_type_half(uint8_t t) {
  return t == ir3_f16 || t == ir3_u16 || t == ir3_s16 || t == ir3_u8;
}

// Register ids as ir3 numbers them: register * 4 + component. r0.x-r47.w are per-fiber registers,
// r48.x-r55.w the shared (per-wave) ones, a0.x = 244, a1.x = 245, p0.x-p0.w = 248-251
// (Mesa src/freedreno/ir3/ir3.h GPR_REG_SIZE, SHARED_REG_START; instr-a3xx.h REG_A0, REG_P0).
constexpr uint16_t ir3_regid_shared = 4 * 48;
constexpr uint16_t ir3_regid_a0 = 4 * 61;
constexpr uint16_t ir3_regid_a1 = 4 * 61 + 1;
constexpr uint16_t ir3_regid_p0 = 4 * 62;

// One operand. `num` is a register id (gpr, also a0/p0), or a constant-file id (cN.c: N * 4 + c);
// relative forms add `value` to a0.x.
struct ir3_operand {
  enum kind_t : uint8_t { none, gpr, constant, immed, rel_gpr, rel_const } kind = none;
  bool half = false;  // a 16-bit register (hrN.c, hcN.c) or half immediate
  bool r = false;     // (r): advances by one register with each (rpt) repetition
  bool neg = false;   // (neg); cat2/cat4 also (abs)
  bool abs = false;
  bool last = false;  // (last): last use, a hint
  bool flut = false;  // immed: `value` indexes the float lookup table (ir3-common.xml)
  uint16_t num = 0;
  int32_t value = 0;  // immed value (sign-extended where the field is "int"), relative offset
};

struct ir3_instr {
  uint64_t word = 0;
  ir3_op op = ir3_op::count;
  uint8_t cat = 0;
  uint8_t repeat = 0;  // (rptN): N further repetitions
  uint8_t nop = 0;     // (nopN) on cat2/cat3: N issue slots after the instruction
  bool ss = false, sy = false, jp = false, ul = false, sat = false, ei = false, eq = false;
  // cat0: branch target relative to this instruction (in instructions); predicate sources.
  int32_t branch = 0;
  uint8_t index = 0;         // brac.N; getlast cluster field W
  uint8_t comp[2] = {0, 0};  // p0 component of each condition
  bool inv[2] = {false, false};
  // cat1 types and rounding (ROUND: 0 toward zero, 1 even, 2 +inf, 3 -inf: Mesa instr-a3xx.h
  // round_t); cat5/cat6 TYPE in `type`.
  uint8_t src_type = 0, dst_type = 0, round = 0, type = 0;
  uint8_t cond = 0;  // cat2 compares: lt le gt ge eq ne
  bool full = true;  // cat2/cat3/cat4/cat5: full-precision sources
  bool dst_half = false;
  // cat5
  uint8_t wrmask = 0, samp = 0, tex = 0, num_src = 0, base = 0, desc_mode = 0, cluster_w = 0;
  bool tex3d = false, array = false, o = false, p = false, sv = false, one_d = false;
  bool s2en = false, imm_offset = false;
  // cat6: components, dimensions, byte offset, ldg.a/stg.a shift, IBO/SSBO slot operand
  uint8_t size = 0, dims = 0, type_size = 0, mode = 0, shift = 0, shfl_mode = 0;
  bool typed = false, bindless = false, has_offset = false, uniform = false;
  int32_t offset = 0;
  // cat7 barrier scope
  bool g = false, l = false, rd = false, wr = false;
  ir3_operand dst[4];  // swz/sct write several
  ir3_operand src[4];
  uint8_t ndst = 0, nsrc = 0;
};

// Decodes one a6xx word. false: *why says which field or bit pattern no encoding accepts.
bool ir3_decode(uint64_t word, ir3_instr *out, std::string *why);

// Decodes `count` instructions (64 bits each, little-endian dwords: low word first, as in the
// shader image). false: *err names the kernel, the instruction index and the word.
bool ir3_program_decode(const uint32_t *dwords, size_t count, const std::string &kernel,
                        std::vector<ir3_instr> *out, std::string *err);

// Mesa's disassembler text of `i` (isaspec display templates), without leading tab or trailing
// newline. `index` places branch targets: with labels, "#l<index + offset>" as
// isa_decode_options.branch_labels prints them, else the raw "#offset".
std::string ir3_render(const ir3_instr &i, int index, bool labels = false);

// "0x<hi>_<lo>", as Mesa's tests write words.
std::string ir3_word_text(uint64_t word);

}  // namespace capgraph::adreno
