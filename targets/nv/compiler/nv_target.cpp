#include "nv_target.h"

#include <vector>

#include "error.h"
#include "nv_chips.h"

namespace capgraph {

namespace {

// The chips are the runtime's list (targets/nv/nv_chips.cpp): one list, so the compiler cannot
// target a chip the runtime does not know. sm_86/89/90 are the GPUs of issue 15. CUDA 13's ptxas
// starts at sm_75, and LLVM 19's NVPTX backend knows up to sm_90a (nv_plan.md §3), so all three
// assemble with either toolkit; the LLVM processor and ptxas -arch are "sm_" + the SM version.
std::vector<NvTarget> targets_all() {
  unsigned n = 0;
  const nv::chip *chips = nv::chips_all(&n);
  std::vector<NvTarget> v;
  for (unsigned i = 0; i < n; ++i) {
    const nv::chip &c = chips[i];
    v.push_back(
        {std::string("nv-") + c.name, "sm_" + std::to_string(c.sm), c.sm, nv::qmd_major(c.qmd)});
  }
  return v;
}

const std::vector<NvTarget> kTargets = targets_all();

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
