// Ops defined by comparing element positions: GatherElements (a data-dependent index on one
// axis), Trilu, CumSum (a masked sum over the axis), OneHot and EyeLike. Each is one kernel over
// the output (or a compile-time constant), so every code generator takes them as they are.
#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// A scalar input known at compile time (CumSum's axis, OneHot's depth), or fail.
double scalar_input(Lowering &L, size_t i, const char *what) {
  const Tensor &t = L.const_input(i, what);
  if (t.numel() != 1) L.fail(std::string(what) + " must hold one value, got shape " + shape_str(t.shape));
  return t.at_f64(0);
}

// y[..., i_axis, ...] = x[..., indices[..., i_axis, ...], ...]: the output has the indices' shape.
void lower_gather_elements(Lowering &L, Node &n) {
  const Value *x = n.input(0), *iv = n.input(1);
  size_t r = x->shape.size();
  if (iv->shape.size() != r) L.fail("indices must have the rank of data (" + std::to_string(r) + ")");
  if (iv->dtype != DType::i64 && iv->dtype != DType::i32) L.fail("indices must be int32 or int64");
  int ax = axis_normalize(L, n.attr_int("axis", 0), r);
  Loc xl = L.loc(x), il = L.loc(iv);
  for (size_t d = 0; d < r; d++)
    if ((int)d != ax && iv->shape[d] > x->shape[d])
      L.fail("indices dimension " + std::to_string(d) + " (" + std::to_string(iv->shape[d]) + ") is larger than data's (" +
             std::to_string(x->shape[d]) + ")");
  Loc y = L.output_new(n.outputs[0], x->dtype, iv->shape);
  if (shape_numel(iv->shape) == 0) return;
  if (x->shape[ax] == 0) L.fail("gathers from an empty axis");
  const int64_t dim = x->shape[ax];
  Kernel &k = L.kernel_new("gather_elements");
  k.axes = r ? iv->shape : Shape{1};
  k.n_parallel = (int)k.axes.size();
  int ie = k.expr_cast(k.expr_load(access_broadcast(il, (int)r), il.dtype), DType::i64);
  // Negative indices count from the end; a bad index at run time is clamped, never read outside.
  int neg = k.expr_binary(Op::lt, ie, k.expr_const(0, DType::i64), DType::boolean);
  ie = k.expr_select(neg, k.expr_binary(Op::add, ie, k.expr_const((double)dim, DType::i64), DType::i64), ie, DType::i64);
  Access a = access_broadcast(xl, (int)r);
  for (size_t d = 0; d < r; d++) {
    // access_broadcast leaves size-1 dims unindexed; the other dims follow the output's axis d.
    a.dims[d].terms.clear();
    if ((int)d == ax) {
      a.dims[d].expr = ie;
      a.dims[d].bound = Bound::clamp;
    } else if (x->shape[d] != 1) {
      a.dims[d].terms.push_back({(int)d, 1});
    }
  }
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// Trilu: keeps the elements on and above (upper) or below (lower) the k-th diagonal of the last
// two dimensions, zero elsewhere.
void lower_trilu(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  size_t r = x->shape.size();
  if (r < 2) L.fail("expects an input of rank >= 2");
  int64_t diag = n.input(1) ? (int64_t)scalar_input(L, 1, "k") : 0;
  bool upper = n.attr_int("upper", 1) != 0;
  Loc xl = L.loc(x);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  if (shape_numel(x->shape) == 0) return;
  Kernel &k = L.kernel_new(upper ? "triu" : "tril");
  k.axes = x->shape;
  k.n_parallel = (int)r;
  int row = k.expr_iota((int)r - 2, DType::i64), col = k.expr_iota((int)r - 1, DType::i64);
  int off = k.expr_binary(Op::sub, col, row, DType::i64);  // which diagonal the element is on
  int keep = k.expr_binary(upper ? Op::ge : Op::le, off, k.expr_const((double)diag, DType::i64), DType::boolean);
  int v = k.expr_load(access_broadcast(xl, (int)r), x->dtype);
  k.result = k.expr_select(keep, v, k.expr_const(0, x->dtype), x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// CumSum along one axis: y[i] = sum of x[j] over j <= i (j < i exclusive; j >= i reversed), as a
// reduction over a second copy of the axis masked by that comparison. Quadratic in the axis
// length, which is small in the models that use it (positions, anchors, masks).
void lower_cumsum(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  size_t r = x->shape.size();
  if (r == 0) L.fail("expects an input of rank >= 1");
  if (x->dtype != DType::f32 && x->dtype != DType::f64 && x->dtype != DType::i32 && x->dtype != DType::i64)
    L.fail(std::string("element type ") + dtype_name(x->dtype) + " is not supported (float32, float64, int32, int64 are)");
  int ax = axis_normalize(L, (int64_t)scalar_input(L, 1, "axis"), r);
  bool exclusive = n.attr_int("exclusive", 0) != 0, reverse = n.attr_int("reverse", 0) != 0;
  Loc xl = L.loc(x);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  if (shape_numel(x->shape) == 0) return;
  Kernel &k = L.kernel_new("cumsum");
  k.axes = x->shape;
  k.axes.push_back(x->shape[ax]);
  k.n_parallel = (int)r;
  const int j = (int)r;  // the summed copy of the axis
  std::vector<int> axis_of;
  for (size_t d = 0; d < r; d++) axis_of.push_back((int)d == ax ? j : (int)d);
  int v = k.expr_load(access_axes(xl, axis_of), x->dtype);
  int i_e = k.expr_iota(ax, DType::i64), j_e = k.expr_iota(j, DType::i64);
  Op cmp = reverse ? (exclusive ? Op::gt : Op::ge) : (exclusive ? Op::lt : Op::le);
  int in = k.expr_binary(cmp, j_e, i_e, DType::boolean);
  k.body = k.expr_select(in, v, k.expr_const(0, x->dtype), x->dtype);
  k.reduce = Reduce::sum;
  k.acc_dtype = x->dtype;
  k.result = k.expr_unary(Op::acc, -1, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
  k.flops = shape_numel(x->shape) * x->shape[ax];
}

// OneHot(indices, depth, values): a new axis of size depth holding values[1] where its index is
// the (non-negative, or counted from depth) index and values[0] elsewhere.
void lower_one_hot(Lowering &L, Node &n) {
  const Value *iv = n.input(0), *vv = n.input(2);
  double depth_f = scalar_input(L, 1, "depth");
  if (!(depth_f >= 1 && depth_f <= (double)(int64_t(1) << 30))) L.fail("depth must be between 1 and 2^30, got " + std::to_string(depth_f));
  const int64_t depth = (int64_t)depth_f;
  if (shape_numel(vv->shape) != 2) L.fail("values must hold 2 elements (off, on), got shape " + shape_str(vv->shape));
  size_t r = iv->shape.size() + 1;
  int ax = axis_normalize(L, n.attr_int("axis", -1), r);
  Shape out = iv->shape;
  out.insert(out.begin() + ax, depth);
  Loc il = L.loc(iv), vl = L.loc(vv);
  Loc y = L.output_new(n.outputs[0], vv->dtype, out);
  if (shape_numel(out) == 0) return;
  Kernel &k = L.kernel_new("one_hot");
  k.axes = out;
  k.n_parallel = (int)r;
  std::vector<int> iaxes;
  for (size_t d = 0; d < r; d++)
    if ((int)d != ax) iaxes.push_back((int)d);
  // Float indices are truncated toward zero (ONNX Runtime casts them to int64 so).
  int ie = k.expr_cast(k.expr_load(access_axes(il, iaxes), il.dtype), DType::i64);
  int neg = k.expr_binary(Op::lt, ie, k.expr_const(0, DType::i64), DType::boolean);
  ie = k.expr_select(neg, k.expr_binary(Op::add, ie, k.expr_const((double)depth, DType::i64), DType::i64), ie, DType::i64);
  int hit = k.expr_binary(Op::eq, ie, k.expr_iota(ax, DType::i64), DType::boolean);
  // values[0] and values[1] as loads at fixed positions of the flattened values.
  if (!vl.contiguous()) L.fail("values must be a contiguous tensor");
  Loc flat = vl;
  flat.shape = {2};
  flat.strides = {vl.strides.empty() ? 1 : vl.strides.back()};
  auto value_at = [&](int64_t i) {
    Access a = access_axes(flat, {-1});
    a.dims[0].shift = i;
    return k.expr_load(a, vv->dtype);
  };
  k.result = k.expr_select(hit, value_at(1), value_at(0), vv->dtype);
  k.store = access_store(y);
  k.store_dtype = vv->dtype;
}

// EyeLike: ones on the k-th diagonal of a 2-D shape, known at compile time.
void lower_eye_like(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  if (x->shape.size() != 2) L.fail("expects a 2-D input");
  DType t = n.attr("dtype") ? dtype_from_onnx_int(L, n.attr_int("dtype", 1)) : x->dtype;
  int64_t diag = n.attr_int("k", 0), rows = x->shape[0], cols = x->shape[1];
  L.fold_reserve(rows * cols * (int64_t)dtype_size(t));
  std::vector<double> v((size_t)(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; i++)
    if (i + diag >= 0 && i + diag < cols) v[(size_t)(i * cols + i + diag)] = 1;
  L.output_constant(n.outputs[0], Tensor::from_f64(t, x->shape, v));
}

}  // namespace

void lower_register_index() {
  auto &t = lower_table();
  t["GatherElements"] = lower_gather_elements;
  t["Trilu"] = lower_trilu;
  t["CumSum"] = lower_cumsum;
  t["OneHot"] = lower_one_hot;
  t["EyeLike"] = lower_eye_like;
}

}  // namespace capgraph
