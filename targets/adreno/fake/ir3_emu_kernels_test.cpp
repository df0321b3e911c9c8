// Real a630 kernels through the ir3 emulator: small ONNX models are compiled by our compiler
// (Mesa's ir3 behind it), every instruction of every kernel is decoded and rendered and compared
// with Mesa's own disassembly.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "codegen/adreno_codegen.h"
#include "compile.h"
#include "ir3_decode.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::adreno;
using namespace capgraph::model_gen;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    char tmpl[] = "/tmp/capgraph_ir3_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~temp_dir() { fs::remove_all(path); }
};

bool mesa_present() {
  if (adreno_available()) return true;
  MESSAGE("SKIPPED: capgraph was built without Mesa's ir3 (CAPGRAPH_ADRENO=OFF)");
  return false;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float &x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  return v;
}

struct compiled {
  std::string name;
  Program p;
  AdrenoCodegenResult r;
};

compiled model_compile(const std::string &name, ModelBuilder &b, const fs::path &dir) {
  fs::path path = dir / (name + ".onnx");
  b.save(path.string());
  CompileOptions opt;
  opt.target = adreno_a630().name;
  compiled c{name, compile_schedule(path.string(), opt, nullptr), {}};
  c.r = adreno_codegen(c.p, adreno_a630());
  return c;
}

// The models every test here uses: elementwise, a workgroup reduction, a tiled convolution and a
// matrix product (shared memory, barriers, vec4 loads), transcendental functions, integer and
// uint8 paths, float16 tensors.
std::vector<compiled> models_compile(const fs::path &dir) {
  std::vector<compiled> out;
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 4, 8, 8});
    b.initializer("k", random_floats(4, 7), {1, 4, 1, 1});
    b.node("Add", {"x", "k"}, {"a"});
    b.node("Relu", {"a"}, {"y"});
    b.output("y", DataType::float32);
    out.push_back(model_compile("add_relu", b, dir));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {3, 1000});
    b.initializer("axes", std::vector<int64_t>{1}, {1});
    b.node("ReduceSum", {"x", "axes"}, {"y"}, {attr_int("keepdims", 0)});
    b.output("y", DataType::float32);
    out.push_back(model_compile("reduce_sum", b, dir));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 16, 20, 20});
    b.initializer("w", random_floats(32 * 16 * 3 * 3, 4), {32, 16, 3, 3});
    b.initializer("bias", random_floats(32, 5), {32});
    b.node("Conv", {"x", "w", "bias"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
    b.node("Relu", {"c"}, {"y"});
    b.output("y", DataType::float32);
    out.push_back(model_compile("conv3x3", b, dir));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {40, 64});
    b.initializer("w", random_floats(64 * 48, 6), {64, 48});
    b.node("MatMul", {"x", "w"}, {"y"});
    b.output("y", DataType::float32);
    out.push_back(model_compile("matmul", b, dir));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float32, {1, 3, 12, 12});
    b.initializer("w", random_floats(8 * 3 * 3 * 3, 1), {8, 3, 3, 3});
    b.initializer("bias", random_floats(8, 2), {8});
    b.initializer("m", random_floats(6 * 5, 3), {6, 5});
    b.node("Conv", {"x", "w", "bias"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
    b.node("Sigmoid", {"c"}, {"s"});
    b.node("Mul", {"c", "s"}, {"silu"});
    b.node("MaxPool", {"silu"}, {"p"}, {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    b.node("Erf", {"p"}, {"e"});
    b.node("Tanh", {"e"}, {"th"});
    b.node("Softmax", {"th"}, {"sm"}, {attr_int("axis", 3)});
    b.node("Transpose", {"sm"}, {"tr"}, {attr_ints("perm", {0, 1, 3, 2})});
    b.node("MatMul", {"tr", "m"}, {"mm"});
    b.node("ReduceMean", {"mm"}, {"rm"}, {attr_ints("axes", {3}), attr_int("keepdims", 1)});
    b.node("Greater", {"mm", "rm"}, {"gt"});
    b.node("Where", {"gt", "mm", "rm"}, {"wh"});
    b.node("Cast", {"wh"}, {"ci"}, {attr_int("to", (int64_t)DataType::int64)});
    b.node("Cast", {"ci"}, {"y2"}, {attr_int("to", (int64_t)DataType::float32)});
    b.output("wh", DataType::float32);
    b.output("y2", DataType::float32);
    out.push_back(model_compile("mixed", b, dir));
  }
  {
    ModelBuilder b(13);
    b.input("x8", DataType::uint8, {1, 4, 7, 9});
    b.initializer("pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1}, {8});
    b.initializer("scales", std::vector<float>{1, 1, 2, 1.5f}, {4});
    b.initializer("idx", std::vector<int64_t>{3, 0, 2}, {3});
    b.node("Cast", {"x8"}, {"x"}, {attr_int("to", (int64_t)DataType::float32)});
    b.node("Pad", {"x", "pads"}, {"pr"}, {attr_string("mode", "reflect")});
    b.node("Resize", {"pr", "", "scales"}, {"rs"}, {attr_string("mode", "linear")});
    b.node("AveragePool", {"rs"}, {"ap"},
           {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})});
    b.node("Gather", {"ap", "idx"}, {"g"}, {attr_int("axis", 1)});
    b.node("Floor", {"g"}, {"fl"});
    b.node("Cast", {"fl"}, {"fi"}, {attr_int("to", (int64_t)DataType::int64)});
    b.node("Mod", {"fi", "fi"}, {"md"});
    b.node("Cast", {"md"}, {"mf"}, {attr_int("to", (int64_t)DataType::float32)});
    b.node("Add", {"g", "mf"}, {"y"});
    b.output("y", DataType::float32);
    out.push_back(model_compile("views_u8", b, dir));
  }
  {
    ModelBuilder b(13);
    b.input("x", DataType::float16, {2, 64});
    b.node("Exp", {"x"}, {"e"});
    b.node("Sqrt", {"e"}, {"s"});
    b.node("Reciprocal", {"s"}, {"y"});
    b.output("y", DataType::float16);
    out.push_back(model_compile("f16_sfu", b, dir));
  }
  return out;
}

// Instruction lines of a Mesa disassembly (label lines "lN:" dropped).
std::vector<std::string> mesa_lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t')) l.pop_back();
    size_t b = l.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    l = l.substr(b);
    if (l.back() == ':') continue;
    out.push_back(l);
  }
  return out;
}

