// RDNA3 emulator, execution: runs a decoded kernel's workgroups wave by wave. See rdna3_emu.h for
// what is modelled and the sources; section numbers refer to AMD's "RDNA3 Instruction Set
// Architecture Reference Guide".
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <thread>

#include "rdna3_isa.h"

namespace capgraph::amd {

void rdna3_counts::add(const rdna3_counts &o) {
  waves += o.waves, salu += o.salu, smem += o.smem, branches += o.branches, waits += o.waits;
  valu += o.valu, valu_fma += o.valu_fma, fma_lanes += o.fma_lanes;
  vmem_load_bytes += o.vmem_load_bytes, vmem_store_bytes += o.vmem_store_bytes,
      lds_bytes += o.lds_bytes;
  smem_bytes += o.smem_bytes;
}

namespace {

using op = rdna3_op;
using op_facts = rdna3_op_facts;
std::string hex(uint64_t v) { return rdna3_hex(v); }
bool vopc_op(op o) { return rdna3_is_vopc(o); }

float f(uint32_t u) { return std::bit_cast<float>(u); }
uint32_t u(float x) { return std::bit_cast<uint32_t>(x); }

// Half precision conversions (IEEE binary16, round to nearest even), for v_cvt_f16_f32 and back.
uint32_t f32_to_f16(float x) {
  const uint32_t b = u(x), sign = (b >> 16) & 0x8000;
  const int32_t e = int32_t((b >> 23) & 0xff);
  uint32_t m = b & 0x7fffff;
  if (e == 255) return sign | 0x7c00 | (m ? 0x200 : 0);
  int32_t he = e - 127 + 15;
  if (he >= 31) return sign | 0x7c00;
  if (he <= 0) {
    if (he < -10) return sign;
    m |= 0x800000;
    const uint32_t shift = uint32_t(14 - he);
    uint32_t hm = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (hm & 1))) hm++;
    return sign | hm;
  }
  uint32_t hm = m >> 13, rem = m & 0x1fff;
  uint32_t h = sign | (uint32_t(he) << 10) | hm;
  if (rem > 0x1000 || (rem == 0x1000 && (hm & 1))) h++;
  return h;
}
float f16_to_f32(uint32_t h) {
  const uint32_t sign = (h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) return std::bit_cast<float>(sign) + (sign ? -1.0f : 1.0f) * std::ldexp(float(m), -24);
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000 | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

int32_t exponent(float x) { return int32_t((u(x) >> 23) & 0xff); }

struct wave {
  uint32_t s[128] = {};  // SGPRs 0-105, VCC 106-107, NULL 124, M0 125, EXEC 126-127
  bool scc = false;
  uint32_t *v = nullptr;  // VGPR r of lane l at v[r * 32 + l]
  int32_t pc = 0;
  bool done = false, at_barrier = false;
};

constexpr uint16_t kVcc = 106, kNull = 124, kExec = 126;
constexpr uint64_t kMaxSteps = 1ull << 31;  // per wave: a kernel that loops forever is an error

// Inline constants and other scalar codes (ch. 3.6): the 32-bit value.
uint32_t scalar_read(const wave &w, uint32_t c, uint32_t lit) {
  if (c < 128) return c == kNull ? 0 : w.s[c];
  if (c <= 192) return c - 128;
  if (c <= 208) return uint32_t(-int32_t(c - 192));
  switch (c) {
    case 240: return 0x3f000000;  // 0.5
    case 241: return 0xbf000000;
    case 242: return 0x3f800000;  // 1.0
    case 243: return 0xbf800000;
    case 244: return 0x40000000;  // 2.0
    case 245: return 0xc0000000;
    case 246: return 0x40800000;  // 4.0
    case 247: return 0xc0800000;
    case 248: return 0x3e22f983;  // 1 / (2 pi)
    case 253: return w.scc;
    case 255: return lit;
  }
  return 0;
}
// 64-bit operands: integer inline constants sign-extend, a literal zero-extends.
uint64_t scalar_read64(const wave &w, uint32_t c, uint32_t lit) {
  if (c < 128) return c == kNull ? 0 : (w.s[c] | uint64_t(w.s[c + 1]) << 32);
  if (c >= 128 && c <= 208) return uint64_t(int64_t(int32_t(scalar_read(w, c, lit))));
  return scalar_read(w, c, lit);
}
void scalar_write(wave &w, uint32_t c, uint32_t v) {
  if (c != kNull) w.s[c] = v;
}
void scalar_write64(wave &w, uint32_t c, uint64_t v) {
  if (c == kNull) return;
  w.s[c] = uint32_t(v);
  w.s[c + 1] = uint32_t(v >> 32);
}

struct run_state {
  const rdna3_dispatch &d;
  const rdna3_program &p;
  const rdna3_region_find &find;
  rdna3_counts &n;
  std::string &err;
  rdna3_region cache[4];
  unsigned cache_next = 0;
  std::vector<uint8_t> lds;
  uint32_t lds_size = 0;

  bool fail(const rdna3_inst &in, const std::string &why) {
    if (err.empty())
      err = "kernel '" + d.kernel + "': " + rdna3_op_name(in.op) + " at offset " + hex(in.offset) +
            ": " + why;
    return false;
  }
  // Host bytes behind [a, a + n): a small cache of the fake's regions in front of its lookup.
  uint8_t *mem(uint64_t a, uint32_t n) {
    for (const rdna3_region &r : cache)
      if (r.cpu && a >= r.gpu && a - r.gpu + n <= r.size) return r.cpu + (a - r.gpu);
    rdna3_region r = find(a);
    if (!r.cpu || a - r.gpu + n > r.size) return nullptr;
    cache[cache_next++ % 4] = r;
    return r.cpu + (a - r.gpu);
  }
};

// A VALU source for every lane: VGPR rows are used in place, scalars broadcast; abs and neg act
// on the sign bit (ch. 6.2.1 "Input modifiers": they apply to floating-point operands, and
// capgraph's code sets them only on those).
const uint32_t *lanes_read(const wave &w, const rdna3_inst &in, uint16_t c, int i, uint32_t *tmp) {
  const bool mods = ((in.abs | in.neg) >> i) & 1;
  if (c >= 256 && !mods) return w.v + size_t(c - 256) * 32;
  const uint32_t set = ((in.abs >> i) & 1) ? 0x7fffffffu : 0xffffffffu,
                 flip = ((in.neg >> i) & 1) ? 0x80000000u : 0;
  if (c >= 256) {
    const uint32_t *r = w.v + size_t(c - 256) * 32;
    for (int l = 0; l < 32; l++) tmp[l] = (r[l] & set) ^ flip;
  } else {
    const uint32_t x = (scalar_read(w, c, in.lit) & set) ^ flip;
    for (int l = 0; l < 32; l++) tmp[l] = x;
  }
  return tmp;
}
// Source k of lane l as a 16-bit float operand (ch. 6.2.3, 3.6): the half opsel names, abs and
// neg on the half's own sign bit (lanes_read's modifiers act on bit 31), inline float constants
// as halves (0.5 is 0x3800).
float half_source(const wave &w, const rdna3_inst &in, int k, int l) {
  static const uint16_t kHalfInline[9] = {0x3800, 0xb800, 0x3c00, 0xbc00, 0x4000,
                                          0xc000, 0x4400, 0xc400, 0x3118};
  const uint16_t c = in.src[k];
  uint32_t h;
  if (c >= 240 && c <= 248)
    h = kHalfInline[c - 240];
  else
    h = ((c >= 256 ? w.v[size_t(c - 256) * 32 + l] : scalar_read(w, c, in.lit)) >>
         (((in.opsel >> k) & 1) ? 16 : 0)) &
        0xffff;
  if ((in.abs >> k) & 1) h &= 0x7fff;
  if ((in.neg >> k) & 1) h ^= 0x8000;
  return f16_to_f32(h);
}
// 64-bit source of lane l.
struct src64 {
  const uint32_t *lo = nullptr, *hi = nullptr;
  uint64_t k = 0;
  uint64_t at(int l) const { return lo ? (lo[l] | uint64_t(hi[l]) << 32) : k; }
};
src64 lanes_read64(const wave &w, const rdna3_inst &in, uint16_t c) {
  src64 s;
  if (c >= 256) {
    s.lo = w.v + size_t(c - 256) * 32;
    s.hi = s.lo + 32;
  } else {
    s.k = scalar_read64(w, c, in.lit);
  }
  return s;
}

// Output modifiers for float results (ch. 6.2.2): omod scales, clamp saturates to [0, 1].
float out_mod(const rdna3_inst &in, float x) {
  if (in.omod == 1)
    x *= 2;
  else if (in.omod == 2)
    x *= 4;
  else if (in.omod == 3)
    x *= 0.5f;
  if (in.clamp) x = std::isnan(x) ? 0.0f : std::fmin(std::fmax(x, 0.0f), 1.0f);
  return x;
}

bool float_compare(op o, float a, float b) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (o) {
    // clang-format off: one row per compare
// f16 compares are the f32 ones on the widened halves (exact: every f16 is an f32); LLVM spells
// the always-true f16 compare v_cmp_t_f16.
#define C(name, expr)                                                                              \
  case op::v_cmp_##name##_f32: case op::v_cmpx_##name##_f32: case op::v_cmp_##name##_f16:          \
  case op::v_cmpx_##name##_f16: return expr;
    C(f, false) C(lt, a < b) C(eq, a == b) C(le, a <= b) C(gt, a > b) C(lg, !un && a != b) C(ge, a >= b)
    C(o, !un) C(u, un) C(nge, !(a >= b)) C(nlg, un || a == b) C(ngt, !(a > b)) C(nle, !(a <= b))
    C(neq, !(a == b)) C(nlt, !(a < b))
#undef C
    case op::v_cmp_tru_f32: case op::v_cmpx_tru_f32: case op::v_cmp_t_f16: case op::v_cmpx_t_f16: return true;
    default: return false;
  }
}
template <typename T>
bool int_compare(int kind, T a, T b) {  // kind: 0 f, 1 lt, 2 eq, 3 le, 4 gt, 5 ne, 6 ge, 7 t
  switch (kind) {
    case 0: return false;
    case 1: return a < b;
    case 2: return a == b;
    case 3: return a <= b;
    case 4: return a > b;
    case 5: return a != b;
    case 6: return a >= b;
    default: return true;
  }
}
// v_cmp_class_f32's mask bits (ch. 16, V_CMP_CLASS_F32): 0 sNaN, 1 qNaN, 2 -inf, 3 -normal,
// 4 -denormal, 5 -0, 6 +0, 7 +denormal, 8 +normal, 9 +inf.
bool float_class(float x, uint32_t mask) {
  const uint32_t b = u(x);
  const bool neg = b >> 31;
  int bit;
  switch (std::fpclassify(x)) {
    case FP_NAN: bit = (b & 0x400000) ? 1 : 0; break;
    case FP_INFINITE: bit = neg ? 2 : 9; break;
    case FP_NORMAL: bit = neg ? 3 : 8; break;
    case FP_SUBNORMAL: bit = neg ? 4 : 7; break;
    default: bit = neg ? 5 : 6; break;
  }
  return (mask >> bit) & 1;
}

