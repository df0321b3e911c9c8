// Neural-network ops: convolutions, pooling, matrix products and batch normalization.
// A convolution is a reduction over (input channels of its group, kernel window) for each output
// point; its iteration axes are (n, group, channel in group, output spatial... | input channel,
// kernel spatial...) so grouped and depthwise convolutions need no special case.
#include <cmath>
#include <functional>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

struct Window {
  int spatial = 0;  // S: number of spatial dims
  Shape kernel, strides, dilations, pad_begin, pad_end, out;
};

// Output size and padding for Conv/Pool attributes on input spatial dims `in`.
Window window_make(const Lowering &L, const Node &n, const Shape &in, const Shape &kernel,
                   bool ceil_mode) {
  Window w;
  w.spatial = (int)in.size();
  size_t S = in.size();
  w.kernel = kernel;
  w.strides = n.attr_ints("strides", Shape(S, 1));
  w.dilations = n.attr_ints("dilations", Shape(S, 1));
  Shape pads = n.attr_ints("pads", Shape(2 * S, 0));
  if (w.strides.size() != S || w.dilations.size() != S || pads.size() != 2 * S ||
      kernel.size() != S)
    L.fail("strides/dilations/pads/kernel_shape do not match " + std::to_string(S) +
           " spatial dimensions");
  // Bounded so that the window arithmetic below cannot overflow (each product stays under 2^62).
  constexpr int64_t kMaxWindow = int64_t(1) << 30;
  for (size_t i = 0; i < S; i++)
    if (w.strides[i] <= 0 || w.dilations[i] <= 0 || kernel[i] <= 0)
      L.fail("strides, dilations and kernel sizes must be positive");
  for (size_t i = 0; i < S; i++)
    if (w.strides[i] > kMaxWindow || w.dilations[i] > kMaxWindow || kernel[i] > kMaxWindow)
      L.fail("strides, dilations and kernel sizes must be at most 2^30");
  for (int64_t p : pads)
    if (p < 0 || p > kMaxWindow)
      L.fail("pads must be between 0 and 2^30, got " + std::to_string(p));
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  w.pad_begin.assign(pads.begin(), pads.begin() + S);
  w.pad_end.assign(pads.begin() + S, pads.end());
  for (size_t i = 0; i < S; i++) {
    int64_t span = (kernel[i] - 1) * w.dilations[i] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = (in[i] + w.strides[i] - 1) / w.strides[i];
      int64_t total = std::max<int64_t>(0, (o - 1) * w.strides[i] + span - in[i]);
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
    } else if (auto_pad == "VALID") {
      w.pad_begin[i] = w.pad_end[i] = 0;
    } else if (auto_pad != "NOTSET") {
      L.fail("auto_pad '" + auto_pad + "' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID");
    }
    int64_t room = in[i] + w.pad_begin[i] + w.pad_end[i] - span;
    if (room < 0) L.fail("the window is larger than the padded input");
    int64_t o = ceil_mode ? (room + w.strides[i] - 1) / w.strides[i] + 1 : room / w.strides[i] + 1;
    // ceil_mode: a last window starting inside the end padding is dropped (as ONNX Runtime does).
    if (ceil_mode && (o - 1) * w.strides[i] >= in[i] + w.pad_begin[i]) o--;
    w.out.push_back(o);
  }
  return w;
}

// The input spatial index o*stride + k*dilation - pad, with the bound the range needs.
DimIndex window_dim(const Window &w, size_t i, int out_axis, int k_axis, const Loc &x,
                    size_t xdim) {
  DimIndex d;
  d.extent = x.shape[xdim];
  d.stride = x.strides[xdim];
  if (w.out[i] > 1) d.terms.push_back({out_axis, w.strides[i]});
  if (w.kernel[i] > 1) d.terms.push_back({k_axis, w.dilations[i]});
  d.shift = -w.pad_begin[i];
  int64_t lo = d.shift,
          hi = (w.out[i] - 1) * w.strides[i] + (w.kernel[i] - 1) * w.dilations[i] + d.shift;
  d.bound = lo < 0 || hi >= d.extent ? Bound::skip : Bound::none;
  return d;
}

DimIndex dim_terms(std::vector<AxisTerm> terms, const Loc &l, size_t dim) {
  DimIndex d;
  d.extent = l.shape[dim];
  d.stride = l.strides[dim];
  for (const AxisTerm &t : terms)
    if (t.coef != 0) d.terms.push_back(t);
  return d;
}

// Integer operands (ConvInteger, QLinearConv, MatMulInteger, QLinearMatMul): each uint8/int8
// element is read as int32 minus its zero point, and the products are summed in int32 (exact: the
// float path would round past 2^24). `finish` turns the int32 sum into the stored value; it gets
// a function that reads a per-output-channel (Conv: M, MatMul: column) tensor of the kernel.
struct IntegerOperands {
  const Value *a_zp = nullptr, *b_zp = nullptr;  // X/A and W/B zero points (optional)
  DType out = DType::i32;
  std::function<int(Kernel &, int acc, const std::function<int(const Value *)> &per_channel)>
      finish;
};

// A zero point or scale of one element, or one per output channel (`channel`: how the channel
// dimension is indexed), read in the kernel; fails on any other shape.
int integer_param_load(Lowering &L, Kernel &k, const Value *v, const char *what, int64_t channels,
                       const DimIndex &channel, DType t) {
  Loc l = L.loc(v);
  int64_t count = shape_numel(l.shape);
  if (count == 1) {
    std::vector<int> none(l.shape.size(), -1);
    return k.expr_cast(k.expr_load(access_axes(l, none), l.dtype), t);
  }
  if (l.shape != Shape{channels})
    L.fail(std::string(what) + " has shape " + shape_str(l.shape) + ", expected one value or " +
           std::to_string(channels));
  Access a;
  a.buffer = l.buffer;
  a.offset = l.offset;
  DimIndex d = channel;
  d.extent = l.shape[0];
  d.stride = l.strides[0];
  a.dims.push_back(d);
  return k.expr_cast(k.expr_load(a, l.dtype), t);
}

