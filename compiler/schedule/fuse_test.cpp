// Kernel fusion: elementwise consumers merge into their producer only when nothing else can see
// the intermediate (one reader, not a graph output, read exactly where it was written), and the
// fused program computes what the unfused one did.
#include "schedule/fuse.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>

#include "compile.h"
#include "onnx_writer.h"
#include "schedule/interpret.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

std::string temp_model(const ModelBuilder &b, const std::string &name) {
  const std::string dir = std::filesystem::temp_directory_path().string() + "/capgraph_fuse_test_" +
                          std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/" + name;
  b.save(path);
  return path;
}

struct cleanup {
  ~cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::temp_directory_path().string() +
                                    "/capgraph_fuse_test_" + std::to_string(getpid()),
                                ec);
  }
} cleanup_at_exit;

Program schedule(const ModelBuilder &b, const std::string &name) {
  return compile_schedule(temp_model(b, name), CompileOptions{}, nullptr);
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i * 5 % 9) - 4);
  return v;
}

// Interprets every kernel; returns each buffer's bytes. Inputs are filled with a ramp.
std::vector<std::vector<uint8_t>> program_run(const Program &p) {
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
  return host;
}

std::vector<std::vector<uint8_t>> outputs_of(const Program &p) {
  std::vector<std::vector<uint8_t>> host = program_run(p), r;
  for (const auto &o : p.outputs) r.push_back(host[o.buffer]);
  return r;
}

// x f32 1x2x6x6 -> Conv 'conv' (w 3x2x3x3, bias) -> c, then `tail` adds nodes reading c.
ModelBuilder conv_model() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 2, 6, 6});
  b.initializer("w", ramp(54, 0.1f), {3, 2, 3, 3});
  b.initializer("b", std::vector<float>{0.1f, -0.2f, 0.3f}, {3});
  b.node("Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv";
  return b;
}

// A hand-built program: X (input, 4x3) -> k0: B = X * 2 -> k1: Y = f(B) + 1, where k1 reads B
// through `read` (an access over k1's axes 4x3).
struct two_kernels {
  Program p;
  int x, bbuf, y;
};

two_kernels two_kernel_program(const std::function<Access(int buffer)> &read,
                               Shape k1_axes = {4, 3}) {
  two_kernels t;
  Program &p = t.p;
  auto buffer = [&](Buffer::Kind kind, const std::string &name) {
    Buffer b;
    b.kind = kind;
    b.numel = 12;
    b.name = name;
    p.buffers.push_back(b);
    return (int)p.buffers.size() - 1;
  };
  t.x = buffer(Buffer::Kind::input, "X");
  t.bbuf = buffer(Buffer::Kind::intermediate, "B");
  t.y = buffer(Buffer::Kind::output, "Y");
  p.inputs.push_back({"X", t.x, DType::f32, {4, 3}});
  p.outputs.push_back({"Y", t.y, DType::f32, k1_axes});
  auto contiguous = [](int buf, const Shape &s) {
    Access a;
    a.buffer = buf;
    for (size_t d = 0; d < s.size(); d++) {
      DimIndex di;
      di.terms = {{(int)d, 1}};
      di.extent = s[d];
      di.stride = d + 1 < s.size() ? s[d + 1] : 1;
      a.dims.push_back(di);
    }
    return a;
  };
  Kernel k0;
  k0.name = "double";
  k0.source_nodes = {"n0"};
  k0.axes = {4, 3};
  k0.n_parallel = 2;
  k0.result = k0.expr_binary(Op::mul, k0.expr_load(contiguous(t.x, {4, 3}), DType::f32),
                             k0.expr_const(2, DType::f32), DType::f32);
  k0.store = contiguous(t.bbuf, {4, 3});
  Kernel k1;
  k1.name = "plus_one";
  k1.source_nodes = {"n1"};
  k1.axes = k1_axes;
  k1.n_parallel = (int)k1_axes.size();
  int l = k1.expr_load(read(t.bbuf), DType::f32);
  k1.result = k1.expr_binary(Op::add, k1.expr_unary(Op::exp, l, DType::f32),
                             k1.expr_const(1, DType::f32), DType::f32);
  k1.store = contiguous(t.y, k1_axes);
  p.kernels = {k0, k1};
  return t;
}

Access b_same(int buf) {
  Access a;
  a.buffer = buf;
  a.dims = {DimIndex{{{0, 1}}, 0, -1, 4, 3}, DimIndex{{{1, 1}}, 0, -1, 3, 1}};
  return a;
}

}  // namespace

