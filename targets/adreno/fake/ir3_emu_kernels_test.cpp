// Real a630 kernels through the ir3 emulator: small ONNX models are compiled by our compiler
// (Mesa's ir3 behind it), every instruction of every kernel is decoded and rendered and compared
// with Mesa's own disassembly.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "adreno_codegen.h"
#include "codegen/cpu_codegen.h"
#include "compile.h"
#include "ir3_decode.h"
#include "ir3_emu.h"
#include "ir3_test_encode.h"
#include "onnx_writer.h"
#include "schedule/interpret.h"

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
// uint8 paths, float16 tensors. `fused`: also the float16 model of folded producers and split
// reductions (left out of the planted-hazard tally: its loops exit together in every fiber, so a
// (jp) taken out there parks none, and the tally's share of (jp) named would count them).
std::vector<compiled> models_compile(const fs::path &dir, bool fused = true) {
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
           {attr_ints("kernel_shape", {3, 3}), attr_ints("pads", {1, 1, 1, 1}),
            attr_ints("strides", {2, 2})});
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
  if (fused) {  // float16 storage (the default): a uint8 frame's cast and scale staged by the
                // strided
    // convolution reading it, a squeeze-excitation's channel scale staged by the projection
    // (program_fuse_operand_producers), and matrix-vector heads split across work items a few
    // per output (group_reduce_parts)
    ModelBuilder b(13);
    b.input("x8", DataType::uint8, {1, 12, 16, 32});
    b.initializer("scale", std::vector<float>{1.0f / 255.0f}, {1});
    b.initializer("w0", random_floats(16 * 12 * 9, 11), {16, 12, 3, 3});
    b.initializer("b0", random_floats(16, 12), {16});
    b.initializer("wr", random_floats(4 * 16, 13), {4, 16, 1, 1});
    b.initializer("we", random_floats(16 * 4, 14), {16, 4, 1, 1});
    b.initializer("wp", random_floats(24 * 16, 15), {24, 16, 1, 1});
    b.initializer("wh", random_floats(198 * 24, 16), {198, 24});
    b.initializer("bh", random_floats(198, 17), {198});
    b.node("Cast", {"x8"}, {"xf"}, {attr_int("to", 1)});
    b.node("Mul", {"xf", "scale"}, {"xs"});
    b.node("Conv", {"xs", "w0", "b0"}, {"c"},
           {attr_ints("pads", {1, 1, 1, 1}), attr_ints("strides", {2, 2})});
    b.node("Relu", {"c"}, {"x"});
    b.node("GlobalAveragePool", {"x"}, {"g"});
    b.node("Conv", {"g", "wr"}, {"r"});
    b.node("Relu", {"r"}, {"rr"});
    b.node("Conv", {"rr", "we"}, {"e"});
    b.node("Sigmoid", {"e"}, {"s"});
    b.node("Mul", {"x", "s"}, {"m"});
    b.node("Conv", {"m", "wp"}, {"pj"});
    b.node("GlobalAveragePool", {"pj"}, {"pg"});
    b.node("Flatten", {"pg"}, {"pv"});
    b.node("Gemm", {"pv", "wh", "bh"}, {"y"}, {attr_int("transB", 1)});
    b.output("y", DataType::float32);
    out.push_back(model_compile("f16_fused", b, dir));
  }
  return out;
}

// Host memory for a program's buffers at made-up GPU addresses, each buffer followed by an
// unmapped gap so an access past its end faults instead of landing in the next one.
struct gpu_buffers {
  static constexpr uint64_t base = 0x10000000000ull, gap = 1 << 16;
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<uint64_t> gpu;
  explicit gpu_buffers(const Program &p) {
    uint64_t at = base;
    for (const Buffer &b : p.buffers) {
      bytes.emplace_back(size_t(b.numel) * dtype_size(b.dtype));
      gpu.push_back(at);
      at += (bytes.back().size() + gap + 4095) / 4096 * 4096;
    }
  }
  ir3_region_find finder() {
    return [this](uint64_t a) -> ir3_region {
      for (size_t k = 0; k < gpu.size(); k++)
        if (a >= gpu[k] && a < gpu[k] + bytes[k].size())
          return {gpu[k], bytes[k].size(), bytes[k].data()};
      return {};
    };
  }
  std::vector<uint8_t *> host() {
    std::vector<uint8_t *> h;
    for (auto &b : bytes) h.push_back(b.data());
    return h;
  }
};

