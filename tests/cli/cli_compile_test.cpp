// `capgraph compile` on bad input: damaged or missing ONNX files, unsupported ops, unbound or
// badly bound dynamic dimensions, unknown targets. Every case must exit non-zero with a message
// naming the thing, never crash, and never leave a half-written -o file or a temporary behind.
// Also what a good compile records: the output-changing knobs that were set.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <functional>
#include <random>

#include "cli_harness.h"
#include "npy.h"
#include "onnx_writer.h"

using namespace capgraph::cli_test;
using namespace capgraph::model_gen;

namespace {

// Compiles `onnx` to a fresh directory's out.cap, expecting a clean failure mentioning `mentions`;
// then checks the directory is as it was: no out.cap, no temporary.
void compile_fails(const std::string &onnx, const std::vector<std::string> &extra,
                   const std::vector<std::string> &mentions) {
  static int n = 0;
  const std::string dir = scratch_path("compile_fail_" + std::to_string(n++));
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  std::vector<std::string> args = {"compile", onnx, "-o", dir + "/out.cap"};
  args.insert(args.end(), extra.begin(), extra.end());
  check_clean_failure(cli_run(args), mentions);
  CHECK_MESSAGE(dir_list(dir).empty(), "compile left files behind in " << dir);
}

std::vector<uint8_t> slice(const std::vector<uint8_t> &v, size_t n) {
  return std::vector<uint8_t>(v.begin(), v.begin() + long(n));
}

}  // namespace

TEST_CASE("compile: a good model compiles (the baseline the bad cases are made from)") {
  const std::string out = scratch_path("baseline.cap");
  check_success(cli_run({"compile", model_conv_relu(), "-o", out}));
  CHECK(file_exists(out));
}

TEST_CASE("compile: truncated ONNX files are refused naming the file") {
  const std::vector<uint8_t> good = file_read(model_conv_relu());
  // The writer puts the graph last, so every proper prefix lacks a complete graph.
  for (size_t len : {size_t(1), size_t(2), size_t(5), size_t(17), good.size() / 4, good.size() / 2,
                     good.size() * 3 / 4, good.size() - 40, good.size() - 3, good.size() - 1}) {
    CAPTURE(len);
    const std::string path = scratch_path("truncated_" + std::to_string(len) + ".onnx");
    file_write(path, slice(good, len));
    compile_fails(path, {}, {path});
  }
}

TEST_CASE("compile: corrupt ONNX bytes are refused or compiled, never crash") {
  const std::vector<uint8_t> good = file_read(model_conv_relu());
  std::mt19937 rng(7);
  int refused = 0, compiled = 0;
  for (int seed = 0; seed < 24; seed++) {
    std::vector<uint8_t> bad = good;
    for (int k = 0; k < 1 + seed % 4; k++) bad[rng() % bad.size()] = uint8_t(rng());
    const std::string path = scratch_path("corrupt_" + std::to_string(seed) + ".onnx");
    const std::string out = path + ".cap";
    file_write(path, bad);
    const cli_result r = cli_run({"compile", path, "-o", out});
    INFO("seed ", seed, ": ", r.output);
    CHECK_MESSAGE(crash_sign(r).empty(), crash_sign(r));
    if (r.exit_code == 0) {
      compiled++;
      CHECK(file_exists(out));
    } else {
      refused++;
      CHECK(r.exit_code == 1);
      CHECK(r.output.find("corrupt_" + std::to_string(seed) + ".onnx") != std::string::npos);
      CHECK_FALSE(file_exists(out));
    }
  }
  MESSAGE(refused << " corrupt models refused, " << compiled << " compiled");
  // Plain garbage is not a model.
  std::vector<uint8_t> garbage(4096);
  for (uint8_t &b : garbage) b = uint8_t(rng());
  const std::string path = scratch_path("garbage.onnx");
  file_write(path, garbage);
  compile_fails(path, {}, {path});
}