// x (an access of a uint8/int8 tensor) as int32 minus its zero point (per tensor, or per channel).
int integer_operand(Lowering &L, Kernel &k, const Access &a, DType t, const Value *zp,
                    const char *what, int64_t channels, const DimIndex &channel) {
  int v = k.expr_cast(k.expr_load(a, t), DType::i32);
  if (!zp) return v;
  if (zp->dtype != t) L.fail(std::string(what) + " must have the element type of its operand");
  return k.expr_binary(
      Op::sub, v, integer_param_load(L, k, zp, what, channels, channel, DType::i32), DType::i32);
}

// Float types kept in memory as declared and computed in float32 (float16: the code generators
// widen on load and round to nearest even on store).
bool float_storage(DType t) { return t == DType::f32 || t == DType::f16; }

// The store of a (transposed) convolution over axes (n, g, ocg, o_1..o_S | ...): y[n, g*OCG + ocg,
// o...].
Access conv_store(const Loc &y, int64_t OCG, size_t S) {
  const int ax_n = 0, ax_g = 1, ax_ocg = 2, ax_o = 3;
  Access ya;
  ya.buffer = y.buffer;
  ya.dims.push_back(dim_terms({{ax_n, 1}}, y, 0));
  ya.dims.push_back(dim_terms({{ax_g, OCG}, {ax_ocg, 1}}, y, 1));
  for (size_t i = 0; i < S; i++) ya.dims.push_back(dim_terms({{ax_o + (int)i, 1}}, y, 2 + i));
  return ya;
}

// The end of a (transposed) convolution over axes (n, g, ocg, o_1..o_S | ...): the sum plus the
// optional per-output-channel bias, stored to y[n, g*OCG + ocg, o...].
void conv_epilogue(Lowering &L, Kernel &k, const Value *bv, const Loc &y, int64_t OC, int64_t OCG,
                   size_t S) {
  const int ax_g = 1, ax_ocg = 2;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  if (bv) {
    Loc b = L.loc(bv);
    if (b.shape != Shape{OC})
      L.fail("bias B has shape " + shape_str(b.shape) + ", expected " + std::to_string(OC));
    Access ba;
    ba.buffer = b.buffer;
    ba.offset = b.offset;
    ba.dims.push_back(dim_terms({{ax_g, OCG}, {ax_ocg, 1}}, b, 0));
    k.result = k.expr_binary(Op::add, k.result, k.expr_load(ba, DType::f32), DType::f32);
  }
  k.store = conv_store(y, OCG, S);
  k.store_dtype =
      y.dtype;  // float16 storage: computed in float32, rounded to nearest even on store
}

void lower_conv(Lowering &L, Node &n, const Value *xv, const Value *wv, const Value *bv,
                const IntegerOperands *q) {
  if (!xv || !wv) L.fail("needs inputs X and W");
  auto int8 = [](DType t) { return t == DType::u8 || t == DType::i8; };
  if (q ? !int8(xv->dtype) || !int8(wv->dtype)
        : !float_storage(xv->dtype) || wv->dtype != xv->dtype)
    L.fail(q ? "X and W must be uint8 or int8"
             : "only float32 or float16 convolutions (X and W of one type) are supported");
  Loc x = L.loc(xv), w = L.loc(wv);
  size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank)
    L.fail("expects X of rank >= 3 and W of the same rank, got " + shape_str(x.shape) + " and " +
           shape_str(w.shape));
  int64_t N = x.shape[0], C = x.shape[1], OC = w.shape[0], G = n.attr_int("group", 1);
  if (G <= 0 || C % G != 0 || OC % G != 0)
    L.fail("group " + std::to_string(G) + " does not divide channels");
  int64_t ICG = C / G, OCG = OC / G;
  if (w.shape[1] != ICG)
    L.fail("W has " + std::to_string(w.shape[1]) + " input channels per group, X gives " +
           std::to_string(ICG));
  Shape in_sp(x.shape.begin() + 2, x.shape.end()), k_sp(w.shape.begin() + 2, w.shape.end());
  Shape ks = n.attr_ints("kernel_shape", k_sp);
  if (ks != k_sp) L.fail("kernel_shape disagrees with W's shape");
  Window win = window_make(L, n, in_sp, k_sp, false);
  size_t S = in_sp.size();

  Shape out_shape = {N, OC};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
  Loc y = L.output_new(n.outputs[0], q ? q->out : xv->dtype, out_shape);

  std::string name = q ? "conv_int" : "conv";
  for (size_t i = 0; i < S; i++) name += (i ? "x" : "") + std::to_string(k_sp[i]);
  if (win.strides[0] > 1) name += "_s" + std::to_string(win.strides[0]);
  if (G > 1) name += G == C && OCG == 1 ? "_dw" : "_g" + std::to_string(G);
  Kernel &k = L.kernel_new(name);
  // axes: n, g, ocg, o_1..o_S | icg, k_1..k_S
  int ax_n = 0, ax_g = 1, ax_ocg = 2, ax_o = 3, ax_icg = 3 + (int)S, ax_k = 4 + (int)S;
  k.axes = {N, G, OCG};
  k.axes.insert(k.axes.end(), win.out.begin(), win.out.end());
  k.axes.push_back(ICG);
  k.axes.insert(k.axes.end(), k_sp.begin(), k_sp.end());
  k.n_parallel = 3 + (int)S;

  Access xa;
  xa.buffer = x.buffer;
  xa.offset = x.offset;
  xa.dims.push_back(dim_terms({{ax_n, 1}}, x, 0));
  xa.dims.push_back(dim_terms({{ax_g, ICG}, {ax_icg, 1}}, x, 1));
  for (size_t i = 0; i < S; i++)
    xa.dims.push_back(window_dim(win, i, ax_o + (int)i, ax_k + (int)i, x, 2 + i));
  Access wa;
  wa.buffer = w.buffer;
  wa.offset = w.offset;
  wa.dims.push_back(dim_terms({{ax_g, OCG}, {ax_ocg, 1}}, w, 0));
  wa.dims.push_back(dim_terms({{ax_icg, 1}}, w, 1));
  for (size_t i = 0; i < S; i++) wa.dims.push_back(dim_terms({{ax_k + (int)i, 1}}, w, 2 + i));
  if (q) {
    // Padding reads nothing (a skipped point), which equals the zero point minus itself.
    DimIndex oc = dim_terms({{ax_g, OCG}, {ax_ocg, 1}}, y, 1);
    int xe = integer_operand(L, k, xa, xv->dtype, q->a_zp, "x_zero_point", 1, oc);
    int we = integer_operand(L, k, wa, wv->dtype, q->b_zp, "w_zero_point", OC, oc);
    k.body = k.expr_binary(Op::mul, xe, we, DType::i32);
    k.reduce = Reduce::sum;
    k.acc_dtype = DType::i32;
    k.store = conv_store(y, OCG, S);
    auto per_channel = [&](const Value *v) {
      return integer_param_load(L, k, v, v->name.c_str(), OC, oc, DType::f32);
    };
    k.result = q->finish(k, k.expr_unary(Op::acc, -1, DType::i32), per_channel);
    k.store_dtype = q->out;
    k.flops = 2 * shape_numel(out_shape) * ICG * shape_numel(k_sp);
    return;
  }
  int xe = k.expr_load(xa, DType::f32), we = k.expr_load(wa, DType::f32);
  k.body = k.expr_binary(Op::mul, xe, we, DType::f32);
  k.reduce = Reduce::sum;
  conv_epilogue(L, k, bv, y, OC, OCG, S);
  k.flops = 2 * shape_numel(out_shape) * ICG * shape_numel(k_sp);
}

