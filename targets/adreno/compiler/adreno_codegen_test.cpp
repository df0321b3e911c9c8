// Adreno a630 kernels (Mesa's ir3) checked from the outside: every kernel of generated models, and
// of every zoo model when ../shared/zoo is there, is compiled and then disassembled with Mesa's
// own ir3 disassembler (isaspec, the same Mesa build); a word it cannot decode fails the test.
// The facts the runtime will dispatch with are checked against each other and the disassembly.
//
// There is no Adreno GPU here: these tests check encodings and launch facts, not what the
// kernels compute. Without Mesa (CAPGRAPH_ADRENO=OFF) every case says so and skips.
#include "adreno_codegen.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>

#include "compile.h"
#include "error.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::model_gen;
namespace fs = std::filesystem;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/capgraph_adreno_XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { fs::remove_all(path); }
};

bool mesa_present() {
  if (adreno_available()) return true;
  MESSAGE(
      "SKIPPED: capgraph was built without Mesa's ir3 (CAPGRAPH_ADRENO=OFF; run "
      "scripts/mesa_ir3.sh, then configure)");
  return false;
}

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float &x : v) x = std::uniform_real_distribution<float>(-1, 1)(rng);
  return v;
}

// Convolution with padding and bias, fused activations, pooling, softmax (max, exp, sum), erf,
// tanh, a transpose, a matrix product, a mean, integer and boolean values.
fs::path model_mixed(const fs::path &dir) {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 12, 12});
  b.initializer("w", random_floats(8 * 3 * 3 * 3, 1), {8, 3, 3, 3});
  b.initializer("bias", random_floats(8, 2), {8});
  b.initializer("m", random_floats(6 * 5, 3), {6, 5});
  b.node("Conv", {"x", "w", "bias"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.node("Sigmoid", {"c"}, {"s"});
  b.node("Mul", {"c", "s"}, {"silu"});
  b.node("MaxPool", {"silu"}, {"p"},
         {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
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
  fs::path p = dir / "mixed.onnx";
  b.save(p.string());
  return p;
}

// Padding modes, resize, concat, slicing, gather, pooling with padding, a reduction over a middle
// axis, integer arithmetic, and a uint8 input (camera frames are uint8).
fs::path model_views(const fs::path &dir) {
  ModelBuilder b(13);
  b.input("x8", DataType::uint8, {1, 4, 7, 9});
  b.initializer("pads", std::vector<int64_t>{0, 0, 1, 2, 0, 0, 2, 1}, {8});
  b.initializer("scales", std::vector<float>{1, 1, 2, 1.5f}, {4});
  b.initializer("idx", std::vector<int64_t>{3, 0, 2}, {3});
  b.initializer("starts", std::vector<int64_t>{1, 2}, {2});
  b.initializer("ends", std::vector<int64_t>{6, 9}, {2});
  b.initializer("axes", std::vector<int64_t>{2, 3}, {2});
  b.node("Cast", {"x8"}, {"x"}, {attr_int("to", (int64_t)DataType::float32)});
  b.node("Pad", {"x", "pads"}, {"pr"}, {attr_string("mode", "reflect")});
  b.node("Pad", {"x", "pads"}, {"pe"}, {attr_string("mode", "edge")});
  b.node("Add", {"pr", "pe"}, {"pa"});
  b.node("Resize", {"pa", "", "scales"}, {"rs"}, {attr_string("mode", "linear")});
  b.node("AveragePool", {"rs"}, {"ap"},
         {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
          attr_ints("strides", {2, 2})});
  b.node("Gather", {"ap", "idx"}, {"g"}, {attr_int("axis", 1)});
  b.node("Slice", {"g", "starts", "ends", "axes"}, {"sl"});
  b.node("ReduceMax", {"sl"}, {"rm"}, {attr_ints("axes", {1}), attr_int("keepdims", 1)});
  b.node("Concat", {"sl", "rm"}, {"cc"}, {attr_int("axis", 1)});
  b.node("Floor", {"cc"}, {"fl"});
  b.node("Cast", {"fl"}, {"fi"}, {attr_int("to", (int64_t)DataType::int64)});
  b.node("Mod", {"fi", "fi"}, {"md"});
  b.node("Cast", {"md"}, {"mf"}, {attr_int("to", (int64_t)DataType::float32)});
  b.node("Add", {"cc", "mf"}, {"y"});
  b.output("y", DataType::float32);
  fs::path p = dir / "views.onnx";
  b.save(p.string());
  return p;
}

Program schedule(const fs::path &model, InputShapes shapes = {}) {
  CompileOptions opt;
  opt.target = adreno_a630().name;
  opt.input_shapes = std::move(shapes);
  return compile_schedule(model.string(), opt, nullptr);
}

// The facts one kernel's dispatch needs, checked against each other and against the disassembly
// of its binary by Mesa's decoder. Returns the number of instructions decoded.
int kernel_verify(const Kernel &k, const AdrenoKernelFacts &f) {
  INFO("kernel " << k.name);
  const AdrenoTarget &t = adreno_a630();
  CHECK(f.instr_dwords > 0);
  CHECK(f.instr_dwords % 2 == 0);  // 64-bit instructions
  CHECK(f.binary.size() >= f.instr_dwords * 4u);
  CHECK(f.full_regs >= 1);
  CHECK(f.full_regs <= 64);
  CHECK(f.half_regs <= 64);
  // Parameters (8 bytes per slot) inside the loaded constant file, before the immediates.
  CHECK(f.params_bytes >= 16);  // a store and at least one load
  CHECK((f.params_offset_vec4 * 16 + f.params_bytes) <= f.constlen_vec4 * 16);
  CHECK(f.immediates_offset_vec4 * 16 >= f.params_offset_vec4 * 16 + f.params_bytes);
  if (f.grid[0] > 1) CHECK(f.workgroup_id_regid != 0xfc);
  CHECK(f.local_id_regid != 0xfc);
  CHECK(f.workgroup_id_regid != f.local_id_regid);
  // The target's workgroup, or for a tiled kernel the shape the cost model chose.
  if (f.tiled)
    CHECK((f.workgroup_size[0] == 64 || f.workgroup_size[0] == 128 || f.workgroup_size[0] == 256));
  else
    CHECK(f.workgroup_size[0] == (uint32_t)t.workgroup_size);
  CHECK((int64_t)f.grid[0] * f.workgroup_size[0] >= f.work_items);
  CHECK((int64_t)(f.grid[0] - 1) * f.workgroup_size[0] < f.work_items);
  AdrenoDisassembly d = adreno_disassemble(f, t);
  INFO(d.text.substr(0, 4000));
  CHECK(d.errors == 0);
  CHECK(d.instructions == (int)f.instr_dwords / 2);
  // Every a6xx compute kernel ends with `end` and reads its parameters from c[...] constants;
  // the stores of our kernels are global (stg).
  CHECK(d.text.find("end") != std::string::npos);
  CHECK(d.text.find("stg") != std::string::npos);
  CHECK(d.text.find("c" + std::to_string(f.params_offset_vec4) + ".") != std::string::npos);
  return d.instructions;
}

int program_verify(const Program &p, const AdrenoCodegenResult &r) {
  REQUIRE(r.unique_of.size() == p.kernels.size());
  int instructions = 0;
  std::vector<bool> seen(r.unique.size());
  for (size_t i = 0; i < p.kernels.size(); i++) {
    int u = r.unique_of[i];
    REQUIRE(u >= 0);
    REQUIRE(u < (int)r.unique.size());
    if (seen[u]) continue;
    seen[u] = true;
    instructions += kernel_verify(p.kernels[i], r.unique[u]);
  }
  return instructions;
}

// Lines of a disassembly with instruction `op` whose last operand (the component count) is `n`.
int disasm_count(const std::string &text, const std::string &op, const std::string &n) {
  std::istringstream lines(text);
  int c = 0;
  for (std::string l; std::getline(lines, l);)
    if (l.find(op) != std::string::npos && l.size() > n.size() + 2 &&
        l.compare(l.size() - n.size() - 2, std::string::npos, ", " + n) == 0)
      c++;
  return c;
}

}  // namespace

TEST_CASE("a small kernel compiles for a630; Mesa's disassembler reads it and the facts agree") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 4, 8, 8});
  b.initializer("k", random_floats(4, 7), {1, 4, 1, 1});
  b.node("Add", {"x", "k"}, {"a"});
  b.node("Relu", {"a"}, {"y"});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "add_relu.onnx";
  b.save(model.string());
  Program p = schedule(model);
  REQUIRE(p.kernels.size() == 1);
  AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
  REQUIRE(r.unique.size() == 1);
  const AdrenoKernelFacts &f = r.unique[0];
  CHECK(f.lanes == 4);  // rows of 64 floats: vec4 loads and stores
  CHECK(f.work_items * f.lanes == 4 * 8 * 8);
  CHECK(f.grid[0] == 1);               // 64 work items in one workgroup of 128
  CHECK(f.params_bytes == 3 * 8);      // y, x, k
  CHECK(f.private_memory_bytes == 0);  // nothing spilled in a kernel this small
  CHECK(f.shared_memory_bytes == 0);
  CHECK(kernel_verify(p.kernels[0], f) > 4);
  AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
  MESSAGE("a630 disassembly of " << p.kernels[0].name << " (" << f.instr_count << " instructions, "
                                 << f.full_regs << " full regs, constlen " << f.constlen_vec4
                                 << " vec4, params at c" << f.params_offset_vec4 << ".x):\n"
                                 << d.text);
}

