#include "schedule/half_storage.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "graph/tensor.h"

namespace capgraph {

bool program_has_half(const Program &p) {
  for (const Buffer &buf : p.buffers)
    if (buf.dtype == DType::f16) return true;
  return false;
}

namespace {

// float16's largest finite value (IEEE 754 binary16: (2 - 2^-10) x 2^15).
constexpr double kHalfMax = 65504;

// Expression i without the casts around it.
int uncast(const Kernel &k, int i) {
  while (i >= 0 && k.exprs[i].op == Op::cast) i = k.exprs[i].a;
  return i;
}

// A product of two tensors: the body multiplies two loads (convolutions, matrix products).
bool kernel_is_product(const Kernel &k) {
  if (k.reduce != Reduce::sum || k.body < 0) return false;
  const Expr &b = k.exprs[k.body];
  return b.op == Op::mul && k.exprs[uncast(k, b.a)].op == Op::load &&
         k.exprs[uncast(k, b.b)].op == Op::load;
}

// Why kernel k's stored value may not fit float16 ("" if the rule lets it: half_storage.h).
std::string store_risk(const Kernel &k) {
  if ((k.reduce == Reduce::sum || k.reduce == Reduce::prod) && !kernel_is_product(k))
    return "a sum or product reduction that is not a product of two tensors (" + k.name + ")";
  const Op top = k.exprs[uncast(k, k.result)].op;
  if (top == Op::exp || top == Op::pow) return std::string(op_name(top)) + " (" + k.name + ")";
  return "";
}

// The largest finite |value| of a float32 constant, or infinity when one is not finite (a NaN or
// infinity stays what it is in float16, but a finite value past 65504 does not).
double constant_max_abs(const Tensor &t) {
  double m = 0;
  const float *f = reinterpret_cast<const float *>(t.data());
  for (int64_t i = 0, n = t.numel(); i < n; i++)
    if (std::isfinite(f[i])) m = std::max(m, (double)std::fabs(f[i]));
  return m;
}

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.6g", v);
  return s;
}

// Kernel k with every load of a buffer in `half` reading float16 and widening (a cast to float32
// right after the load) and its store rounding to float16 when its buffer is in `half`.
void kernel_store_half(Kernel &k, const std::vector<char> &half) {
  std::vector<Expr> out;
  out.reserve(k.exprs.size() + k.loads.size() + 1);
  std::vector<int> map(k.exprs.size(), -1);
  auto at = [&](int i) { return i < 0 ? -1 : map[i]; };
  for (size_t i = 0; i < k.exprs.size(); i++) {
    Expr e = k.exprs[i];
    const int n = op_arity(e.op);
    if (n > 0) e.a = at(e.a);
    if (n > 1) e.b = at(e.b);
    if (n > 2) e.c = at(e.c);
    if (e.op == Op::load && half[k.loads[e.access].buffer]) {
      e.dtype = DType::f16;
      out.push_back(e);
      Expr widen;
      widen.op = Op::cast;
      widen.dtype = DType::f32;
      widen.a = (int)out.size() - 1;
      out.push_back(widen);
    } else {
      out.push_back(e);
    }
    map[i] = (int)out.size() - 1;
  }
  k.exprs = std::move(out);
  k.body = at(k.body);
  k.result = at(k.result);
  for (Access &a : k.loads)
    for (DimIndex &d : a.dims) d.expr = at(d.expr);
  for (DimIndex &d : k.store.dims) d.expr = at(d.expr);
  if (half[k.store.buffer]) {
    k.result = k.expr_cast(k.result, DType::f16);
    k.store_dtype = DType::f16;
  }
}

}  // namespace

HalfPlan half_plan(const Program &p) {
  const size_t B = p.buffers.size();
  HalfPlan plan;
  std::vector<char> &half = plan.half;
  std::vector<std::string> &why = plan.why;
  half.assign(B, 0);
  why.assign(B, "");
  for (size_t i = 0; i < B; i++) {
    const Buffer &b = p.buffers[i];
    half[i] = b.dtype == DType::f32 &&
              (b.kind == Buffer::Kind::intermediate || b.kind == Buffer::Kind::constant);
  }
  // A buffer read or written as anything but float32 (a view reinterpreting it) stays as it is.
  for (const Kernel &k : p.kernels) {
    for (const Expr &e : k.exprs)
      if (e.op == Op::load && e.dtype != DType::f32) half[k.loads[e.access].buffer] = 0;
    if (k.store_dtype != DType::f32) half[k.store.buffer] = 0;
  }
  for (size_t i = 0; i < B; i++) {
    const Buffer &b = p.buffers[i];
    if (!half[i] || b.kind != Buffer::Kind::constant) continue;
    const double m = constant_max_abs(b.data);
    if (m > kHalfMax) plan.keep(i, "holds " + number(m) + ", past float16's largest value 65504");
  }
  for (const Kernel &k : p.kernels) {
    if (!half[k.store.buffer]) continue;
    std::string risk = store_risk(k);
    if (!risk.empty()) plan.keep((size_t)k.store.buffer, "written by " + risk);
  }
  return plan;
}

std::string buffer_label(const Program &p, size_t b) {
  return p.buffers[b].name.empty() ? "buffer " + std::to_string(b) : p.buffers[b].name;
}

HalfStorageReport program_store_half(Program &p) { return program_store_half(p, half_plan(p)); }

HalfStorageReport program_store_half(Program &p, const HalfPlan &plan) {
  HalfStorageReport r;
  const size_t B = p.buffers.size();
  const std::vector<char> &half = plan.half;
  for (size_t i = 0; i < B; i++)
    if (!half[i] && !plan.why[i].empty())
      r.kept.push_back(buffer_label(p, i) + " (" + plan.why[i] + ")");
  for (size_t i = 0; i < B; i++) {
    if (!half[i]) continue;
    Buffer &b = p.buffers[i];
    b.dtype = DType::f16;
    r.buffers++;
    r.bytes_saved += 2 * b.numel;
    if (b.kind != Buffer::Kind::constant) continue;
    const float *f = reinterpret_cast<const float *>(b.data.data());
    std::vector<uint8_t> bytes((size_t)(2 * b.data.numel()));
    for (int64_t j = 0; j < b.data.numel(); j++) {
      const uint16_t h = half_from_double(f[j]);
      std::memcpy(&bytes[(size_t)(2 * j)], &h, 2);
    }
    b.data = Tensor::from_bytes(DType::f16, b.data.shape, std::move(bytes));
  }
  for (Kernel &k : p.kernels) kernel_store_half(k, half);
  return r;
}

}  // namespace capgraph
