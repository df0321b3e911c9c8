#include "codegen/expr_vector.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace capgraph {

namespace {

// The values an integer type holds (as doubles; int64 and uint64 only as far as doubles reach).
ValueRange dtype_range(DType t) {
  switch (t) {
    case DType::boolean: return {0, 1, true};
    case DType::i8: return {INT8_MIN, INT8_MAX, true};
    case DType::u8: return {0, UINT8_MAX, true};
    case DType::i16: return {INT16_MIN, INT16_MAX, true};
    case DType::u16: return {0, UINT16_MAX, true};
    case DType::i32: return {INT32_MIN, INT32_MAX, true};
    case DType::u32: return {0, UINT32_MAX, true};
    case DType::i64:
    case DType::u64: return {-INFINITY, INFINITY, true};
    default: return {};
  }
}

// a + b of bounds, where -inf + inf (an unknown bound) stays unknown in the direction asked.
double bound_add(double a, double b, double unknown) {
  double s = a + b;
  return std::isnan(s) ? unknown : s;
}

// A load whose vector form is plain: unbounded dims without gathers or divisors, contiguous along
// the lane axis or not moving with it.
bool load_vector_plain(const Access &a, int axis) {
  int64_t c = 0;
  for (const DimIndex &d : a.dims) {
    if (d.bound != Bound::none || d.expr >= 0 || d.divisor != 1) return false;
    for (const AxisTerm &t : d.terms)
      if (t.axis == axis) c += t.coef * d.stride;
  }
  return c == 0 || c == 1;
}

// The integer types whose loads the vector form widens to float lanes (exactly: all fit a float's
// 24-bit mantissa but int32, which rounds as the scalar int64 -> float conversion does).
bool dtype_vector_loadable(DType t) {
  return t == DType::u8 || t == DType::i8 || t == DType::u16 || t == DType::i16 || t == DType::i32;
}

// Both walks below remember each expression's answer: fused kernels share subexpressions (a
// swish uses its input twice), and a plain recursion would visit them 2^depth times.
ValueRange range_of(const Kernel &k, const Program &p, int i,
                    std::vector<std::optional<ValueRange>> &memo);

ValueRange range_compute(const Kernel &k, const Program &p, int i,
                         std::vector<std::optional<ValueRange>> &memo) {
  const Expr &e = k.exprs[i];
  if (e.op == Op::constant)
    return {e.value, e.value, std::isfinite(e.value) && e.value == std::floor(e.value)};
  if (e.op == Op::load) return dtype_range(p.buffers[k.loads[e.access].buffer].dtype);
  if (op_arity(e.op) == 0 || e.dtype == DType::boolean)
    return dtype_is_float(e.dtype) ? ValueRange{} : dtype_range(e.dtype);
  ValueRange a = range_of(k, p, e.a, memo),
             b = op_arity(e.op) > 1 ? range_of(k, p, e.b, memo) : ValueRange{};
  switch (e.op) {
    case Op::cast: {
      if (dtype_is_float(e.dtype))
        return a;  // (to float16/bfloat16 the values are outside the vector path anyway)
      // float -> integer truncates (NaN gives 0); beyond the type's range the fused and the stored
      // forms differ (saturate against wrap), so only a range inside it is known.
      ValueRange t = dtype_range(e.dtype);
      if (a.lo >= t.lo && a.hi <= t.hi) return {std::trunc(a.lo), std::trunc(a.hi), true};
      return {-INFINITY, INFINITY, true};
    }
    case Op::floor:
    case Op::ceil:
    case Op::round:
    case Op::trunc: return {std::floor(a.lo), std::ceil(a.hi), true};
    case Op::neg: return {-a.hi, -a.lo, a.integral};
    // Float sums of integers are integers: a rounded sum of two integer-valued floats is one.
    case Op::add:
      return {bound_add(a.lo, b.lo, -INFINITY), bound_add(a.hi, b.hi, INFINITY),
              a.integral && b.integral};
    case Op::sub:
      return {bound_add(a.lo, -b.hi, -INFINITY), bound_add(a.hi, -b.lo, INFINITY),
              a.integral && b.integral};
    case Op::max: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi), a.integral && b.integral};
    case Op::min: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi), a.integral && b.integral};
    default: return dtype_is_float(e.dtype) ? ValueRange{} : dtype_range(e.dtype);
  }
}

