// Half-precision storage: which buffers become float16 and which stay float32 (named, with the
// reason), that inputs and outputs keep their types, and that the converted program computes what
// the float32 one does within float16's rounding.
#include "schedule/half_storage.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "compile.h"
#include "onnx_writer.h"
#include "schedule/interpret.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

std::string model_path(const ModelBuilder &b, const std::string &name) {
  const std::string dir = std::filesystem::temp_directory_path().string() +
                          "/capgraph_half_storage_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  b.save(dir + "/" + name);
  return dir + "/" + name;
}

struct cleanup {
  ~cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::temp_directory_path().string() +
                                    "/capgraph_half_storage_test_" + std::to_string(getpid()),
                                ec);
  }
} cleanup_at_exit;

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i * 5 % 9) - 4);
  return v;
}

// x 1x2x6x6 -> Conv(w, b) -> c -> Relu -> Mul(by `scale`, a 3-channel constant) -> ReduceSum
// over channels (keepdims) -> s, read twice (s + 1, s * 2: s stays a buffer); Exp(c) -> e, also
// read twice. `big` is the scale's largest value.
ModelBuilder model(float big) {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 2, 6, 6});
  b.initializer("w", ramp(54, 0.1f), {3, 2, 3, 3});
  b.initializer("b", std::vector<float>{0.1f, -0.2f, 0.3f}, {3});
  b.initializer("scale", std::vector<float>{0.5f, big, -2.0f}, {1, 3, 1, 1});
  b.initializer("axes", std::vector<int64_t>{1}, {1});
  b.initializer("one", std::vector<float>{1.0f}, {1});
  b.initializer("two", std::vector<float>{2.0f}, {1});
  b.node("Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv";
  b.node("Relu", {"c"}, {"r"}).name = "relu";
  b.node("Mul", {"r", "scale"}, {"m"}).name = "mul";
  b.node("ReduceSum", {"m", "axes"}, {"s"}).name = "sum";
  b.node("Add", {"s", "one"}, {"y1"}).name = "y1";
  b.node("Mul", {"s", "two"}, {"y2"}).name = "y2";
  b.node("Exp", {"c"}, {"e"}).name = "exp";
  b.node("Add", {"e", "one"}, {"e1"}).name = "e1";
  b.node("Mul", {"e", "two"}, {"e2"}).name = "e2";
  for (const char *o : {"y1", "y2"}) b.output(o, DataType::float32, {1, 1, 6, 6});
  for (const char *o : {"e1", "e2"}) b.output(o, DataType::float32, {1, 3, 6, 6});
  return b;
}

Program schedule(const std::string &path, const char *precision) {
  CompileOptions o;
  o.precision = precision;
  return compile_schedule(path, o, nullptr);
}

// Every kernel interpreted; the outputs as doubles. Inputs hold (j % 7) - 3.5.
std::vector<std::vector<double>> outputs_of(const Program &p) {
  std::vector<std::vector<uint8_t>> host(p.buffers.size());
  std::vector<uint8_t *> ptrs;
  for (size_t i = 0; i < p.buffers.size(); i++) {
    const Buffer &b = p.buffers[i];
    host[i] = b.kind == Buffer::Kind::constant
                  ? *b.data.bytes
                  : std::vector<uint8_t>(b.numel * dtype_size(b.dtype), 0);
    if (b.kind == Buffer::Kind::input)
      for (int64_t j = 0; j < b.numel; j++)
        element_store(b.dtype, host[i].data(), j, (double)(j % 7) - 3.5);
    ptrs.push_back(host[i].data());
  }
  for (const Kernel &k : p.kernels) {
    kernel_check(k, p);
    kernel_interpret(k, p, ptrs);
  }
  std::vector<std::vector<double>> r;
  for (const auto &o : p.outputs) {
    const Buffer &b = p.buffers[o.buffer];
    std::vector<double> v;
    for (int64_t j = 0; j < b.numel; j++)
      v.push_back(element_load(b.dtype, host[o.buffer].data(), j));
    r.push_back(v);
  }
  return r;
}

