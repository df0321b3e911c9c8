// Generated CPU code against the kernel interpreter (the reference semantics of the kernel IR):
// each program is compiled with cpu_codegen, written with capture_build, loaded and replayed by
// the runtime, and every output is compared with kernel_interpret's. Reductions are compiled with
// each loop strategy (map/row/dot); views cover padding, strides, transposes, gathers; dtypes cover
// float, integers and bool. The math functions are checked over wide ranges against std::.
#include "codegen/cpu_codegen.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <typeinfo>

#include "capgraph_runtime.h"
#include "capture/capture_write.h"
#include "codegen/cpu_channel_tile.h"
#include "codegen/cpu_matvec.h"
#include "codegen/expr_vector.h"
#include "compile.h"
#include "error.h"
#include "onnx_writer.h"
#include "schedule/interpret.h"
#include "schedule/kernel_test_util.h"
#include "target/target_table.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

// ---- running a program both ways ---------------------------------------------------------------

struct outputs {
  std::vector<std::vector<uint8_t>> bytes;  // Program::outputs order
};

// Deterministic input values suited to the dtype.
void inputs_fill(const Program &p, std::vector<std::vector<uint8_t>> &host, unsigned seed) {
  std::mt19937 rng(seed);
  for (const auto &port : p.inputs) {
    const Buffer &b = p.buffers[port.buffer];
    for (int64_t i = 0; i < b.numel; i++) {
      double v;
      if (dtype_is_float(b.dtype))
        v = std::uniform_real_distribution<double>(-3, 3)(rng);
      else if (b.dtype == DType::boolean)
        v = rng() & 1;
      else if (b.dtype == DType::u8)
        v = rng() % 256;
      else
        v = double(int(rng() % 41) - 20);
      element_store(b.dtype, host[port.buffer].data(), i, v);
    }
  }
}

outputs run_interpreter(const Program &p, const std::vector<std::vector<uint8_t>> &inputs) {
  std::vector<std::vector<uint8_t>> host(p.buffers.size());
  std::vector<uint8_t *> ptrs;
  for (size_t i = 0; i < p.buffers.size(); i++) {
    const Buffer &b = p.buffers[i];
    host[i] = b.kind == Buffer::Kind::constant ? *b.data.bytes : inputs[i];
    ptrs.push_back(host[i].data());
  }
  for (const Kernel &k : p.kernels) kernel_interpret(k, p, ptrs);
  outputs o;
  for (const auto &port : p.outputs) o.bytes.push_back(host[port.buffer]);
  return o;
}

outputs run_compiled(const Program &p, const std::vector<std::vector<uint8_t>> &inputs, int threads,
                     const char *target = "cpu") {
  CpuTarget t = cpu_target_named(target);
  CodegenResult code = cpu_codegen(p, t, 2);
  CaptureInfo info;
  info.model_name = "codegen_test";
  std::vector<uint8_t> cap = capture_build(p, code, t, capture_plan(p, code, info.threads), info);
  capgraph_model *m = nullptr;
  char err[512] = "";
  capgraph_options opts{threads};
  REQUIRE_MESSAGE(
      capgraph_load_memory(cap.data(), cap.size(), &opts, &m, err, sizeof err) == CAPGRAPH_OK, err);
  for (size_t i = 0; i < p.inputs.size(); i++) {
    capgraph_tensor ti;
    REQUIRE(capgraph_input(m, (int32_t)i, &ti) == CAPGRAPH_OK);
    const std::vector<uint8_t> &src = inputs[p.inputs[i].buffer];
    REQUIRE(ti.size_bytes == src.size());
    if (!src.empty()) std::memcpy(ti.data, src.data(), src.size());
  }
  REQUIRE_MESSAGE(capgraph_run(m) == CAPGRAPH_OK, capgraph_error(m));
  outputs o;
  for (size_t i = 0; i < p.outputs.size(); i++) {
    capgraph_tensor to;
    REQUIRE(capgraph_output(m, (int32_t)i, &to) == CAPGRAPH_OK);
    const uint8_t *d = (const uint8_t *)to.data;
    o.bytes.emplace_back(d, d + to.size_bytes);
  }
  capgraph_free(m);
  return o;
}

// Float outputs agree within rel * max(1, max |reference|) (summation order and fused multiply-adds
// differ); NaN where the reference has NaN; integers and bools exactly.
void outputs_compare(const Program &p, const outputs &got, const outputs &want, double rel) {
  for (size_t o = 0; o < p.outputs.size(); o++) {
    DType t = p.outputs[o].dtype;
    INFO("output '", p.outputs[o].name, "' (", dtype_name(t), ")");
    REQUIRE(got.bytes[o].size() == want.bytes[o].size());
    int64_t n = (int64_t)want.bytes[o].size() / (int64_t)dtype_size(t);
    double scale = 1;
    for (int64_t i = 0; i < n; i++) {
      double w = element_load(t, want.bytes[o].data(), i);
      if (std::isfinite(w)) scale = std::max(scale, std::fabs(w));
    }
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
      double g = element_load(t, got.bytes[o].data(), i),
             w = element_load(t, want.bytes[o].data(), i);
      bool ok;
      if (!dtype_is_float(t))
        ok = g == w;
      else if (std::isnan(w))
        ok = std::isnan(g);
      else if (std::isinf(w))
        ok = g == w;
      else
        ok = std::fabs(g - w) <= rel * scale;
      if (!ok) {
        bad++;
        FAIL_CHECK("element " << i << ": compiled " << g << ", interpreter " << w);
      }
    }
  }
}

// Compiles with every applicable strategy and compares each with the interpreter.
void check_program(const Program &p, double rel = 2e-5, unsigned seed = 1) {
  std::vector<std::vector<uint8_t>> inputs(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); i++)
    if (p.buffers[i].kind != Buffer::Kind::constant)
      inputs[i].assign(p.buffers[i].numel * dtype_size(p.buffers[i].dtype), 0);
  inputs_fill(p, inputs, seed);
  for (const Kernel &k : p.kernels) kernel_check(k, p);
  outputs want = run_interpreter(p, inputs);
  bool reduces = false;
  for (const Kernel &k : p.kernels) reduces = reduces || k.reduce != Reduce::none;
  for (const char *strategy : {"", "row", "dot"}) {
    if (*strategy && !reduces) continue;
    std::string strategy_name = *strategy ? strategy : "default";
    CAPTURE(strategy_name);
    if (*strategy)
      setenv("CAPGRAPH_STRATEGY", strategy, 1);
    else
      unsetenv("CAPGRAPH_STRATEGY");
    outputs_compare(p, run_compiled(p, inputs, 1), want, rel);
    if (!*strategy)
      outputs_compare(p, run_compiled(p, inputs, 3), want, rel);  // re-split for 3 threads
  }
  unsetenv("CAPGRAPH_STRATEGY");
}

// ---- programs from ONNX models -----------------------------------------------------------------

std::string scratch_dir() {
  static std::string dir = [] {
    std::string d = std::filesystem::temp_directory_path().string() + "/capgraph_codegen_test_" +
                    std::to_string(getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}
struct cleanup {
  ~cleanup() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::temp_directory_path().string() +
                                    "/capgraph_codegen_test_" + std::to_string(getpid()),
                                ec);
  }
} cleanup_at_exit;

Program schedule(const ModelBuilder &b, const std::string &name) {
  const std::string path = scratch_dir() + "/" + name + ".onnx";
  b.save(path);
  return compile_schedule(path, CompileOptions{}, nullptr);
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i * 7 % 13) - 6);
  return v;
}

bool has_strategy_choice(const Program &p) {
  for (const Kernel &k : p.kernels)
    if (k.reduce != Reduce::none) return true;
  return false;
}

// One node over float inputs of the given shapes, all outputs declared float32 unless `out_types`.
ModelBuilder one_node(const std::string &op, const std::vector<std::vector<int64_t>> &in_shapes,
                      std::vector<onnx::Attribute> attrs, int n_out = 1,
                      std::vector<DataType> out_types = {}, DataType in_type = DataType::float32) {
  ModelBuilder b(13);
  std::vector<std::string> ins, outs;
  for (size_t i = 0; i < in_shapes.size(); i++) {
    ins.push_back("in" + std::to_string(i));
    b.input(ins.back(), in_type, in_shapes[i]);
  }
  for (int i = 0; i < n_out; i++) outs.push_back("out" + std::to_string(i));
  b.node(op, ins, outs, std::move(attrs)).name = op + "_node";
  for (int i = 0; i < n_out; i++)
    b.output(outs[i], out_types.empty() ? DataType::float32 : out_types[i]);
  return b;
}

// ---- hand-built programs -----------------------------------------------------------------------

struct builder {
  Program p;
  int buffer(Buffer::Kind kind, DType t, const std::string &name, const Shape &shape) {
    Buffer b;
    b.kind = kind;
    b.dtype = t;
    b.numel = shape_numel(shape);
    b.name = name;
    p.buffers.push_back(b);
    int i = (int)p.buffers.size() - 1;
    if (kind == Buffer::Kind::input) p.inputs.push_back({name, i, t, shape});
    if (kind == Buffer::Kind::output) p.outputs.push_back({name, i, t, shape});
    return i;
  }
};

using capgraph::test::dim;

Access contiguous(int buf, const Shape &s) {
  Access a;
  a.buffer = buf;
  Shape st = shape_strides(s);
  for (size_t d = 0; d < s.size(); d++) a.dims.push_back(dim({{(int)d, 1}}, s[d], st[d]));
  return a;
}

// Y = f(X) elementwise over n values of dtype t.
Program unary_program(Op op, DType t, int64_t n) {
  builder b;
  int x = b.buffer(Buffer::Kind::input, t, "x", {n}),
      y = b.buffer(Buffer::Kind::output, t, "y", {n});
  Kernel k;
  k.name = op_name(op);
  k.axes = {n};
  k.n_parallel = 1;
  k.result = k.expr_unary(op, k.expr_load(contiguous(x, {n}), t), t);
  k.store = contiguous(y, {n});
  k.store_dtype = t;
  b.p.kernels.push_back(k);
  return b.p;
}

}  // namespace

TEST_CASE("convolutions: padding, strides, dilation, groups, 1x1, each strategy") {
  struct conv_case {
    const char *name;
    std::vector<int64_t> x, w;
    std::vector<onnx::Attribute> attrs;
  };
  const conv_case cases[] = {
      {"3x3_pad1", {1, 3, 9, 10}, {4, 3, 3, 3}, {attr_ints("pads", {1, 1, 1, 1})}},
      {"3x3_s2_d2_asym",
       {2, 2, 11, 9},
       {3, 2, 3, 3},
       {attr_ints("pads", {0, 2, 1, 0}), attr_ints("strides", {2, 2}),
        attr_ints("dilations", {2, 2})}},
      {"depthwise",
       {1, 4, 7, 7},
       {4, 1, 3, 3},
       {attr_int("group", 4), attr_ints("pads", {1, 1, 1, 1})}},
      {"1x1", {1, 8, 5, 6}, {3, 8, 1, 1}, {}},
      {"conv1d", {1, 2, 17}, {2, 2, 5}, {attr_ints("pads", {2, 2})}},
      {"wide_row",
       {1, 1, 3, 300},
       {2, 1, 3, 3},
       {attr_ints("pads", {1, 1, 1, 1})}},  // more than one 256-wide tile
      // Stride 2 along rows of at least 8 outputs: the register tile reading every other element
      // (plain loads + shuffle in the middle, masked loads at the borders and the tail).
      {"3x3_s2_rows",
       {1, 3, 9, 70},
       {4, 3, 3, 3},
       {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}},
      {"depthwise_s2_rows",
       {1, 5, 8, 81},
       {5, 1, 3, 3},
       {attr_int("group", 5), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})}},
      {"3x3_s2_unpadded", {1, 2, 6, 133}, {3, 2, 3, 3}, {attr_ints("strides", {2, 2})}},
      {"1x5_s2_right_pad",
       {1, 1, 2, 40},
       {2, 1, 1, 5},
       {attr_ints("pads", {0, 0, 0, 3}), attr_ints("strides", {1, 2})}},
  };
  for (const conv_case &c : cases) {
    std::string conv = c.name;
    CAPTURE(conv);
    ModelBuilder b(13);
    b.input("x", DataType::float32, c.x);
    int64_t wn = 1;
    for (int64_t d : c.w) wn *= d;
    b.initializer("w", ramp(wn, 0.05f), c.w);
    b.initializer("b", ramp(c.w[0], 0.5f), {c.w[0]});
    b.node("Conv", {"x", "w", "b"}, {"c"}, c.attrs).name = "conv";
    b.node("Relu", {"c"}, {"y"}).name = "relu";
    b.output("y", DataType::float32);
    Program p = schedule(b, std::string("conv_") + c.name);
    CHECK(has_strategy_choice(p));
    check_program(p);
  }
}

