// Ops defined by comparing element positions: GatherElements (a data-dependent index on one
// axis), Trilu, CumSum (a masked sum over the axis), OneHot and EyeLike. Each is one kernel over
// the output (or a compile-time constant), so every code generator takes them as they are.
#include <functional>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// A scalar input known at compile time (CumSum's axis, OneHot's depth), or fail.
double scalar_input(Lowering &L, size_t i, const char *what) {
  const Tensor &t = L.const_input(i, what);
  if (t.numel() != 1)
    L.fail(std::string(what) + " must hold one value, got shape " + shape_str(t.shape));
  return t.at_f64(0);
}

// y[..., i_axis, ...] = x[..., indices[..., i_axis, ...], ...]: the output has the indices' shape.
void lower_gather_elements(Lowering &L, Node &n) {
  const Value *x = n.input(0), *iv = n.input(1);
  size_t r = x->shape.size();
  if (iv->shape.size() != r)
    L.fail("indices must have the rank of data (" + std::to_string(r) + ")");
  if (iv->dtype != DType::i64 && iv->dtype != DType::i32) L.fail("indices must be int32 or int64");
  int ax = axis_normalize(L, n.attr_int("axis", 0), r);
  Loc xl = L.loc(x), il = L.loc(iv);
  for (size_t d = 0; d < r; d++)
    if ((int)d != ax && iv->shape[d] > x->shape[d])
      L.fail("indices dimension " + std::to_string(d) + " (" + std::to_string(iv->shape[d]) +
             ") is larger than data's (" + std::to_string(x->shape[d]) + ")");
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
  ie = k.expr_select(neg,
                     k.expr_binary(Op::add, ie, k.expr_const((double)dim, DType::i64), DType::i64),
                     ie, DType::i64);
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
  int keep = k.expr_binary(upper ? Op::ge : Op::le, off, k.expr_const((double)diag, DType::i64),
                           DType::boolean);
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
  if (x->dtype != DType::f32 && x->dtype != DType::f64 && x->dtype != DType::i32 &&
      x->dtype != DType::i64)
    L.fail(std::string("element type ") + dtype_name(x->dtype) +
           " is not supported (float32, float64, int32, int64 are)");
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
  if (!(depth_f >= 1 && depth_f <= (double)(int64_t(1) << 30)))
    L.fail("depth must be between 1 and 2^30, got " + std::to_string(depth_f));
  const int64_t depth = (int64_t)depth_f;
  if (shape_numel(vv->shape) != 2)
    L.fail("values must hold 2 elements (off, on), got shape " + shape_str(vv->shape));
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
  ie = k.expr_select(
      neg, k.expr_binary(Op::add, ie, k.expr_const((double)depth, DType::i64), DType::i64), ie,
      DType::i64);
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

// An index loaded at run time, made non-negative (counted from `dim` when negative); the access
// using it clamps, so a bad index never reads outside.
int index_normalize(Kernel &k, int ie, int64_t dim) {
  ie = k.expr_cast(ie, DType::i64);
  int neg = k.expr_binary(Op::lt, ie, k.expr_const(0, DType::i64), DType::boolean);
  return k.expr_select(
      neg, k.expr_binary(Op::add, ie, k.expr_const((double)dim, DType::i64), DType::i64), ie,
      DType::i64);
}

// A contiguous Loc seen with another shape of the same element count (a reshape view).
Loc loc_reshaped(Lowering &L, const Loc &l, const Shape &s) {
  if (!l.contiguous()) L.fail("expects a contiguous input");
  Loc r = l;
  r.shape = s;
  r.strides = shape_strides(s);
  return r;
}

// GatherND: y[b..., i..., rest...] = data[b..., indices[b..., i..., 0..m-1], rest...], with the
// first batch_dims dimensions shared by data and indices.
void lower_gather_nd(Lowering &L, Node &n) {
  const Value *x = n.input(0), *iv = n.input(1);
  if (iv->dtype != DType::i64) L.fail("indices must be int64");
  const int64_t b = n.attr_int("batch_dims", 0);
  const size_t r = x->shape.size(), q = iv->shape.size();
  if (q < 1 || r < 1) L.fail("data and indices must have rank >= 1");
  const int64_t m = iv->shape.back();
  if (b < 0 || b >= (int64_t)std::min(r, q) || m < 1 || b + m > (int64_t)r)
    L.fail("batch_dims " + std::to_string(b) + " and the indices' last dimension " +
           std::to_string(m) + " do not fit data of rank " + std::to_string(r));
  for (int64_t d = 0; d < b; d++)
    if (x->shape[d] != iv->shape[d]) L.fail("the batch dimensions of data and indices differ");
  Shape out(iv->shape.begin(), iv->shape.end() - 1);
  out.insert(out.end(), x->shape.begin() + b + m, x->shape.end());
  Loc xl = L.loc(x), il = L.loc(iv);
  Loc y = L.output_new(n.outputs[0], x->dtype, out);
  if (shape_numel(out) == 0) return;
  Kernel &k = L.kernel_new("gather_nd");
  k.axes = out.empty() ? Shape{1} : out;
  k.n_parallel = (int)k.axes.size();
  const int qi = (int)q - 1;  // output axes 0..qi-1 index the indices' leading dims
  Access a;
  a.buffer = xl.buffer;
  a.offset = xl.offset;
  for (size_t d = 0; d < r; d++) {
    DimIndex di;
    di.extent = xl.shape[d];
    di.stride = xl.strides[d];
    if ((int64_t)d < b) {
      di.terms.push_back({(int)d, 1});
    } else if ((int64_t)d < b + m) {
      Access ia;
      ia.buffer = il.buffer;
      ia.offset = il.offset;
      for (int e = 0; e < (int)q; e++) {
        DimIndex id;
        id.extent = il.shape[e];
        id.stride = il.strides[e];
        if (e < qi)
          id.terms.push_back({e, 1});
        else
          id.shift = (int64_t)d - b;
        ia.dims.push_back(id);
      }
      di.expr = index_normalize(k, k.expr_load(ia, DType::i64), xl.shape[d]);
      di.bound = Bound::clamp;
    } else {
      di.terms.push_back({qi + (int)(d - b - m), 1});
    }
    a.dims.push_back(di);
  }
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// How a scatter combines an update with what is there (ONNX `reduction`, opset 16/18).
Reduce scatter_reduction(Lowering &L, const Node &n) {
  std::string red = n.attr_string("reduction", "none");
  if (red == "none") return Reduce::none;
  if (red == "add") return Reduce::sum;
  if (red == "mul") return Reduce::prod;
  if (red == "max") return Reduce::max;
  if (red == "min") return Reduce::min;
  L.fail("reduction '" + red + "' is not supported");
}

// The scatters as gathers: for each output element, a reduction over the updates that could land
// there. With reduction none the last matching update wins (ONNX leaves duplicates undefined;
// ONNX Runtime's loop makes the last one win): one kernel finds its index (or -1), a second
// reads it. With add/mul/max/min the matching updates fold into the data element. Cost: output
// elements x candidate updates, meant for the small index tensors of detection heads.
//   axes: the output's dims, then the candidate axis `u` (extent U).
//   match(k): whether candidate u lands on this output element; update(k, u_expr): its value.
void scatter_lower(Lowering &L, Node &n, const Loc &data, const Loc &y, int64_t U, Reduce red,
                   const std::function<int(Kernel &)> &match,
                   const std::function<Access(Kernel &, int)> &update_at) {
  const int r = (int)data.shape.size();
  const DType t = data.dtype;
  auto kernel_begin = [&](const std::string &name) -> Kernel & {
    Kernel &k = L.kernel_new(name);
    k.axes = data.shape;
    k.axes.push_back(U);
    k.n_parallel = r;
    return k;
  };
  if (red != Reduce::none) {
    if (t == DType::boolean) L.fail("a reduction over booleans is not supported");
    Kernel &k = kernel_begin("scatter_reduce");
    int u = k.expr_iota(r, DType::i64);
    int v = k.expr_load(update_at(k, u), t);
    k.body = k.expr_select(match(k), v, k.expr_const(reduce_identity(red), t), t);
    k.reduce = red;
    k.acc_dtype = t;
    int acc = k.expr_unary(Op::acc, -1, t), d = k.expr_load(access_broadcast(data, r), t);
    Op combine = red == Reduce::sum    ? Op::add
                 : red == Reduce::prod ? Op::mul
                 : red == Reduce::max  ? Op::max
                                       : Op::min;
    k.result = k.expr_binary(combine, d, acc, t);
    k.store = access_store(y);
    k.store_dtype = t;
    return;
  }
  Loc which = L.buffer_new(DType::i64, data.shape, Buffer::Kind::intermediate,
                           n.outputs[0]->name + "_which");
  {
    Kernel &k = kernel_begin("scatter_which");
    int u = k.expr_iota(r, DType::i64);
    k.body = k.expr_select(match(k), u, k.expr_const(-1, DType::i64), DType::i64);
    k.reduce = Reduce::max;
    k.acc_dtype = DType::i64;
    k.result = k.expr_unary(Op::acc, -1, DType::i64);
    k.store = access_store(which);
    k.store_dtype = DType::i64;
  }
  Kernel &k = L.kernel_new("scatter");
  k.axes = data.shape;
  k.n_parallel = r;
  int w = k.expr_load(access_broadcast(which, r), DType::i64);
  int hit = k.expr_binary(Op::ge, w, k.expr_const(0, DType::i64), DType::boolean);
  k.result = k.expr_select(hit, k.expr_load(update_at(k, w), t),
                           k.expr_load(access_broadcast(data, r), t), t);
  k.store = access_store(y);
  k.store_dtype = t;
}

// ScatterND: indices [..., m] pick data[i_0..i_{m-1}, :]; updates [..., data.shape[m:]].
void lower_scatter_nd(Lowering &L, Node &n) {
  const Value *x = n.input(0), *iv = n.input(1), *uv = n.input(2);
  if (iv->dtype != DType::i64) L.fail("indices must be int64");
  if (uv->dtype != x->dtype) L.fail("updates must have data's element type");
  const size_t r = x->shape.size(), q = iv->shape.size();
  if (r < 1 || q < 1) L.fail("data and indices must have rank >= 1");
  const int64_t m = iv->shape.back();
  if (m < 1 || m > (int64_t)r)
    L.fail("the indices' last dimension must be between 1 and data's rank");
  Shape want(iv->shape.begin(), iv->shape.end() - 1);
  want.insert(want.end(), x->shape.begin() + m, x->shape.end());
  if (uv->shape != want)
    L.fail("updates must have shape " + shape_str(want) + ", got " + shape_str(uv->shape));
  const int64_t U = shape_numel(Shape(iv->shape.begin(), iv->shape.end() - 1));
  Loc data = L.loc(x);
  Loc il = loc_reshaped(L, L.loc(iv), {U, m});
  Shape ushape = {U};
  ushape.insert(ushape.end(), x->shape.begin() + m, x->shape.end());
  Loc ul = loc_reshaped(L, L.loc(uv), ushape);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  if (shape_numel(x->shape) == 0 || U == 0) {
    if (shape_numel(x->shape)) kernel_copy(L, data, y, "scatter_nd_copy");
    return;
  }
  const int rr = (int)r;
  auto match = [&](Kernel &k) {
    int all = -1;
    for (int64_t j = 0; j < m; j++) {
      Access ia = access_axes(il, {rr, -1});
      ia.dims[1].shift = j;
      int e = index_normalize(k, k.expr_load(ia, DType::i64), x->shape[j]);
      int eq = k.expr_binary(Op::eq, e, k.expr_iota((int)j, DType::i64), DType::boolean);
      all = all < 0 ? eq : k.expr_binary(Op::logical_and, all, eq, DType::boolean);
    }
    return all;
  };
  auto update_at = [&](Kernel &k, int u) {
    std::vector<int> axes = {-1};
    for (size_t d = m; d < r; d++) axes.push_back((int)d);
    Access a = access_axes(ul, axes);
    a.dims[0].expr = u;
    a.dims[0].bound = Bound::clamp;
    (void)k;
    return a;
  };
  scatter_lower(L, n, data, y, U, scatter_reduction(L, n), match, update_at);
}

// ScatterElements (and Scatter, its opset 9-10 name): update u lands at its own position with the
// axis coordinate replaced by indices[u].
void lower_scatter_elements(Lowering &L, Node &n) {
  const Value *x = n.input(0), *iv = n.input(1), *uv = n.input(2);
  if (iv->dtype != DType::i64 && iv->dtype != DType::i32) L.fail("indices must be int32 or int64");
  if (uv->dtype != x->dtype) L.fail("updates must have data's element type");
  const size_t r = x->shape.size();
  if (iv->shape != uv->shape || iv->shape.size() != r)
    L.fail("indices and updates must have one shape, of data's rank");
  const int ax = axis_normalize(L, n.attr_int("axis", 0), r);
  for (size_t d = 0; d < r; d++)
    if ((int)d != ax && iv->shape[d] > x->shape[d])
      L.fail("updates are larger than data in dimension " + std::to_string(d));
  Loc data = L.loc(x), il = L.loc(iv), ul = L.loc(uv);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  const int64_t U = iv->shape[ax];
  if (shape_numel(x->shape) == 0) return;
  if (shape_numel(iv->shape) == 0) return kernel_copy(L, data, y, "scatter_copy");
  const int rr = (int)r;
  // Candidates: the updates sharing this element's other coordinates (skipped where the
  // element lies beyond the updates' extent), u running over the axis.
  auto candidate = [&](const Loc &l, int u_expr) {
    Access a;
    a.buffer = l.buffer;
    a.offset = l.offset;
    for (int d = 0; d < rr; d++) {
      DimIndex di;
      di.extent = l.shape[d];
      di.stride = l.strides[d];
      if (d == ax) {
        if (u_expr >= 0) {
          di.expr = u_expr;
          di.bound = Bound::clamp;
        } else {
          di.terms.push_back({rr, 1});
        }
      } else {
        di.terms.push_back({d, 1});
        if (l.shape[d] < x->shape[d]) di.bound = Bound::skip;
      }
      a.dims.push_back(di);
    }
    return a;
  };
  auto match = [&](Kernel &k) {
    int e = index_normalize(k, k.expr_load(candidate(il, -1), il.dtype), x->shape[ax]);
    return k.expr_binary(Op::eq, e, k.expr_iota(ax, DType::i64), DType::boolean);
  };
  auto update_at = [&](Kernel &, int u) { return candidate(ul, u); };
  Reduce red = L.graph.opset >= 16 ? scatter_reduction(L, n) : Reduce::none;
  // Outside the updates' extent no candidate exists; a skipped read outside a reduction reads 0,
  // so "which" must not be trusted there: such elements can only match when inside.
  for (size_t d = 0; d < r; d++)
    if ((int)d != ax && iv->shape[d] < x->shape[d] && red == Reduce::none)
      L.fail("updates smaller than data outside the axis are not supported with reduction none");
  scatter_lower(L, n, data, y, U, red, match, update_at);
}

// TopK by ranking: each element's rank is how many elements along the axis beat it (larger, or
// equal and earlier: ties keep the lower index first, as ONNX asks); the r-th output is the element
// of rank r. Three kernels (rank, index of rank r, gather), quadratic in the axis length: meant for
// the few hundred or thousand scores of a detection head, not for sorting big tensors. The output
// is always sorted (allowed when sorted=0).
void lower_topk(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  const size_t r = x->shape.size();
  if (r == 0) L.fail("expects an input of rank >= 1");
  if (x->dtype == DType::boolean) L.fail("boolean input is not supported");
  const int ax = axis_normalize(L, n.attr_int("axis", -1), r);
  int64_t kk = L.graph.opset >= 10 ? (int64_t)scalar_input(L, 1, "K") : n.attr_int("k", 0);
  const int64_t len = x->shape[ax];
  if (kk < 0 || kk > len)
    L.fail("K = " + std::to_string(kk) + " is outside [0, " + std::to_string(len) + "]");
  const bool largest = n.attr_int("largest", 1) != 0;
  Shape out = x->shape;
  out[ax] = kk;
  Loc xl = L.loc(x);
  Loc values = L.output_new(n.outputs[0], x->dtype, out);
  Loc indices = n.outputs.size() > 1 && !n.outputs[1]->name.empty()
                    ? L.output_new(n.outputs[1], DType::i64, out)
                    : L.buffer_new(DType::i64, out, Buffer::Kind::intermediate,
                                   n.outputs[0]->name + "_indices");
  if (shape_numel(out) == 0) return;
  const int ri = (int)r;  // the reduction axis j runs along the TopK axis
  std::vector<int> along_j;
  for (int d = 0; d < ri; d++) along_j.push_back(d == ax ? ri : d);
  Loc rank =
      L.buffer_new(DType::i64, x->shape, Buffer::Kind::intermediate, n.outputs[0]->name + "_rank");
  {
    Kernel &k = L.kernel_new("topk_rank");
    k.axes = x->shape;
    k.axes.push_back(len);
    k.n_parallel = ri;
    int xi = k.expr_load(access_broadcast(xl, ri), x->dtype),
        xj = k.expr_load(access_axes(xl, along_j), x->dtype);
    int ii = k.expr_iota(ax, DType::i64), jj = k.expr_iota(ri, DType::i64);
    int better = k.expr_binary(largest ? Op::gt : Op::lt, xj, xi, DType::boolean);
    int tie = k.expr_binary(Op::logical_and, k.expr_binary(Op::eq, xj, xi, DType::boolean),
                            k.expr_binary(Op::lt, jj, ii, DType::boolean), DType::boolean);
    k.body = k.expr_cast(k.expr_binary(Op::logical_or, better, tie, DType::boolean), DType::i64);
    k.reduce = Reduce::sum;
    k.acc_dtype = DType::i64;
    k.result = k.expr_unary(Op::acc, -1, DType::i64);
    k.store = access_store(rank);
    k.store_dtype = DType::i64;
    k.flops = shape_numel(x->shape) * len;
  }
  {
    Kernel &k = L.kernel_new("topk_index");
    k.axes = out;
    k.axes.push_back(len);
    k.n_parallel = ri;
    int rj = k.expr_load(access_axes(rank, along_j), DType::i64);
    int hit = k.expr_binary(Op::eq, rj, k.expr_iota(ax, DType::i64), DType::boolean);
    k.body =
        k.expr_select(hit, k.expr_iota(ri, DType::i64), k.expr_const(-1, DType::i64), DType::i64);
    k.reduce = Reduce::max;
    k.acc_dtype = DType::i64;
    k.result = k.expr_unary(Op::acc, -1, DType::i64);
    k.store = access_store(indices);
    k.store_dtype = DType::i64;
  }
  Kernel &k = L.kernel_new("topk_values");
  k.axes = out;
  k.n_parallel = ri;
  Access a = access_broadcast(xl, ri);
  a.dims[ax].terms.clear();
  a.dims[ax].expr = k.expr_load(access_broadcast(indices, ri), DType::i64);
  a.dims[ax].bound = Bound::clamp;
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(values);
  k.store_dtype = x->dtype;
}

}  // namespace

void lower_register_index() {
  auto &t = lower_table();
  t["GatherElements"] = lower_gather_elements;
  t["Trilu"] = lower_trilu;
  t["CumSum"] = lower_cumsum;
  t["OneHot"] = lower_one_hot;
  t["EyeLike"] = lower_eye_like;
  t["GatherND"] = lower_gather_nd;
  t["ScatterND"] = lower_scatter_nd;
  t["ScatterElements"] = lower_scatter_elements;
  t["Scatter"] = lower_scatter_elements;
  t["TopK"] = lower_topk;
}

}  // namespace capgraph