bool kept(const std::vector<std::string> &list, const std::string &prefix) {
  for (const std::string &s : list)
    if (s.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

TEST_CASE("fp16 storage: weights and activations halve, inputs and outputs keep their types") {
  const std::string path = model_path(model(3.0f), "small.onnx");
  Program p = schedule(path, "fp32");
  const std::vector<std::vector<double>> want = outputs_of(p);
  Program h = schedule(path, "fp32");
  const HalfStorageReport r = program_store_half(h);
  CHECK(r.buffers > 0);
  CHECK(r.bytes_saved > 0);
  int half_weights = 0, half_intermediates = 0;
  for (const Buffer &b : h.buffers) {
    if (b.kind == Buffer::Kind::input || b.kind == Buffer::Kind::output)
      CHECK(b.dtype == DType::f32);  // the API boundary keeps the ONNX types
    if (b.dtype != DType::f16) continue;
    if (b.kind == Buffer::Kind::constant) {
      half_weights++;
      CHECK(b.data.dtype == DType::f16);
      CHECK(b.data.bytes->size() == size_t(2 * b.numel));
    } else {
      half_intermediates++;
    }
  }
  CHECK(half_weights >= 2);  // the convolution's weights and bias at least
  CHECK(half_intermediates >= 1);
  // Every load of a float16 buffer reads float16 and every kernel still computes in float32.
  for (const Kernel &k : h.kernels) {
    kernel_check(k, h);
    for (const Expr &e : k.exprs)
      if (e.op == Op::load) CHECK(e.dtype == h.buffers[k.loads[e.access].buffer].dtype);
    CHECK(k.store_dtype == h.buffers[k.store.buffer].dtype);
    if (k.reduce != Reduce::none) CHECK(k.acc_dtype == DType::f32);
  }
  // The channel sum (a reduction that is no product) and exp's output are named and kept.
  std::string all;
  for (const std::string &s : r.kept) all += s + "\n";
  CAPTURE(all);
  CHECK(kept(r.kept, "s (written by a sum or product reduction that is not a product"));
  CHECK(kept(r.kept, "e (written by exp"));
  for (const Buffer &b : h.buffers)
    if (b.name == "s" || b.name == "e")
      CHECK(b.dtype == DType::f32);
    else if (b.name == "c")
      CHECK(b.dtype == DType::f16);
  const std::vector<std::vector<double>> got = outputs_of(h);
  REQUIRE(got.size() == want.size());
  for (size_t o = 0; o < got.size(); o++) {
    double max_ref = 0, max_diff = 0;
    for (size_t j = 0; j < got[o].size(); j++) {
      max_ref = std::max(max_ref, std::fabs(want[o][j]));
      max_diff = std::max(max_diff, std::fabs(got[o][j] - want[o][j]));
    }
    CAPTURE(o);
    CHECK(max_diff > 0);                       // float16 storage did round something
    CHECK(max_diff <= 4e-3 * max_ref + 1e-5);  // a few float16 ulps of the largest output
  }
}

TEST_CASE("fp16 storage: a weight past float16's range and exp stay float32, named") {
  const std::string path = model_path(model(1e6f), "big.onnx");
  Program h = schedule(path, "fp32");
  const HalfStorageReport r = program_store_half(h);
  std::string all;
  for (const std::string &s : r.kept) all += s + "\n";
  CAPTURE(all);
  CHECK(kept(r.kept, "scale (holds 1e+06, past float16's largest value 65504)"));
  for (const Buffer &b : h.buffers)
    if (b.name == "scale") CHECK(b.dtype == DType::f32);
  // The float32 path is the compiled one untouched: nothing of it is float16.
  Program p = schedule(path, "fp32");
  for (const Buffer &b : p.buffers) CHECK(b.dtype != DType::f16);
}

TEST_CASE("fp16 storage: the default follows the target, and a bad --precision is refused") {
  const std::string path = model_path(model(3.0f), "default.onnx");
  CompileReport r;
  CompileOptions o;  // cpu: float32 unless asked
  compile_schedule(path, o, &r);
  CHECK(r.precision == "fp32");
  o.precision = "fp16";
  Program h = compile_schedule(path, o, &r);
  CHECK(r.precision == "fp16");
  CHECK(r.half_buffers > 0);
  bool any = false;
  for (const Buffer &b : h.buffers) any |= b.dtype == DType::f16;
  CHECK(any);
  o.precision = "fp8";
  CHECK_THROWS_WITH_AS(compile_schedule(path, o, &r),
                       doctest::Contains("--precision must be fp16 or fp32"), std::exception);
}

namespace {

// x 1x4x8x8 -> a = x * 20000 (past float16's range for |x| > 3.3), b = x + 2048 (float16's step
// there is 2: x's fraction is lost); each read twice, so both stay buffers: y1 = a * 5e-5 + 1,
// y2 = a * 1e-4, y3 = b - 2048, y4 = (b - 2048) * 2.
ModelBuilder calibration_model() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 4, 8, 8});
  b.initializer("big", std::vector<float>{20000.0f}, {1});
  b.initializer("shift", std::vector<float>{2048.0f}, {1});
  b.initializer("small", std::vector<float>{5e-5f}, {1});
  b.initializer("small2", std::vector<float>{1e-4f}, {1});
  b.initializer("one", std::vector<float>{1.0f}, {1});
  b.initializer("two", std::vector<float>{2.0f}, {1});
  b.node("Mul", {"x", "big"}, {"a"}).name = "scale_up";
  b.node("Add", {"x", "shift"}, {"b"}).name = "shift_up";
  b.node("Mul", {"a", "small"}, {"a1"}).name = "a1";
  b.node("Add", {"a1", "one"}, {"y1"}).name = "y1";
  b.node("Mul", {"a", "small2"}, {"y2"}).name = "y2";
  b.node("Sub", {"b", "shift"}, {"y3"}).name = "y3";
  b.node("Sub", {"b", "shift"}, {"d"}).name = "d";
  b.node("Mul", {"d", "two"}, {"y4"}).name = "y4";
  for (const char *o : {"y1", "y2", "y3", "y4"}) b.output(o, DataType::float32, {1, 4, 8, 8});
  return b;
}

}  // namespace

