// `capgraph compile` on small hostile models (issue 16, findings 4 to 8): a node without inputs or
// outputs, shapes whose counts overflow, constant folding asked for gigabytes, elementwise chains
// deep enough to overflow a recursive code generator or slow enough to expose quadratic passes.
// Each must end in a clean error naming the node (or compile), within bounded time and memory.
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>

#include "cli_harness.h"
#include "onnx_writer.h"

using namespace capgraph::cli_test;
using namespace capgraph::model_gen;

namespace {

std::string model_save(const ModelBuilder &b, const std::string &name) {
  const std::string path = scratch_path(name);
  b.save(path);
  return path;
}

// The largest peak resident size of any child this process has waited for, in MiB.
long children_peak_mib() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return ru.ru_maxrss / 1024;
}

// A chain of `n` elementwise nodes on x f32 1x64: Add, Mul, Relu in turn, with constant operands.
ModelBuilder chain_model(int n) {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 64});
  b.initializer("k", std::vector<float>{1.0009765625f}, {1});
  std::string prev = "x";
  const char *ops[] = {"Add", "Mul", "Relu"};
  for (int i = 0; i < n; i++) {
    const std::string op = ops[i % 3], out = "v" + std::to_string(i);
    if (op == "Relu")
      b.node(op, {prev}, {out});
    else
      b.node(op, {prev, "k"}, {out});
    prev = out;
  }
  b.node("Identity", {prev}, {"y"});
  b.output("y", DataType::float32);
  return b;
}

}  // namespace

TEST_CASE("hostile model: a Relu without its input (a 58-byte model) is refused naming the node") {
  ModelBuilder b(13);
  b.node("Relu", {}, {"y"}).name = "r";
  b.output("y", DataType::float32);
  const std::string path = model_save(b, "relu_no_input.onnx");
  CHECK(file_read(path).size() < 80);
  check_clean_failure(cli_run({"compile", path, "-o", scratch_path("relu_no_input.cap")}),
                      {"relu_no_input.onnx", "Relu node 'r'", "input 0 is missing"});
  // and the same with no outputs: the graph's output is its input
  ModelBuilder c(13);
  c.input("x", DataType::float32, {2});
  c.node("Gather", {"x"}, {}).name = "g";
  c.output("x", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(c, "gather_no_output.onnx"), "-o", scratch_path("g.cap")}),
      {"Gather node 'g'", "input 1 is missing"});
  ModelBuilder d(13);
  d.input("x", DataType::float32, {2});
  d.node("Neg", {"x"}, {}).name = "n";
  d.output("x", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(d, "neg_no_output.onnx"), "-o", scratch_path("n.cap")}),
      {"Neg node 'n'", "output 0 is missing"});
}

