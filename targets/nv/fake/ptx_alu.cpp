#include "ptx_alu.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "hcq/half_float.h"

namespace capgraph::nv {

namespace {

float as_f32(uint64_t b) {
  const uint32_t u = uint32_t(b);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint64_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}
double as_f64(uint64_t b) {
  double d;
  memcpy(&d, &b, 8);
  return d;
}
uint64_t bits_of(double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  return u;
}
uint64_t mask_of(unsigned bits) { return bits >= 64 ? ~0ull : (1ull << bits) - 1; }
int64_t sext(uint64_t v, unsigned bits) {
  return bits >= 64 ? int64_t(v) : int64_t(v << (64 - bits)) >> (64 - bits);
}

// A float source as a double (f16, f32, f64, bf16), with `.ftz` flushing f32 subnormals.
double fget(uint64_t b, ptx_type t, bool ftz) {
  if (t.kind == ptx_kind::bf) return as_f32(b << 16 & 0xffff0000u);
  if (t.bits == 16) return ptx_f16_to_f32(uint16_t(b));
  if (t.bits == 64) return as_f64(b);
  float f = as_f32(b);
  if (ftz && std::fpclassify(f) == FP_SUBNORMAL) f = std::copysign(0.0f, f);
  return f;
}

// Rounds the exact value `x` (long double holds every int64 and every float/double sum we pass)
// to float in mode `r`: the nearest float, stepped one ulp toward the mode's direction when the
// nearest lies on the wrong side of `x`.
float round_f32(long double x, ptx_round r) {
  float f = float(x);
  if (std::isnan(x) || std::isinf(f)) return f;
  if (r == ptx_round::rz && std::fabs((long double)f) > std::fabs(x)) f = std::nextafter(f, 0.0f);
  if (r == ptx_round::rm && (long double)f > x) f = std::nextafter(f, -INFINITY);
  if (r == ptx_round::rp && (long double)f < x) f = std::nextafter(f, INFINITY);
  return f;
}
double round_f64(long double x, ptx_round r) {
  double f = double(x);
  if (std::isnan(x) || std::isinf(f)) return f;
  if (r == ptx_round::rz && std::fabs((long double)f) > std::fabs(x)) f = std::nextafter(f, 0.0);
  if (r == ptx_round::rm && (long double)f > x) f = std::nextafter(f, -INFINITY);
  if (r == ptx_round::rp && (long double)f < x) f = std::nextafter(f, INFINITY);
  return f;
}

// A float result of type `t` from a value computed exactly enough in double (f32 arithmetic
// is done in float below, so this only rounds conversions and approximations).
uint64_t fput(double v, ptx_type t, bool ftz, bool sat) {
  if (sat) v = std::isnan(v) ? 0.0 : std::fmin(std::fmax(v, 0.0), 1.0);  // .sat: [0, 1], NaN -> 0
  if (t.bits == 64) return bits_of(v);
  if (t.kind == ptx_kind::bf) {
    const uint32_t u = uint32_t(bits_of(float(v)));
    if (std::isnan(float(v))) return 0x7fff;
    return (u + 0x7fff + (u >> 16 & 1)) >> 16;  // round to nearest even
  }
  if (t.bits == 16) return ptx_f32_to_f16(float(v));
  float f = float(v);
  if (ftz && std::fpclassify(f) == FP_SUBNORMAL) f = std::copysign(0.0f, f);
  return bits_of(f);
}

double round_integral(double v, ptx_round r) {
  switch (r) {
    case ptx_round::rni: return std::nearbyint(v);  // the default mode: to nearest even
    case ptx_round::rzi: return std::trunc(v);
    case ptx_round::rmi: return std::floor(v);
    case ptx_round::rpi: return std::ceil(v);
    default: return v;
  }
}

bool cmp_float(ptx_cmp c, double a, double b) {
  const bool un = std::isnan(a) || std::isnan(b);
  switch (c) {
    case ptx_cmp::eq: return !un && a == b;
    case ptx_cmp::ne: return !un && a != b;
    case ptx_cmp::lt: return !un && a < b;
    case ptx_cmp::le: return !un && a <= b;
    case ptx_cmp::gt: return !un && a > b;
    case ptx_cmp::ge: return !un && a >= b;
    case ptx_cmp::equ: return un || a == b;
    case ptx_cmp::neu: return un || a != b;
    case ptx_cmp::ltu: return un || a < b;
    case ptx_cmp::leu: return un || a <= b;
    case ptx_cmp::gtu: return un || a > b;
    case ptx_cmp::geu: return un || a >= b;
    case ptx_cmp::num: return !un;
    case ptx_cmp::nan: return un;
    default: return false;
  }
}

bool cmp_int(ptx_cmp c, uint64_t a, uint64_t b, ptx_type t, std::string *why) {
  const bool s = t.kind == ptx_kind::s;
  const int64_t sa = sext(a, t.bits), sb = sext(b, t.bits);
  a &= mask_of(t.bits);
  b &= mask_of(t.bits);
  switch (c) {
    case ptx_cmp::eq: return a == b;
    case ptx_cmp::ne: return a != b;
    case ptx_cmp::lt: return s ? sa < sb : a < b;
    case ptx_cmp::le: return s ? sa <= sb : a <= b;
    case ptx_cmp::gt: return s ? sa > sb : a > b;
    case ptx_cmp::ge: return s ? sa >= sb : a >= b;
    case ptx_cmp::lo: return a < b;
    case ptx_cmp::ls: return a <= b;
    case ptx_cmp::hi: return a > b;
    case ptx_cmp::hs: return a >= b;
    default: return *why = "an unordered comparison of integers", false;
  }
}

// Integer -> integer conversion (cvt.dtype.atype with integer types): extend by the source's
// signedness, clamp with .sat, truncate to the destination.
uint64_t cvt_int(uint64_t v, ptx_type to, ptx_type from, bool sat) {
  __int128 x =
      from.kind == ptx_kind::s ? __int128(sext(v, from.bits)) : __int128(v & mask_of(from.bits));
  if (sat) {
    const __int128 lo = to.kind == ptx_kind::s ? -(__int128(1) << (to.bits - 1)) : 0;
    const __int128 hi =
        to.kind == ptx_kind::s ? (__int128(1) << (to.bits - 1)) - 1 : (__int128(1) << to.bits) - 1;
    x = x < lo ? lo : x > hi ? hi : x;
  }
  return uint64_t(x) & mask_of(to.bits);
}

// Float -> integer: round by the .rXi mode, saturate to the destination's range, NaN -> 0
// (PTX ISA, cvt: "Floating-point to integer conversions ... saturate", NaN converts to 0).
uint64_t cvt_f2i(double v, ptx_type to, ptx_round r) {
  if (std::isnan(v)) return 0;
  v = round_integral(v, r == ptx_round::none ? ptx_round::rzi : r);
  if (to.kind == ptx_kind::s) {
    const double lo = -std::ldexp(1.0, to.bits - 1), hi = std::ldexp(1.0, to.bits - 1);
    if (v <= lo) return uint64_t(int64_t(lo)) & mask_of(to.bits);
    if (v >= hi) return mask_of(to.bits - 1);
    return uint64_t(int64_t(v)) & mask_of(to.bits);
  }
  if (v <= 0) return 0;
  if (v >= std::ldexp(1.0, to.bits)) return mask_of(to.bits);
  return uint64_t(v) & mask_of(to.bits);
}

bool cvt(const ptx_instr &in, uint64_t a, uint64_t *d, std::string *why) {
  const ptx_type to = in.type, from = in.src_type;
  const bool fto = to.kind == ptx_kind::f || to.kind == ptx_kind::bf;
  const bool ffrom = from.kind == ptx_kind::f || from.kind == ptx_kind::bf;
  const bool integral = in.round >= ptx_round::rni;
  if (!fto && !ffrom) return *d = cvt_int(a, to, from, in.sat), true;
  if (!fto) {
    if (in.round != ptx_round::none && !integral)
      return *why = "float to integer needs .rni/.rzi/.rmi/.rpi", false;
    *d = cvt_f2i(fget(a, from, in.ftz), to, in.round);
    return true;
  }
  if (integral && !ffrom) return *why = "an integral rounding of an integer", false;
  long double x;
  if (ffrom)
    x = integral ? round_integral(fget(a, from, in.ftz), in.round) : fget(a, from, in.ftz);
  else
    x = from.kind == ptx_kind::s ? (long double)sext(a, from.bits)
                                 : (long double)(a & mask_of(from.bits));
  const ptx_round r = integral || in.round == ptx_round::none ? ptx_round::rn : in.round;
  if (to.bits == 64) return *d = fput(round_f64(x, r), to, false, in.sat), true;
  if (to.bits == 32 && to.kind == ptx_kind::f)
    return *d = fput(round_f32(x, r), to, in.ftz, in.sat), true;
  // f16 / bf16: only round-to-nearest is modelled (what LLVM emits for our casts).
  if (r != ptx_round::rn) return *why = "a directed rounding to 16-bit float", false;
  if (to.kind == ptx_kind::f && from.bits == 64 && x != (long double)(float)x)
    return *why = "f64 to f16 (double rounding not modelled)", false;
  *d = fput(double(x), to, false, in.sat);
  return true;
}

uint64_t bfe(uint64_t a, uint64_t pos, uint64_t len, ptx_type t) {
  // PTX ISA, bfe: bits [pos, pos + len) of a; the sign bit is the last one taken (.s), or 0.
  const unsigned msb = t.bits - 1;
  pos &= 0xff;
  len &= 0xff;
  uint64_t sbit = 0;
  if (t.kind == ptx_kind::s && len > 0) sbit = a >> std::min<uint64_t>(pos + len - 1, msb) & 1;
  uint64_t d = 0;
  for (unsigned i = 0; i < t.bits; i++) {
    const uint64_t bit = (i < len && pos + i <= msb) ? (a >> (pos + i) & 1) : sbit;
    d |= bit << i;
  }
  return d;
}

uint64_t bfi(uint64_t a, uint64_t b, uint64_t pos, uint64_t len, ptx_type t) {
  pos &= 0xff;
  len &= 0xff;
  uint64_t d = b;
  for (unsigned i = 0; i < len && pos + i < t.bits; i++)
    d = (d & ~(1ull << (pos + i))) | ((a >> i & 1) << (pos + i));
  return d & mask_of(t.bits);
}

// Integer multiply: the low or high half, or the whole (.wide) product of the sources.
uint64_t imul(uint64_t a, uint64_t b, const ptx_instr &in) {
  const ptx_type st = in.src_type;
  const bool s = st.kind == ptx_kind::s;
  const __int128 x = s ? __int128(sext(a, st.bits)) : __int128(a & mask_of(st.bits));
  const __int128 y = s ? __int128(sext(b, st.bits)) : __int128(b & mask_of(st.bits));
  if (s && st.bits == 64 && in.hi) return uint64_t((x * y) >> 64);
  const unsigned __int128 p = (unsigned __int128)(x * y);
  if (in.wide) return uint64_t(p) & mask_of(2 * st.bits);
  if (in.hi) {
    if (st.bits == 64) return uint64_t(((unsigned __int128)x * (unsigned __int128)y) >> 64);
    return uint64_t(p >> st.bits) & mask_of(st.bits);
  }
  return uint64_t(p) & mask_of(st.bits);
}

bool integer(const ptx_instr &in, const uint64_t *s, uint64_t *d, std::string *why) {
  const ptx_type t = in.type;
  const unsigned w = t.bits;
  const uint64_t m = mask_of(w);
  const bool sg = t.kind == ptx_kind::s;
  const uint64_t a = s[0] & m, b = s[1] & m;
  switch (in.op) {
    case ptx_op::add: *d = (a + b) & m; break;
    case ptx_op::sub: *d = (a - b) & m; break;
    case ptx_op::mul: *d = imul(s[0], s[1], in); break;
    case ptx_op::mad: {
      const uint64_t p = imul(s[0], s[1], in);
      *d = (p + s[2]) & m;
      break;
    }
    case ptx_op::div:
    case ptx_op::rem: {
      // Division by zero is undefined in PTX; all ones (quotient) and the dividend (remainder)
      // keep it from crashing the host.
      if (b == 0) return *d = in.op == ptx_op::div ? m : a, true;
      if (sg) {
        const int64_t x = sext(a, w), y = sext(b, w);
        if (y == -1) return *d = in.op == ptx_op::div ? uint64_t(-(__int128)x) & m : 0, true;
        *d = uint64_t(in.op == ptx_op::div ? x / y : x % y) & m;
      } else {
        *d = in.op == ptx_op::div ? a / b : a % b;
      }
      break;
    }
    case ptx_op::abs: *d = sg && sext(a, w) < 0 ? (0 - a) & m : a; break;
    case ptx_op::neg: *d = (0 - a) & m; break;
    case ptx_op::min:
    case ptx_op::max: {
      const bool less = sg ? sext(a, w) < sext(b, w) : a < b;
      *d = (in.op == ptx_op::min) == less ? a : b;
      break;
    }
    case ptx_op::and_: *d = a & b; break;
    case ptx_op::or_: *d = a | b; break;
    case ptx_op::xor_: *d = a ^ b; break;
    case ptx_op::not_: *d = ~a & m; break;
    case ptx_op::cnot: *d = a == 0; break;
    case ptx_op::shl: *d = (s[1] & 0xffffffff) >= w ? 0 : (a << s[1]) & m; break;
    case ptx_op::shr: {
      const uint64_t n = std::min<uint64_t>(s[1] & 0xffffffff, w);
      if (sg)
        *d = uint64_t(n >= w ? (sext(a, w) < 0 ? -1 : 0) : sext(a, w) >> n) & m;
      else
        *d = n >= w ? 0 : a >> n;
      break;
    }
    case ptx_op::popc: *d = __builtin_popcountll(a); break;
    case ptx_op::clz: *d = a == 0 ? w : __builtin_clzll(a) - (64 - w); break;
    case ptx_op::brev: {
      uint64_t r = 0;
      for (unsigned i = 0; i < w; i++) r |= (a >> i & 1) << (w - 1 - i);
      *d = r;
      break;
    }
    case ptx_op::bfe: *d = bfe(a, s[1], s[2], t); break;
    case ptx_op::bfi: *d = bfi(a, b, s[2], s[3], t); break;
    case ptx_op::selp: *d = s[2] ? a : b; break;
    case ptx_op::mov: *d = s[0] & m; break;
    default: return *why = std::string(ptx_op_name(in.op)) + " on integers is not modelled", false;
  }
  return true;
}

bool floating(const ptx_instr &in, const uint64_t *s, uint64_t *d, std::string *why) {
  const ptx_type t = in.type;
  const bool ftz = in.ftz;
  if (t.bits == 32 && t.kind == ptx_kind::f && !in.approx &&
      (in.round == ptx_round::none || in.round == ptx_round::rn)) {
    // The common f32 arithmetic in float: the host's IEEE round-to-nearest is PTX's .rn.
    const float a = float(fget(s[0], t, ftz)),
                b = in.src.size() > 1 ? float(fget(s[1], t, ftz)) : 0;
    float r;
    switch (in.op) {
      case ptx_op::add: r = a + b; break;
      case ptx_op::sub: r = a - b; break;
      case ptx_op::mul: r = a * b; break;
      case ptx_op::fma:
      case ptx_op::mad: r = std::fma(a, b, float(fget(s[2], t, ftz))); break;
      case ptx_op::div: r = a / b; break;
      case ptx_op::rcp: r = 1.0f / a; break;
      case ptx_op::sqrt: r = std::sqrt(a); break;
      default: goto general;
    }
    return *d = fput(r, t, ftz, in.sat), true;
  }
general:
  const double a = fget(s[0], t, ftz), b = in.src.size() > 1 ? fget(s[1], t, ftz) : 0;
  const ptx_round r = in.round == ptx_round::none ? ptx_round::rn : in.round;
  auto out = [&](long double v) {
    *d = t.bits == 64                              ? bits_of(round_f64(v, r))
         : (t.bits == 32 && t.kind == ptx_kind::f) ? fput(round_f32(v, r), t, ftz, in.sat)
                                                   : fput(double(v), t, ftz, in.sat);
    if (t.bits == 64 && in.sat) *d = fput(as_f64(*d), t, false, true);
    return true;
  };
  if (t.bits != 32 && r != ptx_round::rn && in.op != ptx_op::min && in.op != ptx_op::max)
    return *why = "a directed rounding on a non-f32 float", false;
  switch (in.op) {
    case ptx_op::add: return out((long double)a + b);
    case ptx_op::sub: return out((long double)a - b);
    case ptx_op::mul: return out((long double)a * b);
    case ptx_op::fma:
    case ptx_op::mad:
      if (t.bits == 64) return *d = bits_of(std::fma(a, b, fget(s[2], t, ftz))), true;
      return out(std::fma((long double)a, b, fget(s[2], t, ftz)));
    case ptx_op::div: return out(in.approx ? (long double)(a / b) : (long double)a / b);
    case ptx_op::rcp: return out(1.0L / a);
    case ptx_op::sqrt: return out(std::sqrt((long double)a));
    case ptx_op::rsqrt: return out(1.0L / std::sqrt((long double)a));
    case ptx_op::ex2: return out(std::exp2((long double)a));
    case ptx_op::lg2: return out(std::log2((long double)a));
    case ptx_op::sin: return out(std::sin((long double)a));
    case ptx_op::cos: return out(std::cos((long double)a));
    case ptx_op::tanh: return out(std::tanh((long double)a));
    case ptx_op::abs: *d = fput(std::fabs(a), t, ftz, false); return true;
    case ptx_op::neg: *d = fput(-a, t, ftz, false); return true;
    case ptx_op::min:
    case ptx_op::max:
      // PTX: when one input is NaN the other is the result (fmin/fmax do the same).
      *d = fput(in.op == ptx_op::min ? std::fmin(a, b) : std::fmax(a, b), t, ftz, false);
      return true;
    case ptx_op::copysign: *d = fput(std::copysign(b, a), t, false, false); return true;
    case ptx_op::selp: *d = s[2] ? s[0] : s[1]; return true;
    case ptx_op::mov: *d = s[0]; return true;
    default: return *why = std::string(ptx_op_name(in.op)) + " on floats is not modelled", false;
  }
}

}  // namespace

uint16_t ptx_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  const uint32_t sign = x >> 16 & 0x8000;
  const uint32_t exp = x >> 23 & 0xff, man = x & 0x7fffff;
  if (exp == 0xff) return uint16_t(sign | 0x7c00 | (man ? 0x200 | man >> 13 : 0));
  int e = int(exp) - 127 + 15;
  if (e >= 31) return uint16_t(sign | 0x7c00);
  if (e <= 0) {
    if (e < -10) return uint16_t(sign);
    const uint32_t m = man | 0x800000;
    const int shift = 14 - e;
    uint32_t h = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rest > half || (rest == half && (h & 1))) h++;
    return uint16_t(sign | h);
  }
  uint32_t h = uint32_t(e) << 10 | man >> 13;
  const uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;  // may carry into the exponent: right
  return uint16_t(sign | h);
}