TEST_CASE("transposed convolution (divisor indices) and pooling with padding") {
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 2, 5, 4});
    b.initializer("w", ramp(2 * 3 * 3 * 3, 0.1f), {2, 3, 3, 3});
    b.node("ConvTranspose", {"x", "w"}, {"y"},
           {attr_ints("strides", {2, 2}), attr_ints("pads", {1, 0, 0, 1})})
        .name = "deconv";
    b.output("y", DataType::float32);
    check_program(schedule(b, "convtranspose"));
  }
  check_program(schedule(one_node("MaxPool", {{1, 2, 9, 8}},
                                  {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {2, 2}),
                                   attr_ints("pads", {1, 1, 1, 1})}),
                         "maxpool"));
  for (int include : {0, 1}) {
    CAPTURE(include);
    check_program(
        schedule(one_node("AveragePool", {{1, 3, 7, 7}},
                          {attr_ints("kernel_shape", {3, 2}), attr_ints("pads", {1, 0, 1, 1}),
                           attr_int("count_include_pad", include)}),
                 "avgpool" + std::to_string(include)));
  }
  check_program(schedule(one_node("GlobalAveragePool", {{2, 3, 5, 5}}, {}), "gap"));
}

TEST_CASE("matrix products: MatMul, batched and broadcast, Gemm with transposed operands") {
  check_program(schedule(one_node("MatMul", {{3, 5}, {5, 4}}, {}), "matmul"));
  check_program(schedule(one_node("MatMul", {{2, 3, 7}, {7, 2}}, {}), "matmul_batched"));
  check_program(schedule(one_node("MatMul", {{7}, {2, 7, 3}}, {}), "matmul_vec"));
  check_program(schedule(one_node("MatMul", {{1, 300}, {300, 1}}, {}), "matmul_long_k"));
  check_program(schedule(one_node("Gemm", {{5, 3}, {4, 5}, {4}},
                                  {attr_int("transA", 1), attr_int("transB", 1),
                                   attr_float("alpha", 0.5f), attr_float("beta", 2.0f)}),
                         "gemm_tt"));
}

TEST_CASE("reductions and normalisations over several axes") {
  check_program(schedule(
      one_node("ReduceMean", {{2, 3, 4, 5}}, {attr_ints("axes", {1, 3}), attr_int("keepdims", 1)}),
      "reducemean"));
  check_program(schedule(
      one_node("ReduceMax", {{2, 3, 4}}, {attr_ints("axes", {0, 2}), attr_int("keepdims", 0)}),
      "reducemax"));
  check_program(
      schedule(one_node("ReduceMin", {{6, 5}}, {attr_int("keepdims", 0)}), "reducemin_all"));
  check_program(schedule(one_node("ReduceProd", {{3, 4}}, {attr_ints("axes", {1})}), "reduceprod"));
  check_program(
      schedule(one_node("ReduceLogSumExp", {{3, 4}}, {attr_ints("axes", {1})}), "logsumexp"));
  check_program(schedule(one_node("Softmax", {{3, 9}}, {attr_int("axis", -1)}), "softmax"));
  check_program(schedule(one_node("Softmax", {{4, 3, 2}}, {attr_int("axis", 1)}), "softmax_mid"));
  check_program(schedule(one_node("LogSoftmax", {{2, 7}}, {}), "logsoftmax"));
  check_program(schedule(one_node("ArgMax", {{3, 5}}, {attr_int("axis", 1)}, 1, {DataType::int64}),
                         "argmax"));
}

TEST_CASE(
    "views: pads of every mode, transposes, strided and reversed slices, concat, tile, resize") {
  for (const char *mode : {"constant", "reflect", "edge"}) {
    std::string pad_mode = mode;
    CAPTURE(pad_mode);
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 2, 4, 5});
    b.initializer(tensor_make<int64_t>("pads", DataType::int64, {0, 0, 2, 3, 0, 0, 3, 1}, {8}));
    b.initializer("v", std::vector<float>{0.75f}, {});
    b.node("Pad", {"x", "pads", "v"}, {"y"}, {attr_string("mode", mode)}).name = "pad";
    b.output("y", DataType::float32);
    check_program(schedule(b, std::string("pad_") + mode));
  }
  check_program(
      schedule(one_node("Transpose", {{2, 3, 4}}, {attr_ints("perm", {2, 0, 1})}), "transpose"));
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {6, 10});
    b.initializer(tensor_make<int64_t>("starts", DataType::int64, {5, 1}, {2}));
    b.initializer(tensor_make<int64_t>("ends", DataType::int64, {-100, 9}, {2}));
    b.initializer(tensor_make<int64_t>("axes", DataType::int64, {0, 1}, {2}));
    b.initializer(tensor_make<int64_t>("steps", DataType::int64, {-2, 3}, {2}));
    b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"}).name = "slice";
    b.node("Sigmoid", {"s"}, {"y"}).name = "sig";  // a kernel reading the strided, reversed view
    b.output("y", DataType::float32);
    check_program(schedule(b, "slice"));
  }
  {
    ModelBuilder b(13);
    b.input("a", DataType::float32, {2, 3});
    b.input("c", DataType::float32, {2, 5});
    b.node("Transpose", {"a"}, {"at"}, {attr_ints("perm", {1, 0})}).name = "t";
    b.node("Transpose", {"c"}, {"ct"}, {attr_ints("perm", {1, 0})}).name = "t2";
    b.node("Concat", {"at", "ct"}, {"y"}, {attr_int("axis", 0)}).name = "concat";
    b.output("y", DataType::float32);
    check_program(schedule(b, "concat"));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {2, 3});
    b.initializer(tensor_make<int64_t>("reps", DataType::int64, {3, 2}, {2}));
    b.node("Tile", {"x", "reps"}, {"y"}).name = "tile";
    b.output("y", DataType::float32);
    check_program(schedule(b, "tile"));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 1, 3, 4});
    b.initializer("scales", std::vector<float>{1, 1, 2, 1.5f}, {4});
    b.node("Resize", {"x", "", "scales"}, {"y"}, {attr_string("mode", "nearest")}).name = "resize";
    b.output("y", DataType::float32);
    check_program(schedule(b, "resize_nearest"));
    ModelBuilder l(13);
    l.input("x", DataType::float32, {1, 1, 3, 4});
    l.initializer("scales", std::vector<float>{1, 1, 2, 2}, {4});
    l.node("Resize", {"x", "", "scales"}, {"y"}, {attr_string("mode", "linear")}).name = "resize";
    l.output("y", DataType::float32);
    check_program(schedule(l, "resize_linear"));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {5, 3});
    b.input("i", DataType::int64, {2, 2});
    b.node("Gather", {"x", "i"}, {"y"}, {attr_int("axis", 0)}).name = "gather";
    b.output("y", DataType::float32);
    Program p = schedule(b, "gather");
    // indices in [-20, 20] fall outside [-5, 5): gather's out-of-range rule is part of the
    // semantics
    check_program(p);
  }
}

TEST_CASE("integer and bool dtypes: arithmetic, comparisons, logic, casts, selects") {
  for (DataType t : {DataType::int32, DataType::int64}) {
    CAPTURE(int(t));
    for (const char *op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
      std::string op_s = op;
      CAPTURE(op_s);
      check_program(schedule(one_node(op, {{3, 4}, {4}}, {}, 1, {t}, t), std::string("int_") + op));
    }
    check_program(schedule(one_node("Mod", {{12}, {12}}, {}, 1, {t}, t), "int_mod"));
    check_program(
        schedule(one_node("Mod", {{12}, {12}}, {attr_int("fmod", 1)}, 1, {t}, t), "int_fmod"));
    check_program(schedule(one_node("Abs", {{12}}, {}, 1, {t}, t), "int_abs"));
    check_program(schedule(one_node("Neg", {{12}}, {}, 1, {t}, t), "int_neg"));
    for (const char *op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
      std::string op_s = op;
      CAPTURE(op_s);
      check_program(schedule(one_node(op, {{3, 4}, {3, 1}}, {}, 1, {DataType::boolean}, t),
                             std::string("cmp_") + op));
    }
  }
  for (const char *op : {"And", "Or"})
    check_program(
        schedule(one_node(op, {{2, 5}, {5}}, {}, 1, {DataType::boolean}, DataType::boolean),
                 std::string("bool_") + op));
  check_program(
      schedule(one_node("Not", {{7}}, {}, 1, {DataType::boolean}, DataType::boolean), "bool_not"));
  {
    ModelBuilder b(13);
    b.input("c", DataType::boolean, {2, 3});
    b.input("a", DataType::int32, {3});
    b.input("x", DataType::float32, {2, 3});
    b.node("Cast", {"a"}, {"af"}, {attr_int("to", 1)}).name = "cast_af";
    b.node("Where", {"c", "af", "x"}, {"w"}).name = "where";
    b.node("Cast", {"w"}, {"wi"}, {attr_int("to", 3)}).name = "cast_i8";     // float -> int8
    b.node("Cast", {"w"}, {"wu"}, {attr_int("to", 2)}).name = "cast_u8";     // float -> uint8
    b.node("Cast", {"w"}, {"wb"}, {attr_int("to", 9)}).name = "cast_bool";   // float -> bool
    b.node("Cast", {"c"}, {"ci"}, {attr_int("to", 7)}).name = "cast_c_i64";  // bool -> int64
    b.node("Cast", {"w"}, {"w16"}, {attr_int("to", 5)}).name = "cast_i16";
    b.node("Cast", {"w"}, {"wd"}, {attr_int("to", 11)}).name = "cast_f64";
    b.output("wi", DataType::int8);
    b.output("wu", DataType::uint8);
    b.output("wb", DataType::boolean);
    b.output("ci", DataType::int64);
    b.output("w16", DataType::int16);
    b.output("wd", DataType::float64);
    check_program(schedule(b, "casts"));
  }
}

