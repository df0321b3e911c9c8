// The NVIDIA GPU targets in the compiler's table: cubins assembled by ptxas from LLVM's PTX, host
// twins of every kernel for this machine's CPU, and each kernel's NvKernel launch facts read back
// from its cubin. The runtime replays them on `--device nv` (targets/nv/nv_hcq.cpp).
#include <memory>

#include "error.h"
#include "knobs.h"
#include "nv_kernel_write.h"
#include "nv_target.h"
#include "nvptx_codegen.h"
#include "target/target_table.h"

namespace capgraph {

// compiler/nv_inspect.cpp: the nv facts for `capgraph inspect`.
std::string nv_facts_text(const fb::Capture *c);
std::string nv_facts_json(const fb::Capture *c);

namespace {

bool nv_matches(const std::string &name) { return nv_target_is_nv(name); }

TargetCode nv_codegen_target(const Program &p, const std::string &name, int jobs) {
  const NvTarget t = nv_target_named(name);
  // The cubins first: without ptxas this fails at once (naming ptxas and where it was looked
  // for), before the twins' compile time is spent.
  NvCodegenResult gpu = nvptx_codegen(p, t, jobs);
  if (gpu.facts.size() != p.kernels.size())
    throw Error("internal: NVIDIA kernel facts do not match the program's kernels");
  TargetCode c;
  target_twins_add(c, p, jobs);
  c.target = {t.name, "nvptx64-nvidia-cuda", t.cpu, ""};
  c.format = fb::ProgramFormat::nv_cubin;
  c.code = std::move(gpu.code);
  auto facts = std::make_shared<const std::vector<NvKernelFacts>>(std::move(gpu.facts));
  const std::string version = gpu.ptxas_version;
  // Each kernel carries its module's PTX for the fake GPU's interpreter unless the knob drops it
  // (a shipped capture: only the cubin runs on a GPU).
  const char *no_ptx = knob_get("CAPGRAPH_NV_NO_PTX");
  std::vector<size_t> object_of;
  for (const CodegenKernel &k : c.code.kernels) object_of.push_back(k.object);
  auto ptx = std::make_shared<const std::vector<std::string>>(
      no_ptx && std::string(no_ptx) == "1" ? std::vector<std::string>() : std::move(gpu.ptx));
  c.facts = [facts, t, version, ptx, object_of](flatbuffers::FlatBufferBuilder &fbb, size_t i) {
    const std::string *text = object_of[i] < ptx->size() ? &(*ptx)[object_of[i]] : nullptr;
    return std::make_pair(fb::KernelFacts::NvKernel,
                          nv_kernel_write(fbb, (*facts)[i], t, version, text).Union());
  };
  // NvKernel joined the KernelFacts union in 2.2: an older 2.x runtime reads the file and finds
  // no facts it knows, rather than misreading any.
  c.version_major = 2;
  c.version_minor = 2;
  return c;
}

}  // namespace

extern const TargetEntry nv_target_entry;
const TargetEntry nv_target_entry = {.family = "nv",
                                     .matches = &nv_matches,
                                     .names = &nv_target_names,
                                     .threads = false,
                                     .codegen = &nv_codegen_target,
                                     .facts_text = &nv_facts_text,
                                     .facts_json = &nv_facts_json};

}  // namespace capgraph