// The dispatch the fake KGSL sees for kernel `k` with facts `f` (targets/adreno/adreno_hcq.cpp
// writes the same: parameters, immediates and driver params in the constant file).
ir3_dispatch dispatch_of(const Kernel &k, const AdrenoKernelFacts &f, const gpu_buffers &m) {
  ir3_dispatch d;
  d.kernel = k.name;
  std::string err;
  const bool ok = ir3_program_decode(reinterpret_cast<const uint32_t *>(f.binary.data()),
                                     f.instr_dwords / 2, k.name, &d.program, &err);
  INFO(err);
  REQUIRE(ok);
  d.wave128 = f.double_threadsize;
  d.full_regs = f.full_regs;
  d.half_regs = f.half_regs;
  d.merged_regs = f.merged_regs;
  for (int a = 0; a < 3; a++) {
    d.local[a] = f.workgroup_size[a];
    d.groups[a] = f.grid[a];
  }
  d.shared_bytes = f.shared_memory_bytes;
  d.private_bytes = f.private_memory_bytes;
  d.constlen_vec4 = f.constlen_vec4;
  d.workgroup_id_regid = f.workgroup_id_regid;
  d.local_id_regid = f.local_id_regid;
  const std::vector<int> slots = kernel_slots(k);
  REQUIRE(f.params_bytes == 8 * slots.size());
  for (size_t s = 0; s < slots.size(); s++) {
    const uint64_t a = m.gpu[slots[s]];
    d.consts[f.params_offset_vec4 * 4 + 2 * s] = uint32_t(a);
    d.consts[f.params_offset_vec4 * 4 + 2 * s + 1] = uint32_t(a >> 32);
  }
  for (size_t n = 0; n < f.immediates.size(); n++)
    d.consts[f.immediates_offset_vec4 * 4 + n] = f.immediates[n];
  if (f.driver_params_offset_vec4 != UINT32_MAX) {
    // ir3_driver_params_cs (Mesa ir3_shader.h): num_work_groups, work_dim, base_group,
    // subgroup_size, local_group_size, as adreno_hcq.cpp uploads them.
    const uint32_t dp[12] = {f.grid[0],
                             f.grid[1],
                             f.grid[2],
                             3,
                             0,
                             0,
                             0,
                             f.double_threadsize ? 128u : 64u,
                             f.workgroup_size[0],
                             f.workgroup_size[1],
                             f.workgroup_size[2],
                             0};
    for (uint32_t n = 0; n < 12 && f.driver_params_offset_vec4 * 4 + n < 1024; n++)
      d.consts[f.driver_params_offset_vec4 * 4 + n] = dp[n];
  }
  return d;
}

void inputs_fill(const Program &p, gpu_buffers *m, unsigned seed) {
  std::mt19937 rng(seed);
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const Buffer &buf = p.buffers[b];
    std::vector<uint8_t> &bytes = m->bytes[b];
    if (buf.kind == Buffer::Kind::constant) {
      memcpy(bytes.data(), buf.data.data(), bytes.size());
    } else if (buf.kind == Buffer::Kind::input) {
      for (int64_t e = 0; e < buf.numel; e++) {
        const double v = buf.dtype == DType::u8
                             ? double(rng() % 256)
                             : std::uniform_real_distribution<double>(-2, 2)(rng);
        element_store(buf.dtype, bytes.data(), e, v);
      }
    }
  }
}

struct run_totals {
  int kernels = 0, launches = 0;
  uint64_t instructions = 0;
  double max_abs = 0, max_rel = 0;
  ir3_counts counts;
  std::vector<std::string> findings;
};

