#include "nv_target.h"

#include "error.h"

namespace capgraph {

namespace {

// sm_86/89/90 are the GPUs of issue 15. CUDA 13's ptxas starts at sm_75, and LLVM 19's NVPTX
// backend knows up to sm_90a (nv_plan.md §3), so all three assemble with either toolkit.
const NvTarget kTargets[] = {
    {"nv-sm86", "sm_86", 86, 3},
    {"nv-sm89", "sm_89", 89, 3},
    {"nv-sm90", "sm_90", 90, 4},
};

}  // namespace

bool nv_target_is_nv(const std::string &name) { return name.rfind("nv-", 0) == 0; }

NvTarget nv_target_named(const std::string &name) {
  for (const NvTarget &t : kTargets)
    if (t.name == name) return t;
  throw Error("unknown NVIDIA target '" + name + "' (known: " + nv_target_names() + ")");
}

std::string nv_target_names() {
  std::string s;
  for (const NvTarget &t : kTargets) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

}  // namespace capgraph
