// Reductions and the ops built from them: Reduce*, Softmax/LogSoftmax, ArgMax/ArgMin,
// InstanceNormalization and LayerNormalization. The reduced dimensions become reduction axes;
// the kept ones are the parallel axes, so a reduction over any set of axes is one kernel.
#include <cmath>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// Kernel iterating kept dims (parallel) then reduced dims, both in x's dimension order.
struct ReducePlan {
  std::vector<bool> reduced;
  Shape kept_shape;          // the parallel axes
  std::vector<int> axis_of;  // x dim -> iteration axis
  Shape axes;
  int n_parallel = 0;
  int64_t count = 1;  // elements folded per output
};

ReducePlan reduce_plan(const Shape &x, const std::vector<bool> &reduced) {
  ReducePlan p;
  p.reduced = reduced;
  p.axis_of.assign(x.size(), -1);
  for (size_t d = 0; d < x.size(); d++)
    if (!reduced[d]) {
      p.axis_of[d] = (int)p.axes.size();
      p.axes.push_back(x[d]);
      p.kept_shape.push_back(x[d]);
    }
  p.n_parallel = (int)p.axes.size();
  for (size_t d = 0; d < x.size(); d++)
    if (reduced[d]) {
      p.axis_of[d] = (int)p.axes.size();
      p.axes.push_back(x[d]);
      p.count *= x[d];
    }
  if (p.n_parallel == 0) {  // full reduction: one parallel point
    p.axes.insert(p.axes.begin(), 1);
    p.n_parallel = 1;
    for (int &a : p.axis_of) a++;
  }
  return p;
}

// A kernel reducing f(x) over the plan into `out` (contiguous, numel = kept elements).
Kernel &reduce_kernel(Lowering &L, const std::string &name, const ReducePlan &p, const Loc &x,
                      const Loc &out, Reduce r, const std::function<int(Kernel &, int)> &body,
                      const std::function<int(Kernel &, int)> &result) {
  Kernel &k = L.kernel_new(name);
  k.axes = p.axes;
  k.n_parallel = p.n_parallel;
  int xe = k.expr_cast(k.expr_load(access_axes(x, p.axis_of), x.dtype), DType::f32);
  k.body = body(k, xe);
  // No reduced axes (noop_with_empty_axes): each element is reduced alone, in a plain map.
  bool reduces = p.n_parallel < (int)p.axes.size();
  int acc = reduces ? k.expr_unary(Op::acc, -1, DType::f32) : k.body;
  if (!reduces) k.body = -1;
  k.reduce = reduces ? r : Reduce::none;
  k.result = k.expr_cast(result(k, acc), out.dtype);
  Loc o = out;
  o.shape = p.kept_shape;
  o.strides = shape_strides(o.shape);
  std::vector<int> oaxes;
  int first = p.kept_shape.empty() ? 1 : 0;  // skip the dummy axis of a full reduction
  for (size_t i = 0; i < p.kept_shape.size(); i++) oaxes.push_back((int)i + first);
  k.store = access_axes(o, oaxes);
  k.store_dtype = out.dtype;
  k.flops = shape_numel(x.shape);
  return k;
}

// An access to a reduced tensor (kept dims only, contiguous) from the full x iteration space.
Access access_kept(const Loc &reduced, const ReducePlan &p, const Shape &x_shape) {
  Loc l = reduced;
  l.shape = p.kept_shape;
  l.strides = shape_strides(l.shape);
  std::vector<int> axes;
  for (size_t d = 0; d < x_shape.size(); d++)
    if (!p.reduced[d]) axes.push_back((int)d);
  return access_axes(l, axes);
}

std::vector<bool> reduced_dims(Lowering &L, Node &n, size_t rank, bool axes_from_input) {
  std::vector<int64_t> axes;
  bool has_axes = false;
  if (axes_from_input) {
    if (n.input(1)) {
      axes = L.const_input(1, "axes").to_i64();
      has_axes = true;
    }
  } else if (n.attr("axes")) {
    axes = n.attr_ints("axes");
    has_axes = true;
  }
  std::vector<bool> red(rank, false);
  if (!has_axes || axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0)) return red;
    red.assign(rank, true);
    return red;
  }
  for (int64_t a : axes) red[axis_normalize(L, a, rank)] = true;
  return red;
}