// A transposed convolution whose kernel equals its stride (no padding, no dilation): output
// o = i * stride + k for exactly one (i, k), so the kernel iterates (i, k) per spatial dim and
// reduces over input channels only: y[n, oc, i*s + k] = sum(ic) x[n, ic, i] * w[ic, oc, k].
// No gather, no skipped points (the general form below wastes (stride^S - 1) / stride^S of them).
void conv_transpose_exact(Lowering &L, Node &n, const Loc &x, const Loc &w, const Value *bv,
                          const Loc &y, const Shape &out_shape, const Shape &k_sp) {
  size_t S = k_sp.size();
  int64_t N = x.shape[0], C = x.shape[1], G = n.attr_int("group", 1), ICG = C / G, OCG = w.shape[1];
  Kernel &k = L.kernel_new("conv_transpose_s" + std::to_string(k_sp[0]));
  // axes: n, g, ocg, (i_1, k_1), ..., (i_S, k_S) | icg
  const int ax_n = 0, ax_g = 1, ax_ocg = 2, ax_icg = 3 + 2 * (int)S;
  k.axes = {N, G, OCG};
  for (size_t i = 0; i < S; i++) k.axes.insert(k.axes.end(), {x.shape[2 + i], k_sp[i]});
  k.axes.push_back(ICG);
  k.n_parallel = 3 + 2 * (int)S;
  Access xa;
  xa.buffer = x.buffer;
  xa.offset = x.offset;
  xa.dims.push_back(dim_terms({{ax_n, 1}}, x, 0));
  xa.dims.push_back(dim_terms({{ax_g, ICG}, {ax_icg, 1}}, x, 1));
  for (size_t i = 0; i < S; i++) xa.dims.push_back(dim_terms({{3 + 2 * (int)i, 1}}, x, 2 + i));
  Access wa;
  wa.buffer = w.buffer;
  wa.offset = w.offset;
  wa.dims.push_back(dim_terms({{ax_g, ICG}, {ax_icg, 1}}, w, 0));
  wa.dims.push_back(dim_terms({{ax_ocg, 1}}, w, 1));
  for (size_t i = 0; i < S; i++) wa.dims.push_back(dim_terms({{4 + 2 * (int)i, 1}}, w, 2 + i));
  k.body =
      k.expr_binary(Op::mul, k.expr_load(xa, DType::f32), k.expr_load(wa, DType::f32), DType::f32);
  k.reduce = Reduce::sum;
  conv_epilogue(L, k, bv, y, OCG * G, OCG, S);
  for (size_t i = 0; i < S; i++)
    k.store.dims[2 + i] = dim_terms({{3 + 2 * (int)i, k_sp[i]}, {4 + 2 * (int)i, 1}}, y, 2 + i);
  k.flops = 2 * shape_numel(out_shape) * ICG;
}

