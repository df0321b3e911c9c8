// Round trips: a model built with ModelBuilder, written, and read back with onnx::model_parse must
// come back field by field, in every WireStyle. And, when onnxruntime-node is installed
// (scripts/fetch_test_deps.sh), ONNX Runtime must run the same bytes and give the expected numbers:
// the reader and the writer could share a mistake, ONNX Runtime does not.
#include "onnx_writer.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "error.h"

using namespace capgraph;
using namespace capgraph::model_gen;
using onnx::Attribute;

namespace {

const WireStyle all_styles[] = {WireStyle::standard, WireStyle::typed_packed,
                                WireStyle::typed_unpacked};

const char *style_name(WireStyle s) {
  return s == WireStyle::standard       ? "standard"
         : s == WireStyle::typed_packed ? "typed_packed"
                                        : "typed_unpacked";
}

onnx::Model round_trip(const ModelBuilder &b, WireStyle style) {
  std::vector<uint8_t> bytes = b.serialize(style);
  return onnx::model_parse(bytes.data(), bytes.size(), "round_trip.onnx");
}

void tensor_check_same(const onnx::Tensor &got, const onnx::Tensor &want) {
  INFO("tensor '", want.name, "'");
  CHECK(got.name == want.name);
  CHECK(got.dtype == want.dtype);
  CHECK(got.dims == want.dims);
  CHECK(got.data == want.data);
  CHECK_FALSE(got.external);
}

void value_info_check_same(const onnx::ValueInfo &got, const onnx::ValueInfo &want) {
  INFO("value '", want.name, "'");
  CHECK(got.name == want.name);
  CHECK(got.dtype == want.dtype);
  REQUIRE(got.has_shape == want.has_shape);
  REQUIRE(got.dims.size() == want.dims.size());
  for (size_t k = 0; k < want.dims.size(); ++k) {
    CHECK(got.dims[k].value == want.dims[k].value);
    CHECK(got.dims[k].param == want.dims[k].param);
  }
}

void attribute_check_same(const Attribute &got, const Attribute &want) {
  INFO("attribute '", want.name, "'");
  CHECK(got.name == want.name);
  REQUIRE(got.kind == want.kind);
  // Bitwise for floats, so -0.0 and NaN payloads count too.
  CHECK(std::memcmp(&got.f, &want.f, sizeof(float)) == 0);
  CHECK(got.i == want.i);
  CHECK(got.s == want.s);
  auto same_bits = [](float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; };
  CHECK(std::equal(got.floats.begin(), got.floats.end(), want.floats.begin(), want.floats.end(),
                   same_bits));
  CHECK(got.ints == want.ints);
  CHECK(got.strings == want.strings);
  if (want.kind == Attribute::Kind::t) tensor_check_same(got.t, want.t);
  REQUIRE(got.tensors.size() == want.tensors.size());
  for (size_t k = 0; k < want.tensors.size(); ++k)
    tensor_check_same(got.tensors[k], want.tensors[k]);
}

void model_check_same(const onnx::Model &got, const onnx::Model &want) {
  CHECK(got.ir_version == want.ir_version);
  CHECK(got.producer_name == want.producer_name);
  REQUIRE(got.opsets.size() == want.opsets.size());
  for (size_t k = 0; k < want.opsets.size(); ++k) {
    CHECK(got.opsets[k].domain == want.opsets[k].domain);
    CHECK(got.opsets[k].version == want.opsets[k].version);
  }
  const onnx::Graph &g = got.graph, &w = want.graph;
  CHECK(g.name == w.name);
  REQUIRE(g.nodes.size() == w.nodes.size());
  for (size_t k = 0; k < w.nodes.size(); ++k) {
    INFO("node ", k);
    CHECK(g.nodes[k].op_type == w.nodes[k].op_type);
    CHECK(g.nodes[k].domain == w.nodes[k].domain);
    CHECK(g.nodes[k].inputs == w.nodes[k].inputs);
    CHECK(g.nodes[k].outputs == w.nodes[k].outputs);
    // Unnamed nodes come back named "<op_type>_<index>" (the reader's rule).
    CHECK(g.nodes[k].name == (w.nodes[k].name.empty() ? w.nodes[k].op_type + "_" + std::to_string(k)
                                                      : w.nodes[k].name));
    REQUIRE(g.nodes[k].attributes.size() == w.nodes[k].attributes.size());
    for (size_t a = 0; a < w.nodes[k].attributes.size(); ++a)
      attribute_check_same(g.nodes[k].attributes[a], w.nodes[k].attributes[a]);
  }
  REQUIRE(g.initializers.size() == w.initializers.size());
  for (size_t k = 0; k < w.initializers.size(); ++k)
    tensor_check_same(g.initializers[k], w.initializers[k]);
  REQUIRE(g.inputs.size() == w.inputs.size());
  for (size_t k = 0; k < w.inputs.size(); ++k) value_info_check_same(g.inputs[k], w.inputs[k]);
  REQUIRE(g.outputs.size() == w.outputs.size());
  for (size_t k = 0; k < w.outputs.size(); ++k) value_info_check_same(g.outputs[k], w.outputs[k]);
}

}  // namespace