void lower_reduce(Lowering &L, Node &n, Reduce r, const std::string &kind) {
  const Value *x = n.input(0);
  if (!dtype_is_float(x->dtype)) L.fail("only float inputs are supported");
  bool from_input = L.graph.opset >= 18 || (n.op == "ReduceSum" && L.graph.opset >= 13);
  std::vector<bool> red = reduced_dims(L, n, x->shape.size(), from_input);
  bool keep = n.attr_int("keepdims", 1) != 0;
  Shape out_shape;
  for (size_t d = 0; d < x->shape.size(); d++)
    if (!red[d])
      out_shape.push_back(x->shape[d]);
    else if (keep)
      out_shape.push_back(1);
  Loc xl = L.loc(x);
  Loc y = L.output_new(n.outputs[0], x->dtype, out_shape);
  ReducePlan p = reduce_plan(x->shape, red);
  if (p.count == 0 || shape_numel(out_shape) == 0)
    L.fail("reducing an empty tensor is not supported");
  double inv = 1.0 / (double)p.count;
  if (kind == "logsumexp") {
    // max + log(sum(exp(x - max))): exp cannot overflow (ONNX Runtime computes it so too).
    Loc m = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                         n.outputs[0]->name + "_max");
    reduce_kernel(
        L, "reduce_logsumexp_max", p, xl, m, Reduce::max, [](Kernel &, int v) { return v; },
        [](Kernel &, int a) { return a; });
    std::vector<int> kept_axes;
    for (size_t d = 0; d < x->shape.size(); d++)
      if (!red[d]) kept_axes.push_back(p.axis_of[d]);
    auto max_of = [&](Kernel &k) { return k.expr_load(access_axes(m, kept_axes), DType::f32); };
    reduce_kernel(
        L, "reduce_logsumexp", p, xl, y, Reduce::sum,
        [&](Kernel &k, int v) {
          return k.expr_unary(Op::exp, k.expr_binary(Op::sub, v, max_of(k), DType::f32),
                              DType::f32);
        },
        [&](Kernel &k, int a) {
          return k.expr_binary(Op::add, k.expr_unary(Op::log, a, DType::f32), max_of(k),
                               DType::f32);
        });
    return;
  }
  auto body = [&](Kernel &k, int v) {
    if (kind == "sumsquare" || kind == "l2") return k.expr_binary(Op::mul, v, v, DType::f32);
    if (kind == "l1") return k.expr_unary(Op::abs, v, DType::f32);
    return v;
  };
  auto result = [&](Kernel &k, int acc) {
    if (kind == "mean")
      return k.expr_binary(Op::mul, acc, k.expr_const(inv, DType::f32), DType::f32);
    if (kind == "l2") return k.expr_unary(Op::sqrt, acc, DType::f32);
    if (kind == "logsum") return k.expr_unary(Op::log, acc, DType::f32);
    return acc;
  };
  reduce_kernel(L, "reduce_" + kind, p, xl, y, r, body, result);
}

// Softmax and LogSoftmax: max, then sum of exp(x - max), then the normalised values.
void lower_softmax(Lowering &L, Node &n, bool log) {
  const Value *x = n.input(0);
  if (x->dtype != DType::f32) L.fail("only float32 is supported");
  size_t r = x->shape.size();
  int64_t axis = n.attr_int("axis", L.graph.opset >= 13 ? -1 : 1);
  int ax = axis_normalize(L, axis, r);
  std::vector<bool> red(r, false);
  if (L.graph.opset >= 13) {
    red[ax] = true;
  } else {
    for (size_t d = ax; d < r; d++) red[d] = true;  // older opsets: coerced to 2-D at axis
  }
  ReducePlan p = reduce_plan(x->shape, red);
  Loc xl = L.loc(x);
  Loc m = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                       n.outputs[0]->name + "_max");
  Loc s = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                       n.outputs[0]->name + "_sum");
  reduce_kernel(
      L, "softmax_max", p, xl, m, Reduce::max, [](Kernel &, int v) { return v; },
      [](Kernel &, int a) { return a; });
  {
    Kernel &k = reduce_kernel(
        L, "softmax_sum", p, xl, s, Reduce::sum, [](Kernel &, int v) { return v; },
        [](Kernel &, int a) { return a; });
    // body = exp(x - max): max is indexed by the kept axes only
    Loc ml = m;
    ml.shape = p.kept_shape;
    ml.strides = shape_strides(ml.shape);
    std::vector<int> axes;
    for (size_t d = 0; d < r; d++)
      if (!red[d]) axes.push_back(p.axis_of[d]);
    int me = k.expr_load(access_axes(ml, axes), DType::f32);
    k.body = k.expr_unary(Op::exp, k.expr_binary(Op::sub, k.body, me, DType::f32), DType::f32);
  }
  Loc y = L.output_new(n.outputs[0], DType::f32, x->shape);
  Kernel &k = L.kernel_new(log ? "log_softmax" : "softmax");
  k.axes = x->shape;
  k.n_parallel = (int)r;
  int xe = k.expr_load(access_broadcast(xl, (int)r), DType::f32);
  int me = k.expr_load(access_kept(m, p, x->shape), DType::f32);
  int se = k.expr_load(access_kept(s, p, x->shape), DType::f32);
  int d = k.expr_binary(Op::sub, xe, me, DType::f32);
  k.result = log ? k.expr_binary(Op::sub, d, k.expr_unary(Op::log, se, DType::f32), DType::f32)
                 : k.expr_binary(Op::div, k.expr_unary(Op::exp, d, DType::f32), se, DType::f32);
  k.store = access_store(y);
  k.flops = 5 * shape_numel(x->shape);
}