// Runs every launch of a compiled model on the emulator and on the kernel interpreter, each launch
// from the same inputs (the interpreter's state), and compares the stored buffer.
void model_run(const compiled &c, run_totals *t, double rtol) {
  gpu_buffers ref(c.p), emu(c.p);
  inputs_fill(c.p, &ref, 11);
  std::vector<bool> seen(c.r.unique.size());
  for (size_t n = 0; n < c.p.kernels.size(); n++) {
    const Kernel &k = c.p.kernels[n];
    const AdrenoKernelFacts &f = c.r.unique[c.r.unique_of[n]];
    INFO(c.name << " launch " << n << " kernel " << k.name);
    emu.bytes = ref.bytes;
    const ir3_dispatch d = dispatch_of(k, f, emu);
    std::vector<ir3_finding> findings;
    std::string err;
    ir3_counts counts;
    const bool ok = ir3_dispatch_run(d, emu.finder(), &counts, &findings, &err);
    INFO(err);
    REQUIRE(ok);
    for (const ir3_finding &x : findings)
      t->findings.push_back(c.name + " " + k.name + ": " + x.text);
    kernel_interpret(k, c.p, ref.host());
    const int b = k.store.buffer;
    const DType dt = c.p.buffers[b].dtype;
    for (int64_t e = 0; e < c.p.buffers[b].numel; e++) {
      const double want = element_load(dt, ref.bytes[b].data(), e),
                   got = element_load(dt, emu.bytes[b].data(), e);
      const double err_abs = std::fabs(want - got),
                   err_rel = err_abs / std::max(1.0, std::fabs(want));
      INFO("element " << e << ": interpreter " << want << ", emulator " << got);
      REQUIRE((err_rel <= rtol || (std::isnan(want) && std::isnan(got))));
      t->max_abs = std::max(t->max_abs, err_abs);
      t->max_rel = std::max(t->max_rel, err_rel);
    }
    t->launches++;
    t->counts.add(counts);
    if (!seen[c.r.unique_of[n]]) {
      seen[c.r.unique_of[n]] = true;
      t->kernels++;
      t->instructions += f.instr_dwords / 2;
    }
  }
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

TEST_CASE(
    "ir3 decoder: every instruction of real a630 kernels decodes and renders as Mesa's "
    "disassembler") {
  if (!mesa_present()) return;
  temp_dir dir;
  int kernels = 0, instructions = 0, same_lines = 0;
  std::map<std::string, int> ops;
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
      const bool ok =
          ir3_program_decode(reinterpret_cast<const uint32_t *>(code.data()), n, c.name, &is, &err);
      INFO(err);
      REQUIRE(ok);
      for (size_t k = 0; k < n; k++) {
        const std::string mine = ir3_render(is[k], int(k), true);
        INFO(c.name << " instruction " << k << " " << ir3_word_text(is[k].word) << ": mine '"
                    << mine << "', Mesa '" << mesa[k] << "'");
        CHECK(mnemonic(mine) == mnemonic(mesa[k]));
        CHECK(mine == mesa[k]);
        same_lines += mine == mesa[k];
        ops[mnemonic(mine)]++;
      }
      kernels++;
      instructions += int(n);
    }
  }
  MESSAGE(kernels << " kernels, " << instructions << " instructions decoded, " << same_lines
                  << " rendered exactly as Mesa's disassembler");
  std::string seen;
  for (const auto &[op, n] : ops) seen += " " + op + "(" + std::to_string(n) + ")";
  MESSAGE("instructions seen:" << seen);
  CHECK(kernels >= 10);
}

TEST_CASE(
    "ir3 emulator: real a630 kernels compute what the kernel interpreter computes, with no "
    "hazards") {
  if (!mesa_present()) return;
  temp_dir dir;
  run_totals t;
  for (const compiled &c : models_compile(dir.path)) {
    // float16 tensors: SFU results computed in double here and in float32 by the interpreter may
    // round to neighbouring float16 values: one float16 ulp apart at most.
    const double abs0 = t.max_abs, rel0 = t.max_rel;
    t.max_abs = t.max_rel = 0;
    model_run(c, &t, c.name.rfind("f16", 0) == 0 ? 2e-3 : 2e-4);
    MESSAGE(c.name << ": " << c.p.kernels.size() << " launches, max error " << t.max_abs << " abs, "
                   << t.max_rel << " rel");
    t.max_abs = std::max(t.max_abs, abs0);
    t.max_rel = std::max(t.max_rel, rel0);
  }
  for (const std::string &f : t.findings) MESSAGE(f);
  CHECK(t.findings.empty());
  MESSAGE(t.kernels << " kernels in " << t.launches << " launches executed (" << t.instructions
                    << " instructions), max error vs interpreter " << t.max_abs << " abs, "
                    << t.max_rel << " rel; " << t.counts.waves << " waves, "
                    << t.counts.instructions << " wave instructions (" << t.counts.alu << " ALU, "
                    << t.counts.sfu << " SFU, " << t.counts.flow << " flow, " << t.counts.mem
                    << " memory, " << t.counts.nops << " nops), " << t.counts.barriers
                    << " barriers, " << t.counts.divergent_branches << " divergent branches");
  CHECK(t.kernels >= 10);
}

