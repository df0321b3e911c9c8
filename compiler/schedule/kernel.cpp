#include "schedule/kernel.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "error.h"

namespace capgraph {

const char *op_name(Op op) {
#define CAPGRAPH_OP_NAME(op, name, arity) name,
  static constexpr const char *names[] = {CAPGRAPH_OPS(CAPGRAPH_OP_NAME)};
#undef CAPGRAPH_OP_NAME
  return names[(int)op];
}

int op_arity(Op op) {
#define CAPGRAPH_OP_ARITY(op, name, arity) arity,
  static constexpr int arities[] = {CAPGRAPH_OPS(CAPGRAPH_OP_ARITY)};
#undef CAPGRAPH_OP_ARITY
  return arities[(int)op];
}

bool dim_uses(const DimIndex &d, int axis) {
  for (const AxisTerm &t : d.terms)
    if (t.axis == axis && t.coef != 0) return true;
  return false;
}

bool expr_elementwise(const Kernel &k, int i, bool (*plain)(const Access &),
                      std::vector<int> *loads) {
  const Expr &e = k.exprs[i];
  switch (e.op) {
    case Op::constant: return true;
    case Op::load:
      if (!plain(k.loads[e.access])) return false;
      if (loads && std::find(loads->begin(), loads->end(), e.access) == loads->end())
        loads->push_back(e.access);
      return true;
    case Op::cast:
    case Op::neg:
    case Op::abs:
    case Op::sigmoid: return dtype_is_float(e.dtype) && expr_elementwise(k, e.a, plain, loads);
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
    case Op::max:
    case Op::min:
      return dtype_is_float(e.dtype) && expr_elementwise(k, e.a, plain, loads) &&
             expr_elementwise(k, e.b, plain, loads);
    default: return false;
  }
}

bool access_uses(const Access &a, int axis) {
  for (const DimIndex &d : a.dims)
    if (dim_uses(d, axis)) return true;
  return false;
}

double reduce_identity(Reduce r) {
  switch (r) {
    case Reduce::max: return -std::numeric_limits<double>::infinity();
    case Reduce::min: return std::numeric_limits<double>::infinity();
    case Reduce::prod: return 1;
    default: return 0;
  }
}

int Kernel::expr_const(double v, DType t) {
  Expr e;
  e.op = Op::constant;
  e.value = v;
  e.dtype = t;
  exprs.push_back(e);
  return (int)exprs.size() - 1;
}

int Kernel::expr_load(Access a, DType t) {
  loads.push_back(std::move(a));
  Expr e;
  e.op = Op::load;
  e.access = (int)loads.size() - 1;
  e.dtype = t;
  exprs.push_back(e);
  return (int)exprs.size() - 1;
}

int Kernel::expr_unary(Op op, int a, DType t) {
  Expr e;
  e.op = op;
  e.a = a;
  e.dtype = t;
  exprs.push_back(e);
  return (int)exprs.size() - 1;
}

int Kernel::expr_binary(Op op, int a, int b, DType t) {
  Expr e;
  e.op = op;
  e.a = a;
  e.b = b;
  e.dtype = t;
  exprs.push_back(e);
  return (int)exprs.size() - 1;
}

int Kernel::expr_select(int cond, int a, int b, DType t) {
  Expr e;
  e.op = Op::select;
  e.a = cond;
  e.b = a;
  e.c = b;
  e.dtype = t;
  exprs.push_back(e);
  return (int)exprs.size() - 1;
}

int Kernel::expr_iota(int axis, DType t) {
  Expr e;
  e.op = Op::iota;
  e.access = axis;
  e.dtype = t;
  exprs.push_back(e);
  return (int)exprs.size() - 1;
}

std::vector<int> Kernel::expr_append(const Kernel &src, const std::vector<int> &load_map,
                                     const std::vector<int> &with) {
  std::vector<int> map(src.exprs.size(), -1);
  for (size_t i = 0; i < src.exprs.size(); i++) {
    if (!with.empty() && with[i] >= 0) {
      map[i] = with[i];
      continue;
    }
    Expr e = src.exprs[i];
    if (e.a >= 0) e.a = map[e.a];
    if (e.b >= 0) e.b = map[e.b];
    if (e.c >= 0) e.c = map[e.c];
    if (e.op == Op::load) e.access = load_map[e.access];
    exprs.push_back(e);
    map[i] = (int)exprs.size() - 1;
  }
  return map;
}

int Kernel::expr_cast(int a, DType t) {
  if (exprs[a].dtype == t) return a;
  return expr_unary(Op::cast, a, t);
}

static void check_access(const Kernel &k, const Program &p, const Access &a, int max_axis,
                         const char *what) {
  auto fail = [&](const std::string &m) {
    throw Error("internal: kernel '" + k.name + "' " + what + ": " + m);
  };
  if (a.buffer < 0 || a.buffer >= (int)p.buffers.size()) fail("buffer index out of range");
  for (const DimIndex &d : a.dims) {
    for (const AxisTerm &t : d.terms)
      if (t.axis < 0 || t.axis >= max_axis)
        fail("axis " + std::to_string(t.axis) + " out of range");
    if (d.expr >= (int)k.exprs.size()) fail("index expression out of range");
    if (d.extent <= 0) fail("empty dimension");
    if (d.divisor < 1) fail("bad divisor");
  }
}

void kernel_check(const Kernel &k, const Program &p) {
  auto fail = [&](const std::string &m) { throw Error("internal: kernel '" + k.name + "': " + m); };
  if (k.n_parallel < 0 || k.n_parallel > (int)k.axes.size()) fail("bad n_parallel");
  if (k.exprs.size() > kKernelMaxExprs)
    fail(std::to_string(k.exprs.size()) + " expressions, more than " +
         std::to_string(kKernelMaxExprs));
  for (int64_t n : k.axes)
    if (n <= 0) fail("empty axis");
  bool has_reduce = k.n_parallel < (int)k.axes.size();
  if (has_reduce != (k.reduce != Reduce::none)) fail("reduce op and reduction axes disagree");
  if (has_reduce && (k.body < 0 || k.body >= (int)k.exprs.size())) fail("missing body");
  if (k.result < 0 || k.result >= (int)k.exprs.size()) fail("missing result");
  for (size_t i = 0; i < k.exprs.size(); i++) {
    const Expr &e = k.exprs[i];
    int n = op_arity(e.op);
    int args[3] = {e.a, e.b, e.c};
    for (int j = 0; j < n; j++)
      if (args[j] < 0 || args[j] >= (int)i)
        fail("expression " + std::to_string(i) + " refers forward");
    if (e.op == Op::load && (e.access < 0 || e.access >= (int)k.loads.size()))
      fail("load index out of range");
    if (e.op == Op::iota && (e.access < 0 || e.access >= (int)k.axes.size()))
      fail("iota axis out of range");
  }
  for (const Access &a : k.loads) check_access(k, p, a, (int)k.axes.size(), "load");
  check_access(k, p, k.store, k.n_parallel, "store");
}

}  // namespace capgraph