TEST_CASE(
    "hostile model: dimensions that overflow when multiplied or added are refused, never wrapped") {
  // 23 dimensions of 8: 8^23 = 2^69 elements wrapped to a small count and compiled to a rank-23
  // output the runtime then refused.
  ModelBuilder e(13);
  e.input("x", DataType::float32, {1});
  e.initializer(tensor_make<int64_t>("s", DataType::int64, std::vector<int64_t>(23, 8), {23}));
  e.node("Expand", {"x", "s"}, {"y"}).name = "expand_23";
  e.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(e, "expand_23.onnx"), "-o", scratch_path("e.cap")}),
      {"expand_23", "too many elements"});
  // 23 dimensions of 1: the count fits, but the runtime takes at most 8 per input or output
  ModelBuilder e1(13);
  e1.input("x", DataType::float32, {1});
  e1.initializer(tensor_make<int64_t>("s", DataType::int64, std::vector<int64_t>(23, 1), {23}));
  e1.node("Expand", {"x", "s"}, {"y"}).name = "expand_r23";
  e1.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(e1, "expand_r23.onnx"), "-o", scratch_path("e1.cap")}),
      {"output 'y' has 23 dimensions", "at most 8"});
  ModelBuilder i9(13);
  i9.input("x", DataType::float32, std::vector<int64_t>(9, 1));
  i9.node("Relu", {"x"}, {"y"});
  i9.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(i9, "input_r9.onnx"), "-o", scratch_path("i9.cap")}),
      {"input 'x' has 9 dimensions", "at most 8"});
  // a model input declaring 2^62 x 4
  ModelBuilder i(13);
  i.input("x", DataType::float32, {int64_t(1) << 62, 4});
  i.node("Relu", {"x"}, {"y"}).name = "relu_big";
  i.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(i, "input_huge.onnx"), "-o", scratch_path("i.cap")}),
      {"input_huge.onnx", "too many elements"});
  // Pad adding 2^62 on both sides of a dimension
  ModelBuilder p(13);
  p.input("x", DataType::float32, {1, 4});
  p.initializer(tensor_make<int64_t>("pads", DataType::int64,
                                     {0, int64_t(1) << 62, 0, int64_t(1) << 62}, {4}));
  p.node("Pad", {"x", "pads"}, {"y"}).name = "pad_big";
  p.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(p, "pad_big.onnx"), "-o", scratch_path("p.cap")}),
      {"Pad node 'pad_big'", "too large"});
  // Pad cropping 2^56 at the start and adding 2^56 at the end: the sum fits, the crop does not
  // (found by fuzzing: the crop's offset overflowed)
  ModelBuilder c(13);
  c.input("x", DataType::float32, {1, 4});
  c.initializer(tensor_make<int64_t>("pads", DataType::int64,
                                     {0, -(int64_t(1) << 56), 0, int64_t(1) << 56}, {4}));
  c.node("Pad", {"x", "pads"}, {"y"}, {attr_string("mode", "reflect")}).name = "pad_crop";
  c.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(c, "pad_crop.onnx"), "-o", scratch_path("pc.cap")}),
      {"Pad node 'pad_crop'", "crop more than the input has"});
  // an initializer declaring a negative dimension
  ModelBuilder n(13);
  n.input("x", DataType::float32, {2});
  n.initializer(tensor_make<float>("w", DataType::float32, {1.0f, 2.0f}, {-1, -2}));
  n.node("Add", {"x", "w"}, {"y"}).name = "add_neg";
  n.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(n, "init_negative.onnx"), "-o", scratch_path("n.cap")}),
      {"init_negative.onnx", "'w'", "negative dimension"});
}