std::string mnemonic(const std::string &line) {
  size_t at = 0;
  while (at < line.size() && line[at] == '(') at = line.find(')', at) + 1;
  while (at < line.size() && line[at] == ' ') at++;
  return line.substr(at, line.find(' ', at) - at);
}

}  // namespace

TEST_CASE("ir3 decoder: every instruction of real a630 kernels decodes and renders as Mesa's disassembler") {
  if (!mesa_present()) return;
  temp_dir dir;
  int kernels = 0, instructions = 0, same_lines = 0;
  for (const compiled &c : models_compile(dir.path)) {
    for (const AdrenoKernelFacts &f : c.r.unique) {
      const size_t n = f.instr_dwords / 2;
      std::vector<uint8_t> code(f.binary.begin(), f.binary.begin() + f.instr_dwords * 4);
      const AdrenoDisassembly d = adreno_disassemble_words(code, adreno_a630());
      REQUIRE(d.errors == 0);
      const std::vector<std::string> mesa = mesa_lines(d.text);
      REQUIRE(mesa.size() == n);
      std::vector<ir3_instr> is;
      std::string err;
      const bool ok = ir3_program_decode(reinterpret_cast<const uint32_t *>(code.data()), n, c.name, &is, &err);
      INFO(err);
      REQUIRE(ok);
      for (size_t k = 0; k < n; k++) {
        const std::string mine = ir3_render(is[k], int(k), true);
        INFO(c.name << " instruction " << k << " " << ir3_word_text(is[k].word) << ": mine '" << mine
                    << "', Mesa '" << mesa[k] << "'");
        CHECK(mnemonic(mine) == mnemonic(mesa[k]));
        CHECK(mine == mesa[k]);
        same_lines += mine == mesa[k];
      }
      kernels++;
      instructions += int(n);
    }
  }
  MESSAGE(kernels << " kernels, " << instructions << " instructions decoded, " << same_lines
                  << " rendered exactly as Mesa's disassembler");
  CHECK(kernels >= 10);
}
