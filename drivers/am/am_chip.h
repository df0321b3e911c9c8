// am_chip — which chips the AM driver knows, as data: for each IP block the
// boot touches, the versions we accept and the firmware files that version
// needs. The discovery table (am_discovery) says what the chip has; this
// picks the chip's row from it, or refuses with the block and version named.
//
// Sources:
// - IP versions of the RX 7900 XTX (Navi31, gfx1100): GC 11.0.0, MP0 13.0.0,
//   MP1 13.0.0, SDMA 6.0.0, MMHUB 3.0.0, NBIO 4.3.0, HDP 6.0.0, OSSSYS 6.0.0.
//   Linux amdgpu_discovery.c (the per-version IP block switch), and the
//   register modules tinygrad's first AM driver hard-coded for this card
//   (c18307e749), shared/research/usbgpu_am_plan.md §1.1 and §5.4.
// - File names: Linux builds them from the IP version as
//   "<prefix>_<major>_<minor>_<rev>[_<part>].bin" (amdgpu_ucode_ip_version_decode:
//   gc, psp, smu, sdma; MODULE_FIRMWARE lines in gfx_v11_0.c, imu_v11_0.c,
//   psp_v13_0.c, smu_v13_0_0_ppt.c, sdma_v6_0.c).
// - Which files a compute-only boot loads: tinygrad's AMFirmware for gfx11
//   (amdev.py:24-118, usbgpu_am_plan.md §1.9): psp sos, smu, sdma, and gc
//   mec/imu/rlc. Not loaded: gc pfp/me (gfx12 only in AM; our queues are MEC
//   compute queues, no graphics ring), mes (no MES), psp ta (no trusted
//   apps), dmcub/vcn (no display, no video).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "am_discovery.h"

namespace capgraph::am {

// One accepted version of one IP block and what it needs.
struct chip_ip_row {
  uint16_t hw_id;
  const char *block;  // "GC", "MP0", ... as in messages
  uint8_t major, minor, revision;
  std::vector<const char *> firmware;  // file names under the firmware directory
};

// Every IP block the boot touches, in the order a message lists them.
// Each block has one row per accepted version (only gfx1100's today).
const std::vector<chip_ip_row> &chip_ip_rows();

// The chip the discovery table describes, once every block's version is known.
struct chip {
  std::string name;                      // "gfx1100"
  std::vector<const chip_ip_row *> ips;  // one per block, in chip_ip_rows() order
  std::vector<std::string> firmware;     // every file the boot loads, no repeats
  // The row for a block (nullptr when the chip has none): GC, MP0, ...
  const chip_ip_row *find(uint16_t hw_id) const;
};

// Picks the chip from a parsed discovery table. False with a message naming
// the block and its version when a block the boot needs is absent or has a
// version no row accepts (and the versions that are accepted), or when the
// instances of one block disagree (two SDMA engines at different versions).
bool chip_select(const discovery_table &t, chip *out, std::string *err);

}  // namespace capgraph::am
