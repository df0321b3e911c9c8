#include "codegen/cpu_target.h"

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>

#include "error.h"

namespace capgraph {

static bool has_feature(const std::string &features, const std::string &f) {
  const std::string item = "+" + f;
  for (size_t at = features.find(item); at != std::string::npos; at = features.find(item, at + 1)) {
    size_t end = at + item.size();
    if (end == features.size() || features[end] == ',') return true;
  }
  return false;
}

// Sources: Intel 64 and IA-32 Architectures Optimization Reference Manual (AVX-512 chapter: 32
// ZMM registers of 16 floats; two FMA ports on server cores, p0 and p5), Intel SDM vol. 1 ch. 15;
// Arm Architecture Reference Manual A64 (32 SIMD registers V0-V31 of 128 bits); Cortex-A75
// Software Optimization Guide (two ASIMD FP pipes, F0 and F1).
void cpu_target_facts(CpuTarget &t) {
  llvm::Triple triple(t.triple);
  if (triple.getArch() == llvm::Triple::aarch64) {
    // 4 lanes per register; blocks of 8 channels are two registers (as before: one block per
    // tile column keeps the weights' stream and the tile loops the same as on x86).
    t.f32_lanes = 4, t.vector_registers = 32, t.fma_units = 2, t.channel_block = 8;
  } else if (has_feature(t.features, "avx512f")) {
    t.f32_lanes = 16, t.vector_registers = 32, t.fma_units = 2, t.channel_block = 16;
  } else if (has_feature(t.features, "avx2") || has_feature(t.features, "avx")) {
    t.f32_lanes = 8, t.vector_registers = 16, t.fma_units = 2, t.channel_block = 8;
  } else {
    t.f32_lanes = 4, t.vector_registers = 16, t.fma_units = 1, t.channel_block = 8;
  }
}

int cpu_target_block_registers(const CpuTarget &t, int64_t block) {
  int64_t per_block = std::max<int64_t>(1, block / t.f32_lanes);
  return (int)(t.vector_registers / per_block);
}

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

static CpuTarget target_known(const std::string &name) {
  if (name.empty() || name == "cpu") return host_target();
  if (name == "cpu-x86_64")
    return {"cpu-x86_64", "x86_64-unknown-linux-gnu", "x86-64-v3",
            "+avx,+avx2,+fma,+f16c,+sse4.1,+sse4.2,+popcnt"};
  if (name == "cpu-x86_64-avx512")
    return {"cpu-x86_64", "x86_64-unknown-linux-gnu", "x86-64-v4",
            "+avx,+avx2,+fma,+f16c,+sse4.1,+sse4.2,+popcnt,+avx512f,+avx512bw,+avx512cd,+avx512dq,+"
            "avx512vl,+evex512"};
  if (name == "cpu-aarch64") {
    // This machine if it is one (its own features), else the Cortex-A75 baseline.
    CpuTarget host = host_target();
    if (host.name == "cpu-aarch64") return host;
    return {"cpu-aarch64", "aarch64-unknown-linux-gnu", "cortex-a75", "+neon,+fp-armv8"};
  }
  // A name the target table gave the CPU ("cpu-..."), or CAPGRAPH_TWIN_TARGET's: the CPU's names
  // are the ones to list (target_find lists every target's).
  throw Error("unknown CPU target '" + name + "': known CPU targets are " + cpu_target_names());
}

std::string cpu_target_names() {
  return "cpu (this machine), cpu-x86_64, cpu-x86_64-avx512, cpu-aarch64";
}

CpuTarget cpu_target_named(const std::string &name) {
  CpuTarget t = target_known(name);
  cpu_target_facts(t);
  return t;
}

}  // namespace capgraph
