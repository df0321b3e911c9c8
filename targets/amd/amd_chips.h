// Per-chip facts as data: what differs between the AMD GPUs capgraph targets. The encoder asks
// these flags; it never tests a chip name.
#pragma once
#include <cstdint>

namespace capgraph::amd {

// Compute registers, as absolute dword offsets (SET_SH_REG takes them minus sh_reg_base).
// The same on gfx9 through gfx12. Sources: Mesa src/amd/common/sid.h (R_00B8xx byte offsets / 4),
// Linux gc_11_0_0_offset.h (regCOMPUTE_* + GC base 0x1260).
namespace reg {
constexpr uint32_t COMPUTE_DISPATCH_INITIATOR = 0x2e00;
constexpr uint32_t COMPUTE_START_X = 0x2e04;       // then _Y, _Z
constexpr uint32_t COMPUTE_NUM_THREAD_X = 0x2e07;  // then _Y, _Z
constexpr uint32_t COMPUTE_PGM_LO = 0x2e0c;        // code address >> 8
constexpr uint32_t COMPUTE_PGM_HI = 0x2e0d;        // code address >> 40
constexpr uint32_t COMPUTE_PGM_RSRC1 = 0x2e12;
constexpr uint32_t COMPUTE_PGM_RSRC2 = 0x2e13;
constexpr uint32_t COMPUTE_RESOURCE_LIMITS = 0x2e15;
constexpr uint32_t COMPUTE_STATIC_THREAD_MGMT_SE0 = 0x2e16;  // then SE1
constexpr uint32_t COMPUTE_TMPRING_SIZE = 0x2e18;
constexpr uint32_t COMPUTE_STATIC_THREAD_MGMT_SE2 = 0x2e19;  // then SE3
constexpr uint32_t COMPUTE_RESTART_X = 0x2e1b;               // then _Y, _Z
constexpr uint32_t COMPUTE_PGM_RSRC3 = 0x2e28;               // gfx10+ (and gfx90a+)
constexpr uint32_t COMPUTE_USER_DATA_0 = 0x2e40;             // 16 user SGPRs: _0 .. _15
constexpr uint32_t user_data_count = 16;
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
};

// nullptr when the name is unknown.
const chip *chip_find(const char *name);
const chip *chip_by_gfx_target_version(uint32_t version);
// All known chips, for messages ("gfx1100, gfx1200, ...").
const chip *chips_all(unsigned *count);

}  // namespace capgraph::amd