TEST_CASE("a Conv+Relu model round-trips in every wire style") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 8, 8});
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t k = 0; k < w.size(); ++k) w[k] = float(k) * 0.25f - 3.0f;
  b.initializer("w", w, {4, 3, 3, 3});
  b.initializer("b", std::vector<float>{0.5f, -0.5f, 1.0f, -1.0f}, {4});
  b.node("Conv", {"x", "w", "b"}, {"y"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {1, 1}), attr_int("group", 1)})
      .name = "conv1";
  b.node("Relu", {"y"}, {"z"});  // left unnamed on purpose
  b.output("z", DataType::float32);

  for (WireStyle style : all_styles) {
    INFO("style ", style_name(style));
    onnx::Model m = round_trip(b, style);
    model_check_same(m, b.model());
    CHECK(m.default_opset() == 13);
    CHECK(m.graph.nodes[1].name == "Relu_1");
    CHECK_FALSE(m.graph.outputs[0].has_shape);  // written with no shape at all
    REQUIRE(m.graph.nodes[0].attr("pads") != nullptr);
    CHECK(m.graph.nodes[0].attr("pads")->ints == std::vector<int64_t>{1, 1, 1, 1});
  }
}

TEST_CASE("tensors of every fixed-size data type round-trip, edge values included") {
  ModelBuilder b(13);
  b.initializer(tensor_make<int8_t>("i8", DataType::int8, {-128, -1, 0, 127}, {4}));
  b.initializer(tensor_make<uint8_t>("u8", DataType::uint8, {0, 1, 200, 255}, {2, 2}));
  b.initializer(tensor_make<int16_t>("i16", DataType::int16, {-32768, -2, 32767}, {3}));
  b.initializer(tensor_make<uint16_t>("u16", DataType::uint16, {0, 65535}, {2}));
  b.initializer(tensor_make<int32_t>("i32", DataType::int32,
                                     {std::numeric_limits<int32_t>::min(), -1, 7}, {3}));
  b.initializer(tensor_make<int64_t>(
      "i64", DataType::int64,
      {std::numeric_limits<int64_t>::min(), -1, std::numeric_limits<int64_t>::max()}, {3}));
  b.initializer(tensor_make<uint32_t>("u32", DataType::uint32, {0, 0xffffffffu}, {2}));
  b.initializer(tensor_make<uint64_t>("u64", DataType::uint64, {0, ~uint64_t(0)}, {2}));
  b.initializer(tensor_make<uint8_t>("bool", DataType::boolean, {1, 0, 1}, {3}));
  b.initializer(tensor_make<uint16_t>("f16", DataType::float16, {0x3c00, 0xfc00, 0x8000},
                                      {3}));  // 1, -inf, -0
  b.initializer(
      tensor_make<uint16_t>("bf16", DataType::bfloat16, {0x3f80, 0xffc1}, {2}));  // 1, a NaN
  b.initializer(
      tensor_make<float>("f32", DataType::float32, {-0.0f, std::nanf("7"), 1e-45f, -3.5f}, {4}));
  b.initializer(tensor_make<double>("f64", DataType::float64, {-0.0, 1e300, std::nan("9")}, {3}));
  b.initializer(tensor_make<float>("scalar", DataType::float32, {2.5f}, {}));
  b.node("Identity", {"f32"}, {"out"});
  b.output("out", DataType::float32, {4});

  for (WireStyle style : all_styles) {
    INFO("style ", style_name(style));
    model_check_same(round_trip(b, style), b.model());
  }
  // The typed styles really are different bytes from raw_data (else this test proves little).
  CHECK(b.serialize(WireStyle::standard) != b.serialize(WireStyle::typed_packed));
  CHECK(b.serialize(WireStyle::typed_packed) != b.serialize(WireStyle::typed_unpacked));
}

