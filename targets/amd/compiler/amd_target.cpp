#include "amd_target.h"

#include <vector>

#include "amd_chips.h"
#include "error.h"

namespace capgraph {

namespace {

// The chips are the runtime's list (targets/amd/amd_chips.cpp): one list, so the compiler cannot
// target a chip the runtime does not know. LLVM processor = the chip name; the code object ABI is
// HSA's; wave32 where the chip runs it natively (RDNA), wave64 otherwise (CDNA).
// Sources: LLVM AMDGPUUsage "Processors" table and `llc-19 -march=amdgcn -mcpu=help`, which lists
// gfx1100, gfx1200, gfx1201 and gfx942.
std::vector<AmdTarget> targets_all() {
  unsigned n = 0;
  const amd::chip *chips = amd::chips_all(&n);
  std::vector<AmdTarget> v;
  for (unsigned i = 0; i < n; ++i) {
    const amd::chip &c = chips[i];
    const bool w32 = c.wave_size == 32;
    v.push_back({std::string("amd-") + c.name, "amdgcn-amd-amdhsa", c.name,
                 w32 ? "+wavefrontsize32" : "+wavefrontsize64", c.wave_size, 8, 256, c.lds_bytes});
  }
  return v;
}

const std::vector<AmdTarget> kTargets = targets_all();

}  // namespace

bool amd_target_is_amd(const std::string &name) { return name.rfind("amd-", 0) == 0; }

std::string amd_target_names() {
  std::string s;
  for (const AmdTarget &t : kTargets) s += (s.empty() ? "" : ", ") + t.name;
  return s;
}

AmdTarget amd_target_named(const std::string &name) {
  for (const AmdTarget &t : kTargets)
    if (t.name == name) return t;
  throw Error("unknown AMD target '" + name + "': known AMD targets are " + amd_target_names());
}

}  // namespace capgraph
