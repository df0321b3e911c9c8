#include "am_regs.h"

#include <string>

namespace capgraph::am {

namespace {
const reg_def kRegs[reg_count] = {
#define AM_REG_DEF(name, hw, seg, off) {#name, hw, seg, off},
    AM_GFX1100_REGS(AM_REG_DEF)
#undef AM_REG_DEF
};
}  // namespace

const reg_def &reg_info(reg r) { return kRegs[r]; }

bool reg_map_build(const discovery_table &t, reg_map *out, std::string *err) {
  reg_map m;
  for (int i = 0; i < reg_count; ++i) {
    const reg_def &d = kRegs[i];
    const ip_block *ip = t.find(d.hw_id);
    if (!ip) {
      *err = std::string("discovery table has no block with hw id ") + std::to_string(d.hw_id) +
             " (needed for " + d.name + ")";
      return false;
    }
    if (d.segment >= ip->base.size()) {
      *err = std::string("discovery table: ") + ip_block_name(*ip) + " has " +
             std::to_string(ip->base.size()) + " register segments, " + d.name + " needs segment " +
             std::to_string(d.segment);
      return false;
    }
    m.addr[i] = uint32_t(ip->base[d.segment] + d.offset);
  }
  *out = m;
  return true;
}

reg reg_find(const reg_map &m, uint32_t addr) {
  for (int i = 0; i < reg_count; ++i)
    if (m.addr[i] == addr) return reg(i);
  return reg_count;
}

}  // namespace capgraph::am