// A large reduction over few outputs takes a workgroup per output, combining through shared
// memory: the facts say so and the code has the shared-memory traffic and barriers to show it.
TEST_CASE("a large reduction over few outputs is split across a workgroup") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {3, 1000});
  b.initializer("axes", std::vector<int64_t>{1}, {1});
  b.node("ReduceSum", {"x", "axes"}, {"y"}, {attr_int("keepdims", 0)});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "reduce_sum.onnx";
  b.save(model.string());
  Program p = schedule(model);
  REQUIRE(p.kernels.size() == 1);
  AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
  const AdrenoKernelFacts &f = r.unique.at(0);
  CHECK(f.group_reduce);
  CHECK(f.grid[0] == 3);  // a workgroup per output
  CHECK(f.shared_memory_bytes >= 4u * f.workgroup_size[0]);
  kernel_verify(p.kernels[0], f);
  AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
  INFO(d.text);
  CHECK(d.text.find("stl") != std::string::npos);  // partial sums to shared memory
  CHECK(d.text.find("ldl") != std::string::npos);
  CHECK(d.text.find("bar") != std::string::npos);  // a barrier between halving steps
}

// Float16 storage (the default): a uint8 frame's cast and scale and a squeeze-excitation's
// channel scale are evaluated as the products stage their operand (no kernel writes them), and a
// matrix-vector head shares each output's reduction among a few work items, several outputs per
// workgroup. (ir3_emu_kernels_test runs the same shapes' machine code against the interpreter.)
TEST_CASE("float16: producers staged by their products, matrix-vector heads split per output") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x8", DataType::uint8, {1, 12, 16, 32});
  b.initializer("scale", std::vector<float>{1.0f / 255.0f}, {1});
  b.initializer("w0", random_floats(16 * 12 * 9, 11), {16, 12, 3, 3});
  b.initializer("wr", random_floats(4 * 16, 13), {4, 16, 1, 1});
  b.initializer("we", random_floats(16 * 4, 14), {16, 4, 1, 1});
  b.initializer("wp", random_floats(24 * 16, 15), {24, 16, 1, 1});
  b.initializer("wh", random_floats(198 * 24, 16), {198, 24});
  b.node("Cast", {"x8"}, {"xf"}, {attr_int("to", 1)});
  b.node("Mul", {"xf", "scale"}, {"xs"});
  b.node("Conv", {"xs", "w0"}, {"x"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})});
  b.node("GlobalAveragePool", {"x"}, {"g"});
  b.node("Conv", {"g", "wr"}, {"r"});
  b.node("Conv", {"r", "we"}, {"e"});
  b.node("Sigmoid", {"e"}, {"s"});
  b.node("Mul", {"x", "s"}, {"m"});
  b.node("Conv", {"m", "wp"}, {"pj"});
  b.node("GlobalAveragePool", {"pj"}, {"pg"});
  b.node("Flatten", {"pg"}, {"pv"});
  b.node("Gemm", {"pv", "wh"}, {"y"}, {attr_int("transB", 1)});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "fused.onnx";
  b.save(model.string());
  CompileOptions opt;
  opt.target = adreno_a630().name;
  CompileReport rep;
  setenv("CAPGRAPH_HALF_RULES_ONLY", "1", 1);
  Program p = compile_schedule(model.string(), opt, &rep);
  setenv("CAPGRAPH_ADRENO_NO_OPERAND_FUSE", "1", 1);
  Program plain = compile_schedule(model.string(), opt, nullptr);
  unsetenv("CAPGRAPH_ADRENO_NO_OPERAND_FUSE");
  unsetenv("CAPGRAPH_HALF_RULES_ONLY");
  CHECK(rep.operands_fused == 2);
  CHECK(p.kernels.size() == plain.kernels.size() - 2);
  const int frame = p.inputs.at(0).buffer;
  AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
  int staged = 0, heads = 0, frame_readers = 0;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const Kernel &k = p.kernels[i];
    const AdrenoKernelFacts &f = r.unique.at(r.unique_of[i]);
    INFO(k.name);
    kernel_verify(k, f);
    CHECK(k.name != "Cast+Mul");                  // no kernel of the frame's cast alone
    if (k.name.find('>') != std::string::npos) {  // a folded producer: tiled, reading its inputs
      CHECK(f.tiled);
      staged++;
    }
    for (const Access &a : k.loads)  // the frame's bytes are read by the convolution only
      if (a.buffer == frame) frame_readers += k.reduce == Reduce::sum ? 1 : 100;
    if (k.name.rfind("gemm", 0) == 0) {  // 198 outputs of 24 points: a few items per output
      heads++;
      CHECK(f.group_reduce);
      CHECK(f.reduce_split > 1);  // inspect's "split"
      CHECK(f.reduce_split < f.workgroup_size[0]);
      CHECK(f.grid[0] == (198 + f.workgroup_size[0] / f.reduce_split - 1) /
                             (f.workgroup_size[0] / f.reduce_split));
    }
  }
  CHECK(staged == 2);
  CHECK(heads == 1);
  CHECK(frame_readers == 1);
}

