// Sampling X at computed locations: GridSample and RoiAlign.
//
// GridSample (2-D): each output point reads X around the location its grid entry gives. One
// kernel: the output (N, C, H_out, W_out) is the parallel space and the interpolation taps
// (1x1 nearest, 2x2 bilinear, 4x4 bicubic) are summed, each tap weighted; the tap's row and
// column are data-dependent indices computed from the grid in the kernel.
// Sources: the ONNX operator specification (onnx/docs/Operators.md, GridSample, opset 16) and
// ONNX Runtime's CPU kernel (onnxruntime/core/providers/cpu/tensor/grid_sample.cc) for what the
// specification leaves open: the grid's (x, y) are unnormalized to [0, W-1] (align_corners) or
// [-0.5, W-0.5]; border clamps the location into [0, W-1] (bicubic: each tap's index), reflection
// mirrors it into that range;
// then taps outside X read zero (zeros), or the nearest edge pixel (border, reflection: a
// reflected location is at most one tap outside); nearest rounds half to even; bicubic uses
// A = -0.75.
#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// x mirrored into [lo, hi] (as many times as it takes).
int reflect_expr(Kernel &k, int x, double lo, double hi) {
  const DType f = DType::f32;
  double range = hi - lo;
  if (range <= 0) return k.expr_const(lo, f);
  auto c = [&](double v) { return k.expr_const(v, f); };
  int below = k.expr_binary(Op::lt, x, c(lo), DType::boolean);
  int above = k.expr_binary(Op::gt, x, c(hi), DType::boolean);
  int d = k.expr_select(below, k.expr_binary(Op::sub, c(lo), x, f),
                        k.expr_binary(Op::sub, x, c(hi), f), f);
  int flips = k.expr_unary(Op::floor, k.expr_binary(Op::div, d, c(range), f), f);
  int r = k.expr_binary(Op::sub, d, k.expr_binary(Op::mul, flips, c(range), f), f);
  int half = k.expr_unary(Op::floor, k.expr_binary(Op::mul, flips, c(0.5), f), f);
  int even = k.expr_binary(Op::eq, flips, k.expr_binary(Op::mul, half, c(2), f), DType::boolean);
  int from_lo = k.expr_binary(Op::add, c(lo), r, f), from_hi = k.expr_binary(Op::sub, c(hi), r, f);
  int if_below = k.expr_select(even, from_lo, from_hi, f),
      if_above = k.expr_select(even, from_hi, from_lo, f);
  return k.expr_select(below, if_below, k.expr_select(above, if_above, x, f), f);
}

// The cubic convolution weight of tap t (0..3) at fraction f: distances 1+f, f, 1-f, 2-f.
int cubic_weight(Kernel &k, int tap, int frac) {
  const DType f = DType::f32;
  const double A = -0.75;
  auto c = [&](double v) { return k.expr_const(v, f); };
  auto near = [&](int d) {  // ((A+2)d - (A+3)) d^2 + 1, for d <= 1
    return k.expr_binary(
        Op::add,
        k.expr_binary(Op::mul,
                      k.expr_binary(Op::sub, k.expr_binary(Op::mul, c(A + 2), d, f), c(A + 3), f),
                      k.expr_binary(Op::mul, d, d, f), f),
        c(1), f);
  };
  auto far = [&](int d) {  // ((A(d - 5) d + 8A) d - 4A, for 1 < d < 2
    int inner = k.expr_binary(
        Op::add,
        k.expr_binary(Op::mul, k.expr_binary(Op::mul, c(A), k.expr_binary(Op::sub, d, c(5), f), f),
                      d, f),
        c(8 * A), f);
    return k.expr_binary(Op::sub, k.expr_binary(Op::mul, inner, d, f), c(4 * A), f);
  };
  int w0 = far(k.expr_binary(Op::add, c(1), frac, f)), w1 = near(frac);
  int w2 = near(k.expr_binary(Op::sub, c(1), frac, f)),
      w3 = far(k.expr_binary(Op::sub, c(2), frac, f));
  auto is = [&](int v) {
    return k.expr_binary(Op::eq, tap, k.expr_const(v, DType::i64), DType::boolean);
  };
  return k.expr_select(is(0), w0, k.expr_select(is(1), w1, k.expr_select(is(2), w2, w3, f), f), f);
}