float float_min(float a, float b) { return std::fmin(a, b); }
float float_max(float a, float b) { return std::fmax(a, b); }
float float_med3(float a, float b, float c) {
  if (std::isnan(a) || std::isnan(b) || std::isnan(c)) return float_min(float_min(a, b), c);
  return std::fmax(std::fmin(a, b), std::fmin(std::fmax(a, b), c));
}
template <typename T>
T med3(T a, T b, T c) { return std::max(std::min(a, b), std::min(std::max(a, b), c)); }

// V_CLS_I32 / S_CLS_I32: how many leading bits equal the sign bit (counting it); -1 when all do.
uint32_t sign_bits(uint32_t x) {
  const uint32_t y = (x >> 31) ? ~x : x;
  return y ? uint32_t(std::countl_zero(y)) : uint32_t(-1);
}

int32_t cvt_i32(float x) {  // saturating, NaN -> 0 (ch. 16, V_CVT_I32_F32)
  if (std::isnan(x)) return 0;
  if (x >= 2147483648.0f) return INT32_MAX;
  if (x < -2147483648.0f) return INT32_MIN;
  return int32_t(x);
}
uint32_t cvt_u32(float x) {
  if (std::isnan(x) || x <= 0) return 0;
  if (x >= 4294967296.0f) return UINT32_MAX;
  return uint32_t(x);
}

// v_div_scale_f32, v_div_fmas_f32 and v_div_fixup_f32: the three steps of IEEE division
// (ch. 16 pseudocode). div_scale scales the denominator or the numerator by 2^64 where the
// quotient or an intermediate would leave the normal range, and sets VCC when the result must be
// scaled back, which div_fmas does (by 2^64 if its S2, the scaled quotient, is >= 2, else 2^-64).
// The pseudocode tests 1/S1 for a denormal in double precision, where no float's reciprocal is one.
float div_scale(float s0, float s1, float s2, bool *vcc) {
  *vcc = false;
  if (s2 == 0 || s1 == 0) return std::nanf("");
  if (exponent(s2) - exponent(s1) >= 96) {  // N/D near the largest float: scale the denominator
    *vcc = true;
    return s0 == s1 ? std::ldexp(s0, 64) : s0;
  }
  if (std::fpclassify(s1) == FP_SUBNORMAL) return std::ldexp(s0, 64);
  const bool rcp_den = std::fpclassify(1.0 / double(s1)) == FP_SUBNORMAL, q_den = std::fpclassify(s2 / s1) == FP_SUBNORMAL;
  if (rcp_den && q_den) {
    *vcc = true;
    return s0 == s1 ? std::ldexp(s0, 64) : s0;
  }
  if (rcp_den) return std::ldexp(s0, -64);
  if (q_den) {  // a denormal quotient: scale the numerator
    *vcc = true;
    return s0 == s2 ? std::ldexp(s0, 64) : s0;
  }
  if (exponent(s2) <= 23) return std::ldexp(s0, 64);  // a tiny numerator: scale both
  return s0;
}
// The fused multiply-add and the scaling back round once, as the hardware's single operation.
float div_fmas(float a, float b, float c, bool vcc) {
  if (!vcc) return std::fma(a, b, c);
  const double r = std::fma(double(a), double(b), double(c));
  return float(std::ldexp(r, exponent(c) > 127 ? 64 : -64));
}
// A NaN quotient here comes from an intermediate that overflowed: the result is the overflow.
float div_fixup(float q, float den, float num) {
  const bool sign = (u(den) ^ u(num)) >> 31;
  if (std::isnan(num)) return num;
  if (std::isnan(den)) return den;
  if (den == 0 && num == 0) return std::nanf("");
  if (std::isinf(den) && std::isinf(num)) return std::nanf("");
  if (den == 0 || std::isinf(num)) return sign ? -INFINITY : INFINITY;
  if (std::isinf(den) || num == 0) return sign ? -0.0f : 0.0f;
  if (exponent(num) - exponent(den) < -150) return sign ? -0.0f : 0.0f;  // underflow
  if (std::isnan(q)) return sign ? -INFINITY : INFINITY;                  // overflow
  return sign ? -std::fabs(q) : std::fabs(q);
}

bool is_fma(op o) {
  return o == op::v_fma_f32 || o == op::v_fmac_f32 || o == op::v_fmamk_f32 || o == op::v_fmaak_f32 ||
         o == op::v_fma_f16 || o == op::v_fmac_f16;
}

// The 32-bit two-source VALU operations VOPD pairs and VOP2/VOP3 share: d = op(a, b) (c: the old
// destination / third source).
// V_DOT2ACC_F32_F16 (ch. 16): D.f32 = S0.f16[0] * S1.f16[0] + S0.f16[1] * S1.f16[1] + D.f32. The
// f16 products are exact in double; the sum is rounded once to f32 (as a fused dot product; the
// hardware's intermediate rounding was not compared).
float dot2_f16(uint32_t a, uint32_t b, float acc) {
  return float(double(f16_to_f32(a & 0xffff)) * f16_to_f32(b & 0xffff) +
               double(f16_to_f32(a >> 16)) * f16_to_f32(b >> 16) + double(acc));
}
bool simple_valu(op o, uint32_t a, uint32_t b, uint32_t c, uint32_t k, bool vcc, uint32_t *d) {
  switch (o) {
    case op::v_mov_b32: *d = a; return true;
    case op::v_add_f32: *d = u(f(a) + f(b)); return true;
    case op::v_sub_f32: *d = u(f(a) - f(b)); return true;
    case op::v_subrev_f32: *d = u(f(b) - f(a)); return true;
    case op::v_mul_f32: *d = u(f(a) * f(b)); return true;
    case op::v_min_f32: *d = u(float_min(f(a), f(b))); return true;
    case op::v_max_f32: *d = u(float_max(f(a), f(b))); return true;
    case op::v_fmac_f32: *d = u(std::fma(f(a), f(b), f(c))); return true;
    case op::v_dot2acc_f32_f16: *d = u(dot2_f16(a, b, f(c))); return true;
    case op::v_fmamk_f32: *d = u(std::fma(f(a), f(k), f(b))); return true;
    case op::v_fmaak_f32: *d = u(std::fma(f(a), f(b), f(k))); return true;
    case op::v_cndmask_b32: *d = vcc ? b : a; return true;
    case op::v_add_nc_u32: *d = a + b; return true;
    case op::v_lshlrev_b32: *d = b << (a & 31); return true;
    case op::v_and_b32: *d = a & b; return true;
    default: return false;
  }
}