// (x - mean) / sqrt(var + eps) * scale + bias over the reduced dims; scale/bias broadcast as given.
// Returns the mean and variance buffers (kept dims, contiguous) for outputs that want them.
std::pair<Loc, Loc> lower_normalize(Lowering &L, Node &n, const std::vector<bool> &red,
                                    const Loc &scale, const Loc &bias,
                                    const std::vector<int> &param_axes, double eps) {
  const Value *x = n.input(0);
  if (x->dtype != DType::f32) L.fail("only float32 is supported");
  ReducePlan p = reduce_plan(x->shape, red);
  Loc xl = L.loc(x);
  Loc mean = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                          n.outputs[0]->name + "_mean");
  Loc var = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                         n.outputs[0]->name + "_var");
  double inv = 1.0 / (double)p.count;
  reduce_kernel(
      L, "norm_mean", p, xl, mean, Reduce::sum, [](Kernel &, int v) { return v; },
      [&](Kernel &k, int a) {
        return k.expr_binary(Op::mul, a, k.expr_const(inv, DType::f32), DType::f32);
      });
  {
    Kernel &k = reduce_kernel(
        L, "norm_var", p, xl, var, Reduce::sum, [](Kernel &, int v) { return v; },
        [&](Kernel &k2, int a) {
          return k2.expr_binary(Op::mul, a, k2.expr_const(inv, DType::f32), DType::f32);
        });
    Loc ml = mean;
    ml.shape = p.kept_shape;
    ml.strides = shape_strides(ml.shape);
    std::vector<int> axes;
    for (size_t d = 0; d < x->shape.size(); d++)
      if (!red[d]) axes.push_back(p.axis_of[d]);
    int me = k.expr_load(access_axes(ml, axes), DType::f32);
    int dv = k.expr_binary(Op::sub, k.body, me, DType::f32);
    k.body = k.expr_binary(Op::mul, dv, dv, DType::f32);
  }
  Loc y = L.output_new(n.outputs[0], DType::f32, x->shape);
  Kernel &k = L.kernel_new("normalize");
  int r = (int)x->shape.size();
  k.axes = x->shape;
  k.n_parallel = r;
  int xe = k.expr_load(access_broadcast(xl, r), DType::f32);
  int me = k.expr_load(access_kept(mean, p, x->shape), DType::f32);
  int ve = k.expr_load(access_kept(var, p, x->shape), DType::f32);
  int rs = k.expr_unary(
      Op::recip,
      k.expr_unary(Op::sqrt, k.expr_binary(Op::add, ve, k.expr_const(eps, DType::f32), DType::f32),
                   DType::f32),
      DType::f32);
  int v = k.expr_binary(Op::mul, k.expr_binary(Op::sub, xe, me, DType::f32), rs, DType::f32);
  if (scale.buffer >= 0)
    v = k.expr_binary(Op::mul, v, k.expr_load(access_axes(scale, param_axes), DType::f32),
                      DType::f32);
  if (bias.buffer >= 0)
    v = k.expr_binary(Op::add, v, k.expr_load(access_axes(bias, param_axes), DType::f32),
                      DType::f32);
  k.result = v;
  k.store = access_store(y);
  k.flops = 8 * shape_numel(x->shape);
  return {mean, var};
}

void lower_instance_norm(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  size_t r = x->shape.size();
  if (r < 3) L.fail("expects an input of rank >= 3");
  std::vector<bool> red(r, true);
  red[0] = red[1] = false;
  Loc scale = L.loc(n.input(1)), bias = L.loc(n.input(2));
  if (scale.shape != Shape{x->shape[1]} || bias.shape != Shape{x->shape[1]})
    L.fail("scale and B must have C elements");
  lower_normalize(L, n, red, scale, bias, {1}, n.attr_float("epsilon", 1e-5f));
}