TEST_CASE("conv + relu become one kernel; its intermediate buffer disappears") {
  ModelBuilder b = conv_model();
  b.node("Relu", {"c"}, {"y"}).name = "relu";
  b.output("y", DataType::float32);
  Program p = schedule(b, "conv_relu.onnx");
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].source_nodes == std::vector<std::string>{"conv", "relu"});
  CHECK(p.kernels[0].name.find('+') != std::string::npos);
  for (const Buffer &buf : p.buffers) CHECK(buf.kind != Buffer::Kind::intermediate);
}

TEST_CASE("conv + add + relu chain fuses into the conv") {
  ModelBuilder b = conv_model();
  b.initializer("k", std::vector<float>{0.5f}, {});
  b.node("Add", {"c", "k"}, {"a"}).name = "add";
  b.node("Relu", {"a"}, {"y"}).name = "relu";
  b.output("y", DataType::float32);
  Program p = schedule(b, "conv_add_relu.onnx");
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].source_nodes == std::vector<std::string>{"conv", "add", "relu"});
}

TEST_CASE("not fused: the conv output has two readers") {
  ModelBuilder b = conv_model();
  b.node("Relu", {"c"}, {"y1"}).name = "relu";
  b.node("Sigmoid", {"c"}, {"y2"}).name = "sigmoid";
  b.output("y1", DataType::float32);
  b.output("y2", DataType::float32);
  Program p = schedule(b, "two_readers.onnx");
  CHECK(p.kernels.size() == 3);
  for (const Kernel &k : p.kernels) CHECK(k.source_nodes.size() == 1);
}

TEST_CASE("not fused: the conv output is a graph output") {
  ModelBuilder b = conv_model();
  b.node("Relu", {"c"}, {"y"}).name = "relu";
  b.output("y", DataType::float32);
  b.output("c", DataType::float32);
  Program p = schedule(b, "output_read.onnx");
  REQUIRE(p.kernels.size() == 2);
  CHECK(p.kernels[0].source_nodes == std::vector<std::string>{"conv"});
  CHECK(p.kernels[1].source_nodes == std::vector<std::string>{"relu"});
}

TEST_CASE("hand-built: a consumer reading exactly what was written fuses, and computes the same") {
  two_kernels t = two_kernel_program(b_same);
  std::vector<std::vector<uint8_t>> before = outputs_of(t.p);
  REQUIRE(program_fuse(t.p) == 1);
  REQUIRE(t.p.kernels.size() == 1);
  CHECK(t.p.kernels[0].name == "double+plus_one");
  CHECK(t.p.kernels[0].source_nodes == std::vector<std::string>{"n0", "n1"});
  CHECK(outputs_of(t.p) == before);
  program_prune_buffers(t.p);
  CHECK(t.p.buffers.size() == 2);  // B is gone
  CHECK(t.p.inputs[0].buffer == 0);
  CHECK(t.p.outputs[0].buffer == 1);
  CHECK(t.p.kernels[0].store.buffer == 1);
  CHECK(outputs_of(t.p) == before);
}

TEST_CASE("hand-built: not fused when the consumer reads another element than the one written") {
  // transposed: Y[j, i] = B[i, j] over axes 3x4
  two_kernels tr = two_kernel_program(
      [](int buf) {
        Access a;
        a.buffer = buf;
        a.dims = {DimIndex{{{1, 1}}, 0, -1, 4, 3}, DimIndex{{{0, 1}}, 0, -1, 3, 1}};
        return a;
      },
      {3, 4});
  CHECK(program_fuse(tr.p) == 0);
  // shifted with a skip bound: Y[i, j] = B[i, j - 1] (0 outside)
  two_kernels sh = two_kernel_program([](int buf) {
    Access a = b_same(buf);
    a.dims[1].shift = -1;
    a.dims[1].bound = Bound::skip;
    return a;
  });
  CHECK(program_fuse(sh.p) == 0);
  // B read twice by different kernels
  two_kernels twice = two_kernel_program(b_same);
  Kernel extra = twice.p.kernels[1];
  extra.name = "another_reader";
  twice.p.kernels.push_back(extra);
  CHECK(program_fuse(twice.p) == 0);
  // B is an output the user sees
  two_kernels out = two_kernel_program(b_same);
  out.p.buffers[out.bbuf].kind = Buffer::Kind::output;
  CHECK(program_fuse(out.p) == 0);
  // the producer stores another type than the buffer holds
  two_kernels cast = two_kernel_program(b_same);
  cast.p.kernels[0].store_dtype = DType::f64;
  CHECK(program_fuse(cast.p) == 0);
}