// A 3x3 convolution follows the GPU schedule every GPU target shares (gpu_tile.h): the facts
// report the tile's shared memory and workgroups of output tiles, and the code has the shared
// memory staging (stl), the vec4 operand reads (ldl of 4), the barriers and the vec4 stores.
// Nothing here runs the code: ir3 compiled it and Mesa's disassembler read it, that is all.
// The tile plan of kernel 0 in the shape its facts say was chosen (workgroup, micro tile).
GpuTilePlan chosen_plan(const Program &p, const AdrenoKernelFacts &f) {
  GpuFacts g = adreno_gpu_facts(adreno_a630());
  g.group_size = f.workgroup_size[0], g.micro_m = f.tile_m, g.micro_n = f.tile_n;
  return gpu_tile_plan(p.kernels[0], p, g);
}

TEST_CASE("a 3x3 convolution is tiled through shared memory on a630") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 16, 20, 20});
  b.initializer("w", random_floats(32 * 16 * 3 * 3, 4), {32, 16, 3, 3});
  b.initializer("bias", random_floats(32, 5), {32});
  b.node("Conv", {"x", "w", "bias"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.node("Relu", {"c"}, {"y"});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "conv3x3.onnx";
  b.save(model.string());
  Program p = schedule(model);
  REQUIRE(p.kernels.size() == 1);
  const GpuTilePlan plan = gpu_tile_plan(p.kernels[0], p, adreno_gpu_facts(adreno_a630()));
  REQUIRE(plan.ok);
  CHECK(plan.M == 20 * 20);
  CHECK(plan.N == 32);
  CHECK(plan.store_vector == 'm');  // rows of the output: 4 neighbouring pixels per store
  AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
  const AdrenoKernelFacts &f = r.unique.at(0);
  CHECK(f.tiled);
  CHECK_FALSE(f.group_reduce);
  CHECK(f.lanes == 1);
  CHECK(f.workgroup_size[0] > 1);
  const GpuTilePlan chosen = chosen_plan(p, f);  // the shape the cost model picked
  REQUIRE(chosen.ok);
  CHECK(f.shared_memory_bytes == chosen.shared_bytes());
  CHECK(f.shared_memory_bytes > 0);
  CHECK(f.shared_memory_bytes <= adreno_a630().shared_bytes);
  CHECK(f.grid[0] == chosen.groups());
  CHECK(f.work_items == (int64_t)f.grid[0] * f.workgroup_size[0]);
  CHECK(f.private_memory_bytes == 0);  // the accumulators stay in registers
  kernel_verify(p.kernels[0], f);
  AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
  INFO(d.text);
  auto count = [&](const std::string &op, const std::string &n) {
    return disasm_count(d.text, op, n);
  };
  CHECK(count("stl.", "1") > 0);    // staging into shared memory, one element per work item
  CHECK(count("ldl.", "4") > 0);    // operands from shared memory, four at a time (vec4)
  CHECK(count("ldl.", "1") == 0);   // ... and never one at a time
  CHECK(count("stg.a.", "4") > 0);  // four neighbouring pixels per store
  CHECK(count("stg.a.", "1") == 0);
  CHECK(count("ldg.a.", "1") > 0);                     // the staged global loads
  CHECK(d.text.find("bar") != std::string::npos);      // workgroup barriers around each chunk
  CHECK(d.text.find("mad.f32") != std::string::npos);  // the multiply-adds
  MESSAGE("tiled 3x3 conv: " << f.instr_count << " instructions, " << f.full_regs << " full regs, "
                             << f.shared_memory_bytes << " B shared, grid " << f.grid[0] << " x "
                             << f.workgroup_size[0]);
}

// A matrix product's rows are contiguous along its columns (n): each work item stores its four
// neighbouring columns as one vec4. Untiled (CAPGRAPH_GPU_NO_TILE=1 in the same process) it is one
// work item per four outputs, without shared memory.
TEST_CASE("a matrix product is tiled with vec4 stores along its rows on a630") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {40, 64});
  b.initializer("w", random_floats(64 * 48, 6), {64, 48});
  b.node("MatMul", {"x", "w"}, {"y"});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "matmul.onnx";
  b.save(model.string());
  Program p = schedule(model);
  REQUIRE(p.kernels.size() == 1);
  const GpuTilePlan plan = gpu_tile_plan(p.kernels[0], p, adreno_gpu_facts(adreno_a630()));
  REQUIRE(plan.ok);
  CHECK(plan.store_vector == 'n');
  AdrenoKernelFacts f = adreno_codegen(p, adreno_a630()).unique.at(0);
  CHECK(f.tiled);
  CHECK(f.shared_memory_bytes == chosen_plan(p, f).shared_bytes());
  kernel_verify(p.kernels[0], f);
  AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
  INFO(d.text);
  CHECK(d.text.find("bar") != std::string::npos);
  CHECK(d.text.find("stl.") != std::string::npos);
  CHECK(d.text.find("ldl.") != std::string::npos);
  CHECK(disasm_count(d.text, "ldl.", "4") > 0);
  CHECK(disasm_count(d.text, "stg.a.", "4") > 0);  // four neighbouring columns per store
  CHECK(disasm_count(d.text, "stg.a.", "1") == 0);
  setenv("CAPGRAPH_GPU_NO_TILE", "1", 1);
  AdrenoKernelFacts naive = adreno_codegen(p, adreno_a630()).unique.at(0);
  unsetenv("CAPGRAPH_GPU_NO_TILE");
  CHECK_FALSE(naive.tiled);
  CHECK(naive.shared_memory_bytes == 0);
  CHECK(naive.lanes == 4);
  CHECK(adreno_disassemble(naive, adreno_a630()).text.find("bar") == std::string::npos);
}