// y[n, oc, o] = sum over (ic in group, k) of x[n, ic, i] * w[ic, oc, k] where o = i*stride + k*dil
// - pad. Read as a gather: i = (o + pad - k*dil) / stride, only where that divides exactly.
void lower_conv_transpose(Lowering &L, Node &n) {
  const Value *xv = n.input(0), *wv = n.input(1), *bv = n.input(2);
  if (!xv || !wv) L.fail("needs inputs X and W");
  if (!float_storage(xv->dtype) || wv->dtype != xv->dtype)
    L.fail("only float32 or float16 (X and W of one type) is supported");
  Loc x = L.loc(xv), w = L.loc(wv);
  size_t rank = x.shape.size();
  if (rank < 3 || w.shape.size() != rank) L.fail("expects X and W of the same rank >= 3");
  size_t S = rank - 2;
  int64_t N = x.shape[0], C = x.shape[1], G = n.attr_int("group", 1);
  if (G <= 0 || C % G != 0 || w.shape[0] != C)
    L.fail("W's first dimension must equal X's channels, divisible by group");
  int64_t ICG = C / G, OCG = w.shape[1], OC = OCG * G;
  Shape k_sp(w.shape.begin() + 2, w.shape.end());
  Shape strides = n.attr_ints("strides", Shape(S, 1)), dil = n.attr_ints("dilations", Shape(S, 1));
  Shape pads = n.attr_ints("pads", Shape(2 * S, 0)),
        out_pad = n.attr_ints("output_padding", Shape(S, 0));
  Shape out_given = n.attr_ints("output_shape", {});
  std::string auto_pad = n.attr_string("auto_pad", "NOTSET");
  if (strides.size() != S || dil.size() != S || pads.size() != 2 * S || out_pad.size() != S)
    L.fail("attribute sizes do not match the spatial rank");
  // Bounded so that the output size arithmetic below cannot overflow.
  constexpr int64_t kMaxWindow = int64_t(1) << 30;
  if (G > kMaxWindow || OCG > kMaxWindow) L.fail("group and output channels must be at most 2^30");
  for (size_t i = 0; i < S; i++)
    if (strides[i] <= 0 || dil[i] <= 0 || strides[i] > kMaxWindow || dil[i] > kMaxWindow ||
        out_pad[i] < 0 || out_pad[i] > kMaxWindow || k_sp[i] > kMaxWindow ||
        x.shape[2 + i] > kMaxWindow)
      L.fail(
          "strides and dilations must be between 1 and 2^30, output_padding between 0 and 2^30, "
          "spatial sizes at most 2^30");
  for (int64_t p : pads)
    if (p < 0 || p > kMaxWindow)
      L.fail("pads must be between 0 and 2^30, got " + std::to_string(p));
  for (int64_t o : out_given)
    if (o < 0 || o > kMaxWindow)
      L.fail("output_shape must be between 0 and 2^30, got " + std::to_string(o));
  if (!out_given.empty() && out_given.size() < S)
    L.fail("output_shape has fewer entries than spatial dimensions");
  Shape out_sp(S);
  for (size_t i = 0; i < S; i++) {
    int64_t in = x.shape[2 + i];
    int64_t full = strides[i] * (in - 1) + out_pad[i] + (k_sp[i] - 1) * dil[i] + 1;
    if (!out_given.empty() || auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      int64_t o = out_given.empty() ? in * strides[i] : out_given[out_given.size() - S + i];
      int64_t total = full - o;
      if (total < 0) {
        // The output is larger than the full transposed convolution: the extra rows are implicit
        // output padding at the end (nothing reads an input there: only the bias). Clamping the
        // total at 0 silently gave the full size instead (test_convtranspose_output_shape:
        // 1x2x9x7 for output_shape 10x8). Sources: ONNX ConvTranspose spec (output_shape,
        // output_padding); the node test's reference output.
        pads[i] = 0;
        pads[S + i] = total;
      } else {
        pads[i] = auto_pad == "SAME_LOWER" ? total - total / 2 : total / 2;
        pads[S + i] = total - pads[i];
        if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER" && out_given.size()) {
          pads[i] = total - total / 2;  // output_shape given, NOTSET: the odd pad goes at the start
                                        // (ONNX spec; ONNX Runtime agrees)
          pads[S + i] = total - pads[i];
        }
      }
    }
    out_sp[i] = full - pads[i] - pads[S + i];
    if (out_sp[i] <= 0) L.fail("output size is not positive");
  }
  Shape out_shape = {N, OC};
  out_shape.insert(out_shape.end(), out_sp.begin(), out_sp.end());
  Loc y = L.output_new(n.outputs[0], xv->dtype, out_shape);

  bool exact = true;  // kernel == stride, no padding: every output reads exactly one input pixel
  for (size_t i = 0; i < S; i++)
    exact = exact && k_sp[i] == strides[i] && dil[i] == 1 && pads[i] == 0 && pads[S + i] == 0 &&
            out_sp[i] == x.shape[2 + i] * strides[i];
  if (exact) return conv_transpose_exact(L, n, x, w, bv, y, out_shape, k_sp);

  Kernel &k = L.kernel_new("conv_transpose");
  int ax_n = 0, ax_g = 1, ax_ocg = 2, ax_o = 3, ax_icg = 3 + (int)S, ax_k = 4 + (int)S;
  k.axes = {N, G, OCG};
  k.axes.insert(k.axes.end(), out_sp.begin(), out_sp.end());
  k.axes.push_back(ICG);
  k.axes.insert(k.axes.end(), k_sp.begin(), k_sp.end());
  k.n_parallel = 3 + (int)S;
  Access xa;
  xa.buffer = x.buffer;
  xa.offset = x.offset;
  xa.dims.push_back(dim_terms({{ax_n, 1}}, x, 0));
  xa.dims.push_back(dim_terms({{ax_g, ICG}, {ax_icg, 1}}, x, 1));
  for (size_t i = 0; i < S; i++) {
    DimIndex d = dim_terms({{ax_o + (int)i, 1}, {ax_k + (int)i, -dil[i]}}, x, 2 + i);
    d.shift = pads[i];
    d.divisor = strides[i];
    d.bound = Bound::skip;
    xa.dims.push_back(d);
  }
  Access wa;
  wa.buffer = w.buffer;
  wa.offset = w.offset;
  wa.dims.push_back(dim_terms({{ax_g, ICG}, {ax_icg, 1}}, w, 0));
  wa.dims.push_back(dim_terms({{ax_ocg, 1}}, w, 1));
  for (size_t i = 0; i < S; i++) wa.dims.push_back(dim_terms({{ax_k + (int)i, 1}}, w, 2 + i));
  k.body =
      k.expr_binary(Op::mul, k.expr_load(xa, DType::f32), k.expr_load(wa, DType::f32), DType::f32);
  k.reduce = Reduce::sum;
  conv_epilogue(L, k, bv, y, OC, OCG, S);
  k.flops = 2 * shape_numel(x.shape) * OCG * shape_numel(k_sp);
}

