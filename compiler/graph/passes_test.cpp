// The graph passes on small generated models: shape inference with constant folding (and its size
// limit), BatchNorm folded into Conv, Pad folded into Conv, dead node removal. Numeric checks run
// the graph before and after a pass through the lowering and the kernel interpreter.
#include "graph/passes.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "error.h"
#include "onnx_writer.h"
#include "schedule/interpret.h"
#include "schedule/lower.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

Graph graph_of(const ModelBuilder &b, const InputShapes &shapes = {}) {
  std::vector<uint8_t> bytes = b.serialize();
  onnx::Model m = onnx::model_parse(bytes.data(), bytes.size(), "test.onnx");
  return graph_import(m, "test.onnx", shapes);
}

Node *node_named(Graph &g, const std::string &name) {
  for (auto &n : g.nodes)
    if (n->name == name) return n.get();
  FAIL("no node " << name);
  return nullptr;
}

Value *value_named(Graph &g, const std::string &name) {
  for (auto &v : g.values)
    if (v->name == name) return v.get();
  FAIL("no value " << name);
  return nullptr;
}

std::vector<float> ramp(size_t n, float scale, float offset = 0) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = offset + scale * float(int(i * 7 % 11) - 5);
  return v;
}

// Lowers the live graph (as compile.cpp does, without fusion) and interprets it: the outputs for
// the given float inputs, in graph output order, as float vectors.
std::vector<std::vector<float>> graph_eval(Graph &g,
                                           const std::vector<std::vector<float>> &inputs) {
  Lowering L(g);
  for (Value *in : g.inputs)
    L.bind(in, L.buffer_new(in->dtype, in->shape, Buffer::Kind::input, in->name));
  for (auto &n : g.nodes) {
    if (n->removed) continue;
    bool all_const = true;
    for (Value *o : n->outputs)
      if (!o->name.empty() && !o->constant) all_const = false;
    if (!all_const) lower_node(L, *n);
  }
  std::vector<Loc> outs;
  for (Value *o : g.outputs) outs.push_back(L.loc(o));
  Program &p = L.prog;
  std::vector<std::vector<uint8_t>> host(p.buffers.size());
  std::vector<uint8_t *> ptrs;
  for (size_t i = 0; i < p.buffers.size(); i++) {
    const Buffer &b = p.buffers[i];
    host[i] = b.kind == Buffer::Kind::constant
                  ? *b.data.bytes
                  : std::vector<uint8_t>(b.numel * dtype_size(b.dtype), 0);
    ptrs.push_back(host[i].data());
  }
  for (size_t i = 0; i < g.inputs.size(); i++) {
    Loc l = L.loc(g.inputs[i]);
    REQUIRE(host[l.buffer].size() == inputs[i].size() * 4);
    std::memcpy(host[l.buffer].data(), inputs[i].data(), host[l.buffer].size());
  }
  for (const Kernel &k : p.kernels) kernel_interpret(k, p, ptrs);
  std::vector<std::vector<float>> r;
  for (const Loc &l : outs) {
    std::vector<float> v;
    std::vector<int64_t> idx(l.shape.size(), 0);
    for (int64_t i = 0; i < shape_numel(l.shape); i++) {
      int64_t off = l.offset;
      for (size_t d = 0; d < idx.size(); d++) off += idx[d] * l.strides[d];
      v.push_back((float)element_load(l.dtype, host[l.buffer].data(), off));
      for (size_t d = idx.size(); d-- > 0;)
        if (++idx[d] < l.shape[d])
          break;
        else
          idx[d] = 0;
    }
    r.push_back(v);
  }
  return r;
}

void check_close(const std::vector<float> &got, const std::vector<float> &want, double rel = 1e-5) {
  REQUIRE(got.size() == want.size());
  double scale = 1;
  for (float w : want) scale = std::max(scale, (double)std::fabs(w));
  for (size_t i = 0; i < got.size(); i++) {
    INFO("element ", i, ": ", got[i], " vs ", want[i]);
    CHECK(std::fabs(got[i] - want[i]) <= rel * scale);
  }
}