TEST_CASE("empty tensors round-trip: PaddleOCR exports have Constant nodes holding them") {
  ModelBuilder b(11);
  b.initializer(tensor_make<float>("empty_1d", DataType::float32, {}, {0}));
  b.initializer(tensor_make<int64_t>("empty_2d", DataType::int64, {}, {3, 0}));
  b.node("Constant", {}, {"roi"},
         {attr_tensor("value", tensor_make<float>("", DataType::float32, {}, {0}))});
  b.node("Constant", {}, {"scales"},
         {attr_tensor("value", tensor_make<float>("", DataType::float32, {1, 1, 2, 2}, {4}))});
  b.input("x", DataType::float32, {1, 1, 4, 4});
  b.node("Resize", {"x", "roi", "scales"}, {"y"}, {attr_string("mode", "nearest")});
  b.output("y", DataType::float32, {1, 1, 8, 8});

  for (WireStyle style : all_styles) {
    INFO("style ", style_name(style));
    onnx::Model m = round_trip(b, style);
    model_check_same(m, b.model());
    CHECK(m.graph.nodes[0].attr("value")->t.data.empty());
    CHECK(m.graph.nodes[1].attr("value")->t.data.size() == 16);
  }
}

TEST_CASE("attributes of every kind and symbolic or unknown dims round-trip") {
  ModelBuilder b(17);
  onnx::ValueInfo x{"x", DataType::float32, true, {{-1, "batch"}, {3, ""}, {-1, ""}}};
  b.input(x);
  b.node("Custom", {"x", ""}, {"y"},
         {attr_float("alpha", -0.0f), attr_floats("scales", {1.5f, -2.0f, 1e-30f}),
          attr_int("axis", -3), attr_ints("perm", {0, -1, std::numeric_limits<int64_t>::max()}),
          attr_string("mode", std::string("a\0b", 3)), attr_strings("names", {"", "two"}),
          attr_tensor("value", tensor_make<int32_t>("", DataType::int32, {-5}, {1})),
          attr_tensors("pair", {tensor_make<int64_t>("t0", DataType::int64, {1, 2}, {2}),
                                tensor_make<uint8_t>("t1", DataType::uint8, {9}, {1, 1})})})
      .domain = "com.example";
  b.model().opsets.push_back({"com.example", 1});
  b.output(onnx::ValueInfo{"y", DataType::float32, true, {{-1, "batch"}, {-1, ""}}});

  for (WireStyle style : all_styles) {
    INFO("style ", style_name(style));
    onnx::Model m = round_trip(b, style);
    model_check_same(m, b.model());
    CHECK(m.graph.nodes[0].inputs.size() == 2);  // the omitted optional input "" is kept
    CHECK(m.default_opset() == 17);
  }
}

TEST_CASE("save writes a file model_load reads; an unwritable path is an error naming it") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2});
  b.node("Neg", {"x"}, {"y"});
  b.output("y", DataType::float32, {2});
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / "capgraph_onnx_writer_test.onnx";
  b.save(path.string());
  model_check_same(onnx::model_load(path.string()), b.model());
  std::filesystem::remove(path);

  const std::string bad = "/nonexistent-dir/x.onnx";
  CHECK_THROWS_WITH_AS(b.save(bad), doctest::Contains(bad.c_str()), Error);
}

// ---- ONNX Runtime runs what the writer wrote ---------------------------------------------------

