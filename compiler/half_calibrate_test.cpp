// float16 storage's calibration (half_calibrate.h): the fast float16 rounding it applies, the
// generated inputs (half_calibrate_inputs.h), and that the search keeps float32 only the tensors
// that spoil an output, on the worst of the inputs.
#include "half_calibrate.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "compile.h"
#include "half_calibrate_inputs.h"
#include "onnx_writer.h"
#include "schedule/interpret.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

std::string model_path(const ModelBuilder &b, const std::string &name) {
  const std::string dir = std::filesystem::temp_directory_path().string() +
                          "/capgraph_half_calibrate_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  b.save(dir + "/" + name);
  return dir + "/" + name;
}

struct cleanup {
  ~cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::temp_directory_path().string() +
                                    "/capgraph_half_calibrate_test_" + std::to_string(getpid()),
                                ec);
  }
} cleanup_at_exit;

float of_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// The kept tensors' names (each entry is "NAME (reason)").
std::set<std::string> kept_names(const std::vector<std::string> &kept) {
  std::set<std::string> s;
  for (const std::string &k : kept) s.insert(k.substr(0, k.find(" (")));
  return s;
}

std::vector<double> values(DType t, const std::vector<uint8_t> &bytes, int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; i++) v.push_back(element_load(t, bytes.data(), i));
  return v;
}

// The correlation of horizontally neighbouring values of an h x w image (channel planes).
double neighbour_correlation(const std::vector<double> &v, int64_t w) {
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0;
  for (size_t i = 0; i + 1 < v.size(); i++) {
    if ((int64_t)((i + 1) % (size_t)w) == 0) continue;
    const double a = v[i], b = v[i + 1];
    sx += a, sy += b, sxx += a * a, syy += b * b, sxy += a * b, n++;
  }
  const double cov = sxy / n - sx / n * sy / n;
  return cov / std::sqrt((sxx / n - sx / n * sx / n) * (syy / n - sy / n * sy / n));
}

}  // namespace

TEST_CASE("float_round_half rounds as half_from_double does, to nearest even") {
  // A sweep over the float32 bit patterns (every 4099th: both signs, every exponent) and the
  // edges: float16's largest value, the midpoint past it, the smallest normal and subnormals.
  size_t checked = 0;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    const float f = of_bits((uint32_t)u), want = half_to_float(half_from_double(f));
    const float got = float_round_half(f);
    if (std::isnan(want)) {
      CHECK(std::isnan(got));
      continue;
    }
    if (bits_of(got) != bits_of(want)) {
      FAIL_CHECK("float_round_half(" << f << " = 0x" << std::hex << u << ") = " << got
                                     << ", half_from_double: " << want);
      break;
    }
    checked++;
  }
  CHECK(checked > 1000000);
  for (float f : {65504.0f, 65519.996f, 65520.0f, 1e9f, 6.1035156e-05f, 6.1e-05f, 5.9604645e-08f,
                  2.9802322e-08f, 2.9802326e-08f, 8.940697e-08f, 1.0009766f, 1.0004883f, 1.0014648f,
                  -3.1415927f, 0.0f, -0.0f, INFINITY, -INFINITY}) {
    INFO("value " << f);
    CHECK(bits_of(float_round_half(f)) == bits_of(half_to_float(half_from_double(f))));
  }
  CHECK(float_round_half(65519.996f) == 65504.0f);
  CHECK(std::isinf(float_round_half(65520.0f)));
  CHECK(float_round_half(1.0004883f) == 1.0f);  // halfway between 1 and 1 + 2^-10: even
}

TEST_CASE("generated calibration inputs: image-like, in a normalised image's range, fixed") {
  const Shape shape = {1, 3, 64, 96};
  const int64_t n = 3 * 64 * 96;
  for (CalibrationKind k : kCalibrationKinds) {
    INFO("kind " << calibration_kind_name(k));
    std::vector<uint8_t> f((size_t)n * 4), again((size_t)n * 4), u8((size_t)n);
    calibration_input_fill(k, DType::f32, shape, 7, f);
    calibration_input_fill(k, DType::f32, shape, 7, again);
    CHECK(f == again);  // the same compile gives the same capture
    calibration_input_fill(k, DType::u8, shape, 7, u8);
    const std::vector<double> v = values(DType::f32, f, n), b = values(DType::u8, u8, n);
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const auto [blo, bhi] = std::minmax_element(b.begin(), b.end());
    // uint8: the whole 0..255 range, whatever the kind.
    CHECK(*blo == 0);
    CHECK(*bhi == 255);
    const double corr = neighbour_correlation(v, 96);
    if (k == CalibrationKind::noise) {
      CHECK(std::fabs(corr) < 0.1);  // independent values
      CHECK(*hi > 3);                // a normal draw's tail
    } else {
      // An image normalised as ImageNet's are: (p - mean) / std with p in [0, 1].
      CHECK(*lo >= (0 - 0.485) / 0.229 - 1e-5);
      CHECK(*hi <= (1 - 0.406) / 0.225 + 1e-5);
      CHECK(*hi - *lo > 3);
      CHECK(corr > 0.5);  // spatially correlated
    }
  }
  // The kinds differ, and so do two inputs of one model (another seed).
  std::vector<uint8_t> a((size_t)n * 4), b((size_t)n * 4);
  calibration_input_fill(CalibrationKind::smooth, DType::f32, shape, 7, a);
  calibration_input_fill(CalibrationKind::page, DType::f32, shape, 7, b);
  CHECK(a != b);
  calibration_input_fill(CalibrationKind::smooth, DType::f32, shape, 8, b);
  CHECK(a != b);
}

