// Movement and shape ops. Reshape, Transpose, Slice, Expand, Squeeze, Unsqueeze, Split and
// Flatten are views (a new shape and strides over the same buffer, no kernel); Concat, Pad,
// Tile, Gather, Resize and DepthToSpace are copy kernels with index maps; Shape, Size, Constant,
// ConstantOfShape and Range produce compile-time constants.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// A contiguous copy of `l` if it is not contiguous already.
Loc contiguous(Lowering &L, const Loc &l, const std::string &name) {
  if (l.contiguous()) return l;
  Loc c = L.buffer_new(l.dtype, l.shape, Buffer::Kind::intermediate, name);
  if (shape_numel(l.shape) > 0) kernel_copy(L, l, c, "copy");
  return c;
}

Loc reshaped(Lowering &L, const Value *x, const Shape &s) {
  if (shape_numel(s) != shape_numel(x->shape))
    L.fail("cannot reshape " + shape_str(x->shape) + " (" + std::to_string(shape_numel(x->shape)) +
           " elements) to " + shape_str(s));
  Loc l = contiguous(L, L.loc(x), x->name + "_contiguous");
  l.shape = s;
  l.strides = shape_strides(s);
  return l;
}

std::vector<int64_t> ints_input_or_attr(Lowering &L, Node &n, size_t input, const char *attr,
                                        int64_t since_opset) {
  if (L.graph.opset >= since_opset)
    return n.input(input) ? L.const_input(input, attr).to_i64() : std::vector<int64_t>{};
  return n.attr_ints(attr);
}

void lower_reshape(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::vector<int64_t> want =
      L.graph.opset >= 5 ? L.const_input(1, "shape").to_i64() : n.attr_ints("shape");
  bool allowzero = n.attr_int("allowzero", 0) != 0;
  Shape s(want.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < want.size(); i++) {
    if (want[i] == -1) {
      if (infer >= 0) L.fail("more than one -1 in the target shape");
      infer = (int)i;
      continue;
    }
    if (want[i] == 0 && !allowzero) {
      if (i >= x->shape.size())
        L.fail("target shape copies dimension " + std::to_string(i) + " that the input lacks");
      s[i] = x->shape[i];
    } else if (want[i] < 0) {
      L.fail("negative dimension " + std::to_string(want[i]) + " in the target shape");
    } else {
      s[i] = want[i];
    }
    if (__builtin_mul_overflow(known, s[i], &known) || known > kMaxElements)
      L.fail("target shape has too many elements (more than 2^48)");
  }
  if (infer >= 0) {
    if (known == 0 || shape_numel(x->shape) % known != 0)
      L.fail("cannot infer the -1 dimension reshaping " + shape_str(x->shape));
    s[infer] = shape_numel(x->shape) / known;
  }
  L.output_view(n.outputs[0], reshaped(L, x, s));
}

void lower_flatten(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  int64_t axis = n.attr_int("axis", 1);
  size_t r = x->shape.size();
  if (axis < 0) axis += r;
  if (axis < 0 || axis > (int64_t)r) L.fail("axis out of range");
  int64_t a = shape_numel(Shape(x->shape.begin(), x->shape.begin() + axis));
  L.output_view(n.outputs[0], reshaped(L, x, {a, shape_numel(x->shape) / std::max<int64_t>(a, 1)}));
}

void lower_squeeze(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::vector<int64_t> axes = ints_input_or_attr(L, n, 1, "axes", 13);
  std::vector<bool> drop(x->shape.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x->shape.size(); i++) drop[i] = x->shape[i] == 1;
  }
  for (int64_t a : axes) {
    int ax = axis_normalize(L, a, x->shape.size());
    if (x->shape[ax] != 1)
      L.fail("cannot squeeze axis " + std::to_string(a) + " of size " +
             std::to_string(x->shape[ax]));
    drop[ax] = true;
  }
  Loc l = L.loc(x), out = l;
  out.shape.clear();
  out.strides.clear();
  for (size_t i = 0; i < l.shape.size(); i++)
    if (!drop[i]) {
      out.shape.push_back(l.shape[i]);
      out.strides.push_back(l.strides[i]);
    }
  L.output_view(n.outputs[0], out);
}

void lower_unsqueeze(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::vector<int64_t> axes = ints_input_or_attr(L, n, 1, "axes", 13);
  size_t r = x->shape.size() + axes.size();
  std::vector<bool> added(r, false);
  for (int64_t a : axes) {
    int ax = axis_normalize(L, a, r);
    if (added[ax]) L.fail("axis " + std::to_string(a) + " given twice");
    added[ax] = true;
  }
  Loc l = L.loc(x), out = l;
  out.shape.clear();
  out.strides.clear();
  size_t j = 0;
  for (size_t i = 0; i < r; i++) {
    if (added[i]) {
      out.shape.push_back(1);
      out.strides.push_back(0);
    } else {
      out.shape.push_back(l.shape[j]);
      out.strides.push_back(l.strides[j++]);
    }
  }
  L.output_view(n.outputs[0], out);
}

