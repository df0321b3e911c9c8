// conv_layer_gen OUT.onnx IC OC H W K STRIDE GROUP [relu|swish|none] [inner|first]
// Writes a one-layer benchmark model: the convolution under study (pads K/2, bias) and its
// activation, then a 1x1 convolution to 8 channels, so that the layer's output is an intermediate
// (the compiler blocks intermediates only, compiler/schedule/layout.h) as inside a real network.
// "inner" (the default) also puts a 1x1 convolution from 8 channels in front, so the layer reads
// an intermediate too; "first" makes it read the model's input, as a network's first layer.
// For layer-by-layer speed work: `capgraph compile` it and `capgraph profile` shows step 0.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "onnx_writer.h"

using namespace capgraph::model_gen;

namespace {

int64_t arg(const char *s, const char *what) {
  char *end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < 1 || v > 100000) {
    std::fprintf(stderr, "conv_layer_gen: %s must be 1 to 100000, not '%s'\n", what, s);
    std::exit(2);
  }
  return v;
}

std::vector<float> random_values(size_t n, std::mt19937 *rng) {
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> v(n);
  for (float &x : v) x = u(*rng);
  return v;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 9 || argc > 11) {
    std::fprintf(stderr,
                 "usage: conv_layer_gen OUT.onnx IC OC H W K STRIDE GROUP [relu|swish|none] "
                 "[inner|first]\n");
    return 2;
  }
  const int64_t ic = arg(argv[2], "IC"), oc = arg(argv[3], "OC"), h = arg(argv[4], "H"),
                w = arg(argv[5], "W");
  const int64_t k = arg(argv[6], "K"), stride = arg(argv[7], "STRIDE"),
                group = arg(argv[8], "GROUP");
  const std::string act = argc > 9 ? argv[9] : "none", where = argc > 10 ? argv[10] : "inner";
  if (ic % group || oc % group || (act != "relu" && act != "swish" && act != "none") ||
      (where != "inner" && where != "first")) {
    std::fprintf(stderr,
                 "conv_layer_gen: IC and OC must be multiples of GROUP; the activation relu, swish "
                 "or none; the place inner or first\n");
    return 2;
  }
  std::mt19937 rng(20261122);
  ModelBuilder b(13);
  std::string x = "x";
  if (where == "inner") {
    b.input("x", DataType::float32, {1, 8, h, w});
    b.initializer("wi", random_values(size_t(ic * 8), &rng), {ic, 8, 1, 1});
    b.node("Conv", {"x", "wi"}, {"xi"});
    x = "xi";
  } else {
    b.input("x", DataType::float32, {1, ic, h, w});
  }
  b.initializer("w0", random_values(size_t(oc * (ic / group) * k * k), &rng),
                {oc, ic / group, k, k});
  b.initializer("b0", random_values(size_t(oc), &rng), {oc});
  const int64_t p = k / 2;
  b.node("Conv", {x, "w0", "b0"}, {"c0"},
         {attr_ints("pads", {p, p, p, p}), attr_ints("strides", {stride, stride}),
          attr_int("group", group)});
  std::string y = "c0";
  if (act == "relu") b.node("Relu", {"c0"}, {"a0"}), y = "a0";
  if (act == "swish")
    b.node("Sigmoid", {"c0"}, {"s0"}), b.node("Mul", {"c0", "s0"}, {"a0"}), y = "a0";
  b.initializer("w1", random_values(size_t(8 * oc), &rng), {8, oc, 1, 1});
  b.node("Conv", {y, "w1"}, {"y"});
  b.output("y", DataType::float32);
  try {
    b.save(argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "conv_layer_gen: %s\n", e.what());
    return 1;
  }
  return 0;
}
