// Per-chip facts as data: what differs between the AMD GPUs capgraph targets. The encoder asks
// these flags; it never tests a chip name.
#pragma once
#include <cstdint>

namespace capgraph::amd {

// Compute registers, as absolute dword offsets (SET_SH_REG takes them minus sh_reg_base): one
// list, which makes both the constants (reg::COMPUTE_PGM_LO) and the names of register_name().
// The same on gfx9 through gfx12. Sources: Mesa src/amd/common/sid.h (R_00B8xx byte offsets / 4),
// Linux gc_11_0_0_offset.h (regCOMPUTE_* + GC base 0x1260).
#define AMD_COMPUTE_REGS(R)                                 \
  R(COMPUTE_DISPATCH_INITIATOR, 0x2e00)                     \
  R(COMPUTE_START_X, 0x2e04)                                \
  R(COMPUTE_START_Y, 0x2e05)                                \
  R(COMPUTE_START_Z, 0x2e06)                                \
  R(COMPUTE_NUM_THREAD_X, 0x2e07)                           \
  R(COMPUTE_NUM_THREAD_Y, 0x2e08)                           \
  R(COMPUTE_NUM_THREAD_Z, 0x2e09)                           \
  R(COMPUTE_PGM_LO, 0x2e0c) /* code address >> 8 */         \
  R(COMPUTE_PGM_HI, 0x2e0d) /* code address >> 40 */        \
  R(COMPUTE_PGM_RSRC1, 0x2e12)                              \
  R(COMPUTE_PGM_RSRC2, 0x2e13)                              \
  R(COMPUTE_RESOURCE_LIMITS, 0x2e15)                        \
  R(COMPUTE_STATIC_THREAD_MGMT_SE0, 0x2e16)                 \
  R(COMPUTE_STATIC_THREAD_MGMT_SE1, 0x2e17)                 \
  R(COMPUTE_TMPRING_SIZE, 0x2e18)                           \
  R(COMPUTE_STATIC_THREAD_MGMT_SE2, 0x2e19)                 \
  R(COMPUTE_STATIC_THREAD_MGMT_SE3, 0x2e1a)                 \
  R(COMPUTE_RESTART_X, 0x2e1b)                              \
  R(COMPUTE_RESTART_Y, 0x2e1c)                              \
  R(COMPUTE_RESTART_Z, 0x2e1d)                              \
  R(COMPUTE_PGM_RSRC3, 0x2e28)   /* gfx10+ (and gfx90a+) */ \
  R(COMPUTE_USER_DATA_0, 0x2e40) /* 16 user SGPRs */        \
  R(COMPUTE_USER_DATA_1, 0x2e41)                            \
  R(COMPUTE_USER_DATA_2, 0x2e42)                            \
  R(COMPUTE_USER_DATA_3, 0x2e43)                            \
  R(COMPUTE_USER_DATA_4, 0x2e44)                            \
  R(COMPUTE_USER_DATA_5, 0x2e45)                            \
  R(COMPUTE_USER_DATA_6, 0x2e46)                            \
  R(COMPUTE_USER_DATA_7, 0x2e47)                            \
  R(COMPUTE_USER_DATA_8, 0x2e48)                            \
  R(COMPUTE_USER_DATA_9, 0x2e49)                            \
  R(COMPUTE_USER_DATA_10, 0x2e4a)                           \
  R(COMPUTE_USER_DATA_11, 0x2e4b)                           \
  R(COMPUTE_USER_DATA_12, 0x2e4c)                           \
  R(COMPUTE_USER_DATA_13, 0x2e4d)                           \
  R(COMPUTE_USER_DATA_14, 0x2e4e)                           \
  R(COMPUTE_USER_DATA_15, 0x2e4f)

namespace reg {
#define AMD_REG_CONSTANT(name, offset) constexpr uint32_t name = offset;
AMD_COMPUTE_REGS(AMD_REG_CONSTANT)
#undef AMD_REG_CONSTANT
constexpr uint32_t user_data_count = COMPUTE_USER_DATA_15 - COMPUTE_USER_DATA_0 + 1;
}  // namespace reg

// "COMPUTE_PGM_LO" for a register above, nullptr for others (for text dumps).
const char *register_name(uint32_t dword_offset);

struct chip {
  const char *name;             // "gfx1100": the part after "amd-" in a capture's Target.name
  const char *family;           // "RDNA3"
  uint32_t gfx_target_version;  // as KFD's topology reports it (major*10000 + minor*100 + step)
  uint32_t wave_size;           // the native wavefront size
  bool wave32;                  // runs wave32 kernels (RDNA: 32 and 64; CDNA: 64 only)
  bool gcr_cntl;                // gfx10+: caches are controlled by GCR_CNTL (ACQUIRE_MEM dword 7,
                                // RELEASE_MEM dword 1 bits 12..); gfx9 uses CP_COHER_CNTL
  bool has_pgm_rsrc3;           // COMPUTE_PGM_RSRC3 is set per dispatch
  uint32_t acquire_cache;       // ACQUIRE_MEM cache actions for "everything before is visible"
  uint32_t release_cache;       // RELEASE_MEM dword-1 bits 12..22: write back before the signal
  uint32_t sdma_version;        // SDMA IP major version (packet layouts used are 4..7 compatible)
  uint32_t lds_bytes;           // LDS one workgroup may allocate
  uint64_t timestamp_hz;        // the rate of the GPU timestamps (RELEASE_MEM, SDMA TIMESTAMP)
};

// nullptr when the name is unknown.
const chip *chip_find(const char *name);
const chip *chip_by_gfx_target_version(uint32_t version);
// All known chips, for messages ("gfx1100, gfx1200, ...").
const chip *chips_all(unsigned *count);

}  // namespace capgraph::amd