TEST_CASE("hand-built: skip/clamp/reflect/wrap bounds and divisors, in map and reduction kernels") {
  for (Bound bound : {Bound::skip, Bound::clamp, Bound::reflect, Bound::wrap}) {
    CAPTURE(int(bound));
    builder b;
    int x = b.buffer(Buffer::Kind::input, DType::f32, "x", {3, 5}),
        y = b.buffer(Buffer::Kind::output, DType::f32, "y", {3, 19});
    Kernel k;
    k.name = "bounds";
    k.axes = {3, 19};
    k.n_parallel = 2;
    Access a;
    a.buffer = x;
    a.fill = -7.5;
    a.dims = {dim({{0, 1}}, 3, 5),
              dim({{1, -1}}, 5, 1, 13, bound)};  // x[i][13 - j]: far out on both sides
    k.result = k.expr_load(a, DType::f32);
    k.store = contiguous(y, {3, 19});
    b.p.kernels.push_back(k);
    check_program(b.p);
    // the same view summed over a window: y2[i][j] = sum_r x[i][j + r - 4] (r < 9)
    builder r;
    int rx = r.buffer(Buffer::Kind::input, DType::f32, "x", {3, 5}),
        ry = r.buffer(Buffer::Kind::output, DType::f32, "y", {3, 7});
    Kernel kr;
    kr.name = "window";
    kr.axes = {3, 7, 9};
    kr.n_parallel = 2;
    Access ra;
    ra.buffer = rx;
    ra.dims = {dim({{0, 1}}, 3, 5), dim({{1, 1}, {2, 1}}, 5, 1, -4, bound)};
    kr.body = kr.expr_load(ra, DType::f32);
    kr.reduce = Reduce::sum;
    kr.result = kr.expr_unary(Op::acc, -1, DType::f32);
    kr.store = contiguous(ry, {3, 7});
    r.p.kernels.push_back(kr);
    check_program(r.p);
  }
  // divisor: y[o] = sum_k x[(o + 1 - k) / 3] where 3 divides it
  builder b;
  int x = b.buffer(Buffer::Kind::input, DType::f32, "x", {4}),
      y = b.buffer(Buffer::Kind::output, DType::f32, "y", {13});
  Kernel k;
  k.name = "divisor";
  k.axes = {13, 4};
  k.n_parallel = 1;
  DimIndex d = dim({{0, 1}, {1, -1}}, 4, 1, 1, Bound::skip);
  d.divisor = 3;
  Access a;
  a.buffer = x;
  a.dims = {d};
  k.body = k.expr_load(a, DType::f32);
  k.reduce = Reduce::sum;
  k.result = k.expr_unary(Op::acc, -1, DType::f32);
  k.store = contiguous(y, {13});
  b.p.kernels.push_back(k);
  check_program(b.p);
}

TEST_CASE("hand-built: iota, f64 and integer reductions, a transposed strided store") {
  builder b;
  int x = b.buffer(Buffer::Kind::input, DType::f64, "x", {4, 6}),
      y = b.buffer(Buffer::Kind::output, DType::i64, "y", {6}),
      z = b.buffer(Buffer::Kind::output, DType::f64, "z", {6, 4});
  Kernel k;  // y[j] = max_i (int)(x[i][j] * 10) + j
  k.name = "int_max";
  k.axes = {6, 4};
  k.n_parallel = 1;
  Access a;
  a.buffer = x;
  a.dims = {dim({{1, 1}}, 4, 6), dim({{0, 1}}, 6, 1)};
  k.body = k.expr_cast(
      k.expr_binary(Op::mul, k.expr_load(a, DType::f64), k.expr_const(10, DType::f64), DType::f64),
      DType::i64);
  k.reduce = Reduce::max;
  k.acc_dtype = DType::i64;
  k.result = k.expr_binary(Op::add, k.expr_unary(Op::acc, -1, DType::i64),
                           k.expr_iota(0, DType::i64), DType::i64);
  k.store = contiguous(y, {6});
  k.store_dtype = DType::i64;
  b.p.kernels.push_back(k);
  Kernel t;  // z[j][i] = exp(x[i][j]) in double, written transposed
  t.name = "transpose_exp";
  t.axes = {4, 6};
  t.n_parallel = 2;
  t.result = t.expr_unary(Op::exp, t.expr_load(contiguous(x, {4, 6}), DType::f64), DType::f64);
  t.store.buffer = z;
  t.store.dims = {dim({{0, 1}}, 4, 1), dim({{1, 1}}, 6, 4)};
  t.store_dtype = DType::f64;
  b.p.kernels.push_back(t);
  check_program(b.p, 1e-12);
}

// The max/min identities are -inf/+inf; for an integer accumulator they must become the type's
// minimum/maximum. (They were cast to int64 unchecked: undefined behaviour, and on x86 INT64_MIN
// for both, i.e. 0 once truncated to 32 bits or less: the max of negative values came out 0 and
// most mins came out 0 or the type's minimum.) All-negative maxima and all-positive minima catch
// it.
TEST_CASE("integer max/min reductions start from the type's limits, for every integer type") {
  for (DType t : {DType::i8, DType::u8, DType::i16, DType::i32, DType::i64}) {
    CAPTURE(dtype_name(t));
    builder b;
    int x = b.buffer(Buffer::Kind::input, t, "x", {4, 6}),
        ymax = b.buffer(Buffer::Kind::output, t, "ymax", {6}),
        ymin = b.buffer(Buffer::Kind::output, t, "ymin", {6});
    // x is in [-20, 20] (u8: [0, 255]); max over x - 50 < 0, min over x + 50 > 0 (u8: min over x).
    const bool is_unsigned = t == DType::u8;
    for (auto [name, r, out, shift] :
         {std::tuple{"max_negative", Reduce::max, ymax, is_unsigned ? 0.0 : -50.0},
          std::tuple{"min_positive", Reduce::min, ymin, is_unsigned ? 0.0 : 50.0}}) {
      Kernel k;
      k.name = name;
      k.axes = {6, 4};
      k.n_parallel = 1;
      Access a;
      a.buffer = x;
      a.dims = {dim({{1, 1}}, 4, 6), dim({{0, 1}}, 6, 1)};
      k.body = k.expr_binary(Op::add, k.expr_load(a, t), k.expr_const(shift, t), t);
      k.reduce = r;
      k.acc_dtype = t;
      k.result = k.expr_unary(Op::acc, -1, t);
      k.store = contiguous(out, {6});
      k.store_dtype = t;
      b.p.kernels.push_back(k);
    }
    check_program(b.p, 0);
  }
}

TEST_CASE("NaN through max/min reductions and elementwise max/min agrees with the interpreter") {
  builder b;
  int x = b.buffer(Buffer::Kind::input, DType::f32, "x", {4, 3}),
      ymax = b.buffer(Buffer::Kind::output, DType::f32, "ymax", {4}),
      ymin = b.buffer(Buffer::Kind::output, DType::f32, "ymin", {4});
  for (auto [name, r, out] :
       {std::tuple{"max", Reduce::max, ymax}, std::tuple{"min", Reduce::min, ymin}}) {
    Kernel k;
    k.name = name;
    k.axes = {4, 3};
    k.n_parallel = 1;
    k.body = k.expr_load(contiguous(x, {4, 3}), DType::f32);
    k.reduce = r;
    k.result = k.expr_unary(Op::acc, -1, DType::f32);
    k.store = contiguous(out, {4});
    b.p.kernels.push_back(k);
  }
  // rows: NaN first, NaN in the middle, NaN last, no NaN
  std::vector<float> xv = {NAN, 1, 2, 3, NAN, 1, 5, 6, NAN, 1, -2, 0};
  std::vector<std::vector<uint8_t>> inputs(b.p.buffers.size());
  for (size_t i = 0; i < inputs.size(); i++) inputs[i].assign(b.p.buffers[i].numel * 4, 0);
  std::memcpy(inputs[x].data(), xv.data(), 48);
  outputs want = run_interpreter(b.p, inputs);
  for (const char *strategy : {"row", "dot"}) {
    std::string strategy_name = strategy;
    CAPTURE(strategy_name);
    setenv("CAPGRAPH_STRATEGY", strategy, 1);
    outputs_compare(b.p, run_compiled(b.p, inputs, 1), want, 0);
  }
  unsetenv("CAPGRAPH_STRATEGY");
}

namespace {

// The values the math functions are checked on: specials, both sides of every range boundary of
// the implementations, and a log-uniform sweep of both signs from 1e-40 to 1e38.
std::vector<float> math_inputs() {
  std::vector<float> v = {
      0.0f,        -0.0f,  INFINITY, -INFINITY, NAN,     FLT_MIN, FLT_MAX,    FLT_TRUE_MIN,
      1.0f,        0.5f,   2.0f,     0.0625f,   0.0624f, 0.0626f, 0.6931472f, 1.4142135f,
      0.70710677f, 9.0f,   10.0f,    15.0f,     20.0f,   30.0f,   80.0f,      87.0f,
      87.3f,       87.4f,  88.0f,    88.3f,     88.5f,   88.7f,   88.72f,     88.73f,
      89.0f,       100.0f, 103.0f,   104.0f,    700.0f,  1e10f};
  const size_t fixed = v.size();
  for (size_t i = 0; i < fixed; i++) v.push_back(-v[i]);
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> e(-40, 38);
  for (int i = 0; i < 3000; i++) {
    float x = (float)std::pow(10.0, e(rng));
    v.push_back(i % 2 ? x : -x);
  }
  for (int i = 0; i < 2000; i++)
    v.push_back((float)std::uniform_real_distribution<double>(-12, 12)(rng));
  return v;
}

struct accuracy {
  double max_rel = 0, max_abs = 0;
  float worst = 0;
};

}  // namespace

// Bounds stated per function (f32 results, compared with the double-precision std:: function
// rounded to float):
//   exp      relative 2e-6 where the result is a normal float; results below FLT_MIN (x < -87.34)
//            may flush to 0 (absolute 1.2e-38); overflow (x > 88.72) is +inf like expf.
//   log      relative 2e-6 (and exact 0 at 1, -inf at 0, NaN below 0, +inf at +inf).
//   tanh     relative 5e-6 (its 0.0625 switch to 1 - 2/(e^2x + 1) costs a few ulp there).
//   sigmoid  relative 2e-6 where the result is normal; absolute 1.2e-38 below.
//   erf      absolute 5e-7 (Abramowitz-Stegun 7.1.26: 1.5e-7, plus float rounding); no relative
//            bound near 0, where the approximation's 1e-7 floor dominates erf(x) ~ 1.13 x.
// Every case: NaN in gives NaN; an infinite reference must be matched exactly.
TEST_CASE("exp, log, tanh, sigmoid, erf: accuracy over the whole float range against std::") {
  const std::vector<float> xs = math_inputs();
  struct fn_case {
    Op op;
    double (*ref)(double);
    double rel, abs;
  };
  const fn_case fns[] = {
      {Op::exp, [](double x) { return std::exp(x); }, 2e-6, FLT_MIN},
      {Op::log, [](double x) { return std::log(x); }, 2e-6, 0},
      {Op::tanh, [](double x) { return std::tanh(x); }, 5e-6, 0},
      {Op::sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, 2e-6, FLT_MIN},
      {Op::erf, [](double x) { return std::erf(x); }, 0, 5e-7},
  };
  for (const fn_case &f : fns) {
    std::string fn = op_name(f.op);
    CAPTURE(fn);
    Program p = unary_program(f.op, DType::f32, (int64_t)xs.size());
    std::vector<std::vector<uint8_t>> inputs(2);
    inputs[0].resize(xs.size() * 4);
    std::memcpy(inputs[0].data(), xs.data(), inputs[0].size());
    inputs[1].assign(xs.size() * 4, 0);
    outputs got = run_compiled(p, inputs, 1), interp = run_interpreter(p, inputs);
    std::vector<float> y(xs.size()), yi(xs.size());
    std::memcpy(y.data(), got.bytes[0].data(), y.size() * 4);
    std::memcpy(yi.data(), interp.bytes[0].data(), yi.size() * 4);
    accuracy acc;
    int failures = 0;
    for (size_t i = 0; i < xs.size(); i++) {
      const double want = (float)f.ref(xs[i]);
      // The interpreter is the same function in double, rounded once.
      CHECK_MESSAGE((yi[i] == want || (std::isnan(yi[i]) && std::isnan(want))),
                    "interpreter at x = " << xs[i]);
      bool ok;
      if (std::isnan(want))
        ok = std::isnan(y[i]);
      else if (std::isinf(want))
        ok = y[i] == want;
      else {
        double err = std::fabs(y[i] - want);
        ok = std::isfinite(y[i]) && err <= f.rel * std::fabs(want) + f.abs;
        if (std::isfinite(y[i])) {
          if (std::fabs(want) >= FLT_MIN && want != 0 && err / std::fabs(want) > acc.max_rel) {
            acc.max_rel = err / std::fabs(want);
            acc.worst = xs[i];
          }
          acc.max_abs = std::max(acc.max_abs, err);
        }
      }
      if (!ok && failures++ < 8)
        FAIL_CHECK(fn << "(" << xs[i] << "): got " << y[i] << ", want " << want);
    }
    MESSAGE(fn << ": max relative error " << acc.max_rel << " (at x = " << acc.worst
               << "), max absolute " << acc.max_abs << ", " << xs.size() << " inputs");
  }
}

