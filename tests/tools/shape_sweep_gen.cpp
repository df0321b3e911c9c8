// shape_sweep_gen OUT_DIR [sweep|quick]
// Writes the shape sweep of issue 27: one zoo-like folder per point (model.onnx, input_0.npy,
// meta.json), each model a single convolution or matrix product, so that scripts/bench_shapes.sh
// times every point beside ONNX Runtime and its roofline bound. meta.json also carries the point's
// multiply-adds x 2 ("flops") and the bytes it must move at least ("bytes": its input as stored,
// weights, bias and output, each once), which the script divides by the measured FMA peak and
// memory bandwidth. Random weights, fixed seeds: the same files on every run.
//
// The grid (issue 27, pruned to run in minutes):
//   dense convs   every input channel count of {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96, 320}
//                 (so every count that is not a multiple of an 8- or 16-channel block) with
//                 kernel/stride 1/1, 3/1, 3/2, 5/2, 7/2, the output channels going round
//                 {8, 16, 24, 32, 64}; 1000 outputs (a classifier) for 1x1 on 32/96/320 inputs
//   camera stems  uint8 inputs cast and normalized in the graph (Cast, Sub, Div; per-channel Sub
//                 on half of them) on few input channels, 3x3 stride 2 and 1
//   NHWC          keras-style: Transpose to NCHW, Conv, Clip(min=0), Transpose back
//   depthwise     8 to 320 channels, 3x3 and 5x5, stride 1 and 2; grouped 2-12 groups
//   products      M x K x N with M in {1, 2, 8} and odd K / N (MatMul + Add, or Gemm transB)
// Activations go round Relu, Clip(min only), Max(x, 0), Clip(0, 6) and none, so the fusing of
// each is exercised. Spatial sizes are odd and shrink as a point's work grows (see spatial_pick).
// Conv outputs are model outputs (a new user's one-layer model); "tail": "pool" points put a 2x2
// max pool after the conv, so the conv writes an intermediate as inside a network.
// "quick" writes a dozen points (the ctest check of the script).
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

enum class Input { f32, u8, nhwc };
enum class Act { none, relu, clip0, max0, clip6 };

struct Point {
  enum { conv, product } kind = conv;
  int64_t ic = 0, oc = 0, k = 1, stride = 1, group = 1, h = 0, w = 0;
  Input input = Input::f32;
  Act act = Act::none;
  bool pool = false;             // a 2x2 max pool after the conv (its output an intermediate)
  bool per_channel = false;      // u8: per-channel Sub
  int64_t m = 0, kk = 0, n = 0;  // product: [M, K] x [K, N]
  bool gemm = false;             // product: Gemm transB (PyTorch) instead of MatMul + Add
};

const char *act_name(Act a) {
  switch (a) {
    case Act::none: return "none";
    case Act::relu: return "relu";
    case Act::clip0: return "clipmin0";
    case Act::max0: return "max0";
    case Act::clip6: return "clip06";
  }
  return "?";
}

int64_t out_size(int64_t x, int64_t k, int64_t s) { return (x + 2 * (k / 2) - k) / s + 1; }

double conv_flops(const Point &p, int64_t h, int64_t w) {
  return 2.0 * double(p.oc) * double(out_size(h, p.k, p.stride)) *
         double(out_size(w, p.k, p.stride)) * double(p.ic / p.group * p.k * p.k);
}

// Odd sizes, the largest whose work stays under ~250 MFLOP and whose input under 8 MB, so each
// point takes a fraction of a millisecond to a few milliseconds.
void spatial_pick(Point *p) {
  static const int64_t sizes[][2] = {{127, 255}, {95, 191}, {63, 127},
                                     {63, 63},   {31, 31},  {15, 15}};
  for (const auto &s : sizes) {
    p->h = s[0], p->w = s[1];
    if (conv_flops(*p, s[0], s[1]) <= 2.5e8 && double(p->ic * s[0] * s[1]) * 4 <= 8e6) return;
  }
}

