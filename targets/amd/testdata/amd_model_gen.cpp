// amd_model_gen DIR: writes a small generated CNN for the fake-AMD end-to-end test
// (amd_e2e.sh small): DIR/small_cnn.onnx and a seeded input DIR/input.npy ("x", 1x3x16x16).
// Conv+Relu, a residual Add, MaxPool, GlobalAveragePool, Gemm, Softmax, and an Identity output of
// the input (which a capture may turn into a copy step).
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "npy.h"
#include "onnx_writer.h"

using namespace capgraph::model_gen;

namespace {

std::vector<float> values(size_t n, std::mt19937 &rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v) x = u(rng);
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: amd_model_gen DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::mt19937 rng(7);
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 16, 16});
  // 16 channels: both convolutions take the tiled GPU schedule (compiler/codegen/gpu_tile.h, which
  // wants 16 rows and columns), so the planted miscompile below lands in a tiled kernel.
  b.initializer("w1", values(16 * 3 * 9, rng, 0.3f), {16, 3, 3, 3});
  b.initializer("b1", values(16, rng, 0.1f), {16});
  b.initializer("w2", values(16 * 16 * 9, rng, 0.15f), {16, 16, 3, 3});
  b.initializer("w3", values(10 * 16, rng, 0.3f), {10, 16});
  b.initializer("b3", values(10, rng, 0.1f), {10});
  b.node("Conv", {"x", "w1", "b1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.node("Relu", {"c1"}, {"r1"});
  b.node("Conv", {"r1", "w2"}, {"c2"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.node("Add", {"c2", "r1"}, {"s"});
  b.node("Relu", {"s"}, {"r2"});
  b.node("MaxPool", {"r2"}, {"p"},
         {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
  b.node("GlobalAveragePool", {"p"}, {"g"});
  b.node("Flatten", {"g"}, {"f"});
  b.node("Gemm", {"f", "w3", "b3"}, {"logits"}, {attr_int("transB", 1)});
  b.node("Softmax", {"logits"}, {"probs"}, {attr_int("axis", 1)});
  b.node("Identity", {"x"}, {"x_out"});
  b.output("probs", DataType::float32, {1, 10});
  b.output("p", DataType::float32, {1, 16, 8, 8});
  b.output("x_out", DataType::float32, {1, 3, 16, 16});
  b.save(dir + "/small_cnn.onnx");
  const std::vector<float> x = values(3 * 16 * 16, rng, 1.0f);
  const int64_t shape[4] = {1, 3, 16, 16};
  std::string err;
  if (!capgraph::npy_write(dir + "/input.npy", CAPGRAPH_F32, shape, 4, x.data(), x.size() * 4,
                           &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return 0;
}