int live_nodes(const Graph &g) {
  int n = 0;
  for (auto &node : g.nodes) n += !node->removed;
  return n;
}

// x f32 1x2x5x5 -> Conv 'conv' (w 3x2x3x3, bias optional, pads 1) -> c -> BatchNormalization 'bn'
// -> y
ModelBuilder conv_bn_model(bool bias, bool second_reader, bool conv_out_is_output) {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 2, 5, 5});
  b.initializer("w", ramp(3 * 2 * 3 * 3, 0.1f), {3, 2, 3, 3});
  std::vector<std::string> conv_in = {"x", "w"};
  if (bias) {
    b.initializer("cb", std::vector<float>{0.5f, -0.25f, 1.0f}, {3});
    conv_in.push_back("cb");
  }
  b.node("Conv", conv_in, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv";
  b.initializer("scale", std::vector<float>{2.0f, 0.5f, -1.0f}, {3});
  b.initializer("shift", std::vector<float>{0.1f, 0.2f, 0.3f}, {3});
  b.initializer("mean", std::vector<float>{1.0f, -1.0f, 0.0f}, {3});
  b.initializer("var", std::vector<float>{4.0f, 0.25f, 1.0f}, {3});
  b.node("BatchNormalization", {"c", "scale", "shift", "mean", "var"}, {"y"},
         {attr_float("epsilon", 1e-3f)})
      .name = "bn";
  b.output("y", DataType::float32);
  if (second_reader) {
    b.node("Relu", {"c"}, {"r"}).name = "relu";
    b.output("r", DataType::float32);
  }
  if (conv_out_is_output) b.output("c", DataType::float32);
  return b;
}

}  // namespace

TEST_CASE(
    "constant folding: Shape -> Gather -> Unsqueeze -> Concat feeding Reshape folds to a constant "
    "shape") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2, 3, 4});
  b.initializer(tensor_make<int64_t>("zero", DataType::int64, {0}, {}));
  b.initializer(tensor_make<int64_t>("ax0", DataType::int64, {0}, {1}));
  b.initializer(tensor_make<int64_t>("minus1", DataType::int64, {-1}, {1}));
  b.node("Shape", {"x"}, {"s"}).name = "shape";
  b.node("Gather", {"s", "zero"}, {"d0"}, {attr_int("axis", 0)}).name = "gather";
  b.node("Unsqueeze", {"d0", "ax0"}, {"d0u"}).name = "unsqueeze";
  b.node("Concat", {"d0u", "minus1"}, {"newshape"}, {attr_int("axis", 0)}).name = "concat";
  b.node("Reshape", {"x", "newshape"}, {"y"}).name = "reshape";
  b.output("y", DataType::float32);
  Graph g = graph_of(b);
  graph_infer_fold(g);
  for (const char *name : {"s", "d0", "d0u", "newshape"}) {
    CAPTURE(name);
    REQUIRE(value_named(g, name)->constant);
  }
  CHECK(value_named(g, "s")->constant->to_i64() == std::vector<int64_t>{2, 3, 4});
  CHECK(value_named(g, "d0")->constant->shape == Shape{});
  CHECK(value_named(g, "d0u")->constant->to_i64() == std::vector<int64_t>{2});
  CHECK(value_named(g, "newshape")->constant->to_i64() == std::vector<int64_t>{2, -1});
  Value *y = value_named(g, "y");
  CHECK_FALSE(y->constant);
  CHECK(y->shape == Shape{2, 12});
  // Reshape is a view of x; nothing of the shape chain computes at run time.
  std::vector<float> x = ramp(24, 1.0f);
  CHECK(graph_eval(g, {x})[0] == x);
}

