#include "codegen/amd_target.h"

#include "error.h"

namespace capgraph {

namespace {

// Sources: LLVM AMDGPUUsage "Processors" table (gfx1100 RDNA3, gfx1200/gfx1201 RDNA4, gfx942
// CDNA3; wave32 is the native size of GFX10+ RDNA, CDNA runs wave64 only) and
// `llc-19 -march=amdgcn -mcpu=help`, which lists all four.
const AmdTarget kTargets[] = {
    {"amd-gfx1100", "amdgcn-amd-amdhsa", "gfx1100", "+wavefrontsize32", 32, 8, 256},
    {"amd-gfx1200", "amdgcn-amd-amdhsa", "gfx1200", "+wavefrontsize32", 32, 8, 256},
    {"amd-gfx1201", "amdgcn-amd-amdhsa", "gfx1201", "+wavefrontsize32", 32, 8, 256},
    {"amd-gfx942", "amdgcn-amd-amdhsa", "gfx942", "+wavefrontsize64", 64, 8, 256},
};

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
  throw Error("unknown target '" + name + "': known targets are cpu (this machine), cpu-x86_64, cpu-x86_64-avx512, cpu-aarch64, " + amd_target_names());
}

}  // namespace capgraph