namespace {

// One launch of a compiled model with the interpreter's state before it and its result, to run
// variants of the launch's program against.
struct launch_fixture {
  const compiled &c;
  size_t n;
  gpu_buffers before, after;
  launch_fixture(const compiled &cc, size_t nn) : c(cc), n(nn), before(cc.p), after(cc.p) {
    inputs_fill(c.p, &before, 5);
    for (size_t m = 0; m < n; m++) kernel_interpret(c.p.kernels[m], c.p, before.host());
    after.bytes = before.bytes;
    kernel_interpret(c.p.kernels[n], c.p, after.host());
  }
  // Findings of a run of `program` (the compiled one when null); *differs: the stored buffer is
  // not the interpreter's.
  std::vector<ir3_finding> run(const std::vector<ir3_instr> *program, bool *differs,
                               ir3_counts *counts = nullptr) {
    gpu_buffers emu(c.p);
    emu.bytes = before.bytes;
    const Kernel &k = c.p.kernels[n];
    ir3_dispatch d = dispatch_of(k, c.r.unique[c.r.unique_of[n]], emu);
    if (program) d.program = *program;
    d.per_instruction = counts != nullptr;
    std::vector<ir3_finding> findings;
    std::string err;
    const bool ok = ir3_dispatch_run(d, emu.finder(), counts, &findings, &err);
    INFO(err);
    REQUIRE(ok);
    const int b = k.store.buffer;
    *differs = false;
    for (int64_t e = 0; e < c.p.buffers[b].numel; e++) {
      const double want = element_load(c.p.buffers[b].dtype, after.bytes[b].data(), e);
      const double got = element_load(c.p.buffers[b].dtype, emu.bytes[b].data(), e);
      if (std::fabs(want - got) > 1e-3 * std::max(1.0, std::fabs(want))) *differs = true;
    }
    return findings;
  }
};

std::vector<ir3_instr> with_word(std::vector<ir3_instr> p, size_t at, uint64_t word) {
  std::string why;
  REQUIRE(ir3_decode(word, &p[at], &why));
  return p;
}

}  // namespace

