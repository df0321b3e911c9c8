// The two loss ops of ONNX, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. They are listed
// as training ops, but they are plain functions of their inputs (no state, no randomness): a model
// exported with its loss, or one scoring labelled data, runs them at inference.
//
// NegativeLogLikelihoodLoss(input (N,C,d1..dk), target (N,d1..dk), weight (C)?):
//   loss[n,d] = -input[n, target[n,d], d] * weight[target[n,d]], 0 where target == ignore_index;
//   reduction none keeps that shape, sum adds it up, mean divides the sum by the sum of the
//   weights taken (the count of targets not ignored when there is no weight).
// SoftmaxCrossEntropyLoss is the same over LogSoftmax(scores) along axis 1, whose value is the
// optional second output.
// Sources: the ONNX operator specification (onnx/docs/Operators.md), opsets 12 and 13.
//
// Each step is one kernel: the per-element loss gathers along C with the target as a
// data-dependent index (clamped, so a target out of [0, C) reads inside the tensor; ONNX leaves
// its value undefined), and the reductions are full reductions over the target's shape.
#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

struct LossInputs {
  Loc x;       // (N, C, d1..dk) log-probabilities
  Loc target;  // (N, d1..dk)
  Loc weight;  // (C), buffer -1 when absent
  bool has_ignore = false;
  int64_t ignore_index = 0;
};

// The per-element loss (or, with `weight_only`, the weight it was scaled by) at the point whose
// target coordinates are iteration axes first..first+rank-1.
int loss_expr(Kernel &k, const LossInputs &in, int first, bool weight_only) {
  const int r = (int)in.target.shape.size();
  std::vector<int> t_axes;
  for (int d = 0; d < r; d++) t_axes.push_back(first + d);
  int t = k.expr_cast(k.expr_load(access_axes(in.target, t_axes), in.target.dtype), DType::i64);
  int w = k.expr_const(1, DType::f32);
  if (in.weight.buffer >= 0) {
    Access a = access_axes(in.weight, {-1});
    a.dims[0].expr = t;
    a.dims[0].bound = Bound::clamp;
    w = k.expr_load(a, DType::f32);
  }
  if (in.has_ignore) {
    int keep =
        k.expr_binary(Op::ne, t, k.expr_const((double)in.ignore_index, DType::i64), DType::boolean);
    w = k.expr_select(keep, w, k.expr_const(0, DType::f32), DType::f32);
  }
  if (weight_only) return w;
  // input's dimension 0 follows the target's, 1 is gathered, 2.. follow the target's 1..
  std::vector<int> x_axes = {first, -1};
  for (int d = 1; d < r; d++) x_axes.push_back(first + d);
  Access a = access_axes(in.x, x_axes);
  a.dims[1].expr = t;
  a.dims[1].bound = Bound::clamp;
  int x = k.expr_load(a, DType::f32);
  return k.expr_unary(Op::neg, k.expr_binary(Op::mul, x, w, DType::f32), DType::f32);
}

// A kernel summing the loss (or its weights) over every target element into the scalar `out`;
// with `divisor` (a scalar buffer) the sum is divided by it.
void loss_sum_kernel(Lowering &L, const LossInputs &in, const Loc &out, bool weight_only,
                     const Loc *divisor) {
  Kernel &k = L.kernel_new(weight_only ? "nll_weight_sum" : "nll_sum");
  k.axes = {1};
  for (int64_t d : in.target.shape) k.axes.push_back(d);
  k.n_parallel = 1;
  k.body = loss_expr(k, in, 1, weight_only);
  k.reduce = Reduce::sum;
  k.acc_dtype = DType::f32;
  int acc = k.expr_unary(Op::acc, -1, DType::f32);
  if (divisor)
    acc =
        k.expr_binary(Op::div, acc, k.expr_load(access_axes(*divisor, {}), DType::f32), DType::f32);
  k.result = k.expr_cast(acc, out.dtype);
  k.store = access_axes(out, {});
  k.store_dtype = out.dtype;
  k.flops = 3 * shape_numel(in.target.shape);
}

// The NLL of `in` written to `out_value` with the node's reduction.
void loss_lower(Lowering &L, Node &n, const LossInputs &in, Value *out_value) {
  std::string reduction = n.attr_string("reduction", "mean");
  const Shape &ts = in.target.shape;
  if (reduction == "none") {
    Loc y = L.output_new(out_value, in.x.dtype, ts);
    if (shape_numel(ts) == 0) return;
    Kernel &k = L.kernel_new("nll");
    k.axes = ts;
    k.n_parallel = (int)ts.size();
    k.result = k.expr_cast(loss_expr(k, in, 0, false), in.x.dtype);
    k.store = access_store(y);
    k.store_dtype = in.x.dtype;
    k.flops = 3 * shape_numel(ts);
    return;
  }
  if (reduction != "sum" && reduction != "mean")
    L.fail("reduction '" + reduction + "' is not one of none, sum, mean");
  if (shape_numel(ts) == 0) L.fail("reducing the loss of an empty target is not supported");
  Loc y = L.output_new(out_value, in.x.dtype, {});
  if (reduction == "sum") {
    loss_sum_kernel(L, in, y, false, nullptr);
    return;
  }
  Loc ws =
      L.buffer_new(DType::f32, {}, Buffer::Kind::intermediate, out_value->name + "_weight_sum");
  loss_sum_kernel(L, in, ws, true, nullptr);
  loss_sum_kernel(L, in, y, false, &ws);
}

