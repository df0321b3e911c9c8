// Window functions of ONNX's signal ops: HannWindow, HammingWindow, BlackmanWindow. Their only
// input is the window length, which sets the output's shape, so it must be known at compile time
// (bind a model input with `--bind`); the window is then a constant.
// Sources: the ONNX operator specification (onnx/docs/Operators.md, opset 17): with N the length,
// the denominator is N when periodic (the default) and N - 1 when symmetric, and
//   Hann     0.5 - 0.5 cos(2 pi n / d)
//   Hamming  25/46 - 21/46 cos(2 pi n / d)
//   Blackman 0.42 - 0.5 cos(2 pi n / d) + 0.08 cos(4 pi n / d)
#include <cmath>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// a0 - a1 cos(2 pi n / d) + a2 cos(4 pi n / d)
void lower_window(Lowering &L, Node &n, double a0, double a1, double a2) {
  const Tensor &size = L.const_input(0, "size");
  if (size.numel() != 1) L.fail("size must hold one value, got shape " + shape_str(size.shape));
  int64_t N = size.at_i64(0);
  if (N < 0 || N > (int64_t(1) << 24))
    L.fail("size " + std::to_string(N) + " is out of range [0, 2^24]");
  DType t = dtype_from_onnx_int(L, n.attr_int("output_datatype", 1));
  bool periodic = n.attr_int("periodic", 1) != 0;
  double d = periodic ? (double)N : (double)(N - 1);
  std::vector<double> w(N);
  for (int64_t i = 0; i < N; i++) {
    double x = d > 0 ? 2 * M_PI * (double)i / d : 0;
    w[i] = a0 - a1 * std::cos(x) + a2 * std::cos(2 * x);
  }
  L.output_constant(n.outputs[0], Tensor::from_f64(t, {N}, w));
}

}  // namespace

void lower_register_signal() {
  auto &t = lower_table();
  t["HannWindow"] = [](Lowering &L, Node &n) { lower_window(L, n, 0.5, 0.5, 0); };
  t["HammingWindow"] = [](Lowering &L, Node &n) {
    lower_window(L, n, 25.0 / 46.0, 21.0 / 46.0, 0);
  };
  t["BlackmanWindow"] = [](Lowering &L, Node &n) { lower_window(L, n, 0.42, 0.5, 0.08); };
}

}  // namespace capgraph