bool valu_run(run_state &st, wave &w, const rdna3_inst &in) {
  const uint32_t exec = w.s[kExec];
  uint32_t t0[32], t1[32], t2[32];
  const op o = in.op;
  st.n.valu++;
  if (is_fma(o)) st.n.valu_fma++, st.n.fma_lanes += uint64_t(std::popcount(exec));
// clang-format off: a loop header used as a statement prefix
#define LANES for (int l = 0; l < 32; l++) if ((exec >> l) & 1)
  // clang-format on
  if (in.enc == VOPD) {
    // Both halves read their sources before either writes (ch. 6.5).
    st.n.valu++;
    if (is_fma(in.op_y)) st.n.valu_fma++, st.n.fma_lanes += uint64_t(std::popcount(exec));
    uint32_t ty0[32], ty1[32], rx[32], ry[32];
    const uint32_t *ax = lanes_read(w, in, in.src[0], 3, t0),
                   *bx = lanes_read(w, in, in.src[1], 3, t1);
    const uint32_t *ay = lanes_read(w, in, in.src_y[0], 3, ty0),
                   *by = lanes_read(w, in, in.src_y[1], 3, ty1);
    const uint32_t *cx = w.v + size_t(in.dst - 256) * 32, *cy = w.v + size_t(in.dst_y - 256) * 32;
    const uint32_t vcc = w.s[kVcc];
    LANES {
      simple_valu(in.op, ax[l], bx[l], cx[l], in.lit, (vcc >> l) & 1, &rx[l]);
      simple_valu(in.op_y, ay[l], by[l], cy[l], in.lit, (vcc >> l) & 1, &ry[l]);
    }
    uint32_t *dx = w.v + size_t(in.dst - 256) * 32, *dy = w.v + size_t(in.dst_y - 256) * 32;
    LANES {
      dx[l] = rx[l];
      dy[l] = ry[l];
    }
    return true;
  }
  if (vopc_op(o)) {
    const op_facts &fa = rdna3_facts(o);
    const bool cmpx = fa.cmpx;
    const int kind = fa.cmp_kind;
    uint32_t mask = 0;
    if (fa.cmp_type == 'I' || fa.cmp_type == 'U') {
      const src64 a = lanes_read64(w, in, in.src[0]), b = lanes_read64(w, in, in.src[1]);
      if (fa.cmp_type == 'I') {
        LANES mask |= uint32_t(int_compare<int64_t>(kind, int64_t(a.at(l)), int64_t(b.at(l)))) << l;
      } else {
        LANES mask |= uint32_t(int_compare<uint64_t>(kind, a.at(l), b.at(l))) << l;
      }
    } else {
      const uint32_t *a = lanes_read(w, in, in.src[0], 0, t0),
                     *b = lanes_read(w, in, in.src[1], 1, t1);
      const int s0 = (in.opsel & 1) ? 16 : 0,
                s1 = (in.opsel & 2) ? 16 : 0;  // 16-bit: the halves opsel names
      switch (fa.cmp_type) {
        case 'c': LANES mask |= uint32_t(float_class(f(a[l]), b[l])) << l; break;
        case 'f': LANES mask |= uint32_t(float_compare(o, f(a[l]), f(b[l]))) << l; break;
        case 'e':
          LANES mask |=
              uint32_t(float_compare(o, half_source(w, in, 0, l), half_source(w, in, 1, l))) << l;
          break;
        case 'i':
          LANES mask |= uint32_t(int_compare<int32_t>(kind, int32_t(a[l]), int32_t(b[l]))) << l;
          break;
        case 'u': LANES mask |= uint32_t(int_compare<uint32_t>(kind, a[l], b[l])) << l; break;
        case 'h':
          LANES mask |=
              uint32_t(int_compare<int16_t>(kind, int16_t(a[l] >> s0), int16_t(b[l] >> s1))) << l;
          break;
        default:
          LANES mask |=
              uint32_t(int_compare<uint16_t>(kind, uint16_t(a[l] >> s0), uint16_t(b[l] >> s1)))
              << l;
          break;
      }
    }
    // Inactive lanes read 0 (ch. 6.6 "Vector compare"); cmpx writes EXEC, the others an SGPR.
    if (cmpx)
      w.s[kExec] = mask;
    else
      scalar_write(w, in.sdst, mask);
    return true;
  }
  // One 32-bit destination row, written only for active lanes.
  uint32_t *d = in.dst >= 256 ? w.v + size_t(in.dst - 256) * 32 : nullptr;
  const uint32_t *a = lanes_read(w, in, in.src[0], 0, t0);
  const uint32_t *b = (in.enc == VOP1) ? nullptr : lanes_read(w, in, in.src[1], 1, t1);
  auto c_read = [&]() { return lanes_read(w, in, in.src[2], 2, t2); };
  auto mask_read = [&](uint16_t c) { return c == kVcc ? w.s[kVcc] : scalar_read(w, c, in.lit); };
  switch (o) {
    case op::v_nop: return true;
    case op::v_readfirstlane_b32: {
      const int l = exec ? std::countr_zero(exec) : 0;
      scalar_write(w, in.dst, a[l]);
      return true;
    }
    case op::v_readlane_b32: scalar_write(w, in.dst, a[b[0] & 31]); return true;
    case op::v_writelane_b32: d[b[0] & 31] = a[0]; return true;  // ignores EXEC (ch. 16)
    case op::v_cndmask_b32: {
      const uint32_t m = in.enc == VOP2 ? w.s[kVcc] : mask_read(in.src[2]);
      LANES d[l] = ((m >> l) & 1) ? b[l] : a[l];
      return true;
    }
    case op::v_dot2acc_f32_f16: {
      uint32_t r[32];
      LANES r[l] = u(dot2_f16(a[l], b[l], f(d[l])));  // the accumulator is the destination
      LANES d[l] = r[l];
      return true;
    }
    case op::v_fmac_f32: {
      const uint32_t *c = d;  // the accumulator is the destination in every encoding (VOP3 too)
      uint32_t r[32];
      LANES r[l] = u(out_mod(in, std::fma(f(a[l]), f(b[l]), f(c[l]))));
      LANES d[l] = r[l];
      return true;
    }
    case op::v_add_co_u32:
    case op::v_sub_co_u32:
    case op::v_subrev_co_u32: {
      uint32_t carry = 0;
      LANES {
        const uint64_t x = a[l], y = b[l];
        const uint64_t r = o == op::v_add_co_u32 ? x + y : o == op::v_sub_co_u32 ? x - y : y - x;
        carry |= uint32_t((r >> 32) & 1) << l;
        d[l] = uint32_t(r);
      }
      scalar_write(w, in.sdst, carry);
      return true;
    }
    case op::v_add_co_ci_u32:
    case op::v_sub_co_ci_u32:
    case op::v_subrev_co_ci_u32: {
      const uint32_t cin = in.enc == VOP2 ? w.s[kVcc] : mask_read(in.src[2]);
      uint32_t carry = 0;
      LANES {
        const uint64_t x = a[l], y = b[l], ci = (cin >> l) & 1;
        const uint64_t r = o == op::v_add_co_ci_u32   ? x + y + ci
                           : o == op::v_sub_co_ci_u32 ? x - y - ci
                                                      : y - x - ci;
        carry |= uint32_t((r >> 32) & 1) << l;
        d[l] = uint32_t(r);
      }
      scalar_write(w, in.sdst, carry);
      return true;
    }
    case op::v_mad_u64_u32:
    case op::v_mad_i64_i32: {
      const src64 c = lanes_read64(w, in, in.src[2]);
      uint32_t carry = 0;
      uint32_t lo[32], hi[32];
      LANES {
        unsigned __int128 r;
        if (o == op::v_mad_u64_u32) {
          r = (unsigned __int128)(uint64_t(a[l]) * uint64_t(b[l])) + c.at(l);
          carry |= uint32_t(uint64_t(r >> 64) & 1) << l;
        } else {
          const __int128 s = __int128(int64_t(int32_t(a[l])) * int64_t(int32_t(b[l]))) +
                             __int128(int64_t(c.at(l)));
          r = (unsigned __int128)s;
          carry |= uint32_t(s > INT64_MAX || s < INT64_MIN) << l;
        }
        lo[l] = uint32_t(r);
        hi[l] = uint32_t(uint64_t(r) >> 32);
      }
      LANES {
        d[l] = lo[l];
        d[32 + l] = hi[l];
      }
      scalar_write(w, in.sdst, carry);
      return true;
    }
    case op::v_fma_mix_f32:
    case op::v_fma_mixlo_f16:
    case op::v_fma_mixhi_f16: {
      // Each source is f32, or the f16 half OP_SEL picks where OP_SEL_HI says f16; abs (NEG_HI)
      // and neg apply to the converted value (ch. 16, V_FMA_MIX_F32).
      const uint32_t *src[3];
      for (int i = 0; i < 3; i++)
        src[i] = in.src[i] >= 256 ? w.v + size_t(in.src[i] - 256) * 32 : nullptr;
      uint32_t k[3];
      for (int i = 0; i < 3; i++) k[i] = src[i] ? 0 : scalar_read(w, in.src[i], in.lit);
      uint32_t r[32];
      LANES {
        float x[3];
        for (int i = 0; i < 3; i++) {
          const uint32_t bits = src[i] ? src[i][l] : k[i];
          x[i] = ((in.opsel_hi >> i) & 1)
                     ? f16_to_f32(((in.opsel >> i) & 1) ? bits >> 16 : bits & 0xffff)
                     : f(bits);
          if ((in.abs >> i) & 1) x[i] = std::fabs(x[i]);
          if ((in.neg >> i) & 1) x[i] = -x[i];
        }
        float y = std::fma(x[0], x[1], x[2]);
        if (in.clamp) y = std::isnan(y) ? 0.0f : std::fmin(std::fmax(y, 0.0f), 1.0f);
        r[l] = o == op::v_fma_mix_f32     ? u(y)
               : o == op::v_fma_mixlo_f16 ? (d[l] & 0xffff0000u) | f32_to_f16(y)
                                          : (d[l] & 0xffffu) | (f32_to_f16(y) << 16);
      }
      LANES d[l] = r[l];
      return true;
    }
    case op::v_div_scale_f32: {
      const uint32_t *c = c_read();
      uint32_t vcc = 0;
      LANES {
        bool s;
        d[l] = u(div_scale(f(a[l]), f(b[l]), f(c[l]), &s));
        vcc |= uint32_t(s) << l;
      }
      scalar_write(w, in.sdst, vcc);
      return true;
    }
    case op::v_lshlrev_b64:
    case op::v_lshrrev_b64:
    case op::v_ashrrev_i64: {
      const src64 x = lanes_read64(w, in, in.src[1]);
      uint64_t r[32];
      LANES {
        const uint32_t s = a[l] & 63;
        r[l] = o == op::v_lshlrev_b64   ? x.at(l) << s
               : o == op::v_lshrrev_b64 ? x.at(l) >> s
                                        : uint64_t(int64_t(x.at(l)) >> s);
      }
      LANES {
        d[l] = uint32_t(r[l]);
        d[32 + l] = uint32_t(r[l] >> 32);
      }
      return true;
    }
    default: break;
  }
  // Single 32-bit result per lane.
  const uint32_t *c = nullptr;
  if (in.enc == VOP3 || in.enc == VOP3SD) c = c_read();
  const bool f32_result = rdna3_facts(o).f32_result;
  if ((in.clamp || in.omod) && !f32_result)
    return st.fail(in, "clamp/omod on a non-float result is not emulated");
  uint32_t r[32];
  auto h16 = [&](const uint32_t *x, int i, int l) {
    return uint16_t(x[l] >> (((in.opsel >> i) & 1) ? 16 : 0));
  };
  bool done = true;
  switch (o) {
    // clang-format off: one row per instruction
#define F1(name, expr) case op::name: LANES { const float x = f(a[l]); (void)x; r[l] = u(expr); } break;
#define U1(name, expr) case op::name: LANES { const uint32_t x = a[l]; (void)x; r[l] = uint32_t(expr); } break;
#define F2(name, expr) case op::name: LANES { const float x = f(a[l]), y = f(b[l]); r[l] = u(expr); } break;
#define U2(name, expr) case op::name: LANES { const uint32_t x = a[l], y = b[l]; r[l] = uint32_t(expr); } break;
#define U3(name, expr) case op::name: LANES { const uint32_t x = a[l], y = b[l], z = c[l]; r[l] = uint32_t(expr); } break;
#define F3(name, expr) case op::name: LANES { const float x = f(a[l]), y = f(b[l]), z = f(c[l]); r[l] = u(expr); } break;
    U1(v_mov_b32, x)
    F1(v_cvt_f32_i32, float(int32_t(a[l])))
    F1(v_cvt_f32_u32, float(a[l]))
    U1(v_cvt_u32_f32, cvt_u32(f(x)))
    U1(v_cvt_i32_f32, cvt_i32(f(x)))
    U1(v_cvt_floor_i32_f32, cvt_i32(std::floor(f(x))))
    U1(v_cvt_nearest_i32_f32, cvt_i32(std::floor(f(x) + 0.5f)))
    U1(v_cvt_f16_f32, f32_to_f16(f(x)))
    F1(v_cvt_f32_f16, f16_to_f32(a[l] & 0xffff))
    F1(v_cvt_f32_ubyte0, float(a[l] & 0xff))
    F1(v_fract_f32, std::isinf(x) ? std::nanf("") : std::fmin(x - std::floor(x), 0x1.fffffep-1f))
    F1(v_trunc_f32, std::trunc(x))
    F1(v_ceil_f32, std::ceil(x))
    F1(v_rndne_f32, std::nearbyint(x))
    F1(v_floor_f32, std::floor(x))
    F1(v_exp_f32, std::exp2(x))
    F1(v_log_f32, std::log2(x))
    F1(v_rcp_f32, 1.0f / x)
    F1(v_rcp_iflag_f32, 1.0f / x)
    F1(v_rsq_f32, 1.0f / std::sqrt(x))
    F1(v_sqrt_f32, std::sqrt(x))
    F1(v_sin_f32, float(std::sin(double(x) * 6.283185307179586)))
    F1(v_cos_f32, float(std::cos(double(x) * 6.283185307179586)))
    U1(v_not_b32, ~x)
    U1(v_cls_i32, sign_bits(x))
    U1(v_bfrev_b32, [](uint32_t v) { uint32_t t = 0; for (int i = 0; i < 32; i++) t |= ((v >> i) & 1) << (31 - i); return t; }(x))
    U1(v_clz_i32_u32, x ? std::countl_zero(x) : -1)
    U1(v_ctz_i32_b32, x ? std::countr_zero(x) : -1)
    U1(v_frexp_exp_i32_f32, (std::isnan(f(x)) || std::isinf(f(x))) ? 0 : [](float v) { int e; std::frexp(v, &e); return e; }(f(x)))
    F1(v_frexp_mant_f32, (std::isnan(x) || std::isinf(x)) ? x : [](float v) { int e; return std::frexp(v, &e); }(x))
    F2(v_add_f32, x + y)
    F2(v_sub_f32, x - y)
    F2(v_subrev_f32, y - x)
    F2(v_mul_f32, x * y)
    F2(v_min_f32, float_min(x, y))
    F2(v_max_f32, float_max(x, y))
    F2(v_ldexp_f32, ((void)y, std::ldexp(x, int32_t(b[l]))))
    U2(v_mul_i32_i24, int64_t(int32_t(x << 8) >> 8) * int64_t(int32_t(y << 8) >> 8))
    U2(v_mul_hi_i32_i24, (int64_t(int32_t(x << 8) >> 8) * int64_t(int32_t(y << 8) >> 8)) >> 32)
    U2(v_mul_u32_u24, uint64_t(x & 0xffffff) * uint64_t(y & 0xffffff))
    U2(v_mul_hi_u32_u24, (uint64_t(x & 0xffffff) * uint64_t(y & 0xffffff)) >> 32)
    U2(v_min_i32, std::min(int32_t(x), int32_t(y)))
    U2(v_max_i32, std::max(int32_t(x), int32_t(y)))
    U2(v_min_u32, std::min(x, y))
    U2(v_max_u32, std::max(x, y))
    U2(v_lshrrev_b32, y >> (x & 31))
    U2(v_ashrrev_i32, int32_t(y) >> (x & 31))
    U2(v_lshlrev_b32, y << (x & 31))
    U2(v_and_b32, x & y)
    U2(v_or_b32, x | y)
    U2(v_xor_b32, x ^ y)
    U2(v_xnor_b32, ~(x ^ y))
    U2(v_add_nc_u32, x + y)
    U2(v_sub_nc_u32, x - y)
    U2(v_subrev_nc_u32, y - x)
    U2(v_add_nc_i32, x + y)
    U2(v_sub_nc_i32, x - y)
    U2(v_mul_lo_u32, x * y)
    U2(v_mul_hi_u32, (uint64_t(x) * y) >> 32)
    U2(v_mul_hi_i32, (int64_t(int32_t(x)) * int32_t(y)) >> 32)
    U2(v_bcnt_u32_b32, std::popcount(x) + y)
    U2(v_cvt_pk_i16_i32, (uint32_t(uint16_t(std::clamp<int32_t>(int32_t(x), -32768, 32767)))) |
                             (uint32_t(uint16_t(std::clamp<int32_t>(int32_t(y), -32768, 32767))) << 16))
    F3(v_fma_f32, std::fma(x, y, z))
    F3(v_min3_f32, float_min(float_min(x, y), z))
    F3(v_max3_f32, float_max(float_max(x, y), z))
    F3(v_med3_f32, float_med3(x, y, z))
    F3(v_div_fixup_f32, div_fixup(x, y, z))
    U3(v_mad_u32_u24, uint32_t(uint64_t(x & 0xffffff) * uint64_t(y & 0xffffff)) + z)
    U3(v_mad_i32_i24, uint32_t(int64_t(int32_t(x << 8) >> 8) * int64_t(int32_t(y << 8) >> 8)) + z)
    U3(v_bfe_u32, (z & 31) ? (x >> (y & 31)) & ((1u << (z & 31)) - 1) : 0)
    U3(v_bfe_i32, (z & 31) ? uint32_t(int32_t((x >> (y & 31)) << (32 - (z & 31))) >> (32 - (z & 31))) : 0)
    U3(v_bfi_b32, (x & y) | (~x & z))
    U3(v_alignbit_b32, ((uint64_t(x) << 32) | y) >> (z & 31))
    U3(v_alignbyte_b32, ((uint64_t(x) << 32) | y) >> ((z & 3) * 8))
    U3(v_min3_i32, std::min(std::min(int32_t(x), int32_t(y)), int32_t(z)))
    U3(v_max3_i32, std::max(std::max(int32_t(x), int32_t(y)), int32_t(z)))
    U3(v_med3_i32, med3(int32_t(x), int32_t(y), int32_t(z)))
    U3(v_min3_u32, std::min(std::min(x, y), z))
    U3(v_max3_u32, std::max(std::max(x, y), z))
    U3(v_med3_u32, med3(x, y, z))
    U3(v_and_or_b32, (x & y) | z)
    F3(v_maxmin_f32, float_min(float_max(x, y), z))
    F3(v_minmax_f32, float_max(float_min(x, y), z))
    U3(v_maxmin_i32, std::min(std::max(int32_t(x), int32_t(y)), int32_t(z)))
    U3(v_minmax_i32, std::max(std::min(int32_t(x), int32_t(y)), int32_t(z)))
    U3(v_maxmin_u32, std::min(std::max(x, y), z))
    U3(v_minmax_u32, std::max(std::min(x, y), z))
    U3(v_or3_b32, x | y | z)
    U3(v_xor3_b32, x ^ y ^ z)
    U3(v_lshl_add_u32, (x << (y & 31)) + z)
    U3(v_add_lshl_u32, (x + y) << (z & 31))
    U3(v_lshl_or_b32, (x << (y & 31)) | z)
    U3(v_add3_u32, x + y + z)
    U3(v_xad_u32, (x ^ y) + z)
    case op::v_div_fmas_f32: {
      const uint32_t vcc = w.s[kVcc];
      LANES r[l] = u(div_fmas(f(a[l]), f(b[l]), f(c[l]), (vcc >> l) & 1));
      break;
    }
    case op::v_fmamk_f32: LANES r[l] = u(std::fma(f(a[l]), f(in.lit), f(b[l]))); break;
    case op::v_fmaak_f32: LANES r[l] = u(std::fma(f(a[l]), f(b[l]), f(in.lit))); break;
    default: done = false;
      // clang-format on
  }
#undef F1
#undef U1
#undef F2
#undef U2
#undef U3
#undef F3
  if (!done) {
    // 16-bit integer and float operations: the halves opsel names in, the half opsel[3] names
    // out, the other half kept (ch. 6.2.3 "16-bit operations").
    bool ok = true;
    // Float halves (half_source) are computed in float and rounded once to half: exact for sums,
    // differences and products, since float has at least 2 x 11 + 2 significand bits (double
    // rounding is innocuous then: S. Figueroa, "When is double rounding innocuous?", SIGNUM
    // Newsletter 30(3), 1995). fma goes through double: exact unless c and a * b are more than ~30
    // binades apart.
    auto half_acc = [&](int l) -> float {  // v_fmac_f16: the accumulator is the destination's half
      return f16_to_f32((d[l] >> (((in.opsel >> 3) & 1) ? 16 : 0)) & 0xffff);
    };
    switch (o) {
#define HF(name, expr)                                                        \
  case op::name:                                                              \
    LANES {                                                                   \
      const float x = half_source(w, in, 0, l), y = half_source(w, in, 1, l); \
      (void)y;                                                                \
      r[l] = f32_to_f16(expr);                                                \
    }                                                                         \
    break;
      HF(v_add_f16, x + y)
      HF(v_sub_f16, x - y)
      HF(v_subrev_f16, y - x)
      HF(v_mul_f16, x * y)
      HF(v_max_f16, float_max(x, y))
      HF(v_min_f16, float_min(x, y))
      HF(v_fmac_f16, float(double(x) * y + half_acc(l)))
      HF(v_fma_f16, float(double(x) * y + half_source(w, in, 2, l)))
#undef HF
#define H2(name, expr)                                   \
  case op::name:                                         \
    LANES {                                              \
      const uint16_t x = h16(a, 0, l), y = h16(b, 1, l); \
      r[l] = uint16_t(expr);                             \
    }                                                    \
    break;
      H2(v_sub_nc_u16, x - y)
      H2(v_add_nc_u16, x + y)
      H2(v_mul_lo_u16, x * y)
      H2(v_lshrrev_b16, y >> (x & 15))
      H2(v_lshlrev_b16, y << (x & 15))
      H2(v_ashrrev_i16, int16_t(y) >> (x & 15))
      H2(v_max_u16, std::max(x, y))
      H2(v_min_u16, std::min(x, y))
#undef H2
      default: ok = false;
    }
    if (!ok)
      return st.fail(in, std::string("is not emulated in the ") +
                             rdna3_enc_name(rdna3_enc(in.enc)) + " encoding");
    const bool hi = (in.opsel >> 3) & 1;
    LANES d[l] = hi ? (d[l] & 0xffff) | (r[l] << 16) : (d[l] & 0xffff0000u) | (r[l] & 0xffff);
    return true;
  }
  if (f32_result && (in.clamp || in.omod)) LANES r[l] = u(out_mod(in, f(r[l])));
  LANES d[l] = r[l];
#undef LANES
  return true;
}