void lower_grid_sample(Lowering &L, Node &n) {
  const Value *xv = n.input(0), *gv = n.input(1);
  if (xv->dtype != DType::f32 || gv->dtype != DType::f32) L.fail("X and grid must be float32");
  if (xv->shape.size() != 4)
    L.fail("only 2-D sampling (X of rank 4) is supported, got X of shape " + shape_str(xv->shape));
  const int64_t N = xv->shape[0], C = xv->shape[1], H = xv->shape[2], W = xv->shape[3];
  if (gv->shape.size() != 4 || gv->shape[0] != N || gv->shape[3] != 2)
    L.fail("grid must have shape [N, H_out, W_out, 2] with N = " + std::to_string(N) + ", got " +
           shape_str(gv->shape));
  std::string mode = n.attr_string("mode", "bilinear"),
              pad = n.attr_string("padding_mode", "zeros");
  bool align = n.attr_int("align_corners", 0) != 0;
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic")
    L.fail("mode '" + mode + "' is not one of bilinear, nearest, bicubic");
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    L.fail("padding_mode '" + pad + "' is not one of zeros, border, reflection");
  // A reflected bicubic tap can land two pixels outside, mirrored about the half-pixel edge, which
  // no access bound expresses; refused rather than approximated.
  if (mode == "bicubic" && pad == "reflection")
    L.fail("bicubic sampling with reflection padding is not supported");
  if (H == 0 || W == 0) L.fail("X has no pixels to sample");
  const int64_t Ho = gv->shape[1], Wo = gv->shape[2];
  Loc xl = L.loc(xv), gl = L.loc(gv);
  Loc y = L.output_new(n.outputs[0], DType::f32, {N, C, Ho, Wo});
  if (N * C * Ho * Wo == 0) return;
  const int64_t taps = mode == "nearest" ? 1 : mode == "bilinear" ? 2 : 4;
  Kernel &k = L.kernel_new("grid_sample_" + mode);
  k.axes = {N, C, Ho, Wo, taps, taps};
  k.n_parallel = 4;
  const DType f = DType::f32;
  auto c = [&](double v) { return k.expr_const(v, f); };
  // The sampled location along one dimension of size `size` (component 0: x/width, 1: y/height).
  auto location = [&](int comp, int64_t size) {
    Access a = access_axes(gl, {0, 2, 3, -1});
    a.dims[3].shift = comp;
    int g = k.expr_load(a, f);
    int v = align ? k.expr_binary(Op::mul, k.expr_binary(Op::add, g, c(1), f),
                                  c(0.5 * (double)(size - 1)), f)
                  : k.expr_binary(
                        Op::mul,
                        k.expr_binary(Op::sub,
                                      k.expr_binary(Op::mul, k.expr_binary(Op::add, g, c(1), f),
                                                    c((double)size), f),
                                      c(1), f),
                        c(0.5), f);
    // Bicubic border clamps each tap's index instead (ONNX Runtime); for one or two taps the two
    // agree.
    if (pad == "border" && mode != "bicubic")
      v = k.expr_binary(Op::min, k.expr_binary(Op::max, v, c(0), f), c((double)(size - 1)), f);
    if (pad == "reflection")
      v = align ? reflect_expr(k, v, 0, (double)(size - 1))
                : reflect_expr(k, v, -0.5, (double)size - 0.5);
    return v;
  };
  // Per dimension: the tap's index (int64) and weight.
  auto tap = [&](int comp, int64_t size, int tap_axis, int &index, int &weight) {
    int v = location(comp, size);
    int t = k.expr_iota(tap_axis, DType::i64);
    if (mode == "nearest") {
      index = k.expr_cast(k.expr_unary(Op::round, v, f), DType::i64);
      weight = c(1);
      return;
    }
    int base = k.expr_unary(Op::floor, v, f);
    int frac = k.expr_binary(Op::sub, v, base, f);
    int first = k.expr_cast(base, DType::i64);
    if (mode == "bicubic")
      first = k.expr_binary(Op::sub, first, k.expr_const(1, DType::i64), DType::i64);
    index = k.expr_binary(Op::add, first, t, DType::i64);
    if (mode == "bilinear") {
      int is0 = k.expr_binary(Op::eq, t, k.expr_const(0, DType::i64), DType::boolean);
      weight = k.expr_select(is0, k.expr_binary(Op::sub, c(1), frac, f), frac, f);
    } else {
      weight = cubic_weight(k, t, frac);
    }
  };
  int iy, wy, ix, wx;
  tap(1, H, 4, iy, wy);
  tap(0, W, 5, ix, wx);
  Access a = access_axes(xl, {0, 1, -1, -1});
  const Bound outside = pad == "zeros" ? Bound::skip : Bound::clamp;
  a.dims[2].expr = iy;
  a.dims[2].bound = outside;
  a.dims[3].expr = ix;
  a.dims[3].bound = outside;
  int v = k.expr_load(a, f);
  k.body = k.expr_binary(Op::mul, k.expr_binary(Op::mul, wy, wx, f), v, f);
  k.reduce = Reduce::sum;
  k.acc_dtype = f;
  k.result = k.expr_unary(Op::acc, -1, f);
  k.store = access_store(y);
  k.store_dtype = f;
  k.flops = 3 * N * C * Ho * Wo * taps * taps;
}

