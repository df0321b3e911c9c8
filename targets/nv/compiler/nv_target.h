// NVIDIA GPU targets: which SM a capture's cubins are assembled for, and the few per-architecture
// facts the compiler needs to lay out and check its kernels. Everything else about a kernel
// (where its parameters sit in constant bank 0, registers, memory) is read from the cubin
// ptxas makes (nv_cubin.h), never assumed per architecture.
#pragma once
#include <cstdint>
#include <string>

namespace capgraph {

struct NvTarget {
  std::string name;  // capture target name, e.g. "nv-sm90"
  std::string cpu;   // LLVM NVPTX processor and ptxas -arch, e.g. "sm_90"
  uint32_t sm = 0;   // 90: the SM version the cubin's ELF header must carry
  // Launch descriptor version the runtime will write: the chip's (nv_chips.h), as its
  // QMD_MAJOR_VERSION (3 on Ampere/Ada, 4 on Hopper).
  uint32_t qmd_version = 0;
  uint32_t block_size = 256;  // threads per block of every kernel (1-D, .reqntid in the PTX)
  // Static shared memory one block may declare (larger needs the dynamic opt-in), and registers
  // per thread. Sources: CUDA C++ Programming Guide, "Technical Specifications per Compute
  // Capability" (48 KB static shared memory per block, 255 32-bit registers per thread).
  uint32_t shared_bytes = 48 * 1024;
  uint32_t registers = 255;
};

// True if `name` names an NVIDIA target ("nv-..."), known or not.
bool nv_target_is_nv(const std::string &name);
// "nv-sm86" (Ampere GA10x), "nv-sm89" (Ada AD10x), "nv-sm90" (Hopper GH100). Fails naming every
// known target otherwise.
NvTarget nv_target_named(const std::string &name);
// The known NVIDIA target names, comma separated, for messages.
std::string nv_target_names();

}  // namespace capgraph