TEST_CASE("constant folding: Constant nodes of every value form, and arithmetic on them") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {3});
  b.node(
       "Constant", {}, {"t"},
       {attr_tensor("value", tensor_make<float>("t", DataType::float32, {1.5f, -2.0f, 4.0f}, {3}))})
      .name = "c_t";
  b.node("Constant", {}, {"f"}, {attr_float("value_float", 0.5f)}).name = "c_f";
  b.node("Constant", {}, {"fs"}, {attr_floats("value_floats", {1, 2, 3})}).name = "c_fs";
  b.node("Constant", {}, {"i"}, {attr_int("value_int", 7)}).name = "c_i";
  b.node("Constant", {}, {"is"}, {attr_ints("value_ints", {4, 5})}).name = "c_is";
  b.node("Mul", {"t", "f"}, {"tf"}).name = "mul";
  b.node("Add", {"tf", "fs"}, {"k"}).name = "add";
  b.node("Add", {"x", "k"}, {"y"}).name = "add_x";
  b.output("y", DataType::float32);
  b.output("i", DataType::int64);
  b.output("is", DataType::int64);
  Graph g = graph_of(b);
  graph_infer_fold(g);
  CHECK(value_named(g, "t")->constant->to_f32() == std::vector<float>{1.5f, -2.0f, 4.0f});
  CHECK(value_named(g, "f")->constant->shape == Shape{});
  CHECK(value_named(g, "fs")->constant->to_f32() == std::vector<float>{1, 2, 3});
  CHECK(value_named(g, "i")->constant->to_i64() == std::vector<int64_t>{7});
  CHECK(value_named(g, "is")->constant->to_i64() == std::vector<int64_t>{4, 5});
  REQUIRE(value_named(g, "k")->constant);
  CHECK(value_named(g, "k")->constant->to_f32() == std::vector<float>{1.75f, 1.0f, 5.0f});
  CHECK_FALSE(value_named(g, "y")->constant);
  CHECK(graph_eval(g, {{1, 1, 1}})[0] == std::vector<float>{2.75f, 2.0f, 6.0f});
}

TEST_CASE("constant folding: results above the size limit stay run-time values") {
  auto model = [](int64_t rows) {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1});
    b.initializer("one", std::vector<float>{1.0f}, {});
    b.initializer(tensor_make<int64_t>("shape", DataType::int64, {rows, 2048}, {2}));
    b.node("Expand", {"one", "shape"}, {"big"}).name = "expand";
    b.node("Add", {"big", "x"}, {"y"}).name = "add";
    b.output("y", DataType::float32);
    return b;
  };
  {
    Graph g = graph_of(model(2048));  // 4 Mi elements: exactly the limit, folded
    graph_infer_fold(g);
    REQUIRE(value_named(g, "big")->constant);
    CHECK(value_named(g, "big")->constant->numel() == 2048 * 2048);
  }
  {
    Graph g = graph_of(model(2049));  // one row more: left to run time
    graph_infer_fold(g);
    Value *big = value_named(g, "big");
    CHECK_FALSE(big->constant);
    CHECK(big->typed);
    CHECK(big->shape == Shape{2049, 2048});
    CHECK(value_named(g, "y")->shape == Shape{2049, 2048});
  }
}