void lower_layer_norm(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  size_t r = x->shape.size();
  int ax = axis_normalize(L, n.attr_int("axis", -1), r);
  std::vector<bool> red(r, false);
  for (size_t d = ax; d < r; d++) red[d] = true;
  Loc scale = L.loc(n.input(1)), bias;
  if (n.input(2)) bias = L.loc(n.input(2));
  // scale/bias broadcast against the normalised trailing dims
  auto axes_for = [&](const Loc &l) {
    std::vector<int> a;
    for (size_t i = 0; i < l.shape.size(); i++) a.push_back((int)(r - l.shape.size() + i));
    return a;
  };
  if (bias.buffer >= 0 && bias.shape.size() != scale.shape.size())
    L.fail("scale and B must have the same rank");
  const double eps = n.attr_float("epsilon", 1e-5f);
  auto [mean, var] = lower_normalize(L, n, red, scale, bias, axes_for(scale), eps);
  // Mean and InvStdDev (optional outputs): x's shape with the normalised dims 1. Those dims are
  // the trailing ones, so the kept-dims buffers are already in that order.
  Shape stat_shape = x->shape;
  for (size_t d = ax; d < r; d++) stat_shape[d] = 1;
  if (n.outputs.size() > 1 && !n.outputs[1]->name.empty()) {
    Loc m = mean;
    m.shape = stat_shape;
    m.strides = shape_strides(stat_shape);
    L.output_view(n.outputs[1], m);
  }
  if (n.outputs.size() > 2 && !n.outputs[2]->name.empty()) {
    Loc y = L.output_new(n.outputs[2], DType::f32, stat_shape);
    Loc v = var;
    v.shape = stat_shape;
    v.strides = shape_strides(stat_shape);
    Kernel &k = L.kernel_new("layer_norm_inv_std_dev");
    k.axes = stat_shape.empty() ? Shape{1} : stat_shape;
    k.n_parallel = (int)k.axes.size();
    int ve = k.expr_load(access_broadcast(v, (int)stat_shape.size()), DType::f32);
    int sd = k.expr_unary(Op::sqrt,
                          k.expr_binary(Op::add, ve, k.expr_const(eps, DType::f32), DType::f32),
                          DType::f32);
    k.result = k.expr_unary(Op::recip, sd, DType::f32);
    k.store = access_store(y);
    k.store_dtype = DType::f32;
  }
}

// MeanVarianceNormalization: (x - mean) / sqrt(variance) over `axes` (default N, H, W). ONNX's
// function body adds 1e-9 to the square root; here 1e-18 goes under it, the same to float32.
void lower_mvn(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  size_t r = x->shape.size();
  std::vector<int64_t> axes = n.attr_ints("axes", {0, 2, 3});
  std::vector<bool> red(r, false);
  for (int64_t a : axes) red[axis_normalize(L, a, r)] = true;
  lower_normalize(L, n, red, Loc{}, Loc{}, {}, 1e-18);
}

// ArgMax/ArgMin: the max, then the first (or last) index where x equals it.
void lower_arg(Lowering &L, Node &n, bool is_max) {
  const Value *x = n.input(0);
  size_t r = x->shape.size();
  int ax = axis_normalize(L, n.attr_int("axis", 0), r);
  bool keep = n.attr_int("keepdims", 1) != 0, last = n.attr_int("select_last_index", 0) != 0;
  std::vector<bool> red(r, false);
  red[ax] = true;
  ReducePlan p = reduce_plan(x->shape, red);
  Loc xl = L.loc(x);
  Loc m = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                       n.outputs[0]->name + "_extreme");
  reduce_kernel(
      L, is_max ? "argmax_value" : "argmin_value", p, xl, m, is_max ? Reduce::max : Reduce::min,
      [](Kernel &, int v) { return v; }, [](Kernel &, int a) { return a; });
  Shape out_shape = x->shape;
  if (keep)
    out_shape[ax] = 1;
  else
    out_shape.erase(out_shape.begin() + ax);
  Loc y = L.output_new(n.outputs[0], DType::i64, out_shape);
  Kernel &k = reduce_kernel(
      L, is_max ? "argmax" : "argmin", p, xl, y, last ? Reduce::max : Reduce::min,
      [](Kernel &, int v) { return v; }, [](Kernel &, int a) { return a; });
  Loc ml = m;
  std::vector<int> axes;
  for (size_t d = 0; d < r; d++)
    if (!red[d]) axes.push_back(p.axis_of[d]);
  int me = k.expr_load(access_axes(ml, axes), DType::f32);
  int hit = k.expr_binary(Op::eq, k.body, me, DType::boolean);
  int idx = k.expr_cast(k.expr_iota(p.axis_of[ax], DType::i64), DType::f32);
  k.body = k.expr_select(hit, idx, k.expr_const(last ? -1.0 : 1e30, DType::f32), DType::f32);
  k.result = k.expr_cast(k.result, DType::i64);
}