// RoiAlign (average mode): each output bin of each region averages sampling_ratio^2 bilinear
// samples of X. One kernel over (roi, C, out_h, out_w | sample_y, sample_x, tap_y, tap_x); the
// region's corners and its image (batch_indices) are read in the kernel, so they may be run-time
// values. Sources: the ONNX operator specification (RoiAlign, opsets 10 and 16) and ONNX Runtime's
// CPU kernel (onnxruntime/core/providers/cpu/object_detection/roialign.cc) for the sampling: a
// sample outside [-1, size] reads zero, one in [-1, 0) reads at 0, one past size - 1 reads the last
// pixel; output_half_pixel (the opset 10 behaviour) makes a region at least 1x1 and does not shift
// it.
void lower_roi_align(Lowering &L, Node &n) {
  const Value *xv = n.input(0), *rv = n.input(1), *bv = n.input(2);
  if (xv->dtype != DType::f32 || rv->dtype != DType::f32) L.fail("X and rois must be float32");
  if (bv->dtype != DType::i64 && bv->dtype != DType::i32)
    L.fail("batch_indices must be int64 or int32");
  if (xv->shape.size() != 4) L.fail("X must have shape [N, C, H, W], got " + shape_str(xv->shape));
  if (rv->shape.size() != 2 || rv->shape[1] != 4)
    L.fail("rois must have shape [num_rois, 4], got " + shape_str(rv->shape));
  const int64_t R = rv->shape[0], C = xv->shape[1], H = xv->shape[2], W = xv->shape[3];
  if (bv->shape != Shape{R}) L.fail("batch_indices must have shape [" + std::to_string(R) + "]");
  std::string mode = n.attr_string("mode", "avg");
  if (mode != "avg") L.fail("mode '" + mode + "' is not supported (avg is)");
  const int64_t oh = n.attr_int("output_height", 1), ow = n.attr_int("output_width", 1),
                ratio = n.attr_int("sampling_ratio", 0);
  if (oh <= 0 || ow <= 0 || oh > 4096 || ow > 4096)
    L.fail("output_height and output_width must be between 1 and 4096");
  // With sampling_ratio 0 the count of samples depends on each region's size, known only at run
  // time.
  if (ratio <= 0 || ratio > 64)
    L.fail("sampling_ratio " + std::to_string(ratio) +
           " is not supported (1 to 64 are; 0, adaptive, would size the kernel from run-time "
           "regions)");
  std::string ctm = n.attr_string("coordinate_transformation_mode",
                                  L.graph.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    L.fail("coordinate_transformation_mode '" + ctm +
           "' is not one of half_pixel, output_half_pixel");
  const bool half_pixel = ctm == "half_pixel";
  const double scale = n.attr_float("spatial_scale", 1.0f);
  if (H == 0 || W == 0) L.fail("X has no pixels");
  Loc xl = L.loc(xv), rl = L.loc(rv), bl = L.loc(bv);
  Loc y = L.output_new(n.outputs[0], DType::f32, {R, C, oh, ow});
  if (R * C == 0) return;
  Kernel &k = L.kernel_new("roi_align");
  k.axes = {R, C, oh, ow, ratio, ratio, 2, 2};
  k.n_parallel = 4;
  const DType f = DType::f32;
  auto c = [&](double v) { return k.expr_const(v, f); };
  auto roi = [&](int j) {
    Access a = access_axes(rl, {0, -1});
    a.dims[1].shift = j;
    return k.expr_binary(Op::sub, k.expr_binary(Op::mul, k.expr_load(a, f), c(scale), f),
                         c(half_pixel ? 0.5 : 0), f);
  };
  // One dimension: out axis, sample axis, tap axis, roi start/end components, size. Gives the
  // tap's index and its weight (zero for a sample outside [-1, size]).
  auto dim = [&](int out_axis, int sample_axis, int tap_axis, int lo_j, int hi_j, int64_t size,
                 int64_t bins, int &index, int &weight) {
    int start = roi(lo_j), len = k.expr_binary(Op::sub, roi(hi_j), start, f);
    if (!half_pixel) len = k.expr_binary(Op::max, len, c(1), f);
    int bin = k.expr_binary(Op::div, len, c((double)bins), f);
    int p = k.expr_cast(k.expr_iota(out_axis, DType::i64), f),
        s = k.expr_cast(k.expr_iota(sample_axis, DType::i64), f);
    int off = k.expr_binary(
        Op::add, p,
        k.expr_binary(Op::div, k.expr_binary(Op::add, s, c(0.5), f), c((double)ratio), f), f);
    int v = k.expr_binary(Op::add, start, k.expr_binary(Op::mul, off, bin, f), f);
    int inside = k.expr_select(
        k.expr_binary(Op::lt, v, c(-1), DType::boolean), k.expr_const(0, DType::boolean),
        k.expr_binary(Op::le, v, c((double)size), DType::boolean), DType::boolean);
    v = k.expr_binary(Op::min, k.expr_binary(Op::max, v, c(0), f), c((double)(size - 1)), f);
    int low = k.expr_unary(Op::floor, v, f);
    int frac = k.expr_binary(Op::sub, v, low, f);
    int t = k.expr_iota(tap_axis, DType::i64);
    index = k.expr_binary(Op::add, k.expr_cast(low, DType::i64), t,
                          DType::i64);  // the high tap past the edge is clamped (weight 0)
    int w = k.expr_select(k.expr_binary(Op::eq, t, k.expr_const(0, DType::i64), DType::boolean),
                          k.expr_binary(Op::sub, c(1), frac, f), frac, f);
    weight = k.expr_select(inside, w, c(0), f);
  };
  int iy, wy, ix, wx;
  dim(2, 4, 6, 1, 3, H, oh, iy, wy);
  dim(3, 5, 7, 0, 2, W, ow, ix, wx);
  int batch = k.expr_cast(k.expr_load(access_axes(bl, {0}), bl.dtype), DType::i64);
  Access a = access_axes(xl, {-1, 1, -1, -1});
  a.dims[0].expr = batch;
  a.dims[0].bound = Bound::clamp;
  a.dims[2].expr = iy;
  a.dims[2].bound = Bound::clamp;
  a.dims[3].expr = ix;
  a.dims[3].bound = Bound::clamp;
  k.body = k.expr_binary(Op::mul, k.expr_binary(Op::mul, wy, wx, f), k.expr_load(a, f), f);
  k.reduce = Reduce::sum;
  k.acc_dtype = f;
  k.result =
      k.expr_binary(Op::mul, k.expr_unary(Op::acc, -1, f), c(1.0 / (double)(ratio * ratio)), f);
  k.store = access_store(y);
  k.store_dtype = f;
  k.flops = 3 * R * C * oh * ow * ratio * ratio * 4;
}

}  // namespace

void lower_register_grid_sample() {
  lower_table()["GridSample"] = lower_grid_sample;
  lower_table()["RoiAlign"] = lower_roi_align;
}

}  // namespace capgraph
