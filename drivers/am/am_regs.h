// am_regs — the gfx1100 registers the AM boot touches, as one table shared
// by the driver and the fake GPU (targets/amd/fake/gfx1100): name (vendor spelling),
// IP block, register segment and dword offset inside it. The absolute dword
// address is the block's segment base from the IP discovery table plus the
// offset (Linux soc15_common.h SOC15_REG_OFFSET). A separate fact test
// (am_regs_test) pins a dozen of them to the numbers in the Linux headers,
// because a wrong shared offset would otherwise pass both sides.
//
// Sources (offsets and segments, Linux drivers/gpu/drm/amd/include/asic_reg/,
// MIT; the same numbers are in tinygrad's autogen am/regs.py):
//   GC    gc/gc_11_0_0_offset.h       (SDMA0 registers live in GC on gfx11)
//   MMHUB mmhub/mmhub_3_0_0_offset.h
//   MP0   mp/mp_13_0_0_offset.h       (PSP mailbox C2PMSG_n = 0x40 + n)
//   MP1   mp/mp_11_0_offset.h         (SMU mailbox C2PMSG_n = 0x240 + n; tinygrad
//                                      uses mp_11_0 for MP1 on every chip)
//   OSSSYS oss/osssys_6_0_0_offset.h
//   NBIO  nbio/nbio_4_3_0_offset.h    (RCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE is
//                                      seg 2 0xc3 = absolute 0xde3 with Navi's
//                                      seg 2 base 0xd20, tinygrad amdev.py
//                                      reads dword 0xde3)
// Fields used (bit positions from the matching *_sh_mask.h) are next to
// their users in am_device.cpp and the fake. The hub L2/TLB, AGP, default
// page, SH_MEM, RLC and HDP-remap rows were checked against tinygrad's
// generated tables (tinygrad/runtime/autogen/am/regs.py: gc_11_0_0,
// mmhub_3_0_0, nbio_4_3_0), which carry the same Linux offsets and fields.
#pragma once

#include <cstdint>

#include "am_discovery.h"