// Hardmax: 1 at the first maximum along the axis, 0 elsewhere (ArgMax's two kernels, then a map).
void lower_hardmax(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  if (!dtype_is_float(x->dtype)) L.fail("only float inputs are supported");
  size_t r = x->shape.size();
  int ax = axis_normalize(L, n.attr_int("axis", L.graph.opset >= 13 ? -1 : 1), r);
  if (L.graph.opset < 13) {
    // Before opset 13 the input is flattened to 2-D at `axis` and the maximum taken over the whole
    // tail; that is the same thing only when the tail is one axis (or the rest of it is size 1).
    for (size_t d = ax + 1; d < r; d++)
      if (x->shape[d] != 1)
        L.fail("at opset " + std::to_string(L.graph.opset) +
               " Hardmax over more than the last axis (axis " + std::to_string(ax) + " of rank " +
               std::to_string(r) + ") is not supported");
  }
  std::vector<bool> red(r, false);
  red[ax] = true;
  ReducePlan p = reduce_plan(x->shape, red);
  Loc xl = L.loc(x);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  if (shape_numel(x->shape) == 0) return;
  Loc m = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                       n.outputs[0]->name + "_max");
  reduce_kernel(
      L, "hardmax_value", p, xl, m, Reduce::max, [](Kernel &, int v) { return v; },
      [](Kernel &, int a) { return a; });
  Loc idx = L.buffer_new(DType::f32, p.kept_shape, Buffer::Kind::intermediate,
                         n.outputs[0]->name + "_index");
  std::vector<int> axes;
  for (size_t d = 0; d < r; d++)
    if (!red[d]) axes.push_back(p.axis_of[d]);
  {
    Kernel &k = reduce_kernel(
        L, "hardmax_index", p, xl, idx, Reduce::min, [](Kernel &, int v) { return v; },
        [](Kernel &, int a) { return a; });
    int hit = k.expr_binary(Op::eq, k.body, k.expr_load(access_axes(m, axes), DType::f32),
                            DType::boolean);
    int i = k.expr_cast(k.expr_iota(p.axis_of[ax], DType::i64), DType::f32);
    k.body = k.expr_select(hit, i, k.expr_const(1e30, DType::f32), DType::f32);
  }
  Kernel &k = L.kernel_new("hardmax");
  k.axes = x->shape;
  k.n_parallel = (int)r;
  int first = k.expr_load(access_kept(idx, p, x->shape), DType::f32);
  int hit = k.expr_binary(Op::eq, k.expr_cast(k.expr_iota(ax, DType::i64), DType::f32), first,
                          DType::boolean);
  k.result = k.expr_select(hit, k.expr_const(1, x->dtype), k.expr_const(0, x->dtype), x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

}  // namespace

void lower_register_reduce() {
  auto &t = lower_table();
  t["ReduceMean"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "mean"); };
  t["ReduceSum"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "sum"); };
  t["ReduceMax"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::max, "max"); };
  t["ReduceMin"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::min, "min"); };
  t["ReduceProd"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::prod, "prod"); };
  t["ReduceSumSquare"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "sumsquare"); };
  t["ReduceL1"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "l1"); };
  t["ReduceL2"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "l2"); };
  t["ReduceLogSum"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "logsum"); };
  t["Hardmax"] = lower_hardmax;
  t["MeanVarianceNormalization"] = lower_mvn;
  t["ReduceLogSumExp"] = [](Lowering &L, Node &n) { lower_reduce(L, n, Reduce::sum, "logsumexp"); };
  t["Softmax"] = [](Lowering &L, Node &n) { lower_softmax(L, n, false); };
  t["LogSoftmax"] = [](Lowering &L, Node &n) { lower_softmax(L, n, true); };
  t["InstanceNormalization"] = lower_instance_norm;
  t["LayerNormalization"] = lower_layer_norm;
  t["ArgMax"] = [](Lowering &L, Node &n) { lower_arg(L, n, true); };
  t["ArgMin"] = [](Lowering &L, Node &n) { lower_arg(L, n, false); };
}

}  // namespace capgraph