void lower_pool(Lowering &L, Node &n, bool is_max) {
  const Value *xv = n.input(0);
  if (!float_storage(xv->dtype)) L.fail("only float32 and float16 are supported");
  if (n.outputs.size() > 1 && !n.outputs[1]->name.empty())
    L.fail("the Indices output is not supported");
  Loc x = L.loc(xv);
  if (x.shape.size() < 3) L.fail("expects an input of rank >= 3");
  Shape in_sp(x.shape.begin() + 2, x.shape.end());
  size_t S = in_sp.size();
  Shape ks = n.attr_ints("kernel_shape");
  if (ks.size() != S) L.fail("kernel_shape must have " + std::to_string(S) + " entries");
  Window win = window_make(L, n, in_sp, ks, n.attr_int("ceil_mode", 0) != 0);
  Shape out_shape = {x.shape[0], x.shape[1]};
  out_shape.insert(out_shape.end(), win.out.begin(), win.out.end());
  Loc y = L.output_new(n.outputs[0], xv->dtype, out_shape);
  std::string name = is_max ? "maxpool" : "avgpool";
  for (size_t i = 0; i < S; i++) name += (i ? "x" : "") + std::to_string(ks[i]);
  Kernel &k = L.kernel_new(name);
  int ax_o = 2, ax_k = 2 + (int)S;
  k.axes = {x.shape[0], x.shape[1]};
  k.axes.insert(k.axes.end(), win.out.begin(), win.out.end());
  k.axes.insert(k.axes.end(), ks.begin(), ks.end());
  k.n_parallel = 2 + (int)S;
  Access xa;
  xa.buffer = x.buffer;
  xa.offset = x.offset;
  xa.dims.push_back(dim_terms({{0, 1}}, x, 0));
  xa.dims.push_back(dim_terms({{1, 1}}, x, 1));
  for (size_t i = 0; i < S; i++)
    xa.dims.push_back(window_dim(win, i, ax_o + (int)i, ax_k + (int)i, x, 2 + i));
  k.body = k.expr_load(xa, DType::f32);
  k.reduce = is_max ? Reduce::max : Reduce::sum;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  if (!is_max) {
    // The divisor of each output position, counted at compile time (a constant table, or a
    // single number when every window has the same count).
    bool include_pad = n.attr_int("count_include_pad", 0) != 0;
    std::vector<std::vector<int64_t>> counts(S);
    for (size_t i = 0; i < S; i++)
      for (int64_t o = 0; o < win.out[i]; o++) {
        int64_t c = 0;
        for (int64_t kk = 0; kk < ks[i]; kk++) {
          int64_t idx = o * win.strides[i] + kk * win.dilations[i] - win.pad_begin[i];
          int64_t lo = include_pad ? -win.pad_begin[i] : 0,
                  hi = include_pad ? in_sp[i] + win.pad_end[i] : in_sp[i];
          c += idx >= lo && idx < hi;
        }
        counts[i].push_back(c);
      }
    std::vector<float> inv(shape_numel(win.out));
    for (int64_t p = 0; p < (int64_t)inv.size(); p++) {
      int64_t rem = p, c = 1;
      for (size_t i = S; i-- > 0;) {
        c *= counts[i][rem % win.out[i]];
        rem /= win.out[i];
      }
      inv[p] = c ? 1.0f / (float)c : 0.0f;
    }
    Tensor t = Tensor::from_f32(win.out, inv);
    int d;
    if (t.all_equal()) {
      d = k.expr_const(inv[0], DType::f32);
    } else {
      Loc tl = L.constant_new(t, n.name + "_avgpool_divisors");
      std::vector<int> axis_of;
      for (size_t i = 0; i < S; i++) axis_of.push_back(ax_o + (int)i);
      d = k.expr_load(access_axes(tl, axis_of), DType::f32);
    }
    k.result = k.expr_binary(Op::mul, k.result, d, DType::f32);
  }
  k.store = access_store(y);
  k.store_dtype = y.dtype;
  k.flops = shape_numel(out_shape) * shape_numel(ks);
}

void lower_global_pool(Lowering &L, Node &n, bool is_max) {
  const Value *xv = n.input(0);
  if (!float_storage(xv->dtype)) L.fail("only float32 and float16 are supported");
  Loc x = L.loc(xv);
  if (x.shape.size() < 3) L.fail("expects an input of rank >= 3");
  Shape out_shape = {x.shape[0], x.shape[1]};
  for (size_t i = 2; i < x.shape.size(); i++) out_shape.push_back(1);
  Loc y = L.output_new(n.outputs[0], xv->dtype, out_shape);
  Kernel &k = L.kernel_new(is_max ? "global_maxpool" : "global_avgpool");
  k.axes = x.shape;
  k.n_parallel = 2;
  k.body = k.expr_load(access_broadcast(x, (int)x.shape.size()), DType::f32);
  k.reduce = is_max ? Reduce::max : Reduce::sum;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  int64_t count = shape_numel(Shape(x.shape.begin() + 2, x.shape.end()));
  if (!is_max)
    k.result = k.expr_binary(Op::mul, k.result, k.expr_const(1.0 / count, DType::f32), DType::f32);
  Access ya;
  ya.buffer = y.buffer;
  ya.dims.push_back(dim_terms({{0, 1}}, y, 0));
  ya.dims.push_back(dim_terms({{1, 1}}, y, 1));
  for (size_t i = 2; i < out_shape.size(); i++) ya.dims.push_back(dim_terms({}, y, i));
  k.store = ya;
  k.store_dtype = y.dtype;
  k.flops = shape_numel(x.shape);
}

