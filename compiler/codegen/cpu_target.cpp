#include "codegen/cpu_target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "codegen/amd_target.h"
#include "error.h"

namespace capgraph {

static CpuTarget host_target() {
  llvm::Triple triple(llvm::sys::getProcessTriple());
  CpuTarget t;
  t.triple = triple.str();
  t.cpu = llvm::sys::getHostCPUName().str();
  std::string features;
  for (const auto &f : llvm::sys::getHostCPUFeatures())
    if (f.second) features += (features.empty() ? "+" : ",+") + f.first().str();
  t.features = features;
  t.name = triple.getArch() == llvm::Triple::aarch64 ? "cpu-aarch64" : "cpu-x86_64";
  return t;
}

CpuTarget cpu_target_named(const std::string &name) {
  CpuTarget host = host_target();
  if (name.empty() || name == "cpu" || name == host.name) return host;
  if (name == "cpu-x86_64") return {"cpu-x86_64", "x86_64-unknown-linux-gnu", "x86-64-v3", "+avx,+avx2,+fma,+f16c,+sse4.1,+sse4.2,+popcnt"};
  if (name == "cpu-aarch64") return {"cpu-aarch64", "aarch64-unknown-linux-gnu", "cortex-a75", "+neon,+fp-armv8"};
  throw Error("unknown target '" + name + "': known targets are cpu (this machine), cpu-x86_64, cpu-aarch64, " + amd_target_names());
}

}  // namespace capgraph