// SALU (ch. 5). 64-bit forms act on SGPR pairs.
bool salu_run(run_state &st, wave &w, const rdna3_inst &in) {
  st.n.salu++;
  const uint32_t a = scalar_read(w, in.src[0], in.lit), b = scalar_read(w, in.src[1], in.lit);
  const uint64_t a64 = scalar_read64(w, in.src[0], in.lit),
                 b64 = scalar_read64(w, in.src[1], in.lit);
  bool &scc = w.scc;
  uint32_t r = 0;
  const op o = in.op;
  auto put = [&](uint32_t v) { scalar_write(w, in.dst, v); };
  auto put_scc = [&](uint32_t v) {
    put(v);
    scc = v != 0;
  };
  auto put64_scc = [&](uint64_t v) {
    scalar_write64(w, in.dst, v);
    scc = v != 0;
  };
  const int32_t k = in.imm;
  switch (o) {
    case op::s_add_u32: {
      const uint64_t t = uint64_t(a) + b;
      put(uint32_t(t));
      scc = t >> 32;
      break;
    }
    case op::s_sub_u32:
      put(a - b);
      scc = b > a;
      break;
    case op::s_add_i32:
      r = a + b;
      put(r);
      scc = ((a ^ ~b) & (a ^ r)) >> 31;
      break;
    case op::s_sub_i32:
      r = a - b;
      put(r);
      scc = ((a ^ b) & (a ^ r)) >> 31;
      break;
    case op::s_addc_u32: {
      const uint64_t t = uint64_t(a) + b + scc;
      put(uint32_t(t));
      scc = t >> 32;
      break;
    }
    case op::s_subb_u32: {
      const uint64_t t = uint64_t(a) - b - scc;
      put(uint32_t(t));
      scc = (t >> 32) & 1;
      break;
    }
    case op::s_min_i32:
      scc = int32_t(a) < int32_t(b);
      put(scc ? a : b);
      break;
    case op::s_min_u32:
      scc = a < b;
      put(scc ? a : b);
      break;
    case op::s_max_i32:
      scc = int32_t(a) > int32_t(b);
      put(scc ? a : b);
      break;
    case op::s_max_u32:
      scc = a > b;
      put(scc ? a : b);
      break;
    case op::s_cselect_b32: put(scc ? a : b); break;
    case op::s_cselect_b64: scalar_write64(w, in.dst, scc ? a64 : b64); break;
    case op::s_and_b32: put_scc(a & b); break;
    case op::s_and_b64: put64_scc(a64 & b64); break;
    case op::s_or_b32: put_scc(a | b); break;
    case op::s_or_b64: put64_scc(a64 | b64); break;
    case op::s_xor_b32: put_scc(a ^ b); break;
    case op::s_xor_b64: put64_scc(a64 ^ b64); break;
    case op::s_and_not1_b32: put_scc(a & ~b); break;
    case op::s_and_not1_b64: put64_scc(a64 & ~b64); break;
    case op::s_or_not1_b32: put_scc(a | ~b); break;
    case op::s_or_not1_b64: put64_scc(a64 | ~b64); break;
    case op::s_nand_b32: put_scc(~(a & b)); break;
    case op::s_nor_b32: put_scc(~(a | b)); break;
    case op::s_xnor_b32: put_scc(~(a ^ b)); break;
    case op::s_lshl_b32: put_scc(a << (b & 31)); break;
    case op::s_lshl_b64: put64_scc(a64 << (b & 63)); break;
    case op::s_lshr_b32: put_scc(a >> (b & 31)); break;
    case op::s_lshr_b64: put64_scc(a64 >> (b & 63)); break;
    case op::s_ashr_i32: put_scc(uint32_t(int32_t(a) >> (b & 31))); break;
    case op::s_ashr_i64: put64_scc(uint64_t(int64_t(a64) >> (b & 63))); break;
    case op::s_mul_i32: put(a * b); break;
    case op::s_mul_hi_u32: put(uint32_t((uint64_t(a) * b) >> 32)); break;
    case op::s_mul_hi_i32: put(uint32_t((int64_t(int32_t(a)) * int32_t(b)) >> 32)); break;
    case op::s_bfe_u32: {  // b: offset in 4:0, width in 22:16
      const uint32_t off = b & 31, wd = (b >> 16) & 0x7f;
      put_scc(wd == 0 ? 0 : wd >= 32 ? a >> off : (a >> off) & ((1u << wd) - 1));
      break;
    }
    case op::s_bfe_i32: {
      const uint32_t off = b & 31, wd = (b >> 16) & 0x7f;
      put_scc(wd == 0    ? 0
              : wd >= 32 ? uint32_t(int32_t(a) >> off)
                         : uint32_t(int32_t((a >> off) << (32 - wd)) >> (32 - wd)));
      break;
    }
    case op::s_bfm_b32: put(((1u << (a & 31)) - 1) << (b & 31)); break;
    case op::s_lshl1_add_u32:
    case op::s_lshl2_add_u32:
    case op::s_lshl3_add_u32:
    case op::s_lshl4_add_u32: {
      const int sh = 1 + int(o) - int(op::s_lshl1_add_u32);
      const uint64_t t = (uint64_t(a) << sh) + b;
      put(uint32_t(t));
      scc = (t >> 32) != 0;
      break;
    }
    case op::s_pack_ll_b32_b16: put((a & 0xffff) | (b << 16)); break;
    case op::s_absdiff_i32: {
      const int64_t t = int64_t(int32_t(a)) - int32_t(b);
      put_scc(uint32_t(t < 0 ? -t : t));
      break;
    }
    case op::s_movk_i32: put(uint32_t(k)); break;
    case op::s_cmovk_i32:
      if (scc) put(uint32_t(k));
      break;
    case op::s_addk_i32: {
      const uint32_t x = w.s[in.dst];
      r = x + uint32_t(k);
      put(r);
      scc = ((x ^ ~uint32_t(k)) & (x ^ r)) >> 31;
      break;
    }
    case op::s_mulk_i32: put(w.s[in.dst] * uint32_t(k)); break;
    // SCC = S0 compared with SIMM16, sign-extended for _i32 and zero-extended for _u32 (ISA guide
    // ch. 16, SOPK S_CMPK_*). The compared register is the SDST field.
    case op::s_cmpk_eq_i32: scc = int32_t(w.s[in.dst]) == k; break;
    case op::s_cmpk_lg_i32: scc = int32_t(w.s[in.dst]) != k; break;
    case op::s_cmpk_gt_i32: scc = int32_t(w.s[in.dst]) > k; break;
    case op::s_cmpk_ge_i32: scc = int32_t(w.s[in.dst]) >= k; break;
    case op::s_cmpk_lt_i32: scc = int32_t(w.s[in.dst]) < k; break;
    case op::s_cmpk_le_i32: scc = int32_t(w.s[in.dst]) <= k; break;
    case op::s_cmpk_eq_u32: scc = w.s[in.dst] == uint32_t(k & 0xffff); break;
    case op::s_cmpk_lg_u32: scc = w.s[in.dst] != uint32_t(k & 0xffff); break;
    case op::s_cmpk_gt_u32: scc = w.s[in.dst] > uint32_t(k & 0xffff); break;
    case op::s_cmpk_ge_u32: scc = w.s[in.dst] >= uint32_t(k & 0xffff); break;
    case op::s_cmpk_lt_u32: scc = w.s[in.dst] < uint32_t(k & 0xffff); break;
    case op::s_cmpk_le_u32: scc = w.s[in.dst] <= uint32_t(k & 0xffff); break;
    case op::s_waitcnt_vscnt:
    case op::s_waitcnt_vmcnt:
    case op::s_waitcnt_lgkmcnt:
    case op::s_waitcnt_expcnt:
      st.n.waits++;
      st.n.salu--;
      break;
    case op::s_mov_b32: put(a); break;
    case op::s_mov_b64: scalar_write64(w, in.dst, a64); break;
    case op::s_cmov_b32:
      if (scc) put(a);
      break;
    case op::s_cmov_b64:
      if (scc) scalar_write64(w, in.dst, a64);
      break;
    case op::s_not_b32: put_scc(~a); break;
    case op::s_not_b64: put64_scc(~a64); break;
    case op::s_brev_b32: {
      uint32_t t = 0;
      for (int i = 0; i < 32; i++) t |= ((a >> i) & 1) << (31 - i);
      put(t);
      break;
    }
    case op::s_abs_i32: put_scc(int32_t(a) < 0 ? uint32_t(-int64_t(int32_t(a))) : a); break;
    case op::s_sext_i32_i8: put(uint32_t(int32_t(int8_t(a)))); break;
    case op::s_sext_i32_i16: put(uint32_t(int32_t(int16_t(a)))); break;
    case op::s_ctz_i32_b32: put(a ? std::countr_zero(a) : uint32_t(-1)); break;
    case op::s_clz_i32_u32: put(a ? std::countl_zero(a) : uint32_t(-1)); break;
    case op::s_bcnt1_i32_b32: put_scc(std::popcount(a)); break;
    case op::s_cls_i32: put(sign_bits(a)); break;
    case op::s_bcnt1_i32_b64: put_scc(std::popcount(a64)); break;
    // Save EXEC to the destination, then combine the source into EXEC (ch. 5.4 "EXEC mask").
    case op::s_and_saveexec_b32:
    case op::s_or_saveexec_b32:
    case op::s_xor_saveexec_b32:
    case op::s_and_not1_saveexec_b32:
    case op::s_or_not1_saveexec_b32:
    case op::s_and_not0_saveexec_b32:
    case op::s_and_saveexec_b64:
    case op::s_or_saveexec_b64:
    case op::s_and_not1_saveexec_b64: {
      const uint32_t e = w.s[kExec];
      put(e);
      uint32_t n = 0;
      switch (o) {
        case op::s_and_saveexec_b32:
        case op::s_and_saveexec_b64: n = a & e; break;
        case op::s_or_saveexec_b32:
        case op::s_or_saveexec_b64: n = a | e; break;
        case op::s_xor_saveexec_b32: n = a ^ e; break;
        case op::s_and_not1_saveexec_b32:
        case op::s_and_not1_saveexec_b64: n = a & ~e; break;
        case op::s_or_not1_saveexec_b32: n = a | ~e; break;
        default: n = ~a & e; break;
      }
      w.s[kExec] = n;
      scc = n != 0;
      break;
    }
    case op::s_getpc_b64: {
      const rdna3_inst &nx = st.p.insts[size_t(in.next)];
      scalar_write64(w, in.dst, st.d.code + nx.offset);
      break;
    }
    case op::s_cmp_eq_i32:
    case op::s_cmp_eq_u32: scc = a == b; break;
    case op::s_cmp_lg_i32:
    case op::s_cmp_lg_u32: scc = a != b; break;
    case op::s_cmp_gt_i32: scc = int32_t(a) > int32_t(b); break;
    case op::s_cmp_ge_i32: scc = int32_t(a) >= int32_t(b); break;
    case op::s_cmp_lt_i32: scc = int32_t(a) < int32_t(b); break;
    case op::s_cmp_le_i32: scc = int32_t(a) <= int32_t(b); break;
    case op::s_cmp_gt_u32: scc = a > b; break;
    case op::s_cmp_ge_u32: scc = a >= b; break;
    case op::s_cmp_lt_u32: scc = a < b; break;
    case op::s_cmp_le_u32: scc = a <= b; break;
    case op::s_cmp_eq_u64: scc = a64 == b64; break;
    case op::s_cmp_lg_u64: scc = a64 != b64; break;
    case op::s_bitcmp0_b32: scc = ((a >> (b & 31)) & 1) == 0; break;
    case op::s_bitcmp1_b32: scc = ((a >> (b & 31)) & 1) == 1; break;
    default: return st.fail(in, "is not emulated");
  }
  return true;
}