TEST_CASE("MatMul + bias Add fuses into the reduction's epilogue") {
  ModelBuilder b(13);
  b.input("a", DataType::float32, {3, 5});
  b.initializer("w", ramp(20, 0.25f), {5, 4});
  b.initializer("bias", std::vector<float>{1, 2, 3, 4}, {4});
  b.node("MatMul", {"a", "w"}, {"m"}).name = "matmul";
  b.node("Add", {"m", "bias"}, {"y"}).name = "add";
  b.output("y", DataType::float32);
  Program p = schedule(b, "matmul_add.onnx");
  REQUIRE(p.kernels.size() == 1);
  CHECK(p.kernels[0].reduce == Reduce::sum);
  CHECK(p.kernels[0].source_nodes == std::vector<std::string>{"matmul", "add"});
  std::vector<std::vector<uint8_t>> out = outputs_of(p);
  REQUIRE(out[0].size() == 12 * 4);
  // a[i][k] = (i*5+k) % 7 - 3.5 (program_run's ramp), w from ramp()
  std::vector<float> w = ramp(20, 0.25f), y(12);
  std::memcpy(y.data(), out[0].data(), 48);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++) {
      double s = j + 1;
      for (int k = 0; k < 5; k++) s += ((i * 5 + k) % 7 - 3.5) * w[k * 4 + j];
      CHECK(y[i * 4 + j] == doctest::Approx(s).epsilon(1e-6));
    }
}

TEST_CASE("axis merging: contiguous (h, w) become one long row; results unchanged") {
  // Hand-built: k0 walks X and B contiguously (mergeable); k1 reads B transposed (not mergeable).
  two_kernels t = two_kernel_program(
      [](int buf) {
        Access a;
        a.buffer = buf;
        a.dims = {DimIndex{{{1, 1}}, 0, -1, 4, 3}, DimIndex{{{0, 1}}, 0, -1, 3, 1}};
        return a;
      },
      {3, 4});
  const auto before = outputs_of(t.p);
  Program merged = t.p;
  CHECK(program_merge_axes(merged) == 1);
  CHECK(merged.kernels[0].axes == Shape{12});
  CHECK(merged.kernels[0].n_parallel == 1);
  CHECK(merged.kernels[1].axes == Shape{3, 4});  // the transposed read keeps its two axes
  CHECK(outputs_of(merged) == before);
}