// Every candidate shape of a tiled kernel compiles (forced one at a time with
// CAPGRAPH_ADRENO_TILE, in the same process): its micro tile, workgroup and shared memory are the
// plan's, its registers fit a wave128 slot without spilling, and 8 x 8 reads its operands as 4
// vec4 shared loads per reduction point. Left to choose, the code generator compiles all five
// and keeps the one of lowest static estimate, the same on every compile. Whether each shape
// computes the right numbers is adreno_e2e.sh small's (the machine code on fake-adreno:check).
TEST_CASE("tiled kernels: every candidate shape compiles; the cheapest estimate is kept") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 32, 24, 24});
  b.initializer("w", random_floats(64 * 32 * 3 * 3, 4), {64, 32, 3, 3});
  b.node("Conv", {"x", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "conv.onnx";
  b.save(model.string());
  Program p = schedule(model);
  REQUIRE(p.kernels.size() == 1);
  double cheapest = 1e30;
  for (const char *shape : {"128:4x4", "64:4x4", "128:8x4", "128:8x8", "256:8x8"}) {
    INFO(shape);
    setenv("CAPGRAPH_ADRENO_TILE", shape, 1);
    AdrenoKernelFacts f = adreno_codegen(p, adreno_a630()).unique.at(0);
    unsetenv("CAPGRAPH_ADRENO_TILE");
    unsigned group = 0, tm = 0, tn = 0;
    REQUIRE(std::sscanf(shape, "%u:%ux%u", &group, &tm, &tn) == 3);
    CHECK(f.tiled);
    CHECK(f.tile_candidates == 1);
    CHECK(f.workgroup_size[0] == group);
    CHECK(f.tile_m == tm);
    CHECK(f.tile_n == tn);
    const GpuTilePlan pl = chosen_plan(p, f);
    REQUIRE(pl.ok);
    CHECK(pl.buffers == 2);  // one barrier per chunk
    CHECK(f.shared_memory_bytes == pl.shared_bytes());
    CHECK(f.grid[0] == pl.groups());
    CHECK(f.private_memory_bytes == 0);
    CHECK(f.full_regs <= 48);  // a wave128 slot's registers (adreno_hcq's load check)
    CHECK(f.tile_estimate_us > 0);
    kernel_verify(p.kernels[0], f);
    const AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
    CHECK(d.errors == 0);
    CHECK(disasm_count(d.text, "ldl.", "4") > 0);
    CHECK(disasm_count(d.text, "ldl.", "1") == 0);
    cheapest = std::min(cheapest, f.tile_estimate_us);
  }
  const AdrenoKernelFacts chosen = adreno_codegen(p, adreno_a630()).unique.at(0);
  CHECK(chosen.tile_candidates == 5);
  CHECK(chosen.tile_estimate_us == doctest::Approx(cheapest));
  const AdrenoKernelFacts again = adreno_codegen(p, adreno_a630()).unique.at(0);
  CHECK(again.binary == chosen.binary);
  CHECK(again.workgroup_size[0] == chosen.workgroup_size[0]);
  // A shape the schedule cannot take is refused naming the knob.
  setenv("CAPGRAPH_ADRENO_TILE", "128:16x16", 1);
  CHECK_THROWS_WITH_AS(adreno_codegen(p, adreno_a630()),
                       doctest::Contains("CAPGRAPH_ADRENO_TILE=128:16x16"), Error);
  unsetenv("CAPGRAPH_ADRENO_TILE");
}

// The window path of a float16 depthwise convolution (adreno_nir_emit.h, adreno_window_lanes):
// each lane count compiles (forced one at a time with CAPGRAPH_ADRENO_WINDOW), computes that
// many outputs per work item and loads each input element its outputs share once, by dword offset
// (16-bit ldg): 3 rows of lanes + 2 columns for a 3 x 3 window at stride 1. Left to choose, the
// code generator keeps the count of lowest static estimate; float32 keeps the loop path. Whether
// each computes the right numbers is adreno_e2e.sh small's (fake-adreno:check).
TEST_CASE("window path: a float16 depthwise convolution in each lane count; the cheapest kept") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 8, 6, 112});
  b.initializer("wi", random_floats(16 * 8, 5), {16, 8, 1, 1});
  b.node("Conv", {"x", "wi"}, {"xi"});
  b.initializer("wd", random_floats(16 * 9, 6), {16, 1, 3, 3});
  b.initializer("bd", random_floats(16, 7), {16});
  b.node("Conv", {"xi", "wd", "bd"}, {"y"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_int("group", 16)});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "dw.onnx";
  b.save(model.string());
  setenv("CAPGRAPH_HALF_RULES_ONLY", "1", 1);
  Program p = schedule(model);
  unsetenv("CAPGRAPH_HALF_RULES_ONLY");
  int dw = -1;
  for (size_t i = 0; i < p.kernels.size(); i++)
    if (p.kernels[i].name.find("_dw") != std::string::npos) dw = (int)i;
  REQUIRE(dw >= 0);
  const Kernel &k = p.kernels[(size_t)dw];
  REQUIRE(k.axes[(size_t)k.n_parallel - 1] == 112);
  auto compile_dw = [&]() {
    AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
    return r.unique.at((size_t)r.unique_of.at((size_t)dw));
  };
  double cheapest = 1e30;
  for (int lanes : {4, 7, 8, 14, 16}) {
    INFO("lanes " << lanes);
    setenv("CAPGRAPH_ADRENO_WINDOW", std::to_string(lanes).c_str(), 1);
    const AdrenoKernelFacts f = compile_dw();
    unsetenv("CAPGRAPH_ADRENO_WINDOW");
    CHECK(f.lanes == (uint32_t)lanes);
    CHECK(f.work_items == 16 * 6 * 112 / lanes);
    CHECK_FALSE(f.tiled);
    CHECK(f.private_memory_bytes == 0);
    CHECK(f.tile_estimate_us > 0);
    kernel_verify(k, f);
    const AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
    CHECK(d.errors == 0);
    // Every input element once: 3 rows of lanes + 2, the first and last row and the outer
    // columns checked (ldg.a at a dword offset where the element's parity is known: an even
    // lane count; else a 64-bit address), the rest at constant offsets (ldg), as are the 9
    // weights and the bias.
    CHECK(disasm_count(d.text, "ldg.a.u16", "1") == (lanes % 2 ? 0 : 2 * (lanes + 2) + 2));
    CHECK(disasm_count(d.text, "ldg.", "1") == 3 * (lanes + 2) + 9 + 1);
    cheapest = std::min(cheapest, f.tile_estimate_us);
  }
  const AdrenoKernelFacts chosen = compile_dw();
  CHECK(chosen.tile_estimate_us == doctest::Approx(cheapest));
  CHECK(compile_dw().binary == chosen.binary);
  setenv("CAPGRAPH_ADRENO_WINDOW", "0", 1);
  const AdrenoKernelFacts loop = compile_dw();
  CHECK(loop.lanes == 4);
  CHECK(disasm_count(adreno_disassemble(loop, adreno_a630()).text, "ldg.a.u16", "1") == 0);
  setenv("CAPGRAPH_ADRENO_WINDOW", "5", 1);
  CHECK_THROWS_WITH_AS(compile_dw(), doctest::Contains("CAPGRAPH_ADRENO_WINDOW=5"), Error);
  unsetenv("CAPGRAPH_ADRENO_WINDOW");
  // Float32 storage keeps the loop path (float32 captures unchanged by it).
  CompileOptions opt;
  opt.target = adreno_a630().name;
  opt.precision = "fp32";
  Program p32 = compile_schedule(model.string(), opt, nullptr);
  AdrenoCodegenResult r32 = adreno_codegen(p32, adreno_a630());
  for (const AdrenoKernelFacts &f : r32.unique)
    CHECK(disasm_count(adreno_disassemble(f, adreno_a630()).text, "ldg.a.u16", "1") == 0);
  CHECK(r32.unique.at((size_t)r32.unique_of.at((size_t)dw)).lanes == 4);
}