void lower_transpose(Lowering &L, Node &n) {
  Loc l = L.loc(n.input(0)), out = l;
  size_t r = l.shape.size();
  std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm.empty())
    for (size_t i = 0; i < r; i++) perm.push_back((int64_t)(r - 1 - i));
  if (perm.size() != r)
    L.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(r));
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < r; i++) {
    int p = axis_normalize(L, perm[i], r);
    if (seen[p]) L.fail("perm is not a permutation");
    seen[p] = true;
    out.shape[i] = l.shape[p];
    out.strides[i] = l.strides[p];
  }
  L.output_view(n.outputs[0], out);
}

void lower_slice(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (L.graph.opset >= 10) {
    starts = L.const_input(1, "starts").to_i64();
    ends = L.const_input(2, "ends").to_i64();
    if (n.input(3)) axes = L.const_input(3, "axes").to_i64();
    if (n.input(4)) steps = L.const_input(4, "steps").to_i64();
  } else {
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); i++) axes.push_back((int64_t)i);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    L.fail("starts, ends, axes and steps differ in length");
  Loc l = L.loc(x), out = l;
  for (size_t i = 0; i < starts.size(); i++) {
    int ax = axis_normalize(L, axes[i], l.shape.size());
    int64_t dim = l.shape[ax], step = steps[i];
    if (step == 0) L.fail("step 0");
    // Past the largest dimension a step selects one element either way; bounded, the arithmetic
    // below cannot overflow.
    step = std::clamp<int64_t>(step, -kMaxElements - 1, kMaxElements + 1);
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t count = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    count = std::max<int64_t>(count, 0);
    out.offset += s * l.strides[ax];
    out.shape[ax] = count;
    // A step past the end leaves one element whose stride is never used; keep it from overflowing.
    if (__builtin_mul_overflow(l.strides[ax], step, &out.strides[ax]))
      out.strides[ax] = l.strides[ax];
  }
  if (shape_numel(out.shape) == 0) out.offset = l.offset;
  L.output_view(n.outputs[0], out);
}

void lower_expand(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::vector<int64_t> want = L.const_input(1, "shape").to_i64();
  Shape s;
  if (!shape_broadcast(x->shape, want, s))
    L.fail("cannot expand " + shape_str(x->shape) + " to " + shape_str(want));
  Loc l = L.loc(x), out;
  out = l;
  out.shape = s;
  out.strides.assign(s.size(), 0);
  size_t off = s.size() - l.shape.size();
  for (size_t i = 0; i < l.shape.size(); i++)
    if (l.shape[i] != 1) out.strides[off + i] = l.strides[i];
  L.output_view(n.outputs[0], out);
}

void lower_concat(Lowering &L, Node &n) {
  std::vector<const Value *> ins;
  for (Value *v : n.inputs)
    if (v) ins.push_back(v);
  if (ins.empty()) L.fail("needs inputs");
  int ax = axis_normalize(L, n.attr_int("axis", 0), ins[0]->shape.size());
  Shape s = ins[0]->shape;
  s[ax] = 0;
  for (const Value *v : ins) {
    if (v->shape.size() != s.size() || v->dtype != ins[0]->dtype)
      L.fail("inputs differ in rank or type");
    for (size_t d = 0; d < s.size(); d++)
      if ((int)d != ax && v->shape[d] != s[d])
        L.fail("input '" + v->name + "' of shape " + shape_str(v->shape) + " does not match " +
               shape_str(ins[0]->shape) + " outside axis " + std::to_string(ax));
    if (__builtin_add_overflow(s[ax], v->shape[ax], &s[ax]) || s[ax] > kMaxElements)
      L.fail("the concatenated axis is too large");
  }
  Loc out = L.output_new(n.outputs[0], ins[0]->dtype, s);
  int64_t at = 0;
  for (const Value *v : ins) {
    Loc part = out;
    part.shape[ax] = v->shape[ax];
    part.offset = out.offset + at * out.strides[ax];
    at += v->shape[ax];
    if (shape_numel(part.shape) == 0) continue;
    kernel_copy(L, L.loc(v), part, "concat_copy");
  }
}

void lower_split(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  int ax = axis_normalize(L, n.attr_int("axis", 0), x->shape.size());
  std::vector<int64_t> split =
      L.graph.opset >= 13
          ? (n.input(1) ? L.const_input(1, "split").to_i64() : std::vector<int64_t>{})
          : n.attr_ints("split");
  size_t outs = n.outputs.size();
  int64_t dim = x->shape[ax];
  if (split.empty()) {
    int64_t each = (dim + outs - 1) / outs;
    for (size_t i = 0; i < outs; i++)
      split.push_back(std::min<int64_t>(each, dim - each * (int64_t)i));
  }
  if (split.size() != outs)
    L.fail("split has " + std::to_string(split.size()) + " entries for " + std::to_string(outs) +
           " outputs");
  for (int64_t s : split)
    if (s < 0 || s > dim)
      L.fail("split size " + std::to_string(s) + " is outside 0.." + std::to_string(dim));
  int64_t at = 0;
  Loc l = L.loc(x);
  for (size_t i = 0; i < outs; i++) {
    Loc part = l;
    part.shape[ax] = split[i];
    part.offset = l.offset + at * l.strides[ax];
    at += split[i];
    if (!n.outputs[i]->name.empty()) L.output_view(n.outputs[i], part);
  }
  if (at != dim)
    L.fail("split sizes add up to " + std::to_string(at) + ", not " + std::to_string(dim));
}

