// Elementwise ops: unary activations, binary arithmetic and comparisons with numpy broadcasting,
// Cast, Where, Clip and the variadic Sum/Mean/Max/Min. Each becomes one kernel over the output's
// shape; chains of them are fused into their producer later (schedule/fuse).
#include <cmath>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

using ExprFn = std::function<int(Kernel &, const std::vector<int> &)>;

// out = f(loads of `ins`, each cast to `compute`), stored as `out_t`.
void lower_map(Lowering &L, Node &n, const std::vector<const Value *> &ins, DType compute,
               DType out_t, const ExprFn &f) {
  Shape out_shape;
  for (size_t i = 0; i < ins.size(); i++) {
    Shape s;
    if (i == 0) {
      out_shape = ins[0]->shape;
      continue;
    }
    if (!shape_broadcast(out_shape, ins[i]->shape, s))
      L.fail("inputs of shapes " + shape_str(out_shape) + " and " + shape_str(ins[i]->shape) +
             " do not broadcast");
    out_shape = s;
  }
  Loc out = L.output_new(n.outputs[0], out_t, out_shape);
  if (shape_numel(out_shape) == 0) return;
  Kernel &k = L.kernel_new(n.op);
  int rank = (int)out_shape.size();
  k.axes = rank ? out_shape : Shape{1};
  k.n_parallel = (int)k.axes.size();
  std::vector<int> args;
  for (const Value *v : ins) {
    // A float scalar known at compile time is a constant of the kernel (Clip's bounds, the 3 and 6
    // of a hard swish): the code then folds it, a clamp to constants is one min/max instruction.
    if (v->constant && dtype_is_float(v->dtype) && shape_numel(v->shape) == 1) {
      args.push_back(k.expr_cast(k.expr_const(v->constant->at_f64(0), v->dtype), compute));
      continue;
    }
    Loc l = L.loc(v);
    int e = k.expr_load(access_broadcast(l, rank), l.dtype);
    args.push_back(k.expr_cast(e, compute));
  }
  k.result = k.expr_cast(f(k, args), out_t);
  k.store = access_store(out);
  k.store_dtype = out_t;
}

// The type an elementwise kernel computes in: float16 and bfloat16 in float32 (loads widen, the
// store rounds back to nearest even); every other type as declared (uint16/uint32 fit the int64
// registers; uint64 is compared, divided and converted unsigned by the code generators).
DType compute_type(DType t) { return t == DType::f16 || t == DType::bf16 ? DType::f32 : t; }

DType float_type(const Lowering &L, DType t) {
  if (t == DType::f16 || t == DType::bf16)
    return DType::f32;  // computed in float32, stored back as declared
  if (!dtype_is_float(t))
    L.fail(std::string("expects a floating point input, got ") + dtype_name(t));
  return t;
}

std::vector<const Value *> present_inputs(const Node &n) {
  std::vector<const Value *> v;
  for (Value *i : n.inputs)
    if (i) v.push_back(i);
  return v;
}

// Unary float op: y = f(x).
void unary(const char *op, std::function<int(Kernel &, int, DType, const Node &)> f) {
  lower_table()[op] = [f](Lowering &L, Node &n) {
    const Value *x = n.input(0);
    DType ct = float_type(L, x->dtype);
    lower_map(L, n, {x}, ct, x->dtype,
              [&](Kernel &k, const std::vector<int> &a) { return f(k, a[0], ct, n); });
  };
}

// Binary op with broadcasting; same type in and out (comparisons give bool).
void binary(const char *op, Op e, bool compare = false) {
  lower_table()[op] = [e, compare](Lowering &L, Node &n) {
    const Value *a = n.input(0), *b = n.input(1);
    if (!a || !b) L.fail("needs two inputs");
    if (a->dtype != b->dtype && !(n.op == "Pow"))
      L.fail(std::string("input types differ: ") + dtype_name(a->dtype) + " and " +
             dtype_name(b->dtype));
    DType ct = compute_type(a->dtype);
    DType ot = compare ? DType::boolean : a->dtype;
    lower_map(L, n, {a, b}, ct, ot, [&](Kernel &k, const std::vector<int> &v) {
      int bv = n.op == "Pow" ? k.expr_cast(v[1], ct) : v[1];
      return k.expr_binary(e, v[0], bv, compare ? DType::boolean : ct);
    });
  };
}