TEST_CASE("compile: empty file, missing file, directory") {
  const std::string empty = scratch_path("empty.onnx");
  file_write(empty, {});
  compile_fails(empty, {}, {empty});
  const std::string missing = scratch_path("no_such_model.onnx");
  compile_fails(missing, {}, {missing});
  const std::string dir = scratch_path("a_directory.onnx");
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  compile_fails(dir, {}, {dir});
}

TEST_CASE("compile: an unsupported op is named with its node") {
  compile_fails(model_unsupported(), {}, {"NonMaxSuppression", "nms_1", "unsupported.onnx"});
}

TEST_CASE("compile: unbound dynamic dimensions are listed; bound with --input-shape it compiles") {
  compile_fails(model_dynamic(), {},
                {"images[0] 'batch'", "images[2] 'height'", "images[3] 'width'", "--input-shape"});
  const std::string out = scratch_path("dynamic.cap");
  check_success(
      cli_run({"compile", model_dynamic(), "-o", out, "--input-shape", "images=1x3x5x7"}));
  const cli_result r = cli_run({"inspect", out});
  check_success(r);
  CHECK(r.output.find("1x3x5x7") != std::string::npos);
}

// Reshape(x, s) with the shape `s` a graph input: only --bind makes it compile (issue 18).
std::string model_reshape_input() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2, 3});
  b.input("s", DataType::int64, {2});
  b.node("Reshape", {"x", "s"}, {"y"}).name = "reshape_by_input";
  b.output("y", DataType::float32);
  const std::string path = scratch_path("reshape_input.onnx");
  b.save(path);
  return path;
}

std::string npy_write_file(const std::string &name, capgraph_dtype t,
                           const std::vector<int64_t> &shape, const void *data, size_t size) {
  const std::string path = scratch_path(name);
  std::string err;
  REQUIRE_MESSAGE(capgraph::npy_write(path, t, shape.data(), int(shape.size()), data, size, &err),
                  err);
  return path;
}

TEST_CASE(
    "compile: --bind makes a graph input a compile-time constant; inspect says so; run no longer "
    "takes it") {
  const std::string m = model_reshape_input();
  compile_fails(m, {}, {"reshape_by_input", "'s'", "must be known at compile time"});
  const std::vector<int64_t> shape = {3, 2};
  const std::string s = npy_write_file("s_3x2.npy", CAPGRAPH_I64, {2}, shape.data(), 16);
  const std::string out = scratch_path("reshape_bound.cap");
  check_success(cli_run({"compile", m, "-o", out, "--bind", "s=" + s}));
  const cli_result r = cli_run({"inspect", out});
  check_success(r);
  CHECK(r.output.find("bind s=int64") != std::string::npos);
  const std::vector<float> xs = {1, 2, 3, 4, 5, 6};
  const std::string x = npy_write_file("x_bind.npy", CAPGRAPH_F32, {2, 3}, xs.data(), 24);
  const std::string dir = scratch_path("bind_out");
  check_success(cli_run({"run", out, "--input", "x=" + x, "--output-dir", dir}));
  capgraph::npy_array y;
  std::string err;
  REQUIRE_MESSAGE(capgraph::npy_read(dir + "/y.npy", &y, &err), err);
  CHECK(y.shape == std::vector<int64_t>{3, 2});
  // s is no longer an input of the capture: giving it is an error naming it.
  check_clean_failure(
      cli_run({"run", out, "--input", "x=" + x, "--input", "s=" + s, "--output-dir", dir}), {"s"});
}

