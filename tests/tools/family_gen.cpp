// family_gen OUT_DIR [bench|test]
// Writes the wider benchmark set of issue 17: one zoo-like folder per model family that the
// shared zoo does not cover (model.onnx, input_<k>.npy, meta.json listing the inputs), so that
// scripts/bench.sh OUT_DIR times them beside ONNX Runtime and tests/models/families_test.sh checks
// them against it. Random weights, fixed seeds: the same files on every run.
//   regnet_like       grouped 3x3 convolutions, 8 and 16 channels per group, 1x1 around them
//   shufflenet_like   ShuffleNetV2 units: Split, 1x1 / depthwise / 1x1, Concat, channel shuffle
//                     (Reshape-Transpose-Reshape)
//   mobilenetv3_like  inverted residuals with HardSwish and squeeze-excite (HardSigmoid gate)
//   inception_like    four branches (1x1, 1x1-3x3, 1x1-3x3-3x3, 3x3 max pool-1x1) concatenated
//   densenet_like     dense blocks: each layer's 32 new channels concatenated to its input
//   comma_like        two uint8 1x12x128x256 camera frames cast and scaled in the graph (stems
//                     12 -> 16, 3x3 stride 2, one with Clip(min) as ReLU), a MobileNetV3-style
//                     backbone, a temporal input (1x24x512 feature history), heads of 4955 and
//                     528 outputs (issue 27's comma-shaped acceptance model)
// "bench" (the default) writes the shapes to time; "test" the same graphs on smaller frames (and
// fewer repeats) so that a conformance run is quick; the operators and channel counts are the same.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "npy.h"
#include "onnx_writer.h"

using namespace capgraph::model_gen;

namespace {

// One model under construction: the builder, a name counter and the weights' random source.
struct Net {
  ModelBuilder b{14};  // HardSwish is opset 14
  std::mt19937 rng{20261124};
  int next = 0;

  std::string fresh(const char *what) { return std::string(what) + std::to_string(next++); }

  std::vector<float> random_values(size_t n, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float &x : v) x = u(rng);
    return v;
  }

  // Conv with bias, He-like weight scale so activations stay O(1) through deep stacks.
  std::string conv(const std::string &x, int64_t ic, int64_t oc, int64_t k, int64_t stride,
                   int64_t group) {
    const std::string w = fresh("w"), bias = fresh("b"), y = fresh("conv");
    const int64_t fan_in = ic / group * k * k;
    b.initializer(w, random_values(size_t(oc * fan_in), 1.7f / std::sqrt(float(fan_in))),
                  {oc, ic / group, k, k});
    b.initializer(bias, random_values(size_t(oc), 0.1f), {oc});
    const int64_t p = k / 2;
    b.node("Conv", {x, w, bias}, {y},
           {attr_ints("pads", {p, p, p, p}), attr_ints("strides", {stride, stride}),
            attr_int("group", group)});
    return y;
  }
  std::string op(const char *type, std::vector<std::string> in,
                 std::vector<capgraph::onnx::Attribute> attrs = {}) {
    const std::string y = fresh(type);
    b.node(type, std::move(in), {y}, std::move(attrs));
    return y;
  }
  std::string relu(const std::string &x) { return op("Relu", {x}); }
  std::string hardswish(const std::string &x) { return op("HardSwish", {x}); }
  std::string ints(std::vector<int64_t> v) {
    const std::string n = fresh("shape");
    b.initializer(n, v, {int64_t(v.size())});
    return n;
  }
  std::string scalar(float v) {
    const std::string n = fresh("c");
    b.initializer(n, std::vector<float>{v}, {});
    return n;
  }
  // Fully connected (Gemm with transB as exporters write it), named `name` when given.
  std::string dense(const std::string &x, int64_t c, int64_t out, const std::string &name = "") {
    const std::string w = fresh("fc_w"), bias = fresh("fc_b");
    b.initializer(w, random_values(size_t(out * c), 1.7f / std::sqrt(float(c))), {out, c});
    b.initializer(bias, random_values(size_t(out), 0.1f), {out});
    const std::string y = name.empty() ? fresh("Gemm") : name;
    b.node("Gemm", {x, w, bias}, {y}, {attr_int("transB", 1)});
    return y;
  }
  // Global average pool, flatten, fully connected.
  std::string head(const std::string &x, int64_t c, int64_t out) {
    return dense(op("Flatten", {op("GlobalAveragePool", {x})}), c, out);
  }
};