TEST_CASE("exp and log in double precision: relative 1e-13 over the double range") {
  std::vector<double> xs = {0,    1,    -1,     0.5,   700,      709,       709.7, -700,
                            -708, -745, 1e-300, 1e300, INFINITY, -INFINITY, NAN,   1e-320};
  std::mt19937 rng(99);
  for (int i = 0; i < 1000; i++)
    xs.push_back(std::uniform_real_distribution<double>(-700, 700)(rng));
  for (int i = 0; i < 1000; i++)
    xs.push_back(std::pow(10.0, std::uniform_real_distribution<double>(-300, 300)(rng)));
  for (Op op : {Op::exp, Op::log}) {
    std::string fn = op_name(op);
    CAPTURE(fn);
    Program p = unary_program(op, DType::f64, (int64_t)xs.size());
    std::vector<std::vector<uint8_t>> inputs(2);
    inputs[0].resize(xs.size() * 8);
    std::memcpy(inputs[0].data(), xs.data(), inputs[0].size());
    inputs[1].assign(xs.size() * 8, 0);
    outputs got = run_compiled(p, inputs, 1);
    std::vector<double> y(xs.size());
    std::memcpy(y.data(), got.bytes[0].data(), y.size() * 8);
    int failures = 0;
    for (size_t i = 0; i < xs.size(); i++) {
      const double want = op == Op::exp ? std::exp(xs[i]) : std::log(xs[i]);
      bool ok;
      if (std::isnan(want))
        ok = std::isnan(y[i]);
      else if (std::isinf(want))
        ok = y[i] == want;
      else
        ok = std::fabs(y[i] - want) <= 1e-13 * std::fabs(want) + (op == Op::exp ? DBL_MIN : 0);
      if (!ok && failures++ < 8)
        FAIL_CHECK(fn << "(" << xs[i] << "): got " << y[i] << ", want " << want);
    }
  }
}

TEST_CASE("an Error thrown from a -fno-rtti file (cpu_target.cpp) keeps its type information") {
  // Before Error had an out-of-line destructor, the linker could keep a vtable copy emitted by a
  // -fno-rtti file, without type info: dynamic_cast/typeid on the caught Error then broke, and
  // UBSan reported e.what() (op_conformance_test under -DCAPGRAPH_SANITIZE=ON).
  bool caught = false;
  try {
    cpu_target_named("no-such-target");
  } catch (const std::exception &e) {
    caught = true;
    CHECK(dynamic_cast<const Error *>(&e) != nullptr);
    CHECK(typeid(e) == typeid(Error));
    CHECK(std::string(e.what()).find("no-such-target") != std::string::npos);
  }
  CHECK(caught);
}

TEST_CASE("CPU targets carry their vector facts: blocks of 16 on AVX-512, 8 on AVX2 and NEON") {
  CpuTarget avx2 = cpu_target_named("cpu-x86_64");
  CHECK(avx2.name == "cpu-x86_64");
  CHECK(avx2.features.find("avx512") == std::string::npos);  // runs on any AVX2 machine
  CHECK(avx2.f32_lanes == 8);
  CHECK(avx2.vector_registers == 16);
  CHECK(avx2.channel_block == 8);
  CHECK(cpu_target_block_registers(avx2, 8) == 16);

  CpuTarget avx512 = cpu_target_named("cpu-x86_64-avx512");
  CHECK(avx512.name == "cpu-x86_64");  // the runtime's architecture name; the features say AVX-512
  CHECK(avx512.features.find("+avx512f") != std::string::npos);
  CHECK(avx512.f32_lanes == 16);
  CHECK(avx512.vector_registers == 32);
  CHECK(avx512.channel_block == 16);
  CHECK(cpu_target_block_registers(avx512, 16) == 32);
  CHECK(cpu_target_block_registers(avx512, 8) == 32);  // a ymm each

  CpuTarget neon = cpu_target_named("cpu-aarch64");
  CHECK(neon.f32_lanes == 4);
  CHECK(neon.vector_registers == 32);
  CHECK(neon.channel_block == 8);
  CHECK(cpu_target_block_registers(neon, 8) == 16);  // a block is two q registers

  // The host target follows the host's features.
  CpuTarget host = cpu_target_named("cpu");
  const bool host_avx512 = host.features.find("+avx512f") != std::string::npos;
  if (host.name == "cpu-x86_64") CHECK(host.channel_block == (host_avx512 ? 16 : 8));
}

TEST_CASE("AVX-512 schedules block by 16 where channels allow and by 8 elsewhere, in one program") {
  // 48 and 32 channels divide by 16; 24 only by 8. The 1x1 conv 48 -> 24 reads 16-blocks and
  // writes 8-blocks; the one 24 -> 32 the other way round.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 8, 6, 5});
  b.initializer("w1", ramp(48 * 8 * 9, 0.02f), {48, 8, 3, 3});
  b.initializer("w2", ramp(24 * 48, 0.03f), {24, 48, 1, 1});
  b.initializer("w3", ramp(32 * 24, 0.03f), {32, 24, 1, 1});
  b.initializer("w4", ramp(3 * 32, 0.05f), {3, 32, 1, 1});
  b.node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv48";
  b.node("Relu", {"c1"}, {"a"}).name = "relu48";
  b.node("Conv", {"a", "w2"}, {"c2"}).name = "conv24";
  b.node("Relu", {"c2"}, {"r2"}).name = "relu24";
  b.node("Conv", {"r2", "w3"}, {"c3"}).name = "conv32";
  b.node("Relu", {"c3"}, {"r3"}).name = "relu32";
  b.node("Conv", {"r3", "w4"}, {"y"}).name = "conv3";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/mixed_blocks.onnx";
  b.save(path);
  CompileOptions opt;
  opt.target = "cpu-x86_64-avx512";
  CompileReport r;
  Program p = compile_schedule(path, opt, &r);
  CHECK(r.blocked_buffers >= 3);
  std::map<std::string, int64_t> inner;  // first ONNX node -> innermost parallel extent
  for (const Kernel &k : p.kernels)
    if (!k.source_nodes.empty()) inner[k.source_nodes[0]] = k.axes[k.n_parallel - 1];
  CHECK(inner["conv48"] == 16);
  CHECK(inner["conv24"] == 8);
  CHECK(inner["conv32"] == 16);
  // On an AVX2 target the same model blocks by 8 only.
  opt.target = "cpu-x86_64";
  Program p8 = compile_schedule(path, opt, nullptr);
  for (const Kernel &k : p8.kernels)
    if (!k.source_nodes.empty() && k.source_nodes[0] == "conv48")
      CHECK(k.axes[k.n_parallel - 1] == 8);
  // Either way the code computes what the interpreter does (on this machine's CPU target).
  check_program(p);
  check_program(p8);
}

// The blocked program p (compiled from `path` with `opt`) computes what the unblocked one does
// (both interpreted), and the compiled code what the interpreter does.
void check_blocked_like_plain(const Program &p, const std::string &path,
                              const CompileOptions &opt) {
  setenv("CAPGRAPH_NO_BLOCK", "1", 1);
  Program plain = compile_schedule(path, opt, nullptr);
  unsetenv("CAPGRAPH_NO_BLOCK");
  std::vector<std::vector<uint8_t>> in_p(p.buffers.size()), in_plain(plain.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); i++)
    if (p.buffers[i].kind != Buffer::Kind::constant) in_p[i].assign(p.buffers[i].numel * 4, 0);
  for (size_t i = 0; i < plain.buffers.size(); i++)
    if (plain.buffers[i].kind != Buffer::Kind::constant)
      in_plain[i].assign(plain.buffers[i].numel * 4, 0);
  inputs_fill(p, in_p, 3);
  inputs_fill(plain, in_plain, 3);
  outputs_compare(p, run_interpreter(p, in_p), run_interpreter(plain, in_plain), 2e-5);
  check_program(p);
}

TEST_CASE(
    "matrix-vector products against row-major weights: R-row groups, row and reduction tails") {
  // 37 outputs: no multiple of 8, so no register tile; 100 = 6 x 16 + 4 (or 12 x 8 + 4): a masked
  // tail step on every target. Batch 1, 3 (one block of rows), 8 (one full block) and 11 (two
  // blocks, 6 + 5: the last row recomputed), with a bias and an activation after.
  for (int64_t m : {1, 3, 8, 11}) {
    CAPTURE(m);
    ModelBuilder b(13);
    b.input("x", DataType::float32, {m, 100});
    b.initializer("w", ramp(37 * 100, 0.01f), {37, 100});
    b.initializer("bias", ramp(37, 0.3f), {37});
    b.node("Gemm", {"x", "w", "bias"}, {"g"}, {attr_int("transB", 1)}).name = "fc";
    b.node("Relu", {"g"}, {"y"}).name = "relu";
    b.output("y", DataType::float32);
    Program p = schedule(b, "matvec" + std::to_string(m));
    const CpuTarget t = cpu_target_named("cpu");
    int planned = 0;
    for (const Kernel &k : p.kernels) {
      MatvecPlan mp = matvec_plan(k, p, t);
      if (!mp.ok) continue;
      planned++;
      // Every row of a block shares one pass over W: rows of at most 8, as even as they come.
      CHECK(mp.rows == (m == 11 ? 6 : m));
      CHECK(matvec_work_size(k, mp) == (m == 11 ? 2 : 1) * ((37 + mp.R - 1) / mp.R));
    }
    CHECK(planned == 1);
    check_program(p);
  }
}