TEST_CASE(
    "hostile model: values a model supplies are converted and indexed safely (found by fuzzing)") {
  // Range whose step count is -1e38: the float-to-int conversion was undefined behaviour.
  ModelBuilder r(13);
  r.input("x", DataType::float32, {1});
  r.initializer("start", std::vector<float>{0.0f}, {});
  r.initializer("limit", std::vector<float>{-1e38f}, {});
  r.initializer("delta", std::vector<float>{1.0f}, {});
  r.node("Range", {"start", "limit", "delta"}, {"rg"}).name = "range_neg";
  r.node("Add", {"rg", "x"}, {"y"}).name = "add";
  r.output("y", DataType::float32);
  const cli_result rr =
      cli_run({"compile", model_save(r, "range_neg.onnx"), "-o", scratch_path("rn.cap")});
  CHECK_MESSAGE(crash_sign(rr).empty(), crash_sign(rr));
  CHECK(rr.signal == 0);
  // Range and Pad given empty tensors where they read a scalar: refused, not read past the end.
  ModelBuilder e(13);
  e.input("x", DataType::float32, {1});
  e.initializer("start", std::vector<float>{}, {0});
  e.initializer("limit", std::vector<float>{4.0f}, {});
  e.initializer("delta", std::vector<float>{1.0f}, {});
  e.node("Range", {"start", "limit", "delta"}, {"rg"}).name = "range_empty";
  e.node("Add", {"rg", "x"}, {"y"}).name = "add";
  e.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(e, "range_empty.onnx"), "-o", scratch_path("re.cap")}),
      {"Range node 'range_empty'", "has no element 0"});
  // Resize to an axis of 4.5M: its index tables are built at compile time (found by fuzzing: it
  // took minutes under the sanitizers and made an 840 MiB arena). A NaN scale is refused; a scale
  // of 0 makes an empty output, which is legal.
  for (float scale : {1146880.0f, NAN, 0.0f}) {
    ModelBuilder z(13);
    z.input("x", DataType::float32, {1, 1, 1, 4});
    z.initializer("scales", std::vector<float>{1, 1, 1, scale}, {4});
    z.node("Resize", {"x", "", "scales"}, {"y"}).name = "resize_far";
    z.output("y", DataType::float32);
    const cli_result rz =
        cli_run({"compile", model_save(z, "resize_far.onnx"), "-o", scratch_path("rz.cap")}, 20000);
    if (scale == 0.0f)
      check_success(rz);
    else
      check_clean_failure(rz, {"Resize node 'resize_far'", "dimension 3"});
  }
  // Gather, Concat, Softmax and ArgMax on a scalar: there is no axis 0 (Gather read past an empty
  // shape).
  for (const char *op : {"Gather", "Concat", "Softmax", "ArgMax", "Split"}) {
    ModelBuilder g(13);
    g.input("x", DataType::float32, {});
    g.initializer(tensor_make<int64_t>("i", DataType::int64, {0}, {1}));
    if (std::string(op) == "Gather")
      g.node(op, {"x", "i"}, {"y"}).name = "scalar_op";
    else
      g.node(op, {"x"}, {"y"}, {attr_int("axis", 0)}).name = "scalar_op";
    g.output("y", DataType::float32);
    check_clean_failure(cli_run({"compile", model_save(g, std::string("scalar_") + op + ".onnx"),
                                 "-o", scratch_path("s.cap")}),
                        {std::string(op) + " node 'scalar_op'", "out of range for rank 0"});
  }
  ModelBuilder p(13);
  p.input("x", DataType::float32, {1, 4});
  p.initializer(tensor_make<int64_t>("pads", DataType::int64, {0, 1, 0, 1}, {4}));
  p.initializer("value", std::vector<float>{}, {0});
  p.node("Pad", {"x", "pads", "value"}, {"y"}).name = "pad_empty_value";
  p.output("y", DataType::float32);
  check_clean_failure(
      cli_run({"compile", model_save(p, "pad_empty_value.onnx"), "-o", scratch_path("pe.cap")}),
      {"Pad node 'pad_empty_value'", "has no element 0"});
}

TEST_CASE(
    "hostile model: a Conv with no output channels before a BatchNormalization is not folded by "
    "dividing by zero") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 4, 4});
  b.initializer("w", std::vector<float>{}, {0, 3, 3, 3});
  for (const char *t : {"scale", "bias", "mean", "var"})
    b.initializer(t, std::vector<float>{}, {0});
  b.node("Conv", {"x", "w"}, {"c"}).name = "conv_empty";
  b.node("BatchNormalization", {"c", "scale", "bias", "mean", "var"}, {"y"}).name = "bn_empty";
  b.output("y", DataType::float32);
  // It was refused as "internal: kernel 'conv3x3': empty axis"; an empty output is legal.
  check_success(
      cli_run({"compile", model_save(b, "conv_bn_empty.onnx"), "-o", scratch_path("cbe.cap")}));
}

