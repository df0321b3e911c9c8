// The AMD target of the HCQ core (runtime/hcq/target.h): the verbs as PM4 (compute queues) and
// SDMA (copy queues) packets (amd_packets.h), the checks and resolution of a capture's AmdKernel
// facts into a dispatch, and the registration of "amd" (the KFD transport, drivers/kfd).
#pragma once
#include <memory>
#include <string>

#include "amd_chips.h"
#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "hcq/encoder.h"
#include "hcq/target.h"

namespace capgraph::hcq {

// The AMD hooks (capture_verify and graph::build take them; fakes register them with their
// transport).
extern const target amd_target;

// What an AMD dispatch carries in dispatch::facts.
struct amd_dispatch {
  uint64_t code = 0;          // GPU address of the kernel's first instruction (256-aligned)
  uint32_t kernarg_sgpr = 0;  // first user SGPR of the kernarg pointer
  uint32_t rsrc1 = 0, rsrc2 = 0, rsrc3 = 0;
  bool wave32 = false;
};

std::unique_ptr<encoder> amd_compute_encoder(const amd::chip &chip, std::vector<uint32_t> *out);
std::unique_ptr<encoder> amd_copy_encoder(const amd::chip &chip, std::vector<uint32_t> *out);

// The chip a capture's Target.name ("amd-gfx1100") names, or nullptr.
const amd::chip *amd_capture_chip(const char *target_name);

// The kernel descriptor, described once: the layout of the fields capgraph reads (Sources: LLVM
// AMDGPUUsage "Kernel Descriptor" table; targets/amd/compiler/amdgpu_code_object.cpp checks these
// offsets against LLVM's AMDHSAKernelDescriptor.h at compile time), its decoder, and the
// kernel_code_properties bits: the user-SGPR enables in order: private segment buffer (4 SGPRs),
// dispatch ptr (2), queue ptr (2), kernarg segment ptr (2), dispatch id (2), flat scratch init
// (2), private segment size (1); bit 10 = wavefront size 32.
constexpr uint32_t kd_size = 64;
constexpr uint32_t kd_code_entry_offset = 16;  // int64, relative to the descriptor
constexpr uint32_t kd_rsrc3 = 44, kd_rsrc1 = 48, kd_rsrc2 = 52;  // COMPUTE_PGM_RSRC3/1/2
constexpr uint32_t kd_kernel_code_properties = 56;               // uint16
struct kernel_descriptor {
  int64_t code_entry_offset;
  uint32_t rsrc1, rsrc2, rsrc3;
  uint16_t kernel_code_properties;
};
// Reads the kd_size bytes at `kd` (little-endian).
kernel_descriptor kernel_descriptor_decode(const uint8_t *kd);
constexpr uint16_t kcp_private_segment_buffer = 1u << 0, kcp_dispatch_ptr = 1u << 1,
                   kcp_queue_ptr = 1u << 2, kcp_kernarg_segment_ptr = 1u << 3,
                   kcp_dispatch_id = 1u << 4, kcp_flat_scratch_init = 1u << 5,
                   kcp_private_segment_size = 1u << 6, kcp_wavefront_size32 = 1u << 10;
// COMPUTE_PGM_RSRC2 as a PM4 dispatch must write it: the descriptor's word with LDS_SIZE (bits
// 23:15, in 128-dword blocks on GFX7 and later) set from the kernel's group segment size. Under
// HSA the packet processor takes LDS from the AQL packet; written directly, the register is the
// allocation. false: more LDS than the chip gives one workgroup (chip.lds_bytes). Sources: LLVM
// AMDGPUUsage "compute_pgm_rsrc2 for GFX6-GFX12" (LDS_SIZE: "GFX7-GFX11: granularity 128 dwords");
// tinygrad ops_amd.py sets the field the same way for its PM4 dispatches.
bool amd_rsrc2_with_lds(const amd::chip &chip, uint32_t rsrc2, uint32_t group_segment_size,
                        uint32_t *out);
// The user SGPR where the kernarg pointer lands for these properties.
uint32_t amd_kernarg_sgpr(uint16_t kernel_code_properties);

// Resolves kernel `k` (in a verified capture) against its program's code object at
// program_gpu: the code address, registers and wave size, checking the descriptor in the code
// object agrees with AmdKernel and the chip runs its wave size. kernargs and groups are filled per
// launch by the caller.
capgraph_status amd_kernel_resolve(const fb::Capture *c, uint32_t kernel, uint64_t program_gpu,
                                   dispatch *out, std::string *err);

}  // namespace capgraph::hcq