// A uint8 input widened to float in a program with float16 storage converts from its 32-bit
// form (cov.u32f32), not through ir3's lowering of a 64-bit integer conversion (clz.b and
// shifts, ~35 instructions per value), which float32 programs keep (their captures unchanged).
TEST_CASE("float16 programs: a uint8 input converts to float without 64-bit arithmetic") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::uint8, {1, 4, 8, 8});
  b.initializer("s", std::vector<float>{1.0f / 255.0f}, {1});
  b.initializer("w", random_floats(8 * 4 * 9, 8), {8, 4, 3, 3});
  b.node("Cast", {"x"}, {"xf"}, {attr_int("to", 1)});
  b.node("Mul", {"xf", "s"}, {"xs"});
  b.node("Conv", {"xs", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "u8.onnx";
  b.save(model.string());
  auto clz = [&](const std::string &precision) {
    CompileOptions opt;
    opt.target = adreno_a630().name;
    opt.precision = precision;
    setenv("CAPGRAPH_HALF_RULES_ONLY", "1", 1);
    Program p = compile_schedule(model.string(), opt, nullptr);
    unsetenv("CAPGRAPH_HALF_RULES_ONLY");
    int n = 0;
    for (const AdrenoKernelFacts &f : adreno_codegen(p, adreno_a630()).unique) {
      const std::string text = adreno_disassemble(f, adreno_a630()).text;
      for (size_t at = text.find("clz.b"); at != std::string::npos; at = text.find("clz.b", at + 1))
        n++;
    }
    return n;
  };
  CHECK(clz("fp16") == 0);
  CHECK(clz("fp32") > 0);
}

// A 1x1 convolution's weight, [cout][cin] with cin contiguous, qualifies to be read as an image
// (issue 28, adreno_nir_emit.h adreno_image_operand): in an image shape its texels are fetched
// with isaml (t#0, s#0), only the activations are staged (shared memory: their slabs alone), and
// the facts carry the view (float16 texels of 4 input channels, a row per output channel).
// Left to choose, the code generator weighs the image shapes beside the staged ones. A 3x3
// convolution's weight does not qualify: forced to an image shape it keeps the staged default.
TEST_CASE("a 1x1 convolution's weight is read as an image in the image shapes") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 64, 14, 14});
  b.initializer("w", random_floats(96 * 64, 7), {96, 64, 1, 1});
  b.node("Conv", {"x", "w"}, {"y"});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "conv1x1.onnx";
  b.save(model.string());
  Program p = schedule(model);
  REQUIRE(p.kernels.size() == 1);
  setenv("CAPGRAPH_ADRENO_TILE", "128:8x8+img", 1);
  const AdrenoKernelFacts f = adreno_codegen(p, adreno_a630()).unique.at(0);
  setenv("CAPGRAPH_ADRENO_TILE", "128:8x8", 1);
  const AdrenoKernelFacts staged = adreno_codegen(p, adreno_a630()).unique.at(0);
  unsetenv("CAPGRAPH_ADRENO_TILE");
  REQUIRE(f.images.size() == 1);
  CHECK(staged.images.empty());
  const adreno::image_facts &m = f.images[0];
  CHECK(m.format == adreno::fmt6_16_16_16_16_float);  // float16 storage, the target's default
  CHECK(m.width == 64 / 4);
  CHECK(m.height == 96);
  CHECK(m.pitch == 64 * 2);
  const GpuTilePlan pl = chosen_plan(p, f);
  REQUIRE(pl.ok);
  CHECK(f.shared_memory_bytes == pl.buffers * pl.kc * pl.elem_a * pl.TM());  // a's slabs only
  CHECK(staged.shared_memory_bytes == pl.shared_bytes());
  kernel_verify(p.kernels[0], f);
  const AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
  INFO(d.text);
  CHECK(d.errors == 0);
  CHECK(d.text.find("isaml") != std::string::npos);
  CHECK(d.text.find("s#0, t#0") != std::string::npos);
  CHECK(adreno_disassemble(staged, adreno_a630()).text.find("isam") == std::string::npos);
  // Left to choose: the five staged shapes and the five image shapes.
  const AdrenoKernelFacts chosen = adreno_codegen(p, adreno_a630()).unique.at(0);
  CHECK(chosen.tile_candidates == 10);
  MESSAGE("1x1 conv 64 -> 96 over 14x14: image 128:8x8 "
          << f.tile_estimate_us << " us, staged " << staged.tile_estimate_us << " us; chose "
          << chosen.tile_m << "x" << chosen.tile_n
          << std::string(chosen.images.empty() ? "" : "+img") << " " << chosen.tile_estimate_us
          << " us");
  // CAPGRAPH_ADRENO_NO_IMAGES=1: the staged shapes only.
  setenv("CAPGRAPH_ADRENO_NO_IMAGES", "1", 1);
  const AdrenoKernelFacts none = adreno_codegen(p, adreno_a630()).unique.at(0);
  unsetenv("CAPGRAPH_ADRENO_NO_IMAGES");
  CHECK(none.tile_candidates == 5);
  CHECK(none.images.empty());

  ModelBuilder b3(13);
  b3.input("x", DataType::float32, {1, 64, 14, 14});
  b3.initializer("w", random_floats(96 * 64 * 9, 8), {96, 64, 3, 3});
  b3.node("Conv", {"x", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})});
  b3.output("y", DataType::float32);
  fs::path model3 = dir.path / "conv3x3.onnx";
  b3.save(model3.string());
  Program p3 = schedule(model3);
  setenv("CAPGRAPH_ADRENO_TILE", "128:8x8+img", 1);
  const AdrenoKernelFacts f3 = adreno_codegen(p3, adreno_a630()).unique.at(0);
  unsetenv("CAPGRAPH_ADRENO_TILE");
  CHECK(f3.tiled);
  CHECK(f3.images.empty());
}