namespace {

// Where onnxruntime-node is, as tests/ort/ort_run.mjs looks for it; empty when not installed.
std::string ort_dir_find() {
  const char *env = std::getenv("ORT_DIR");
  std::filesystem::path dir = env ? env : CAPGRAPH_REPO_DIR "/build/deps/ort";
  return std::filesystem::exists(dir / "node_modules/onnxruntime-node") ? dir.string() : "";
}

// float32 data of a .npy file ONNX Runtime wrote (version 1 header, little-endian, C order).
std::vector<float> npy_float32_read(const std::filesystem::path &path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> b((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  REQUIRE(b.size() >= 10);
  size_t header_size = uint8_t(b[8]) | size_t(uint8_t(b[9])) << 8;
  REQUIRE(std::string(b.data() + 10, header_size).find("'<f4'") != std::string::npos);
  std::vector<float> values((b.size() - 10 - header_size) / 4);
  std::memcpy(values.data(), b.data() + 10 + header_size, values.size() * 4);
  return values;
}

void npy_float32_write(const std::filesystem::path &path, const std::vector<float> &values,
                       const std::string &shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  header += std::string(63 - (10 + header.size()) % 64, ' ') + "\n";
  std::ofstream file(path, std::ios::binary);
  file.write("\x93NUMPY\x01\x00", 8);
  file.put(char(header.size() & 0xff)).put(char(header.size() >> 8));
  file << header;
  file.write(reinterpret_cast<const char *>(values.data()), std::streamsize(values.size() * 4));
}

// Runs tests/ort/ort_run.mjs; returns the output folder.
std::filesystem::path ort_run(const std::string &ort_dir, const ModelBuilder &b, WireStyle style,
                              const std::string &inputs) {
  auto dir = std::filesystem::temp_directory_path() /
             ("capgraph_writer_ort_" + std::to_string(getpid()) + "_" + style_name(style));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  b.save((dir / "model.onnx").string(), style);
  std::string command = "cd '" + dir.string() + "' && ORT_DIR='" + ort_dir +
                        "' node '" CAPGRAPH_REPO_DIR "/tests/ort/ort_run.mjs' model.onnx out " +
                        inputs + " > log.txt 2>&1";
  int rc = std::system(command.c_str());
  std::ifstream log(dir / "log.txt");
  INFO("ort_run.mjs said: ",
       std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>()));
  REQUIRE(rc == 0);
  return dir / "out";
}

}  // namespace

TEST_CASE("ONNX Runtime runs the writer's models, in every wire style, with the expected numbers") {
  std::string ort_dir = ort_dir_find();
  if (ort_dir.empty() || std::system("node --version > /dev/null 2>&1") != 0) {
    MESSAGE(
        "skipped: no node, or no onnxruntime-node in $ORT_DIR or build/deps/ort (run "
        "scripts/fetch_test_deps.sh)");
    return;
  }

  // Conv 3x3 (pads 1, bias) + Relu on a 2x4x5 image, checked against a direct computation.
  const int C = 2, O = 3, H = 4, W = 5;
  std::vector<float> x(C * H * W), w(O * C * 9), bias{0.5f, -1.0f, 0.25f}, want(O * H * W);
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(int(k * 7 % 11) - 5) * 0.5f;
  for (size_t k = 0; k < w.size(); ++k) w[k] = float(int(k * 5 % 9) - 4) * 0.125f;
  for (int o = 0; o < O; ++o)
    for (int i = 0; i < H; ++i)
      for (int j = 0; j < W; ++j) {
        float acc = bias[o];
        for (int c = 0; c < C; ++c)
          for (int di = 0; di < 3; ++di)
            for (int dj = 0; dj < 3; ++dj) {
              int ii = i + di - 1, jj = j + dj - 1;
              if (ii >= 0 && jj >= 0 && ii < H && jj < W)
                acc += x[(c * H + ii) * W + jj] * w[((o * C + c) * 3 + di) * 3 + dj];
            }
        want[(o * H + i) * W + j] = std::max(acc, 0.0f);
      }
  ModelBuilder conv(13);
  conv.input("x", DataType::float32, {1, C, H, W});
  conv.initializer("w", w, {O, C, 3, 3});
  conv.initializer("b", bias, {O});
  conv.node("Conv", {"x", "w", "b"}, {"y"},
            {attr_ints("pads", {1, 1, 1, 1}), attr_ints("kernel_shape", {3, 3})});
  conv.node("Relu", {"y"}, {"out:0/relu"});  // ort_run.mjs names the file out_0_relu.npy
  conv.output("out:0/relu", DataType::float32);

  // Every typed data field, cast to float32 so the values can be compared; and an empty
  // Constant feeding Resize, as in PaddleOCR's exports.
  ModelBuilder typed(13);
  std::vector<float> typed_want;
  auto cast_add = [&](onnx::Tensor t, std::vector<float> values) {
    std::string name = t.name;
    typed.initializer(std::move(t));
    typed.node("Cast", {name}, {name + "_f"}, {attr_int("to", 1)});
    typed.output(name + "_f", DataType::float32);
    typed_want.insert(typed_want.end(), values.begin(), values.end());
  };
  cast_add(tensor_make<int8_t>("i8", DataType::int8, {-128, -1, 5}, {3}), {-128, -1, 5});
  cast_add(tensor_make<uint8_t>("u8", DataType::uint8, {0, 200, 255}, {3}), {0, 200, 255});
  cast_add(tensor_make<int16_t>("i16", DataType::int16, {-32768, -2, 300}, {3}), {-32768, -2, 300});
  cast_add(tensor_make<uint16_t>("u16", DataType::uint16, {65535, 1}, {2}), {65535, 1});
  cast_add(tensor_make<int32_t>("i32", DataType::int32, {-100000, 7}, {2}), {-100000, 7});
  cast_add(tensor_make<int64_t>("i64", DataType::int64, {-5000000000LL, 3}, {2}),
           {-5000000000.0f, 3});
  cast_add(tensor_make<uint32_t>("u32", DataType::uint32, {4000000000u, 2}, {2}),
           {4000000000.0f, 2});
  cast_add(tensor_make<uint64_t>("u64", DataType::uint64, {10000000000ULL, 9}, {2}),
           {10000000000.0f, 9});
  cast_add(tensor_make<uint8_t>("bool", DataType::boolean, {1, 0, 1}, {3}), {1, 0, 1});
  cast_add(tensor_make<uint16_t>("f16", DataType::float16, {0x3c00, 0xc100, 0x3800}, {3}),
           {1, -2.5f, 0.5f});
  cast_add(tensor_make<double>("f64", DataType::float64, {-1.25, 1e10}, {2}), {-1.25f, 1e10f});
  typed.input("small", DataType::float32, {1, 1, 2, 2});
  typed.node("Constant", {}, {"roi"},
             {attr_tensor("value", tensor_make<float>("", DataType::float32, {}, {0}))});
  typed.initializer("scales", std::vector<float>{1, 1, 2, 2}, {4});
  typed.node("Resize", {"small", "roi", "scales"}, {"big"}, {attr_string("mode", "nearest")});
  typed.output("big", DataType::float32);
  const std::vector<float> small{1, 2, 3, 4}, big{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4};

  for (WireStyle style : all_styles) {
    INFO("style ", style_name(style));
    auto input = std::filesystem::temp_directory_path() /
                 ("capgraph_writer_ort_" + std::to_string(getpid()) + ".npy");
    npy_float32_write(input, x, "(1, 2, 4, 5)");
    std::vector<float> got =
        npy_float32_read(ort_run(ort_dir, conv, style, "x=" + input.string()) / "out_0_relu.npy");
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); ++k)
      CHECK(got[k] == doctest::Approx(want[k]).epsilon(1e-6));

    npy_float32_write(input, small, "(1, 1, 2, 2)");
    std::filesystem::path out = ort_run(ort_dir, typed, style, "small=" + input.string());
    std::vector<float> typed_got;
    for (const char *name :
         {"i8", "u8", "i16", "u16", "i32", "i64", "u32", "u64", "bool", "f16", "f64"}) {
      std::vector<float> v = npy_float32_read(out / (std::string(name) + "_f.npy"));
      typed_got.insert(typed_got.end(), v.begin(), v.end());
    }
    CHECK(typed_got == typed_want);
    CHECK(npy_float32_read(out / "big.npy") == big);
    std::filesystem::remove(input);
    std::filesystem::remove_all(out.parent_path());
  }
}