namespace {

// x 1x4x16x16 -> six 1x1 convolutions in a chain (harmless in float16: each rounding is ~2^-12 of
// the values), with two tensors float16 spoils between them: b = x + 2048 (float16's step there
// is 2: x's fraction is lost) and e = x + 4096 (step 4), each read twice so both stay buffers:
// yb = b - 2048, yb2 = (b - 2048) * 2, ye = e - 4096, ye2 = (e - 4096) * 2, y = the chain's end.
ModelBuilder two_spoilers_model() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 4, 16, 16});
  for (const char *s : {"shift", "shift2"})
    b.initializer(s, std::vector<float>{s[5] ? 4096.0f : 2048.0f}, {1});
  b.initializer("two", std::vector<float>{2.0f}, {1});
  std::string c = "x";
  auto conv = [&](int i) {
    std::vector<float> w(16);
    for (int o = 0; o < 4; o++)
      for (int k = 0; k < 4; k++) w[(size_t)(o * 4 + k)] = o == k ? 0.9f : 0.05f * (float)(o - k);
    b.initializer("w" + std::to_string(i), w, {4, 4, 1, 1});
    const std::string y = "c" + std::to_string(i);
    b.node("Conv", {c, "w" + std::to_string(i)}, {y}).name = y;
    c = y;
  };
  conv(1), conv(2), conv(3);
  b.node("Add", {"x", "shift"}, {"b"}).name = "b";
  b.node("Sub", {"b", "shift"}, {"yb"}).name = "yb";
  b.node("Sub", {"b", "shift"}, {"db"}).name = "db";
  b.node("Mul", {"db", "two"}, {"yb2"}).name = "yb2";
  conv(4);
  b.node("Add", {"x", "shift2"}, {"e"}).name = "e";
  b.node("Sub", {"e", "shift2"}, {"ye"}).name = "ye";
  b.node("Sub", {"e", "shift2"}, {"de"}).name = "de";
  b.node("Mul", {"de", "two"}, {"ye2"}).name = "ye2";
  conv(5), conv(6);
  for (const char *o : {"yb", "yb2", "ye", "ye2", "c6"})
    b.output(o, DataType::float32, {1, 4, 16, 16});
  return b;
}

}  // namespace

TEST_CASE("fp16 calibration: only the tensors that spoil an output stay float32") {
  // A search that keeps the longest float16 prefix in model order would keep b and everything
  // after it (c4, e, c5, c6 and their weights); the harm of each is measured instead.
  const std::string path = model_path(two_spoilers_model(), "two_spoilers.onnx");
  CompileOptions o;
  o.precision = "fp16";
  CompileReport r;
  compile_schedule(path, o, &r);
  std::string all;
  for (const std::string &s : r.kept_fp32) all += s + "\n";
  CAPTURE(all);
  CHECK(kept_names(r.kept_fp32) == std::set<std::string>{"b", "e"});
  CHECK(all.find("b (float16 here puts output 'yb") != std::string::npos);
  CHECK(all.find("over it with only the tensors already chosen float16 beside it") !=
        std::string::npos);
  CHECK(r.calibration_error_all_half > 0.1);
  CHECK(r.calibration_error <= 1e-2);
  CHECK(r.calibration_inputs == 4);
  CHECK(r.half_buffers >= 10);                      // the chain's six activations, its weights
  CHECK(r.calibration_runs <= 4 + 4 + 1 + 48 + 3);  // references, every candidate, one search
}

TEST_CASE("fp16 calibration: a value near float16's largest on any generated input is kept") {
  // a = x * 12000: the image kinds (at most 2.64 after normalisation) reach 31700, under the
  // factor-2 margin (32752); the normal draw's tail (past 3.5 over 4096 values) passes it.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 4, 32, 32});
  b.initializer("big", std::vector<float>{12000.0f}, {1});
  b.initializer("small", std::vector<float>{1e-4f}, {1});
  b.initializer("one", std::vector<float>{1.0f}, {1});
  b.node("Mul", {"x", "big"}, {"a"}).name = "a";
  b.node("Mul", {"a", "small"}, {"y1"}).name = "y1";
  b.node("Add", {"a", "one"}, {"y2"}).name = "y2";
  for (const char *o : {"y1", "y2"}) b.output(o, DataType::float32, {1, 4, 32, 32});
  CompileOptions o;
  o.precision = "fp16";
  CompileReport r;
  compile_schedule(model_path(b, "near_max.onnx"), o, &r);
  std::string all;
  for (const std::string &s : r.kept_fp32) all += s + "\n";
  CAPTURE(all);
  CHECK(all.find("a (reaches ") != std::string::npos);
  CHECK(all.find("on the generated input 'noise', near or past float16's largest value") !=
        std::string::npos);
}