TEST_CASE("the disassembly check fails on a word Mesa cannot decode") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 64});
  b.node("Neg", {"x"}, {"y"});
  b.output("y", DataType::float32);
  fs::path model = dir.path / "neg.onnx";
  b.save(model.string());
  Program p = schedule(model);
  AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
  AdrenoKernelFacts f = r.unique.at(0);
  REQUIRE(adreno_disassemble(f, adreno_a630()).errors == 0);
  // Category 7 with an opcode no a6xx instruction has, and every other bit set.
  for (int i = 0; i < 8; i++) f.binary[i] = 0xff;
  AdrenoDisassembly d = adreno_disassemble(f, adreno_a630());
  CHECK(d.errors >= 1);
  CHECK(d.instructions < (int)f.instr_dwords / 2);
}

TEST_CASE("generated models: every kernel compiles for a630 and disassembles cleanly") {
  if (!mesa_present()) return;
  TempDir dir;
  for (const fs::path &model : {model_mixed(dir.path), model_views(dir.path)}) {
    INFO(model.filename().string());
    Program p = schedule(model);
    AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
    CHECK(r.unique.size() >= 6);
    CHECK(program_verify(p, r) > 0);
  }
}

TEST_CASE("what ir3 cannot compute is refused naming the kernel and the target") {
  if (!mesa_present()) return;
  TempDir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float64, {1, 16});
  b.node("Neg", {"x"}, {"y"});
  b.output("y", DataType::float64);
  fs::path model = dir.path / "f64.onnx";
  b.save(model.string());
  Program p = schedule(model);
  try {
    adreno_codegen(p, adreno_a630());
    FAIL("a 64-bit float kernel compiled for a630");
  } catch (const Error &e) {
    std::string m = e.what();
    CHECK(m.find("adreno") != std::string::npos);
    CHECK(m.find("64-bit float") != std::string::npos);
    CHECK(m.find(p.kernels.at(0).name) != std::string::npos);
  }
}