TEST_CASE(
    "hostile model: dead constants cost nothing, live ones stop at the fold limit naming the "
    "node") {
  // A dead ConstantOfShape of 2^29 int64 (4 GiB) beside a Relu: it took 16 s and 4.2 GB.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {4});
  b.initializer(
      tensor_make<int64_t>("s", DataType::int64, {int64_t(1) << 14, int64_t(1) << 14, 2}, {3}));
  capgraph::onnx::Tensor one = tensor_make<int64_t>("v", DataType::int64, {7}, {1});
  b.node("ConstantOfShape", {"s"}, {"dead"}, {attr_tensor("value", one)}).name = "bomb";
  b.node("Relu", {"x"}, {"y"});
  b.output("y", DataType::float32);
  const auto t0 = std::chrono::steady_clock::now();
  check_success(cli_run(
      {"compile", model_save(b, "dead_bomb.onnx"), "-o", scratch_path("dead_bomb.cap")}, 60000));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK_MESSAGE(s < 20, "compile took " << s << " s");
  CHECK_MESSAGE(children_peak_mib() < 1024,
                "a compile peaked at " << children_peak_mib() << " MiB");

  // Live: three ConstantOfShape of 2^27 int64 (1 GiB each) added together. The first fits the
  // default 1 GiB limit, the second does not and is named.
  ModelBuilder l(13);
  l.input("x", DataType::int64, {1});
  l.initializer(tensor_make<int64_t>("s", DataType::int64, {int64_t(1) << 27}, {1}));
  l.node("ConstantOfShape", {"s"}, {"c1"}, {attr_tensor("value", one)}).name = "cos1";
  l.node("ConstantOfShape", {"s"}, {"c2"}, {attr_tensor("value", one)}).name = "cos2";
  l.node("Add", {"c1", "c2"}, {"c3"}).name = "add12";
  l.node("Add", {"c3", "x"}, {"y"}).name = "addx";
  l.output("y", DataType::int64);
  check_clean_failure(
      cli_run({"compile", model_save(l, "live_bomb.onnx"), "-o", scratch_path("live_bomb.cap")},
              60000),
      {"ConstantOfShape node 'cos2'", "constant folding", "limit of 1024 MiB", "--fold-limit-mb"});
  CHECK_MESSAGE(children_peak_mib() < 2048,
                "a compile peaked at " << children_peak_mib() << " MiB");

  // The limit is configurable: 1 MiB refuses a 4 MiB constant, 8 MiB allows it.
  ModelBuilder m(13);
  m.input("x", DataType::float32, {1});
  m.initializer(tensor_make<int64_t>("s", DataType::int64, {1 << 20}, {1}));
  m.node("ConstantOfShape", {"s"}, {"c"},
         {attr_tensor("value", tensor_make<float>("v", DataType::float32, {2.0f}, {1}))})
      .name = "cos_4mib";
  m.node("Add", {"c", "x"}, {"y"}).name = "add";
  m.output("y", DataType::float32);
  const std::string small = model_save(m, "cos_4mib.onnx");
  check_clean_failure(
      cli_run({"compile", small, "-o", scratch_path("c.cap"), "--fold-limit-mb", "1"}),
      {"ConstantOfShape node 'cos_4mib'", "limit of 1 MiB"});
  check_success(cli_run({"compile", small, "-o", scratch_path("c.cap"), "--fold-limit-mb", "8"}));
  check_clean_failure(
      cli_run({"compile", small, "-o", scratch_path("c.cap"), "--fold-limit-mb", "0"}),
      {"--fold-limit-mb"});
}

TEST_CASE("hostile model: a chain of 100k elementwise nodes compiles, in well under a minute") {
  // 25k+ overflowed the code generator's stack (KernelEmitter::eval recursion); fusion was
  // quadratic (10k nodes took 5.5 s, 20k 24.8 s, 100k did not finish in 15 minutes).
  const std::string path = model_save(chain_model(100000), "chain_100k.onnx");
  const auto t0 = std::chrono::steady_clock::now();
  const cli_result r = cli_run({"compile", path, "-o", scratch_path("chain_100k.cap")}, 300000);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  check_success(r);
  CHECK(r.output.find("100001 ONNX nodes") != std::string::npos);
  MESSAGE("100k-node chain compiled in " << s << " s");
#if !defined(__SANITIZE_ADDRESS__)
  CHECK_MESSAGE(s < 60, "a 100k-node chain took " << s << " s to compile");
#endif
}