// out[batch.., m, n] = sum_k a[.., m, k] * b[.., k, n], batch dims broadcast.
// a_m_axis etc. describe how A and B are indexed so Gemm's transposes need no copy.
void lower_matmul(Lowering &L, Node &n, const Value *av, const Value *bv,
                  const IntegerOperands *q) {
  if (!av || !bv) L.fail("needs two inputs");
  auto int8 = [](DType t) { return t == DType::u8 || t == DType::i8; };
  if (q ? !int8(av->dtype) || !int8(bv->dtype)
        : !dtype_is_float(av->dtype) || av->dtype != bv->dtype)
    L.fail(q ? "A and B must be uint8 or int8" : "only float inputs of one type are supported");
  Loc a = L.loc(av), b = L.loc(bv);
  bool a_vec = a.shape.size() == 1, b_vec = b.shape.size() == 1;
  if (a.shape.empty() || b.shape.empty()) L.fail("inputs must have rank >= 1");
  // Promote 1-D operands as numpy does, then drop the added dims from the output.
  if (a_vec) {
    a.shape.insert(a.shape.begin(), 1);
    a.strides.insert(a.strides.begin(), 0);
  }
  if (b_vec) {
    b.shape.push_back(1);
    b.strides.push_back(0);
  }
  int64_t M = a.shape[a.shape.size() - 2], K = a.shape.back(), N = b.shape.back();
  if (b.shape[b.shape.size() - 2] != K)
    L.fail("inner dimensions differ: " + shape_str(av->shape) + " x " + shape_str(bv->shape));
  Shape ab(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2), batch;
  if (!shape_broadcast(ab, bb, batch))
    L.fail("batch dimensions do not broadcast: " + shape_str(av->shape) + " x " +
           shape_str(bv->shape));
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(M);
  if (!b_vec) out_shape.push_back(N);
  Loc y = L.output_new(n.outputs[0], q ? q->out : av->dtype, out_shape);
  Kernel &k = L.kernel_new(q ? "matmul_int" : "matmul");
  int B = (int)batch.size(), ax_m = B, ax_n = B + 1, ax_k = B + 2;
  k.axes = batch;
  k.axes.insert(k.axes.end(), {M, N, K});
  k.n_parallel = B + 2;
  auto operand = [&](const Loc &l, int row_axis, int col_axis) {
    Access acc;
    acc.buffer = l.buffer;
    acc.offset = l.offset;
    int r = (int)l.shape.size();
    for (int d = 0; d < r - 2; d++) {
      DimIndex di = dim_terms({}, l, d);
      if (l.shape[d] != 1) di.terms.push_back({B - (r - 2) + d, 1});
      acc.dims.push_back(di);
    }
    acc.dims.push_back(dim_terms({{row_axis, l.shape[r - 2] == 1 ? 0 : 1}}, l, r - 2));
    acc.dims.push_back(dim_terms({{col_axis, l.shape[r - 1] == 1 ? 0 : 1}}, l, r - 1));
    return acc;
  };
  DType t = av->dtype;
  if (q) {
    // Zero points per tensor, or per row of A (M) and per column of B (N).
    DimIndex row, col;
    row.terms.push_back({ax_m, 1});
    col.terms.push_back({ax_n, 1});
    int ae =
        integer_operand(L, k, operand(a, ax_m, ax_k), av->dtype, q->a_zp, "a_zero_point", M, row);
    int be =
        integer_operand(L, k, operand(b, ax_k, ax_n), bv->dtype, q->b_zp, "b_zero_point", N, col);
    k.body = k.expr_binary(Op::mul, ae, be, DType::i32);
    k.reduce = Reduce::sum;
    k.acc_dtype = DType::i32;
    auto per_channel = [&](const Value *v) {
      return integer_param_load(L, k, v, v->name.c_str(), N, col, DType::f32);
    };
    k.result = q->finish(k, k.expr_unary(Op::acc, -1, DType::i32), per_channel);
    t = q->out;
  } else {
    k.body = k.expr_binary(Op::mul, k.expr_load(operand(a, ax_m, ax_k), t),
                           k.expr_load(operand(b, ax_k, ax_n), t), t);
    k.reduce = Reduce::sum;
    k.acc_dtype = t;
    k.result = k.expr_unary(Op::acc, -1, t);
  }
  Access ya;
  ya.buffer = y.buffer;
  std::vector<int> out_axes;
  for (int d = 0; d < B; d++) out_axes.push_back(d);
  if (!a_vec) out_axes.push_back(ax_m);
  if (!b_vec) out_axes.push_back(ax_n);
  k.store = access_axes(y, out_axes);
  k.store_dtype = t;
  k.flops = 2 * shape_numel(batch) * M * N * K;
}

void lower_gemm(Lowering &L, Node &n) {
  const Value *av = n.input(0), *bv = n.input(1), *cv = n.input(2);
  if (!av || !bv) L.fail("needs inputs A and B");
  if (!float_storage(av->dtype) || bv->dtype != av->dtype)
    L.fail("only float32 or float16 (A and B of one type) is supported");
  Loc a = L.loc(av), b = L.loc(bv);
  if (a.shape.size() != 2 || b.shape.size() != 2) L.fail("A and B must be matrices");
  bool ta = n.attr_int("transA", 0), tb = n.attr_int("transB", 0);
  double alpha = n.attr_float("alpha", 1.0f), beta = n.attr_float("beta", 1.0f);
  int64_t M = ta ? a.shape[1] : a.shape[0], K = ta ? a.shape[0] : a.shape[1];
  int64_t KB = tb ? b.shape[1] : b.shape[0], N = tb ? b.shape[0] : b.shape[1];
  if (K != KB)
    L.fail("inner dimensions differ: A " + shape_str(a.shape) + " B " + shape_str(b.shape));
  Loc y = L.output_new(n.outputs[0], av->dtype, {M, N});
  Kernel &k = L.kernel_new("gemm");
  k.axes = {M, N, K};
  k.n_parallel = 2;
  Access aa = access_axes(a, ta ? std::vector<int>{2, 0} : std::vector<int>{0, 2});
  Access ba = access_axes(b, tb ? std::vector<int>{1, 2} : std::vector<int>{2, 1});
  k.body =
      k.expr_binary(Op::mul, k.expr_load(aa, DType::f32), k.expr_load(ba, DType::f32), DType::f32);
  k.reduce = Reduce::sum;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  if (alpha != 1)
    k.result = k.expr_binary(Op::mul, k.result, k.expr_const(alpha, DType::f32), DType::f32);
  if (cv && beta != 0) {
    Loc c = L.loc(cv);
    Shape s;
    if (!shape_broadcast(c.shape, {M, N}, s) || s != Shape{M, N})
      L.fail("C of shape " + shape_str(c.shape) + " does not broadcast to " + shape_str({M, N}));
    int ce = k.expr_load(access_broadcast(c, 2), DType::f32);
    if (beta != 1) ce = k.expr_binary(Op::mul, ce, k.expr_const(beta, DType::f32), DType::f32);
    k.result = k.expr_binary(Op::add, k.result, ce, DType::f32);
  }
  k.store = access_store(y);
  k.store_dtype = y.dtype;
  k.flops = 2 * M * N * K;
}