// Checks the shapes and types shared by both ops and gathers their locations.
LossInputs loss_inputs(Lowering &L, Node &n, const Loc &x) {
  const Value *tv = n.input(1), *wv = n.input(2);
  if (x.dtype != DType::f32)
    L.fail(std::string("element type ") + dtype_name(x.dtype) + " is not supported (float32 is)");
  if (x.shape.size() < 2)
    L.fail("input must have rank >= 2 (N, C, ...), got shape " + shape_str(x.shape));
  if (tv->dtype != DType::i64 && tv->dtype != DType::i32) L.fail("target must be int32 or int64");
  Shape want = {x.shape[0]};
  want.insert(want.end(), x.shape.begin() + 2, x.shape.end());
  if (tv->shape != want)
    L.fail("target has shape " + shape_str(tv->shape) + ", expected " + shape_str(want) +
           " (input without C)");
  if (x.shape[1] == 0) L.fail("input has no classes (C = 0)");
  LossInputs in;
  in.x = x;
  in.target = L.loc(tv);
  if (wv) {
    if (wv->dtype != DType::f32) L.fail("weight must be float32");
    if (wv->shape != Shape{x.shape[1]})
      L.fail("weight has shape " + shape_str(wv->shape) + ", expected " +
             std::to_string(x.shape[1]) + " (C)");
    in.weight = L.loc(wv);
  }
  if (n.attr("ignore_index")) {
    in.has_ignore = true;
    in.ignore_index = n.attr_int("ignore_index", 0);
  }
  return in;
}

void lower_nll_loss(Lowering &L, Node &n) {
  LossInputs in = loss_inputs(L, n, L.loc(n.input(0)));
  loss_lower(L, n, in, n.outputs[0]);
}

// log_softmax(scores) along axis 1: the max, the sum of exp(x - max), then x - max - log(sum).
Loc log_softmax_axis1(Lowering &L, Node &n, const Loc &x) {
  const int r = (int)x.shape.size();
  Shape kept = x.shape;
  kept.erase(kept.begin() + 1);
  // Iteration: the kept dims (N, d1..) as parallel axes, then C as the reduction axis.
  std::vector<int> x_axes = {0, r - 1};
  for (int d = 2; d < r; d++) x_axes.push_back(d - 1);
  std::vector<int> kept_axes;
  for (int d = 0; d < r - 1; d++) kept_axes.push_back(d);
  Shape axes = kept;
  axes.push_back(x.shape[1]);
  Loc m = L.buffer_new(DType::f32, kept, Buffer::Kind::intermediate, n.outputs[0]->name + "_max");
  Loc s = L.buffer_new(DType::f32, kept, Buffer::Kind::intermediate, n.outputs[0]->name + "_sum");
  for (int pass = 0; pass < 2; pass++) {
    Kernel &k = L.kernel_new(pass == 0 ? "sce_max" : "sce_sum");
    k.axes = axes;
    k.n_parallel = r - 1;
    int v = k.expr_load(access_axes(x, x_axes), DType::f32);
    if (pass == 1)
      v = k.expr_unary(
          Op::exp,
          k.expr_binary(Op::sub, v, k.expr_load(access_axes(m, kept_axes), DType::f32), DType::f32),
          DType::f32);
    k.body = v;
    k.reduce = pass == 0 ? Reduce::max : Reduce::sum;
    k.acc_dtype = DType::f32;
    k.result = k.expr_unary(Op::acc, -1, DType::f32);
    k.store = access_store(pass == 0 ? m : s);
    k.store_dtype = DType::f32;
    k.flops = 2 * shape_numel(x.shape);
  }
  bool want_log_prob = n.outputs.size() > 1 && !n.outputs[1]->name.empty();
  Loc lp = want_log_prob ? L.output_new(n.outputs[1], DType::f32, x.shape)
                         : L.buffer_new(DType::f32, x.shape, Buffer::Kind::intermediate,
                                        n.outputs[0]->name + "_log_prob");
  Kernel &k = L.kernel_new("sce_log_prob");
  k.axes = x.shape;
  k.n_parallel = r;
  // m and s have x's dims without C: read them with x's axes 0, 2, 3...
  std::vector<int> ms_axes = {0};
  for (int d = 2; d < r; d++) ms_axes.push_back(d);
  int v = k.expr_load(access_broadcast(x, r), DType::f32);
  int me = k.expr_load(access_axes(m, ms_axes), DType::f32);
  int se = k.expr_load(access_axes(s, ms_axes), DType::f32);
  k.result = k.expr_binary(Op::sub, k.expr_binary(Op::sub, v, me, DType::f32),
                           k.expr_unary(Op::log, se, DType::f32), DType::f32);
  k.store = access_store(lp);
  k.store_dtype = DType::f32;
  k.flops = 3 * shape_numel(x.shape);
  return lp;
}

void lower_softmax_cross_entropy(Lowering &L, Node &n) {
  Loc x = L.loc(n.input(0));
  LossInputs check = loss_inputs(L, n, x);  // validates before any kernel is made
  check.x = log_softmax_axis1(L, n, x);
  loss_lower(L, n, check, n.outputs[0]);
}

}  // namespace

void lower_register_loss() {
  auto &t = lower_table();
  t["NegativeLogLikelihoodLoss"] = lower_nll_loss;
  t["SoftmaxCrossEntropyLoss"] = lower_softmax_cross_entropy;
}

}  // namespace capgraph