std::vector<Point> grid_make(bool quick) {
  std::vector<Point> pts;
  const Act acts[] = {Act::relu, Act::clip0, Act::none, Act::max0, Act::clip6};
  int next_act = 0;
  const auto act_next = [&] { return acts[next_act++ % 5]; };
  const int64_t ics[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 96, 320};
  const int64_t ocs[] = {8, 16, 24, 32, 64};
  const int64_t ks[][2] = {{1, 1}, {3, 1}, {3, 2}, {5, 2}, {7, 2}};
  if (quick) {
    // One of each kind, small: the script's own test.
    Point a;
    a.ic = 3, a.oc = 16, a.k = 3, a.stride = 2, a.act = Act::relu, a.h = 31, a.w = 33;
    pts.push_back(a);
    a.input = Input::u8, a.ic = 12, a.per_channel = true, a.pool = true;
    pts.push_back(a);
    Point c;
    c.input = Input::nhwc, c.ic = 6, c.oc = 8, c.k = 5, c.act = Act::clip0, c.h = 17, c.w = 15;
    pts.push_back(c);
    Point d;
    d.ic = d.oc = d.group = 24, d.k = 3, d.stride = 2, d.act = Act::max0, d.h = 15, d.w = 15;
    pts.push_back(d);
    Point m;
    m.kind = Point::product, m.m = 2, m.kk = 127, m.n = 33;
    pts.push_back(m);
    m.gemm = true, m.m = 1;
    pts.push_back(m);
    return pts;
  }
  for (size_t i = 0; i < std::size(ics); ++i)
    for (size_t j = 0; j < std::size(ks); ++j) {
      Point p;
      p.ic = ics[i], p.oc = ocs[(i + j) % std::size(ocs)], p.k = ks[j][0], p.stride = ks[j][1];
      p.act = act_next();
      spatial_pick(&p);
      pts.push_back(p);
    }
  for (int64_t ic : {32, 96, 320}) {
    Point p;
    p.ic = ic, p.oc = 1000, p.act = Act::relu;
    spatial_pick(&p);
    pts.push_back(p);
  }
  // Camera stems: uint8 frames normalized in the graph (the 12 -> 16, 3x3 s2 among them);
  // the pooled ones write an intermediate, as the first conv of a network does.
  int stem = 0;
  for (int64_t ic : {1, 3, 4, 6, 12})
    for (int64_t s : {2, 1}) {
      Point p;
      p.input = Input::u8, p.ic = ic, p.oc = ic == 12 ? 16 : ocs[stem % 5], p.k = 3, p.stride = s;
      p.per_channel = stem % 2, p.pool = s == 2, p.act = act_next();
      spatial_pick(&p);
      pts.push_back(p), ++stem;
    }
  // Keras-style NHWC models (Transpose, Conv, Clip(min=0), Transpose back).
  const int64_t nhwc[][3] = {{3, 16, 3},  {12, 16, 3}, {1, 8, 5},
                             {32, 32, 5}, {96, 24, 1}, {6, 32, 3}};
  for (const auto &c : nhwc) {
    Point p;
    p.input = Input::nhwc, p.ic = c[0], p.oc = c[1], p.k = c[2], p.stride = c[2] == 5 ? 2 : 1;
    p.act = Act::clip0;
    spatial_pick(&p);
    pts.push_back(p);
  }
  // Depthwise and other grouped convolutions.
  int dw = 0;
  for (int64_t c : {8, 12, 16, 24, 32, 48, 96, 320})
    for (int64_t k : {3, 5}) {
      Point p;
      p.ic = p.oc = p.group = c, p.k = k, p.stride = (dw++ % 3 == 2) ? 2 : 1, p.act = act_next();
      spatial_pick(&p);
      pts.push_back(p);
    }
  const int64_t grouped[][3] = {{16, 32, 2}, {24, 24, 3},  {32, 64, 4},
                                {48, 48, 6}, {96, 96, 12}, {12, 24, 4}};
  for (const auto &g : grouped) {
    Point p;
    p.ic = g[0], p.oc = g[1], p.group = g[2], p.k = 3, p.stride = 1, p.act = act_next();
    spatial_pick(&p);
    pts.push_back(p);
  }
  // Matrix products with few rows.
  const int64_t kn[][2] = {{512, 4955}, {1000, 255}, {127, 1000}, {768, 769}, {64, 33}, {4096, 31}};
  int prod = 0;
  for (int64_t m : {1, 2, 8})
    for (const auto &x : kn) {
      Point p;
      p.kind = Point::product, p.m = m, p.kk = x[0], p.n = x[1], p.gemm = prod++ % 2;
      pts.push_back(p);
    }
  return pts;
}

