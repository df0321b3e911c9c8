// CPU targets: which LLVM triple, CPU and features a capture's code is compiled for, and the vector
// facts the schedule sizes its channel blocks and register tiles by.
#pragma once
#include <cstdint>
#include <string>

namespace capgraph {

struct CpuTarget {
  std::string name;      // capture target name: "cpu-x86_64" or "cpu-aarch64" (the architecture)
  std::string triple;    // LLVM target triple
  std::string cpu;       // LLVM CPU name
  std::string features;  // LLVM feature string, e.g. "+avx2,+fma"
  // Vector facts (derived from the features by cpu_target_facts):
  int f32_lanes = 4;          // f32 lanes of one vector register (4 SSE/NEON, 8 AVX2, 16 AVX-512)
  int vector_registers = 16;  // architectural vector registers (16 AVX2, 32 AVX-512 and NEON)
  int fma_units = 2;          // vector FMAs issued per cycle (sizes the accumulator chains)
  int64_t channel_block = 8;  // channels per block of a channel-blocked activation (NCHWc)
};

// "cpu" (this machine, with its vector features), "cpu-x86_64" (AVX2 + FMA, x86-64-v3: its
// captures run on any current x86-64), "cpu-x86_64-avx512" (x86-64-v4: AVX-512 F/BW/CD/DQ/VL),
// "cpu-aarch64" (Snapdragon 845 class: Cortex-A75, NEON). Fails naming the known targets
// otherwise.
CpuTarget cpu_target_named(const std::string &name);

// The names cpu_target_named knows, comma separated, for messages.
std::string cpu_target_names();

// Fills the vector facts of t from its triple and features.
void cpu_target_facts(CpuTarget &t);

// Registers a tile may hold of <block x float> vectors (a block wider than the register uses
// several): what the register tiles are sized for.
int cpu_target_block_registers(const CpuTarget &t, int64_t block);

}  // namespace capgraph
