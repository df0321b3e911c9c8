// Ops whose output size depends on input values: Compress, NonZero, Unique, NonMaxSuppression. A capture has
// static shapes (DESIGN.md: the memory plan is fixed at compile time), so the values that set the
// size must be known at compile time: Compress's condition, NonZero's and Unique's input (a model
// input can be bound with `capgraph compile --bind NAME=FILE.npy`). Otherwise they are refused
// with the usual "must be known at compile time" message naming the input. Compress then gathers
// its data (which may be a run-time value) with the kept indices as a constant; NonZero and Unique
// become constants.
// ReverseSequence is here too: a gather whose index depends on a per-batch length.
// Sources: the ONNX operator specification (onnx/docs/Operators.md): Compress (11), NonZero (13),
// Unique (11), ReverseSequence (10).
#include <algorithm>
#include <array>
#include <map>
#include <numeric>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// Compress(input, condition; axis?): keeps the slices along `axis` (of the flattened input when no
// axis is given) whose condition is true; a condition shorter than the axis keeps none past it.
void lower_compress(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  const Tensor &cond = L.const_input(1, "condition");
  if (cond.shape.size() != 1) L.fail("condition must be 1-D, got shape " + shape_str(cond.shape));
  Loc xl = L.loc(x);
  bool flat = !n.attr("axis");
  if (flat) {
    if (!xl.contiguous()) {
      Loc c = L.buffer_new(xl.dtype, xl.shape, Buffer::Kind::intermediate, n.outputs[0]->name + "_flat");
      kernel_copy(L, xl, c, "compress_flatten");
      xl = c;
    }
    xl.shape = {shape_numel(x->shape)};
    xl.strides = {1};
  }
  int ax = flat ? 0 : axis_normalize(L, n.attr_int("axis", 0), xl.shape.size());
  if (cond.numel() > xl.shape[ax])
    L.fail("condition has " + std::to_string(cond.numel()) + " entries, more than the " + std::to_string(xl.shape[ax]) + " slices along the axis");
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < cond.numel(); i++)
    if (cond.at_f64(i) != 0) kept.push_back(i);
  Shape out = xl.shape;
  out[ax] = (int64_t)kept.size();
  Loc y = L.output_new(n.outputs[0], x->dtype, out);
  if (kept.empty() || shape_numel(out) == 0) return;
  Loc idx = L.constant_new(Tensor::from_i64(DType::i64, {(int64_t)kept.size()}, kept), n.outputs[0]->name + "_kept");
  Kernel &k = L.kernel_new("compress");
  k.axes = out;
  k.n_parallel = (int)out.size();
  int ie = k.expr_load(access_axes(idx, {ax}), DType::i64);
  std::vector<int> axis_of;
  for (size_t d = 0; d < out.size(); d++) axis_of.push_back((int)d == ax ? -1 : (int)d);
  Access a = access_axes(xl, axis_of);
  a.dims[ax].expr = ie;
  a.dims[ax].bound = Bound::clamp;
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// NonZero(x): the indices of the non-zero elements, one row per dimension (row-major order).
void lower_non_zero(Lowering &L, Node &n) {
  const Tensor &x = L.const_input(0, "X");
  std::vector<int64_t> nz;
  for (int64_t i = 0; i < x.numel(); i++)
    if (x.at_f64(i) != 0) nz.push_back(i);
  const size_t r = x.shape.size();
  const int64_t count = (int64_t)nz.size();
  std::vector<int64_t> out(r * count);
  Shape strides = shape_strides(x.shape);
  for (int64_t j = 0; j < count; j++)
    for (size_t d = 0; d < r; d++) out[d * count + j] = (nz[j] / strides[d]) % x.shape[d];
  L.output_constant(n.outputs[0], Tensor::from_i64(DType::i64, {(int64_t)r, count}, out));
}

