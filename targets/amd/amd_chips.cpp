// The per-chip table. Sources:
//   gfx_target_version: Linux drivers/gpu/drm/amd/amdkfd/kfd_device.c (gfx_target_version per
//     IP version: 110000 for GC 11.0.0, 120000 / 120001 for GC 12.0.0 / 12.0.1, 90402 for 9.4.2
//     which is what gfx942 reports).
//   Cache bits: nvd.h PACKET3_ACQUIRE_MEM_GCR_CNTL_* and PACKET3_RELEASE_MEM_GCR_* (gfx10/11,
//     as gfx_v11_0_emit_mem_sync uses them); soc15d.h PACKET3_ACQUIRE_MEM_CP_COHER_CNTL_* and
//     EOP_TC_*_ACTION_EN (gfx9); gfx12 RELEASE_MEM moved its GCR bits (GL2_WB 21, SEQ 22 kept).
//   SDMA version: the SDMA IP paired with each GC (sdma_v6_0 for GC 11, v7 for GC 12, v4.4 for
//     GC 9.4.x).
#include "amd_chips.h"

#include <cstring>

namespace capgraph::amd {
namespace {

// gfx10/11 ACQUIRE_MEM GCR_CNTL: GLI_INV(1) | GLM_WB | GLM_INV | GLK_WB | GLK_INV | GLV_INV |
// GL1_INV | GL2_INV | GL2_WB (bits 0, 4, 5, 6, 7, 8, 9, 14, 15).
constexpr uint32_t k_gcr_acquire_all =
    0x1u | 0x10 | 0x20 | 0x40 | 0x80 | 0x100 | 0x200 | 0x4000 | 0x8000;
// gfx10/11 RELEASE_MEM dword 1: GLM_WB(12) | GLM_INV(13) | GL2_WB(21) | SEQ(22), shifted down to
// the cache_ctl field (bit 12 = field bit 0).
constexpr uint32_t k_gcr_release_wb = (1u << 0) | (1u << 1) | (1u << 9) | (1u << 10);
// gfx12 RELEASE_MEM: GL2_WB(21) | SEQ(22) only (GLM bits are gone).
constexpr uint32_t k_gcr12_release_wb = (1u << 9) | (1u << 10);
// gfx9 ACQUIRE_MEM CP_COHER_CNTL: SH_ICACHE(29) | SH_KCACHE(27) | TC(23) | TCL1(22) | TC_WB(18).
constexpr uint32_t k_coher_gfx9 = (1u << 29) | (1u << 27) | (1u << 23) | (1u << 22) | (1u << 18);
// gfx9 RELEASE_MEM dword 1: EOP_TC_WB_ACTION_EN(15) | EOP_TC_ACTION_EN(17), field-relative.
constexpr uint32_t k_eop_gfx9 = (1u << 3) | (1u << 5);

constexpr chip k_chips[] = {
    {"gfx1100", "RDNA3", 110000, 32, true, true, true, k_gcr_acquire_all, k_gcr_release_wb, 6},
    {"gfx1200", "RDNA4", 120000, 32, true, true, true, k_gcr_acquire_all, k_gcr12_release_wb, 7},
    {"gfx1201", "RDNA4", 120001, 32, true, true, true, k_gcr_acquire_all, k_gcr12_release_wb, 7},
    {"gfx942", "CDNA3", 90402, 64, false, false, true, k_coher_gfx9, k_eop_gfx9, 4},
};

struct reg_name {
  uint32_t offset;
  const char *name;
};
constexpr reg_name k_regs[] = {
    {reg::COMPUTE_DISPATCH_INITIATOR, "COMPUTE_DISPATCH_INITIATOR"},
    {reg::COMPUTE_START_X, "COMPUTE_START_X"},
    {reg::COMPUTE_START_X + 1, "COMPUTE_START_Y"},
    {reg::COMPUTE_START_X + 2, "COMPUTE_START_Z"},
    {reg::COMPUTE_NUM_THREAD_X, "COMPUTE_NUM_THREAD_X"},
    {reg::COMPUTE_NUM_THREAD_X + 1, "COMPUTE_NUM_THREAD_Y"},
    {reg::COMPUTE_NUM_THREAD_X + 2, "COMPUTE_NUM_THREAD_Z"},
    {reg::COMPUTE_PGM_LO, "COMPUTE_PGM_LO"},
    {reg::COMPUTE_PGM_HI, "COMPUTE_PGM_HI"},
    {reg::COMPUTE_PGM_RSRC1, "COMPUTE_PGM_RSRC1"},
    {reg::COMPUTE_PGM_RSRC2, "COMPUTE_PGM_RSRC2"},
    {reg::COMPUTE_RESOURCE_LIMITS, "COMPUTE_RESOURCE_LIMITS"},
    {reg::COMPUTE_STATIC_THREAD_MGMT_SE0, "COMPUTE_STATIC_THREAD_MGMT_SE0"},
    {reg::COMPUTE_STATIC_THREAD_MGMT_SE0 + 1, "COMPUTE_STATIC_THREAD_MGMT_SE1"},
    {reg::COMPUTE_TMPRING_SIZE, "COMPUTE_TMPRING_SIZE"},
    {reg::COMPUTE_STATIC_THREAD_MGMT_SE2, "COMPUTE_STATIC_THREAD_MGMT_SE2"},
    {reg::COMPUTE_STATIC_THREAD_MGMT_SE2 + 1, "COMPUTE_STATIC_THREAD_MGMT_SE3"},
    {reg::COMPUTE_RESTART_X, "COMPUTE_RESTART_X"},
    {reg::COMPUTE_RESTART_X + 1, "COMPUTE_RESTART_Y"},
    {reg::COMPUTE_RESTART_X + 2, "COMPUTE_RESTART_Z"},
    {reg::COMPUTE_PGM_RSRC3, "COMPUTE_PGM_RSRC3"},
};

}  // namespace

const char *register_name(uint32_t offset) {
  static const char *const user_data[reg::user_data_count] = {
      "COMPUTE_USER_DATA_0",  "COMPUTE_USER_DATA_1",  "COMPUTE_USER_DATA_2",
      "COMPUTE_USER_DATA_3",  "COMPUTE_USER_DATA_4",  "COMPUTE_USER_DATA_5",
      "COMPUTE_USER_DATA_6",  "COMPUTE_USER_DATA_7",  "COMPUTE_USER_DATA_8",
      "COMPUTE_USER_DATA_9",  "COMPUTE_USER_DATA_10", "COMPUTE_USER_DATA_11",
      "COMPUTE_USER_DATA_12", "COMPUTE_USER_DATA_13", "COMPUTE_USER_DATA_14",
      "COMPUTE_USER_DATA_15"};
  if (offset >= reg::COMPUTE_USER_DATA_0 &&
      offset < reg::COMPUTE_USER_DATA_0 + reg::user_data_count)
    return user_data[offset - reg::COMPUTE_USER_DATA_0];
  for (const reg_name &r : k_regs)
    if (r.offset == offset) return r.name;
  return nullptr;
}

const chip *chip_find(const char *name) {
  for (const chip &c : k_chips)
    if (strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

const chip *chip_by_gfx_target_version(uint32_t version) {
  for (const chip &c : k_chips)
    if (c.gfx_target_version == version) return &c;
  return nullptr;
}

const chip *chips_all(unsigned *count) {
  *count = unsigned(sizeof(k_chips) / sizeof(k_chips[0]));
  return k_chips;
}

}  // namespace capgraph::amd