TEST_CASE("fp16 calibration: a tensor float16 overflows and one it spoils stay float32, named") {
  const std::string path = model_path(calibration_model(), "calibrate.onnx");
  const std::vector<std::vector<double>> want = outputs_of(schedule(path, "fp32"));
  CompileReport r;
  CompileOptions o;
  o.precision = "fp16";
  Program h = compile_schedule(path, o, &r);
  std::string all;
  for (const std::string &s : r.kept_fp32) all += s + "\n";
  CAPTURE(all);
  // The rules alone (no reduction, no exp, weights in range) would store both as float16.
  Program rules = schedule(path, "fp32");
  const HalfPlan plan = half_plan(rules);
  for (size_t i = 0; i < rules.buffers.size(); i++)
    if (rules.buffers[i].name == "a" || rules.buffers[i].name == "b") CHECK(plan.half[i]);
  CHECK(kept(r.kept_fp32, "a (reaches "));
  CHECK(all.find(", near or past float16's largest value 65504") != std::string::npos);
  CHECK(kept(r.kept_fp32, "b (float16 here puts output 'y"));
  CHECK(r.kept_fp32.size() == 2);  // b alone is to blame: d, a1 and the weights stay float16
  CHECK(r.calibration_error_all_half > 0.1);  // b in float16 loses x's fraction
  CHECK(r.calibration_error <= 1e-2);
  CHECK(r.calibration_runs >= 2);
  for (const Buffer &b : h.buffers)
    if (b.name == "a" || b.name == "b") CHECK(b.dtype == DType::f32);
  // The capture computes what float32 does, on another input than the calibration's.
  const std::vector<std::vector<double>> got = outputs_of(h);
  REQUIRE(got.size() == want.size());
  for (size_t oi = 0; oi < got.size(); oi++)
    for (size_t j = 0; j < got[oi].size(); j++) CHECK(got[oi][j] == doctest::Approx(want[oi][j]));
  // The same compile again: the same choice (the generated input is fixed).
  CompileReport again;
  compile_schedule(path, o, &again);
  CHECK(again.kept_fp32 == r.kept_fp32);
}

TEST_CASE("fp16 calibration: the model's own input decides (--calibrate)") {
  const std::string path = model_path(calibration_model(), "calibrate_own.onnx");
  CompileOptions o;
  o.precision = "fp16";
  // x = 0.01 everywhere: a reaches 200, well inside float16; b still loses x.
  o.calibration_inputs["x"] = Tensor::from_f32({1, 4, 8, 8}, std::vector<float>(256, 0.01f));
  CompileReport r;
  compile_schedule(path, o, &r);
  std::string all;
  for (const std::string &s : r.kept_fp32) all += s + "\n";
  CAPTURE(all);
  CHECK(!kept(r.kept_fp32, "a (reaches "));
  CHECK(kept(r.kept_fp32, "b ("));
  // A file of the wrong shape is refused naming the input.
  o.calibration_inputs["x"] = Tensor::from_f32({1, 4}, std::vector<float>(4, 0.01f));
  CHECK_THROWS_WITH_AS(
      compile_schedule(path, o, &r),
      doctest::Contains(
          "--calibrate x: the model's input is float32 1x4x8x8, the file holds float32 1x4"),
      std::exception);
}