// Squeeze-excite as MobileNetV3 writes it: pool, 1x1 down (ReLU), 1x1 up, HardSigmoid, scale.
std::string squeeze_excite(Net &n, const std::string &x, int64_t c) {
  const int64_t mid = std::max<int64_t>(8, c / 4);
  std::string s = n.op("GlobalAveragePool", {x});
  s = n.relu(n.conv(s, c, mid, 1, 1, 1));
  s = n.op("HardSigmoid", {n.conv(s, mid, c, 1, 1, 1)},
           {attr_float("alpha", 1.0f / 6), attr_float("beta", 0.5f)});
  return n.op("Mul", {x, s});
}

// MobileNetV3 inverted residual: expand 1x1, depthwise k x k, optional SE, project 1x1, residual.
std::string inverted_residual(Net &n, const std::string &x, int64_t ic, int64_t exp, int64_t oc,
                              int64_t k, int64_t stride, bool se, bool hs) {
  auto act = [&](const std::string &v) { return hs ? n.hardswish(v) : n.relu(v); };
  std::string y = x;
  if (exp != ic) y = act(n.conv(y, ic, exp, 1, 1, 1));
  y = act(n.conv(y, exp, exp, k, stride, exp));
  if (se) y = squeeze_excite(n, y, exp);
  y = n.conv(y, exp, oc, 1, 1, 1);
  if (stride == 1 && ic == oc) y = n.op("Add", {y, x});
  return y;
}

struct Layer {
  int64_t exp, oc, k, stride;
  bool se, hs;
};
// MobileNetV3-small's layer table (Howard et al. 2019, table 2), from a 16-channel stem.
const std::vector<Layer> k_v3_small = {
    {16, 16, 3, 2, true, false}, {72, 24, 3, 2, false, false}, {88, 24, 3, 1, false, false},
    {96, 40, 5, 2, true, true},  {240, 40, 5, 1, true, true},  {240, 40, 5, 1, true, true},
    {120, 48, 5, 1, true, true}, {144, 48, 5, 1, true, true},  {288, 96, 5, 2, true, true},
    {576, 96, 5, 1, true, true}, {576, 96, 5, 1, true, true}};

std::string v3_backbone(Net &n, std::string x, int64_t ic) {
  for (const Layer &l : k_v3_small) {
    x = inverted_residual(n, x, ic, l.exp, l.oc, l.k, l.stride, l.se, l.hs);
    ic = l.oc;
  }
  return n.hardswish(n.conv(x, ic, 576, 1, 1, 1));
}

void mobilenetv3_like(Net &n, int64_t hw) {
  n.b.input("x", DataType::float32, {1, 3, hw, hw});
  std::string x = n.hardswish(n.conv("x", 3, 16, 3, 2, 1));
  x = v3_backbone(n, x, 16);
  x = n.hardswish(n.head(x, 576, 1024));
  n.b.node("Gemm", {x, "fc2_w", "fc2_b"}, {"y"}, {attr_int("transB", 1)});
  n.b.initializer("fc2_w", n.random_values(1000 * 1024, 0.05f), {1000, 1024});
  n.b.initializer("fc2_b", n.random_values(1000, 0.1f), {1000});
  n.b.output("y", DataType::float32);
}