namespace {
// The input shapes a zoo model's meta.json lists: "inputs": [{"name": ..., "dims": [...]}, ...].
InputShapes zoo_input_shapes(const fs::path &meta) {
  std::ifstream f(meta);
  std::string j((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  InputShapes r;
  size_t at = j.find("\"inputs\""), end = j.find("\"outputs\"");
  REQUIRE(at != std::string::npos);
  while ((at = j.find("\"name\"", at)) != std::string::npos && at < end) {
    size_t q0 = j.find('"', j.find(':', at)) + 1, q1 = j.find('"', q0);
    std::string name = j.substr(q0, q1 - q0);
    size_t d0 = j.find('[', j.find("\"dims\"", q1)) + 1, d1 = j.find(']', d0);
    std::istringstream dims(j.substr(d0, d1 - d0));
    Shape shape;
    std::string num;
    while (std::getline(dims, num, ',')) shape.push_back(std::stoll(num));
    r[name] = shape;
    at = d1;
  }
  REQUIRE(!r.empty());
  return r;
}
}  // namespace

namespace {
// A static cost figure of a program's product kernels (a sum of products of two loads:
// convolutions, matrix products), counted from the schedule, not measured: multiply-adds (points
// of the iteration space) and the 32-bit global loads their reductions issue. Untiled, every
// point loads both operands (one element per output each, vector loads included: 8 bytes per
// multiply-add). Tiled (gpu_tile.h), a workgroup loads kc * (TM + TN) elements per chunk for
// TM * TN outputs; padded positions are counted as loads (an upper bound: the code skips them).
struct ProductCost {
  int launches = 0, tiled = 0;
  double fmas = 0, tiled_fmas = 0, loads = 0,
         slots = 0;  // slots: multiply-adds the tiles execute, padding included
};
ProductCost product_cost(const Program &p, const AdrenoCodegenResult &r) {
  ProductCost c;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const Kernel &k = p.kernels[i];
    if (k.reduce != Reduce::sum || k.body < 0 || k.exprs[k.body].op != Op::mul) continue;
    const Expr &body = k.exprs[k.body];
    // A float16 operand is a load widened to float32 (float16 storage, the target's default).
    auto load_under = [&](int e) {
      while (e >= 0 && k.exprs[e].op == Op::cast) e = k.exprs[e].a;
      return e >= 0 && k.exprs[e].op == Op::load;
    };
    if (!load_under(body.a) || !load_under(body.b)) continue;
    double points = 1;
    for (int64_t a : k.axes) points *= (double)a;
    c.launches++;
    c.fmas += points;
    if (!r.unique[r.unique_of[i]].tiled) {
      c.loads += 2 * points;
      c.slots += points;
      continue;
    }
    const GpuTilePlan pl = gpu_tile_plan(k, p, adreno_gpu_facts(adreno_a630()));
    REQUIRE(pl.ok);
    double outer = 1;
    for (int x : pl.outer) outer *= (double)k.axes[x];
    const double chunks = outer * (double)((k.axes[pl.chunk] + pl.kc - 1) / pl.kc);
    c.tiled++;
    c.tiled_fmas += points;
    c.loads += (double)pl.groups() * chunks * (double)(pl.kc * (pl.TM() + pl.TN()));
    c.slots += (double)pl.groups() * (double)(pl.TM() * pl.TN()) * chunks * (double)pl.kc;
  }
  return c;
}
}  // namespace

// The acceptance set: every kernel of every zoo model compiles for a630 and disassembles.
TEST_CASE("models: every kernel of every zoo model compiles for a630 and disassembles") {
  if (!getenv("CAPGRAPH_ADRENO_MODELS")) {
    MESSAGE("not run here: ctest runs it as adreno_models_compile (CAPGRAPH_ADRENO_MODELS=1)");
    return;
  }
  if (!mesa_present()) return;
  fs::path zoo = fs::path(CAPGRAPH_REPO_DIR) / "../shared/zoo";
  if (!fs::is_directory(zoo)) {
    MESSAGE("SKIPPED: no model zoo at " << zoo.string() << " (it is optional)");
    return;
  }
  int models = 0;
  for (const auto &e : fs::directory_iterator(zoo)) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    INFO(e.path().filename().string());
    auto t0 = std::chrono::steady_clock::now();
    Program p = schedule(e.path() / "model.onnx", zoo_input_shapes(e.path() / "meta.json"));
    AdrenoCodegenResult r = adreno_codegen(p, adreno_a630());
    int instructions = program_verify(p, r);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int vec4 = 0, group = 0, spilling = 0, tiled = 0;
    uint32_t regs = 0, tiled_instrs = 0;
    for (const AdrenoKernelFacts &f : r.unique) {
      vec4 += f.lanes == 4;
      group += f.group_reduce;
      tiled += f.tiled;
      if (f.tiled) tiled_instrs = std::max(tiled_instrs, f.instr_count);
      spilling += f.private_memory_bytes > 0;
      regs = std::max(regs, f.full_regs);
    }
    MESSAGE(e.path().filename().string()
            << ": " << p.kernels.size() << " launches, " << r.unique.size() << " a630 kernels ("
            << vec4 << " vec4, " << group << " workgroup reductions, " << tiled
            << " tiled (the largest " << tiled_instrs << " instructions), " << spilling
            << " using private memory, at most " << regs << " full registers), " << instructions
            << " instructions disassembled, " << s << " s");
    const ProductCost pc = product_cost(p, r);
    MESSAGE(e.path().filename().string()
            << " cost: " << pc.launches << " product launches (" << pc.tiled << " tiled), "
            << pc.fmas / 1e6 << " M multiply-adds (" << 100 * pc.tiled_fmas / std::max(pc.fmas, 1.0)
            << "% tiled), " << 4 * pc.loads / std::max(pc.fmas, 1.0)
            << " global B per multiply-add, " << 100 * pc.fmas / std::max(pc.slots, 1.0)
            << "% of executed multiply-adds useful");
    CHECK(instructions > 0);
    if (!getenv("CAPGRAPH_GPU_NO_TILE"))
      CHECK(pc.tiled > 0);  // every zoo model has a convolution the plan tiles
    models++;
  }
  CHECK(models >= 1);
}