// Global/flat loads and stores (ch. 10): address per active lane, either a VGPR pair or an SGPR
// pair base plus a 32-bit VGPR offset, plus the instruction's offset.
bool vmem_run(run_state &st, wave &w, const rdna3_inst &in) {
  const uint32_t exec = w.s[kExec];
  const op_facts &fa = rdna3_facts(in.op);
  const bool store = fa.store, sign = fa.sign;
  const uint32_t bytes = fa.bytes, dwords = (bytes + 3) / 4;
  const uint8_t d16 = fa.d16;
  const uint32_t *va = w.v + size_t(in.src[0] - 256) * 32;
  const bool saddr = in.enc == GLOBAL && in.src[2] != kNull;
  const uint64_t sbase = saddr ? (w.s[in.src[2]] | uint64_t(w.s[in.src[2] + 1]) << 32) : 0;
  uint64_t addr[32], lo = UINT64_MAX, hi = 0;
  for (int l = 0; l < 32; l++) {
    if (!((exec >> l) & 1)) continue;
    addr[l] =
        (saddr ? sbase + va[l] : (va[l] | uint64_t(va[32 + l]) << 32)) + uint64_t(int64_t(in.imm));
    lo = std::min(lo, addr[l]);
    hi = std::max(hi, addr[l]);
  }
  if (!exec) return true;
  // Usually every lane falls in one allocation: look it up once for the wave.
  uint8_t *base = hi - lo < (1ull << 32) ? st.mem(lo, uint32_t(hi - lo) + bytes) : nullptr;
  uint32_t buf[4];
  const uint32_t *data = w.v + size_t(in.src[1] - 256) * 32;
  uint32_t *dst = w.v + size_t(in.dst - 256) * 32;
  for (int l = 0; l < 32; l++) {
    if (!((exec >> l) & 1)) continue;
    uint8_t *h = base ? base + (addr[l] - lo) : st.mem(addr[l], bytes);
    if (!h)
      return st.fail(in, "lane " + std::to_string(l) + " " + (store ? "writes " : "reads ") +
                             std::to_string(bytes) + " bytes at " + hex(addr[l]) +
                             ", which is not GPU memory");
    if (bytes == 4) {
      if (store)
        std::memcpy(h, &data[l], 4);
      else
        std::memcpy(&dst[l], h, 4);
    } else if (bytes > 4) {  // whole dwords, copied as such (a variable-length memcpy is slow here)
      if (store)
        for (uint32_t i = 0; i < dwords; i++) std::memcpy(h + 4 * i, &data[i * 32 + l], 4);
      else
        for (uint32_t i = 0; i < dwords; i++) std::memcpy(&dst[i * 32 + l], h + 4 * i, 4);
    } else if (store) {
      buf[0] = d16 == 2 ? data[l] >> 16 : data[l];  // D16_HI stores take the high half
      std::memcpy(h, buf, bytes);
    } else {
      uint32_t x = 0;
      std::memcpy(&x, h, bytes);
      if (sign) x = bytes == 1 ? uint32_t(int32_t(int8_t(x))) : uint32_t(int32_t(int16_t(x)));
      // D16 loads write one 16-bit half of the VGPR and keep the other (ISA guide ch. 10,
      // "D16" loads; encodings from llvm-mc-19): a byte is extended to 16 bits first.
      if (d16 == 1)
        x = (dst[l] & 0xffff0000u) | (x & 0xffffu);
      else if (d16 == 2)
        x = (dst[l] & 0xffffu) | (x << 16);
      dst[l] = x;
    }
  }
  (store ? st.n.vmem_store_bytes : st.n.vmem_load_bytes) += uint64_t(std::popcount(exec)) * bytes;
  return true;
}

