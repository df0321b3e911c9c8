#include "codegen/math_ir.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <span>

#include "codegen/math_coeffs.h"

namespace capgraph {

using llvm::Value;
namespace mc = math_coeffs;

static Value *cst(llvm::IRBuilder<> &b, Value *like, double v) {
  return llvm::ConstantFP::get(like->getType(), v);
}

static Value *poly(llvm::IRBuilder<> &b, Value *x, std::span<const double> coefs) {
  // Horner, highest degree first.
  Value *r = nullptr;
  for (double c : coefs) r = r ? b.CreateFAdd(b.CreateFMul(r, x), cst(b, x, c)) : cst(b, x, c);
  return r;
}

static Value *is_f64(Value *x) { return x->getType()->getScalarType()->isDoubleTy() ? x : nullptr; }

// exp(x) = 2^n * exp(r), n = round(x / ln2), |r| <= ln2/2 (math_coeffs.h). Large |x| saturate to
// 0 / inf; hi is where expf / exp overflow, so every finite result stays finite.
Value *ir_exp(llvm::IRBuilder<> &b, Value *x) {
  bool d = is_f64(x);
  double hi = d ? mc::exp_f64_hi : mc::exp_f32_hi, lo = d ? mc::exp_f64_lo : mc::exp_f32_lo;
  Value *xc = b.CreateMinNum(b.CreateMaxNum(x, cst(b, x, lo)), cst(b, x, hi));
  Value *n =
      b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, b.CreateFMul(xc, cst(b, x, mc::log2_e)));
  Value *r = b.CreateFSub(xc, b.CreateFMul(n, cst(b, x, mc::ln2_hi)));
  r = b.CreateFSub(r, b.CreateFMul(n, cst(b, x, mc::ln2_lo)));
  Value *p = poly(b, r, d ? std::span<const double>(mc::exp_series_f64) : mc::exp_series_f32);
  llvm::Type *it =
      x->getType()->getWithNewType(d ? b.getInt64Ty() : b.getInt32Ty());  // vectors too
  Value *ni = b.CreateFPToSI(n, it);
  // 2^n as 2^(n/2) * 2^(n - n/2): near hi, n is 128 (float) or 1024 (double), one more than the
  // largest exponent a single factor can hold.
  auto pow2 = [&](Value *e) {
    Value *bits =
        b.CreateShl(b.CreateAdd(e, llvm::ConstantInt::get(it, d ? 1023 : 127)), d ? 52 : 23);
    return b.CreateBitCast(bits, x->getType());
  };
  Value *n1 = b.CreateAShr(ni, 1);
  Value *res = b.CreateFMul(b.CreateFMul(p, pow2(n1)), pow2(b.CreateSub(ni, n1)));
  // below the range: 0; above: inf; NaN stays NaN
  res = b.CreateSelect(b.CreateFCmpOLT(x, cst(b, x, lo)), cst(b, x, 0), res);
  res = b.CreateSelect(b.CreateFCmpOGT(x, cst(b, x, hi)), cst(b, x, INFINITY), res);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, res);
}

// log(x) = e*ln2 + log(m), m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1).
Value *ir_log(llvm::IRBuilder<> &b, Value *x) {
  bool d = is_f64(x);
  llvm::Type *it =
      x->getType()->getWithNewType(d ? b.getInt64Ty() : b.getInt32Ty());  // vectors too
  int mant = d ? 52 : 23;
  uint64_t mant_mask = d ? 0xFFFFFFFFFFFFFull : 0x7FFFFFull,
           one_bits = d ? 0x3FF0000000000000ull : 0x3F800000ull;
  int bias = d ? 1023 : 127;
  // Subnormals: scale up first so the exponent field is meaningful.
  Value *tiny = b.CreateFCmpOLT(x, cst(b, x, d ? 2.2250738585072014e-308 : 1.17549435e-38));
  Value *xs =
      b.CreateSelect(tiny, b.CreateFMul(x, cst(b, x, d ? 4503599627370496.0 : 8388608.0)), x);
  Value *adj = b.CreateSelect(tiny, cst(b, x, d ? -52 : -23), cst(b, x, 0));
  Value *bits = b.CreateBitCast(xs, it);
  Value *e = b.CreateSub(b.CreateLShr(bits, mant), llvm::ConstantInt::get(it, bias));
  Value *m = b.CreateBitCast(b.CreateOr(b.CreateAnd(bits, llvm::ConstantInt::get(it, mant_mask)),
                                        llvm::ConstantInt::get(it, one_bits)),
                             x->getType());
  Value *big = b.CreateFCmpOGT(m, cst(b, x, M_SQRT2));
  m = b.CreateSelect(big, b.CreateFMul(m, cst(b, x, 0.5)), m);
  Value *ef = b.CreateFAdd(b.CreateSIToFP(e, x->getType()), adj);
  ef = b.CreateSelect(big, b.CreateFAdd(ef, cst(b, x, 1)), ef);
  Value *s = b.CreateFDiv(b.CreateFSub(m, cst(b, x, 1)), b.CreateFAdd(m, cst(b, x, 1)));
  Value *s2 = b.CreateFMul(s, s);
  Value *series = poly(b, s2, d ? std::span<const double>(mc::log_series_f64) : mc::log_series_f32);
  Value *res = b.CreateFAdd(b.CreateFMul(ef, cst(b, x, M_LN2)), b.CreateFMul(s, series));
  res = b.CreateSelect(b.CreateFCmpOEQ(x, cst(b, x, 0)), cst(b, x, -INFINITY), res);
  res = b.CreateSelect(b.CreateFCmpOLT(x, cst(b, x, 0)), cst(b, x, NAN), res);
  res = b.CreateSelect(b.CreateFCmpOEQ(x, cst(b, x, INFINITY)), x, res);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, res);
}

