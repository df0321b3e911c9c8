// comma_model_gen DIR: writes a small model shaped like openpilot's driving model for the Adreno
// end-to-end test (adreno_e2e.sh): DIR/comma.onnx with two uint8 camera inputs 1x12x128x256
// ("input_imgs", "big_input_imgs": two stacked YUV420 frames each, as modeld feeds them), a
// "desire" input 1x8x8 and a "features_buffer" input 1x24x64 (the policy's history), and several
// heads: "plan" 1x200, "lead" 1x50, "pose" 1x12 and "hidden_state" 1x64 (Tanh). Random weights,
// seeded; the inputs are written by tests/tools/npy_random. The sizes are small so the fake
// (host twins) and the CPU run it in well under a second.
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "onnx_writer.h"

using namespace capgraph::model_gen;

namespace {

std::vector<float> values(size_t n, std::mt19937 &rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v) x = u(rng);
  return v;
}

// Cast to float, scale to [0, 1], two strided Conv+Relu, global average: 1x32.
void vision(ModelBuilder &b, std::mt19937 &rng, const std::string &in) {
  b.initializer(in + "_scale", std::vector<float>{1.0f / 255.0f}, {1});
  b.initializer(in + "_w1", values(16 * 12 * 9, rng, 0.3f), {16, 12, 3, 3});
  b.initializer(in + "_b1", values(16, rng, 0.1f), {16});
  b.initializer(in + "_w2", values(32 * 16 * 9, rng, 0.2f), {32, 16, 3, 3});
  b.node("Cast", {in}, {in + "_f"}, {attr_int("to", 1)});
  b.node("Mul", {in + "_f", in + "_scale"}, {in + "_s"});
  b.node("Conv", {in + "_s", in + "_w1", in + "_b1"}, {in + "_c1"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {4, 4})});
  b.node("Relu", {in + "_c1"}, {in + "_r1"});
  b.node("Conv", {in + "_r1", in + "_w2"}, {in + "_c2"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {4, 4})});
  b.node("Relu", {in + "_c2"}, {in + "_r2"});
  b.node("GlobalAveragePool", {in + "_r2"}, {in + "_g"});
  b.node("Flatten", {in + "_g"}, {in + "_v"});
}

void dense(ModelBuilder &b, std::mt19937 &rng, const std::string &in, const std::string &out,
           int64_t from, int64_t to) {
  b.initializer(out + "_w", values(size_t(from * to), rng, 1.0f / float(from)), {to, from});
  b.initializer(out + "_b", values(size_t(to), rng, 0.1f), {to});
  b.node("Gemm", {in, out + "_w", out + "_b"}, {out}, {attr_int("transB", 1)});
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: comma_model_gen DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::mt19937 rng(12);
  ModelBuilder b(13);
  b.input("input_imgs", DataType::uint8, {1, 12, 128, 256});
  b.input("big_input_imgs", DataType::uint8, {1, 12, 128, 256});
  b.input("desire", DataType::float32, {1, 8, 8});
  b.input("features_buffer", DataType::float32, {1, 24, 64});
  vision(b, rng, "input_imgs");
  vision(b, rng, "big_input_imgs");
  b.node("Flatten", {"desire"}, {"desire_v"});
  b.node("Flatten", {"features_buffer"}, {"features_v"});
  dense(b, rng, "features_v", "features_d", 24 * 64, 32);
  b.node("Concat", {"input_imgs_v", "big_input_imgs_v", "desire_v", "features_d"}, {"joined"},
         {attr_int("axis", 1)});
  dense(b, rng, "joined", "trunk", 32 + 32 + 64 + 32, 128);
  b.node("Relu", {"trunk"}, {"trunk_r"});
  dense(b, rng, "trunk_r", "plan", 128, 200);
  dense(b, rng, "trunk_r", "lead", 128, 50);
  dense(b, rng, "trunk_r", "pose", 128, 12);
  dense(b, rng, "trunk_r", "hidden", 128, 64);
  b.node("Tanh", {"hidden"}, {"hidden_state"});
  b.output("plan", DataType::float32, {1, 200});
  b.output("lead", DataType::float32, {1, 50});
  b.output("pose", DataType::float32, {1, 12});
  b.output("hidden_state", DataType::float32, {1, 64});
  b.save(dir + "/comma.onnx");
  return 0;
}
