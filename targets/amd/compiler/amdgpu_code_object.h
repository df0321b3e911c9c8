// AMDGPU code objects: linking the relocatable object LLVM's AMDGPU backend emits into an HSA code
// object (ELF64 ET_DYN, EM_AMDGPU), and reading each kernel's launch facts back out of it.
//
// Our code objects are laid out so that every loadable byte sits at a virtual address equal to its
// file offset: copying the file into GPU memory as it is *is* loading it (schema/capture.fbs,
// ProgramFormat.amdgpu_code_object). Segments: the ELF and program headers, the AMDHSA metadata
// note and read-only data (kernel descriptors) in one read-only PT_LOAD, the code in a second,
// page-aligned, executable PT_LOAD, and a PT_NOTE over the note.
// Sources: LLVM AMDGPUUsage ("ELF Code Object", "Relocation Records", "Kernel Descriptor",
// "Code Object V5 Metadata"), the System V gABI (ELF headers, program headers, notes).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "amd_target.h"

namespace capgraph {

// The launch facts of one kernel, as the capture's AmdKernel table carries them.
struct AmdKernelFacts {
  uint64_t descriptor_offset = 0;  // offset of `symbol.kd` in the code object (file = loaded image)
  uint32_t kernarg_size = 0, kernarg_align = 0;
  uint32_t group_segment_size = 0, private_segment_size = 0;
  uint32_t sgpr_count = 0, vgpr_count = 0;
  uint32_t rsrc1 = 0, rsrc2 = 0, rsrc3 = 0;
  uint16_t kernel_code_properties = 0;
  uint32_t wavefront_size = 0, workgroup_size = 0;
};

// Links one relocatable AMDGPU object (as LLVM emits it) into a code object. Only what our kernels
// need is supported; anything else (undefined symbols, writable data, relocations that would need
// the loader to patch code) is refused with an Error naming it.
std::vector<uint8_t> amdgpu_link(const std::vector<uint8_t> &relocatable);

// Reads and checks a code object: ELF64 ET_DYN for EM_AMDGPU, processor as `t`, no undefined
// symbols, and for every kernel in the AMDHSA metadata note its 64-byte descriptor, cross-checked
// field by field against the note (segment sizes, kernarg size, wavefront size, VGPR granules,
// code entry inside an executable segment, workgroup size t.workgroup_size). Returns the facts by
// kernel name (the entry symbol). Throws an Error naming the kernel and field on any mismatch.
std::map<std::string, AmdKernelFacts> amdgpu_code_object_read(
    const std::vector<uint8_t> &code_object, const AmdTarget &t);

}  // namespace capgraph