// LDS (ch. 11): per-workgroup memory, addressed per lane by a VGPR plus the offset(s).
bool ds_run(run_state &st, wave &w, const rdna3_inst &in) {
  const uint32_t exec = w.s[kExec];
  const op o = in.op;
  const uint32_t *va = w.v + size_t(in.src[0] - 256) * 32;
  const uint32_t *d0 = w.v + size_t(in.src[1] - 256) * 32, *d1 = w.v + size_t(in.src[2] - 256) * 32;
  uint32_t *dst = w.v + size_t(in.dst - 256) * 32;
  const bool two = o == op::ds_load_2addr_b32 || o == op::ds_store_2addr_b32;
  const uint32_t off0 = two ? (in.imm & 0xff) * 4 : uint32_t(in.imm),
                 off1 = two ? ((in.imm >> 8) & 0xff) * 4 : 0;
  const op_facts &fa = rdna3_facts(o);
  const bool atomic =
      o == op::ds_add_u32 || o == op::ds_add_f32 || o == op::ds_max_f32 || o == op::ds_min_f32;
  const uint32_t dwords = two || atomic ? 1 : fa.bytes / 4u;
  auto at = [&](int l, uint32_t off, uint32_t n) -> uint8_t * {
    const uint64_t a = uint64_t(va[l]) + off;
    if (a + n > st.lds_size) {
      st.fail(in, "lane " + std::to_string(l) + " addresses LDS byte " + std::to_string(a) +
                      ", past the " + std::to_string(st.lds_size) +
                      " bytes the dispatch allocated");
      return nullptr;
    }
    return st.lds.data() + a;
  };
  for (int l = 0; l < 32; l++) {
    if (!((exec >> l) & 1)) continue;
    if (two) {
      uint8_t *p0 = at(l, off0, 4), *p1 = at(l, off1, 4);
      if (!p0 || !p1) return false;
      if (o == op::ds_store_2addr_b32) {
        std::memcpy(p0, &d0[l], 4);
        std::memcpy(p1, &d1[l], 4);
      } else {
        std::memcpy(&dst[l], p0, 4);
        std::memcpy(&dst[32 + l], p1, 4);
      }
      continue;
    }
    uint8_t *p = at(l, off0, 4 * dwords);
    if (!p) return false;
    if (atomic) {  // lanes apply in order; ds_*_rtn forms are not emulated
      uint32_t m;
      std::memcpy(&m, p, 4);
      switch (o) {
        case op::ds_add_u32: m += d0[l]; break;
        case op::ds_add_f32: m = u(f(m) + f(d0[l])); break;
        case op::ds_max_f32: m = u(float_max(f(m), f(d0[l]))); break;
        default: m = u(float_min(f(m), f(d0[l]))); break;
      }
      std::memcpy(p, &m, 4);
    } else if (fa.store) {
      for (uint32_t i = 0; i < dwords; i++) std::memcpy(p + 4 * i, &d0[i * 32 + l], 4);
    } else {
      for (uint32_t i = 0; i < dwords; i++) std::memcpy(&dst[i * 32 + l], p + 4 * i, 4);
    }
  }
  st.n.lds_bytes += uint64_t(std::popcount(exec)) * 4 * (two ? 2 : dwords);
  return true;
}