// Variadic op folding its inputs left to right (Sum, Max, Min, Mean).
void variadic(const char *op, Op e, bool mean) {
  lower_table()[op] = [e, mean](Lowering &L, Node &n) {
    std::vector<const Value *> ins = present_inputs(n);
    if (ins.empty()) L.fail("needs at least one input");
    DType ct = compute_type(ins[0]->dtype);
    lower_map(L, n, ins, ct, ins[0]->dtype, [&](Kernel &k, const std::vector<int> &v) {
      int r = v[0];
      for (size_t i = 1; i < v.size(); i++) r = k.expr_binary(e, r, v[i], ct);
      if (mean) r = k.expr_binary(Op::mul, r, k.expr_const(1.0 / v.size(), ct), ct);
      return r;
    });
  };
}

int relu(Kernel &k, int x, DType t) { return k.expr_binary(Op::max, x, k.expr_const(0, t), t); }

int clamp(Kernel &k, int x, double lo, double hi, DType t) {
  return k.expr_binary(Op::min, k.expr_binary(Op::max, x, k.expr_const(lo, t), t),
                       k.expr_const(hi, t), t);
}

// x > 0 ? x : neg
int positive_or(Kernel &k, int x, int neg, DType t) {
  return k.expr_select(k.expr_binary(Op::gt, x, k.expr_const(0, t), DType::boolean), x, neg, t);
}

int softplus(Kernel &k, int x, DType t) {
  // log(1 + exp(x)) computed without overflow: max(x,0) + log(1 + exp(-|x|)).
  int e = k.expr_unary(Op::exp, k.expr_unary(Op::neg, k.expr_unary(Op::abs, x, t), t), t);
  return k.expr_binary(Op::add, relu(k, x, t),
                       k.expr_unary(Op::log, k.expr_binary(Op::add, k.expr_const(1, t), e, t), t),
                       t);
}

// ---- trigonometric and hyperbolic functions, composed from the kernel IR's arithmetic ----------
// No code generator needs a new operation (and the CPU code calls no libm): each is a range
// reduction and a polynomial in the expressions every target already emits. Accuracy: a few
// float32 ulps for sin/cos/tan over |x| < 1e4 (the reduction uses pi/2 in two parts, Cody-Waite),
// about 1e-7 absolute for atan/asin/acos (least-squares odd polynomial of degree 15 on [0, 1],
// fitted against numpy.arctan; max error 4e-8); float64 inputs get the same float32-grade result.

int c(Kernel &k, double v, DType t) { return k.expr_const(v, t); }
int add(Kernel &k, int a, int b, DType t) { return k.expr_binary(Op::add, a, b, t); }
int mul(Kernel &k, int a, int b, DType t) { return k.expr_binary(Op::mul, a, b, t); }

// sum of coef[i] * x^(2i+1), by Horner in x^2.
int odd_poly(Kernel &k, int x, const std::vector<double> &coef, DType t) {
  int x2 = mul(k, x, x, t), p = c(k, coef.back(), t);
  for (size_t i = coef.size() - 1; i-- > 0;) p = add(k, mul(k, p, x2, t), c(k, coef[i], t), t);
  return mul(k, p, x, t);
}

// sin or cos: x = k * pi/2 + r with |r| <= pi/4, then the quadrant k mod 4 picks +-sin(r),
// +-cos(r).
int sin_cos(Kernel &k, int x, DType t, bool cosine) {
  int q = k.expr_unary(Op::round, mul(k, x, c(k, M_2_PI, t), t), t);
  int r = k.expr_binary(Op::sub, x, mul(k, q, c(k, 1.5707963705062866, t), t), t);
  r = k.expr_binary(Op::sub, r, mul(k, q, c(k, -4.371139000186243e-08, t), t), t);
  // Taylor terms to r^13 / r^12: below float32 rounding for |r| <= pi/4.
  int s = odd_poly(
      k, r,
      {1.0, -1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800, 1.0 / 6227020800}, t);
  int r2 = mul(k, r, r, t), cs = c(k, 1.0 / 479001600, t);
  for (double coef : {-1.0 / 3628800, 1.0 / 40320, -1.0 / 720, 1.0 / 24, -0.5, 1.0})
    cs = add(k, mul(k, cs, r2, t), c(k, coef, t), t);
  // quadrant in 0..3 (q - 4 floor(q / 4) works for negative q too); cos(x) = sin(x + pi/2).
  int quad = k.expr_binary(
      Op::sub, q, mul(k, c(k, 4, t), k.expr_unary(Op::floor, mul(k, q, c(k, 0.25, t), t), t), t),
      t);
  if (cosine)
    quad = k.expr_binary(
        Op::sub, add(k, quad, c(k, 1, t), t),
        mul(k, c(k, 4, t), k.expr_cast(k.expr_binary(Op::ge, quad, c(k, 3, t), DType::boolean), t),
            t),
        t);
  auto is = [&](double v) { return k.expr_binary(Op::eq, quad, c(k, v, t), DType::boolean); };
  int neg_s = k.expr_unary(Op::neg, s, t), neg_c = k.expr_unary(Op::neg, cs, t);
  return k.expr_select(is(0), s, k.expr_select(is(1), cs, k.expr_select(is(2), neg_s, neg_c, t), t),
                       t);
}

