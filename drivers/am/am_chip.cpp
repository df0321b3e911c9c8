#include "am_chip.h"

#include <algorithm>

namespace capgraph::am {

const std::vector<chip_ip_row> &chip_ip_rows() {
  // Sources: see am_chip.h. NBIO's block is the discovery table's NBIF entry
  // (hw id 108, soc15_hw_ip.h NBIF_HWID); the blocks without firmware are
  // listed because the boot programs their registers and must refuse a
  // version whose register layout we have not checked.
  static const std::vector<chip_ip_row> rows = {
      {hw_id_gc, "GC", 11, 0, 0, {"gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin", "gc_11_0_0_mec.bin"}},
      {hw_id_mp0, "MP0", 13, 0, 0, {"psp_13_0_0_sos.bin"}},
      {hw_id_mp1, "MP1", 13, 0, 0, {"smu_13_0_0.bin"}},
      {hw_id_sdma0, "SDMA", 6, 0, 0, {"sdma_6_0_0.bin"}},
      {hw_id_mmhub, "MMHUB", 3, 0, 0, {}},
      {hw_id_nbif, "NBIO", 4, 3, 0, {}},
      {hw_id_hdp, "HDP", 6, 0, 0, {}},
      {hw_id_osssys, "OSSSYS", 6, 0, 0, {}},
  };
  return rows;
}

const chip_ip_row *chip::find(uint16_t hw_id) const {
  for (const chip_ip_row *r : ips)
    if (r->hw_id == hw_id) return r;
  return nullptr;
}

namespace {

std::string version_text(unsigned major, unsigned minor, unsigned revision) {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(revision);
}

// The chip name follows GC's version: gfx<major><minor><revision> in hex
// digits, as LLVM's AMDGPU processor names do (GC 11.0.0 -> gfx1100).
std::string gfx_name(const chip_ip_row &gc) {
  const char *hex = "0123456789abcdef";
  return "gfx" + std::to_string(gc.major) + hex[gc.minor & 15] + hex[gc.revision & 15];
}

}  // namespace

bool chip_select(const discovery_table &t, chip *out, std::string *err) {
  *out = chip{};
  chip c;
  const auto &rows = chip_ip_rows();
  for (size_t i = 0; i < rows.size();) {
    const uint16_t hw = rows[i].hw_id;
    size_t end = i;
    while (end < rows.size() && rows[end].hw_id == hw) ++end;
    const char *block = rows[i].block;
    std::string accepted;
    for (size_t r = i; r < end; ++r)
      accepted +=
          (r > i ? ", " : "") + version_text(rows[r].major, rows[r].minor, rows[r].revision);
    // Every instance of the block (SDMA has two on gfx1100) must agree. A
    // table may list the second SDMA engine under SDMA1's own hw id
    // (soc15_hw_ip.h SDMA1_HWID) rather than as instance 1 of SDMA0.
    const ip_block *first = nullptr;
    for (const ip_block &ip : t.ips) {
      if (ip.hw_id != hw && !(hw == hw_id_sdma0 && ip.hw_id == hw_id_sdma1)) continue;
      if (!first) {
        first = &ip;
      } else if (ip.major != first->major || ip.minor != first->minor ||
                 ip.revision != first->revision) {
        *err = std::string("AMD GPU: ") + block + " instances disagree: instance " +
               std::to_string(first->instance) + " is " +
               version_text(first->major, first->minor, first->revision) + ", instance " +
               std::to_string(ip.instance) + " is " + version_text(ip.major, ip.minor, ip.revision);
        return false;
      }
    }
    if (!first) {
      *err = std::string("AMD GPU: the IP discovery table has no ") + block + " block (hw id " +
             std::to_string(hw) + "); the driver needs " + block + " " + accepted;
      return false;
    }
    const chip_ip_row *match = nullptr;
    for (size_t r = i; r < end; ++r)
      if (rows[r].major == first->major && rows[r].minor == first->minor &&
          rows[r].revision == first->revision)
        match = &rows[r];
    if (!match) {
      *err = std::string("AMD GPU: unsupported IP version ") + block + " " +
             version_text(first->major, first->minor, first->revision) + " (this driver knows " +
             block + " " + accepted + ", i.e. gfx1100 / RX 7900 XTX)";
      return false;
    }
    c.ips.push_back(match);
    for (const char *f : match->firmware)
      if (std::find(c.firmware.begin(), c.firmware.end(), f) == c.firmware.end())
        c.firmware.push_back(f);
    i = end;
  }
  c.name = gfx_name(*c.find(hw_id_gc));
  *out = std::move(c);
  return true;
}

}  // namespace capgraph::am
