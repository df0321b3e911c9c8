// DynamicQuantizeLinear: uint8 quantization whose scale and zero point come from the input's own
// range (which always includes 0). Two full reductions (min, max), one kernel per scalar output,
// then the elementwise quantization.
// Sources: the ONNX operator specification (onnx/docs/Operators.md, DynamicQuantizeLinear, opset
// 11):
//   y_scale = (max(0, max(x)) - min(0, min(x))) / 255
//   y_zero_point = saturate(round(0 - min(0, min(x)) / y_scale))
//   y = saturate(round(x / y_scale) + y_zero_point), rounding half to even, saturating to [0, 255].
#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// A kernel folding every element of x into the scalar `out` with `r`, then min/max with 0.
void range_kernel(Lowering &L, const Loc &x, const Loc &out, Reduce r) {
  Kernel &k = L.kernel_new(r == Reduce::min ? "dynamic_quantize_min" : "dynamic_quantize_max");
  k.axes = {1};
  std::vector<int> axis_of;
  for (size_t d = 0; d < x.shape.size(); d++) {
    axis_of.push_back((int)k.axes.size());
    k.axes.push_back(x.shape[d]);
  }
  k.n_parallel = 1;
  k.body = k.expr_load(access_axes(x, axis_of), DType::f32);
  k.reduce = r;
  k.acc_dtype = DType::f32;
  k.result =
      k.expr_binary(r == Reduce::min ? Op::min : Op::max, k.expr_unary(Op::acc, -1, DType::f32),
                    k.expr_const(0, DType::f32), DType::f32);
  k.store = access_axes(out, {});
  k.store_dtype = DType::f32;
  k.flops = shape_numel(x.shape);
}

int scalar_load(Kernel &k, const Loc &l, DType t) {
  return k.expr_load(access_axes(l, std::vector<int>(l.shape.size(), -1)), t);
}

// round(v) clamped to [0, 255], as float
int saturate_u8(Kernel &k, int v) {
  v = k.expr_unary(Op::round, v, DType::f32);
  return k.expr_binary(Op::min, k.expr_binary(Op::max, v, k.expr_const(0, DType::f32), DType::f32),
                       k.expr_const(255, DType::f32), DType::f32);
}

void lower_dynamic_quantize_linear(Lowering &L, Node &n) {
  const Value *x = n.input(0);
  if (x->dtype != DType::f32) L.fail("X must be float32");
  if (shape_numel(x->shape) == 0) L.fail("X is empty: its range sets the scale");
  Loc xl = L.loc(x);
  Loc mn = L.buffer_new(DType::f32, {}, Buffer::Kind::intermediate, n.outputs[0]->name + "_min");
  Loc mx = L.buffer_new(DType::f32, {}, Buffer::Kind::intermediate, n.outputs[0]->name + "_max");
  range_kernel(L, xl, mn, Reduce::min);
  range_kernel(L, xl, mx, Reduce::max);
  auto out_or_scratch = [&](size_t i, DType t, const char *what) {
    if (i < n.outputs.size() && !n.outputs[i]->name.empty())
      return L.output_new(n.outputs[i], t, {});
    return L.buffer_new(t, {}, Buffer::Kind::intermediate, n.outputs[0]->name + what);
  };
  Loc scale = out_or_scratch(1, DType::f32, "_scale");
  Loc zp = out_or_scratch(2, DType::u8, "_zero_point");
  {
    Kernel &k = L.kernel_new("dynamic_quantize_scale");
    k.axes = {1};
    k.n_parallel = 1;
    int range = k.expr_binary(Op::sub, scalar_load(k, mx, DType::f32),
                              scalar_load(k, mn, DType::f32), DType::f32);
    k.result = k.expr_binary(Op::div, range, k.expr_const(255, DType::f32), DType::f32);
    k.store = access_axes(scale, {});
    k.store_dtype = DType::f32;
  }
  {
    Kernel &k = L.kernel_new("dynamic_quantize_zero_point");
    k.axes = {1};
    k.n_parallel = 1;
    int z =
        k.expr_binary(Op::div, k.expr_unary(Op::neg, scalar_load(k, mn, DType::f32), DType::f32),
                      scalar_load(k, scale, DType::f32), DType::f32);
    k.result = k.expr_cast(saturate_u8(k, z), DType::u8);
    k.store = access_axes(zp, {});
    k.store_dtype = DType::u8;
  }
  Loc y = L.output_new(n.outputs[0], DType::u8, x->shape);
  Kernel &k = L.kernel_new("dynamic_quantize");
  const int r = (int)x->shape.size();
  k.axes = r ? x->shape : Shape{1};
  k.n_parallel = (int)k.axes.size();
  int v = k.expr_binary(Op::div, k.expr_load(access_broadcast(xl, r), DType::f32),
                        scalar_load(k, scale, DType::f32), DType::f32);
  v = k.expr_binary(Op::add, k.expr_unary(Op::round, v, DType::f32),
                    k.expr_cast(scalar_load(k, zp, DType::u8), DType::f32), DType::f32);
  k.result = k.expr_cast(
      k.expr_binary(Op::min, k.expr_binary(Op::max, v, k.expr_const(0, DType::f32), DType::f32),
                    k.expr_const(255, DType::f32), DType::f32),
      DType::u8);
  k.store = access_store(y);
  k.store_dtype = DType::u8;
  k.flops = 4 * shape_numel(x->shape);
}

}  // namespace

void lower_register_quant() {
  lower_table()["DynamicQuantizeLinear"] = lower_dynamic_quantize_linear;
}

}  // namespace capgraph