TEST_CASE(
    "products against [K, N] operands: weights packed reduction-innermost, activations "
    "walked as vectors of outputs, tails masked") {
  // 37 outputs (a last vector of 5 or 37 - 32 lanes), reductions of 20; a weight (MatMul by an
  // initializer: packed to [N, K] at compile time, then the dot layout) and an activation (both
  // operands inputs: walked along its rows) as the [K, N] operand. 3 rows (one block) and 10
  // (two blocks of 5).
  for (bool weight : {true, false})
    for (int64_t m : {3, 10}) {
      CAPTURE(weight);
      CAPTURE(m);
      ModelBuilder b(13);
      b.input("x", DataType::float32, {m, 20});
      if (weight)
        b.initializer("w", ramp(20 * 37, 0.02f), {20, 37});
      else
        b.input("w", DataType::float32, {20, 37});
      b.node("MatMul", {"x", "w"}, {"m"}).name = "matmul";
      b.node("Tanh", {"m"}, {"y"}).name = "tanh";
      b.output("y", DataType::float32);
      Program p = schedule(b, (weight ? "rows_weight" : "rows_activation") + std::to_string(m));
      const CpuTarget t = cpu_target_named("cpu");
      int planned = 0;
      for (const Kernel &k : p.kernels) {
        MatvecPlan mp = matvec_plan(k, p, t);
        if (!mp.ok) continue;
        planned++;
        CHECK(mp.along_n == !weight);
        CHECK(mp.rows == (m == 3 ? 3 : 5));
      }
      CHECK(planned == 1);
      check_program(p);
    }
}

TEST_CASE("grouped convolutions with 8 and 16 channels per group stay channel-blocked") {
  // 1x1 8->32, 3x3 with 4 groups of 8, 1x1 32->32, 3x3 with 2 groups of 16, 1x1 to the output:
  // every intermediate is blocked (the group adds whole blocks to the channel index), and the
  // program computes what the unblocked one does.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 8, 9, 7});
  b.initializer("w1", ramp(32 * 8, 0.05f), {32, 8, 1, 1});
  b.initializer("w2", ramp(32 * 8 * 9, 0.03f), {32, 8, 3, 3});
  b.initializer("w3", ramp(32 * 32, 0.03f), {32, 32, 1, 1});
  b.initializer("w4", ramp(32 * 16 * 9, 0.02f), {32, 16, 3, 3});
  b.initializer("w5", ramp(5 * 32, 0.05f), {5, 32, 1, 1});
  b.node("Conv", {"x", "w1"}, {"c1"}).name = "conv1";
  b.node("Relu", {"c1"}, {"r1"}).name = "relu1";
  b.node("Conv", {"r1", "w2"}, {"c2"}, {attr_int("group", 4), attr_ints("pads", {1, 1, 1, 1})})
      .name = "group8";
  b.node("Conv", {"c2", "w3"}, {"c3"}).name = "conv3";
  b.node("Conv", {"c3", "w4"}, {"c4"},
         {attr_int("group", 2), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})})
      .name = "group16";
  b.node("Relu", {"c4"}, {"r4"}).name = "relu4";
  b.node("Conv", {"r4", "w5"}, {"y"}).name = "conv5";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/grouped_blocks.onnx";
  b.save(path);
  for (const char *target : {"cpu-x86_64-avx512", "cpu-x86_64"}) {
    CAPTURE(target);
    CompileOptions opt;
    opt.target = target;
    CompileReport r;
    Program p = compile_schedule(path, opt, &r);
    CHECK(r.blocked_buffers >= 4);
    for (const Kernel &k : p.kernels)
      if (!k.source_nodes.empty() &&
          (k.source_nodes[0] == "group8" || k.source_nodes[0] == "group16")) {
        CAPTURE(k.source_nodes[0]);
        CHECK((k.axes[k.n_parallel - 1] == 8 || k.axes[k.n_parallel - 1] == 16));
      }
    check_blocked_like_plain(p, path, opt);
  }
}

TEST_CASE(
    "a product that cannot write the blocked layout reads a reordered row-layout copy of its "
    "input") {
  // 3 -> 24 channels (blocked by 8), then 24 -> 58 (58 does not divide by 8): the second conv gets
  // a reorder of its input to the row layout; the first conv still writes blocks.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 12, 11});
  b.initializer("w1", ramp(24 * 3 * 9, 0.05f), {24, 3, 3, 3});
  b.initializer("w2", ramp(58 * 24, 0.03f), {58, 24, 1, 1});
  b.initializer("w3", ramp(4 * 58, 0.03f), {4, 58, 1, 1});
  b.node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv24";
  b.node("Relu", {"c1"}, {"r1"}).name = "relu24";
  b.node("Conv", {"r1", "w2"}, {"c2"}).name = "conv58";
  b.node("Relu", {"c2"}, {"r2"}).name = "relu58";
  b.node("Conv", {"r2", "w3"}, {"y"}).name = "conv4";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/reorder.onnx";
  b.save(path);
  CompileOptions opt;
  opt.target = "cpu-x86_64";
  Program p = compile_schedule(path, opt, nullptr);
  int reorders = 0;
  for (size_t i = 0; i < p.kernels.size(); i++)
    if (p.kernels[i].name == "reorder") {
      reorders++;
      REQUIRE(i + 1 < p.kernels.size());
      CHECK(p.kernels[i + 1].source_nodes[0] == "conv58");  // right before the product it feeds
    }
  CHECK(reorders == 1);
  for (const Kernel &k : p.kernels)
    if (!k.source_nodes.empty() && k.source_nodes[0] == "conv24")
      CHECK(k.axes[k.n_parallel - 1] == 8);
  check_blocked_like_plain(p, path, opt);
  setenv("CAPGRAPH_NO_REORDER", "1", 1);
  Program no_reorder = compile_schedule(path, opt, nullptr);
  unsetenv("CAPGRAPH_NO_REORDER");
  for (const Kernel &k : no_reorder.kernels) CHECK(k.name != "reorder");
}

TEST_CASE(
    "8-channel blocks on 16-lane targets: two blocks per accumulator, odd block counts, every "
    "epilogue") {
  // 40 (5 blocks of 8) and 24 (3) channels do not divide by 16: on AVX-512 their products pair
  // blocks in zmm accumulators; 5 and 3 blocks leave a last pair with one real block (never
  // stored). A 3x3 conv with padding has border tiles; the Gemm to 72 outputs (9 blocks) is a
  // matrix-vector tile with several accumulator sets.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 16, 7, 9});
  b.initializer("w1", ramp(40 * 16 * 9, 0.02f), {40, 16, 3, 3});
  b.initializer("w2", ramp(24 * 40, 0.03f), {24, 40, 1, 1});
  b.initializer("w3", ramp(72 * 24, 0.03f), {72, 24});
  b.initializer("bias", ramp(72, 0.1f), {72});
  b.node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv40";
  b.node("Relu", {"c1"}, {"r1"}).name = "relu40";
  b.node("Conv", {"r1", "w2"}, {"c2"}).name = "conv24";
  b.node("Relu", {"c2"}, {"r2"}).name = "relu24";
  b.node("GlobalAveragePool", {"r2"}, {"g"}).name = "gap";
  b.node("Flatten", {"g"}, {"f"}).name = "flatten";
  b.node("Gemm", {"f", "w3", "bias"}, {"y"}, {attr_int("transB", 1)}).name = "fc72";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/paired_blocks.onnx";
  b.save(path);
  CompileOptions opt;
  opt.target = "cpu-x86_64-avx512";
  Program p = compile_schedule(path, opt, nullptr);
  const CpuTarget avx512 = cpu_target_named("cpu-x86_64-avx512"),
                  avx2 = cpu_target_named("cpu-x86_64");
  std::map<std::string, ChannelTilePlan> plans;
  for (const Kernel &k : p.kernels)
    if (!k.source_nodes.empty()) plans[k.source_nodes[0]] = channel_tile_plan(k, p, avx512);
  for (const char *node : {"conv40", "conv24"}) {
    CAPTURE(node);
    REQUIRE(plans[node].ok);
    CHECK(plans[node].L == 8);
    CHECK(plans[node].pair == 2);
    CHECK(plans[node].VB % 2 == 0);
    // Accumulators, their weight vectors and one broadcast fit the 32 zmm registers.
    CHECK(plans[node].R * (plans[node].VB / 2) + plans[node].VB / 2 + 1 <= 32);
  }
  // The same program on an AVX2 target: a block is one ymm register, nothing to pair.
  for (const Kernel &k : p.kernels)
    if (!k.source_nodes.empty() && k.source_nodes[0] == "conv24") {
      CHECK(channel_tile_plan(k, p, avx2).pair == 1);
      // A forced tile shape that fits no register file gives no plan (it once gave a plan of one
      // tile, which computed a sliver of the output).
      setenv("CAPGRAPH_TILE", "30,8", 1);
      CHECK_FALSE(channel_tile_plan(k, p, avx512).ok);
      unsetenv("CAPGRAPH_TILE");
    }
  // Paired or not (the host's target decides), scalar and vector epilogues compute what the
  // interpreter does (check_blocked_like_plain runs the program with the vector epilogue).
  setenv("CAPGRAPH_SCALAR_EPILOGUE", "1", 1);
  check_program(p);
  unsetenv("CAPGRAPH_SCALAR_EPILOGUE");
  check_blocked_like_plain(p, path, opt);
}

TEST_CASE(
    "a reorder pays from 8 multiply-adds per copied element: 48 -> 12 channels gets one, 48 -> 4 "
    "not") {
  // PP-OCRv4 det's 1x1 convs 48 -> 12 and 48 -> 18 read their blocked inputs with a stride of one
  // block at 2-3 GFLOP/s (15 and 7 ms) while the bar was 32 multiply-adds per element.
  // 16 x 12 positions: the reorder walks them 16 at a time (reorder_tile,
  // compiler/schedule/layout.cpp).
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 16, 12});
  b.initializer("w1", ramp(48 * 3 * 9, 0.05f), {48, 3, 3, 3});
  b.initializer("w12", ramp(12 * 48, 0.03f), {12, 48, 1, 1});
  b.initializer("w4", ramp(4 * 48, 0.03f), {4, 48, 1, 1});
  b.node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv48";
  b.node("Relu", {"c1"}, {"r1"}).name = "relu48";
  b.node("Conv", {"r1", "w12"}, {"y12"}).name = "conv12";
  b.node("Conv", {"r1", "w4"}, {"y4"}).name = "conv4";
  b.output("y12", DataType::float32);
  b.output("y4", DataType::float32);
  const std::string path = scratch_dir() + "/reorder_bar.onnx";
  b.save(path);
  CompileOptions opt;
  opt.target = "cpu-x86_64";
  Program p = compile_schedule(path, opt, nullptr);
  std::vector<std::string> fed;
  for (size_t i = 0; i + 1 < p.kernels.size(); i++)
    if (p.kernels[i].name == "reorder") {
      fed.push_back(p.kernels[i + 1].source_nodes[0]);
      // [N, C/8, 192/16, 8, 16]: 16 positions innermost, the channel block just outside them.
      const Kernel &r = p.kernels[i];
      CHECK(r.axes == Shape{1, 6, 12, 8, 16});
      CHECK(r.n_parallel == 5);
    }
  CHECK(fed == std::vector<std::string>{"conv12"});
  check_blocked_like_plain(p, path, opt);
}