// Planted hazards in real kernels: every (ss), (sy), (jp), nop and (nopN) Mesa put in is taken out
// one at a time; the checker must name a hazard for the ones the executed path depends on. A
// changed instruction (a planted miscompile) must change the result.
TEST_CASE("ir3 hazards: sync bits, (jp) and nops taken out of real kernels are named") {
  if (!mesa_present()) return;
  temp_dir dir;
  struct tally {
    int planted = 0, named = 0;
  };
  std::map<std::string, tally> t;
  for (const compiled &c : models_compile(dir.path, false)) {
    std::vector<bool> seen(c.r.unique.size());
    for (size_t n = 0; n < c.p.kernels.size(); n++) {
      if (seen[c.r.unique_of[n]]) continue;
      seen[c.r.unique_of[n]] = true;
      bool differs = false;
      launch_fixture fx(c, n);
      ir3_counts cover;
      const std::vector<ir3_finding> clean = fx.run(nullptr, &differs, &cover);
      REQUIRE(clean.empty());
      REQUIRE_FALSE(differs);
      const std::vector<ir3_instr> prog =
          dispatch_of(c.p.kernels[n], c.r.unique[c.r.unique_of[n]], fx.before).program;
      for (size_t at = 0; at < prog.size(); at++) {
        const ir3_instr &i = prog[at];
        // A dynamic checker sees the executed path only: instructions the inputs never reach (the
        // rare branch of an integer division, ...) are left alone.
        if (cover.per_instruction[at] == 0 ||
            (at + 1 < prog.size() && cover.per_instruction[at + 1] == 0))
          continue;
        struct plant {
          const char *what;
          uint64_t word;
        };
        std::vector<plant> plants;
        if (i.ss) plants.push_back({"(ss)", i.word & ~(1ull << 44)});
        if (i.sy) plants.push_back({"(sy)", i.word & ~(1ull << 60)});
        if (i.jp) plants.push_back({"(jp)", i.word & ~(1ull << 59)});
        if (i.op == ir3_op::nop && i.repeat > 0) plants.push_back({"nop", i.word & ~(7ull << 40)});
        if (i.nop > 0)
          plants.push_back(
              {"(nopN)", i.word & ~(1ull << 43 | (i.cat == 2 ? 1ull << 51 : 1ull << 15))});
        for (const plant &p : plants) {
          const std::vector<ir3_instr> bad = with_word(prog, at, p.word);
          const std::vector<ir3_finding> f = fx.run(&bad, &differs);
          tally &x = t[p.what];
          x.planted++;
          x.named += !f.empty();
          if (x.named == 1 && !f.empty() && x.planted == x.named)
            MESSAGE("e.g. " << std::string(p.what) << " taken from " << c.p.kernels[n].name
                            << " instruction " << at << ": " << f[0].text);
          if (f.empty() && getenv("IR3_UNNAMED")) {
            std::string ctx;
            for (size_t q = at >= 4 ? at - 4 : 0; q < std::min(prog.size(), at + 5); q++)
              ctx += (q == at ? " >> " : "    ") + std::to_string(q) + " " +
                     ir3_render(prog[q], int(q)) + "\n";
            MESSAGE("not named: " << std::string(p.what) << " of " << c.p.kernels[n].name << " at "
                                  << at << "\n"
                                  << ctx);
          }
        }
      }
    }
  }
  for (const auto &[what, x] : t) {
    MESSAGE(what << " taken out " << x.planted << " times, named " << x.named << " times");
    CHECK(x.named > 0);
    CHECK(x.named * 4 >= x.planted * 3);  // the rest guard paths these inputs do not take
  }
  // A planted miscompile: relu's max.f becomes min.f.
  const std::vector<compiled> models = models_compile(dir.path);
  launch_fixture fx(models.front(), 0);
  std::vector<ir3_instr> prog = dispatch_of(fx.c.p.kernels[0], fx.c.r.unique[0], fx.before).program;
  size_t at = 0;
  while (at < prog.size() && prog[at].op != ir3_op::max_f) at++;
  REQUIRE(at < prog.size());
  bool differs = false;
  fx.run(&prog, &differs);
  CHECK_FALSE(differs);
  prog = with_word(prog, at, (prog[at].word & ~(63ull << 53)) | 1ull << 53);
  REQUIRE(prog[at].op == ir3_op::min_f);
  fx.run(&prog, &differs);
  CHECK(differs);
}

// Emulator speed on a convolution of a realistic size (not run by ctest: IR3_BENCH=1).
TEST_CASE("ir3 emulator: speed") {
  if (!getenv("IR3_BENCH") || !mesa_present()) return;
  temp_dir dir;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 32, 48, 48});
  b.initializer("w", random_floats(64 * 32 * 3 * 3, 4), {64, 32, 3, 3});
  b.node("Conv", {"x", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})});
  b.output("y", DataType::float32);
  const compiled c = model_compile("conv_big", b, dir.path);
  launch_fixture fx(c, 0);
  bool differs = false;
  ir3_counts n;
  const std::clock_t t0 = std::clock();  // CPU time: the machine is shared
  fx.run(nullptr, &differs, &n);
  const double s = double(std::clock() - t0) / CLOCKS_PER_SEC;
  CHECK_FALSE(differs);
  MESSAGE(n.instructions << " wave instructions in " << s
                         << " s of CPU: " << n.instructions / s / 1e6 << " M/s, "
                         << n.fma_lanes / s / 1e6 << " M fma lanes/s");
}