namespace capgraph::am {

// X(name, hw_id, segment, offset)
#define AM_GFX1100_REGS(X)                                                 \
  X(regMP0_SMN_C2PMSG_35, hw_id_mp0, 0, 0x0063)                            \
  X(regMP0_SMN_C2PMSG_36, hw_id_mp0, 0, 0x0064)                            \
  X(regMP0_SMN_C2PMSG_64, hw_id_mp0, 0, 0x0080)                            \
  X(regMP0_SMN_C2PMSG_67, hw_id_mp0, 0, 0x0083)                            \
  X(regMP0_SMN_C2PMSG_69, hw_id_mp0, 0, 0x0085)                            \
  X(regMP0_SMN_C2PMSG_70, hw_id_mp0, 0, 0x0086)                            \
  X(regMP0_SMN_C2PMSG_71, hw_id_mp0, 0, 0x0087)                            \
  X(regMP0_SMN_C2PMSG_81, hw_id_mp0, 0, 0x0091)                            \
  X(regMP1_SMN_C2PMSG_53, hw_id_mp1, 0, 0x0275)                            \
  X(regMP1_SMN_C2PMSG_54, hw_id_mp1, 0, 0x0276)                            \
  X(regMP1_SMN_C2PMSG_66, hw_id_mp1, 0, 0x0282)                            \
  X(regMP1_SMN_C2PMSG_75, hw_id_mp1, 0, 0x028b)                            \
  X(regMP1_SMN_C2PMSG_82, hw_id_mp1, 0, 0x0292)                            \
  X(regMP1_SMN_C2PMSG_90, hw_id_mp1, 0, 0x029a)                            \
  X(regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE, hw_id_nbif, 2, 0x00c3)            \
  X(regRCC_DEV0_EPF0_RCC_DOORBELL_APER_EN, hw_id_nbif, 2, 0x00c0)          \
  X(regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL, hw_id_nbif, 2, 0x012d)            \
  X(regMMMC_VM_FB_LOCATION_BASE, hw_id_mmhub, 0, 0x08ec)                   \
  X(regMMMC_VM_FB_LOCATION_TOP, hw_id_mmhub, 0, 0x08ed)                    \
  X(regMMMC_VM_SYSTEM_APERTURE_LOW_ADDR, hw_id_mmhub, 0, 0x08f1)           \
  X(regMMMC_VM_SYSTEM_APERTURE_HIGH_ADDR, hw_id_mmhub, 0, 0x08f2)          \
  X(regMMVM_CONTEXT0_CNTL, hw_id_mmhub, 0, 0x0740)                         \
  X(regMMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32, hw_id_mmhub, 0, 0x07ab)    \
  X(regMMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32, hw_id_mmhub, 0, 0x07ac)    \
  X(regMMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32, hw_id_mmhub, 0, 0x07cb)   \
  X(regMMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32, hw_id_mmhub, 0, 0x07cc)   \
  X(regMMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32, hw_id_mmhub, 0, 0x07eb)     \
  X(regMMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32, hw_id_mmhub, 0, 0x07ec)     \
  X(regMMVM_INVALIDATE_ENG17_SEM, hw_id_mmhub, 0, 0x0762)                  \
  X(regMMVM_INVALIDATE_ENG17_REQ, hw_id_mmhub, 0, 0x0774)                  \
  X(regMMVM_INVALIDATE_ENG17_ACK, hw_id_mmhub, 0, 0x0786)                  \
  X(regMMVM_L2_PROTECTION_FAULT_STATUS, hw_id_mmhub, 0, 0x070c)            \
  X(regMMVM_L2_PROTECTION_FAULT_ADDR_LO32, hw_id_mmhub, 0, 0x070d)         \
  X(regMMVM_L2_PROTECTION_FAULT_ADDR_HI32, hw_id_mmhub, 0, 0x070e)         \
  X(regMMVM_L2_CNTL, hw_id_mmhub, 0, 0x0700)                               \
  X(regMMVM_L2_CNTL2, hw_id_mmhub, 0, 0x0701)                              \
  X(regMMVM_L2_CNTL3, hw_id_mmhub, 0, 0x0702)                              \
  X(regMMVM_L2_CNTL4, hw_id_mmhub, 0, 0x0718)                              \
  X(regMMVM_L2_CNTL5, hw_id_mmhub, 0, 0x071e)                              \
  X(regMMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32, hw_id_mmhub, 0, 0x070f) \
  X(regMMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32, hw_id_mmhub, 0, 0x0710) \
  X(regMMVM_L2_BANK_SELECT_RESERVED_CID2, hw_id_mmhub, 0, 0x071b)          \
  X(regMMMC_VM_AGP_TOP, hw_id_mmhub, 0, 0x08ee)                            \
  X(regMMMC_VM_AGP_BOT, hw_id_mmhub, 0, 0x08ef)                            \
  X(regMMMC_VM_AGP_BASE, hw_id_mmhub, 0, 0x08f0)                           \
  X(regMMMC_VM_MX_L1_TLB_CNTL, hw_id_mmhub, 0, 0x08f3)                     \
  X(regMMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB, hw_id_mmhub, 0, 0x08d8)   \
  X(regMMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB, hw_id_mmhub, 0, 0x08d9)   \
  X(regGCMC_VM_FB_LOCATION_BASE, hw_id_gc, 0, 0x1678)                      \
  X(regGCMC_VM_FB_LOCATION_TOP, hw_id_gc, 0, 0x1679)                       \
  X(regGCMC_VM_SYSTEM_APERTURE_LOW_ADDR, hw_id_gc, 0, 0x167d)              \
  X(regGCMC_VM_SYSTEM_APERTURE_HIGH_ADDR, hw_id_gc, 0, 0x167e)             \
  X(regGCVM_CONTEXT0_CNTL, hw_id_gc, 0, 0x1688)                            \
  X(regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32, hw_id_gc, 0, 0x16f3)       \
  X(regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32, hw_id_gc, 0, 0x16f4)       \
  X(regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32, hw_id_gc, 0, 0x1713)      \
  X(regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32, hw_id_gc, 0, 0x1714)      \
  X(regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32, hw_id_gc, 0, 0x1733)        \
  X(regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32, hw_id_gc, 0, 0x1734)        \
  X(regGCVM_INVALIDATE_ENG17_SEM, hw_id_gc, 0, 0x16aa)                     \
  X(regGCVM_INVALIDATE_ENG17_REQ, hw_id_gc, 0, 0x16bc)                     \
  X(regGCVM_INVALIDATE_ENG17_ACK, hw_id_gc, 0, 0x16ce)                     \
  X(regGCVM_L2_PROTECTION_FAULT_STATUS, hw_id_gc, 0, 0x15c8)               \
  X(regGCVM_L2_PROTECTION_FAULT_ADDR_LO32, hw_id_gc, 0, 0x15c9)            \
  X(regGCVM_L2_PROTECTION_FAULT_ADDR_HI32, hw_id_gc, 0, 0x15ca)            \
  X(regGCVM_L2_CNTL, hw_id_gc, 0, 0x15bc)                                  \
  X(regGCVM_L2_CNTL2, hw_id_gc, 0, 0x15bd)                                 \
  X(regGCVM_L2_CNTL3, hw_id_gc, 0, 0x15be)                                 \
  X(regGCVM_L2_CNTL4, hw_id_gc, 0, 0x15d4)                                 \
  X(regGCVM_L2_CNTL5, hw_id_gc, 0, 0x15da)                                 \
  X(regGCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32, hw_id_gc, 0, 0x15cb)    \
  X(regGCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32, hw_id_gc, 0, 0x15cc)    \
  X(regGCMC_VM_AGP_TOP, hw_id_gc, 0, 0x167a)                               \
  X(regGCMC_VM_AGP_BOT, hw_id_gc, 0, 0x167b)                               \
  X(regGCMC_VM_AGP_BASE, hw_id_gc, 0, 0x167c)                              \
  X(regGCMC_VM_MX_L1_TLB_CNTL, hw_id_gc, 0, 0x167f)                        \
  X(regGCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB, hw_id_gc, 0, 0x15a8)      \
  X(regGCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB, hw_id_gc, 0, 0x15a9)      \
  X(regGRBM_CNTL, hw_id_gc, 0, 0x0da0)                                     \
  X(regSH_MEM_BASES, hw_id_gc, 1, 0x09e3)                                  \
  X(regSH_MEM_CONFIG, hw_id_gc, 1, 0x09e4)                                 \
  X(regRLC_SAFE_MODE, hw_id_gc, 1, 0x0980)                                 \
  X(regRLC_SPM_MC_CNTL, hw_id_gc, 1, 0x0982)                               \
  X(regRLC_CNTL, hw_id_gc, 1, 0x4c00)                                      \
  X(regRLC_CGCG_CGLS_CTRL, hw_id_gc, 1, 0x4c49)                            \
  X(regRLC_SRM_CNTL, hw_id_gc, 1, 0x4c80)                                  \
  X(regTCP_CNTL, hw_id_gc, 1, 0x19a2)                                      \
  X(regIH_RB_CNTL, hw_id_osssys, 0, 0x0080)                                \
  X(regIH_RB_BASE, hw_id_osssys, 0, 0x0081)                                \
  X(regIH_RB_BASE_HI, hw_id_osssys, 0, 0x0082)                             \
  X(regIH_RB_RPTR, hw_id_osssys, 0, 0x0083)                                \
  X(regIH_RB_WPTR, hw_id_osssys, 0, 0x0084)                                \
  X(regIH_RB_WPTR_ADDR_HI, hw_id_osssys, 0, 0x0085)                        \
  X(regIH_RB_WPTR_ADDR_LO, hw_id_osssys, 0, 0x0086)                        \
  X(regGRBM_SOFT_RESET, hw_id_gc, 0, 0x0da8)                               \
  X(regCP_STAT, hw_id_gc, 0, 0x0f40)                                       \
  X(regGRBM_GFX_CNTL, hw_id_gc, 1, 0x0900)                                 \
  X(regRLC_RLCS_BOOTLOAD_STATUS, hw_id_gc, 1, 0x4e82)                      \
  X(regSCRATCH_REG6, hw_id_gc, 1, 0x2046)                                  \
  X(regSCRATCH_REG7, hw_id_gc, 1, 0x2047)                                  \
  X(regCP_MEC_RS64_PRGRM_CNTR_START, hw_id_gc, 1, 0x2900)                  \
  X(regCP_MEC_RS64_CNTL, hw_id_gc, 1, 0x2904)                              \
  X(regCP_MEC_RS64_PRGRM_CNTR_START_HI, hw_id_gc, 1, 0x2938)               \
  X(regCP_MEC_DOORBELL_RANGE_LOWER, hw_id_gc, 0, 0x1dfc)                   \
  X(regCP_MEC_DOORBELL_RANGE_UPPER, hw_id_gc, 0, 0x1dfd)                   \
  X(regSPI_COMPUTE_QUEUE_RESET, hw_id_gc, 0, 0x1f73)                       \
  X(regCP_MQD_BASE_ADDR, hw_id_gc, 0, 0x1fa9)                              \
  X(regCP_HQD_ACTIVE, hw_id_gc, 0, 0x1fab)                                 \
  X(regCP_HQD_PQ_BASE, hw_id_gc, 0, 0x1fb1)                                \
  X(regCP_HQD_PQ_RPTR, hw_id_gc, 0, 0x1fb3)                                \
  X(regCP_HQD_PQ_DOORBELL_CONTROL, hw_id_gc, 0, 0x1fb8)                    \
  X(regCP_HQD_PQ_CONTROL, hw_id_gc, 0, 0x1fba)                             \
  X(regCP_HQD_DEQUEUE_REQUEST, hw_id_gc, 0, 0x1fc1)                        \
  X(regCP_HQD_EOP_BASE_ADDR, hw_id_gc, 0, 0x1fce)                          \
  X(regCP_HQD_PQ_WPTR_LO, hw_id_gc, 0, 0x1fdf)                             \
  X(regCP_HQD_PQ_WPTR_HI, hw_id_gc, 0, 0x1fe0)                             \
  X(regSDMA0_QUEUE0_RB_CNTL, hw_id_gc, 0, 0x0080)                          \
  X(regSDMA0_QUEUE0_RB_BASE, hw_id_gc, 0, 0x0081)                          \
  X(regSDMA0_QUEUE0_RB_BASE_HI, hw_id_gc, 0, 0x0082)                       \
  X(regSDMA0_QUEUE0_RB_RPTR, hw_id_gc, 0, 0x0083)                          \
  X(regSDMA0_QUEUE0_RB_WPTR, hw_id_gc, 0, 0x0085)                          \
  X(regSDMA0_QUEUE0_RB_RPTR_ADDR_HI, hw_id_gc, 0, 0x0088)                  \
  X(regSDMA0_QUEUE0_RB_RPTR_ADDR_LO, hw_id_gc, 0, 0x0089)                  \
  X(regSDMA0_QUEUE0_IB_CNTL, hw_id_gc, 0, 0x008a)                          \
  X(regSDMA0_QUEUE0_DOORBELL, hw_id_gc, 0, 0x0092)                         \
  X(regSDMA0_QUEUE0_DOORBELL_OFFSET, hw_id_gc, 0, 0x00ab)                  \
  X(regSDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI, hw_id_gc, 0, 0x00b2)             \
  X(regSDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO, hw_id_gc, 0, 0x00b3)             \
  X(regSDMA0_QUEUE0_MINOR_PTR_UPDATE, hw_id_gc, 0, 0x00b5)                 \
  X(regSDMA0_F32_CNTL, hw_id_gc, 1, 0x589a)

enum reg : int {
#define AM_REG_ENUM(name, hw, seg, off) name,
  AM_GFX1100_REGS(AM_REG_ENUM)
#undef AM_REG_ENUM
      reg_count
};

struct reg_def {
  const char *name;
  uint16_t hw_id;
  uint8_t segment;
  uint32_t offset;
};

const reg_def &reg_info(reg r);

// The compute queue's HQD registers are one contiguous run, CP_MQD_BASE_ADDR
// (0x1fa9) .. CP_HQD_PQ_WPTR_HI (0x1fe0), fed from the v11 compute MQD's
// dwords 0x80.. (Linux v11_structs.h struct v11_compute_mqd: cp_mqd_base_addr_lo
// is dword 128; gfx_v11_0_kiq_init_register writes the same run).
constexpr uint32_t kHqdRegFirst = 0x1fa9, kHqdRegLast = 0x1fe0;
constexpr uint32_t kHqdRegCount = kHqdRegLast - kHqdRegFirst + 1;  // 56
constexpr uint32_t kMqdHqdFirstDword = 0x80;
constexpr uint32_t kMqdBytes = 2048;

// The HDP flush register is remapped into a hole at the top of BAR5: Linux
// soc21.c sets rmmio_remap.reg_offset = MMIO_REG_HOLE_OFFSET (0x80000 - 4 KiB)
// and nbio_v4_3_remap_hdp_registers writes that byte address
// (+ KFD_MMIO_REMAP_HDP_MEM_FLUSH_CNTL = 0) into BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL;
// a write of 0 there flushes HDP (hdp_v6_0_flush_hdp; tinygrad
// AM_GMC.flush_hdp writes through the same remap).
constexpr uint32_t kMmioRemapHdpMemFlush = 0x80000 - 0x1000;

// Absolute dword addresses of every register, from a chip's discovery table.
struct reg_map {
  uint32_t addr[reg_count] = {};
  uint32_t operator[](reg r) const { return addr[r]; }
};

// False with a message naming the register and the block when a block or
// segment the table needs is missing from the discovery table.
bool reg_map_build(const discovery_table &t, reg_map *out, std::string *err);

// The register at an absolute dword address, or reg_count.
reg reg_find(const reg_map &m, uint32_t addr);

}  // namespace capgraph::am