// RegNetX-style: stages of residual bottlenecks whose 3x3 is grouped with a fixed group width.
void regnet_like(Net &n, int64_t hw, int repeats) {
  n.b.input("x", DataType::float32, {1, 3, hw, hw});
  std::string x = n.relu(n.conv("x", 3, 32, 3, 2, 1));
  int64_t ic = 32;
  const int64_t widths[] = {32, 64, 160, 384}, group_width[] = {8, 8, 16, 16};
  for (int s = 0; s < 4; ++s) {
    const int64_t w = widths[s], g = w / group_width[s];
    for (int r = 0; r < repeats; ++r) {
      const int64_t stride = r == 0 ? 2 : 1;
      std::string y = n.relu(n.conv(x, ic, w, 1, 1, 1));
      y = n.relu(n.conv(y, w, w, 3, stride, g));
      y = n.conv(y, w, w, 1, 1, 1);
      const std::string skip = (stride == 1 && ic == w) ? x : n.conv(x, ic, w, 1, stride, 1);
      x = n.relu(n.op("Add", {y, skip}));
      ic = w;
    }
  }
  n.b.output(n.head(x, ic, 1000), DataType::float32);
}

// Channel shuffle as ShuffleNet exports it: [N, C, H, W] -> [N, 2, C/2, H, W] -> swap -> back.
std::string channel_shuffle(Net &n, const std::string &x, int64_t c, int64_t h, int64_t w) {
  std::string y = n.op("Reshape", {x, n.ints({1, 2, c / 2, h, w})});
  y = n.op("Transpose", {y}, {attr_ints("perm", {0, 2, 1, 3, 4})});
  return n.op("Reshape", {y, n.ints({1, c, h, w})});
}

void shufflenet_like(Net &n, int64_t hw, int repeats) {
  n.b.input("x", DataType::float32, {1, 3, hw, hw});
  std::string x = n.relu(n.conv("x", 3, 24, 3, 2, 1));
  x = n.op("MaxPool", {x},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
            attr_ints("strides", {2, 2})});
  int64_t ic = 24, h = hw / 4;
  const int64_t widths[] = {116, 232, 464};
  const int counts[] = {repeats, 2 * repeats, repeats};
  for (int s = 0; s < 3; ++s) {
    const int64_t oc = widths[s], half = oc / 2;
    // Down-sampling unit: both branches see the whole input.
    std::string a = n.conv(n.conv(x, ic, ic, 3, 2, ic), ic, half, 1, 1, 1);
    a = n.relu(a);
    std::string c = n.relu(n.conv(x, ic, half, 1, 1, 1));
    c = n.relu(n.conv(n.conv(c, half, half, 3, 2, half), half, half, 1, 1, 1));
    h /= 2;
    x = channel_shuffle(n, n.op("Concat", {a, c}, {attr_int("axis", 1)}), oc, h, h);
    for (int r = 0; r < counts[s]; ++r) {
      const std::string l = n.fresh("split_l"), rr = n.fresh("split_r");
      n.b.node("Split", {x, n.ints({half, half})}, {l, rr}, {attr_int("axis", 1)});
      std::string y = n.relu(n.conv(rr, half, half, 1, 1, 1));
      y = n.relu(n.conv(n.conv(y, half, half, 3, 1, half), half, half, 1, 1, 1));
      x = channel_shuffle(n, n.op("Concat", {l, y}, {attr_int("axis", 1)}), oc, h, h);
    }
    ic = oc;
  }
  x = n.relu(n.conv(x, ic, 1024, 1, 1, 1));
  n.b.output(n.head(x, 1024, 1000), DataType::float32);
}

// GoogLeNet-style module; returns the concatenation (its channels in *oc).
std::string inception_module(Net &n, const std::string &x, int64_t ic, int64_t c1, int64_t r3,
                             int64_t c3, int64_t r5, int64_t c5, int64_t cp, int64_t *oc) {
  const std::string b1 = n.relu(n.conv(x, ic, c1, 1, 1, 1));
  const std::string b3 = n.relu(n.conv(n.relu(n.conv(x, ic, r3, 1, 1, 1)), r3, c3, 3, 1, 1));
  std::string b5 = n.relu(n.conv(n.relu(n.conv(x, ic, r5, 1, 1, 1)), r5, c5, 3, 1, 1));
  b5 = n.relu(n.conv(b5, c5, c5, 3, 1, 1));
  std::string bp =
      n.op("MaxPool", {x}, {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1})});
  bp = n.relu(n.conv(bp, ic, cp, 1, 1, 1));
  *oc = c1 + c3 + c5 + cp;
  return n.op("Concat", {b1, b3, b5, bp}, {attr_int("axis", 1)});
}