namespace {

// The input shapes of a zoo model's meta.json ("inputs": [{"name": ..., "dims": [...]}, ...]).
InputShapes zoo_shapes(const fs::path &meta) {
  std::ifstream f(meta);
  const std::string j((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  InputShapes r;
  size_t at = j.find("\"inputs\""), end = j.find("\"outputs\"");
  while ((at = j.find("\"name\"", at)) != std::string::npos && at < end) {
    const size_t q0 = j.find('"', j.find(':', at)) + 1, q1 = j.find('"', q0);
    const size_t d0 = j.find('[', j.find("\"dims\"", q1)) + 1, d1 = j.find(']', d0);
    std::istringstream dims(j.substr(d0, d1 - d0));
    Shape shape;
    for (std::string num; std::getline(dims, num, ',');) shape.push_back(std::stoll(num));
    r[j.substr(q0, q1 - q0)] = shape;
    at = d1;
  }
  return r;
}

// A little-endian float32 .npy array (the zoo's inputs and outputs).
std::vector<float> npy_f32(const fs::path &path) {
  std::ifstream f(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  REQUIRE(b.size() > 10);
  REQUIRE(b.compare(1, 5, "NUMPY") == 0);
  const size_t hlen =
      uint8_t(b[6]) == 1
          ? size_t(uint8_t(b[8]) | uint8_t(b[9]) << 8)
          : size_t(uint32_t(uint8_t(b[8]) | uint8_t(b[9]) << 8 | uint8_t(b[10]) << 16));
  const size_t data = uint8_t(b[6]) == 1 ? 10 + hlen : 12 + hlen;
  REQUIRE(b.substr(0, data).find("'<f4'") != std::string::npos);
  std::vector<float> v((b.size() - data) / 4);
  memcpy(v.data(), b.data() + data, v.size() * 4);
  return v;
}

}  // namespace

// Every kernel of every zoo model: its disassembly is Mesa's line for line; with IR3_ZOO_RUN=1 the
// whole model also runs on the emulator alone, launch after launch, and gives ONNX Runtime's
// outputs (minutes of CPU; the suite's targets_adreno_e2e_zoo runs the zoo's machine code through
// fake-adreno:check instead). ctest runs it as ir3_emu_models (CAPGRAPH_ADRENO_MODELS=1).
TEST_CASE(
    "models: every zoo kernel renders as Mesa's disassembly and the emulated model matches ONNX "
    "Runtime") {
  if (!getenv("CAPGRAPH_ADRENO_MODELS")) {
    MESSAGE("not run here: ctest runs it as ir3_emu_models (CAPGRAPH_ADRENO_MODELS=1)");
    return;
  }
  if (!mesa_present()) return;
  const fs::path zoo = fs::path(CAPGRAPH_REPO_DIR) / "../shared/zoo";
  if (!fs::is_directory(zoo)) {
    MESSAGE("SKIPPED: no model zoo at " << zoo.string());
    return;
  }
  const char *only = getenv("IR3_ZOO_ONLY");
  for (const auto &e : fs::directory_iterator(zoo)) {
    if (!fs::exists(e.path() / "model.onnx")) continue;
    const std::string name = e.path().filename().string();
    if (only && name.find(only) == std::string::npos) continue;
    INFO(name);
    CompileOptions opt;
    opt.target = adreno_a630().name;
    opt.input_shapes = zoo_shapes(e.path() / "meta.json");
    compiled c{name, compile_schedule((e.path() / "model.onnx").string(), opt, nullptr), {}};
    c.r = adreno_codegen(c.p, adreno_a630());
    int instructions = 0, same = 0;
    for (const AdrenoKernelFacts &f : c.r.unique) {
      std::vector<uint8_t> code(f.binary.begin(), f.binary.begin() + f.instr_dwords * 4);
      const std::vector<std::string> mesa =
          mesa_lines(adreno_disassemble_words(code, adreno_a630()).text);
      std::vector<ir3_instr> is;
      std::string err;
      INFO(err);
      REQUIRE(ir3_program_decode(reinterpret_cast<const uint32_t *>(code.data()),
                                 f.instr_dwords / 2, name, &is, &err));
      REQUIRE(mesa.size() == is.size());
      for (size_t k = 0; k < is.size(); k++) same += ir3_render(is[k], int(k), true) == mesa[k];
      instructions += int(is.size());
    }
    CHECK(same == instructions);
    if (!getenv("IR3_ZOO_RUN")) {
      MESSAGE(name << ": " << c.r.unique.size() << " kernels, " << instructions << " instructions, "
                   << same << " rendered as Mesa (IR3_ZOO_RUN=1 also runs it)");
      continue;
    }
    // The model on the emulator: inputs from the zoo, each launch on the previous launches'
    // results.
    gpu_buffers m(c.p);
    inputs_fill(c.p, &m, 1);
    for (size_t k = 0; k < c.p.inputs.size(); k++) {
      const std::vector<float> in = npy_f32(e.path() / ("input_" + std::to_string(k) + ".npy"));
      const Program::Port &port = c.p.inputs[k];
      REQUIRE(int64_t(in.size()) == c.p.buffers[port.buffer].numel);
      for (size_t n = 0; n < in.size(); n++)
        element_store(port.dtype, m.bytes[port.buffer].data(), int64_t(n), in[n]);
    }
    ir3_counts total;
    std::vector<std::string> findings;
    const std::clock_t t0 = std::clock();
    for (size_t n = 0; n < c.p.kernels.size(); n++) {
      const Kernel &k = c.p.kernels[n];
      INFO("launch " << n << " kernel " << k.name);
      ir3_dispatch d = dispatch_of(k, c.r.unique[c.r.unique_of[n]], m);
      d.threads = std::max(1u, std::thread::hardware_concurrency());
      std::vector<ir3_finding> f;
      std::string err;
      const bool ok = ir3_dispatch_run(d, m.finder(), &total, &f, &err);
      INFO(err);
      REQUIRE(ok);
      for (const ir3_finding &x : f) {
        findings.push_back(k.name + ": " + x.text);
        if (getenv("IR3_CONTEXT") && x.producer != UINT32_MAX)
          for (uint32_t q = x.producer >= 3 ? x.producer - 3 : 0;
               q <= x.instr + 3 && q < d.program.size(); q++)
            findings.push_back("    " + std::to_string(q) + " " + ir3_render(d.program[q], int(q)));
      }
    }
    const double cpu = double(std::clock() - t0) / CLOCKS_PER_SEC;
    for (const std::string &f : findings) MESSAGE(f);
    CHECK(findings.empty());
    double max_err = 0, max_ref = 0;
    for (size_t k = 0; k < c.p.outputs.size(); k++) {
      const std::vector<float> want = npy_f32(e.path() / ("output_" + std::to_string(k) + ".npy"));
      const Program::Port &port = c.p.outputs[k];
      REQUIRE(int64_t(want.size()) == c.p.buffers[port.buffer].numel);
      for (size_t n = 0; n < want.size(); n++) {
        const double got = element_load(port.dtype, m.bytes[port.buffer].data(), int64_t(n));
        max_err = std::max(max_err, std::fabs(got - want[n]));
        max_ref = std::max(max_ref, double(std::fabs(want[n])));
      }
    }
    MESSAGE(name << ": " << c.p.kernels.size() << " launches, " << c.r.unique.size() << " kernels, "
                 << instructions << " instructions (" << same << " rendered as Mesa), "
                 << total.instructions << " wave instructions in " << cpu
                 << " s of CPU, max |emulator - ONNX Runtime| " << max_err << " (outputs up to "
                 << max_ref << ")");
    CHECK(max_err <= 1e-3 * std::max(1.0, max_ref));
  }
}

// The decoder against Mesa's on words near real ones: every instruction word of the kernels with
// one or two bits flipped. Mesa's decoder accepting a word (no decode error) and this one accepting
// it must agree, and for accepted words the text must be Mesa's (branch targets compared by
// mnemonic only: a one-word disassembly prints labels for some targets and numbers for others).
TEST_CASE(
    "ir3 decoder: words with flipped bits are accepted and rendered exactly when Mesa's decoder "
    "accepts them") {
  if (!mesa_present()) return;
  temp_dir dir;
  std::vector<uint64_t> words;
  for (const compiled &c : models_compile(dir.path))
    for (const AdrenoKernelFacts &f : c.r.unique)
      for (uint32_t k = 0; k + 1 < f.instr_dwords; k += 2) {
        uint64_t w;
        memcpy(&w, f.binary.data() + 4 * k, 8);
        words.push_back(w);
      }
  // Words of the categories our kernels do not use yet, from the test encoder.
  {
    using namespace enc;
    const uint64_t seeds[] = {
        isam(f32, R(2, 0), R(0, 0), 1) | SY,
        isam(f16, R(2, 0), R(0, 0), 3, 7),
        stib(f32, R(0, 0), R(1, 0), 2),
        stib(f16, R(0, 0), R(1, 0), 1),
        ldp(u32, R(6, 0), R(2, 0), 4, 3),
        stp(u32, R(2, 0), 8, R(0, 0), 2),
        getfiberid(R(0, 0)),
        swz(u32, R(6, 2), R(7, 2), R(7, 2), R(6, 2)),
        mov_rel(s32, s32, R(1, 0), 17, true),
        mov_to_rel(u32, u32, 4, R(2, 0)),
        mov_i(s16, s16, A0X, 3),
        predt(),
        predf(),
        prede(),
        br(-3, 1, true) | JP,
        cat4(rcp, R(2, 2), g(R(0, 3))) | RPT(1) | R1,
        cat4(sin_, R(2, 2), g(R(0, 3)), false),
        cat3(mad_f16, R(1, 1), g3(R(2, 0)), R(1, 0), c3(R(12, 1)), false, false),
        cat3(shlg, R(0, 0), i3(8), R(1, 0), i3(12), true),
        cat2(add_f, R(0, 1), rel(5), g(R(1, 0))),
        cat2(absneg_f, R(2, 0), g(R(1, 0), 2)) | SAT,
        bar()};
    for (const uint64_t w : seeds) words.push_back(w);
  }
  std::mt19937_64 rng(26);
  int tried = 0, accepted = 0, agree = 0, same_text = 0;
  std::vector<std::string> bad;
  for (int n = 0; n < 40000; n++) {
    // Half the time a seed of the encoder (the last words), to reach the rarer categories.
    uint64_t w = n % 2 ? words[words.size() - 1 - rng() % 22] : words[rng() % words.size()];
    const int flips = 1 + int(rng() % 3);
    for (int f = 0; f < flips; f++) w ^= 1ull << (rng() % 64);
    std::vector<uint8_t> code(8);
    memcpy(code.data(), &w, 8);
    const AdrenoDisassembly d = adreno_disassemble_words(code, adreno_a630());
    const bool mesa_ok = d.errors == 0 && d.instructions == 1;
    ir3_instr i;
    std::string why;
    const bool mine_ok = ir3_decode(w, &i, &why);
    tried++;
    if (mesa_ok != mine_ok) {
      if (bad.size() < 60)
        bad.push_back(ir3_word_text(w) + ": Mesa " +
                      (mesa_ok ? "accepts '" + mesa_lines(d.text).at(0) + "'" : "refuses") +
                      ", mine " +
                      (mine_ok ? "accepts '" + ir3_render(i, 0, true) + "'" : "refuses: " + why));
      continue;
    }
    agree++;
    if (!mesa_ok) continue;
    accepted++;
    const std::string mesa = mesa_lines(d.text).at(0), mine = ir3_render(i, 0, true);
    const bool branch =
        i.cat == 0 && i.op != ir3_op::nop && ir3_render(i, 0, false).find('#') != std::string::npos;
    if (branch ? mnemonic(mine) == mnemonic(mesa) : mine == mesa)
      same_text++;
    else if (bad.size() < 60)
      bad.push_back(ir3_word_text(w) + ": Mesa '" + mesa + "', mine '" + mine + "'");
  }
  for (const std::string &b : bad) MESSAGE(b);
  MESSAGE(tried << " words with flipped bits: " << agree
                << " accepted or refused by both decoders, " << accepted << " accepted, "
                << same_text << " of them rendered as Mesa");
  CHECK(agree == tried);
  CHECK(same_text == accepted);
}