TEST_CASE("compile: bad --bind values are refused naming the flag, the input or the file") {
  const std::string m = model_reshape_input();
  const std::vector<int64_t> shape = {3, 2};
  const std::vector<float> fshape = {3, 2};
  const std::string s = npy_write_file("s_ok.npy", CAPGRAPH_I64, {2}, shape.data(), 16);
  const std::string s_f32 = npy_write_file("s_f32.npy", CAPGRAPH_F32, {2}, fshape.data(), 8);
  const std::string s_rank2 = npy_write_file("s_rank2.npy", CAPGRAPH_I64, {1, 2}, shape.data(), 16);
  const std::string s_len1 = npy_write_file("s_len1.npy", CAPGRAPH_I64, {1}, shape.data(), 8);
  compile_fails(m, {"--bind", "s"}, {"--bind", "NAME=FILE.npy"});
  compile_fails(m, {"--bind", "=" + s}, {"--bind"});
  compile_fails(m, {"--bind", "s="}, {"--bind"});
  compile_fails(m, {"--bind", "s=/nonexistent/s.npy"}, {"--bind s", "/nonexistent/s.npy"});
  compile_fails(m, {"--bind", "nosuch=" + s}, {"nosuch", "not a model input"});
  compile_fails(m, {"--bind", "s=" + s_f32}, {"--bind s", "float32", "int64"});
  compile_fails(m, {"--bind", "s=" + s_rank2}, {"--bind s", "rank"});
  compile_fails(m, {"--bind", "s=" + s_len1}, {"--bind s", "dimension 0"});
  compile_fails(m, {"--bind", "s=" + s, "--bind", "s=" + s}, {"--bind", "twice"});
  compile_fails(m, {"--bind", "s=" + s, "--input-shape", "s=2"}, {"--bind s", "--input-shape"});
  compile_fails(m, {"--bind"}, {"--bind", "needs a value"});
}

TEST_CASE("compile: bad --input-shape values are refused naming the flag or the input") {
  const std::string m = model_dynamic();
  compile_fails(m, {"--input-shape", "images=1xAx8x8"}, {"1xAx8x8"});
  compile_fails(m, {"--input-shape", "images="}, {"images="});
  compile_fails(m, {"--input-shape", "=1x3x8x8"}, {"--input-shape"});
  compile_fails(m, {"--input-shape", "images"}, {"--input-shape"});
  compile_fails(m, {"--input-shape", "images=1x3x"}, {"1x3x"});
  compile_fails(m, {"--input-shape", "images=1x3x-8x8"}, {"1x3x-8x8"});
  compile_fails(m, {"--input-shape", "images=1x3x99999999999999999999x8"},
                {"99999999999999999999"});
  compile_fails(m, {"--input-shape", "nosuch=1x3x8x8"}, {"nosuch", "not a model input"});
  compile_fails(m, {"--input-shape", "images=1x3x8"}, {"images", "rank"});
  compile_fails(m, {"--input-shape", "images=1x4x8x8"}, {"images", "dimension 1"});
  compile_fails(m, {"--input-shape"}, {"--input-shape", "needs a value"});
}

TEST_CASE("compile: an unknown --target is refused listing the known ones") {
  compile_fails(model_conv_relu(), {"--target", "gpu-imaginary"}, {"gpu-imaginary", "cpu-aarch64"});
}

TEST_CASE("compile: bad --threads and unknown options") {
  compile_fails(model_conv_relu(), {"--threads", "0"}, {"--threads"});
  compile_fails(model_conv_relu(), {"--threads", "lots"}, {"--threads", "lots"});
  compile_fails(model_conv_relu(), {"--frobnicate"}, {"--frobnicate"});
}

TEST_CASE("compile: a failed compile leaves an existing -o file unchanged") {
  const std::string out = scratch_path("keep_me.cap");
  const std::vector<uint8_t> before = {'o', 'l', 'd'};
  file_write(out, before);
  const std::string bad = scratch_path("truncated_for_keep.onnx");
  const std::vector<uint8_t> good = file_read(model_conv_relu());
  file_write(bad, slice(good, good.size() / 2));
  const std::vector<std::string> dir_before = dir_list(scratch_dir());
  check_clean_failure(cli_run({"compile", bad, "-o", out}), {bad});
  CHECK(file_read(out) == before);
  check_clean_failure(cli_run({"compile", model_unsupported(), "-o", out}), {"nms_1"});
  CHECK(file_read(out) == before);
  CHECK(dir_list(scratch_dir()) == dir_before);
}

