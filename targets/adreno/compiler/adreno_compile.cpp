// The Adreno (a6xx) targets in the compiler's table: ir3 programs from Mesa (codegen/
// adreno_codegen.h), host twins of every kernel for this machine's CPU, and each kernel's
// AdrenoKernel launch facts. Built with or without Mesa: without it (CAPGRAPH_ADRENO=OFF or no
// scripts/mesa_ir3.sh build) adreno_codegen() throws an Error saying how to get Mesa's ir3.
#include <memory>

#include "adreno_codegen.h"
#include "adreno_kernel_write.h"
#include "compile.h"
#include "error.h"
#include "knobs.h"
#include "schedule/fuse.h"
#include "schedule/half_storage.h"
#include "target/target_table.h"

namespace capgraph {

// compiler/adreno_inspect.cpp: the adreno facts for `capgraph inspect`.
std::string adreno_facts_text(const fb::Capture *c);
std::string adreno_facts_json(const fb::Capture *c);

namespace {

// Every name starting "adreno" is this family's, so "adreno-a999" gets Adreno's own message.
bool adreno_matches(const std::string &name) { return name.rfind("adreno", 0) == 0; }
std::string adreno_names() { return adreno_a630().name; }

const AdrenoTarget &adreno_target_named(const std::string &name) {
  if (name == adreno_a630().name) return adreno_a630();
  throw Error("unknown Adreno target '" + name + "': known Adreno targets are " + adreno_names());
}

TargetCode adreno_codegen_target(const Program &p, const std::string &name, int jobs) {
  const AdrenoTarget &t = adreno_target_named(name);
  // Mesa first: without it the error comes before the host twins are compiled for nothing.
  AdrenoCodegenResult gpu = adreno_codegen(p, t);
  if (gpu.unique_of.size() != p.kernels.size())
    throw Error("internal: Adreno kernels do not match the program's kernels");
  TargetCode c;
  target_twins_add(c, p, jobs);
  c.target = {t.name, "", t.name.substr(t.name.find('-') + 1), ""};
  c.format = fb::ProgramFormat::adreno_ir3;
  // One program per distinct kernel (its own instructions and constant data, as ir3 laid them
  // out), and the twins' deduplication is the same (kernels_dedupe): entry u names twin u.
  for (const AdrenoKernelFacts &f : gpu.unique) c.code.objects.push_back(f.binary);
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const int u = gpu.unique_of[i];
    const CodegenKernel &twin = c.twins.kernels[i];
    c.code.kernels.push_back({u, twin.symbol, twin.slots, twin.work_size});
  }
  c.code.unique_kernels = (int)gpu.unique.size();
  auto facts = std::make_shared<const AdrenoCodegenResult>(std::move(gpu));
  c.facts = [facts, &t](flatbuffers::FlatBufferBuilder &fbb, size_t i) {
    const AdrenoKernelFacts &f = facts->unique[facts->unique_of[i]];
    return std::make_pair(fb::KernelFacts::AdrenoKernel, adreno_kernel_write(fbb, f, t).Union());
  };
  // 2.2: AdrenoKernel and ProgramFormat.adreno_ir3 are 2.1's union and enum grown by one member.
  c.version_major = 2;
  c.version_minor = 2;
  return c;
}

// Elementwise producers folded into the products that stage them (fuse.h,
// program_fuse_operand_producers: a camera frame's cast and scale, a squeeze-excitation's channel
// scale): their output is never written or read back. In programs with float16 storage only
// (float32 captures stay as they were, as the window path), and only where the product keeps
// its tile schedule with the expression as operand. CAPGRAPH_ADRENO_NO_OPERAND_FUSE=1 keeps them.
void adreno_layouts(Program &p, const std::string &name, CompileReport &r) {
  if (knob_get("CAPGRAPH_ADRENO_NO_OPERAND_FUSE")) return;
  if (!program_has_half(p)) return;
  const GpuFacts g = adreno_gpu_facts(adreno_target_named(name));
  r.operands_fused = program_fuse_operand_producers(p, [&](const Kernel &k) {
    const GpuTilePlan pl = gpu_tile_plan(k, p, g);
    return pl.ok && pl.a_expr >= 0;
  });
  r.fused += r.operands_fused;
}

}  // namespace

const AdrenoTarget &adreno_a630() {
  static const AdrenoTarget t = adreno_target_of(*adreno::chip_find("a630"));
  return t;
}

extern const TargetEntry adreno_target_entry;
// --precision's default is fp16, as comma's models run on the a630: float32 weights and
// activations stored as float16, math in float32, and the tensors float16 would spoil kept float32
// (the rules of schedule/half_storage.h and the calibration runs of half_calibrate.h). Without
// --calibrate the calibration runs on four generated inputs of different kinds
// (half_calibrate_inputs.h) and keeps what the worst of them needs: one normal draw was not
// enough (PP-OCRv4 det calibrated on it was 0.081 off on its own page, tolerance 0.03).
const TargetEntry adreno_target_entry = {.family = "adreno",
                                         .matches = &adreno_matches,
                                         .names = &adreno_names,
                                         .threads = false,
                                         .codegen = &adreno_codegen_target,
                                         .layouts = &adreno_layouts,
                                         .facts_text = &adreno_facts_text,
                                         .facts_json = &adreno_facts_json,
                                         .precision = "fp16"};

}  // namespace capgraph
