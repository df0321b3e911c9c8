// The AM driver's file path end to end on synthetic files: a gfx1100
// discovery table picks the chip, the chip names its six files, they are
// read from a folder and every piece the PSP would get is located, with the
// bytes, types and totals checked.
#include "am_firmware_synthetic.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>

#include "am_chip.h"
#include "am_firmware.h"
#include "am_ucode.h"

using namespace capgraph::am;
namespace fs = std::filesystem;

namespace {

discovery_table gfx1100_table() {
  discovery_table t;
  auto ip = [](uint16_t hw, uint8_t major, uint8_t minor, uint8_t instance = 0) {
    ip_block b;
    b.hw_id = hw;
    b.instance = instance;
    b.major = major;
    b.minor = minor;
    return b;
  };
  t.ips = {ip(hw_id_gc, 11, 0),   ip(hw_id_mp0, 13, 0),     ip(hw_id_mp1, 13, 0),
           ip(hw_id_sdma0, 6, 0), ip(hw_id_sdma0, 6, 0, 1), ip(hw_id_mmhub, 3, 0),
           ip(hw_id_nbif, 4, 3),  ip(hw_id_hdp, 6, 0),      ip(hw_id_osssys, 6, 0)};
  return t;
}

bool bytes_are(const firmware_file &f, uint32_t offset, uint32_t size, uint32_t type) {
  for (uint32_t i = 0; i < size; ++i)
    if (f.bytes[offset + i] != synthetic_firmware_byte(type, i)) return false;
  return true;
}

}  // namespace

TEST_CASE(
    "synthetic gfx1100 firmware: chip -> files -> every PSP piece, with Debian bookworm's sizes") {
  std::string t = (fs::temp_directory_path() / "am_fw_synth.XXXXXX").string();
  REQUIRE(mkdtemp(t.data()) != nullptr);
  const fs::path dir = t;
  std::string err;
  REQUIRE_MESSAGE(synthetic_firmware_write(dir.string(), &err), err);

  chip c;
  REQUIRE_MESSAGE(chip_select(gfx1100_table(), &c, &err), err);
  std::vector<firmware_file> files;
  REQUIRE_MESSAGE(firmware_read_all(dir.string(), c.firmware, &files, &err), err);
  REQUIRE(files.size() == 6);

  uint64_t to_psp = 0, largest = 0;
  size_t load_ip_fw = 0;
  for (const firmware_file &f : files) {
    if (f.name == "psp_13_0_0_sos.bin") {
      // The bootloader gets KDB twice on MP0 13 (KDB, KDB as SPL, SYS_DRV,
      // SOS), and LOAD_TOC gets the TOC (usbgpu_am_plan.md §1.4).
      for (uint32_t type : {psp_fw_kdb, psp_fw_kdb, psp_fw_sys_drv, psp_fw_sos, psp_fw_toc}) {
        const psp_bin *b = f.psp_find(type);
        REQUIRE(b);
        CHECK(bytes_are(f, b->offset, b->size, kSyntheticSosTypeBase + type));
        to_psp += b->size;
        largest = std::max<uint64_t>(largest, b->size);
      }
      continue;
    }
    ucode_file_pieces p;
    REQUIRE_MESSAGE(ucode_locate(f, &p, &err), err);
    for (const ucode_piece &pc : p.pieces) {
      CHECK_MESSAGE(bytes_are(f, pc.offset, pc.size, pc.fw_type), (f.name + " " + pc.name));
      to_psp += pc.size;
      largest = std::max<uint64_t>(largest, pc.size);
      ++load_ip_fw;
    }
    if (f.name == "gc_11_0_0_mec.bin") CHECK(p.mec_ucode_start == 0x7000000003000ull);
  }
  // The figures usbgpu_am_plan.md §1.9 computed from Debian's headers: twelve
  // LOAD_IP_FW pieces, 1,251,632 bytes in all, the largest 267,552 bytes,
  // which fits the 512 KiB bridge SRAM the PSP reads it from.
  CHECK(load_ip_fw == 12);
  CHECK(to_psp == 1251632);
  CHECK(largest == 267552);
  CHECK(largest <= 512 * 1024);
  CHECK(synthetic_firmware_file("gc_11_0_0_pfp.bin").empty());
  fs::remove_all(dir);
}
