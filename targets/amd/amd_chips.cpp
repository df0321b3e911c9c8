// The per-chip table. Sources:
//   gfx_target_version: Linux drivers/gpu/drm/amd/amdkfd/kfd_device.c (gfx_target_version per
//     IP version: 110000 for GC 11.0.0, 120000 / 120001 for GC 12.0.0 / 12.0.1, 90402 for 9.4.2
//     which is what gfx942 reports).
//   Cache bits: nvd.h PACKET3_ACQUIRE_MEM_GCR_CNTL_* and PACKET3_RELEASE_MEM_GCR_* (gfx10/11,
//     as gfx_v11_0_emit_mem_sync uses them); soc15d.h PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_* and
//     EOP_TC_*_ACTION_EN (gfx9); gfx12 RELEASE_MEM moved its GCR bits (GL2_WB 21, SEQ 22 kept).
//   SDMA version: the SDMA IP paired with each GC (sdma_v6_0 for GC 11, v7 for GC 12, v4.4 for
//     GC 9.4.x).
//   LDS: LLVM AMDGPUUsage "Memory Spaces" (LDS "up to 64KiB per work-group"); RDNA3 ISA guide
//     ch. 11 "Local Data Share".
//   Timestamps: tinygrad runtime/ops_amd.py (timestamps / 100 = microseconds on every AMD GPU).
//   Register offsets: amd_chips.h.
#include "amd_chips.h"

#include <cstring>

namespace capgraph::amd {
namespace {

// gfx10/11 ACQUIRE_MEM GCR_CNTL: GLI_INV(1) | GLM_WB | GLM_INV | GLK_WB | GLK_INV | GLV_INV |
// GL1_INV | GL2_INV | GL2_WB (bits 0, 4, 5, 6, 7, 8, 9, 14, 15).
constexpr uint32_t kGcrAcquireAll =
    0x1u | 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200 | 0x4000 | 0x8000;
// gfx10/11 RELEASE_MEM dword 1: GLM_WB(12) | GLM_INV(13) | GL2_WB(21) | SEQ(22), shifted down to
// the cache_ctl field (bit 12 = field bit 0).
constexpr uint32_t kGcrReleaseWb = (1u << 0) | (1u << 1) | (1u << 9) | (1u << 10);
// gfx12 RELEASE_MEM: GL2_WB(21) | SEQ(22) only (GLM bits are gone).
constexpr uint32_t kGcr12ReleaseWb = (1u << 9) | (1u << 10);
// gfx9 ACQUIRE_MEM CP_COHER_CNTL: SH_ICACHE(29) | SH_KCACHE(27) | TC(23) | TCL1(22) | TC_WB(18).
constexpr uint32_t kCoherGfx9 = (1u << 29) | (1u << 27) | (1u << 23) | (1u << 22) | (1u << 18);
// gfx9 RELEASE_MEM dword 1: EOP_TC_WB_ACTION_EN(15) | EOP_TC_ACTION_EN(17), field-relative.
constexpr uint32_t kEopGfx9 = (1u << 3) | (1u << 5);

// LDS one workgroup may allocate: 64 KiB on GFX9 (CDNA) through GFX12 (RDNA3 has 128 KiB per
// WGP, 64 KiB addressable by one workgroup).
constexpr uint32_t kLds64k = 64 * 1024;
// The GPU timestamp counter runs at the 100 MHz reference clock on RDNA and CDNA (tinygrad's
// ops_amd.py divides timestamps by 100 to get microseconds). Not measured here.
constexpr uint64_t kRefClock = 100000000;

constexpr chip kChips[] = {
    {"gfx1100", "RDNA3", 110000, 32, true, true, true, kGcrAcquireAll, kGcrReleaseWb, 6, kLds64k,
     kRefClock},
    {"gfx1200", "RDNA4", 120000, 32, true, true, true, kGcrAcquireAll, kGcr12ReleaseWb, 7, kLds64k,
     kRefClock},
    {"gfx1201", "RDNA4", 120001, 32, true, true, true, kGcrAcquireAll, kGcr12ReleaseWb, 7, kLds64k,
     kRefClock},
    {"gfx942", "CDNA3", 90402, 64, false, false, true, kCoherGfx9, kEopGfx9, 4, kLds64k, kRefClock},
};

}  // namespace

const char *register_name(uint32_t offset) {
  switch (offset) {
#define AMD_REG_NAME(name, value) \
  case value: return #name;
    AMD_COMPUTE_REGS(AMD_REG_NAME)
#undef AMD_REG_NAME
  }
  return nullptr;
}

const chip *chip_find(const char *name) {
  for (const chip &c : kChips)
    if (strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

const chip *chip_by_gfx_target_version(uint32_t version) {
  for (const chip &c : kChips)
    if (c.gfx_target_version == version) return &c;
  return nullptr;
}

const chip *chips_all(unsigned *count) {
  *count = unsigned(sizeof(kChips) / sizeof(kChips[0]));
  return kChips;
}

}  // namespace capgraph::amd