void inception_like(Net &n, int64_t hw) {
  n.b.input("x", DataType::float32, {1, 3, hw, hw});
  std::string x = n.relu(n.conv("x", 3, 64, 7, 2, 1));
  const auto pool = [&](const std::string &v) {
    return n.op("MaxPool", {v},
                {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
                 attr_ints("strides", {2, 2})});
  };
  x = pool(x);
  x = n.relu(n.conv(x, 64, 192, 3, 1, 1));
  x = pool(x);
  int64_t c = 192;
  x = inception_module(n, x, c, 64, 96, 128, 16, 32, 32, &c);    // 3a: 256
  x = inception_module(n, x, c, 128, 128, 192, 32, 96, 64, &c);  // 3b: 480
  x = pool(x);
  x = inception_module(n, x, c, 192, 96, 208, 16, 48, 64, &c);   // 4a: 512
  x = inception_module(n, x, c, 160, 112, 224, 24, 64, 64, &c);  // 4b: 512
  n.b.output(n.head(x, c, 1000), DataType::float32);
}

void densenet_like(Net &n, int64_t hw, int layers) {
  n.b.input("x", DataType::float32, {1, 3, hw, hw});
  std::string x = n.relu(n.conv("x", 3, 64, 7, 2, 1));
  x = n.op("MaxPool", {x},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
            attr_ints("strides", {2, 2})});
  int64_t c = 64;
  const int64_t growth = 32;
  for (int block = 0; block < 3; ++block) {
    for (int l = 0; l < layers; ++l) {
      std::string y = n.relu(n.conv(x, c, 4 * growth, 1, 1, 1));
      y = n.relu(n.conv(y, 4 * growth, growth, 3, 1, 1));
      x = n.op("Concat", {x, y}, {attr_int("axis", 1)});
      c += growth;
    }
    if (block < 2) {  // transition: 1x1 halving the channels, 2x2 average pool
      x = n.relu(n.conv(x, c, c / 2, 1, 1, 1));
      c /= 2;
      x = n.op("AveragePool", {x},
               {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    }
  }
  n.b.output(n.head(x, c, 1000), DataType::float32);
}

// The comma-shaped model: two uint8 camera frames (12 channels: two stacked YUV420 frames each, as
// openpilot feeds its driving model) cast to float and scaled in the graph, a stem per camera,
// concatenated, a MobileNetV3-style backbone, then 512 features and a 512 -> 4955 head.
void comma_like(Net &n, int64_t h, int64_t w) {
  std::string stems[2];
  const char *names[2] = {"input_imgs", "big_input_imgs"};
  for (int cam = 0; cam < 2; ++cam) {
    n.b.input(names[cam], DataType::uint8, {1, 12, h, w});
    // Two ways exporters write the scaling: x / 127.5 - 1 and x * (1 / 255); and two ways they
    // write the stem's activation: keras' ReLU as Clip with only a minimum, and HardSwish.
    std::string f = n.op("Cast", {names[cam]}, {attr_int("to", 1)});
    if (cam == 0) {
      f = n.op("Sub", {n.op("Div", {f, n.scalar(127.5f)}), n.scalar(1.0f)});
      stems[cam] = n.op("Clip", {n.conv(f, 12, 16, 3, 2, 1), n.scalar(0.0f)});
    } else {
      f = n.op("Mul", {f, n.scalar(1.0f / 255)});
      stems[cam] = n.hardswish(n.conv(f, 12, 16, 3, 2, 1));
    }
  }
  std::string x =
      n.conv(n.op("Concat", {stems[0], stems[1]}, {attr_int("axis", 1)}), 32, 16, 1, 1, 1);
  x = v3_backbone(n, x, 16);
  x = n.hardswish(n.head(x, 576, 512));
  // The temporal input: the policy's feature history (24 steps of 512), flattened into a dense
  // layer, joined with the vision features as openpilot's policy joins them.
  n.b.input("features_buffer", DataType::float32, {1, 24, 512});
  std::string t = n.op("Flatten", {"features_buffer"});
  t = n.relu(n.dense(t, 24 * 512, 256));
  x = n.hardswish(n.dense(n.op("Concat", {x, t}, {attr_int("axis", 1)}), 512 + 256, 512));
  n.b.output(n.dense(x, 512, 4955, "plan"), DataType::float32);
  n.b.output(n.dense(x, 512, 528, "hidden_state"), DataType::float32);
}

struct Input {
  std::string name;
  std::vector<int64_t> dims;
  bool u8;
};

bool model_write(const std::filesystem::path &dir, const Net &n, const std::vector<Input> &inputs) {
  std::filesystem::create_directories(dir);
  n.b.save((dir / "model.onnx").string());
  std::mt19937 rng(7);
  std::string meta =
      "{\n \"model\": \"model.onnx\",\n \"source\": \"tests/tools/family_gen\",\n \"inputs\": [";
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Input &in = inputs[k];
    size_t count = 1;
    for (int64_t d : in.dims) count *= size_t(d);
    const std::string file = "input_" + std::to_string(k) + ".npy";
    bool ok;
    std::string err;
    if (in.u8) {
      std::uniform_int_distribution<int> u(0, 255);
      std::vector<uint8_t> v(count);
      for (uint8_t &x : v) x = uint8_t(u(rng));
      ok = capgraph::npy_write((dir / file).string(), CAPGRAPH_U8, in.dims.data(),
                               int(in.dims.size()), v.data(), v.size() * sizeof(v[0]), &err);
    } else {
      std::uniform_real_distribution<float> u(-1.f, 1.f);
      std::vector<float> v(count);
      for (float &x : v) x = u(rng);
      ok = capgraph::npy_write((dir / file).string(), CAPGRAPH_F32, in.dims.data(),
                               int(in.dims.size()), v.data(), v.size() * sizeof(v[0]), &err);
    }
    if (!ok) {
      std::fprintf(stderr, "family_gen: %s\n", err.c_str());
      return false;
    }
    std::string dims;
    for (int64_t d : in.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    meta += std::string(k ? "," : "") + "\n  {\"name\": \"" + in.name + "\", \"file\": \"" + file +
            "\", \"dims\": [" + dims + "], \"type\": \"" + (in.u8 ? "uint8" : "float32") + "\"}";
  }
  meta += "\n ]\n}\n";
  std::ofstream((dir / "meta.json").string()) << meta;
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string size = argc > 2 ? argv[2] : "bench";
  if (argc < 2 || argc > 3 || (size != "bench" && size != "test")) {
    std::fprintf(stderr, "usage: family_gen OUT_DIR [bench|test]\n");
    return 2;
  }
  const bool bench = size == "bench";
  const std::filesystem::path out = argv[1];
  const int64_t hw = bench ? 224 : 64;
  try {
    bool ok = true;
    {
      Net n;
      regnet_like(n, hw, bench ? 2 : 1);
      ok &= model_write(out / "regnet_like", n, {{"x", {1, 3, hw, hw}, false}});
    }
    {
      Net n;
      shufflenet_like(n, hw, bench ? 2 : 1);
      ok &= model_write(out / "shufflenet_like", n, {{"x", {1, 3, hw, hw}, false}});
    }
    {
      Net n;
      mobilenetv3_like(n, hw);
      ok &= model_write(out / "mobilenetv3_like", n, {{"x", {1, 3, hw, hw}, false}});
    }
    {
      Net n;
      inception_like(n, hw);
      ok &= model_write(out / "inception_like", n, {{"x", {1, 3, hw, hw}, false}});
    }
    {
      Net n;
      densenet_like(n, hw, bench ? 6 : 2);
      ok &= model_write(out / "densenet_like", n, {{"x", {1, 3, hw, hw}, false}});
    }
    {
      const int64_t h = bench ? 128 : 32, w = bench ? 256 : 64;
      Net n;
      comma_like(n, h, w);
      ok &= model_write(out / "comma_like", n,
                        {{"input_imgs", {1, 12, h, w}, true},
                         {"big_input_imgs", {1, 12, h, w}, true},
                         {"features_buffer", {1, 24, 512}, false}});
    }
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "family_gen: %s\n", e.what());
    return 1;
  }
}