TEST_CASE("compile: an -o that cannot be written is named, and nothing is left behind") {
  const std::string dir = scratch_path("out_is_a_dir");
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  check_clean_failure(cli_run({"compile", model_conv_relu(), "-o", dir}), {dir, "cannot write"});
  CHECK(dir_list(dir).empty());
  const std::string nodir = scratch_path("no_such_dir/out.cap");
  check_clean_failure(cli_run({"compile", model_conv_relu(), "-o", nodir}),
                      {nodir, "cannot write"});
  const std::string parent = scratch_path("out_parent");
  REQUIRE(mkdir(parent.c_str(), 0755) == 0);
  const std::string file = parent + "/plain_file";
  file_write(file, {1, 2, 3});
  check_clean_failure(cli_run({"compile", model_conv_relu(), "-o", file + "/out.cap"}),
                      {"cannot write"});
  CHECK(dir_list(parent) == std::vector<std::string>{"plain_file"});
}

TEST_CASE("compile: shapes too large to count are refused naming the value, never wrapped") {
  // bound by the user: 1*3*4e9*4e9 elements overflow int64
  compile_fails(model_dynamic(), {"--input-shape", "images=1x3x4000000000x4000000000"},
                {"images", "too many elements"});
  // computed by Expand from a constant shape
  ModelBuilder e(13);
  e.input("x", DataType::float32, {1});
  e.initializer(tensor_make<int64_t>("shape", DataType::int64, {4000000000, 4000000000}, {2}));
  e.node("Expand", {"x", "shape"}, {"z"}).name = "expand1";
  e.node("Relu", {"z"}, {"y"}).name = "relu1";
  e.output("y", DataType::float32);
  const std::string expand = scratch_path("expand_huge.onnx");
  e.save(expand);
  compile_fails(expand, {}, {"expand_huge.onnx", "expand1", "'z'", "too many elements"});
  // a Range of 1e12 elements is refused before anything is allocated
  ModelBuilder r(13);
  r.input("x", DataType::float32, {1});
  r.initializer("start", std::vector<float>{0.0f}, {});
  r.initializer("limit", std::vector<float>{1e12f}, {});
  r.initializer("delta", std::vector<float>{1.0f}, {});
  r.node("Range", {"start", "limit", "delta"}, {"rg"}).name = "range1";
  r.node("Add", {"rg", "x"}, {"y"}).name = "add1";
  r.output("y", DataType::float32);
  const std::string range = scratch_path("range_huge.onnx");
  r.save(range);
  compile_fails(range, {}, {"range_huge.onnx", "range1", "too many elements"});
  // zero-sized inputs are legal and compile
  check_success(cli_run({"compile", model_dynamic(), "-o", scratch_path("zero.cap"),
                         "--input-shape", "images=0x3x4x4"}));
}

