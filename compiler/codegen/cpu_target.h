// CPU targets: which LLVM triple, CPU and features a capture's code is compiled for.
#pragma once
#include <string>

namespace capgraph {

struct CpuTarget {
  std::string name;      // capture target name: "cpu-x86_64" or "cpu-aarch64"
  std::string triple;    // LLVM target triple
  std::string cpu;       // LLVM CPU name
  std::string features;  // LLVM feature string, e.g. "+avx2,+fma"
};

// "cpu" (this machine, with its vector features), "cpu-x86_64" (this machine if it is one, else a
// baseline x86-64-v3), "cpu-aarch64" (Snapdragon 845 class: Cortex-A75, NEON). Fails naming the
// known targets otherwise.
CpuTarget cpu_target_named(const std::string &name);

}  // namespace capgraph