TEST_CASE(
    "a window reduction writing blocks after a channel shuffle reads a blocked copy: odd widths, "
    "strides 1 and 2") {
  // ShuffleNet's channel shuffle (Reshape, Transpose, Reshape) writes its output through a 5-D view
  // no block fits; a depthwise conv or pool after it writes blocks and, without a reorder, read its
  // input one channel per lane a map apart (shufflenet_like's Conv_87: 4.7 GFLOP/s). 7, 5 and 3
  // wide output rows (tails of every vector width), stride 1 and 2 (each input read 9 and 2.25
  // times: a reorder each) and a 3x3 stride-3 window (each read once: no reorder).
  struct Case {
    const char *op;
    int64_t stride, out;
    bool reorder;
  };
  const Case cases[] = {{"Conv", 1, 7, true},  {"Conv", 1, 5, true},   {"Conv", 1, 3, true},
                        {"Conv", 2, 7, true},  {"Conv", 2, 5, true},   {"Conv", 2, 3, true},
                        {"Conv", 3, 3, false}, {"MaxPool", 2, 7, true}};
  for (const Case &c : cases)
    for (const char *target : {"cpu-x86_64-avx512", "cpu-x86_64"}) {
      CAPTURE(c.op);
      CAPTURE(c.stride);
      CAPTURE(c.out);
      CAPTURE(target);
      const int64_t C = 16, pad = c.stride == 3 ? 0 : 1,
                    H = c.stride == 1 ? c.out : c.stride * c.out, W = H;
      ModelBuilder b(13);
      b.input("x", DataType::float32,
              {1, C, H + 1, W});  // one more row than column: rows and columns differ
      b.initializer("w1", ramp(C * C, 0.03f), {C, C, 1, 1});
      b.initializer("split", std::vector<int64_t>{1, 2, C / 2, H + 1, W}, {5});
      b.initializer("merge", std::vector<int64_t>{1, C, H + 1, W}, {4});
      b.initializer("wdw", ramp(C * 9, 0.05f), {C, 1, 3, 3});
      b.initializer("w2", ramp(C * C, 0.02f), {C, C, 1, 1});
      b.node("Conv", {"x", "w1"}, {"c1"}).name = "conv1";
      b.node("Reshape", {"c1", "split"}, {"s5"}).name = "split";
      b.node("Transpose", {"s5"}, {"t5"}, {attr_ints("perm", {0, 2, 1, 3, 4})}).name = "shuffle";
      b.node("Reshape", {"t5", "merge"}, {"sh"}).name = "merge";
      const std::vector<int64_t> pads = {pad, pad, pad, pad}, strides = {c.stride, c.stride};
      if (std::string(c.op) == "Conv")
        b.node("Conv", {"sh", "wdw"}, {"d"},
               {attr_int("group", C), attr_ints("pads", pads), attr_ints("strides", strides)})
            .name = "window";
      else
        b.node("MaxPool", {"sh"}, {"d"},
               {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", pads),
                attr_ints("strides", strides)})
            .name = "window";
      b.node("Relu", {"d"}, {"r"}).name = "relu";
      b.node("Conv", {"r", "w2"}, {"y"}).name = "conv2";
      b.output("y", DataType::float32);
      const std::string path = scratch_dir() + "/shuffle_window.onnx";
      b.save(path);
      CompileOptions opt;
      opt.target = target;
      Program p = compile_schedule(path, opt, nullptr);
      int reorders = 0, windows = 0;
      for (size_t i = 0; i < p.kernels.size(); i++) {
        const Kernel &k = p.kernels[i];
        // Right before the reduction it feeds (conv2, a model output, reads a row-layout copy of
        // the blocked relu output: the other direction).
        if (k.name == "reorder" && i + 1 < p.kernels.size() &&
            p.kernels[i + 1].source_nodes[0] == "window")
          reorders++;
        if (k.source_nodes.empty() || k.source_nodes[0] != "window" || k.name == "reorder")
          continue;
        windows++;
        // The window writes blocks of channels (the innermost parallel axis) either way; with the
        // reorder it also reads them, and a conv runs as a channel tile.
        CHECK((k.axes[k.n_parallel - 1] == 8 || k.axes[k.n_parallel - 1] == 16));
        if (std::string(c.op) == "Conv")
          CHECK(channel_tile_plan(k, p, cpu_target_named(target)).ok == c.reorder);
      }
      CHECK(windows == 1);
      CHECK(reorders == (c.reorder ? 1 : 0));
      check_blocked_like_plain(p, path, opt);
    }
}

TEST_CASE("every float32 elementwise op is vector-evaluable, or listed here as scalar on purpose") {
  // A channel tile's epilogue and a fake-quantizing map run in vectors only where
  // expr_vector_evaluable accepts the whole expression; an op it lacks silently makes such a
  // kernel scalar (a QDQ conv's round and casts once cost 200x). A new op lands in one of the two.
  const std::set<Op> scalar_on_purpose = {
      Op::iota, Op::logical_not, Op::logical_and, Op::logical_or, Op::select,  // no float32 result
      Op::lt,   Op::le,          Op::gt,          Op::ge,         Op::eq,
      Op::ne,   // boolean results
      Op::mod,  // float Mod (fmod = 0 form): no model epilogue seen with it
  };
  builder b;
  int x = b.buffer(Buffer::Kind::input, DType::f32, "x", {16});
  for (int o = 0; o < kOpCount; o++) {
    Op op = (Op)o;
    CAPTURE(op_name(op));
    Kernel k;
    k.axes = {16};
    k.n_parallel = 1;
    int l = k.expr_load(contiguous(x, {16}), DType::f32);
    int n = op_arity(op);
    if (op == Op::load)
      k.result = l;
    else if (op == Op::constant)
      k.result = k.expr_const(1.5, DType::f32);
    else if (op == Op::acc)
      k.result = k.expr_unary(Op::acc, -1, DType::f32);
    else if (op == Op::cast)
      k.result = k.expr_cast(l, DType::f32);
    else if (n == 1)
      k.result = k.expr_unary(op, l, DType::f32);
    else if (n == 2)
      k.result = k.expr_binary(op, l, k.expr_const(2, DType::f32), DType::f32);
    else
      continue;
    CHECK(expr_vector_evaluable(k, b.p, k.result, 0) != (scalar_on_purpose.count(op) > 0));
  }
}

TEST_CASE(
    "QDQ fake quantization runs in vectors in conv epilogues and maps, rounding half to even and "
    "saturating") {
  // Integer-valued activations and weights keep every conv sum exact in any order, and scales of
  // 2, 4 and 0.5 make x / scale land on halves: round half to even decides them (truncation or
  // half-away would differ by one scale), and conv sums up to +-864 saturate uint8 at both ends.
  // Conv -> per-tensor uint8 Q/DQ -> Conv -> per-axis int8 Q/DQ (fused into the convs), and a
  // per-tensor uint8 Q/DQ alone on an input of 105 elements (a map: vector body and scalar tail).
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 16, 6, 7});
  b.input("u", DataType::float32, {1, 3, 5, 7});
  std::vector<float> w1(16 * 16 * 9), w2(16 * 16);
  for (size_t i = 0; i < w1.size(); i++) w1[i] = float((int)(i * 7 % 5) - 2);
  for (size_t i = 0; i < w2.size(); i++) w2[i] = float((int)(i * 5 % 3) - 1);
  b.initializer("w1", w1, {16, 16, 3, 3});
  b.initializer("w2", w2, {16, 16, 1, 1});
  b.initializer("s1", std::vector<float>{2.0f}, {});
  b.initializer(tensor_make("z1", DataType::uint8, std::vector<uint8_t>{100}, {}));
  std::vector<float> s2(16);
  std::vector<int8_t> z2(16);
  for (int c = 0; c < 16; c++) s2[c] = c % 2 ? 4.0f : 2.0f, z2[c] = (int8_t)(c % 11 - 5);
  b.initializer("s2", s2, {16});
  b.initializer(tensor_make("z2", DataType::int8, z2, {16}));
  b.initializer("s3", std::vector<float>{0.5f}, {});
  b.initializer(tensor_make("z3", DataType::uint8, std::vector<uint8_t>{128}, {}));
  b.node("Conv", {"x", "w1"}, {"c1"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv1";
  b.node("QuantizeLinear", {"c1", "s1", "z1"}, {"q1"});
  b.node("DequantizeLinear", {"q1", "s1", "z1"}, {"d1"});
  b.node("Conv", {"d1", "w2"}, {"c2"}).name = "conv2";
  b.node("QuantizeLinear", {"c2", "s2", "z2"}, {"q2"}, {attr_int("axis", 1)});
  b.node("DequantizeLinear", {"q2", "s2", "z2"}, {"y"}, {attr_int("axis", 1)});
  b.node("QuantizeLinear", {"u", "s3", "z3"}, {"q3"});
  b.node("DequantizeLinear", {"q3", "s3", "z3"}, {"y3"});
  b.output("y", DataType::float32);
  b.output("y3", DataType::float32);
  Program p = schedule(b, "qdq_vector");
  const CpuTarget t = cpu_target_named("cpu");
  // Channel tiles evaluate along their lane axis; row-layout tiles and maps along the inner axis.
  int epilogues = 0, maps = 0;
  for (const Kernel &k : p.kernels) {
    if (k.name.find("quantize") == std::string::npos) continue;
    CAPTURE(k.name);
    ChannelTilePlan cp = channel_tile_plan(k, p, t);
    CHECK(expr_vector_evaluable(k, p, k.result, cp.ok ? cp.v : k.n_parallel - 1));
    (k.reduce == Reduce::none ? maps : epilogues)++;
  }
  CHECK(epilogues == 2);
  CHECK(maps == 1);
  std::vector<std::vector<uint8_t>> inputs(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); i++)
    if (p.buffers[i].kind != Buffer::Kind::constant)
      inputs[i].assign(p.buffers[i].numel * dtype_size(p.buffers[i].dtype), 0);
  std::vector<float> uv(105);
  for (const auto &port : p.inputs) {
    const Buffer &buf = p.buffers[port.buffer];
    for (int64_t i = 0; i < buf.numel; i++) {
      // x: integers in [-3, 3]; u: quarters in [-70, 70], so u / 0.5 + 128 crosses 0 and 255.
      float v =
          port.name == "x" ? float((int)(i * 13 % 7) - 3) : float((int)(i * 37 % 561) - 280) / 4;
      if (port.name == "u") uv[i] = v;
      element_store(DType::f32, inputs[port.buffer].data(), i, v);
    }
  }
  outputs want = run_interpreter(p, inputs);
  // y3 from the ONNX definition directly: saturate(roundeven(u / 0.5) + 128), then (q - 128) * 0.5.
  for (size_t o = 0; o < p.outputs.size(); o++)
    if (p.outputs[o].name == "y3")
      for (int64_t i = 0; i < 105; i++) {
        float q = std::clamp(std::nearbyint(uv[i] / 0.5f) + 128, 0.0f, 255.0f);
        REQUIRE(element_load(DType::f32, want.bytes[o].data(), i) == (q - 128) * 0.5f);
      }
  outputs_compare(p, run_compiled(p, inputs, 1), want, 0);
  outputs_compare(p, run_compiled(p, inputs, 3), want, 0);
  setenv("CAPGRAPH_SCALAR_EPILOGUE", "1", 1);
  outputs_compare(p, run_compiled(p, inputs, 1), want, 0);
  unsetenv("CAPGRAPH_SCALAR_EPILOGUE");
}