TEST_CASE("BatchNorm folds into the Conv before it: new weights and bias, the BN node gone") {
  for (bool bias : {true, false}) {
    CAPTURE(bias);
    Graph g = graph_of(conv_bn_model(bias, false, false));
    graph_infer_fold(g);
    std::vector<float> x = ramp(50, 0.3f, 0.1f);
    std::vector<float> before = graph_eval(g, {x})[0];
    REQUIRE(graph_fold_batchnorm(g) == 1);
    CHECK(node_named(g, "bn")->removed);
    Node *conv = node_named(g, "conv");
    CHECK_FALSE(conv->removed);
    CHECK(conv->outputs[0] == g.outputs[0]);
    CHECK(g.outputs[0]->producer == conv);
    // w'[oc] = w[oc] * scale / sqrt(var + eps); b' = (b - mean) * scale / sqrt(var + eps) + shift
    const float scale[] = {2.0f, 0.5f, -1.0f}, shift[] = {0.1f, 0.2f, 0.3f},
                mean[] = {1.0f, -1.0f, 0.0f}, var[] = {4.0f, 0.25f, 1.0f};
    const float cb[] = {0.5f, -0.25f, 1.0f};
    std::vector<float> w = ramp(54, 0.1f), nw = conv->input(1)->constant->to_f32(),
                       nb = conv->input(2)->constant->to_f32();
    REQUIRE(nw.size() == 54);
    REQUIRE(nb.size() == 3);
    for (int oc = 0; oc < 3; oc++) {
      double a = scale[oc] / std::sqrt((double)var[oc] + 1e-3f);
      for (int i = 0; i < 18; i++)
        CHECK(nw[oc * 18 + i] == doctest::Approx(w[oc * 18 + i] * a).epsilon(1e-6));
      CHECK(nb[oc] ==
            doctest::Approx(((bias ? cb[oc] : 0) - mean[oc]) * a + shift[oc]).epsilon(1e-6));
    }
    CHECK(graph_remove_dead(g) == 0);
    check_close(graph_eval(g, {x})[0], before);
  }
}

TEST_CASE("BatchNorm is not folded when the conv output is read twice or is a graph output") {
  for (auto [second, out] : {std::pair{true, false}, std::pair{false, true}}) {
    CAPTURE(second);
    Graph g = graph_of(conv_bn_model(true, second, out));
    graph_infer_fold(g);
    std::vector<float> x = ramp(50, 0.3f);
    std::vector<std::vector<float>> before = graph_eval(g, {x});
    CHECK(graph_fold_batchnorm(g) == 0);
    CHECK_FALSE(node_named(g, "bn")->removed);
    CHECK(node_named(g, "conv")->input(1) == value_named(g, "w"));
    std::vector<std::vector<float>> after = graph_eval(g, {x});
    for (size_t i = 0; i < before.size(); i++) CHECK(after[i] == before[i]);
  }
}

TEST_CASE("Pad with zeros on spatial dims folds into the Conv; other pads do not") {
  // x 1x2x5x5 -> Pad 'pad' -> Conv 'conv' (w 2x2x3x3, pads 1) -> y
  auto model = [](std::vector<int64_t> pads, const char *mode, float value, bool second_reader) {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 2, 5, 5});
    b.initializer(tensor_make<int64_t>("pads", DataType::int64, pads, {8}));
    b.initializer("value", std::vector<float>{value}, {});
    b.node("Pad", {"x", "pads", "value"}, {"xp"}, {attr_string("mode", mode)}).name = "pad";
    b.initializer("w", ramp(36, 0.2f), {2, 2, 3, 3});
    b.node("Conv", {"xp", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv";
    b.output("y", DataType::float32);
    if (second_reader) {
      b.node("Relu", {"xp"}, {"r"}).name = "relu";
      b.output("r", DataType::float32);
    }
    return b;
  };
  std::vector<float> x = ramp(50, 0.5f, 0.25f);
  {
    Graph g = graph_of(model({0, 0, 1, 2, 0, 0, 3, 0}, "constant", 0, false));
    graph_infer_fold(g);
    std::vector<float> before = graph_eval(g, {x})[0];
    REQUIRE(graph_fold_pad(g) == 1);
    CHECK(node_named(g, "pad")->removed);
    Node *conv = node_named(g, "conv");
    CHECK(conv->input(0) == g.inputs[0]);
    CHECK(conv->attr_ints("pads") == std::vector<int64_t>{2, 3, 4, 1});
    CHECK(graph_eval(g, {x})[0] == before);
  }
  struct no_fold {
    std::vector<int64_t> pads;
    const char *mode;
    float value;
    bool second;
  };
  for (const no_fold &c :
       {no_fold{{1, 0, 1, 1, 0, 0, 1, 1}, "constant", 0, false},     // batch padding
        no_fold{{0, 0, 1, 1, 0, 0, 1, 1}, "constant", 1.5f, false},  // not zero
        no_fold{{0, 0, 1, 1, 0, 0, 1, 1}, "reflect", 0, false},
        no_fold{{0, 0, 1, 1, 0, 0, 1, 1}, "edge", 0, false},
        no_fold{{0, 0, -1, 0, 0, 0, 0, 0}, "constant", 0, false},   // a crop
        no_fold{{0, 0, 1, 1, 0, 0, 1, 1}, "constant", 0, true}}) {  // padded value read twice
    std::string mode = c.mode;
    CAPTURE(mode);
    CAPTURE(c.value);
    CAPTURE(c.second);
    Graph g = graph_of(model(c.pads, c.mode, c.value, c.second));
    graph_infer_fold(g);
    std::vector<std::vector<float>> before = graph_eval(g, {x});
    CHECK(graph_fold_pad(g) == 0);
    CHECK_FALSE(node_named(g, "pad")->removed);
    CHECK(graph_eval(g, {x}) == before);
  }
}