bool smem_run(run_state &st, wave &w, const rdna3_inst &in) {
  static const uint32_t dwords_of[] = {1, 2, 4, 8, 16};
  const uint32_t n = dwords_of[int(in.op) - int(op::s_load_b32)];
  const uint64_t base = w.s[in.src[0]] | uint64_t(w.s[in.src[0] + 1]) << 32;
  const uint64_t addr =
      (base + int64_t(in.imm) + (in.src[1] == kNull ? 0 : w.s[in.src[1]])) & ~uint64_t(3);
  const uint8_t *h = st.mem(addr, 4 * n);
  if (!h)
    return st.fail(in, "reads " + std::to_string(4 * n) + " bytes at " + hex(addr) +
                           ", which is not GPU memory");
  if (in.dst + n > 106) return st.fail(in, "loads past s105");
  std::memcpy(&w.s[in.dst], h, 4 * n);
  st.n.smem++;
  st.n.smem_bytes += 4 * n;
  return true;
}

// Runs one wave until it ends or reaches a barrier. false: an error (st.err).
bool wave_step(run_state &st, wave &w, uint64_t *steps) {
  const std::vector<rdna3_inst> &insts = st.p.insts;
  while (!w.done) {
    if (++*steps > kMaxSteps)
      return st.fail(insts[size_t(w.pc)],
                     "the wave ran " + std::to_string(kMaxSteps) + " instructions without ending");
    const rdna3_inst &in = insts[size_t(w.pc)];
    int32_t next = in.next;
    bool ok = true;
    switch (in.enc) {
      case SOPP:
        switch (in.op) {
          case op::s_endpgm: w.done = true; break;
          case op::s_code_end: return st.fail(in, "execution reached the padding after the code");
          case op::s_barrier:
            st.n.salu++;
            w.at_barrier = true;
            w.pc = next;
            return true;
          case op::s_branch:
            next = in.target;
            st.n.branches++;
            break;
          case op::s_cbranch_scc0:
          case op::s_cbranch_scc1:
          case op::s_cbranch_vccz:
          case op::s_cbranch_vccnz:
          case op::s_cbranch_execz:
          case op::s_cbranch_execnz: {
            bool take = false;
            switch (in.op) {
              case op::s_cbranch_scc0: take = !w.scc; break;
              case op::s_cbranch_scc1: take = w.scc; break;
              case op::s_cbranch_vccz: take = w.s[kVcc] == 0; break;
              case op::s_cbranch_vccnz: take = w.s[kVcc] != 0; break;
              case op::s_cbranch_execz: take = w.s[kExec] == 0; break;
              default: take = w.s[kExec] != 0; break;
            }
            st.n.branches++;
            if (take) next = in.target;
            break;
          }
          case op::s_waitcnt:
          case op::s_waitcnt_depctr: st.n.waits++; break;
          default:
            break;  // s_nop, s_delay_alu, s_clause, prefetch, s_sendmsg (VGPR release), s_sleep
        }
        break;
      case SOP1:
      case SOP2:
      case SOPC:
      case SOPK:
        if (in.op == op::s_setpc_b64) return st.fail(in, "indirect jumps are not emulated");
        ok = salu_run(st, w, in);
        break;
      case SMEM: ok = smem_run(st, w, in); break;
      case FLAT:
      case GLOBAL: ok = vmem_run(st, w, in); break;
      case DS: ok = ds_run(st, w, in); break;
      case MUBUF: break;  // buffer_gl0_inv / buffer_gl1_inv: no caches are modelled (rdna3_ops.txt)
      default: ok = valu_run(st, w, in); break;
    }
    if (!ok) return false;
    if (!w.done) {
      if (next < 0) return st.fail(in, "control runs past the decoded code");
      w.pc = next;
    }
  }
  return true;
}

}  // namespace

