// Ops whose output size depends on input values: Compress, NonZero, Unique, NonMaxSuppression. A
// capture has static shapes (DESIGN.md: the memory plan is fixed at compile time), so the values
// that set the size must be known at compile time: Compress's condition, NonZero's and Unique's
// input (a model input can be bound with `capgraph compile --bind NAME=FILE.npy`). Otherwise they
// are refused with the usual "must be known at compile time" message naming the input. Compress
// then gathers its data (which may be a run-time value) with the kept indices as a constant;
// NonZero and Unique become constants. ReverseSequence is here too: a gather whose index depends on
// a per-batch length. Sources: the ONNX operator specification (onnx/docs/Operators.md): Compress
// (11), NonZero (13), Unique (11), ReverseSequence (10).
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
      Loc c = L.buffer_new(xl.dtype, xl.shape, Buffer::Kind::intermediate,
                           n.outputs[0]->name + "_flat");
      kernel_copy(L, xl, c, "compress_flatten");
      xl = c;
    }
    xl.shape = {shape_numel(x->shape)};
    xl.strides = {1};
  }
  int ax = flat ? 0 : axis_normalize(L, n.attr_int("axis", 0), xl.shape.size());
  if (cond.numel() > xl.shape[ax])
    L.fail("condition has " + std::to_string(cond.numel()) + " entries, more than the " +
           std::to_string(xl.shape[ax]) + " slices along the axis");
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < cond.numel(); i++)
    if (cond.at_f64(i) != 0) kept.push_back(i);
  Shape out = xl.shape;
  out[ax] = (int64_t)kept.size();
  Loc y = L.output_new(n.outputs[0], x->dtype, out);
  if (kept.empty() || shape_numel(out) == 0) return;
  Loc idx = L.constant_new(Tensor::from_i64(DType::i64, {(int64_t)kept.size()}, kept),
                           n.outputs[0]->name + "_kept");
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
  std::vector<int64_t> first;       // index of each distinct slice's first appearance
  std::vector<int64_t> which(len);  // input slice -> distinct slice (in first-seen order)
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
  if (sorted)
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return slices[first[a]] < slices[first[b]]; });
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
    if (!n.outputs[o]->name.empty())
      L.output_constant(n.outputs[o],
                        Tensor::from_i64(DType::i64, {(int64_t)rest[o - 1]->size()}, *rest[o - 1]));
}