// Inference BatchNormalization: y = x * a[c] + b[c], with a and b computed at compile time.
void lower_batchnorm(Lowering &L, Node &n) {
  const Value *xv = n.input(0);
  if (n.attr_int("training_mode", 0)) L.fail("training_mode is not supported");
  if (!float_storage(xv->dtype)) L.fail("only float32 and float16 are supported");
  std::vector<float> scale = L.const_input(1, "scale").to_f32(),
                     bias = L.const_input(2, "B").to_f32();
  std::vector<float> mean = L.const_input(3, "input_mean").to_f32(),
                     var = L.const_input(4, "input_var").to_f32();
  double eps = n.attr_float("epsilon", 1e-5f);
  Loc x = L.loc(xv);
  if (x.shape.size() < 2) L.fail("expects an input of rank >= 2");
  int64_t C = x.shape[1];
  if ((int64_t)scale.size() != C || (int64_t)bias.size() != C || (int64_t)mean.size() != C ||
      (int64_t)var.size() != C)
    L.fail("scale/B/mean/var must have " + std::to_string(C) + " elements");
  std::vector<float> a(C), b(C);
  for (int64_t c = 0; c < C; c++) {
    a[c] = (float)(scale[c] / std::sqrt((double)var[c] + eps));
    b[c] = (float)(bias[c] - mean[c] * (double)a[c]);
  }
  Shape cshape = {C};
  for (size_t i = 2; i < x.shape.size(); i++) cshape.push_back(1);
  Loc al = L.constant_new(Tensor::from_f32(cshape, a), n.name + "_scale"),
      bl = L.constant_new(Tensor::from_f32(cshape, b), n.name + "_shift");
  Loc y = L.output_new(n.outputs[0], xv->dtype, x.shape);
  Kernel &k = L.kernel_new("batchnorm");
  int r = (int)x.shape.size();
  k.axes = x.shape;
  k.n_parallel = r;
  int xe = k.expr_load(access_broadcast(x, r), DType::f32);
  int ae = k.expr_load(access_broadcast(al, r), DType::f32),
      be = k.expr_load(access_broadcast(bl, r), DType::f32);
  k.result = k.expr_binary(Op::add, k.expr_binary(Op::mul, xe, ae, DType::f32), be, DType::f32);
  k.store = access_store(y);
  k.store_dtype = y.dtype;
  k.flops = 2 * shape_numel(x.shape);
}

}  // namespace

// LRN: y = x / (bias + alpha / size * sum of x^2 over the channels [c - (size-1)/2, c +
// size/2])^beta (ONNX spec: floor and ceil of (size-1)/2). One kernel: the window of channels is a
// reduction axis whose reads outside [0, C) are skipped.
void lower_lrn(Lowering &L, Node &n) {
  const Value *xv = n.input(0);
  if (xv->dtype != DType::f32) L.fail("only float32 is supported");
  Loc x = L.loc(xv);
  size_t r = x.shape.size();
  if (r < 3) L.fail("expects an input of rank >= 3");
  int64_t size = n.attr_int("size", 0);
  if (size < 1 || size > (int64_t(1) << 20))
    L.fail("size must be between 1 and 2^20, got " + std::to_string(size));
  double alpha = n.attr_float("alpha", 1e-4f), beta = n.attr_float("beta", 0.75f),
         bias = n.attr_float("bias", 1.0f);
  Loc y = L.output_new(n.outputs[0], DType::f32, x.shape);
  if (shape_numel(x.shape) == 0) return;
  Kernel &k = L.kernel_new("lrn" + std::to_string(size));
  k.axes = x.shape;
  k.axes.push_back(size);
  k.n_parallel = (int)r;
  Access wa = access_broadcast(x, (int)r);
  DimIndex &cd = wa.dims[1];
  cd.terms = {{1, 1}, {(int)r, 1}};
  cd.shift = -((size - 1) / 2);
  cd.bound = Bound::skip;
  int v = k.expr_load(wa, DType::f32);
  k.body = k.expr_binary(Op::mul, v, v, DType::f32);
  k.reduce = Reduce::sum;
  int acc = k.expr_unary(Op::acc, -1, DType::f32);
  int scale = k.expr_binary(
      Op::add, k.expr_const(bias, DType::f32),
      k.expr_binary(Op::mul, acc, k.expr_const(alpha / (double)size, DType::f32), DType::f32),
      DType::f32);
  int den = k.expr_binary(Op::pow, scale, k.expr_const(beta, DType::f32), DType::f32);
  k.result =
      k.expr_binary(Op::div, k.expr_load(access_broadcast(x, (int)r), DType::f32), den, DType::f32);
  k.store = access_store(y);
  k.store_dtype = DType::f32;
  k.flops = 2 * shape_numel(x.shape) * size;
}

