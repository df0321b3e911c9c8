// The chip table. Sources: Mesa 25.0.7 src/freedreno/common/freedreno_devices.py, GPUId(630):
// chip id 0x06030000 with any patch level (the comma three reports 0x06030001 through
// KGSL_PROP_DEVICE_INFO, ../shared/research/adreno_plan.md §2.1), gpu_id 630,
// cs_shared_mem_size = 32 * 1024 (SP_CS_CTRL_REG1 SHARED_SIZE counts it in KiB),
// threadsize_base = 64, a6xx_gen1 reg_size_vec4 = 96, instr_cache_size = 64, num_ccu = 2,
// gmem_size = 1 MiB, magic_regs TPL1_DBG_ECO_CNTL = 0x00108000.
#include "adreno_chips.h"

#include <cstring>

namespace capgraph::adreno {
namespace {

constexpr chip kChips[] = {
    {"a630", 0x06030001, 630, 32 * 1024, 64, 96, 64, 2, 1 << 20, 0x00108000},
};

}  // namespace

const chip *chip_find(const char *name) {
  for (const chip &c : kChips)
    if (strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

const chip *chip_by_id(uint32_t chip_id) {
  for (const chip &c : kChips)
    if (c.chip_id >> 8 == chip_id >> 8) return &c;
  return nullptr;
}

std::string chip_names() {
  std::string s;
  for (const chip &c : kChips) s += std::string(s.empty() ? "adreno-" : ", adreno-") + c.name;
  return s;
}

}  // namespace capgraph::adreno