float ptx_f16_to_f32(uint16_t h) { return hcq::half_to_float(h); }

bool ptx_alu_handles(ptx_op op) {
  switch (op) {
    case ptx_op::ld:
    case ptx_op::st:
    case ptx_op::bra:
    case ptx_op::bar:
    case ptx_op::ret:
    case ptx_op::exit:
    case ptx_op::membar:
    case ptx_op::fence:
    case ptx_op::cvta: return false;
    default: return true;
  }
}

ptx_class ptx_class_of(const ptx_instr &in) {
  switch (in.op) {
    case ptx_op::ld:
    case ptx_op::st: return ptx_class::memory;
    case ptx_op::bra:
    case ptx_op::bar:
    case ptx_op::ret:
    case ptx_op::exit:
    case ptx_op::membar:
    case ptx_op::fence: return ptx_class::control;
    case ptx_op::cvt:
    case ptx_op::cvta: return ptx_class::convert;
    case ptx_op::rcp:
    case ptx_op::sqrt:
    case ptx_op::rsqrt:
    case ptx_op::ex2:
    case ptx_op::lg2:
    case ptx_op::sin:
    case ptx_op::cos:
    case ptx_op::tanh: return ptx_class::sfu;
    case ptx_op::div:
      if (in.type.kind == ptx_kind::f) return ptx_class::sfu;
      return ptx_class::int_alu;
    default: break;
  }
  if (in.type.kind == ptx_kind::f || in.type.kind == ptx_kind::bf)
    return in.type.bits == 64   ? ptx_class::fp64
           : in.type.bits == 16 ? ptx_class::fp16
                                : ptx_class::fp32;
  return ptx_class::int_alu;
}

