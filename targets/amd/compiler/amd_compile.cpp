// The AMD GPU targets in the compiler's table: LLVM AMDGPU code objects, host twins of every
// kernel for this machine's CPU, and each kernel's AmdKernel launch facts.
#include <memory>

#include "amd_target.h"
#include "amdgpu_codegen.h"
#include "error.h"
#include "target/target_table.h"

namespace capgraph {

// compiler/amd_inspect.cpp: the amd facts for `capgraph inspect`.
std::string amd_facts_text(const fb::Capture *c);
std::string amd_facts_json(const fb::Capture *c);

namespace {

bool amd_matches(const std::string &name) { return amd_target_is_amd(name); }

TargetCode amd_codegen_target(const Program &p, const std::string &name, int jobs) {
  const AmdTarget t = amd_target_named(name);
  TargetCode c;
  target_twins_add(c, p, jobs);
  AmdCodegenResult gpu = amdgpu_codegen(p, t, jobs);
  if (gpu.facts.size() != p.kernels.size())
    throw Error("internal: AMD kernel facts do not match the program's kernels");
  c.target = {t.name, t.triple, t.cpu, t.features};
  c.format = fb::ProgramFormat::amdgpu_code_object;
  c.code = std::move(gpu.code);
  auto facts = std::make_shared<const std::vector<AmdKernelFacts>>(std::move(gpu.facts));
  c.facts = [facts](flatbuffers::FlatBufferBuilder &fbb, size_t i) {
    const AmdKernelFacts &f = (*facts)[i];
    auto a = fb::CreateAmdKernel(fbb, f.descriptor_offset, f.kernarg_size, f.kernarg_align,
                                 f.group_segment_size, f.private_segment_size, f.sgpr_count,
                                 f.vgpr_count, f.rsrc1, f.rsrc2, f.rsrc3, f.kernel_code_properties,
                                 f.wavefront_size, f.workgroup_size);
    return std::make_pair(fb::KernelFacts::AmdKernel, a.Union());
  };
  c.version_major = 2;
  return c;
}

}  // namespace

extern const TargetEntry amd_target_entry;
const TargetEntry amd_target_entry = {.family = "amd",
                                      .matches = &amd_matches,
                                      .names = &amd_target_names,
                                      .threads = false,
                                      .codegen = &amd_codegen_target,
                                      .facts_text = &amd_facts_text,
                                      .facts_json = &amd_facts_json};

}  // namespace capgraph