TEST_CASE(
    "value ranges: a clamp bounds, rounding makes integers, a cast pair is kept only inside its "
    "type") {
  builder b;
  int x = b.buffer(Buffer::Kind::input, DType::f32, "x", {16}),
      z = b.buffer(Buffer::Kind::constant, DType::u8, "z", {1});
  Kernel k;
  k.axes = {16};
  k.n_parallel = 1;
  int v = k.expr_unary(Op::round, k.expr_load(contiguous(x, {16}), DType::f32), DType::f32);
  Access za;
  za.buffer = z;
  za.dims.push_back(dim({}, 1, 1));
  v = k.expr_binary(Op::add, v, k.expr_cast(k.expr_load(za, DType::u8), DType::f32), DType::f32);
  ValueRange r = expr_range(k, b.p, v);
  CHECK(r.integral);
  CHECK(r.lo == -INFINITY);
  int clamped =
      k.expr_binary(Op::min, k.expr_binary(Op::max, v, k.expr_const(0, DType::f32), DType::f32),
                    k.expr_const(255, DType::f32), DType::f32);
  r = expr_range(k, b.p, clamped);
  CHECK(r.lo == 0);
  CHECK(r.hi == 255);
  CHECK(r.integral);
  // Inside uint8: the pair is vector-evaluable; into int8 (255 > 127) it is not.
  k.result = k.expr_cast(k.expr_cast(clamped, DType::u8), DType::f32);
  CHECK(expr_vector_evaluable(k, b.p, k.result, 0));
  k.result = k.expr_cast(k.expr_cast(clamped, DType::i8), DType::f32);
  CHECK_FALSE(expr_vector_evaluable(k, b.p, k.result, 0));
  // Unclamped: the fused (saturate) and stored (wrap) forms differ, so not.
  k.result = k.expr_cast(k.expr_cast(v, DType::u8), DType::f32);
  CHECK_FALSE(expr_vector_evaluable(k, b.p, k.result, 0));
}

// Vector register spills (the register allocator's "16/32/64-byte Spill" comments) in assembly
// text.
static int vector_spills(const std::string &text) {
  int n = 0;
  for (const char *c : {"# 16-byte Spill", "# 32-byte Spill", "# 64-byte Spill"})
    for (size_t at = text.find(c); at != std::string::npos; at = text.find(c, at + 1)) n++;
  return n;
}

TEST_CASE(
    "unrolled window offsets do not spill: grouped and depthwise 3x3 tiles keep X's loads apart") {
  // regnet_like's grouped conv (4 groups of 8 channels on 56x56) and a wide depthwise one. Merged
  // across the unrolled window offsets, the input loads outnumbered the registers: LLVM spilled
  // them (1377 vector spills on AVX-512, 820 on AVX2, a 7 KB frame) and the kernel's time
  // followed the stack's address (4K aliasing).
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 32, 56, 56});
  b.initializer("wg", ramp(32 * 8 * 9, 0.03f), {32, 8, 3, 3});
  b.initializer("wd", ramp(32 * 9, 0.05f), {32, 1, 3, 3});
  b.node("Conv", {"x", "wg"}, {"g"}, {attr_int("group", 4), attr_ints("pads", {1, 1, 1, 1})}).name =
      "grouped";
  b.node("Relu", {"g"}, {"r"});
  b.node("Conv", {"r", "wd"}, {"y"}, {attr_int("group", 32), attr_ints("pads", {1, 1, 1, 1})})
      .name = "depthwise";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/window_spill.onnx";
  b.save(path);
  for (const char *target : {"cpu-x86_64-avx512", "cpu-x86_64"}) {
    CAPTURE(target);
    CompileOptions opt;
    opt.target = target;
    CompileReport r;
    Program p = compile_schedule(path, opt, &r);
    const std::string text = cpu_codegen_assembly(p, cpu_target_named(target));
    CHECK(text.find("conv3x3_g4") != std::string::npos);  // the kernels are there
    CHECK(text.find("conv3x3_dw") != std::string::npos);
    // AVX-512: none. AVX2 (no broadcast operand): 14 accumulators, a weight row and a broadcast
    // fill the 16 registers, and the allocator spills about 100 accumulator copies at tile ends.
    CHECK(vector_spills(text) <= (std::string(target) == "cpu-x86_64" ? 150 : 16));
    check_blocked_like_plain(p, path, opt);
  }
}

static int fma_instructions(const std::string &text) {
  int n = 0;
  for (size_t at = text.find("\tvfmadd"); at != std::string::npos;
       at = text.find("\tvfmadd", at + 1))
    n++;
  return n;
}

TEST_CASE(
    "fixed border tiles are not written out where each would run once: a small strided conv") {
  // 3x3 s2 8 -> 16 on 16x16 (view_models' small CNN): every tile of its flat 8x8 map touches the
  // border, and the plan wrote 11 fixed tiles x 9 window offsets x 8 lanes x 12 accumulators out,
  // 9504 multiply-adds each run once per replay: 48k lines of IR, 27 s in LLVM's LICM (one-trip
  // channel loops around each) and a kernel 2x slower than tiles along one axis.
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 8, 16, 16});
  b.initializer("wa", ramp(8 * 8, 0.05f), {8, 8, 1, 1});
  b.initializer("w", ramp(16 * 8 * 9, 0.02f), {16, 8, 3, 3});
  b.initializer("wb", ramp(16 * 16, 0.04f), {16, 16, 1, 1});
  // 1x1 convs around it, so that it reads and writes channel blocks (conv_layer_gen's `inner`).
  b.node("Conv", {"x", "wa"}, {"a"}).name = "in";
  b.node("Conv", {"a", "w"}, {"d"}, {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})})
      .name = "down";
  b.node("Conv", {"d", "wb"}, {"y"}).name = "out";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/fixed_tiles_small.onnx";
  b.save(path);
  for (const char *target : {"cpu-x86_64-avx512", "cpu-x86_64"}) {
    CAPTURE(target);
    CompileOptions opt;
    opt.target = target;
    CompileReport r;
    Program p = compile_schedule(path, opt, &r);
    const std::string text = cpu_codegen_assembly(p, cpu_target_named(target));
    // The whole conv is 64 positions x 9 offsets x 8 channels x 2 blocks = 9216 vector FMAs.
    CHECK(fma_instructions(text) > 0);
    CHECK(fma_instructions(text) <= 2048);
    check_program(p);
  }
}

TEST_CASE("pooling windows are checked once per row: a padded max pool vectorizes") {
  // The row layout hoists a window's padding checks out of the tile loop. Until 2026-11-29 it
  // took the body's own load for one of the result's and hoisted nothing: each read kept its own
  // check (a select on the index), LLVM left the loop scalar, and a 3x3 stride-2 max pool ran
  // at 2% of memory bandwidth (1.3 ms for 64x112x112, 0.32 ms after).
  for (int64_t stride : {1, 2}) {
    CAPTURE(stride);
    ModelBuilder b =
        one_node("MaxPool", {{1, 8, 17, 40}},
                 {attr_ints("kernel_shape", {3, 3}), attr_ints("strides", {stride, stride}),
                  attr_ints("pads", {1, 1, 1, 1})});
    const std::string path = scratch_dir() + "/maxpool_rows" + std::to_string(stride) + ".onnx";
    b.save(path);
    for (const char *target : {"cpu-x86_64-avx512", "cpu-x86_64"}) {
      CAPTURE(target);
      CompileOptions opt;
      opt.target = target;
      Program p = compile_schedule(path, opt, nullptr);
      const std::string text = cpu_codegen_assembly(p, cpu_target_named(target));
      // Vector loads of the window's rows: no vector built lane by lane from checked indices
      // (vinsertps, vgatherdps: 12-17 of them before the fix), and packed compares for the
      // NaN-propagating max.
      for (const char *lane_by_lane : {"vinsertps", "vpinsrd", "vgather"})
        CHECK(text.find(lane_by_lane) == std::string::npos);
      CHECK(text.find("vcmpunordps") != std::string::npos);
      check_program(p);
    }
  }
}

TEST_CASE("fixed border tiles write out a bounded number of multiply-adds per kernel") {
  // A 3x3 conv 64 -> 64 on 7x7, as resnet18's last stage (512 channels there): its flat 7x7 map
  // is all fixed tiles, and each runs 32 times per replay (8 input blocks x 4 o tiles), so the
  // run count let 9 tiles x 9 window offsets x 6 positions x 2 columns x 8 lanes = 7776
  // multiply-adds through (72k lines of IR, ~1.9 s of LLVM per kernel at 512 channels). Past
  // kFixedFmasMax the fixed tiles keep the 8 lanes a loop.
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 64, 7, 7});
  b.initializer("wa", ramp(64 * 64, 0.01f), {64, 64, 1, 1});
  b.initializer("w", ramp(64 * 64 * 9, 0.005f), {64, 64, 3, 3});
  b.initializer("wb", ramp(64 * 64, 0.01f), {64, 64, 1, 1});
  b.node("Conv", {"x", "wa"}, {"a"}).name = "in";
  b.node("Conv", {"a", "w"}, {"d"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "mid";
  b.node("Conv", {"d", "wb"}, {"y"}).name = "out";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/fixed_tiles_bounded.onnx";
  b.save(path);
  for (const char *target : {"cpu-x86_64-avx512", "cpu-x86_64"}) {
    CAPTURE(target);
    CompileOptions opt;
    opt.target = target;
    CompileReport r;
    Program p = compile_schedule(path, opt, &r);
    bool looped = false;
    for (const Kernel &k : p.kernels) {
      const ChannelTilePlan cp = channel_tile_plan(k, p, cpu_target_named(target));
      if (!cp.ok) continue;
      CAPTURE(k.name);
      CHECK(cp.fixed_fmas <= 2048);
      looped = looped || cp.lanes_looped;
    }
    // 8-lane blocks (AVX2) are where the lanes are written out, and so where the bound bites.
    if (std::string(target) == "cpu-x86_64") CHECK(looped);
    const std::string text = cpu_codegen_assembly(p, cpu_target_named(target));
    CHECK(fma_instructions(text) > 0);
    CHECK(fma_instructions(text) <= 3000);
    check_program(p);
  }
}

TEST_CASE("the capture does not depend on the number of code generation threads") {
  // Unique kernels go to a fixed number of objects, balanced by their estimated cost, and the
  // threads pull objects: 1, 2 or 4 threads write the same bytes. Until then each thread had
  // its own object, dealt round-robin, so the capture changed with the thread count.
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 8, 20, 20});
  std::string at = "x";
  int64_t c = 8;
  const int64_t widths[] = {16, 24, 16, 32, 8, 40, 16, 24, 48, 8};
  for (int i = 0; i < 10; i++) {  // ten convs of different shapes, each with its activation
    const int64_t k = i % 3 == 1 ? 3 : 1, n = widths[i];
    const std::string w = "w" + std::to_string(i), y = "c" + std::to_string(i);
    b.initializer(w, ramp(size_t(n * c * k * k), 0.01f), {n, c, k, k});
    b.node("Conv", {at, w}, {y}, {attr_ints("pads", {k / 2, k / 2, k / 2, k / 2})}).name = y;
    b.node(i % 2 ? "Relu" : "Sigmoid", {y}, {"a" + std::to_string(i)});
    at = "a" + std::to_string(i), c = n;
  }
  b.node("ReduceMean", {at}, {"y"}, {attr_ints("axes", {2, 3})});
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/jobs_identical.onnx";
  b.save(path);
  // The CPU and the LLVM GPU families of this build (their spine, llvm_gpu.cpp, as well).
  // cpu-x86_64 (AVX2) as well: its 3x3 convs over 4 or more input blocks compile without loop
  // strength reduction, the rest with it, so its objects are of two kinds.
  std::vector<std::string> targets = {"cpu", "cpu-x86_64"};
  for (const TargetEntry *t : target_entries())
    if (std::string(t->family) == "amd" || std::string(t->family) == "nv")
      targets.push_back(std::string(t->family) == "amd" ? "amd-gfx1100" : "nv-sm90");
  for (const std::string &target : targets) {
    CAPTURE(target);
    std::vector<uint8_t> first;
    for (int jobs : {1, 2, 4}) {
      CAPTURE(jobs);
      CompileOptions opt;
      opt.target = target;
      opt.jobs = jobs;
      CompileReport r;
      std::vector<uint8_t> cap = compile_model(path, opt, &r);
      CHECK(r.unique_kernels > 8);  // more than the objects: some hold several kernels
      if (first.empty())
        first = cap;
      else
        CHECK(cap == first);
    }
  }
}

