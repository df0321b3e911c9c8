#include "schedule/interpret.h"

#include <cmath>
#include <cstring>

#include "error.h"

namespace capgraph {

double element_load(DType t, const uint8_t *base, int64_t i) {
  const uint8_t *p = base + i * dtype_size(t);
  switch (t) {
    case DType::f32: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::f64: {
      double v;
      std::memcpy(&v, p, 8);
      return v;
    }
    case DType::i64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return (double)v;
    }
    case DType::i32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::i16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::i8: return (int8_t)*p;
    case DType::u8: return *p;
    case DType::boolean: return *p ? 1 : 0;
    case DType::f16: {
      Tensor t1;  // reuse the tensor's half conversion
      t1.dtype = DType::f16;
      t1.shape = {1};
      t1.bytes = std::make_shared<const std::vector<uint8_t>>(p, p + 2);
      return t1.at_f64(0);
    }
    case DType::bf16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
    }
    case DType::u16: {
      uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::u32: {
      uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case DType::u64: {
      uint64_t v;
      std::memcpy(&v, p, 8);
      return (double)v;
    }
  }
  return 0;
}

double value_as(DType t, double v) {
  switch (t) {
    case DType::f32: return (double)(float)v;
    case DType::f16: return half_to_float(half_from_double(v));
    case DType::bf16: return bf16_to_float(bf16_from_float((float)v));
    case DType::f64: return v;
    case DType::boolean: return v != 0 ? 1 : 0;
    default:
      if (std::isnan(v)) return 0;
      return std::trunc(v);
  }
}

void element_store(DType t, uint8_t *base, int64_t i, double v) {
  uint8_t *p = base + i * dtype_size(t);
  switch (t) {
    case DType::f32: {
      float f = (float)v;
      std::memcpy(p, &f, 4);
      break;
    }
    case DType::f64: std::memcpy(p, &v, 8); break;
    case DType::i64: {
      int64_t x = int64_saturate(v);
      std::memcpy(p, &x, 8);
      break;
    }
    case DType::i32: {
      int32_t x = (int32_t)int64_saturate(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::i16: {
      int16_t x = (int16_t)int64_saturate(v);
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::i8: *p = (uint8_t)(int8_t)int64_saturate(v); break;
    case DType::u8: *p = (uint8_t)int64_saturate(v); break;
    case DType::boolean: *p = v != 0; break;
    case DType::f16: {
      uint16_t h = half_from_double(v);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::bf16: {
      uint16_t h = bf16_from_float((float)v);
      std::memcpy(p, &h, 2);
      break;
    }
    case DType::u16: {
      uint16_t x = (uint16_t)int64_saturate(v);
      std::memcpy(p, &x, 2);
      break;
    }
    case DType::u32: {
      uint32_t x = (uint32_t)int64_saturate(v);
      std::memcpy(p, &x, 4);
      break;
    }
    case DType::u64: {  // above int64: converted as unsigned, not saturated at INT64_MAX
      uint64_t x = v >= 18446744073709551616.0  ? UINT64_MAX
                   : v >= 9223372036854775808.0 ? (uint64_t)v
                                                : (uint64_t)int64_saturate(v);
      std::memcpy(p, &x, 8);
      break;
    }
  }
}

namespace {

struct Interpreter {
  const Kernel &k;
  const Program &p;
  const std::vector<uint8_t *> &bufs;
  std::vector<int64_t> iter;
  std::vector<double> vals;
  double acc = 0;
  bool skipped = false;
  bool in_body = false;

  // Element offset of an access at the current point; false if a `skip` bound is out of range.
  bool access_offset(const Access &a, int64_t &off) {
    off = a.offset;
    for (const DimIndex &d : a.dims) {
      int64_t i = d.shift;
      for (const AxisTerm &t : d.terms) i += t.coef * iter[t.axis];
      // A data-dependent index (gather) is whatever the model's data says: far out is out of range.
      if (d.expr >= 0 && __builtin_add_overflow(i, int64_saturate(vals[d.expr]), &i)) i = -1;
      if (d.divisor != 1) {
        if (i % d.divisor != 0) {
          if (d.bound != Bound::skip)
            throw Error("internal: kernel '" + k.name + "' has a divisor without skip bound");
          return false;
        }
        i /= d.divisor;
      }
      if (i < 0 || i >= d.extent) {
        switch (d.bound) {
          case Bound::none:
            throw Error("internal: kernel '" + k.name + "' indexes " + std::to_string(i) +
                        " outside [0," + std::to_string(d.extent) + ")");
          case Bound::skip: return false;
          case Bound::clamp: i = i < 0 ? 0 : d.extent - 1; break;
          case Bound::reflect:
            if (d.extent == 1) {
              i = 0;
            } else {
              int64_t period = 2 * (d.extent - 1);
              i = ((i % period) + period) % period;
              if (i >= d.extent) i = period - i;
            }
            break;
          case Bound::wrap: i = ((i % d.extent) + d.extent) % d.extent; break;
        }
      }
      off += i * d.stride;
    }
    return true;
  }

  double eval_op(const Expr &e) {
    double a = e.a >= 0 ? vals[e.a] : 0, b = e.b >= 0 ? vals[e.b] : 0, c = e.c >= 0 ? vals[e.c] : 0;
    bool is_int = !dtype_is_float(e.dtype) && e.dtype != DType::boolean;
    switch (e.op) {
      case Op::constant: return e.value;
      case Op::acc: return acc;
      case Op::iota: return (double)iter[e.access];
      case Op::load: {
        const Access &ac = k.loads[e.access];
        int64_t off;
        if (!access_offset(ac, off)) {
          if (in_body) skipped = true;
          return ac.fill;
        }
        return element_load(p.buffers[ac.buffer].dtype, bufs[ac.buffer], off);
      }
      case Op::cast: return a;
      case Op::neg: return -a;
      case Op::abs: return std::fabs(a);
      case Op::sqrt: return std::sqrt(a);
      case Op::exp: return std::exp(a);
      case Op::log: return std::log(a);
      case Op::tanh: return std::tanh(a);
      case Op::sigmoid: return 1.0 / (1.0 + std::exp(-a));
      case Op::erf: return std::erf(a);
      case Op::floor: return std::floor(a);
      case Op::ceil: return std::ceil(a);
      case Op::round: return std::nearbyint(a);
      case Op::trunc: return std::trunc(a);
      case Op::recip: return 1.0 / a;
      case Op::logical_not: return a == 0;
      case Op::add: return a + b;
      case Op::sub: return a - b;
      case Op::mul: return a * b;
      case Op::div:
        if (is_int) return b == 0 ? 0 : std::trunc(a / b);
        return a / b;
      case Op::mod:
        if (b == 0) return is_int ? 0 : NAN;
        return a - std::floor(a / b) * b;
      case Op::pow: return std::pow(a, b);
      case Op::max: return std::isnan(a) || std::isnan(b) ? NAN : (a > b ? a : b);
      case Op::min: return std::isnan(a) || std::isnan(b) ? NAN : (a < b ? a : b);
      case Op::lt: return a < b;
      case Op::le: return a <= b;
      case Op::gt: return a > b;
      case Op::ge: return a >= b;
      case Op::eq: return a == b;
      case Op::ne: return a != b;
      case Op::logical_and: return a != 0 && b != 0;
      case Op::logical_or: return a != 0 || b != 0;
      case Op::select: return a != 0 ? b : c;
    }
    // No default above, so -Wswitch names an op without a case; op_emitters_test runs them all.
    throw Error(
        std::string("internal: the interpreter (schedule/interpret.cpp) has no case for op ") +
        op_name(e.op));
  }

  // Evaluates every expression `root` depends on, in index order (operands come first).
  double eval(int root, const std::vector<char> &needed) {
    for (int i = 0; i <= root; i++)
      if (needed[i]) vals[i] = value_as(k.exprs[i].dtype, eval_op(k.exprs[i]));
    return vals[root];
  }

  std::vector<char> needed_by(int root) {
    std::vector<char> need(k.exprs.size(), 0);
    if (root < 0) return need;
    need[root] = 1;
    for (int i = root; i >= 0; i--) {
      if (!need[i]) continue;
      const Expr &e = k.exprs[i];
      for (int a : {e.a, e.b, e.c})
        if (a >= 0 && a < i && op_arity(e.op) > 0) need[a] = 1;
      if (e.op == Op::load)
        for (const DimIndex &d : k.loads[e.access].dims)
          if (d.expr >= 0) need[d.expr] = 1;
    }
    return need;
  }

  // Visits every point of axes [first, last) in row-major order, with the outer axes fixed.
  template <typename F>
  void for_each_point(int first, int last, F &&f) {
    for (int i = first; i < last; i++) iter[i] = 0;
    if (first == last) {
      f();
      return;
    }
    while (true) {
      f();
      int d = last - 1;
      while (d >= first && ++iter[d] == k.axes[d]) iter[d--] = 0;
      if (d < first) return;
    }
  }

  void run() {
    iter.assign(k.axes.size(), 0);
    vals.assign(k.exprs.size(), 0);
    std::vector<char> body_need = needed_by(k.body), result_need = needed_by(k.result);
    int np = k.n_parallel, na = (int)k.axes.size();
    for_each_point(0, np, [&] {
      if (k.reduce != Reduce::none) {
        acc = reduce_identity(k.reduce);
        in_body = true;
        for_each_point(np, na, [&] {
          skipped = false;
          double v = eval(k.body, body_need);
          if (skipped) return;
          switch (k.reduce) {
            case Reduce::sum: acc += v; break;
            case Reduce::prod: acc *= v; break;
            case Reduce::max: acc = std::isnan(v) || v > acc ? v : acc; break;
            case Reduce::min: acc = std::isnan(v) || v < acc ? v : acc; break;
            case Reduce::none: break;
          }
          acc = value_as(k.acc_dtype, acc);
        });
        in_body = false;
      }
      double v = eval(k.result, result_need);
      int64_t off;
      if (!access_offset(k.store, off)) return;
      element_store(k.store_dtype, bufs[k.store.buffer], off, v);
    });
  }
};

}  // namespace

void kernel_interpret(const Kernel &k, const Program &p, const std::vector<uint8_t *> &buffers) {
  Interpreter it{k, p, buffers, {}, {}, 0, false, false};
  it.run();
}

}  // namespace capgraph