TEST_CASE("compile: shapes and dtypes that do not fit the op are refused naming the node") {
  struct bad_model {
    const char *name;
    std::vector<std::string> mentions;
    std::function<void(ModelBuilder &)> build;
  };
  const bad_model cases[] = {
      {"add_shapes",
       {"add_1", "2x3", "4"},
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {2, 3});
         b.input("c", DataType::float32, {4});
         b.node("Add", {"a", "c"}, {"y"}).name = "add_1";
       }},
      {"add_dtypes",
       {"add_2"},
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {2, 3});
         b.input("c", DataType::int64, {2, 3});
         b.node("Add", {"a", "c"}, {"y"}).name = "add_2";
       }},
      {"relu_int",
       {"relu_3"},
       [](ModelBuilder &b) {
         b.input("a", DataType::int64, {2, 3});
         b.node("Relu", {"a"}, {"y"}).name = "relu_3";
       }},
      {"conv_rank",
       {"conv_4"},
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {1, 3, 8, 8});
         b.initializer("w", std::vector<float>(12, 0.5f), {4, 3});
         b.node("Conv", {"a", "w"}, {"y"}).name = "conv_4";
       }},
      {"conv_channels",
       {"conv_5"},
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {1, 3, 8, 8});
         b.initializer("w", std::vector<float>(4 * 2 * 9, 0.5f), {4, 2, 3, 3});
         b.node("Conv", {"a", "w"}, {"y"}).name = "conv_5";
       }},
      {"reshape_count",
       {"reshape_6"},
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {2, 3});
         b.initializer(tensor_make<int64_t>("s", DataType::int64, {4, 2}, {2}));
         b.node("Reshape", {"a", "s"}, {"y"}).name = "reshape_6";
       }},
      {"matmul_k",
       {"matmul_7"},
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {2, 3});
         b.input("c", DataType::float32, {4, 5});
         b.node("MatMul", {"a", "c"}, {"y"}).name = "matmul_7";
       }},
      {"runtime_shape",
       {"reshape_8", "'s'"},  // a shape that depends on the model's input
       [](ModelBuilder &b) {
         b.input("a", DataType::float32, {2, 3});
         b.input("s", DataType::int64, {2});
         b.node("Reshape", {"a", "s"}, {"y"}).name = "reshape_8";
       }},
  };
  for (const bad_model &c : cases) {
    std::string name = c.name;
    CAPTURE(name);
    ModelBuilder b(13);
    c.build(b);
    b.output("y", DataType::float32);
    const std::string path = scratch_path(name + ".onnx");
    b.save(path);
    std::vector<std::string> mentions = c.mentions;
    mentions.push_back(name + ".onnx");
    compile_fails(path, {}, mentions);
  }
}

TEST_CASE("compile: the output-changing knobs that are set are recorded, and inspect shows them") {
  // Two 16-channel 3x3 convolutions: the activation between them is blocked (graph ports are
  // not), so the layout reads CAPGRAPH_NO_REORDER_TILE through knob_get, which records it (it was
  // missing from the hand-kept list before). A debug knob changes nothing and is not recorded.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 16, 16, 16});
  std::vector<float> w(16 * 16 * 9);
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.01f * float(int(i % 13) - 6);
  b.initializer("w", w, {16, 16, 3, 3});
  b.node("Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv1";
  b.node("Relu", {"c"}, {"r"}).name = "relu1";
  b.node("Conv", {"r", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv2";
  b.output("y", DataType::float32, {1, 16, 16, 16});
  const std::string onnx = scratch_path("conv16.onnx");
  b.save(onnx);
  const std::string plain = scratch_path("conv16.cap"), knobbed = scratch_path("conv16_knobs.cap");
  check_success(cli_run({"compile", onnx, "-o", plain}));
  const cli_result plain_shown = cli_run({"inspect", plain});
  check_success(plain_shown);
  CHECK(plain_shown.output.find("compiled with") == std::string::npos);

  setenv("CAPGRAPH_NO_REORDER_TILE", "1", 1);
  setenv("CAPGRAPH_DEBUG_LAYOUT", "1", 1);
  const cli_result compiled = cli_run({"compile", onnx, "-o", knobbed});
  unsetenv("CAPGRAPH_NO_REORDER_TILE");
  unsetenv("CAPGRAPH_DEBUG_LAYOUT");
  check_success(compiled);
  const cli_result shown = cli_run({"inspect", knobbed});
  check_success(shown);
  INFO(shown.output);
  CHECK(shown.output.find("compiled with CAPGRAPH_NO_REORDER_TILE=1") != std::string::npos);
  CHECK(shown.output.find("CAPGRAPH_DEBUG_LAYOUT") == std::string::npos);
}