bool ptx_alu(const ptx_instr &in, const uint64_t *s, uint64_t *d, std::string *why) {
  const ptx_type t = in.type;
  if (in.op == ptx_op::cvt) return cvt(in, s[0], d, why);
  if (in.op == ptx_op::setp) {
    bool r;
    if (t.kind == ptx_kind::f || t.kind == ptx_kind::bf)
      r = cmp_float(in.cmp, fget(s[0], t, in.ftz), fget(s[1], t, in.ftz));
    else if (t.kind == ptx_kind::pred)
      return *why = "setp on predicates", false;
    else {
      std::string bad;
      r = cmp_int(in.cmp, s[0], s[1], t, &bad);
      if (!bad.empty()) return *why = bad, false;
    }
    if (in.boolop != ptx_boolop::none) {
      if (in.src.size() < 3)
        return *why = "setp with a boolean operation needs a third operand", false;
      const bool c = s[2] != 0;
      r = in.boolop == ptx_boolop::and_ ? r && c : in.boolop == ptx_boolop::or_ ? r || c : r != c;
    }
    return *d = r, true;
  }
  if (t.kind == ptx_kind::pred) {
    const bool a = s[0] != 0, b = in.src.size() > 1 && s[1] != 0;
    switch (in.op) {
      case ptx_op::and_: return *d = a && b, true;
      case ptx_op::or_: return *d = a || b, true;
      case ptx_op::xor_: return *d = a != b, true;
      case ptx_op::not_: return *d = !a, true;
      case ptx_op::mov: return *d = a, true;
      case ptx_op::selp: return *d = s[2] ? a : b, true;
      default:
        return *why = std::string(ptx_op_name(in.op)) + " on predicates is not modelled", false;
    }
  }
  if (t.kind == ptx_kind::f || t.kind == ptx_kind::bf) {
    if (t.kind == ptx_kind::bf && in.op != ptx_op::mov && in.op != ptx_op::selp)
      return *why = "bf16 arithmetic is not modelled", false;
    return floating(in, s, d, why);
  }
  if (in.approx || in.round != ptx_round::none)
    return *why = "a rounding mode on an integer operation", false;
  return integer(in, s, d, why);
}

}  // namespace capgraph::nv