TEST_CASE("dead nodes are removed; what an output needs stays") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {4});
  b.node("Relu", {"x"}, {"a"}).name = "used";
  b.node("Neg", {"x"}, {"d1"}).name = "dead1";
  b.node("Exp", {"d1"}, {"d2"}).name = "dead2";         // reads only dead values
  b.node("Sigmoid", {"a"}, {"d3"}).name = "dead3";      // reads a live value
  b.node("Split", {"a"}, {"s0", "s1"}).name = "split";  // one output used
  b.node("Abs", {"s1"}, {"y"}).name = "abs";
  b.output("y", DataType::float32);
  b.output("a", DataType::float32);
  Graph g = graph_of(b);
  graph_infer_fold(g);
  CHECK(live_nodes(g) == 6);
  CHECK(graph_remove_dead(g) == 3);
  for (const char *n : {"dead1", "dead2", "dead3"}) CHECK(node_named(g, n)->removed);
  for (const char *n : {"used", "split", "abs"}) CHECK_FALSE(node_named(g, n)->removed);
  CHECK(graph_remove_dead(g) == 0);
  std::vector<std::vector<float>> out = graph_eval(g, {{-1, 2, -3, 4}});
  CHECK(out[0] == std::vector<float>{0, 4});
  CHECK(out[1] == std::vector<float>{0, 2, 0, 4});
}

TEST_CASE("import errors name the model, the node and the input") {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {4});
  b.node("Relu", {"nowhere"}, {"y"}).name = "r1";
  b.output("y", DataType::float32);
  CHECK_THROWS_WITH_AS(graph_of(b), doctest::Contains("Relu node 'r1' reads 'nowhere'"), Error);
  ModelBuilder c(13);
  c.input("x", DataType::float32, {4});
  c.node("Relu", {"x"}, {"y"}).name = "r1";
  c.output("y", DataType::float32);
  CHECK_THROWS_WITH_AS(graph_of(c, {{"x", {2, 2}}}), doctest::Contains("rank"), Error);
  CHECK_THROWS_WITH_AS(graph_of(c, {{"nosuch", {4}}}), doctest::Contains("'nosuch'"), Error);
  CHECK_THROWS_WITH_AS(shape_parse("1x99999999999999999999"),
                       doctest::Contains("99999999999999999999"), Error);
  CHECK_THROWS_WITH_AS(shape_parse("2x-1"), doctest::Contains("2x-1"), Error);
  CHECK(shape_parse("1x3x640x640") == Shape{1, 3, 640, 640});
}