TEST_CASE("axis merging: a 1x1 convolution's spatial axes merge, a padded 3x3's do not") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 4, 6, 6});
  b.initializer("w1", ramp(8, 0.1f), {2, 4, 1, 1});
  b.initializer("w3", ramp(72, 0.1f), {2, 4, 3, 3});
  b.node("Conv", {"x", "w1"}, {"p"}).name = "pointwise";
  b.node("Conv", {"x", "w3"}, {"q"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "padded";
  b.output("p", DataType::float32);
  b.output("q", DataType::float32);
  Program p = schedule(b, "merge_convs.onnx");
  REQUIRE(p.kernels.size() == 2);
  for (const Kernel &k : p.kernels) {
    Shape par(k.axes.begin(), k.axes.begin() + k.n_parallel);
    if (k.source_nodes[0] == "pointwise")
      CHECK(par.back() == 36);
    else
      CHECK(par.back() == 6);
  }
  // (Their numbers against ONNX Runtime: tests/e2e/op_conformance_test.cpp, conv cases.)
}

// A uint8 frame 1x3x7x9: Cast -> Sub (per-channel means) -> Div (scalar) -> Conv 3x3 pad 1 to 16
// channels -> Relu -> Conv 1x1 to 8 (the stem's output an intermediate, so the CPU tiles it).
ModelBuilder camera_model() {
  ModelBuilder b(13);
  b.input("x", DataType::uint8, {1, 3, 7, 9});
  b.initializer("mean", std::vector<float>{100.f, 120.f, 90.f}, {1, 3, 1, 1});
  b.initializer("scale", std::vector<float>{2.5f}, {});
  b.initializer("w", ramp(16 * 27, 0.1f), {16, 3, 3, 3});
  b.initializer("w2", ramp(8 * 16, 0.05f), {8, 16, 1, 1});
  b.node("Cast", {"x"}, {"f"}, {attr_int("to", 1)});
  b.node("Sub", {"f", "mean"}, {"s"});
  b.node("Div", {"s", "scale"}, {"n"});
  b.node("Conv", {"n", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "stem";
  b.node("Relu", {"c"}, {"r"});
  b.node("Conv", {"r", "w2"}, {"y"});
  b.output("y", DataType::float32);
  return b;
}

TEST_CASE(
    "a uint8 frame's cast and scale fold into the conv reading it, padding still adding nothing") {
  const ModelBuilder b = camera_model();
  CompileReport r;
  Program fused = compile_schedule(temp_model(b, "camera.onnx"), CompileOptions{}, &r);
  CHECK(r.input_casts_fused == 1);
  // No kernel writes a float copy of the frame: the stem reads the bytes.
  const int x = fused.inputs[0].buffer;
  bool stem_reads_bytes = false;
  for (const Kernel &k : fused.kernels) {
    CHECK(k.name != "Cast+Sub+Div");  // no kernel of the chain alone
    for (const Access &a : k.loads) stem_reads_bytes |= a.buffer == x && k.reduce == Reduce::sum;
  }
  CHECK(stem_reads_bytes);
  setenv("CAPGRAPH_NO_INPUT_FUSE", "1", 1);
  CompileReport r0;
  Program plain = compile_schedule(temp_model(b, "camera0.onnx"), CompileOptions{}, &r0);
  unsetenv("CAPGRAPH_NO_INPUT_FUSE");
  CHECK(r0.input_casts_fused == 0);
  CHECK(plain.kernels.size() == fused.kernels.size() + 1);
  // Same outputs from the interpreter: a padded point would otherwise add (0 - mean) / scale.
  auto a = outputs_of(fused), c = outputs_of(plain);
  REQUIRE(a.size() == 1);
  CHECK(a[0] == c[0]);
}

// A squeeze-excitation block, 1x8x6x6: Conv 3x3 + Relu -> x; global average -> Conv 1x1 (8 -> 2)
// -> Relu -> Conv 1x1 (2 -> 8) -> Sigmoid -> s; Mul(x, s) -> Conv 1x1 to 4 channels.
ModelBuilder squeeze_model() {
  ModelBuilder b(13);
  b.input("in", DataType::float32, {1, 3, 6, 6});
  b.initializer("w0", ramp(8 * 27, 0.1f), {8, 3, 3, 3});
  b.initializer("wr", ramp(2 * 8, 0.2f), {2, 8, 1, 1});
  b.initializer("we", ramp(8 * 2, 0.3f), {8, 2, 1, 1});
  b.initializer("wp", ramp(4 * 8, 0.05f), {4, 8, 1, 1});
  b.node("Conv", {"in", "w0"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.node("Relu", {"c"}, {"x"});
  b.node("GlobalAveragePool", {"x"}, {"g"});
  b.node("Conv", {"g", "wr"}, {"r"});
  b.node("Relu", {"r"}, {"rr"});
  b.node("Conv", {"rr", "we"}, {"e"});
  b.node("Sigmoid", {"e"}, {"s"});
  b.node("Mul", {"x", "s"}, {"m"});
  b.node("Conv", {"m", "wp"}, {"y"}).name = "project";
  b.output("y", DataType::float32);
  return b;
}

TEST_CASE("an elementwise producer (a channel scale) folds into the product staging it") {
  CompileOptions opt;
  // No target layouts: the pass alone, on the axes as lowered (GPU targets run it before the
  // axes merge).
  opt.target = "null";
  setenv("CAPGRAPH_NO_MERGE_AXES", "1", 1);
  Program plain = compile_schedule(temp_model(squeeze_model(), "se.onnx"), opt, nullptr);
  unsetenv("CAPGRAPH_NO_MERGE_AXES");
  Program fused = plain;
  std::vector<std::string> offered;
  const int n = program_fuse_operand_producers(fused, [&](const Kernel &k) {
    offered.push_back(k.name);
    return true;
  });
  CHECK(n == 1);
  REQUIRE(offered.size() == 1);
  CHECK(offered[0].find("Mul>") == 0);  // the scale, into the projection
  CHECK(fused.kernels.size() == plain.kernels.size() - 1);
  auto a = outputs_of(fused), c = outputs_of(plain);
  REQUIRE(a.size() == 1);
  CHECK(a[0] == c[0]);
  // A refusal keeps the producer.
  Program kept = plain;
  CHECK(program_fuse_operand_producers(kept, [](const Kernel &) { return false; }) == 0);
  CHECK(kept.kernels.size() == plain.kernels.size());
}

TEST_CASE("not folded: the producer's output is also read by a kernel that is not a product") {
  ModelBuilder b = squeeze_model();
  b.node("Relu", {"m"}, {"z"});
  b.output("z", DataType::float32);
  CompileOptions opt;
  opt.target = "null";
  setenv("CAPGRAPH_NO_MERGE_AXES", "1", 1);
  Program p = compile_schedule(temp_model(b, "se2.onnx"), opt, nullptr);
  unsetenv("CAPGRAPH_NO_MERGE_AXES");
  const size_t before = p.kernels.size();
  CHECK(program_fuse_operand_producers(p, [](const Kernel &) { return true; }) == 0);
  CHECK(p.kernels.size() == before);
}