int atan_of(Kernel &k, int x, DType t) {
  int a = k.expr_unary(Op::abs, x, t);
  int inv = k.expr_binary(Op::gt, a, c(k, 1, t), DType::boolean);
  int u = k.expr_select(inv, k.expr_unary(Op::recip, a, t), a, t);
  int p = odd_poly(k, u,
                   {0.99999944, -0.33330106, 0.19948501, -0.13915757, 0.09656133, -0.05606139,
                    0.02194531, -0.00407293},
                   t);
  int r = k.expr_select(inv, k.expr_binary(Op::sub, c(k, M_PI_2, t), p, t), p, t);
  int neg = k.expr_binary(Op::lt, x, c(k, 0, t), DType::boolean);
  return k.expr_select(neg, k.expr_unary(Op::neg, r, t), r, t);  // NaN stays NaN through abs/select
}

// asin(x) = atan(x / sqrt(1 - x^2)): +-inf at |x| = 1 gives +-pi/2; NaN outside [-1, 1].
int asin_of(Kernel &k, int x, DType t) {
  int d = k.expr_unary(Op::sqrt, k.expr_binary(Op::sub, c(k, 1, t), mul(k, x, x, t), t), t);
  return atan_of(k, k.expr_binary(Op::div, x, d, t), t);
}