// ReverseSequence(input, sequence_lens; time_axis, batch_axis): along time_axis, the first
// sequence_lens[b] elements of batch b in reverse order, the rest as they are.
void lower_reverse_sequence(Lowering &L, Node &n) {
  const Value *x = n.input(0), *lv = n.input(1);
  const size_t r = x->shape.size();
  if (r < 2) L.fail("input must have rank >= 2");
  int t_ax = axis_normalize(L, n.attr_int("time_axis", 0), r),
      b_ax = axis_normalize(L, n.attr_int("batch_axis", 1), r);
  if (t_ax == b_ax || t_ax > 1 || b_ax > 1)
    L.fail("time_axis and batch_axis must be 0 and 1 in some order");
  if (lv->dtype != DType::i64 && lv->dtype != DType::i32)
    L.fail("sequence_lens must be int32 or int64");
  if (lv->shape != Shape{x->shape[b_ax]})
    L.fail("sequence_lens must have shape [" + std::to_string(x->shape[b_ax]) +
           "] (the batch size)");
  Loc xl = L.loc(x), ll = L.loc(lv);
  Loc y = L.output_new(n.outputs[0], x->dtype, x->shape);
  if (shape_numel(x->shape) == 0) return;
  Kernel &k = L.kernel_new("reverse_sequence");
  k.axes = x->shape;
  k.n_parallel = (int)r;
  int len = k.expr_cast(k.expr_load(access_axes(ll, {b_ax}), ll.dtype), DType::i64);
  int t = k.expr_iota(t_ax, DType::i64);
  int rev = k.expr_binary(
      Op::sub, k.expr_binary(Op::sub, len, k.expr_const(1, DType::i64), DType::i64), t, DType::i64);
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

// The kernels of lower_non_max_suppression_runtime, one method each, over B batches, C classes
// and N boxes (G = B*C pairs, at most K selected per pair); each returns the buffer it fills.
struct NmsRuntime {
  Lowering &L;
  const int64_t B, N, C, G, K;
  const std::string base;  // names the buffers: the output's name
  const Loc bl, sl;        // boxes, scores
  static constexpr DType f = DType::f32, i = DType::i64, t = DType::boolean;

  // Corners (y1, x1, y2, x2) of every box, [B, N, 4].
  Loc corners_lower(bool center) {
    Loc corners = L.buffer_new(f, {B, N, 4}, Buffer::Kind::intermediate, base + "_corners");
    Kernel &k = L.kernel_new("nms_corners");
    k.axes = {B, N, 4};
    k.n_parallel = 3;
    int v[4];
    for (int j = 0; j < 4; j++) {
      Access a = access_axes(bl, {0, 1, -1});
      a.dims[2].shift = j;
      v[j] = k.expr_load(a, f);
    }
    int c[4];
    if (center) {  // (x_center, y_center, width, height)
      int half_w = k.expr_binary(Op::mul, v[2], k.expr_const(0.5, f), f),
          half_h = k.expr_binary(Op::mul, v[3], k.expr_const(0.5, f), f);
      c[0] = k.expr_binary(Op::sub, v[1], half_h, f);
      c[1] = k.expr_binary(Op::sub, v[0], half_w, f);
      c[2] = k.expr_binary(Op::add, v[1], half_h, f);
      c[3] = k.expr_binary(Op::add, v[0], half_w, f);
    } else {  // two corners in either order
      c[0] = k.expr_binary(Op::min, v[0], v[2], f);
      c[1] = k.expr_binary(Op::min, v[1], v[3], f);
      c[2] = k.expr_binary(Op::max, v[0], v[2], f);
      c[3] = k.expr_binary(Op::max, v[1], v[3], f);
    }
    int col = k.expr_iota(2, i), r = c[3];
    for (int j = 2; j >= 0; j--)
      r = k.expr_select(k.expr_binary(Op::eq, col, k.expr_const(j, i), t), c[j], r, f);
    k.result = r;
    k.store = access_store(corners);
    k.store_dtype = f;
    return corners;
  }
  // Rank of each score within its (batch, class): how many beat it (ties: the lower index first).
  Loc rank_lower() {
    Loc rank = L.buffer_new(i, {B, C, N}, Buffer::Kind::intermediate, base + "_rank");
    Kernel &k = L.kernel_new("nms_rank");
    k.axes = {B, C, N, N};
    k.n_parallel = 3;
    int si = k.expr_load(access_axes(sl, {0, 1, 2}), f),
        sj = k.expr_load(access_axes(sl, {0, 1, 3}), f);
    int better = k.expr_binary(Op::gt, sj, si, t);
    int tie = k.expr_binary(Op::logical_and, k.expr_binary(Op::eq, sj, si, t),
                            k.expr_binary(Op::lt, k.expr_iota(3, i), k.expr_iota(2, i), t), t);
    k.body = k.expr_cast(k.expr_binary(Op::logical_or, better, tie, t), i);
    k.reduce = Reduce::sum;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(rank);
    k.store_dtype = i;
    k.flops = G * N * N;
    return rank;
  }
  // order[b, c, q]: the box of rank q.
  Loc order_lower(const Loc &rank) {
    Loc order = L.buffer_new(i, {B, C, N}, Buffer::Kind::intermediate, base + "_order");
    Kernel &k = L.kernel_new("nms_order");
    k.axes = {B, C, N, N};
    k.n_parallel = 3;
    int hit =
        k.expr_binary(Op::eq, k.expr_load(access_axes(rank, {0, 1, 3}), i), k.expr_iota(2, i), t);
    k.body = k.expr_select(hit, k.expr_iota(3, i), k.expr_const(-1, i), i);
    k.reduce = Reduce::max;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(order);
    k.store_dtype = i;
    return order;
  }
  // Corners in score order, [B, C, N, 4].
  Loc sorted_corners_lower(const Loc &corners, const Loc &order) {
    Loc sorted = L.buffer_new(f, {B, C, N, 4}, Buffer::Kind::intermediate, base + "_sorted");
    Kernel &k = L.kernel_new("nms_sorted_corners");
    k.axes = {B, C, N, 4};
    k.n_parallel = 4;
    Access a = access_axes(corners, {0, -1, 3});
    a.dims[1].expr = k.expr_load(access_axes(order, {0, 1, 2}), i);
    a.dims[1].bound = Bound::clamp;
    k.result = k.expr_load(a, f);
    k.store = access_store(sorted);
    k.store_dtype = f;
    return sorted;
  }
  // Scores in score order, [B, C, N].
  Loc sorted_scores_lower(const Loc &order) {
    Loc sorted_scores =
        L.buffer_new(f, {B, C, N}, Buffer::Kind::intermediate, base + "_sorted_scores");
    Kernel &k = L.kernel_new("nms_sorted_scores");
    k.axes = {B, C, N};
    k.n_parallel = 3;
    Access a = access_axes(sl, {0, 1, -1});
    a.dims[2].expr = k.expr_load(access_axes(order, {0, 1, 2}), i);
    a.dims[2].bound = Bound::clamp;
    k.result = k.expr_load(a, f);
    k.store = access_store(sorted_scores);
    k.store_dtype = f;
    return sorted_scores;
  }
  // Whether sorted position r overlaps position q (axis 2 of the step kernel k) by an IoU above
  // iou_max, with positive areas and a positive intersection (boolean).
  int overlaps(Kernel &k, const Loc &sorted, int64_t r, double iou_max, int zero) {
    int a[4], b[4];
    for (int j = 0; j < 4; j++) {
      Access aa = access_axes(sorted, {0, 1, -1, -1});
      aa.dims[2].shift = r;
      aa.dims[3].shift = j;
      a[j] = k.expr_load(aa, f);
      Access ba = access_axes(sorted, {0, 1, 2, -1});
      ba.dims[3].shift = j;
      b[j] = k.expr_load(ba, f);
    }
    auto sub = [&](int x, int y) { return k.expr_binary(Op::sub, x, y, f); };
    auto mul = [&](int x, int y) { return k.expr_binary(Op::mul, x, y, f); };
    auto gt0 = [&](int x) { return k.expr_binary(Op::gt, x, zero, t); };
    auto all = [&](int x, int y) { return k.expr_binary(Op::logical_and, x, y, t); };
    int area_a = mul(sub(a[2], a[0]), sub(a[3], a[1])),
        area_b = mul(sub(b[2], b[0]), sub(b[3], b[1]));
    int ih = sub(k.expr_binary(Op::min, a[2], b[2], f), k.expr_binary(Op::max, a[0], b[0], f));
    int iw = sub(k.expr_binary(Op::min, a[3], b[3], f), k.expr_binary(Op::max, a[1], b[1], f));
    int inter = mul(k.expr_binary(Op::max, ih, zero, f), k.expr_binary(Op::max, iw, zero, f));
    int uni = sub(k.expr_binary(Op::add, area_a, area_b, f), inter);
    int over =
        k.expr_binary(Op::gt, k.expr_binary(Op::div, inter, uni, f), k.expr_const(iou_max, f), t);
    return all(all(all(gt0(area_a), gt0(area_b)), all(gt0(inter), gt0(uni))), over);
  }
  // kept[b, c, r] (1 or 0), decided in score order: position r is kept when its score passes
  // score_threshold and no kept position q < r overlaps it by more than iou_threshold.
  Loc suppression_lower(const Loc &sorted, const Loc &sorted_scores, double iou_max,
                        bool has_score_min, double score_min) {
    Loc kept = L.buffer_new(f, {B, C, N}, Buffer::Kind::intermediate, base + "_kept");
    for (int64_t r = 0; r < N; r++) {
      Kernel &k = L.kernel_new("nms_step");
      k.axes = {B, C};
      if (r > 0) k.axes.push_back(r);
      k.n_parallel = 2;
      Access sa = access_axes(sorted_scores, {0, 1, -1});
      sa.dims[2].shift = r;
      int valid = has_score_min
                      ? k.expr_binary(Op::gt, k.expr_load(sa, f), k.expr_const(score_min, f), t)
                      : k.expr_const(1, t);
      int one = k.expr_const(1, f), zero = k.expr_const(0, f);
      if (r > 0) {
        auto all = [&](int x, int y) { return k.expr_binary(Op::logical_and, x, y, t); };
        int over = overlaps(k, sorted, r, iou_max, zero);
        int kept_q = k.expr_binary(Op::gt, k.expr_load(access_axes(kept, {0, 1, 2}), f),
                                   k.expr_const(0.5, f), t);
        k.body = k.expr_select(all(kept_q, over), one, zero, f);
        k.reduce = Reduce::max;
        k.acc_dtype = f;
        int free = k.expr_binary(Op::lt, k.expr_unary(Op::acc, -1, f), k.expr_const(0.5, f), t);
        valid = all(valid, free);
        k.flops = G * r * 20;
      }
      k.result = k.expr_select(valid, one, zero, f);
      Access st = access_axes(kept, {0, 1, -1});
      st.dims[2].shift = r;
      k.store = st;
      k.store_dtype = f;
    }
    return kept;
  }
  // before[b, c, r]: kept positions before r, so a kept r is the before[r]-th selected box.
  Loc kept_before_lower(const Loc &kept) {
    Loc before = L.buffer_new(i, {B, C, N}, Buffer::Kind::intermediate, base + "_before");
    Kernel &k = L.kernel_new("nms_kept_before");
    k.axes = {B, C, N, N};
    k.n_parallel = 3;
    int earlier = k.expr_binary(Op::lt, k.expr_iota(3, i), k.expr_iota(2, i), t);
    int kq = k.expr_cast(k.expr_binary(Op::gt, k.expr_load(access_axes(kept, {0, 1, 3}), f),
                                       k.expr_const(0.5, f), t),
                         i);
    k.body = k.expr_select(earlier, kq, k.expr_const(0, i), i);
    k.reduce = Reduce::sum;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(before);
    k.store_dtype = i;
    return before;
  }
  // selected[g, j] for the G = B*C pairs: the box index of the j-th selected box, or -1; at most
  // K per pair, which is max_output_boxes_per_class's cap.
  Loc selected_lower(const Loc &kept, const Loc &before, const Loc &order) {
    Loc selected = L.buffer_new(i, {B, C, K}, Buffer::Kind::intermediate, base + "_selected");
    Kernel &k = L.kernel_new("nms_selected");
    k.axes = {B, C, K, N};
    k.n_parallel = 3;
    int kr = k.expr_binary(Op::gt, k.expr_load(access_axes(kept, {0, 1, 3}), f),
                           k.expr_const(0.5, f), t);
    int at =
        k.expr_binary(Op::eq, k.expr_load(access_axes(before, {0, 1, 3}), i), k.expr_iota(2, i), t);
    k.body = k.expr_select(k.expr_binary(Op::logical_and, kr, at, t),
                           k.expr_load(access_axes(order, {0, 1, 3}), i), k.expr_const(-1, i), i);
    k.reduce = Reduce::max;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(selected);
    k.store_dtype = i;
    return selected;
  }
  // count[g]: the selected boxes of pair g (sel: selected seen as [G, K]).
  Loc count_lower(const Loc &sel) {
    Loc count = L.buffer_new(i, {G}, Buffer::Kind::intermediate, base + "_count");
    Kernel &k = L.kernel_new("nms_count");
    k.axes = {G, K};
    k.n_parallel = 1;
    k.body = k.expr_cast(
        k.expr_binary(Op::ge, k.expr_load(access_axes(sel, {0, 1}), i), k.expr_const(0, i), t), i);
    k.reduce = Reduce::sum;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(count);
    k.store_dtype = i;
    return count;
  }
  // start[g]: the first output row of pair g (the counts of the pairs before it).
  Loc start_lower(const Loc &count) {
    Loc start = L.buffer_new(i, {G}, Buffer::Kind::intermediate, base + "_start");
    Kernel &k = L.kernel_new("nms_start");
    k.axes = {G, G};
    k.n_parallel = 1;
    int earlier = k.expr_binary(Op::lt, k.expr_iota(1, i), k.expr_iota(0, i), t);
    k.body = k.expr_select(earlier, k.expr_load(access_axes(count, {1}), i), k.expr_const(0, i), i);
    k.reduce = Reduce::sum;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(start);
    k.store_dtype = i;
    return start;
  }
  // Output row o, column col: from the pair g whose rows [start, start + count) hold o; -1 if
  // none.
  void rows_lower(const Loc &sel, const Loc &count, const Loc &start, const Loc &y) {
    std::vector<int64_t> batch_of(G), class_of(G);
    for (int64_t g = 0; g < G; g++) batch_of[g] = g / C, class_of[g] = g % C;
    Loc gb = L.constant_new(Tensor::from_i64(i, {G}, batch_of), base + "_batch_of");
    Loc gc = L.constant_new(Tensor::from_i64(i, {G}, class_of), base + "_class_of");
    Kernel &k = L.kernel_new("nms_rows");
    k.axes = {K * G, 3, G};
    k.n_parallel = 2;
    int o = k.expr_iota(0, i), col = k.expr_iota(1, i);
    int st = k.expr_load(access_axes(start, {2}), i), ct = k.expr_load(access_axes(count, {2}), i);
    int inside = k.expr_binary(Op::logical_and, k.expr_binary(Op::ge, o, st, t),
                               k.expr_binary(Op::lt, o, k.expr_binary(Op::add, st, ct, i), t), t);
    Access box = access_axes(sel, {2, -1});
    box.dims[1].expr = k.expr_binary(Op::sub, o, st, i);
    box.dims[1].bound = Bound::clamp;
    int v = k.expr_select(
        k.expr_binary(Op::eq, col, k.expr_const(0, i), t), k.expr_load(access_axes(gb, {2}), i),
        k.expr_select(k.expr_binary(Op::eq, col, k.expr_const(1, i), t),
                      k.expr_load(access_axes(gc, {2}), i), k.expr_load(box, i), i),
        i);
    k.body = k.expr_select(inside, v, k.expr_const(-1, i), i);
    k.reduce = Reduce::max;
    k.acc_dtype = i;
    k.result = k.expr_unary(Op::acc, -1, i);
    k.store = access_store(y);
    k.store_dtype = i;
  }
};

// NonMaxSuppression on run-time boxes and scores (a detection head's): the number of kept boxes
// depends on the values, so the output has the static bound ONNX allows no smaller than:
// [min(max_output_boxes_per_class, boxes) x classes x batch, 3], the selected (batch, class, box)
// rows first in ONNX's order (batch, then class, then decreasing score), every other row -1. A
// user takes rows until the first -1. Greedy suppression is a recurrence (a box is kept unless a
// kept box before it in score order overlaps it), so it is unrolled over the score order like the
// recurrent layers (lower_rnn.cpp): one small reduction kernel per position, all (batch, class)
// pairs at once; the sort and the final compaction are quadratic rank/gather kernels like TopK's.
// Meant for the hundreds to few thousands of boxes of a detection head.
// Sources: the ONNX operator specification (NonMaxSuppression, opsets 10 and 11); ONNX Runtime's
// CPU kernel (onnxruntime/core/providers/cpu/object_detection/non_max_suppression.cc) for the
// details the specification leaves open: a pair overlaps only with positive areas and positive
// intersection, IoU strictly above the threshold, scores strictly above score_threshold.
void lower_non_max_suppression_runtime(Lowering &L, Node &n, int64_t max_out, double iou_max,
                                       bool has_score_min, double score_min, bool center) {
  const Value *bv = n.input(0), *sv = n.input(1);
  if (bv->dtype != DType::f32 || sv->dtype != DType::f32)
    L.fail("run-time boxes and scores must be float32");
  if (bv->shape.size() != 3 || bv->shape[2] != 4)
    L.fail("boxes must have shape [batch, boxes, 4], got " + shape_str(bv->shape));
  const int64_t B = bv->shape[0], N = bv->shape[1];
  if (sv->shape.size() != 3 || sv->shape[0] != B || sv->shape[2] != N)
    L.fail("scores must have shape [" + std::to_string(B) + ", classes, " + std::to_string(N) +
           "], got " + shape_str(sv->shape));
  const int64_t C = sv->shape[1], G = B * C, K = std::min(std::max<int64_t>(max_out, 0), N);
  Loc y = L.output_new(n.outputs[0], DType::i64, {K * G, 3});
  if (K * G == 0) return;
  const std::string base = n.outputs[0]->name;
  Loc bl = L.loc(bv), sl = L.loc(sv);
  NmsRuntime nms{L, B, N, C, G, K, base, bl, sl};
  const Loc corners = nms.corners_lower(center);
  const Loc rank = nms.rank_lower();
  const Loc order = nms.order_lower(rank);
  const Loc sorted = nms.sorted_corners_lower(corners, order);
  const Loc sorted_scores = nms.sorted_scores_lower(order);
  const Loc kept = nms.suppression_lower(sorted, sorted_scores, iou_max, has_score_min, score_min);
  const Loc before = nms.kept_before_lower(kept);
  Loc sel = nms.selected_lower(kept, before, order);  // the same buffer seen as [G, K]
  sel.shape = {G, K};
  sel.strides = {K, 1};
  const Loc count = nms.count_lower(sel);
  const Loc start = nms.start_lower(count);
  nms.rows_lower(sel, count, start, y);
}

// NonMaxSuppression: per batch and class, the boxes by decreasing score (above score_threshold),
// each kept unless its IoU with a box already kept passes iou_threshold, at most
// max_output_boxes_per_class of them; the output is one (batch, class, box) row per kept box. How
// many boxes survive depends on every value: with boxes and scores known at compile time the result
// is a constant of ONNX's exact [count, 3] shape; otherwise lower_non_max_suppression_runtime gives
// the static bound. The thresholds and max_output_boxes_per_class must be known at compile time.
// Sources: the ONNX operator specification (NonMaxSuppression, opsets 10 and 11); ties in score
// keep the lower box index first.
void lower_non_max_suppression(Lowering &L, Node &n) {
  if (!n.input(0)->constant || !n.input(1)->constant) {
    if (!L.has_input(2))
      return lower_non_max_suppression_runtime(L, n, 0, 0, false, 0,
                                               n.attr_int("center_point_box", 0) != 0);
    const Tensor &m = L.const_input(2, "max_output_boxes_per_class");
    const bool has_iou = L.has_input(3) && L.const_input(3, "iou_threshold").numel();
    const bool has_min = L.has_input(4) && L.const_input(4, "score_threshold").numel();
    lower_non_max_suppression_runtime(L, n, m.numel() ? m.at_i64(0) : 0,
                                      has_iou ? L.const_input(3, "iou_threshold").at_f64(0) : 0,
                                      has_min,
                                      has_min ? L.const_input(4, "score_threshold").at_f64(0) : 0,
                                      n.attr_int("center_point_box", 0) != 0);
    return;
  }
  const Tensor &boxes = L.const_input(0, "boxes"), &scores = L.const_input(1, "scores");
  int64_t max_out = L.has_input(2) ? (L.const_input(2, "max_output_boxes_per_class").numel()
                                          ? L.const_input(2, "max_output_boxes_per_class").at_i64(0)
                                          : 0)
                                   : 0;
  double iou_max = L.has_input(3) && L.const_input(3, "iou_threshold").numel()
                       ? L.const_input(3, "iou_threshold").at_f64(0)
                       : 0;
  bool has_score_min = L.has_input(4) && L.const_input(4, "score_threshold").numel();
  double score_min = has_score_min ? L.const_input(4, "score_threshold").at_f64(0) : 0;
  bool center = n.attr_int("center_point_box", 0) != 0;
  if (boxes.shape.size() != 3 || boxes.shape[2] != 4)
    L.fail("boxes must have shape [batch, boxes, 4], got " + shape_str(boxes.shape));
  const int64_t B = boxes.shape[0], N = boxes.shape[1];
  if (scores.shape.size() != 3 || scores.shape[0] != B || scores.shape[2] != N)
    L.fail("scores must have shape [" + std::to_string(B) + ", classes, " + std::to_string(N) +
           "], got " + shape_str(scores.shape));
  const int64_t C = scores.shape[1];
  // (y1, x1, y2, x2) with y1 <= y2, x1 <= x2
  auto corners = [&](int64_t b, int64_t i) {
    double v[4];
    for (int j = 0; j < 4; j++) v[j] = boxes.at_f64((b * N + i) * 4 + j);
    if (center)
      return std::array<double, 4>{v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2,
                                   v[0] + v[2] / 2};
    return std::array<double, 4>{std::min(v[0], v[2]), std::min(v[1], v[3]), std::max(v[0], v[2]),
                                 std::max(v[1], v[3])};
  };
  auto iou = [](const std::array<double, 4> &a, const std::array<double, 4> &b) {
    double area_a = (a[2] - a[0]) * (a[3] - a[1]), area_b = (b[2] - b[0]) * (b[3] - b[1]);
    if (area_a <= 0 || area_b <= 0) return 0.0;
    double h = std::max(0.0, std::min(a[2], b[2]) - std::max(a[0], b[0])),
           w = std::max(0.0, std::min(a[3], b[3]) - std::max(a[1], b[1]));
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
      std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
        return scores.at_f64((b * C + c) * N + i) > scores.at_f64((b * C + c) * N + j);
      });
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
  L.output_constant(n.outputs[0],
                    Tensor::from_i64(DType::i64, {(int64_t)rows.size() / 3, 3}, rows));
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