// Unique(X; axis?, sorted): the distinct slices along axis (elements of the flattened X without
// one), sorted ascending or in order of first appearance, with the index of each one's first
// appearance, each input slice's index in the output, and how often each appears.
void lower_unique(Lowering &L, Node &n) {
  const Tensor &x = L.const_input(0, "X");
  bool has_axis = n.attr("axis") != nullptr;
  Shape shape = has_axis ? x.shape : Shape{x.numel()};
  int ax = has_axis ? axis_normalize(L, n.attr_int("axis", 0), shape.size()) : 0;
  bool sorted = n.attr_int("sorted", 1) != 0;
  int64_t outer = 1, inner = 1, len = shape[ax];
  for (int d = 0; d < ax; d++) outer *= shape[d];
  for (size_t d = ax + 1; d < shape.size(); d++) inner *= shape[d];
  // Slice s as a vector of values in row-major order of the other dims.
  auto slice = [&](int64_t s) {
    std::vector<double> v;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) v.push_back(x.at_f64((o * len + s) * inner + i));
    return v;
  };
  // NaN compares unequal to itself: it has no place in an order of distinct values.
  for (int64_t i = 0; i < x.numel(); i++)
    if (x.at_f64(i) != x.at_f64(i)) L.fail("X holds NaN, which Unique cannot order");
  std::vector<std::vector<double>> slices;
  for (int64_t s = 0; s < len; s++) slices.push_back(slice(s));
  std::vector<int64_t> first;             // index of each distinct slice's first appearance
  std::vector<int64_t> which(len);        // input slice -> distinct slice (in first-seen order)
  std::vector<int64_t> count;
  std::map<std::vector<double>, int64_t> seen;
  for (int64_t s = 0; s < len; s++) {
    auto [it, added] = seen.emplace(slices[s], (int64_t)first.size());
    if (added) {
      first.push_back(s);
      count.push_back(0);
    }
    which[s] = it->second;
    count[it->second]++;
  }
  std::vector<int64_t> order(first.size());  // output position -> distinct slice
  std::iota(order.begin(), order.end(), 0);
  if (sorted) std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return slices[first[a]] < slices[first[b]]; });
  std::vector<int64_t> pos(order.size());
  for (size_t p = 0; p < order.size(); p++) pos[order[p]] = (int64_t)p;
  const int64_t u = (int64_t)order.size();
  Shape y_shape = shape;
  y_shape[ax] = u;
  std::vector<double> y(outer * u * inner);
  for (int64_t p = 0; p < u; p++) {
    const std::vector<double> &v = slices[first[order[p]]];
    for (int64_t o = 0; o < outer; o++)
      for (int64_t i = 0; i < inner; i++) y[(o * u + p) * inner + i] = v[o * inner + i];
  }
  std::vector<int64_t> indices, counts, inverse;
  for (int64_t p = 0; p < u; p++) {
    indices.push_back(first[order[p]]);
    counts.push_back(count[order[p]]);
  }
  for (int64_t s = 0; s < len; s++) inverse.push_back(pos[which[s]]);
  L.output_constant(n.outputs[0], Tensor::from_f64(x.dtype, y_shape, y));
  const std::vector<int64_t> *rest[] = {&indices, &inverse, &counts};
  for (size_t o = 1; o < n.outputs.size() && o < 4; o++)
    if (!n.outputs[o]->name.empty()) L.output_constant(n.outputs[o], Tensor::from_i64(DType::i64, {(int64_t)rest[o - 1]->size()}, *rest[o - 1]));
}

