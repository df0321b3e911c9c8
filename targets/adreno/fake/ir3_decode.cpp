// ir3 decoding, the way Mesa's isaspec decoder matches a word: every leaf encoding (bitset) of
// the a6xx ISA carries its own and its parents' fixed bit patterns; a word must match exactly one
// encoding; the bits an encoding leaves "x" must be zero and asserted fields must hold their
// value, else Mesa's decoder reports an error (isaspec_decode_impl.c find_bitset, find_display),
// and so does this one. Field layouts are read from the same XML; see ir3_decode.h for sources.
#include "ir3_decode.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

namespace capgraph::adreno {
namespace {

const char *const op_names[] = {
#define X(e, name, cat) name,
    IR3_OPS(X)
#undef X
};
const uint8_t op_cats[] = {
#define X(e, name, cat) cat,
    IR3_OPS(X)
#undef X
};

uint64_t bits(uint64_t w, int lo, int hi) {
  return (w >> lo) & (hi - lo == 63 ? ~0ull : ((1ull << (hi - lo + 1)) - 1));
}
bool bit(uint64_t w, int pos) { return (w >> pos) & 1; }
int32_t sext(uint64_t v, int width) {
  const uint64_t m = 1ull << (width - 1);
  return int32_t(int64_t((v ^ m) - m));
}

// A fixed bit range of an encoding, written most significant bit first as in the XML:
// '0'/'1' must match, 'x' is not matched but must be zero.
struct pat {
  uint8_t lo, hi;
  const char *bits;
};
using pats = std::vector<pat>;
pats operator+(pats a, const pats &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Which field layout an encoding uses, beyond its op.
enum variant : uint8_t {
  v_none,
  v_cat0_0src,
  v_cat0_1src,
  v_cat0_immed,
  v_cat0_getlast,
  v_cat0_brac,
  v_cat0_brax,
  v_cat0_br1,
  v_cat0_br2,
  v_mov_immed,
  v_mov_const,
  v_mov_gpr,
  v_mov_relgpr,
  v_mov_relconst,
  v_cat1_multi,
  v_movmsk,
  v_cat2_1src,
  v_cat2_2src,
  v_cat2_cond,
  v_cat2_input,
  v_cat3,
  v_cat3_alt,
  v_cat3_dp,
  v_cat3_wmm,
  v_cat4,
  v_cat5,
  v_cat5_isam,
  v_tcinv,
  v_brcst,
  v_quad,
  v_ldg,
  v_ldg_a,
  v_ldg_k,
  v_stg,
  v_stg_a,
  v_ld,
  v_ldlv,
  v_st,
  v_stc,
  v_resinfo,
  v_atomic_l,
  v_atomic_g,
  v_ldc,
  v_ldc_k,
  v_getid,
  v_ibo_1src,
  v_ibo_ls,
  v_atomic_b,
  v_shfl,
  v_barrier,
  v_cat7_data,
  v_sleep,
  v_icinv,
};

struct encoding {
  ir3_op op;
  variant var;
  uint64_t mask = 0, match = 0, dontcare = 0;
};

struct table {
  std::vector<encoding> enc;
  void add(ir3_op op, variant var, const pats &ps) {
    encoding e{op, var};
    for (const pat &p : ps) {
      const int n = p.hi - p.lo + 1;
      if ((int)strlen(p.bits) != n) {
        fprintf(stderr, "ir3_decode: pattern %d..%d of %s has %zu characters\n", p.lo, p.hi,
                op_names[int(op)], strlen(p.bits));
        abort();
      }
      for (int k = 0; k < n; k++) {
        const uint64_t b = 1ull << (p.hi - k);
        if (p.bits[k] == 'x') {
          e.dontcare |= b;
        } else {
          e.mask |= b;
          if (p.bits[k] == '1') e.match |= b;
        }
      }
    }
    enc.push_back(e);
  }
  table();
};

table::table() {
  using o = ir3_op;
  // Cat0: ir3-cat0.xml. OPC_HI is bit 49 (bits 50-51 "x"), OPC bits 55-58.
  const pats c0 = {{61, 63, "000"}, {43, 43, "x"}};
  const pats c0_0src =
      c0 + pats{{32, 36, "xxxxx"}, {37, 39, "000"}, {45, 47, "000"}, {52, 54, "000"}};
  const struct {
    o op;
    const char *hi, *opc;
  } zero_src[] = {
      {o::nop, "xx0", "0000"},   {o::end, "xx0", "0110"},      {o::ret, "xx0", "0100"},
      {o::emit, "xx0", "0111"},  {o::cut, "xx0", "1000"},      {o::chmask, "xx0", "1001"},
      {o::chsh, "xx0", "1010"},  {o::flow_rev, "xx0", "1011"}, {o::shpe, "xx1", "1000"},
      {o::predt, "xx1", "1101"}, {o::predf, "xx1", "1110"},    {o::prede, "xx1", "1111"}};
  for (const auto &z : zero_src)
    add(z.op, v_cat0_0src, c0_0src + pats{{49, 51, z.hi}, {55, 58, z.opc}});
  add(o::kill, v_cat0_1src,
      c0 + pats{{32, 36, "00000"},
                {37, 39, "000"},
                {45, 47, "000"},
                {49, 51, "xx0"},
                {55, 58, "0101"}});
  const pats c0_imm =
      c0 + pats{{32, 36, "xxxxx"}, {37, 39, "xxx"}, {45, 47, "xxx"}, {52, 54, "xxx"}};
  add(o::jump, v_cat0_immed, c0_imm + pats{{49, 51, "xx0"}, {55, 58, "0010"}});
  add(o::call, v_cat0_immed, c0_imm + pats{{49, 51, "xx0"}, {55, 58, "0011"}});
  add(o::bkt, v_cat0_immed, c0_imm + pats{{49, 51, "xx1"}, {55, 58, "0000"}});
  add(o::getone, v_cat0_immed, c0_imm + pats{{49, 51, "xx1"}, {55, 58, "0101"}});
  add(o::shps, v_cat0_immed, c0_imm + pats{{49, 51, "xx1"}, {55, 58, "0111"}});
  add(o::getlast, v_cat0_getlast,
      c0 + pats{{32, 36, "xxxxx"},
                {37, 39, "xxx"},
                {45, 47, "xxx"},
                {49, 51, "xx1"},
                {55, 58, "0100"}});
  const pats c0_br = c0 + pats{{49, 51, "xx0"}, {55, 58, "0001"}};
  add(o::brac, v_cat0_brac, c0_br + pats{{37, 39, "011"}, {45, 47, "xxx"}, {52, 54, "xxx"}});
  add(o::brax, v_cat0_brax,
      c0_br + pats{{32, 36, "xxxxx"}, {37, 39, "110"}, {45, 47, "xxx"}, {52, 54, "xxx"}});
  const pats c0_br1 = c0_br + pats{{32, 36, "xxxxx"}, {45, 47, "xxx"}};
  add(o::br, v_cat0_br1, c0_br1 + pats{{37, 39, "000"}});
  add(o::bany, v_cat0_br1, c0_br1 + pats{{37, 39, "100"}});
  add(o::ball, v_cat0_br1, c0_br1 + pats{{37, 39, "101"}});
  add(o::brao, v_cat0_br2, c0_br + pats{{32, 36, "xxxxx"}, {37, 39, "001"}});
  add(o::braa, v_cat0_br2, c0_br + pats{{32, 36, "xxxxx"}, {37, 39, "010"}});

  // Cat1: ir3-cat1.xml.
  const pats c1 = {{61, 63, "001"}, {42, 42, "0"}};
  const pats c1_mov = c1 + pats{{57, 58, "00"}};
  const char *z21 = "000000000000000000000", *z20 = "00000000000000000000";
  add(o::mov, v_mov_immed, c1_mov + pats{{53, 54, "10"}});
  add(o::mov, v_mov_const, c1_mov + pats{{11, 31, z21}, {53, 54, "01"}});
  add(o::mov, v_mov_gpr, c1_mov + pats{{8, 9, "00"}, {11, 31, z21}, {53, 54, "00"}});
  const pats c1_rel = c1_mov + pats{{11, 11, "1"}, {12, 31, z20}, {53, 54, "00"}};
  add(o::mov, v_mov_relgpr, c1_rel + pats{{10, 10, "0"}});
  add(o::mov, v_mov_relconst, c1_rel + pats{{10, 10, "1"}});
  const pats c1_multi = c1 + pats{{43, 43, "0"}, {49, 49, "0"}, {53, 54, "00"}, {57, 58, "10"}};
  add(o::swz, v_cat1_multi, c1_multi + pats{{24, 31, "00000000"}, {40, 41, "00"}});
  add(o::gat, v_cat1_multi, c1_multi + pats{{40, 41, "01"}});
  add(o::sct, v_cat1_multi, c1_multi + pats{{40, 41, "10"}});
  add(o::movmsk, v_movmsk,
      c1 + pats{{0, 31, "00000000000000000000000000000000"},
                {43, 43, "0"},
                {46, 48, "011"},
                {50, 52, "011"},
                {53, 54, "00"},
                {57, 58, "11"}});

  // Cat2: ir3-cat2.xml, OPC bits 53-58.
  const pats c2 = {{61, 63, "010"}};
  const struct {
    o op;
    variant var;
    const char *opc;
  } cat2[] = {{o::add_f, v_cat2_2src, "000000"},    {o::min_f, v_cat2_2src, "000001"},
              {o::max_f, v_cat2_2src, "000010"},    {o::mul_f, v_cat2_2src, "000011"},
              {o::sign_f, v_cat2_1src, "000100"},   {o::cmps_f, v_cat2_cond, "000101"},
              {o::absneg_f, v_cat2_1src, "000110"}, {o::cmpv_f, v_cat2_cond, "000111"},
              {o::floor_f, v_cat2_1src, "001001"},  {o::ceil_f, v_cat2_1src, "001010"},
              {o::rndne_f, v_cat2_1src, "001011"},  {o::rndaz_f, v_cat2_1src, "001100"},
              {o::trunc_f, v_cat2_1src, "001101"},  {o::add_u, v_cat2_2src, "010000"},
              {o::add_s, v_cat2_2src, "010001"},    {o::sub_u, v_cat2_2src, "010010"},
              {o::sub_s, v_cat2_2src, "010011"},    {o::cmps_u, v_cat2_cond, "010100"},
              {o::cmps_s, v_cat2_cond, "010101"},   {o::min_u, v_cat2_2src, "010110"},
              {o::min_s, v_cat2_2src, "010111"},    {o::max_u, v_cat2_2src, "011000"},
              {o::max_s, v_cat2_2src, "011001"},    {o::absneg_s, v_cat2_1src, "011010"},
              {o::and_b, v_cat2_2src, "011100"},    {o::or_b, v_cat2_2src, "011101"},
              {o::not_b, v_cat2_1src, "011110"},    {o::xor_b, v_cat2_2src, "011111"},
              {o::cmpv_u, v_cat2_cond, "100001"},   {o::cmpv_s, v_cat2_cond, "100010"},
              {o::mul_u24, v_cat2_2src, "110000"},  {o::mul_s24, v_cat2_2src, "110001"},
              {o::mull_u, v_cat2_2src, "110010"},   {o::bfrev_b, v_cat2_1src, "110011"},
              {o::clz_s, v_cat2_1src, "110100"},    {o::clz_b, v_cat2_1src, "110101"},
              {o::shl_b, v_cat2_2src, "110110"},    {o::shr_b, v_cat2_2src, "110111"},
              {o::ashr_b, v_cat2_2src, "111000"},   {o::mgen_b, v_cat2_2src, "111010"},
              {o::getbit_b, v_cat2_2src, "111011"}, {o::setrm, v_cat2_1src, "111100"},
              {o::cbits_b, v_cat2_1src, "111101"},  {o::shb, v_cat2_2src, "111110"},
              {o::msad, v_cat2_2src, "111111"}};
  for (const auto &c : cat2) {
    pats p = c2 + pats{{53, 58, c.opc}};
    if (c.var == v_cat2_1src) p = p + pats{{16, 31, "xxxxxxxxxxxxxxxx"}, {48, 50, "xxx"}};
    if (c.var == v_cat2_2src) p = p + pats{{48, 50, "xxx"}};
    add(c.op, c.var, p);
  }
  add(o::bary_f, v_cat2_input, c2 + pats{{48, 49, "xx"}, {53, 58, "111001"}, {50, 50, "0"}});
  add(o::flat_b, v_cat2_input, c2 + pats{{48, 49, "xx"}, {53, 58, "111001"}, {50, 50, "1"}});

  // Cat3: ir3-cat3.xml, OPC bits 55-58; bit 13 selects the a6xx "alt" forms.
  const pats c3 = {{61, 63, "011"}};
  const o cat3[] = {o::mad_u16, o::madsh_u16, o::mad_s16, o::madsh_m16, o::mad_u24, o::mad_s24,
                    o::mad_f16, o::mad_f32,   o::sel_b16, o::sel_b32,   o::sel_s16, o::sel_s32,
                    o::sel_f16, o::sel_f32,   o::sad_s16, o::sad_s32};
  const char *const opc4[] = {"0000", "0001", "0010", "0011", "0100", "0101", "0110", "0111",
                              "1000", "1001", "1010", "1011", "1100", "1101", "1110", "1111"};
  for (int k = 0; k < 16; k++) add(cat3[k], v_cat3, c3 + pats{{13, 13, "0"}, {55, 58, opc4[k]}});
  const o alt[] = {o::shrm, o::shlm, o::shrg, o::shlg, o::andg};
  for (int k = 0; k < 5; k++)
    add(alt[k], v_cat3_alt, c3 + pats{{13, 13, "1"}, {55, 58, opc4[8 + k]}});
  add(o::dp2acc, v_cat3_dp, c3 + pats{{13, 13, "1"}, {46, 46, "0"}, {55, 58, "1101"}});
  add(o::dp4acc, v_cat3_dp, c3 + pats{{13, 13, "1"}, {46, 46, "1"}, {55, 58, "1101"}});
  add(o::wmm, v_cat3_wmm, c3 + pats{{13, 13, "1"}, {42, 42, "0"}, {55, 58, "1110"}});
  add(o::wmm_accu, v_cat3_wmm, c3 + pats{{13, 13, "1"}, {42, 42, "1"}, {55, 58, "1110"}});

  // Cat4: ir3-cat4.xml.
  const pats c4 = {{61, 63, "100"}, {16, 31, "xxxxxxxxxxxxxxxx"}, {47, 51, "xxxxx"}};
  const struct {
    o op;
    const char *opc;
  } cat4[] = {{o::rcp, "000000"},   {o::rsq, "000001"},  {o::log2, "000010"}, {o::exp2, "000011"},
              {o::sin, "000100"},   {o::cos, "000101"},  {o::sqrt, "000110"}, {o::hrsq, "001001"},
              {o::hlog2, "001010"}, {o::hexp2, "001011"}};
  for (const auto &c : cat4) add(c.op, v_cat4, c4 + pats{{53, 58, c.opc}});

  // Cat5: ir3-cat5.xml, OPC bits 54-58.
  const pats c5 = {{61, 63, "101"}, {17, 17, "x"}};
  add(o::isam, v_cat5_isam, c5 + pats{{54, 58, "00000"}});
  const o cat5[] = {o::isaml,    o::isamm,   o::sam,     o::samb,     o::saml,     o::samgq,
                    o::getlod,   o::conv,    o::convm,   o::getsize,  o::getbuf,   o::getpos,
                    o::getinfo,  o::dsx,     o::dsy,     o::gather4r, o::gather4g, o::gather4b,
                    o::gather4a, o::samgp0,  o::samgp1,  o::samgp2,   o::samgp3,   o::dsxpp_1,
                    o::dsypp_1,  o::rgetpos, o::rgetinfo};
  const char *const opc5[] = {"00000", "00001", "00010", "00011", "00100", "00101", "00110",
                              "00111", "01000", "01001", "01010", "01011", "01100", "01101",
                              "01110", "01111", "10000", "10001", "10010", "10011", "10100",
                              "10101", "10110", "10111", "11000", "11001", "11010", "11011",
                              "11100", "11101", "11110", "11111"};
  for (int k = 0; k < 27; k++)
    add(cat5[k], v_cat5, c5 + pats{{18, 18, "0"}, {54, 58, opc5[k + 1]}});
  add(o::tcinv, v_tcinv,
      {{61, 63, "101"},
       {0, 31, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
       {32, 53, "xxxxxxxxxxxxxxxxxxxxxx"},
       {54, 58, "11100"}});
  const pats c5_brcst = c5 + pats{{18, 18, "0"}, {50, 50, "0"}};
  add(o::brcst_active, v_brcst, c5_brcst + pats{{53, 58, "111110"}});
  add(o::quad_shuffle_brcst, v_quad, c5_brcst + pats{{53, 58, "111111"}, {19, 20, "00"}});
  add(o::quad_shuffle_horiz, v_quad, c5_brcst + pats{{53, 58, "111111"}, {19, 20, "01"}});
  add(o::quad_shuffle_vert, v_quad, c5_brcst + pats{{53, 58, "111111"}, {19, 20, "10"}});
  add(o::quad_shuffle_diag, v_quad, c5_brcst + pats{{53, 58, "111111"}, {19, 20, "11"}});

  // Cat6: ir3-cat6.xml. The a3xx-style encodings have OPC in bits 54-58; the a6xx ones
  // (#instruction-cat6-a6xx-base) have it in bits 14-19, with bit 40 clear.
  const pats c6 = {{61, 63, "110"}};
  const pats c6_ldg = c6 + pats{{0, 0, "1"},   {23, 23, "1"},  {27, 31, "00xxx"},
                                {40, 40, "x"}, {52, 53, "00"}, {54, 58, "00000"}};
  add(o::ldg, v_ldg, c6_ldg + pats{{22, 22, "0"}, {41, 48, "xxxxxxxx"}});
  add(o::ldg_a, v_ldg_a, c6_ldg + pats{{22, 22, "1"}, {41, 48, "xxxxxxxx"}});
  add(o::ldg_k, v_ldg_k,
      c6 + pats{{0, 0, "1"},
                {22, 22, "0"},
                {27, 31, "00xxx"},
                {41, 48, "xxxxxxxx"},
                {52, 52, "1"},
                {53, 53, "0"},
                {54, 58, "00000"}});
  const pats c6_stg = c6 + pats{{0, 0, "x"}, {27, 31, "00xxx"}, {53, 53, "0"}, {54, 58, "00011"}};
  add(o::stg, v_stg, c6_stg + pats{{14, 21, "xxxxxxxx"}, {22, 23, "1x"}, {52, 52, "0"}});
  add(o::stg_a, v_stg_a, c6_stg + pats{{14, 21, "xxxxxxxx"}, {22, 23, "1x"}, {52, 52, "1"}});
  const pats c6_ld =
      c6 + pats{{0, 0, "1"}, {22, 22, "x"}, {23, 23, "1"}, {40, 48, "xxxxxxxxx"}, {52, 53, "xx"}};
  add(o::ldl, v_ld, c6_ld + pats{{54, 58, "00001"}});
  add(o::ldp, v_ld, c6_ld + pats{{54, 58, "00010"}});
  add(o::ldlw, v_ld, c6_ld + pats{{54, 58, "01010"}});
  add(o::ldlv, v_ldlv,
      c6 + pats{{0, 0, "0"},
                {14, 21, "00000000"},
                {22, 23, "11"},
                {40, 48, "xxxxxxxxx"},
                {52, 53, "xx"},
                {54, 58, "11111"}});
  const pats c6_st = c6 + pats{{14, 22, "xxxxxxxxx"}, {23, 23, "1"}, {40, 40, "1"}, {52, 53, "xx"}};
  add(o::stl, v_st, c6_st + pats{{0, 0, "x"}, {54, 58, "00100"}});
  add(o::stp, v_st, c6_st + pats{{0, 0, "0"}, {54, 58, "00101"}});
  add(o::stlw, v_st, c6_st + pats{{0, 0, "x"}, {54, 58, "01011"}});
  add(o::stc, v_stc,
      c6 + pats{{0, 0, "x"},
                {9, 13, "xxxxx"},
                {14, 22, "000000000"},
                {23, 23, "1"},
                {27, 31, "xxxxx"},
                {41, 48, "xxxxxxxx"},
                {52, 53, "xx"},
                {54, 58, "11100"}});
  add(o::resinfo, v_resinfo,
      c6 + pats{{0, 0, "x"},
                {1, 8, "xxxxxxxx"},
                {11, 11, "x"},
                {12, 13, "xx"},
                {14, 23, "0000000000"},
                {24, 31, "xxxxxxxx"},
                {40, 40, "0"},
                {52, 52, "x"},
                {54, 58, "01111"}});
  const o atomics_l[] = {o::atomic_add, o::atomic_sub,     o::atomic_xchg, o::atomic_inc,
                         o::atomic_dec, o::atomic_cmpxchg, o::atomic_min,  o::atomic_max,
                         o::atomic_and, o::atomic_or,      o::atomic_xor};
  const o atomics_g[] = {o::atomic_g_add, o::atomic_g_sub,     o::atomic_g_xchg, o::atomic_g_inc,
                         o::atomic_g_dec, o::atomic_g_cmpxchg, o::atomic_g_min,  o::atomic_g_max,
                         o::atomic_g_and, o::atomic_g_or,      o::atomic_g_xor};
  const pats c6_atomic =
      c6 +
      pats{{40, 40, "x"}, {0, 0, "1"}, {1, 8, "00000000"}, {41, 48, "00000000"}, {53, 53, "0"}};
  for (int k = 0; k < 11; k++) {
    add(atomics_l[k], v_atomic_l, c6_atomic + pats{{52, 52, "0"}, {54, 58, opc5[16 + k]}});
    add(atomics_g[k], v_atomic_g, c6_atomic + pats{{52, 52, "1"}, {54, 58, opc5[16 + k]}});
  }
  const pats c6_a6 = c6 + pats{{40, 40, "0"}};
  const pats c6_a6x = c6_a6 + pats{{4, 5, "00"}, {54, 58, "00000"}};
  const pats c6_ldc =
      c6_a6x + pats{{0, 0, "x"}, {14, 19, "011110"}, {20, 22, "1xx"}, {49, 51, "x11"}};
  add(o::ldc_k, v_ldc_k, c6_ldc + pats{{11, 11, "x"}, {9, 10, "xx"}, {52, 53, "11"}});
  add(o::ldc, v_ldc, c6_ldc + pats{{52, 53, "10"}});
  const pats c6_getid = c6_a6x + pats{{0, 0, "0"},          {9, 10, "xx"},        {11, 11, "x"},
                                      {24, 31, "xxxxxxxx"}, {41, 48, "xxxxxxxx"}, {52, 53, "1x"}};
  add(o::getspid, v_getid, c6_getid + pats{{14, 19, "100100"}, {20, 23, "x1xx"}});
  add(o::getwid, v_getid, c6_getid + pats{{14, 19, "100101"}, {20, 23, "x1xx"}});
  add(o::getfiberid, v_getid, c6_getid + pats{{14, 19, "100110"}, {20, 23, "11xx"}});
  const pats c6_ibo1 =
      c6_a6x + pats{{0, 0, "0"}, {20, 23, "0110"}, {24, 31, "xxxxxxxx"}, {52, 53, "1x"}};
  add(o::resinfo_b, v_ibo_1src, c6_ibo1 + pats{{14, 19, "001111"}});
  add(o::resbase, v_ibo_1src, c6_ibo1 + pats{{14, 19, "001100"}});
  const pats c6_ibo = c6_a6 + pats{{20, 22, "110"}};
  add(o::stib_b, v_ibo_ls, c6_ibo + pats{{0, 0, "0"}, {14, 19, "011101"}, {52, 53, "10"}});
  add(o::ldib_b, v_ibo_ls, c6_ibo + pats{{0, 0, "x"}, {14, 19, "000110"}, {52, 53, "10"}});
  const struct {
    o op;
    const char *opc;
  } atomics_b[] = {
      {o::atomic_b_add, "010000"},     {o::atomic_b_sub, "010001"}, {o::atomic_b_xchg, "010010"},
      {o::atomic_b_cmpxchg, "010101"}, {o::atomic_b_min, "010110"}, {o::atomic_b_max, "010111"},
      {o::atomic_b_and, "011000"},     {o::atomic_b_or, "011001"},  {o::atomic_b_xor, "011010"}};
  for (const auto &a : atomics_b)
    add(a.op, v_atomic_b,
        c6_ibo + pats{{23, 23, "0"},
                      {4, 5, "00"},
                      {54, 58, "00000"},
                      {0, 0, "x"},
                      {14, 19, a.opc},
                      {52, 53, "11"}});
  add(o::shfl, v_shfl,
      c6 + pats{{0, 0, "0"},
                {9, 22, "00000000000000"},
                {40, 44, "xxxxx"},
                {48, 48, "x"},
                {52, 53, "10"},
                {54, 58, "11011"}});

  // Cat7: ir3-cat7.xml (the a7xx-only encodings are left out).
  const pats c7 = {
      {61, 63, "111"}, {0, 31, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, {32, 43, "xxxxxxxxxxxx"}};
  add(o::bar, v_barrier, c7 + pats{{45, 50, "x1xxxx"}, {55, 58, "0000"}});
  add(o::fence, v_barrier, c7 + pats{{45, 50, "x1xxxx"}, {55, 58, "0001"}});
  add(o::sleep, v_sleep, c7 + pats{{45, 50, "xxxxxx"}, {52, 54, "xxx"}, {55, 58, "0010"}});
  add(o::icinv, v_icinv, c7 + pats{{45, 54, "xxxxxxxxxx"}, {55, 58, "0011"}});
  const pats c7_data = c7 + pats{{45, 50, "xxxxxx"}, {52, 54, "xx0"}};
  add(o::dccln, v_cat7_data, c7_data + pats{{55, 58, "0100"}});
  add(o::dcinv, v_cat7_data, c7_data + pats{{55, 58, "0101"}});
  add(o::dcflu, v_cat7_data, c7_data + pats{{55, 58, "0110"}});
}

const table &encodings() {
  static const table t;
  return t;
}

std::string hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%" PRIx64, v);
  return b;
}

// A decode in progress: the word, the result and the first complaint.
struct decoder {
  uint64_t w;
  ir3_instr &i;
  std::string why;
  bool fail(const std::string &s) {
    if (why.empty()) why = s;
    return false;
  }
  // An asserted field (ir3 XML <assert>): Mesa reports "unexpected bits" when it differs.
  bool expect(int lo, int hi, uint64_t v, const char *what) {
    if (bits(w, lo, hi) == v) return true;
    return fail(std::string("unexpected bits [") + std::to_string(lo) + ":" + std::to_string(hi) +
                "] in " + what);
  }
  ir3_operand gpr(int lo, bool half) {
    ir3_operand o;
    o.kind = ir3_operand::gpr;
    o.num = uint16_t(bits(w, lo, lo + 7));
    o.half = half;
    return o;
  }
  // #multisrc (ir3-common.xml): a gpr, const, immediate, float-table immediate or relative
  // source in 16 bits; `full` is the instruction's FULL, `r` its (r) bit for this source.
  bool multisrc(int lo, bool full, bool r, ir3_operand *o) {
    const uint32_t f = uint32_t(bits(w, lo, lo + 15));
    *o = ir3_operand();
    o->half = !full;
    o->r = r;
    o->neg = f >> 14 & 1;
    o->abs = f >> 15 & 1;
    switch ((f >> 11) & 7) {
      case 0:
        if (f & 0x300) return fail("a gpr source with bits 8-9 set");
        o->kind = ir3_operand::gpr;
        o->num = f & 0xff;
        o->last = f >> 10 & 1;
        return true;
      case 2:  // "x10": bit 13 is a dontcare bit, which Mesa reports when set
        o->kind = ir3_operand::constant;
        o->num = f & 0x7ff;
        return true;
      case 4:
        o->kind = ir3_operand::immed;
        o->value = sext(f & 0x7ff, 11);
        return true;
      case 5:
        o->kind = ir3_operand::immed;
        o->flut = true;
        o->value = f & 0x3ff;
        o->half = f >> 10 & 1;
        // entries past the table's 12 decode (Mesa prints the number); executing one fails
        return true;
      case 1:
        o->kind = f >> 10 & 1 ? ir3_operand::rel_const : ir3_operand::rel_gpr;
        o->value = sext(f & 0x3ff, 10);
        return true;
      default: return fail("a source of no known form (bits 11-13)");
    }
  }
  // #cat3-src: src1 and src3 of cat3 in 13 bits; the a6xx alt forms take immediates in place of
  // plain consts.
  bool cat3src(int lo, bool half, bool immed, ir3_operand *o) {
    const uint32_t f = uint32_t(bits(w, lo, lo + 12));
    *o = ir3_operand();
    o->half = half;
    switch ((f >> 11) & 3) {
      case 0:
        if (f & 0x300) return fail("a cat3 gpr source with bits 8-9 set");
        o->kind = ir3_operand::gpr;
        o->num = f & 0xff;
        o->last = f >> 10 & 1;
        return true;
      case 1:
        o->kind = f >> 10 & 1 ? ir3_operand::rel_const : ir3_operand::rel_gpr;
        o->value = sext(f & 0x3ff, 10);
        return true;
      default:  // bit 12: an immediate of bits 0-11 in the alt forms, else a const, bit 11 clear
        if (immed) {
          o->kind = ir3_operand::immed;
          o->value = int32_t(f & 0xfff);
        } else if (f & 0x800) {
          return fail("unexpected bits [11:11] in a cat3 const source");
        } else {
          o->kind = ir3_operand::constant;
          o->num = f & 0x7ff;
        }
        return true;
    }
  }
  // #cat6-src: an 8-bit immediate or a gpr.
  ir3_operand cat6src(int lo, bool im) {
    ir3_operand o;
    if (im) {
      o.kind = ir3_operand::immed;
      o.value = int32_t(bits(w, lo, lo + 7));
    } else {
      o = gpr(lo, false);
    }
    return o;
  }
  bool fields(variant var);
};

bool cat1_half(uint8_t t) { return ir3_type_half(t) || t == ir3_u8_32; }

bool decoder::fields(variant var) {
  i.jp = bit(w, 59);
  i.sy = bit(w, 60);
  switch (i.cat) {
    case 0:
      i.ss = bit(w, 44);
      i.eq = bit(w, 48);
      i.repeat = uint8_t(bits(w, 40, 42));
      i.branch = int32_t(uint32_t(w));
      i.inv[0] = bit(w, 52);
      i.comp[0] = uint8_t(bits(w, 53, 54));
      i.inv[1] = bit(w, 45);
      i.comp[1] = uint8_t(bits(w, 46, 47));
      if (var == v_cat0_brac) i.index = uint8_t(bits(w, 32, 36));
      if (var == v_cat0_getlast) i.index = uint8_t(bits(w, 52, 54));
      i.nsrc = var == v_cat0_br2 ? 2 : (var == v_cat0_br1 || var == v_cat0_1src) ? 1 : 0;
      return true;
    case 1: {
      i.ss = bit(w, 44);
      i.ul = bit(w, 45);
      i.round = uint8_t(bits(w, 55, 56));
      i.dst_type = uint8_t(bits(w, 46, 48));
      i.src_type = uint8_t(bits(w, 50, 52));
      i.repeat = uint8_t(bits(w, 40, 41));
      const bool sh = cat1_half(i.src_type), dh = cat1_half(i.dst_type);
      i.dst_half = dh;
      if (var == v_cat1_multi) {
        i.src[0] = gpr(0, sh);
        i.dst[0] = gpr(32, dh);
        if (i.op == ir3_op::swz) {
          i.src[1] = gpr(8, sh);
          i.dst[1] = gpr(16, dh);
          i.nsrc = i.ndst = 2;
        } else if (i.op == ir3_op::gat) {
          for (int k = 1; k < 4; k++) i.src[k] = gpr(8 * k, sh);
          i.nsrc = 4;
          i.ndst = 1;
        } else {
          for (int k = 1; k < 4; k++) i.dst[k] = gpr(8 * k, dh);
          i.nsrc = 1;
          i.ndst = 4;
        }
        i.repeat = 0;
        return true;
      }
      // #cat1-dst: a gpr or r<a0.x + OFFSET>.
      if (bit(w, 49)) {
        i.dst[0].kind = ir3_operand::rel_gpr;
        i.dst[0].value = int32_t(bits(w, 32, 39));
        i.dst[0].half = dh;
      } else {
        i.dst[0] = gpr(32, dh);
      }
      i.ndst = 1;
      if (var == v_movmsk) {
        i.dst[0].half = false;
        return true;
      }
      ir3_operand &s = i.src[0];
      i.nsrc = 1;
      s.half = sh;
      s.r = bit(w, 43);
      switch (var) {
        case v_mov_immed:
          s.kind = ir3_operand::immed;
          s.value = int32_t(uint32_t(w));
          break;
        case v_mov_const:
          s.kind = ir3_operand::constant;
          s.num = uint16_t(bits(w, 0, 10));
          break;
        case v_mov_gpr:
          s.kind = ir3_operand::gpr;
          s.num = uint16_t(bits(w, 0, 7));
          s.last = bit(w, 10);
          break;
        default:
          s.kind = var == v_mov_relconst ? ir3_operand::rel_const : ir3_operand::rel_gpr;
          s.value = sext(bits(w, 0, 9), 10);
          break;
      }
      return true;
    }
    case 2: {
      i.repeat = uint8_t(bits(w, 40, 41));
      i.sat = bit(w, 42);
      i.ss = bit(w, 44);
      i.ul = bit(w, 45);
      const bool dst_conv = bit(w, 46);
      i.ei = bit(w, 47);
      i.full = bit(w, 52);
      bool r1 = bit(w, 43), r2 = bit(w, 51);
      // #cat2-cat3-nop-encoding: without (rpt), the (r) bits count nops.
      if ((r1 || r2) && i.repeat == 0 && var != v_cat2_input) {
        i.nop = uint8_t(r1 | r2 << 1);
        r1 = r2 = false;
      }
      i.dst[0] = gpr(32, false);
      i.dst_half = i.full == dst_conv && bits(w, 32, 39) <= 0xf7;
      i.dst[0].half = i.dst_half;
      i.ndst = 1;
      if (var == v_cat2_cond) {
        i.cond = uint8_t(bits(w, 48, 50));
        // 6 and 7 decode (Mesa prints the number); executing them fails
      }
      i.nsrc = var == v_cat2_1src ? 1 : 2;
      if (!multisrc(0, i.full, r1, &i.src[0])) return false;
      if (i.nsrc == 2 && !multisrc(16, i.full, r2, &i.src[1])) return false;
      return true;
    }
    case 3: {
      i.repeat = uint8_t(bits(w, 40, 41));
      i.ss = bit(w, 44);
      i.ul = bit(w, 45);
      bool r1 = bit(w, 43), r2 = bit(w, 15);
      if ((r1 || r2) && i.repeat == 0) {
        i.nop = uint8_t(r1 | r2 << 1);
        r1 = r2 = false;
      }
      const bool dst_conv = bit(w, 46);
      i.dst[0] = gpr(32, false);
      i.ndst = 1;
      i.nsrc = 3;
      switch (var) {
        case v_cat3: {
          static const bool full[16] = {false, true, false, true, true,  true, false, true,
                                        false, true, false, true, false, true, false, true};
          i.full = full[bits(w, 55, 58)];
          i.sat = bit(w, 42);
          break;
        }
        case v_cat3_alt: i.full = bit(w, 42); break;
        case v_cat3_dp:
          // Its display template always prints (nopN), which Mesa's decoder only defines in the
          // nop encoding: without it, Mesa reports a decode error, and so does this decoder.
          if (i.nop == 0) return fail("dp2acc/dp4acc outside the (nopN) encoding");
          i.full = true;
          i.sat = bit(w, 42);
          break;
        default:  // wmm
          i.full = bit(w, 31);
          break;
      }
      if (var == v_cat3_wmm)
        i.dst_half = !dst_conv;
      else if (var == v_cat3_dp)  // bit 46 is dp4acc's opcode bit, not DST_CONV: a full DST
        i.dst_half = false;       // (Mesa renders "dp4acc.unsigned.low r7.w, ...")
      else
        i.dst_half = i.full == dst_conv && bits(w, 32, 39) <= 0xf7;
      i.dst[0].half = i.dst_half;
      const bool immed = var == v_cat3_alt || var == v_cat3_wmm;
      if (!cat3src(0, !i.full, var == v_cat3_alt, &i.src[0])) return false;
      // Mesa's decoder refuses a wmm whose SRC1 is a const (its #cat3-src gets no
      // IMMED_ENCODING parameter there) and accepts a relative register (hr<a0.x + 38>, seen by
      // the flipped-bit cross-check); this one follows.
      if (var == v_cat3_wmm && i.src[0].kind != ir3_operand::gpr &&
          i.src[0].kind != ir3_operand::rel_gpr)
        return fail("wmm SRC1 not a register");
      i.src[1] = gpr(47, !i.full);
      if (!cat3src(16, !i.full, immed, &i.src[2])) return false;
      // The same for dp2acc/dp4acc's SRC1 and SRC3 (#instruction-cat3-dp passes them no
      // IMMED_ENCODING either; the flipped-bit cross-check found a const SRC1).
      if (var == v_cat3_dp &&
          (i.src[0].kind == ir3_operand::constant || i.src[2].kind == ir3_operand::constant))
        return fail("dp2acc/dp4acc with a const SRC1 or SRC3");
      i.src[0].r = r1;
      i.src[1].r = r2;
      i.src[2].r = bit(w, 29);
      if (var == v_cat3_dp) {
        i.index = uint8_t(bit(w, 14) | bit(w, 30) << 1);  // SRC_SIGN, SRC_PACK
      } else {
        i.src[0].neg = bit(w, 14);
      }
      if (var != v_cat3_dp) i.src[1].neg = bit(w, 30);
      if (var != v_cat3_wmm) i.src[2].neg = bit(w, 31);
      return true;
    }
    case 4: {
      i.repeat = uint8_t(bits(w, 40, 41));
      i.sat = bit(w, 42);
      i.ss = bit(w, 44);
      i.ul = bit(w, 45);
      i.full = bit(w, 52);
      i.dst[0] = gpr(32, false);
      i.dst_half = i.full == bit(w, 46) && bits(w, 32, 39) <= 0xf7;
      i.dst[0].half = i.dst_half;
      i.ndst = i.nsrc = 1;
      return multisrc(0, i.full, bit(w, 43), &i.src[0]);
    }
    case 5: {
      if (var == v_tcinv) return true;
      i.full = !bit(w, 0) ? false : true;
      i.dst[0] = gpr(32, false);
      i.wrmask = uint8_t(bits(w, 40, 43));
      i.type = uint8_t(bits(w, 44, 46));
      i.dst_half = ir3_type_half(i.type);
      i.dst[0].half = i.dst_half;
      i.ndst = 1;
      i.tex3d = bit(w, 48);
      i.array = bit(w, 49);
      i.o = bit(w, 52);
      const bool s2en = bit(w, 51);
      bool has_samp = true, has_tex = true;
      using o = ir3_op;
      switch (i.op) {
        case o::getsize:
        case o::getpos:
          has_samp = false;
          i.num_src = 1;
          break;
        case o::getbuf:
        case o::getinfo:
          has_samp = false;
          i.num_src = 0;
          break;
        case o::dsx:
        case o::dsy:
        case o::dsxpp_1:
        case o::dsypp_1:
        case o::rgetpos:
        case o::brcst_active:
        case o::quad_shuffle_horiz:
        case o::quad_shuffle_vert:
        case o::quad_shuffle_diag:
          has_samp = has_tex = false;
          i.num_src = 1;
          break;
        case o::rgetinfo:
          has_samp = has_tex = false;
          i.num_src = 0;
          break;
        case o::quad_shuffle_brcst:
          has_samp = has_tex = false;
          i.num_src = 2;
          break;
        case o::isaml:
        case o::samb:
        case o::saml:
        case o::conv:
        case o::convm: i.num_src = 2; break;
        default: i.num_src = 1; break;
      }
      if (var == v_cat5_isam) {
        i.one_d = !bit(w, 18);
        i.sv = bit(w, 50);
        i.imm_offset = bit(w, 53);
      } else if (var == v_cat5) {
        i.sv = bit(w, 50);
        i.p = bit(w, 53);
      }
      if (var == v_brcst || var == v_quad) {
        i.cluster_w = uint8_t(bits(w, 19, 20));
        if (!expect(47, 47, 0, "cat5")) return false;
      } else if (s2en) {
        i.s2en = true;
        i.base = uint8_t(bits(w, 19, 20) << 1 | bit(w, 47));
        i.desc_mode = uint8_t(bits(w, 29, 31));
        i.samp = uint8_t(bits(w, 21, 24));
        i.tex = uint8_t(bits(w, 25, 28));
        i.src[2] = gpr(21, false);
      } else {
        if (!expect(19, 20, 0, "cat5 (BASE_HI)") || !expect(47, 47, 0, "cat5 (BASE_LO)"))
          return false;
        i.samp = uint8_t(bits(w, 21, 24));
        i.tex = uint8_t(bits(w, 25, 31));
        if (!has_samp && !expect(21, 24, 0, "cat5 (SAMP)")) return false;
        if (!has_tex && !expect(25, 31, 0, "cat5 (TEX)")) return false;
      }
      if (i.num_src > 0) {
        i.src[0] = gpr(1, !i.full);
        i.nsrc = 1;
      } else if (!expect(1, 8, 0, "cat5 (SRC1)")) {
        return false;
      }
      if (i.o || i.num_src > 1) {
        i.src[1] = gpr(9, !i.full);
        i.nsrc = 2;
      } else if (i.imm_offset) {
        i.offset = int32_t(bits(w, 9, 16));
      } else if (!expect(9, 16, 0, "cat5 (SRC2)")) {
        return false;
      }
      return true;
    }
    case 6: {
      i.type = uint8_t(bits(w, 49, 51));
      const bool th = ir3_type_half(i.type);
      switch (var) {
        case v_ldg:
        case v_ldg_a:
          i.dst[0] = gpr(32, th);
          i.ndst = 1;
          i.src[0] = gpr(14, false);
          i.size = uint8_t(bits(w, 24, 26));
          if (var == v_ldg) {
            i.offset = sext(bits(w, 1, 13), 13);
            i.nsrc = 1;
          } else {
            i.shift = uint8_t(bits(w, 12, 13));
            // ir3-cat6.xml asserts bit 11 clear, but Mesa's decoder takes the override display
            // when SRC2_ADD_DWORD_SHIFT > 0 and then accepts the word whatever bit 11 holds
            // (seen by the flipped-bit cross-check, ir3_emu_kernels_test); bit 11 is no field.
            if (i.shift == 0 && !expect(11, 11, 0, "ldg.a")) return false;
            i.src[1] = gpr(1, false);
            i.offset = int32_t(bits(w, 9, 10));
            i.nsrc = 2;
          }
          return true;
        case v_ldg_k:
          i.offset = sext(bits(w, 1, 13), 13);
          i.src[0] = gpr(14, false);
          i.size = uint8_t(bits(w, 23, 26));
          i.dst[0].kind = ir3_operand::immed;
          i.dst[0].value = int32_t(bits(w, 32, 39));
          i.dst[0].r = bit(w, 40);  // a1.x relative
          i.nsrc = 1;
          return true;
        case v_stg:
        case v_stg_a:
          i.src[0] = gpr(41, false);  // address pair
          i.src[2] = gpr(1, th);      // value
          i.size = uint8_t(bits(w, 24, 26));
          if (var == v_stg) {
            i.offset = sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13);
            i.nsrc = 3;
          } else {
            i.shift = uint8_t(bits(w, 12, 13));
            // As for ldg.a: Mesa's decoder accepts bit 11 set when SRC2_ADD_DWORD_SHIFT > 0 (the
            // flipped-bit cross-check found it on a store of the window path's kernels).
            if (i.shift == 0 && !expect(11, 11, 0, "stg.a")) return false;
            i.src[1] = gpr(32, false);
            i.offset = int32_t(bits(w, 9, 10));
            i.nsrc = 3;
          }
          return true;
        case v_ld:
          i.offset = sext(bits(w, 1, 13), 13);
          i.src[0] = gpr(14, false);
          i.size = uint8_t(bits(w, 24, 31));
          i.dst[0] = gpr(32, th);
          i.ndst = i.nsrc = 1;
          return true;
        case v_ldlv:
          i.offset = int32_t(bits(w, 1, 13));
          i.size = uint8_t(bits(w, 24, 31));
          i.dst[0] = gpr(32, th);
          i.ndst = 1;
          return true;
        case v_st:
          i.src[1] = gpr(1, th);      // value
          i.src[0] = gpr(41, false);  // address
          i.offset = sext(bits(w, 9, 13) << 8 | bits(w, 32, 39), 13);
          i.size = uint8_t(bits(w, 24, 31));
          i.nsrc = 2;
          return true;
        case v_stc:
          i.src[0] = gpr(1, th);
          i.size = uint8_t(bits(w, 24, 26));
          i.dst[0].kind = ir3_operand::immed;
          i.dst[0].value = int32_t(bits(w, 32, 39));
          i.dst[0].r = bit(w, 40);
          i.nsrc = 1;
          return true;
        case v_resinfo:
          i.dims = uint8_t(bits(w, 9, 10) + 1);
          i.dst[0] = gpr(32, th);
          i.ndst = 1;
          i.src[3] = cat6src(41, bit(w, 53));
          return true;
        case v_atomic_l:
        case v_atomic_g:
          i.dims = uint8_t(bits(w, 9, 10) + 1);
          i.typed = bit(w, 11);
          i.type_size = uint8_t(bits(w, 12, 13) + 1);
          i.src[0] = cat6src(14, bit(w, 22));
          i.src[1] = cat6src(24, bit(w, 23));
          i.dst[0] = gpr(32, false);
          i.ndst = 1;
          i.nsrc = 2;
          return true;
        case v_ldc:
        case v_ldc_k:
        case v_getid:
        case v_ibo_1src:
        case v_ibo_ls:
        case v_atomic_b: {
          i.base = uint8_t(bits(w, 1, 3));
          i.mode = uint8_t(bits(w, 6, 7));
          i.bindless = bit(w, 8);
          i.type_size = uint8_t(bits(w, 12, 13) + 1);
          i.dims = uint8_t(bits(w, 9, 10) + 1);
          i.typed = bit(w, 11);
          const bool direct = i.mode == 0;
          if (var == v_ldc || var == v_ldc_k) {
            i.src[0] = cat6src(41, direct);      // UBO index
            i.src[1] = cat6src(24, bit(w, 23));  // offset
            i.offset = int32_t(bits(w, 9, 10));  // OFFSET (vec4 component)
            i.uniform = bit(w, 11);
            i.nsrc = 2;
            if (var == v_ldc) {
              i.dst[0] = gpr(32, false);
              i.ndst = 1;
            } else {
              i.size = uint8_t(bits(w, 32, 39) + 1);
            }
            return true;
          }
          if (var == v_getid) {
            i.dst[0] = gpr(32, th);
            i.ndst = 1;
            return true;
          }
          i.src[3] = cat6src(41, direct);  // IBO/SSBO slot
          if (var == v_ibo_1src) {
            i.dst[0] = gpr(32, false);
            i.ndst = 1;
            return true;
          }
          i.src[0] = gpr(32, var == v_ibo_ls && th);  // value (stib) / dst (ldib)
          i.src[1] = gpr(24, false);                  // coordinates
          i.nsrc = 2;
          if (var == v_ibo_ls) {
            i.has_offset = bit(w, 23);
            i.offset = int32_t(bits(w, 4, 5) << 5 | bits(w, 54, 58));
            if (!i.has_offset && i.offset != 0)
              return fail("an IBO offset without HAS_OFFSET (bits 4-5, 54-58)");
            if (i.op == ir3_op::ldib_b) {
              i.dst[0] = i.src[0];
              i.ndst = 1;
            }
          }
          return true;
        }
        case v_shfl:
          i.shfl_mode = uint8_t(bits(w, 45, 47));
          if (i.shfl_mode == 0 || i.shfl_mode == 4 || i.shfl_mode == 5)
            return fail("a shfl mode of no known kind");
          i.dst[0] = gpr(32, th);
          i.ndst = 1;
          i.src[0] = gpr(1, th);
          i.src[1] = cat6src(24, bit(w, 23));
          i.nsrc = 2;
          return true;
        default: return fail("cat6 field layout missing");
      }
    }
    default:  // 7
      i.ss = bit(w, 44);
      i.wr = bit(w, 51);
      i.rd = bit(w, 52);
      i.l = bit(w, 53);
      i.g = bit(w, 54);
      return true;
  }
}

const char *const swiz = "xyzw";

std::string reg_text(uint16_t num, bool half) {
  char b[32];
  const unsigned n = num >> 2, c = num & 3;
  if (n == 61)
    snprintf(b, sizeof b, "%sa0.%c", half ? "h" : "", swiz[c]);
  else if (n == 62)
    snprintf(b, sizeof b, "%sp0.%c", half ? "h" : "", swiz[c]);
  else
    snprintf(b, sizeof b, "%sr%u.%c", half ? "h" : "", n, swiz[c]);
  return b;
}
std::string const_text(uint16_t num, bool half) {
  return std::string(half ? "h" : "") + "c" + std::to_string(num >> 2) + "." + swiz[num & 3];
}
std::string rel_text(char file, int32_t off, bool half, bool zero_plain) {
  std::string s = std::string(half ? "h" : "") + file + "<a0.x";
  if (off != 0 || !zero_plain) s += " + " + std::to_string(off);
  return s + ">";
}
const char *absneg_text(const ir3_operand &o) {
  return o.neg && o.abs ? "(absneg)" : o.neg ? "(neg)" : o.abs ? "(abs)" : "";
}
const char *const flut_text[] = {"(0.0)",     "(0.5)",        "(1.0)",      "(2.0)",
                                 "(e)",       "(pi)",         "(1/pi)",     "(1/log2(e))",
                                 "(log2(e))", "(1/log2(10))", "(log2(10))", "(4.0)"};

// #multisrc display (ir3-common.xml).
std::string multisrc_text(const ir3_operand &o) {
  const std::string r = o.r ? "(r)" : "";
  switch (o.kind) {
    case ir3_operand::gpr:
      return std::string(o.last ? "(last)" : "") + absneg_text(o) + r + reg_text(o.num, o.half);
    case ir3_operand::constant: return absneg_text(o) + r + const_text(o.num, o.half);
    case ir3_operand::immed:
      if (o.flut)
        return absneg_text(o) + r + (o.half ? "h" : "") +
               (o.value < 12 ? std::string(flut_text[o.value]) : std::to_string(o.value));
      if (o.half) return absneg_text(o) + r + "h(" + std::to_string(o.value) + ")";
      return absneg_text(o) + r + std::to_string(o.value);
    case ir3_operand::rel_gpr: return absneg_text(o) + r + rel_text('r', o.value, o.half, true);
    case ir3_operand::rel_const: return absneg_text(o) + r + rel_text('c', o.value, o.half, true);
    default: return "?";
  }
}

// #cat3-src display.
std::string cat3src_text(const ir3_operand &o) {
  switch (o.kind) {
    case ir3_operand::gpr: return std::string(o.last ? "(last)" : "") + reg_text(o.num, o.half);
    case ir3_operand::constant: return const_text(o.num, o.half);
    case ir3_operand::immed: return std::to_string(uint32_t(o.value));
    case ir3_operand::rel_gpr: return rel_text('r', o.value, o.half, false);
    case ir3_operand::rel_const: return rel_text('c', o.value, o.half, false);
    default: return "?";
  }
}

std::string float_text(float f) {
  char b[64];
  snprintf(b, sizeof b, "%f", f);
  return b;
}
float half_to_float(uint16_t h) {
  const uint32_t s = uint32_t(h >> 15) << 31, e = h >> 10 & 0x1f, m = h & 0x3ff;
  uint32_t u;
  if (e == 0) {
    float f = float(m) * (1.0f / 16777216.0f);
    memcpy(&u, &f, 4);
    u |= s;
  } else if (e == 31) {
    u = s | 0x7f800000u | m << 13;
  } else {
    u = s | (e + 112) << 23 | m << 13;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// #cat1-immed-src display.
std::string cat1_immed_text(uint8_t src_type, uint32_t v) {
  char b[32];
  switch (src_type) {
    case ir3_f16: return "h(" + float_text(half_to_float(uint16_t(v))) + ")";
    case ir3_f32: {
      float f;
      memcpy(&f, &v, 4);
      return "(" + float_text(f) + ")";
    }
    case ir3_u32:
      if (v > 0x1000) {
        snprintf(b, sizeof b, "0x%x", v);
        return b;
      }
      return std::to_string(v);
    case ir3_s16: return std::to_string(sext(v & 0xffff, 16));
    case ir3_s32: return std::to_string(int32_t(v));
    default: return std::to_string(v);
  }
}

std::string cat1_src_text(const ir3_instr &i) {
  const ir3_operand &s = i.src[0];
  const std::string r = s.r ? "(r)" : "";
  switch (s.kind) {
    case ir3_operand::immed: return cat1_immed_text(i.src_type, uint32_t(s.value));
    case ir3_operand::constant: return r + const_text(s.num, s.half);
    case ir3_operand::gpr: return std::string(s.last ? "(last)" : "") + r + reg_text(s.num, s.half);
    case ir3_operand::rel_gpr: return r + rel_text('r', s.value, s.half, true);
    default: return r + rel_text('c', s.value, s.half, true);
  }
}

std::string cat1_dst_text(const ir3_instr &i) {
  const ir3_operand &d = i.dst[0];
  if (d.kind == ir3_operand::rel_gpr) {
    std::string s = std::string(d.half ? "h" : "") + "r<a0.x";
    if (d.value) s += " + " + std::to_string(d.value);
    return s + ">";
  }
  return reg_text(d.num, d.half);
}

const char *const round_text[] = {"", "(even)", "(pos_infinity)", "(neg_infinity)"};
const char *const cond_text[] = {"lt", "le", "gt", "ge", "eq", "ne", "6", "7"};
const char *const wrmask_text[] = {"",  "x",  "y",  "xy",  "z",  "xz",  "yz",  "xyz",
                                   "w", "xw", "yw", "xyw", "zw", "xzw", "yzw", "xyzw"};
const char *const mode_text[] = {"imm", "uniform", "nonuniform", "3"};

std::string cat6src_text(const ir3_operand &o) {
  if (o.kind == ir3_operand::immed) return std::to_string(o.value);
  return "r" + std::to_string(o.num >> 2) + "." + swiz[o.num & 3];
}
std::string offset_text(int32_t v) {
  if (v == 0) return "";
  return (v > 0 ? "+" : "") + std::to_string(v);
}
std::string uoffset_text(int32_t v) { return v ? "+" + std::to_string(v) : ""; }

}  // namespace

const char *ir3_op_name(ir3_op op) { return op < ir3_op::count ? op_names[int(op)] : "?"; }
int ir3_op_category(ir3_op op) { return op < ir3_op::count ? op_cats[int(op)] : -1; }

const char *ir3_type_name(uint8_t t) {
  static const char *const n[] = {"f16", "f32", "u16", "u32", "s16", "s32", "u8", "u8_32"};
  return n[t & 7];
}

std::string ir3_word_text(uint64_t word) {
  char b[40];
  snprintf(b, sizeof b, "0x%08x_%08x", uint32_t(word >> 32), uint32_t(word));
  return b;
}

bool ir3_decode(uint64_t word, ir3_instr *out, std::string *why) {
  const table &t = encodings();
  const encoding *match = nullptr;
  for (const encoding &e : t.enc) {
    if ((word & e.mask) != e.match) continue;
    if (match) {
      if (why)
        *why = std::string("two encodings match (") + op_names[int(match->op)] + ", " +
               op_names[int(e.op)] + ")";
      return false;
    }
    match = &e;
  }
  if (!match) {
    if (why) *why = "no a6xx encoding has these bits (category " + std::to_string(word >> 61) + ")";
    return false;
  }
  if (word & match->dontcare) {
    if (why)
      *why = std::string("dontcare bits set in ") + op_names[int(match->op)] + ": " +
             hex(word & match->dontcare);
    return false;
  }
  ir3_instr i;
  i.word = word;
  i.op = match->op;
  i.cat = op_cats[int(match->op)];
  decoder d{word, i, {}};
  if (!d.fields(match->var)) {
    if (why) *why = std::string(op_names[int(i.op)]) + ": " + d.why;
    return false;
  }
  *out = i;
  return true;
}

bool ir3_program_decode(const uint32_t *dwords, size_t count, const std::string &kernel,
                        std::vector<ir3_instr> *out, std::string *err) {
  out->clear();
  out->reserve(count);
  for (size_t n = 0; n < count; n++) {
    const uint64_t w = uint64_t(dwords[2 * n + 1]) << 32 | dwords[2 * n];
    ir3_instr i;
    std::string why;
    if (!ir3_decode(w, &i, &why)) {
      if (err)
        *err = "kernel " + kernel + ": instruction " + std::to_string(n) + " (" + ir3_word_text(w) +
               ") does not decode: " + why;
      return false;
    }
    out->push_back(i);
  }
  return true;
}

std::string ir3_render(const ir3_instr &i, int index, bool labels) {
  using o = ir3_op;
  std::string s;
  auto flag = [&](bool on, const char *t) {
    if (on) s += t;
  };
  const std::string name = ir3_op_name(i.op);
  const std::string rpt = i.repeat ? "(rpt" + std::to_string(i.repeat) + ")" : "";
  auto target = [&]() {
    if (labels) return "#l" + std::to_string(index + i.branch);
    return "#" + std::to_string(i.branch);
  };
  auto pred = [&](int k) { return std::string(i.inv[k] ? "!" : "") + "p0." + swiz[i.comp[k]]; };
  switch (i.cat) {
    case 0:
      flag(i.sy, "(sy)");
      flag(i.ss, "(ss)");
      switch (i.op) {
        case o::jump:
        case o::call:
        case o::bkt:
        case o::getone:
        case o::shps: flag(i.jp, "(jp)"); return s + name + " " + target();
        case o::getlast:
          flag(i.jp, "(jp)");
          return s + name + ".w" + std::to_string(2u << i.index) + " " + target();
        default: break;
      }
      flag(i.eq, "(eq)");
      flag(i.jp, "(jp)");
      switch (i.op) {
        case o::kill: return s + name + " " + pred(0);
        case o::brac: return s + name + "." + std::to_string(i.index) + " " + target();
        case o::brax: return s + name + " " + target();
        case o::br:
        case o::bany:
        case o::ball: return s + name + " " + pred(0) + ", " + target();
        case o::brao:
        case o::braa: return s + name + " " + pred(0) + ", " + pred(1) + ", " + target();
        default: return s + rpt + name;
      }
    case 1: {
      flag(i.sy, "(sy)");
      flag(i.ss, "(ss)");
      flag(i.jp, "(jp)");
      const std::string types = std::string(ir3_type_name(i.src_type)) + ir3_type_name(i.dst_type);
      if (i.op == o::swz || i.op == o::gat || i.op == o::sct) {
        flag(i.ul, "(ul)");
        s += name + "." + types + " " + round_text[i.round];
        std::vector<std::string> ops;
        auto r = [&](const ir3_operand &x) { return reg_text(x.num, x.half); };
        if (i.op == o::swz) ops = {r(i.dst[0]), r(i.dst[1]), r(i.src[0]), r(i.src[1])};
        if (i.op == o::gat) ops = {r(i.dst[0]), r(i.src[0]), r(i.src[1]), r(i.src[2]), r(i.src[3])};
        if (i.op == o::sct) ops = {r(i.dst[0]), r(i.dst[1]), r(i.dst[2]), r(i.dst[3]), r(i.src[0])};
        for (size_t k = 0; k < ops.size(); k++) s += (k ? ", " : "") + ops[k];
        return s;
      }
      if (i.op == o::movmsk) {
        flag(i.ul, "(ul)");
        return s + "movmsk.w" + std::to_string((i.repeat + 1) * 32) + " " + cat1_dst_text(i);
      }
      s += rpt;
      flag(i.ul, "(ul)");
      const uint64_t dst = (i.word >> 32) & 0xff;
      const std::string r = i.src[0].r ? "(r)" : "";
      if (dst == 0xf4 && i.src_type == ir3_s16 && i.dst_type == ir3_s16)
        return s + "mova " + round_text[i.round] + "a0.x, " + r + cat1_src_text(i);
      if (dst == 0xf5 && i.src_type == ir3_u16 && i.dst_type == ir3_u16)
        return s + "mova1 " + round_text[i.round] + "a1.x, " + r + cat1_src_text(i);
      s += i.src_type != i.dst_type ? "cov." : "mov.";
      return s + types + " " + round_text[i.round] + cat1_dst_text(i) + ", " + cat1_src_text(i);
    }
    case 2:
    case 4: {
      flag(i.sy, "(sy)");
      flag(i.ss, "(ss)");
      flag(i.jp, "(jp)");
      flag(i.sat, "(sat)");
      if (i.nop)
        s += "(nop" + std::to_string(i.nop) + ") ";
      else
        s += rpt;
      flag(i.ul, "(ul)");
      s += name;
      if (i.op == o::cmps_f || i.op == o::cmps_u || i.op == o::cmps_s || i.op == o::cmpv_f ||
          i.op == o::cmpv_u || i.op == o::cmpv_s)
        s += std::string(".") + cond_text[i.cond];
      s += " ";
      flag(i.ei, "(ei)");
      s += reg_text(i.dst[0].num, i.dst_half) + ", " + multisrc_text(i.src[0]);
      if (i.nsrc > 1) s += ", " + multisrc_text(i.src[1]);
      return s;
    }
    case 3: {
      flag(i.sy, "(sy)");
      flag(i.ss, "(ss)");
      flag(i.jp, "(jp)");
      flag(i.sat, "(sat)");
      const bool dp = i.op == o::dp2acc || i.op == o::dp4acc;
      if (i.nop || dp)
        s += "(nop" + std::to_string(i.nop) + ") ";
      else
        s += rpt;
      flag(i.ul, "(ul)");
      s += name;
      if (dp) {
        s += (i.index & 1) ? ".mixed" : ".unsigned";
        s += (i.index & 2) ? ".high" : ".low";
      }
      s += " " + reg_text(i.dst[0].num, i.dst_half) + ", ";
      auto r = [&](const ir3_operand &x) { return std::string(x.r && !i.nop && !dp ? "(r)" : ""); };
      auto n = [&](const ir3_operand &x) { return std::string(x.neg ? "(neg)" : ""); };
      if (dp)
        return s + cat3src_text(i.src[0]) + ", " + reg_text(i.src[1].num, false) + ", " +
               n(i.src[2]) + cat3src_text(i.src[2]);
      return s + n(i.src[0]) + r(i.src[0]) + cat3src_text(i.src[0]) + ", " + n(i.src[1]) +
             r(i.src[1]) + reg_text(i.src[1].num, i.src[1].half) + ", " + n(i.src[2]) +
             r(i.src[2]) + cat3src_text(i.src[2]);
    }
    case 5: {
      flag(i.sy, "(sy)");
      flag(i.jp, "(jp)");
      if (i.op == o::tcinv) return s + name;
      const std::string typ = std::string("(") + ir3_type_name(i.type) + ")";
      const std::string dst =
          typ + "(" + wrmask_text[i.wrmask] + ")" + reg_text(i.dst[0].num, i.dst_half);
      auto src = [&](int k) { return ", " + reg_text(i.src[k].num, i.src[k].half); };
      if (i.op == o::brcst_active)
        return s + name + ".w" + std::to_string(2u << i.cluster_w) + " " + dst + src(0);
      if (i.op >= o::quad_shuffle_brcst && i.op <= o::quad_shuffle_diag) {
        s += name + " " + dst + src(0);
        if (i.num_src > 1) s += src(1);
        return s;
      }
      s += name;
      flag(i.tex3d, ".3d");
      flag(i.array, ".a");
      flag(i.o, ".o");
      flag(i.p, ".p");
      if (i.sv) s += i.op == o::isam ? ".v" : ".s";
      if (i.s2en) {
        if (i.desc_mode < 6) s += ".s2en";
        static const bool uniform[8] = {true, true, false, false, false, true, false, false};
        static const bool nonuniform[8] = {false, false, true, true, true, false, false, false};
        static const bool bindless[8] = {false, true, true, true, false, true, true, true};
        flag(uniform[i.desc_mode], ".uniform");
        flag(nonuniform[i.desc_mode], ".nonuniform");
        if (bindless[i.desc_mode]) s += ".base" + std::to_string(i.base);
      }
      flag(i.one_d, ".1d");
      const bool has_type = i.op != o::dsxpp_1 && i.op != o::dsypp_1;
      s += " " + (has_type ? typ : std::string()) + "(" + wrmask_text[i.wrmask] + ")" +
           reg_text(i.dst[0].num, i.dst_half);
      if (i.num_src > 0) s += src(0);
      if (i.o || i.num_src > 1)
        s += src(1);
      else if (i.imm_offset)
        s += uoffset_text(i.offset);
      const bool has_samp =
          !(i.op == o::getsize || i.op == o::getbuf || i.op == o::getpos || i.op == o::getinfo ||
            i.op == o::dsx || i.op == o::dsy || i.op == o::dsxpp_1 || i.op == o::dsypp_1 ||
            i.op == o::rgetpos || i.op == o::rgetinfo);
      const bool has_tex = !(i.op == o::dsx || i.op == o::dsy || i.op == o::dsxpp_1 ||
                             i.op == o::dsypp_1 || i.op == o::rgetpos || i.op == o::rgetinfo);
      if (i.s2en) {
        const bool a1 = i.desc_mode == 1 || i.desc_mode == 3 || i.desc_mode == 7;
        if (i.desc_mode < 6) {
          s += ", " + std::string(i.desc_mode == 0 || i.desc_mode == 4 ? "h" : "") +
               reg_text(i.src[2].num, false);
        } else if (a1) {
          if (has_samp) s += ", s#" + std::to_string(uint32_t((i.word >> 21) & 0xff));
        } else {
          if (has_samp) s += ", s#" + std::to_string(i.samp);
          if (has_tex) s += ", t#" + std::to_string(i.tex);
        }
        if (a1) s += ", a1.x";
        return s;
      }
      if (has_samp) s += ", s#" + std::to_string(i.samp);
      if (has_tex) s += ", t#" + std::to_string(i.tex);
      return s;
    }
    case 6: {
      flag(i.sy, "(sy)");
      flag(i.jp, "(jp)");
      const std::string typ = ir3_type_name(i.type);
      const bool th = ir3_type_half(i.type);
      const std::string h = th ? "h" : "";
      auto g = [&](const ir3_operand &x) { return reg_text(x.num, false); };
      switch (i.op) {
        case o::ldg:
          return s + name + "." + typ + " " + h + g(i.dst[0]) + ", g[" + g(i.src[0]) +
                 offset_text(i.offset) + "], " + std::to_string(i.size);
        case o::ldg_a:
        case o::stg_a: {
          std::string addr = "g[" + g(i.src[0]) + "+";
          if (i.shift > 0)
            addr +=
                g(i.src[1]) + "<<" + std::to_string(i.shift + 2) + uoffset_text(i.offset) + "<<2]";
          else
            addr += "(" + g(i.src[1]) + uoffset_text(i.offset) + ")<<" +
                    std::to_string(i.shift + 2) + "]";
          if (i.op == o::ldg_a)
            return s + name + "." + typ + " " + h + g(i.dst[0]) + ", " + addr + ", " +
                   std::to_string(i.size);
          return s + name + "." + typ + " " + addr + ", " + h + g(i.src[2]) + ", " +
                 std::to_string(i.size);
        }
        case o::ldg_k:
        case o::stc: {
          const std::string c =
              i.dst[0].r ? "a1.x" + uoffset_text(i.dst[0].value) : std::to_string(i.dst[0].value);
          if (i.op == o::stc)
            return s + name + "." + typ + " c[" + c + "], " + g(i.src[0]) + ", " +
                   std::to_string(i.size);
          return s + name + "." + typ + " c[" + c + "], g[" + g(i.src[0]) + offset_text(i.offset) +
                 "], " + std::to_string(i.size);
        }
        case o::stg:
          return s + name + "." + typ + " g[" + g(i.src[0]) + offset_text(i.offset) + "], " + h +
                 g(i.src[2]) + ", " + std::to_string(i.size);
        case o::ldl:
        case o::ldlw:
        case o::ldp: {
          const char *space = i.op == o::ldp ? "p" : "l";
          return s + name + "." + typ + " " + (i.op == o::ldp ? h : "") + g(i.dst[0]) + ", " +
                 space + "[" + g(i.src[0]) + offset_text(i.offset) + "], " + std::to_string(i.size);
        }
        case o::ldlv:
          return s + name + "." + typ + " " + g(i.dst[0]) + ", l[" + std::to_string(i.offset) +
                 "], " + std::to_string(i.size);
        case o::stl:
        case o::stlw:
        case o::stp:
          return s + name + "." + typ + " " + (i.op == o::stp ? "p" : "l") + "[" + g(i.src[0]) +
                 offset_text(i.offset) + "], " + g(i.src[1]) + ", " + std::to_string(i.size);
        case o::resinfo:
          return s + name + "." + typ + "." + std::to_string(i.dims) + "d " + g(i.dst[0]) + ", g[" +
                 cat6src_text(i.src[3]) + "]";
        case o::ldc:
          return s + name + (i.uniform ? ".u" : "") + ".offset" + std::to_string(i.offset) + "." +
                 std::to_string(i.type_size) + "." + mode_text[i.mode] +
                 (i.bindless ? ".base" + std::to_string(i.base) : "") + " " + g(i.dst[0]) + ", " +
                 cat6src_text(i.src[1]) + ", " + cat6src_text(i.src[0]);
        case o::ldc_k:
          return s + "ldc." + std::to_string(i.size) + ".k." + mode_text[i.mode] +
                 (i.bindless ? ".base" + std::to_string(i.base) : "") + " c[a1.x], " +
                 cat6src_text(i.src[1]) + ", " + cat6src_text(i.src[0]);
        case o::getspid:
        case o::getwid:
        case o::getfiberid: return s + name + "." + typ + " " + g(i.dst[0]);
        case o::shfl: {
          static const char *const m[] = {"?", "xor", "up", "down", "?", "?", "rup", "rdown"};
          return s + name + "." + m[i.shfl_mode] + "." + typ + " " + h + g(i.dst[0]) + ", " + h +
                 g(i.src[0]) + ", " + cat6src_text(i.src[1]);
        }
        default: break;
      }
      const std::string typed = i.typed ? "typed" : "untyped";
      const std::string head = s + name + "." + typed + "." + std::to_string(i.dims) + "d.";
      if (i.op >= o::atomic_add && i.op <= o::atomic_xor)
        return head + typ + "." + std::to_string(i.type_size) + ".l " + g(i.dst[0]) + ", l[" +
               cat6src_text(i.src[0]) + "], " + cat6src_text(i.src[1]);
      if (i.op >= o::atomic_g_add && i.op <= o::atomic_g_xor)
        return head + (i.type == 6 ? "u64" : typ) + "." + std::to_string(i.type_size) + ".g " +
               g(i.dst[0]) + ", " + cat6src_text(i.src[0]) + ", " + cat6src_text(i.src[1]);
      const std::string tail = "." + std::to_string(i.type_size) + "." + mode_text[i.mode] +
                               (i.bindless ? ".base" + std::to_string(i.base) : "");
      if (i.op == o::resinfo_b || i.op == o::resbase)
        return head + typ + tail + " " + g(i.dst[0]) + ", " + cat6src_text(i.src[3]);
      if (i.op == o::stib_b || i.op == o::ldib_b)
        return head + typ + tail + " " + (th ? "h" : "") + g(i.src[0]) + ", " + g(i.src[1]) +
               uoffset_text(i.offset) + ", " + cat6src_text(i.src[3]);
      return head + (i.type == 6 ? "u64" : typ) + tail + " " + g(i.src[0]) + ", " + g(i.src[1]) +
             ", " + cat6src_text(i.src[3]);
    }
    default:
      flag(i.sy, "(sy)");
      flag(i.ss, "(ss)");
      flag(i.jp, "(jp)");
      s += name;
      if (i.op == o::bar || i.op == o::fence) {
        flag(i.g, ".g");
        flag(i.l, ".l");
        flag(i.rd, ".r");
        flag(i.wr, ".w");
      } else if (i.op == o::sleep) {
        s += i.wr ? ".l" : ".s";
      } else if (i.op != o::icinv) {
        s += i.wr ? ".all" : ".shr";
      }
      return s;
  }
}

}  // namespace capgraph::adreno