std::string point_name(const Point &p) {
  if (p.kind == Point::product)
    return std::string(p.gemm ? "gemm" : "matmul") + "_m" + std::to_string(p.m) + "_k" +
           std::to_string(p.kk) + "_n" + std::to_string(p.n);
  std::string g = p.group == 1 ? "" : p.group == p.ic ? "_dw" : "_g" + std::to_string(p.group);
  const char *in = p.input == Input::u8     ? (p.per_channel ? "_u8c" : "_u8")
                   : p.input == Input::nhwc ? "_nhwc"
                                            : "";
  return "conv_i" + std::to_string(p.ic) + "_o" + std::to_string(p.oc) + "_k" +
         std::to_string(p.k) + "s" + std::to_string(p.stride) + g + in + "_" + std::to_string(p.h) +
         "x" + std::to_string(p.w) + "_" + act_name(p.act) + (p.pool ? "_pool" : "");
}

struct Model {
  ModelBuilder b{13};
  std::mt19937 rng{20261128};
  int next = 0;
  std::string fresh(const char *what) { return std::string(what) + std::to_string(next++); }
  std::vector<float> random_values(size_t n, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(n);
    for (float &x : v) x = u(rng);
    return v;
  }
  std::string constant(std::vector<float> v, std::vector<int64_t> dims) {
    const std::string n = fresh("c");
    b.initializer(n, v, std::move(dims));
    return n;
  }
  std::string op(const char *type, std::vector<std::string> in,
                 std::vector<capgraph::onnx::Attribute> attrs = {}) {
    const std::string y = fresh(type);
    b.node(type, std::move(in), {y}, std::move(attrs));
    return y;
  }
  std::string act(const std::string &x, Act a) {
    switch (a) {
      case Act::none: return x;
      case Act::relu: return op("Relu", {x});
      case Act::clip0: return op("Clip", {x, constant({0.f}, {})});  // min only, as keras writes
      case Act::max0: return op("Max", {x, constant({0.f}, {})});
      case Act::clip6: return op("Clip", {x, constant({0.f}, {}), constant({6.f}, {})});
    }
    return x;
  }
};

struct Written {
  std::vector<int64_t> dims;
  bool u8 = false;
  double flops = 0, bytes = 0;
};