// sigmoid(x) = 1 / (1 + e^z), z = -x clamped to [-87.33, 88]: e^z is then a normal float and
// 1 + e^z finite (below x = -88 the result is under 6e-39 instead of smaller; above 87.33 it is
// 1, as in float). The swish/SiLU epilogues of EfficientNet-like models evaluate this per element,
// so it is built for latency: n = round(z / ln2) falls out of one multiply-add with
// 1.5 * 2^23 + 127 (the sum's low mantissa bits are n + 127, shifted into place they are 2^n),
// a single ln2 reduction (|n| <= 127: error below 3e-7 relative) and e^r by its degree-6 series
// evaluated in Estrin's scheme (error 1.2e-7 for |r| <= ln2/2). NaN goes through every step.
Value *ir_sigmoid(llvm::IRBuilder<> &b, Value *x) {
  if (is_f64(x))
    return b.CreateFDiv(cst(b, x, 1), b.CreateFAdd(cst(b, x, 1), ir_exp(b, b.CreateFNeg(x))));
  auto fma = [&](Value *m, Value *n, Value *a) {
    return b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {x->getType()}, {m, n, a});
  };
  Value *z = b.CreateFNeg(x);
  z = b.CreateSelect(b.CreateFCmpOLT(z, cst(b, x, -87.33)), cst(b, x, -87.33),
                     z);  // NaN: not less, kept
  z = b.CreateSelect(b.CreateFCmpOGT(z, cst(b, x, 88.0)), cst(b, x, 88.0), z);
  const double magic = 12582912.0 + 127;
  Value *j = fma(z, cst(b, x, mc::log2_e), cst(b, x, magic));
  Value *n = b.CreateFSub(j, cst(b, x, magic));
  Value *r = fma(n, cst(b, x, -0.6931471805599453), z);
  Value *r2 = b.CreateFMul(r, r), *r4 = b.CreateFMul(r2, r2);
  Value *p01 = fma(r, cst(b, x, 1), cst(b, x, 1));
  Value *p23 = fma(r, cst(b, x, 1.0 / 6), cst(b, x, 0.5));
  Value *p46 = fma(r2, cst(b, x, 1.0 / 720), fma(r, cst(b, x, 1.0 / 120), cst(b, x, 1.0 / 24)));
  Value *p = fma(r4, p46, fma(r2, p23, p01));
  llvm::Type *it = x->getType()->getWithNewType(b.getInt32Ty());
  Value *scale = b.CreateBitCast(b.CreateShl(b.CreateBitCast(j, it), 23), x->getType());
  return b.CreateFDiv(cst(b, x, 1), b.CreateFAdd(cst(b, x, 1), b.CreateFMul(p, scale)));
}

// tanh(x) = sign(x) (1 - 2 / (exp(2|x|) + 1)); near 0 the odd series (math_coeffs.h).
Value *ir_tanh(llvm::IRBuilder<> &b, Value *x) {
  Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value *e = ir_exp(b, b.CreateFMul(ax, cst(b, x, 2)));
  Value *t = b.CreateFSub(cst(b, x, 1), b.CreateFDiv(cst(b, x, 2), b.CreateFAdd(e, cst(b, x, 1))));
  Value *x2 = b.CreateFMul(x, x);
  Value *small = b.CreateFMul(x, poly(b, x2, mc::tanh_series));
  Value *r = b.CreateCopySign(t, x);
  return b.CreateSelect(b.CreateFCmpOLT(ax, cst(b, x, mc::tanh_series_below)), small, r);
}

// Abramowitz & Stegun 7.1.26 (math_coeffs.h).
Value *ir_erf(llvm::IRBuilder<> &b, Value *x) {
  Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value *t = b.CreateFDiv(cst(b, x, 1),
                          b.CreateFAdd(cst(b, x, 1), b.CreateFMul(ax, cst(b, x, mc::erf_p))));
  Value *p = b.CreateFMul(t, poly(b, t, mc::erf_series));
  Value *r =
      b.CreateFSub(cst(b, x, 1), b.CreateFMul(p, ir_exp(b, b.CreateFNeg(b.CreateFMul(ax, ax)))));
  return b.CreateCopySign(r, x);
}

// x^y: exact special cases for common constant exponents, else exp(y log|x|) with the sign of
// a negative base raised to an odd integer.
Value *ir_pow(llvm::IRBuilder<> &b, Value *x, Value *y) {
  if (auto *c = llvm::dyn_cast<llvm::ConstantFP>(y)) {
    double v = c->getValueAPF().convertToDouble();
    if (v == 1) return x;
    if (v == 2) return b.CreateFMul(x, x);
    if (v == 3) return b.CreateFMul(b.CreateFMul(x, x), x);
    if (v == 0.5) return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, x);
    if (v == -1) return b.CreateFDiv(cst(b, x, 1), x);
    if (v == 0) return cst(b, x, 1);
  }
  Value *ax = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value *r = ir_exp(b, b.CreateFMul(y, ir_log(b, ax)));
  Value *yint = b.CreateFCmpOEQ(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, y), y);
  Value *half = b.CreateFMul(y, cst(b, y, 0.5));
  Value *yodd = b.CreateAnd(
      yint, b.CreateFCmpONE(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, half), half));
  Value *neg = b.CreateFCmpOLT(x, cst(b, x, 0));
  r = b.CreateSelect(b.CreateAnd(neg, yodd), b.CreateFNeg(r), r);
  r = b.CreateSelect(b.CreateAnd(neg, b.CreateNot(yint)), cst(b, x, NAN), r);
  return b.CreateSelect(b.CreateFCmpOEQ(y, cst(b, y, 0)), cst(b, x, 1), r);
}

}  // namespace capgraph