ValueRange range_of(const Kernel &k, const Program &p, int i,
                    std::vector<std::optional<ValueRange>> &memo) {
  if (!memo[i]) memo[i] = range_compute(k, p, i, memo);
  return *memo[i];
}

struct VectorWalk {
  const Kernel &k;
  const Program &p;
  int axis;
  std::vector<std::optional<ValueRange>> ranges;
  std::vector<signed char> memo;  // -1 unknown, else the answer
  bool evaluable(int i) {
    if (memo[i] < 0) memo[i] = compute(i);
    return memo[i];
  }
  bool compute(int root);
};

bool VectorWalk::compute(int root) {
  const Expr &e = k.exprs[root];
  if (e.dtype != DType::f32) return false;
  switch (e.op) {
    case Op::constant:
    case Op::acc: return true;
    case Op::load:
      return p.buffers[k.loads[e.access].buffer].dtype == DType::f32 &&
             load_vector_plain(k.loads[e.access], axis);
    case Op::cast: {
      // To float32 from: float32 (nothing to do); a plain integer load (widened per lane); or a
      // float -> integer cast whose operand is known inside the integer type (a QDQ model's
      // QuantizeLinear + DequantizeLinear pair fused into one kernel: round, add the zero point,
      // clamp to the quantized type, cast there and back), where the pair only truncates.
      const Expr &o = k.exprs[e.a];
      if (o.dtype == DType::f32) return evaluable(e.a);
      if (o.op == Op::load) {
        DType bt = p.buffers[k.loads[o.access].buffer].dtype;
        return bt == o.dtype && dtype_vector_loadable(bt) &&
               load_vector_plain(k.loads[o.access], axis);
      }
      // A float32 value rounded to float16 and widened back (a float16 buffer that fusion removed).
      if (o.op == Op::cast && o.dtype == DType::f16 && k.exprs[o.a].dtype == DType::f32)
        return evaluable(o.a);
      if (o.op != Op::cast || dtype_is_float(o.dtype) || o.dtype == DType::boolean ||
          k.exprs[o.a].dtype != DType::f32)
        return false;
      ValueRange r = range_of(k, p, o.a, ranges), t = dtype_range(o.dtype);
      return r.lo >= t.lo && r.hi <= t.hi && evaluable(o.a);
    }
    case Op::neg:
    case Op::abs:
    case Op::sqrt:
    case Op::exp:
    case Op::log:
    case Op::tanh:
    case Op::sigmoid:
    case Op::erf:
    case Op::floor:
    case Op::ceil:
    case Op::round:
    case Op::trunc:
    case Op::recip:
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::max:
    case Op::min:
    case Op::pow: return evaluable(e.a) && (op_arity(e.op) < 2 || evaluable(e.b));
    default: return false;
  }
}

}  // namespace

ValueRange expr_range(const Kernel &k, const Program &p, int i) {
  std::vector<std::optional<ValueRange>> memo(k.exprs.size());
  return range_of(k, p, i, memo);
}

bool expr_vector_evaluable(const Kernel &k, const Program &p, int root, int axis) {
  VectorWalk w{k, p, axis, std::vector<std::optional<ValueRange>>(k.exprs.size()),
               std::vector<signed char>(k.exprs.size(), -1)};
  return w.evaluable(root);
}

bool expr_holds_integer_round_trip(const Kernel &k, int root) {
  // Each expression once (shared subexpressions would make a recursion exponential).
  std::vector<char> seen(k.exprs.size(), 0);
  std::vector<int> todo = {root};
  while (!todo.empty()) {
    int i = todo.back();
    todo.pop_back();
    if (i < 0 || seen[i]) continue;
    seen[i] = 1;
    const Expr &e = k.exprs[i];
    int n = op_arity(e.op);
    if (e.op == Op::cast && !dtype_is_float(k.exprs[e.a].dtype) && k.exprs[e.a].op == Op::cast)
      return true;
    for (int o : {n > 0 ? e.a : -1, n > 1 ? e.b : -1, n > 2 ? e.c : -1}) todo.push_back(o);
  }
  return false;
}

}  // namespace capgraph