Written point_build(const Point &p, Model *m) {
  Written r;
  if (p.kind == Point::product) {
    r.dims = {p.m, p.kk};
    m->b.input("x", DataType::float32, r.dims);
    const float scale = 1.f / float(p.kk);
    std::string y;
    if (p.gemm) {
      m->b.initializer("w", m->random_values(size_t(p.n * p.kk), scale), {p.n, p.kk});
      m->b.initializer("bias", m->random_values(size_t(p.n), 0.1f), {p.n});
      y = m->op("Gemm", {"x", "w", "bias"}, {attr_int("transB", 1)});
    } else {
      m->b.initializer("w", m->random_values(size_t(p.kk * p.n), scale), {p.kk, p.n});
      m->b.initializer("bias", m->random_values(size_t(p.n), 0.1f), {p.n});
      y = m->op("Add", {m->op("MatMul", {"x", "w"}), "bias"});
    }
    m->b.node("Identity", {y}, {"y"});
    m->b.output("y", DataType::float32);
    r.flops = 2.0 * double(p.m * p.kk * p.n);
    r.bytes = 4.0 * double(p.m * p.kk + p.kk * p.n + p.n + p.m * p.n);
    return r;
  }
  std::string x = "x";
  r.u8 = p.input == Input::u8;
  if (p.input == Input::nhwc) {
    r.dims = {1, p.h, p.w, p.ic};
    m->b.input("x", DataType::float32, r.dims);
    x = m->op("Transpose", {x}, {attr_ints("perm", {0, 3, 1, 2})});
  } else {
    r.dims = {1, p.ic, p.h, p.w};
    m->b.input("x", r.u8 ? DataType::uint8 : DataType::float32, r.dims);
  }
  if (r.u8) {
    x = m->op("Cast", {x}, {attr_int("to", 1)});
    std::vector<float> mean(size_t(p.ic), 127.5f);
    for (size_t c = 0; c < mean.size(); ++c) mean[c] += float(c % 3) * 3.f;
    x = p.per_channel ? m->op("Sub", {x, m->constant(mean, {1, p.ic, 1, 1})})
                      : m->op("Sub", {x, m->constant({127.5f}, {})});
    x = m->op("Div", {x, m->constant({64.f}, {})});
  }
  const int64_t fan_in = p.ic / p.group * p.k * p.k;
  const std::string w =
      m->constant(m->random_values(size_t(p.oc * fan_in), 1.7f / std::sqrt(float(fan_in))),
                  {p.oc, p.ic / p.group, p.k, p.k});
  const std::string bias = m->constant(m->random_values(size_t(p.oc), 0.1f), {p.oc});
  const int64_t pad = p.k / 2;
  std::string y = m->op("Conv", {x, w, bias},
                        {attr_ints("pads", {pad, pad, pad, pad}),
                         attr_ints("strides", {p.stride, p.stride}), attr_int("group", p.group)});
  y = m->act(y, p.act);
  const int64_t oh = out_size(p.h, p.k, p.stride), ow = out_size(p.w, p.k, p.stride);
  double out_elems = double(p.oc * oh * ow);
  if (p.pool) {
    y = m->op("MaxPool", {y}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    out_elems = double(p.oc * (oh / 2) * (ow / 2));
  }
  if (p.input == Input::nhwc) y = m->op("Transpose", {y}, {attr_ints("perm", {0, 2, 3, 1})});
  m->b.node("Identity", {y}, {"y"});
  m->b.output("y", DataType::float32);
  r.flops = conv_flops(p, p.h, p.w);
  r.bytes = double(p.ic * p.h * p.w) * (r.u8 ? 1 : 4) + 4.0 * double(p.oc * fan_in + p.oc) +
            4.0 * out_elems;
  return r;
}

bool point_write(const std::filesystem::path &dir, const Point &p) {
  std::filesystem::create_directories(dir);
  Model m;
  const Written r = point_build(p, &m);
  m.b.save((dir / "model.onnx").string());
  size_t count = 1;
  for (int64_t d : r.dims) count *= size_t(d);
  std::mt19937 rng(7);
  std::string err;
  bool ok;
  if (r.u8) {
    std::uniform_int_distribution<int> u(0, 255);
    std::vector<uint8_t> v(count);
    for (uint8_t &x : v) x = uint8_t(u(rng));
    ok = capgraph::npy_write((dir / "input_0.npy").string(), CAPGRAPH_U8, r.dims.data(),
                             int(r.dims.size()), v.data(), v.size(), &err);
  } else {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> v(count);
    for (float &x : v) x = u(rng);
    ok = capgraph::npy_write((dir / "input_0.npy").string(), CAPGRAPH_F32, r.dims.data(),
                             int(r.dims.size()), v.data(), v.size() * sizeof(float), &err);
  }
  if (!ok) {
    std::fprintf(stderr, "shape_sweep_gen: %s\n", err.c_str());
    return false;
  }
  std::string dims;
  for (int64_t d : r.dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  char figures[96];
  std::snprintf(figures, sizeof figures, "\"flops\": %.0f, \"bytes\": %.0f", r.flops, r.bytes);
  std::ofstream((dir / "meta.json").string())
      << "{\n \"model\": \"model.onnx\",\n \"source\": \"tests/tools/shape_sweep_gen\",\n "
      << figures << ",\n \"inputs\": [\n  {\"name\": \"x\", \"file\": \"input_0.npy\", \"dims\": ["
      << dims << "], \"type\": \"" << (r.u8 ? "uint8" : "float32") << "\"}\n ]\n}\n";
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  const std::string set = argc > 2 ? argv[2] : "sweep";
  if (argc < 2 || argc > 3 || (set != "sweep" && set != "quick")) {
    std::fprintf(stderr, "usage: shape_sweep_gen OUT_DIR [sweep|quick]\n");
    return 2;
  }
  try {
    const std::vector<Point> pts = grid_make(set == "quick");
    for (const Point &p : pts)
      if (!point_write(std::filesystem::path(argv[1]) / point_name(p), p)) return 1;
    std::printf("shape_sweep_gen: %zu points in %s\n", pts.size(), argv[1]);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "shape_sweep_gen: %s\n", e.what());
    return 1;
  }
  return 0;
}