bool rdna3_dispatch_run(const rdna3_dispatch &d, const rdna3_program &p,
                        const rdna3_region_find &find, rdna3_counts *counts, std::string *err) {
  err->clear();
  const std::string what = "kernel '" + d.kernel + "': ";
  if (!d.wave32) {
    *err = what + "wave64 is not emulated (capgraph's gfx11 kernels are wave32)";
    return false;
  }
  if (d.workgroup_size == 0 || d.workgroup_size > 1024) {
    *err = what + "workgroup size " + std::to_string(d.workgroup_size) + " is outside 1..1024";
    return false;
  }
  // COMPUTE_PGM_RSRC2 (AMDGPUUsage, GFX6-GFX12): bit 0 private segment wave offset, 5:1 user SGPR
  // count, 7/8/9 workgroup id X/Y/Z, 10 workgroup info, 12:11 work-item ids in VGPRs, 23:15 LDS
  // size in 128-dword blocks.
  const uint32_t r2 = d.rsrc2;
  const uint32_t user = (r2 >> 1) & 0x1f;
  if (r2 & 1) {
    *err = what + "enables the private segment (scratch), which is not emulated";
    return false;
  }
  // Workgroups are independent (capgraph's kernels store each element from one work-item and use
  // no global atomics), so contiguous ranges of them run on host threads; results do not depend
  // on the thread count.
  const uint32_t threads = std::max(1u, std::min(d.threads, (d.groups + 15) / 16));
  std::vector<rdna3_counts> part(threads);
  std::vector<std::string> errs(threads);
  auto groups_run = [&](uint32_t t) {
    const uint32_t g0 = uint32_t(uint64_t(d.groups) * t / threads),
                   g1 = uint32_t(uint64_t(d.groups) * (t + 1) / threads);
    rdna3_counts &n = part[t];
    run_state st{d, p, find, n, errs[t], {}, 0, {}, 0};
    st.lds_size = ((r2 >> 15) & 0x1ff) * 512;
    st.lds.assign(st.lds_size, 0);
    const uint32_t waves = (d.workgroup_size + 31) / 32;
    std::vector<wave> ws(waves);
    std::vector<uint32_t> vgpr_file(size_t(waves) * p.vgprs * 32);
    for (uint32_t g = g0; g < g1; g++) {
      std::fill(vgpr_file.begin(), vgpr_file.end(), 0);
      if (st.lds_size) std::fill(st.lds.begin(), st.lds.end(), 0);
      for (uint32_t i = 0; i < waves; i++) {
        wave &w = ws[i];
        w = wave{};
        w.v = vgpr_file.data() + size_t(i) * p.vgprs * 32;
        // Initial state (ch. 3.3, AMDGPUUsage "Initial Kernel Execution State"): user SGPRs from
        // COMPUTE_USER_DATA, then the enabled system SGPRs in order; v0 holds the work-item ids,
        // packed X | Y << 10 | Z << 20 on gfx11 (Y and Z are 0 in a 1-D workgroup).
        uint32_t s = 0;
        for (; s < user; s++) w.s[s] = d.user_data[s];
        if (r2 & (1u << 7)) w.s[s++] = g;
        if (r2 & (1u << 8)) w.s[s++] = 0;
        if (r2 & (1u << 9)) w.s[s++] = 0;
        if (r2 & (1u << 10))
          w.s[s++] = 0;  // workgroup info: not modelled; capgraph does not enable it
        const uint32_t first = i * 32, live = std::min(32u, d.workgroup_size - first);
        w.s[kExec] = live == 32 ? 0xffffffffu : (1u << live) - 1;
        for (uint32_t l = 0; l < 32; l++) w.v[l] = first + l;
      }
      // Waves take turns, each running to its end or the next barrier; a barrier opens when every
      // wave still running has reached it (ch. 4.5 "Workgroup barrier").
      uint64_t steps = 0;
      for (;;) {
        bool any = false;
        for (wave &w : ws)
          if (!w.done && !w.at_barrier) {
            if (!wave_step(st, w, &steps)) return;
            any = true;
          }
        bool waiting = false;
        for (wave &w : ws) waiting |= w.at_barrier;
        if (!waiting && !any) break;
        if (!waiting) continue;
        for (wave &w : ws) w.at_barrier = false;
        steps = 0;
      }
      n.waves += waves;
    }
  };
  if (threads == 1) {
    groups_run(0);
  } else {
    std::vector<std::thread> pool;
    for (uint32_t t = 0; t < threads; t++) pool.emplace_back(groups_run, t);
    for (std::thread &th : pool) th.join();
  }
  for (uint32_t t = 0; t < threads; t++)
    if (!errs[t].empty()) {
      *err = errs[t];
      return false;
    }
  rdna3_counts n;
  for (const rdna3_counts &c : part) n.add(c);
  if (counts) counts->add(n);
  return true;
}

}  // namespace capgraph::amd