// The requantization of QLinearConv/QLinearMatMul: the int32 sum (plus QLinearConv's int32
// bias) times a_scale * b_scale / y_scale, rounded half to even, plus y_zero_point, saturated to
// uint8/int8. Sources: the ONNX operator specification (QLinearConv, QLinearMatMul, opset 10),
// which defines them as the dequantized op followed by QuantizeLinear.
IntegerOperands qlinear_operands(Lowering &L, Node &n, int a_scale, int a_zp, int b_scale, int b_zp,
                                 int y_scale, int y_zp, int bias) {
  for (int i : {a_scale, a_zp, b_scale, b_zp, y_scale, y_zp})
    if (!n.input(i)) L.fail("input " + std::to_string(i) + " (a scale or zero point) is missing");
  const Value *yz = n.input(y_zp);
  if (yz->dtype != DType::u8 && yz->dtype != DType::i8)
    L.fail("y_zero_point must be uint8 or int8");
  for (int i : {a_scale, b_scale, y_scale})
    if (n.input(i)->dtype != DType::f32) L.fail("scales must be float32");
  IntegerOperands q;
  q.a_zp = n.input(a_zp);
  q.b_zp = n.input(b_zp);
  q.out = yz->dtype;
  const Value *as = n.input(a_scale), *bs = n.input(b_scale), *ys = n.input(y_scale),
              *bv = bias >= 0 ? n.input(bias) : nullptr;
  if (bv && bv->dtype != DType::i32) L.fail("bias must be int32");
  const double lo = q.out == DType::u8 ? 0 : -128, hi = q.out == DType::u8 ? 255 : 127;
  q.finish = [=, &L](Kernel &k, int acc, const std::function<int(const Value *)> &per_channel) {
    if (bv) acc = k.expr_binary(Op::add, acc, k.expr_cast(per_channel(bv), DType::i32), DType::i32);
    int one = [&] {
      Loc l = L.loc(as);
      if (shape_numel(l.shape) != 1) L.fail("a_scale/x_scale must hold one value");
      return k.expr_load(access_axes(l, std::vector<int>(l.shape.size(), -1)), DType::f32);
    }();
    int ye = [&] {
      Loc l = L.loc(ys);
      if (shape_numel(l.shape) != 1) L.fail("y_scale must hold one value");
      return k.expr_load(access_axes(l, std::vector<int>(l.shape.size(), -1)), DType::f32);
    }();
    int scale = k.expr_binary(Op::div, k.expr_binary(Op::mul, one, per_channel(bs), DType::f32), ye,
                              DType::f32);
    int v = k.expr_unary(Op::round,
                         k.expr_binary(Op::mul, k.expr_cast(acc, DType::f32), scale, DType::f32),
                         DType::f32);
    Loc zl = L.loc(yz);
    if (shape_numel(zl.shape) != 1) L.fail("y_zero_point must hold one value");
    v = k.expr_binary(
        Op::add, v,
        k.expr_cast(k.expr_load(access_axes(zl, std::vector<int>(zl.shape.size(), -1)), yz->dtype),
                    DType::f32),
        DType::f32);
    v = k.expr_binary(Op::min, k.expr_binary(Op::max, v, k.expr_const(lo, DType::f32), DType::f32),
                      k.expr_const(hi, DType::f32), DType::f32);
    return k.expr_cast(v, q.out);
  };
  return q;
}

// ConvInteger/MatMulInteger: the int32 sum as it is.
IntegerOperands integer_operands(Node &n, int a_zp, int b_zp) {
  IntegerOperands q;
  q.a_zp = n.input(a_zp);
  q.b_zp = n.input(b_zp);
  q.finish = [](Kernel &, int acc, const std::function<int(const Value *)> &) { return acc; };
  return q;
}

void lower_register_nn() {
  lower_table()["LRN"] = lower_lrn;
  lower_table()["Conv"] = [](Lowering &L, Node &n) {
    lower_conv(L, n, n.input(0), n.input(1), n.input(2), nullptr);
  };
  lower_table()["ConvInteger"] = [](Lowering &L, Node &n) {
    IntegerOperands q = integer_operands(n, 2, 3);
    lower_conv(L, n, n.input(0), n.input(1), nullptr, &q);
  };
  // QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B?)
  lower_table()["QLinearConv"] = [](Lowering &L, Node &n) {
    IntegerOperands q = qlinear_operands(L, n, 1, 2, 4, 5, 6, 7, 8);
    lower_conv(L, n, n.input(0), n.input(3), nullptr, &q);
  };
  lower_table()["MatMulInteger"] = [](Lowering &L, Node &n) {
    IntegerOperands q = integer_operands(n, 2, 3);
    lower_matmul(L, n, n.input(0), n.input(1), &q);
  };
  // QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point)
  lower_table()["QLinearMatMul"] = [](Lowering &L, Node &n) {
    IntegerOperands q = qlinear_operands(L, n, 1, 2, 4, 5, 6, 7, -1);
    lower_matmul(L, n, n.input(0), n.input(3), &q);
  };
  lower_table()["ConvTranspose"] = lower_conv_transpose;
  lower_table()["MaxPool"] = [](Lowering &L, Node &n) { lower_pool(L, n, true); };
  lower_table()["AveragePool"] = [](Lowering &L, Node &n) { lower_pool(L, n, false); };
  lower_table()["GlobalAveragePool"] = [](Lowering &L, Node &n) { lower_global_pool(L, n, false); };
  lower_table()["GlobalMaxPool"] = [](Lowering &L, Node &n) { lower_global_pool(L, n, true); };
  lower_table()["MatMul"] = [](Lowering &L, Node &n) {
    lower_matmul(L, n, n.input(0), n.input(1), nullptr);
  };
  lower_table()["Gemm"] = lower_gemm;
  lower_table()["BatchNormalization"] = lower_batchnorm;
}

}  // namespace capgraph
