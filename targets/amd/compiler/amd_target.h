// AMD GPU targets: which LLVM AMDGPU processor a capture's code objects are compiled for, and the
// few per-chip facts the compiler needs to lay out and check its kernels.
#pragma once
#include <string>

namespace capgraph {

struct AmdTarget {
  std::string name;              // capture target name, e.g. "amd-gfx1100"
  std::string triple;            // "amdgcn-amd-amdhsa": the HSA code object ABI
  std::string cpu;               // LLVM processor, e.g. "gfx1100"
  std::string features;          // LLVM feature string, e.g. "+wavefrontsize32"
  unsigned wavefront_size = 32;  // the chip's native wave size (amd_chips.h)
  // Work-items per VGPR block in COMPUTE_PGM_RSRC1.GRANULATED_WORKITEM_VGPR_COUNT, used to
  // cross-check the descriptor against the metadata's .vgpr_count.
  // Source: LLVM AMDGPUUsage, "compute_pgm_rsrc1 for GFX6-GFX12": GFX90A/GFX942 granule 8;
  // GFX10-GFX12 granule 8 in wave32 and 4 in wave64.
  unsigned vgpr_granule = 8;
  unsigned workgroup_size = 256;  // work-items per workgroup of every kernel (1-D)
  unsigned lds_bytes = 0;         // LDS one workgroup may allocate: the chip's (amd_chips.h)
  // VGPRs one work item may use: 256 (wave32 on GFX11/12 and wave64 on GFX9 without AGPRs).
  // Source: LLVM AMDGPUUsage "compute_pgm_rsrc1" (GRANULATED_WORKITEM_VGPR_COUNT range).
  unsigned vgprs = 256;
};

// True if `name` names an AMD target ("amd-..."), known or not.
bool amd_target_is_amd(const std::string &name);
// "amd-gfx1100" (RDNA3), "amd-gfx1200", "amd-gfx1201" (RDNA4), "amd-gfx942" (CDNA3). Fails naming
// every known target otherwise.
AmdTarget amd_target_named(const std::string &name);
// The known AMD target names, comma separated, for messages.
std::string amd_target_names();

}  // namespace capgraph