// ReverseSequence(input, sequence_lens; time_axis, batch_axis): along time_axis, the first
// sequence_lens[b] elements of batch b in reverse order, the rest as they are.
void lower_reverse_sequence(Lowering &L, Node &n) {
  const Value *x = n.input(0), *lv = n.input(1);
  const size_t r = x->shape.size();
  if (r < 2) L.fail("input must have rank >= 2");
  int t_ax = axis_normalize(L, n.attr_int("time_axis", 0), r), b_ax = axis_normalize(L, n.attr_int("batch_axis", 1), r);
  if (t_ax == b_ax || t_ax > 1 || b_ax > 1) L.fail("time_axis and batch_axis must be 0 and 1 in some order");
  if (lv->dtype != DType::i64 && lv->dtype != DType::i32) L.fail("sequence_lens must be int32 or int64");
  if (lv->shape != Shape{x->shape[b_ax]}) L.fail("sequence_lens must have shape [" + std::to_string(x->shape[b_ax]) + "] (the batch size)");
  Loc xl = L.loc(x), ll = L.loc(lv);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  if (shape_numel(x->shape) == 0) return;
  Kernel &k = L.kernel_new("reverse_sequence");
  k.axes = x->shape;
  k.n_parallel = (int)r;
  int len = k.expr_cast(k.expr_load(access_axes(ll, {b_ax}), ll.dtype), DType::i64);
  int t = k.expr_iota(t_ax, DType::i64);
  int rev = k.expr_binary(Op::sub, k.expr_binary(Op::sub, len, k.expr_const(1, DType::i64), DType::i64), t, DType::i64);
  int idx = k.expr_select(k.expr_binary(Op::lt, t, len, DType::boolean), rev, t, DType::i64);
  std::vector<int> axis_of;
  for (size_t d = 0; d < r; d++) axis_of.push_back((int)d == t_ax ? -1 : (int)d);
  Access a = access_axes(xl, axis_of);
  a.dims[t_ax].expr = idx;
  a.dims[t_ax].bound = Bound::clamp;
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// NonMaxSuppression: per batch and class, the boxes by decreasing score (above score_threshold),
// each kept unless its IoU with a box already kept passes iou_threshold, at most
// max_output_boxes_per_class of them; the output is one (batch, class, box) row per kept box. How
// many boxes survive depends on every value, so the boxes, scores and thresholds must be known at
// compile time and the result is a constant (a static upper bound with a run-time count would not
// give the [count, 3] shape ONNX defines). Sources: the ONNX operator specification
// (NonMaxSuppression, opsets 10 and 11); ties in score keep the lower box index first.
void lower_non_max_suppression(Lowering &L, Node &n) {
  const Tensor &boxes = L.const_input(0, "boxes"), &scores = L.const_input(1, "scores");
  int64_t max_out = L.has_input(2) ? (L.const_input(2, "max_output_boxes_per_class").numel() ? L.const_input(2, "max_output_boxes_per_class").at_i64(0) : 0) : 0;
  double iou_max = L.has_input(3) && L.const_input(3, "iou_threshold").numel() ? L.const_input(3, "iou_threshold").at_f64(0) : 0;
  bool has_score_min = L.has_input(4) && L.const_input(4, "score_threshold").numel();
  double score_min = has_score_min ? L.const_input(4, "score_threshold").at_f64(0) : 0;
  bool center = n.attr_int("center_point_box", 0) != 0;
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4) L.fail("boxes must have shape [batch, boxes, 4], got " + shape_str(boxes.shape));
  const int64_t B = boxes.shape[0], N = boxes.shape[1];
  if (scores.shape.size() != 3 || scores.shape[0] != B || scores.shape[2] != N)
    L.fail("scores must have shape [" + std::to_string(B) + ", classes, " + std::to_string(N) + "], got " + shape_str(scores.shape));
  const int64_t C = scores.shape[1];
  // (y1, x1, y2, x2) with y1 <= y2, x1 <= x2
  auto corners = [&](int64_t b, int64_t i) {
    double v[4];
    for (int j = 0; j < 4; j++) v[j] = boxes.at_f64((b * N + i) * 4 + j);
    if (center) return std::array<double, 4>{v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
    return std::array<double, 4>{std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]), std::max(v[1], v[3])};
  };
  auto iou = [](const std::array<double, 4> &a, const std::array<double, 4> &b) {
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if (area_a <= 0 || area_b <= 0) return 0.0;
    double h = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0])), w = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
    double inter = h * w;
    return inter / (area_a + area_b - inter);
  };
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      std::vector<int64_t> order;
      for (int64_t i = 0; i < N; i++) {
        double sc = scores.at_f64((b * C + c) * N + i);
        if (sc != sc) L.fail("scores hold NaN");
        if (!has_score_min || sc > score_min) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return scores.at_f64((b * C + c) * N + i) > scores.at_f64((b * C + c) * N + j); });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if ((int64_t)kept.size() >= max_out) break;
        bool keep = true;
        for (int64_t j : kept)
          if (iou(corners(b, i), corners(b, j)) > iou_max) {
            keep = false;
            break;
          }
        if (keep) kept.push_back(i);
      }
      for (int64_t i : kept) rows.insert(rows.end(), {b, c, i});
    }
  L.output_constant(n.outputs[0], Tensor::from_i64(DType::i64, {(int64_t)rows.size() / 3, 3}, rows));
}

}  // namespace

void lower_register_select() {
  auto &t = lower_table();
  t["Compress"] = lower_compress;
  t["NonZero"] = lower_non_zero;
  t["Unique"] = lower_unique;
  t["ReverseSequence"] = lower_reverse_sequence;
  t["NonMaxSuppression"] = lower_non_max_suppression;
}

}  // namespace capgraph