// QuantizeLinear / DequantizeLinear (QDQ models): x with a scale and zero point that are scalars
// (per tensor) or 1-D along `axis` (per axis, opset 13). One kernel each:
//   quantize:   y = saturate(round_half_even(x / scale) + zero_point)   (uint8 or int8)
//   dequantize: y = (x - zero_point) * scale                           (float32)
// Sources: ONNX operator spec (QuantizeLinear-10/13, DequantizeLinear-10/13).
void lower_quantize(Lowering &L, Node &n, bool quantize) {
  const Value *x = n.input(0), *sv = n.input(1), *zv = n.input(2);
  const size_t r = x->shape.size();
  if (sv->dtype != DType::f32) L.fail("the scale must be float32");
  DType q = quantize ? (zv ? zv->dtype : DType::u8) : x->dtype;
  if (q != DType::u8 && q != DType::i8 && !(q == DType::i32 && !quantize))
    L.fail(std::string("element type ") + dtype_name(q) + " is not supported (uint8 and int8 are" +
           (quantize ? "" : ", and int32 for dequantizing") + ")");
  if (zv && zv->dtype != q) L.fail("the zero point must have the quantized type");
  if (!quantize && x->dtype == DType::i32 && zv) L.fail("an int32 input takes no zero point");
  // Per axis: a 1-D scale of x.shape[axis] elements; otherwise one element.
  const bool per_axis =
      shape_numel(sv->shape) != 1;  // a 1-element scale is per tensor whatever its rank
  int ax = 0;
  if (per_axis) {
    if (L.graph.opset < 13) L.fail("a per-axis scale needs opset 13");
    ax = axis_normalize(L, n.attr_int("axis", 1), r);
    if (sv->shape != Shape{x->shape[ax]})
      L.fail("the scale must have one element or " + std::to_string(x->shape[ax]) + " (axis " +
             std::to_string(ax) + ")");
  }
  if (zv && zv->shape != sv->shape && shape_numel(zv->shape) != shape_numel(sv->shape))
    L.fail("the zero point must have the scale's shape");
  Loc xl = L.loc(x), sl = L.loc(sv);
  Loc y = L.output_new(n.outputs[0], quantize ? q : DType::f32, x->shape);
  if (shape_numel(x->shape) == 0) return;
  Kernel &k = L.kernel_new(quantize ? "quantize_linear" : "dequantize_linear");
  k.axes = r ? x->shape : Shape{1};
  k.n_parallel = (int)k.axes.size();
  auto param = [&](const Value *v) {
    Loc l = L.loc(v);
    if (!l.contiguous()) L.fail("expects a contiguous scale and zero point");
    l.shape = {shape_numel(v->shape)};
    l.strides = {1};
    return k.expr_load(access_axes(l, {per_axis ? ax : -1}), v->dtype);
  };
  int xe = k.expr_cast(k.expr_load(access_broadcast(xl, (int)r), x->dtype), DType::f32);
  int se = param(sv);
  int ze = zv ? k.expr_cast(param(zv), DType::f32) : k.expr_const(0, DType::f32);
  if (quantize) {
    int v = k.expr_unary(Op::round, k.expr_binary(Op::div, xe, se, DType::f32), DType::f32);
    v = k.expr_binary(Op::add, v, ze, DType::f32);
    double lo = q == DType::u8 ? 0 : -128, hi = q == DType::u8 ? 255 : 127;
    v = k.expr_binary(Op::min, k.expr_binary(Op::max, v, k.expr_const(lo, DType::f32), DType::f32),
                      k.expr_const(hi, DType::f32), DType::f32);
    k.result = k.expr_cast(v, q);
  } else {
    k.result = k.expr_binary(Op::mul, k.expr_binary(Op::sub, xe, ze, DType::f32), se, DType::f32);
  }
  k.store = access_store(y);
  k.store_dtype = quantize ? q : DType::f32;
}

}  // namespace

DType dtype_from_onnx_int(const Lowering &L, int64_t v) {
  return dtype_from_onnx((onnx::DataType)v, L.graph.origin + ": " + L.node->label());
}