TEST_CASE("CAPGRAPH_NO_LSR: kernels without loop strength reduction, and the option put back") {
  // The switch is LLVM's process-wide option `disable-lsr`, set for each code generation pipeline
  // under a lock: with the knob the code must change (the option took effect) and still compute
  // the interpreter's results, and the next compile without it must be the first one again.
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 8, 20, 20});
  b.initializer("w", ramp(16 * 8 * 3 * 3, 0.01f), {16, 8, 3, 3});
  b.node("Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.initializer("d", ramp(16 * 5 * 5, 0.02f), {16, 1, 5, 5});
  b.node("Conv", {"c", "d"}, {"y"}, {attr_ints("pads", {2, 2, 2, 2}), attr_int("group", 16)});
  b.output("y", DataType::float32);
  const Program p = schedule(b, "no_lsr");
  const CpuTarget t = cpu_target_named("cpu");
  const std::string with = cpu_codegen_assembly(p, t);
  setenv("CAPGRAPH_NO_LSR", "1", 1);
  const std::string without = cpu_codegen_assembly(p, t);
  check_program(p);
  unsetenv("CAPGRAPH_NO_LSR");
  CHECK(without != with);
  CHECK(cpu_codegen_assembly(p, t) == with);
}

TEST_CASE("AVX-512 fixed tiles keep their window loops from LLVM's unrolling") {
  // Issue 27: LLVM's unroll passes were 47% of the optimizer's time on resnet18's 512-channel
  // 3x3 convs on 7x7, whose tiles are all fixed; kept, the kernels ran the same. A 3x3 conv over
  // 64 channels on 28x28 (16-lane blocks on cpu-x86_64-avx512; its border tiles are fixed): kept,
  // their loops hold fewer written-out multiply-adds than LLVM unrolled (CAPGRAPH_UNROLL_FIXED=1).
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 64, 28, 28});
  b.initializer("w", ramp(64 * 64 * 9, 0.005f), {64, 64, 3, 3});
  b.node("Conv", {"x", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/fixed_loops_kept.onnx";
  b.save(path);
  CompileOptions opt;
  opt.target = "cpu-x86_64-avx512";
  CompileReport r;
  Program p = compile_schedule(path, opt, &r);
  const CpuTarget t = cpu_target_named("cpu-x86_64-avx512");
  bool fixed = false;
  for (const Kernel &k : p.kernels) {
    const ChannelTilePlan cp = channel_tile_plan(k, p, t);
    fixed =
        fixed || (cp.ok && cp.mode == ChannelTilePlan::Mode::fixed && cp.keep_fixed_window_loops);
  }
  REQUIRE(fixed);
  const std::string kept = cpu_codegen_assembly(p, t);
  setenv("CAPGRAPH_UNROLL_FIXED", "1", 1);
  const std::string unrolled = cpu_codegen_assembly(p, t);
  unsetenv("CAPGRAPH_UNROLL_FIXED");
  CHECK(fma_instructions(kept) > 0);
  CHECK(fma_instructions(kept) < fma_instructions(unrolled));  // 136 against 268 (LLVM 19)
  CHECK(cpu_codegen_assembly(p, t) == kept);
  check_program(p);  // on the host's own target (AVX-512 where it has it)
}

TEST_CASE("loop strength reduction is off for the AVX2 window tiles that keep their loops only") {
  // Issue 27: LSR was 25-35% of the AVX2 compile of densenet_like, inception_like and resnet18,
  // spent on the 3x3 convs over many input blocks, which ran the same without it; the 1x1 convs,
  // the depthwise tiles and the short reductions (the stem) ran 1.07-1.33x slower without it.
  ModelBuilder b(17);
  b.input("x", DataType::float32, {1, 3, 14, 14});
  b.initializer("ws", ramp(32 * 3 * 9, 0.02f), {32, 3, 3, 3});
  b.initializer("w3", ramp(16 * 32 * 9, 0.01f), {16, 32, 3, 3});
  b.initializer("wd", ramp(16 * 9, 0.03f), {16, 1, 3, 3});
  b.initializer("w1", ramp(16 * 16, 0.02f), {16, 16, 1, 1});
  b.node("Conv", {"x", "ws"}, {"s"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "stem";
  b.node("Conv", {"s", "w3"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "wide";
  b.node("Conv", {"c", "wd"}, {"d"}, {attr_ints("pads", {1, 1, 1, 1}), attr_int("group", 16)})
      .name = "dw";
  b.node("Conv", {"d", "w1"}, {"y"}).name = "pointwise";
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/lsr_choice.onnx";
  b.save(path);
  for (const char *target : {"cpu-x86_64", "cpu-x86_64-avx512"}) {
    CAPTURE(target);
    const bool avx2 = std::string(target) == "cpu-x86_64";
    CompileOptions opt;
    opt.target = target;
    CompileReport r;
    Program p = compile_schedule(path, opt, &r);
    const CpuTarget t = cpu_target_named(target);
    int off = 0;
    for (const Kernel &k : p.kernels) {
      CAPTURE(k.name);
      const bool wide = !k.source_nodes.empty() && k.source_nodes[0] == "wide";
      CHECK(cpu_kernel_strength_reduce(k, p, t) == !(avx2 && wide));
      off += !cpu_kernel_strength_reduce(k, p, t);
    }
    CHECK(off == (avx2 ? 1 : 0));
    // The choice reaches LLVM: the code differs from LSR everywhere (CAPGRAPH_LSR=all) on AVX2
    // only, and the knob is put back.
    const std::string chosen = cpu_codegen_assembly(p, t);
    setenv("CAPGRAPH_LSR", "all", 1);
    const std::string all = cpu_codegen_assembly(p, t);
    unsetenv("CAPGRAPH_LSR");
    CHECK((chosen != all) == avx2);
    CHECK(cpu_codegen_assembly(p, t) == chosen);
  }
#if defined(__x86_64__)
  // And the AVX2 capture computes the interpreter's results (an x86-64 host runs it).
  CompileOptions opt;
  opt.target = "cpu-x86_64";
  CompileReport r;
  Program p = compile_schedule(path, opt, &r);
  std::vector<std::vector<uint8_t>> in(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); i++)
    if (p.buffers[i].kind != Buffer::Kind::constant)
      in[i].assign(p.buffers[i].numel * dtype_size(p.buffers[i].dtype), 0);
  inputs_fill(p, in, 3);
  outputs_compare(p, run_compiled(p, in, 1, "cpu-x86_64"), run_interpreter(p, in), 1e-4);
#endif
}

TEST_CASE(
    "a float16 buffer that fusion removes still rounds: Cast to float16 and back is not the "
    "identity") {
  // Fusion keeps the value in float32 inside the kernel; the Cast to float16 must still round it
  // (to nearest even, to infinity above 65519.99, to subnormals and zero below 2^-14), as the
  // stored buffer would have. Until the sixth session only bfloat16 did.
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2, 16});
  b.node("Cast", {"x"}, {"h"}, {attr_int("to", 10)});
  b.node("Cast", {"h"}, {"y"}, {attr_int("to", 1)});
  b.output("y", DataType::float32);
  const std::string path = scratch_dir() + "/cast_f16_back.onnx";
  b.save(path);
  CompileOptions opt;
  CompileReport r;
  Program p = compile_schedule(path, opt, &r);
  REQUIRE(p.kernels.size() == 1);  // both Casts in one kernel: no float16 buffer is stored
  const float xs[] = {1 + 0x1p-12f, 1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 65519.0f,    65520.0f, 70000.0f,
                      -1e6f,        0x1p-25f,     0x1.8p-25f,       1e-7f,       -3e-8f,   0.1f,
                      1.0f / 3,     -2.71828f,    1000.1f,          0x1.ffep-15f};
  std::vector<std::vector<uint8_t>> in(p.buffers.size());
  const Buffer &xb = p.buffers[p.inputs[0].buffer];
  in[p.inputs[0].buffer].resize(size_t(xb.numel) * 4);
  for (int64_t i = 0; i < xb.numel; i++)
    element_store(DType::f32, in[p.inputs[0].buffer].data(), i, i < 16 ? xs[i] : -xs[i - 16]);
  outputs got = run_compiled(p, in, 1);
  REQUIRE(got.bytes.size() == 1);
  for (int64_t i = 0; i < xb.numel; i++) {
    const float x = i < 16 ? xs[i] : -xs[i - 16];
    float y;
    std::memcpy(&y, got.bytes[0].data() + 4 * i, 4);
    const float want = half_to_float(half_from_double(x));
    CAPTURE(x);
    CHECK(std::memcmp(&y, &want, 4) == 0);
  }
}

TEST_CASE("a conv's vector epilogue rounds a removed float16 buffer too") {
  // conv -> Cast to float16 -> Cast back -> Relu -> 1x1 conv by the identity: the Casts and the
  // Relu fuse into the first conv's epilogue, which writes a blocked intermediate and so runs 8
  // or 16 channels at once (vector_cast); the identity conv passes it on exactly (1 x v plus
  // zeros). Expected: the same model without the Casts (the same tiles, so the same sums),
  // rounded to half (Relu and rounding commute).
  auto model = [](bool casts) {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 16, 6, 6});
    b.initializer("w", ramp(16 * 16 * 9, 0.37f), {16, 16, 3, 3});
    std::vector<float> eye(16 * 16, 0.0f);
    for (int c = 0; c < 16; c++) eye[c * 16 + c] = 1.0f;
    b.initializer("eye", eye, {16, 16, 1, 1});
    b.node("Conv", {"x", "w"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
    if (casts) {
      b.node("Cast", {"c"}, {"h"}, {attr_int("to", 10)});
      b.node("Cast", {"h"}, {"f"}, {attr_int("to", 1)});
    }
    b.node("Relu", {casts ? "f" : "c"}, {"r"});
    b.node("Conv", {"r", "eye"}, {"y"});
    b.output("y", DataType::float32);
    const std::string path = scratch_dir() + (casts ? "/conv_f16_round.onnx" : "/conv_plain.onnx");
    b.save(path);
    return path;
  };
  CompileOptions opt;
  CompileReport r1, r2;
  Program with = compile_schedule(model(true), opt, &r1),
          plain = compile_schedule(model(false), opt, &r2);
  REQUIRE(with.kernels.size() == plain.kernels.size());  // the Casts fused away
  std::vector<std::vector<uint8_t>> in1(with.buffers.size()), in2(plain.buffers.size());
  in1[with.inputs[0].buffer].resize(16 * 36 * 4);
  inputs_fill(with, in1, 7);
  in2[plain.inputs[0].buffer] = in1[with.inputs[0].buffer];
  outputs got = run_compiled(with, in1, 1), ref = run_compiled(plain, in2, 1);
  const int64_t n = 16 * 36;
  int rounded = 0;
  for (int64_t i = 0; i < n; i++) {
    float y, z;
    std::memcpy(&y, got.bytes[0].data() + 4 * i, 4);
    std::memcpy(&z, ref.bytes[0].data() + 4 * i, 4);
    const float want = half_to_float(half_from_double(z));
    rounded += want != z;
    CAPTURE(i);
    CHECK(std::memcmp(&y, &want, 4) == 0);
  }
  CHECK(rounded > n / 4);  // most sums are not halves: the check sees the rounding
}