void lower_gather(Lowering &L, Node &n) {
  const Value *x = n.input(0), *iv = n.input(1);
  int ax = axis_normalize(L, n.attr_int("axis", 0), x->shape.size());
  Loc l = L.loc(x);
  int64_t dim = l.shape[ax];
  if (iv->dtype != DType::i64 && iv->dtype != DType::i32) L.fail("indices must be int32 or int64");
  if (iv->constant && iv->shape.empty()) {  // a single index: a view without that dimension
    int64_t i = iv->constant->at_i64(0);
    if (i < 0) i += dim;
    if (i < 0 || i >= dim)
      L.fail("index " + std::to_string(iv->constant->at_i64(0)) +
             " out of range for dimension of size " + std::to_string(dim));
    Loc out = l;
    out.offset += i * l.strides[ax];
    out.shape.erase(out.shape.begin() + ax);
    out.strides.erase(out.strides.begin() + ax);
    L.output_view(n.outputs[0], out);
    return;
  }
  Shape s(l.shape.begin(), l.shape.begin() + ax);
  s.insert(s.end(), iv->shape.begin(), iv->shape.end());
  s.insert(s.end(), l.shape.begin() + ax + 1, l.shape.end());
  Loc y = L.output_new(n.outputs[0], x->dtype, s);
  if (shape_numel(s) == 0) return;
  Kernel &k = L.kernel_new("gather");
  int q = (int)iv->shape.size(), r = (int)s.size();
  k.axes = r ? s : Shape{1};
  k.n_parallel = (int)k.axes.size();
  Loc il;
  if (iv->constant) {  // normalise negative indices at compile time
    std::vector<int64_t> idx = iv->constant->to_i64();
    for (int64_t &i : idx) {
      if (i < 0) i += dim;
      if (i < 0 || i >= dim)
        L.fail("index out of range for dimension of size " + std::to_string(dim));
    }
    il = L.constant_new(Tensor::from_i64(DType::i32, iv->shape, idx), n.name + "_indices");
  } else {
    il = L.loc(iv);
  }
  std::vector<int> iaxes;
  for (int d = 0; d < q; d++) iaxes.push_back(ax + d);
  int ie = k.expr_cast(k.expr_load(access_axes(il, iaxes), il.dtype), DType::i64);
  if (!iv->constant) {
    int neg = k.expr_binary(Op::lt, ie, k.expr_const(0, DType::i64), DType::boolean);
    ie = k.expr_select(
        neg, k.expr_binary(Op::add, ie, k.expr_const((double)dim, DType::i64), DType::i64), ie,
        DType::i64);
  }
  Access a;
  a.buffer = l.buffer;
  a.offset = l.offset;
  for (int d = 0; d < (int)l.shape.size(); d++) {
    DimIndex di;
    di.extent = l.shape[d];
    di.stride = l.strides[d];
    if (d < ax) {
      if (l.shape[d] != 1) di.terms.push_back({d, 1});
    } else if (d == ax) {
      di.expr = ie;
      di.bound =
          iv->constant ? Bound::none : Bound::clamp;  // a bad runtime index never reads outside
    } else if (l.shape[d] != 1) {
      di.terms.push_back({d - 1 + q, 1});
    }
    a.dims.push_back(di);
  }
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

void lower_pad(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::string mode = n.attr_string("mode", "constant");
  std::vector<int64_t> pads, axes;
  double value = 0;
  if (L.graph.opset >= 11) {
    pads = L.const_input(1, "pads").to_i64();
    if (n.input(2)) value = L.const_input(2, "constant_value").at_f64(0);
    if (n.input(3)) axes = L.const_input(3, "axes").to_i64();
  } else {
    pads = n.attr_ints("pads");
    value = n.attr_float("value", 0);
  }
  size_t r = x->shape.size();
  if (axes.empty())
    for (size_t i = 0; i < r; i++) axes.push_back((int64_t)i);
  if (pads.size() != 2 * axes.size())
    L.fail("pads has " + std::to_string(pads.size()) + " entries, expected " +
           std::to_string(2 * axes.size()));
  Shape begin(r, 0), end(r, 0);
  for (size_t i = 0; i < axes.size(); i++) {
    int ax = axis_normalize(L, axes[i], r);
    begin[ax] = pads[i];
    end[ax] = pads[axes.size() + i];
  }
  Bound b = mode == "constant"  ? Bound::skip
            : mode == "reflect" ? Bound::reflect
            : mode == "edge"    ? Bound::clamp
            : mode == "wrap"    ? Bound::wrap
                                : Bound::none;
  if (b == Bound::none) L.fail("mode '" + mode + "' is not supported");
  Loc l = L.loc(x);
  Shape s(r);
  for (size_t d = 0; d < r; d++)
    if (__builtin_add_overflow(l.shape[d], begin[d], &s[d]) ||
        __builtin_add_overflow(s[d], end[d], &s[d]) || s[d] > kMaxElements)
      L.fail("pads " + std::to_string(begin[d]) + " and " + std::to_string(end[d]) +
             " make dimension " + std::to_string(d) + " too large");
  // Negative pads crop: a view first, then pad what remains.
  for (size_t d = 0; d < r; d++) {
    if (begin[d] < -l.shape[d] || end[d] < -l.shape[d]) L.fail("pads crop more than the input has");
    if (begin[d] < 0) {
      l.offset += -begin[d] * l.strides[d];
      l.shape[d] += begin[d];
      begin[d] = 0;
    }
    if (end[d] < 0) {
      l.shape[d] += end[d];
      end[d] = 0;
    }
    if (l.shape[d] < 0) L.fail("pads crop more than the input has");
  }
  Loc y = L.output_new(n.outputs[0], x->dtype, s);
  if (shape_numel(s) == 0) return;
  Kernel &k = L.kernel_new("pad_" + mode);
  k.axes = r ? s : Shape{1};
  k.n_parallel = (int)k.axes.size();
  Access a = access_broadcast(l, (int)r);
  for (size_t d = 0; d < r; d++) {
    a.dims[d].terms = {{(int)d, 1}};
    a.dims[d].shift = -begin[d];
    a.dims[d].bound = begin[d] || end[d] ? b : Bound::none;
    if (l.shape[d] == 0) L.fail("cannot pad an empty dimension");
  }
  a.fill = value;
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

void lower_tile(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  std::vector<int64_t> reps = L.const_input(1, "repeats").to_i64();
  if (reps.size() != x->shape.size()) L.fail("repeats must have one entry per dimension");
  Shape s = x->shape;
  for (size_t d = 0; d < s.size(); d++)
    if (reps[d] < 0 || __builtin_mul_overflow(s[d], reps[d], &s[d]) || s[d] > kMaxElements)
      L.fail("repeats " + std::to_string(reps[d]) + " for dimension " + std::to_string(d) +
             " is negative or too large");
  Loc y = L.output_new(n.outputs[0], x->dtype, s);
  if (shape_numel(s) == 0) return;
  Kernel &k = L.kernel_new("tile");
  int r = (int)s.size();
  k.axes = r ? s : Shape{1};
  k.n_parallel = (int)k.axes.size();
  Access a = access_broadcast(L.loc(x), r);
  for (int d = 0; d < r; d++)
    if (reps[d] != 1 && x->shape[d] != 1) a.dims[d].bound = Bound::wrap;
  k.result = k.expr_load(a, x->dtype);
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// DepthToSpace (DCR/CRD) and SpaceToDepth: the output is indexed through (h, bh, w, bw) axes so
// both sides are affine.
void lower_depth_space(Lowering &L, Node &n, bool to_space) {
  const Value *x = n.input(0);
  if (x->shape.size() != 4) L.fail("expects a 4-D input");
  int64_t b = n.attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t(1) << 20)) L.fail("blocksize must be between 1 and 2^20");
  bool crd = n.attr_string("mode", "DCR") == "CRD";
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  Loc xl = L.loc(x);
  // axes: n, c_small, h_small, bh, w_small, bw
  int64_t Cs = to_space ? C / (b * b) : C, Hs = to_space ? H : H / b, Ws = to_space ? W : W / b;
  if (to_space ? C % (b * b) : (H % b || W % b))
    L.fail("dimensions are not divisible by the block size");
  if (C > kMaxElements / (b * b) || H > kMaxElements / b || W > kMaxElements / b)
    L.fail("blocksize makes the output too large");
  Shape s = to_space ? Shape{N, Cs, H * b, W * b} : Shape{N, C * b * b, Hs, Ws};
  Loc y = L.output_new(n.outputs[0], x->dtype, s);
  Kernel &k = L.kernel_new(to_space ? "depth_to_space" : "space_to_depth");
  k.axes = {N, Cs, Hs, b, Ws, b};
  k.n_parallel = 6;
  // The depth index: DCR = (bh*b + bw)*Cs + c ; CRD = c*b*b + bh*b + bw
  std::vector<AxisTerm> depth = crd ? std::vector<AxisTerm>{{1, b * b}, {3, b}, {5, 1}}
                                    : std::vector<AxisTerm>{{3, b * Cs}, {5, Cs}, {1, 1}};
  auto space_access = [&](const Loc &l) {
    Access a;
    a.buffer = l.buffer;
    a.offset = l.offset;
    a.dims = {DimIndex{{{0, 1}}, 0, -1, l.shape[0], l.strides[0]},
              DimIndex{{{1, 1}}, 0, -1, l.shape[1], l.strides[1]},
              DimIndex{{{2, b}, {3, 1}}, 0, -1, l.shape[2], l.strides[2]},
              DimIndex{{{4, b}, {5, 1}}, 0, -1, l.shape[3], l.strides[3]}};
    return a;
  };
  auto depth_access = [&](const Loc &l) {
    Access a;
    a.buffer = l.buffer;
    a.offset = l.offset;
    a.dims = {DimIndex{{{0, 1}}, 0, -1, l.shape[0], l.strides[0]},
              DimIndex{depth, 0, -1, l.shape[1], l.strides[1]},
              DimIndex{{{2, 1}}, 0, -1, l.shape[2], l.strides[2]},
              DimIndex{{{4, 1}}, 0, -1, l.shape[3], l.strides[3]}};
    return a;
  };
  k.result = k.expr_load(to_space ? depth_access(xl) : space_access(xl), x->dtype);
  k.store = to_space ? space_access(y) : depth_access(y);
  k.store_dtype = x->dtype;
}

// What a Resize (or Upsample) node asks for: per axis its scale and output size, the
// interpolation and ONNX's coordinate mode.
struct ResizeGeometry {
  size_t r = 0;
  std::vector<double> scales;
  Shape out;
  bool from_sizes = false;  // `sizes` given: scales are out / in
  std::string mode;         // nearest, linear, bilinear or cubic
  bool linear = false;      // any mode but nearest
  std::string ct;           // coordinate_transformation_mode
  std::string nearest;      // nearest_mode
  // Upsample and Resize-10: asymmetric, and the nearest pixel rounds down when upsampling an
  // axis, up when downsampling it (ONNX Runtime's "simple" mode).
  bool simple = false;

  // A source coordinate for output index o along an axis of input size in, output size os.
  double source(const Lowering &L, int64_t o, int64_t in, int64_t os, double scale) const {
    if (ct == "half_pixel") return (o + 0.5) / scale - 0.5;
    if (ct == "pytorch_half_pixel") return os > 1 ? (o + 0.5) / scale - 0.5 : 0;
    if (ct == "align_corners") return os > 1 ? o * (double)(in - 1) / (os - 1) : 0;
    if (ct == "asymmetric") return o / scale;
    if (ct == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
    L.fail("coordinate_transformation_mode '" + ct + "' is not supported");
  }
  // The axes whose size or scale changes.
  std::vector<int> resized(const Shape &in) const {
    std::vector<int> v;
    for (size_t d = 0; d < r; d++)
      if (out[d] != in[d] || scales[d] != 1.0) v.push_back((int)d);
    return v;
  }
};

// The scales (an attribute before opset 9, an input after) or the sizes, and the output shape
// they give.
void resize_scales_read(Lowering &L, Node &n, ResizeGeometry &g) {
  const Value *x = n.input(0);
  const size_t r = g.r;
  std::vector<double> &scales = g.scales;
  Shape &out = g.out;
  const Value *scales_v = nullptr, *sizes_v = nullptr;
  if (n.op == "Upsample" || L.graph.opset == 10) {
    if (L.graph.opset < 9 && n.op == "Upsample") {
      for (float f : n.attr_floats("scales")) scales.push_back(f);
    } else {
      scales_v = n.input(1);
    }
  } else {
    scales_v = n.input(2);
    sizes_v = n.input(3);
  }
  if (scales_v && shape_numel(scales_v->shape) > 0) {
    for (double v : [&] {
           std::vector<double> d;
           const Tensor &t =
               L.const_input(n.op == "Upsample" || L.graph.opset == 10 ? 1 : 2, "scales");
           for (int64_t i = 0; i < t.numel(); i++) d.push_back(t.at_f64(i));
           return d;
         }())
      scales.push_back(v);
  }
  g.from_sizes = sizes_v && shape_numel(sizes_v->shape) > 0;
  if (g.from_sizes) {
    std::vector<int64_t> sz = L.const_input(3, "sizes").to_i64();
    if (sz.size() != r) L.fail("sizes must have one entry per dimension");
    scales.clear();
    for (size_t d = 0; d < r; d++) {
      out[d] = sz[d];
      scales.push_back((double)sz[d] / x->shape[d]);
    }
  } else {
    if (scales.size() != r)
      L.fail("scales must have one entry per dimension (" + std::to_string(r) + ")");
    for (size_t d = 0; d < r; d++) {
      double o = std::floor(x->shape[d] * scales[d]);
      if (!(o >= 0 && o <= (double)kMaxElements))
        L.fail("scale " + std::to_string(scales[d]) + " gives no valid size for dimension " +
               std::to_string(d));
      out[d] = (int64_t)o;
    }
  }
  // Each resized axis gets index and weight tables built here, one entry per output index.
  constexpr int64_t kMaxResizedAxis = int64_t(1) << 20;
  for (size_t d = 0; d < r; d++) {
    if (out[d] != x->shape[d] && out[d] > kMaxResizedAxis)
      L.fail("resized dimension " + std::to_string(d) + " of size " + std::to_string(out[d]) +
             " is larger than 2^20");
    if (!(scales[d] > 0 && std::isfinite(scales[d])) && out[d] > 0)
      L.fail("scale " + std::to_string(scales[d]) + " for dimension " + std::to_string(d) +
             " is not a positive number");
  }
}

ResizeGeometry resize_geometry(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  ResizeGeometry g;
  g.r = x->shape.size();
  g.out = Shape(g.r);
  resize_scales_read(L, n, g);
  g.mode = n.attr_string("mode", "nearest");
  if (g.mode != "nearest" && g.mode != "linear" && g.mode != "bilinear" && g.mode != "cubic")
    L.fail("mode '" + g.mode + "' is not supported");
  g.linear = g.mode != "nearest";
  g.ct = n.attr_string("coordinate_transformation_mode",
                       L.graph.opset >= 11 ? "half_pixel" : "asymmetric");
  g.nearest = n.attr_string("nearest_mode", "round_prefer_floor");
  g.simple = n.op == "Upsample" || L.graph.opset == 10;
  if (g.simple) g.ct = "asymmetric";
  // align_corners divides by (resized length - 1). Given `scales` whose product with the input
  // length is not whole, the two references disagree on that length: ONNX's reference takes
  // in * scale (2.4 for 4 * 0.6, so test_resize_downsample_scales_linear_align_corners expects
  // 3.142857, kept on purpose: onnx/onnx#2462), ONNX Runtime and the spec's words ("the length of
  // the resized tensor") the whole output size (4 there). Neither is picked: refused, with `sizes`
  // as the way out. Sources: onnx/onnx docs/Operators.md Resize; onnx/reference/ops/op_resize.py
  // (_interpolate_1d_with_x: output_width = scale_factor * input_width); onnxruntime
  // upsamplebase.h (ALIGN_CORNERS: length_resized is the output dimension).
  if (g.ct == "align_corners" && !g.simple && !g.from_sizes) {
    for (size_t d = 0; d < g.r; d++) {
      double len = x->shape[d] * g.scales[d];
      if (g.out[d] > 1 && std::abs(len - (double)g.out[d]) > 1e-6 * len) {
        char text[64];
        std::snprintf(text, sizeof text, "%lld x %g = %g", (long long)x->shape[d], g.scales[d],
                      len);
        L.fail("align_corners with scales giving a fractional resized length on dimension " +
               std::to_string(d) + " (" + text +
               "): ONNX's reference divides by that length - 1, ONNX Runtime by the output size - "
               "1 (onnx/onnx#2462); give `sizes` instead");
      }
    }
  }
  return g;
}

// Four taps per resized axis (i0-1 .. i0+2 around the source coordinate), Keys' cubic
// convolution with coefficient A: |d| <= 1: ((A+2)|d| - (A+3))|d|^2 + 1; 1 < |d| < 2:
// ((A|d| - 5A)|d| + 8A)|d| - 4A. Taps outside the input read the edge, or with exclude_outside
// get weight 0 and the others are renormalised. Sources: ONNX Resize spec (cubic_coeff_a,
// exclude_outside); R. Keys, "Cubic convolution interpolation for digital image processing",
// 1981. A separate kernel: the nearest/linear kernels below stay as they were.
void resize_cubic_lower(Lowering &L, Node &n, const ResizeGeometry &g, const Loc &xl,
                        const Loc &y) {
  const Value *x = n.input(0);
  const size_t r = g.r;
  const Shape &out = g.out;
  const double A = n.attr_float("cubic_coeff_a", -0.75f);
  const bool exclude = n.attr_int("exclude_outside", 0) != 0;
  auto cubic = [A](double d) {
    d = std::abs(d);
    if (d <= 1) return ((A + 2) * d - (A + 3)) * d * d + 1;
    if (d < 2) return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A;
    return 0.0;
  };
  Kernel &k = L.kernel_new("resize_cubic");
  k.axes = out;
  k.n_parallel = (int)r;
  const std::vector<int> resized = g.resized(x->shape);
  if (resized.size() > 2) L.fail("cubic resize of more than 2 axes is not supported");
  std::vector<std::array<int, 4>> idx_e(r), w_e(r);
  for (int d : resized) {
    const int64_t in = x->shape[d];
    std::array<std::vector<int64_t>, 4> idx;
    std::array<std::vector<float>, 4> w;
    for (int t = 0; t < 4; t++) {
      idx[t].resize(out[d]);
      w[t].resize(out[d]);
    }
    for (int64_t o = 0; o < out[d]; o++) {
      double s = g.source(L, o, in, out[d], g.scales[d]);
      double i0 = std::floor(s), f = s - i0, sum = 0;
      double ws[4];
      for (int t = 0; t < 4; t++) {
        double i = i0 - 1 + t;
        ws[t] = cubic(f - (t - 1));
        if (exclude && (i < 0 || i >= in)) ws[t] = 0;
        sum += ws[t];
        idx[t][o] = (int64_t)std::clamp(i, 0.0, (double)(in - 1));
      }
      for (int t = 0; t < 4; t++) w[t][o] = (float)(exclude && sum != 0 ? ws[t] / sum : ws[t]);
    }
    for (int t = 0; t < 4; t++) {
      Loc il =
          L.constant_new(Tensor::from_i64(DType::i32, {out[d]}, idx[t]), n.name + "_cubic_index");
      Loc wl = L.constant_new(Tensor::from_f32({out[d]}, w[t]), n.name + "_cubic_weight");
      idx_e[d][t] = k.expr_load(access_axes(il, {d}), DType::i32);
      w_e[d][t] = k.expr_load(access_axes(wl, {d}), DType::f32);
    }
  }
  int corners = 1, result = -1;
  for (size_t j = 0; j < resized.size(); j++) corners *= 4;
  for (int c = 0; c < corners; c++) {
    Access a = access_broadcast(xl, (int)r);
    int weight = -1;
    for (size_t j = 0, code = c; j < resized.size(); j++, code /= 4) {
      int d = resized[j], t = (int)(code % 4);
      a.dims[d].terms.clear();
      a.dims[d].expr = idx_e[d][t];
      weight = weight < 0 ? w_e[d][t] : k.expr_binary(Op::mul, weight, w_e[d][t], DType::f32);
    }
    int v = k.expr_load(a, DType::f32);
    if (weight >= 0) v = k.expr_binary(Op::mul, v, weight, DType::f32);
    result = result < 0 ? v : k.expr_binary(Op::add, result, v, DType::f32);
  }
  k.result = result;
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// The nearest source index of output index o (ONNX's nearest_mode, or the simple mode's rule),
// clamped to the input before the cast: a far index is not UB.
int64_t resize_nearest_index(const ResizeGeometry &g, double s, double scale, int64_t in) {
  double f;
  if (g.simple)
    f = scale < 1 ? std::ceil(s) : std::floor(s);
  else if (g.nearest == "floor")
    f = std::floor(s);
  else if (g.nearest == "ceil")
    f = std::ceil(s);
  else if (g.nearest == "round_prefer_ceil")
    f = std::floor(s + 0.5);
  else
    f = (s - std::floor(s) == 0.5) ? std::floor(s) : std::round(s);
  return (int64_t)std::clamp(f, 0.0, (double)(in - 1));
}

// Nearest and (bi/tri)linear: per resized axis a lo index table (and for linear a hi index and
// the weight of hi), then the sum over the 2^resized corners (1 corner for nearest).
void resize_interpolate_lower(Lowering &L, Node &n, const ResizeGeometry &g, const Loc &xl,
                              const Loc &y) {
  const Value *x = n.input(0);
  const size_t r = g.r;
  const Shape &out = g.out;
  const bool linear = g.linear;
  Kernel &k = L.kernel_new(linear ? "resize_linear" : "resize_nearest");
  k.axes = out;
  k.n_parallel = (int)r;
  const std::vector<int> resized = g.resized(x->shape);
  if (linear && resized.size() > 3) L.fail("linear resize of more than 3 axes is not supported");
  // Tables per resized axis: lo index, hi index, weight of hi.
  std::vector<int> lo_e(r, -1), hi_e(r, -1), w_e(r, -1);
  for (int d : resized) {
    std::vector<int64_t> lo(out[d]), hi(out[d]);
    std::vector<float> w(out[d]);
    for (int64_t o = 0; o < out[d]; o++) {
      double s = g.source(L, o, x->shape[d], out[d], g.scales[d]);
      if (!linear) {
        lo[o] = resize_nearest_index(g, s, g.scales[d], x->shape[d]);
      } else {
        s = std::clamp(s, 0.0, (double)x->shape[d] - 1);
        int64_t i0 = (int64_t)std::floor(s);
        lo[o] = i0;
        hi[o] = std::min<int64_t>(i0 + 1, x->shape[d] - 1);
        w[o] = (float)(s - i0);
      }
    }
    auto table = [&](const Tensor &t, DType dt) {
      Loc tl = L.constant_new(t, n.name + "_resize_table");
      std::vector<int> ax = {d};
      return k.expr_load(access_axes(tl, ax), dt);
    };
    lo_e[d] = table(Tensor::from_i64(DType::i32, {out[d]}, lo), DType::i32);
    if (linear) {
      hi_e[d] = table(Tensor::from_i64(DType::i32, {out[d]}, hi), DType::i32);
      w_e[d] = table(Tensor::from_f32({out[d]}, w), DType::f32);
    }
  }
  int corners = linear ? 1 << resized.size() : 1, result = -1;
  for (int c = 0; c < corners; c++) {
    Access a = access_broadcast(xl, (int)r);
    int weight = -1;
    for (size_t j = 0; j < resized.size(); j++) {
      int d = resized[j];
      bool upper = linear && (c >> j & 1);
      a.dims[d].terms.clear();
      a.dims[d].expr = upper ? hi_e[d] : lo_e[d];
      if (linear) {
        int wd = upper ? w_e[d]
                       : k.expr_binary(Op::sub, k.expr_const(1, DType::f32), w_e[d], DType::f32);
        weight = weight < 0 ? wd : k.expr_binary(Op::mul, weight, wd, DType::f32);
      }
    }
    int v = k.expr_load(a, DType::f32);
    if (weight >= 0) v = k.expr_binary(Op::mul, v, weight, DType::f32);
    result = result < 0 ? v : k.expr_binary(Op::add, result, v, DType::f32);
  }
  k.result = result;
  k.store = access_store(y);
  k.store_dtype = x->dtype;
}

// Resize (and the older Upsample): nearest, (bi/tri)linear or cubic, with ONNX's coordinate
// modes. Per resized axis the source indices and weights are computed at compile time into small
// constant tables the kernel reads.
void lower_resize(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  // float16 storage: loads widen to float32, the store rounds back (Kernel::store_dtype).
  if (x->dtype != DType::f32 && x->dtype != DType::f16)
    L.fail("only float32 and float16 are supported");
  const ResizeGeometry g = resize_geometry(L, n);
  Loc xl = L.loc(x);
  Loc y = L.output_new(n.outputs[0], x->dtype, g.out);
  if (shape_numel(g.out) == 0) return;
  if (g.mode == "cubic")
    resize_cubic_lower(L, n, g, xl, y);
  else
    resize_interpolate_lower(L, n, g, xl, y);
}

void lower_shape(Lowering &L, Node &n) {
  const Shape &s = n.input(0)->shape;
  int64_t r = (int64_t)s.size(), start = n.attr_int("start", 0), end = n.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, start, r);
  std::vector<int64_t> v(s.begin() + start, s.begin() + end);
  L.output_constant(n.outputs[0], Tensor::from_i64(DType::i64, {(int64_t)v.size()}, v));
}

void lower_constant(Lowering &L, Node &n) {
  if (const onnx::Attribute *a = n.attr("value"))
    return L.output_constant(n.outputs[0],
                             tensor_from_onnx(a->t, L.graph.origin + ": " + n.label()));
  if (const onnx::Attribute *a = n.attr("value_float"))
    return L.output_constant(n.outputs[0], Tensor::from_f32({}, {a->f}));
  if (const onnx::Attribute *a = n.attr("value_floats"))
    return L.output_constant(n.outputs[0],
                             Tensor::from_f32({(int64_t)a->floats.size()}, a->floats));
  if (const onnx::Attribute *a = n.attr("value_int"))
    return L.output_constant(n.outputs[0], Tensor::from_i64(DType::i64, {}, {a->i}));
  if (const onnx::Attribute *a = n.attr("value_ints"))
    return L.output_constant(n.outputs[0],
                             Tensor::from_i64(DType::i64, {(int64_t)a->ints.size()}, a->ints));
  L.fail("has no supported value attribute (value, value_float(s), value_int(s))");
}

void lower_constant_of_shape(Lowering &L, Node &n) {
  std::vector<int64_t> s = L.const_input(0, "input").to_i64();
  Tensor v = Tensor::from_f32({1}, {0.0f});
  if (const onnx::Attribute *a = n.attr("value"))
    v = tensor_from_onnx(a->t, L.graph.origin + ": " + n.label());
  size_t es = dtype_size(v.dtype);
  int64_t count = shape_numel(s);
  if (count < 0 || count > (int64_t)1 << 28) L.fail("shape " + shape_str(s) + " is too large");
  L.fold_reserve(count * (int64_t)es);
  std::vector<uint8_t> bytes(count * es);
  for (int64_t i = 0; i < count; i++) std::copy(v.data(), v.data() + es, bytes.begin() + i * es);
  L.output_constant(n.outputs[0], Tensor::from_bytes(v.dtype, s, std::move(bytes)));
}

void lower_range(Lowering &L, Node &n) {
  const Tensor &s = L.const_input(0, "start"), &lim = L.const_input(1, "limit"),
               &d = L.const_input(2, "delta");
  double start = s.at_f64(0), limit = lim.at_f64(0), delta = d.at_f64(0);
  if (delta == 0) L.fail("delta is 0");
  double steps = std::ceil((limit - start) / delta);
  if (std::isnan(steps) || steps > (double)((int64_t)1 << 28))
    L.fail("start " + std::to_string(start) + ", limit " + std::to_string(limit) + ", delta " +
           std::to_string(delta) + " make too many elements");
  int64_t count = steps > 0 ? (int64_t)steps : 0;
  L.fold_reserve(count * (int64_t)(sizeof(double) + dtype_size(s.dtype)));
  std::vector<double> v(count);
  for (int64_t i = 0; i < count; i++) v[i] = start + i * delta;
  L.output_constant(n.outputs[0], Tensor::from_f64(s.dtype, {count}, v));
}

}  // namespace

void lower_register_movement() {
  auto &t = lower_table();
  t["Reshape"] = lower_reshape;
  t["Flatten"] = lower_flatten;
  t["Squeeze"] = lower_squeeze;
  t["Unsqueeze"] = lower_unsqueeze;
  t["Transpose"] = lower_transpose;
  t["Slice"] = lower_slice;
  t["Expand"] = lower_expand;
  t["Concat"] = lower_concat;
  t["Split"] = lower_split;
  t["Gather"] = lower_gather;
  t["Pad"] = lower_pad;
  t["Tile"] = lower_tile;
  t["Resize"] = lower_resize;
  t["Upsample"] = lower_resize;
  t["DepthToSpace"] = [](Lowering &L, Node &n) { lower_depth_space(L, n, true); };
  t["SpaceToDepth"] = [](Lowering &L, Node &n) { lower_depth_space(L, n, false); };
  t["Shape"] = lower_shape;
  t["Size"] = [](Lowering &L, Node &n) {
    L.output_constant(n.outputs[0],
                      Tensor::from_i64(DType::i64, {}, {shape_numel(n.input(0)->shape)}));
  };
  t["Constant"] = lower_constant;
  t["ConstantOfShape"] = lower_constant_of_shape;
  t["Range"] = lower_range;
}

}  // namespace capgraph