void lower_register_elementwise() {
  unary("Relu", [](Kernel &k, int x, DType t, const Node &) { return relu(k, x, t); });
  unary("Sigmoid",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::sigmoid, x, t); });
  unary("Tanh",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::tanh, x, t); });
  unary("Exp", [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::exp, x, t); });
  unary("Log", [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::log, x, t); });
  unary("Sqrt",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::sqrt, x, t); });
  unary("Erf", [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::erf, x, t); });
  unary("Reciprocal",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::recip, x, t); });
  unary("Floor",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::floor, x, t); });
  unary("Ceil",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::ceil, x, t); });
  unary("Round",
        [](Kernel &k, int x, DType t, const Node &) { return k.expr_unary(Op::round, x, t); });
  unary("Softplus", [](Kernel &k, int x, DType t, const Node &) { return softplus(k, x, t); });
  unary("Mish", [](Kernel &k, int x, DType t, const Node &) {
    return k.expr_binary(Op::mul, x, k.expr_unary(Op::tanh, softplus(k, x, t), t), t);
  });
  unary("Softsign", [](Kernel &k, int x, DType t, const Node &) {
    return k.expr_binary(
        Op::div, x, k.expr_binary(Op::add, k.expr_const(1, t), k.expr_unary(Op::abs, x, t), t), t);
  });
  unary("HardSigmoid", [](Kernel &k, int x, DType t, const Node &n) {
    double alpha = n.attr_float("alpha", 0.2f), beta = n.attr_float("beta", 0.5f);
    int y = k.expr_binary(Op::add, k.expr_binary(Op::mul, x, k.expr_const(alpha, t), t),
                          k.expr_const(beta, t), t);
    return clamp(k, y, 0, 1, t);
  });
  unary("HardSwish", [](Kernel &k, int x, DType t, const Node &) {
    int y = k.expr_binary(Op::add, k.expr_binary(Op::mul, x, k.expr_const(1.0 / 6, t), t),
                          k.expr_const(0.5, t), t);
    return k.expr_binary(Op::mul, x, clamp(k, y, 0, 1, t), t);
  });
  unary("Elu", [](Kernel &k, int x, DType t, const Node &n) {
    double alpha = n.attr_float("alpha", 1.0f);
    int em1 = k.expr_binary(Op::sub, k.expr_unary(Op::exp, x, t), k.expr_const(1, t), t);
    return positive_or(k, x, k.expr_binary(Op::mul, em1, k.expr_const(alpha, t), t), t);
  });
  unary("Selu", [](Kernel &k, int x, DType t, const Node &n) {
    double alpha = n.attr_float("alpha", 1.67326319217681884765625f),
           gamma = n.attr_float("gamma", 1.05070102214813232421875f);
    int em1 = k.expr_binary(Op::sub, k.expr_unary(Op::exp, x, t), k.expr_const(1, t), t);
    int y = positive_or(k, x, k.expr_binary(Op::mul, em1, k.expr_const(alpha, t), t), t);
    return k.expr_binary(Op::mul, y, k.expr_const(gamma, t), t);
  });
  unary("Celu", [](Kernel &k, int x, DType t, const Node &n) {
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    double alpha = n.attr_float("alpha", 1.0f);
    int e = k.expr_unary(Op::exp, k.expr_binary(Op::mul, x, k.expr_const(1.0 / alpha, t), t), t);
    int neg = k.expr_binary(Op::mul, k.expr_binary(Op::sub, e, k.expr_const(1, t), t),
                            k.expr_const(alpha, t), t);
    return k.expr_binary(Op::add, relu(k, x, t), k.expr_binary(Op::min, neg, k.expr_const(0, t), t),
                         t);
  });
  unary("Sin", [](Kernel &k, int x, DType t, const Node &) { return sin_cos(k, x, t, false); });
  unary("Cos", [](Kernel &k, int x, DType t, const Node &) { return sin_cos(k, x, t, true); });
  unary("Tan", [](Kernel &k, int x, DType t, const Node &) {
    return k.expr_binary(Op::div, sin_cos(k, x, t, false), sin_cos(k, x, t, true), t);
  });
  unary("Atan", [](Kernel &k, int x, DType t, const Node &) { return atan_of(k, x, t); });
  unary("Asin", [](Kernel &k, int x, DType t, const Node &) { return asin_of(k, x, t); });
  unary("Acos", [](Kernel &k, int x, DType t, const Node &) {
    return k.expr_binary(Op::sub, c(k, M_PI_2, t), asin_of(k, x, t), t);
  });
  unary("Sinh", [](Kernel &k, int x, DType t, const Node &) {
    int e = k.expr_unary(Op::exp, x, t), en = k.expr_unary(Op::exp, k.expr_unary(Op::neg, x, t), t);
    return mul(k, k.expr_binary(Op::sub, e, en, t), c(k, 0.5, t), t);
  });
  unary("Cosh", [](Kernel &k, int x, DType t, const Node &) {
    int e = k.expr_unary(Op::exp, x, t), en = k.expr_unary(Op::exp, k.expr_unary(Op::neg, x, t), t);
    return mul(k, add(k, e, en, t), c(k, 0.5, t), t);
  });
  unary("Asinh", [](Kernel &k, int x, DType t, const Node &) {
    // sign(x) log(|x| + sqrt(x^2 + 1)): the odd form keeps large negative x accurate.
    int a = k.expr_unary(Op::abs, x, t);
    int r = k.expr_unary(
        Op::log, add(k, a, k.expr_unary(Op::sqrt, add(k, mul(k, a, a, t), c(k, 1, t), t), t), t),
        t);
    return k.expr_select(k.expr_binary(Op::lt, x, c(k, 0, t), DType::boolean),
                         k.expr_unary(Op::neg, r, t), r, t);
  });
  unary("Acosh", [](Kernel &k, int x, DType t, const Node &) {
    return k.expr_unary(
        Op::log,
        add(k, x, k.expr_unary(Op::sqrt, k.expr_binary(Op::sub, mul(k, x, x, t), c(k, 1, t), t), t),
            t),
        t);
  });
  unary("Atanh", [](Kernel &k, int x, DType t, const Node &) {
    int q = k.expr_binary(Op::div, add(k, c(k, 1, t), x, t),
                          k.expr_binary(Op::sub, c(k, 1, t), x, t), t);
    return mul(k, k.expr_unary(Op::log, q, t), c(k, 0.5, t), t);
  });
  unary("LeakyRelu", [](Kernel &k, int x, DType t, const Node &n) {
    return positive_or(
        k, x, k.expr_binary(Op::mul, x, k.expr_const(n.attr_float("alpha", 0.01f), t), t), t);
  });
  unary("ThresholdedRelu", [](Kernel &k, int x, DType t, const Node &n) {
    int c = k.expr_binary(Op::gt, x, k.expr_const(n.attr_float("alpha", 1.0f), t), DType::boolean);
    return k.expr_select(c, x, k.expr_const(0, t), t);
  });
  unary("Gelu", [](Kernel &k, int x, DType t, const Node &n) {
    if (n.attr_string("approximate", "none") == "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      int x3 = k.expr_binary(Op::mul, k.expr_binary(Op::mul, x, x, t), x, t);
      int in =
          k.expr_binary(Op::add, x, k.expr_binary(Op::mul, x3, k.expr_const(0.044715, t), t), t);
      int th = k.expr_unary(Op::tanh,
                            k.expr_binary(Op::mul, in, k.expr_const(std::sqrt(2 / M_PI), t), t), t);
      return k.expr_binary(Op::mul, k.expr_binary(Op::mul, x, k.expr_const(0.5, t), t),
                           k.expr_binary(Op::add, th, k.expr_const(1, t), t), t);
    }
    int e = k.expr_unary(Op::erf, k.expr_binary(Op::mul, x, k.expr_const(M_SQRT1_2, t), t), t);
    return k.expr_binary(Op::mul, k.expr_binary(Op::mul, x, k.expr_const(0.5, t), t),
                         k.expr_binary(Op::add, e, k.expr_const(1, t), t), t);
  });

  // Ops valid on any numeric type.
  auto numeric_unary = [](const char *op, std::function<int(Kernel &, int, DType)> f) {
    lower_table()[op] = [f](Lowering &L, Node &n) {
      const Value *x = n.input(0);
      DType ct = compute_type(x->dtype);
      lower_map(L, n, {x}, ct, x->dtype,
                [&](Kernel &k, const std::vector<int> &a) { return f(k, a[0], ct); });
    };
  };
  numeric_unary("Neg", [](Kernel &k, int x, DType t) { return k.expr_unary(Op::neg, x, t); });
  numeric_unary("Abs", [](Kernel &k, int x, DType t) { return k.expr_unary(Op::abs, x, t); });
  numeric_unary("Sign", [](Kernel &k, int x, DType t) {
    int pos = k.expr_cast(k.expr_binary(Op::gt, x, k.expr_const(0, t), DType::boolean), t);
    int neg = k.expr_cast(k.expr_binary(Op::lt, x, k.expr_const(0, t), DType::boolean), t);
    return k.expr_binary(Op::sub, pos, neg, t);
  });
  lower_table()["Not"] = [](Lowering &L, Node &n) {
    lower_map(L, n, {n.input(0)}, DType::boolean, DType::boolean,
              [](Kernel &k, const std::vector<int> &a) {
                return k.expr_unary(Op::logical_not, a[0], DType::boolean);
              });
  };
  auto pass_through = [](Lowering &L, Node &n) {
    // Identity and inference-mode Dropout: the output is the input (a view, no kernel).
    const Value *x = n.input(0);
    if (x->constant) {
      L.output_constant(n.outputs[0], *x->constant);
    } else {
      L.output_view(n.outputs[0], L.loc(x));
    }
    if (n.outputs.size() > 1 && !n.outputs[1]->name.empty()) {  // Dropout's mask: all true
      L.fold_reserve(shape_numel(x->shape));
      std::vector<uint8_t> ones(shape_numel(x->shape), 1);
      L.output_constant(n.outputs[1], Tensor::from_bytes(DType::boolean, x->shape, ones));
    }
  };
  lower_table()["Identity"] = pass_through;
  lower_table()["Dropout"] = [pass_through](Lowering &L, Node &n) {
    // Training mode (opset 12+: the third input) zeroes random elements and scales the rest by
    // 1/(1-ratio). ONNX's tests draw the mask from NumPy's generator with a seed; a capture cannot
    // reproduce that stream, and any other mask is a different answer, so it is refused rather
    // than approximated (treating it as identity was a silent wrong answer). ratio 0 keeps every
    // element (ONNX spec), so that case is the identity.
    if (L.graph.opset >= 12 && L.has_input(2)) {
      const Tensor &tm = L.const_input(2, "training_mode");
      if (tm.numel() != 1) L.fail("training_mode must hold one value");
      bool training = tm.at_f64(0) != 0;
      double ratio = 0.5;
      if (L.has_input(1)) {
        const Tensor &r = L.const_input(1, "ratio");
        if (r.numel() != 1) L.fail("ratio must hold one value");
        ratio = r.at_f64(0);
      }
      if (training && ratio != 0)
        L.fail("training_mode is true with ratio " + std::to_string(ratio) +
               ": random dropout is not supported (capgraph has no random generator that matches "
               "ONNX's seeded one); "
               "export the model for inference");
    }
    pass_through(L, n);
  };

  binary("Add", Op::add);
  binary("Sub", Op::sub);
  binary("Mul", Op::mul);
  binary("Div", Op::div);
  binary("Pow", Op::pow);
  binary("Equal", Op::eq, true);
  binary("Less", Op::lt, true);
  binary("Greater", Op::gt, true);
  binary("LessOrEqual", Op::le, true);
  binary("GreaterOrEqual", Op::ge, true);
  binary("And", Op::logical_and, true);
  binary("Or", Op::logical_or, true);
  binary("Xor", Op::ne, true);  // on booleans, exclusive or is inequality
  lower_table()["IsNaN"] = [](Lowering &L, Node &n) {
    const Value *x = n.input(0);
    DType ct = float_type(L, x->dtype);
    lower_map(L, n, {x}, ct, DType::boolean, [&](Kernel &k, const std::vector<int> &a) {
      return k.expr_binary(Op::ne, a[0], a[0], DType::boolean);  // unordered: true only for NaN
    });
  };
  lower_table()["IsInf"] = [](Lowering &L, Node &n) {
    const Value *x = n.input(0);
    DType ct = float_type(L, x->dtype);
    bool pos = n.attr_int("detect_positive", 1) != 0, neg = n.attr_int("detect_negative", 1) != 0;
    lower_map(L, n, {x}, ct, DType::boolean, [&](Kernel &k, const std::vector<int> &a) {
      int p = k.expr_binary(Op::eq, a[0], k.expr_const(INFINITY, ct), DType::boolean);
      int m = k.expr_binary(Op::eq, a[0], k.expr_const(-INFINITY, ct), DType::boolean);
      if (pos && neg) return k.expr_binary(Op::logical_or, p, m, DType::boolean);
      if (pos) return p;
      if (neg) return m;
      return k.expr_binary(Op::ne, p, p, DType::boolean);  // neither: all false
    });
  };
  lower_table()["Mod"] = [](Lowering &L, Node &n) {
    const Value *a = n.input(0), *b = n.input(1);
    bool c_style = n.attr_int("fmod", 0) != 0;
    DType ct = compute_type(a->dtype);
    lower_map(L, n, {a, b}, ct, a->dtype, [&](Kernel &k, const std::vector<int> &v) {
      if (!c_style) return k.expr_binary(Op::mod, v[0], v[1], ct);
      // fmod: a - trunc(a / b) * b (sign of the dividend)
      int q = k.expr_unary(Op::trunc, k.expr_binary(Op::div, v[0], v[1], ct), ct);
      return k.expr_binary(Op::sub, v[0], k.expr_binary(Op::mul, q, v[1], ct), ct);
    });
  };
  lower_table()["PRelu"] = [](Lowering &L, Node &n) {
    const Value *x = n.input(0), *slope = n.input(1);
    DType ct = float_type(L, x->dtype);
    lower_map(L, n, {x, slope}, ct, x->dtype, [&](Kernel &k, const std::vector<int> &v) {
      return positive_or(k, v[0], k.expr_binary(Op::mul, v[0], v[1], ct), ct);
    });
  };
  variadic("Sum", Op::add, false);
  variadic("Mean", Op::add, true);
  variadic("Max", Op::max, false);
  variadic("Min", Op::min, false);

  lower_table()["Where"] = [](Lowering &L, Node &n) {
    const Value *c = n.input(0), *a = n.input(1), *b = n.input(2);
    if (!c || !a || !b) L.fail("needs three inputs");
    DType ct = compute_type(a->dtype);
    lower_map(L, n, {c, a, b}, ct, a->dtype, [&](Kernel &k, const std::vector<int> &v) {
      int cond = k.expr_binary(Op::ne, v[0], k.expr_const(0, ct), DType::boolean);
      return k.expr_select(cond, v[1], v[2], ct);
    });
  };
  lower_table()["Cast"] = [](Lowering &L, Node &n) {
    const Value *x = n.input(0);
    DType to = dtype_from_onnx_int(L, n.attr_int("to", 1));
    DType ct = compute_type(x->dtype);
    lower_map(L, n, {x}, ct, to, [&](Kernel &k, const std::vector<int> &a) {
      if (to == DType::boolean)
        return k.expr_binary(Op::ne, a[0], k.expr_const(0, ct), DType::boolean);
      return k.expr_cast(a[0], to);
    });
  };
  lower_table()["CastLike"] = [](Lowering &L, Node &n) {
    const Value *x = n.input(0), *like = n.input(1);
    DType to = like->dtype;
    DType ct = compute_type(x->dtype);
    lower_map(L, n, {x}, ct, to, [&](Kernel &k, const std::vector<int> &a) {
      if (to == DType::boolean)
        return k.expr_binary(Op::ne, a[0], k.expr_const(0, ct), DType::boolean);
      return k.expr_cast(a[0], to);
    });
  };
  lower_table()["Shrink"] = [](Lowering &L, Node &n) {
    // x < -lambd: x + bias; x > lambd: x - bias; else 0. Any numeric type.
    const Value *x = n.input(0);
    DType ct = compute_type(x->dtype);
    double lambd = n.attr_float("lambd", 0.5f), bias = n.attr_float("bias", 0.0f);
    lower_map(L, n, {x}, ct, x->dtype, [&](Kernel &k, const std::vector<int> &a) {
      // An integer input is compared in float32, so it meets a fractional lambd as a number.
      DType ft = dtype_is_float(ct) ? ct : DType::f32;
      int xf = k.expr_cast(a[0], ft);
      int lo = k.expr_binary(Op::lt, xf, k.expr_const(-lambd, ft), DType::boolean);
      int hi = k.expr_binary(Op::gt, xf, k.expr_const(lambd, ft), DType::boolean);
      int up = k.expr_cast(k.expr_binary(Op::add, xf, k.expr_const(bias, ft), ft), ct);
      int down = k.expr_cast(k.expr_binary(Op::sub, xf, k.expr_const(bias, ft), ft), ct);
      return k.expr_select(lo, up, k.expr_select(hi, down, k.expr_const(0, ct), ct), ct);
    });
  };
  lower_table()["QuantizeLinear"] = [](Lowering &L, Node &n) { lower_quantize(L, n, true); };
  lower_table()["DequantizeLinear"] = [](Lowering &L, Node &n) { lower_quantize(L, n, false); };
  lower_table()["Clip"] = [](Lowering &L, Node &n) {
    const Value *x = n.input(0);
    DType ct = compute_type(x->dtype);
    std::vector<const Value *> ins = {x};
    bool has_min = false, has_max = false;
    double lo = -INFINITY, hi = INFINITY;
    if (L.graph.opset < 11) {
      lo = n.attr_float("min", -INFINITY);
      hi = n.attr_float("max", INFINITY);
    } else {
      if (n.input(1)) {
        ins.push_back(n.input(1));
        has_min = true;
      }
      if (n.input(2)) {
        ins.push_back(n.input(2));
        has_max = true;
      }
    }
    for (size_t i = 1; i < ins.size(); i++)
      if (shape_numel(ins[i]->shape) != 1) L.fail("min and max must be scalars");
    lower_map(L, n, ins, ct, x->dtype, [&](Kernel &k, const std::vector<int> &v) {
      int r = v[0];
      int mn = has_min ? v[1] : (std::isinf(lo) ? -1 : k.expr_const(lo, ct));
      int mx = has_max ? v[has_min ? 2 : 1] : (std::isinf(hi) ? -1 : k.expr_const(hi, ct));
      if (mn >= 0) r = k.expr_binary(Op::max, r, mn, ct);
      if (mx >= 0) r = k.expr_binary(Op::min, r, mx, ct);
      return r;
    });
  };
}

}  // namespace capgraph
