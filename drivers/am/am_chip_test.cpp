// am_chip: chip selection from discovery tables built here (the gfx1100
// versions listed in am_chip.h, made-up base addresses), and every way a
// table can fail it.
#include "am_chip.h"

#include <doctest/doctest.h>

using namespace capgraph::am;

namespace {

ip_block ip(uint16_t hw, uint8_t major, uint8_t minor, uint8_t rev, uint8_t instance = 0) {
  ip_block b;
  b.hw_id = hw;
  b.instance = instance;
  b.major = major;
  b.minor = minor;
  b.revision = rev;
  b.base = {0x1000u * (hw + 1)};
  return b;
}

discovery_table gfx1100_table() {
  discovery_table t;
  t.ips = {ip(hw_id_gc, 11, 0, 0),      ip(hw_id_mp0, 13, 0, 0),
           ip(hw_id_mp1, 13, 0, 0),     ip(hw_id_sdma0, 6, 0, 0),
           ip(hw_id_sdma0, 6, 0, 0, 1), ip(hw_id_mmhub, 3, 0, 0),
           ip(hw_id_nbif, 4, 3, 0),     ip(hw_id_hdp, 6, 0, 0),
           ip(hw_id_osssys, 6, 0, 0),   ip(12 /* VCN: not used by the boot */, 4, 0, 0)};
  return t;
}

std::string select_error(const discovery_table &t) {
  chip c;
  std::string err;
  CHECK_FALSE(chip_select(t, &c, &err));
  CHECK(c.ips.empty());
  CHECK(c.firmware.empty());
  return err;
}

void version_set(discovery_table &t, uint16_t hw, uint8_t major, uint8_t minor, uint8_t rev) {
  for (ip_block &b : t.ips)
    if (b.hw_id == hw) b.major = major, b.minor = minor, b.revision = rev;
}

}  // namespace

TEST_CASE("chip: a gfx1100 table selects gfx1100 and its six firmware files") {
  chip c;
  std::string err;
  REQUIRE_MESSAGE(chip_select(gfx1100_table(), &c, &err), err);
  CHECK(c.name == "gfx1100");
  CHECK(c.ips.size() == 8);
  CHECK(c.firmware == std::vector<std::string>{"gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin",
                                               "gc_11_0_0_mec.bin", "psp_13_0_0_sos.bin",
                                               "smu_13_0_0.bin", "sdma_6_0_0.bin"});
  REQUIRE(c.find(hw_id_mp0));
  CHECK(std::string(c.find(hw_id_mp0)->block) == "MP0");
  CHECK(c.find(12) == nullptr);
}

TEST_CASE("chip: every firmware file is named after its block's version, as Linux names them") {
  // Linux: "<prefix>_<major>_<minor>_<rev>" (amdgpu_ucode_ip_version_decode).
  for (const chip_ip_row &r : chip_ip_rows()) {
    std::string prefix;
    if (r.hw_id == hw_id_gc) prefix = "gc";
    if (r.hw_id == hw_id_mp0) prefix = "psp";
    if (r.hw_id == hw_id_mp1) prefix = "smu";
    if (r.hw_id == hw_id_sdma0) prefix = "sdma";
    if (prefix.empty()) {
      CHECK_MESSAGE(r.firmware.empty(), r.block);
      continue;
    }
    CHECK_FALSE(r.firmware.empty());
    const std::string stem = prefix + "_" + std::to_string(r.major) + "_" +
                             std::to_string(r.minor) + "_" + std::to_string(r.revision);
    for (const char *f : r.firmware) {
      const std::string name = f;
      CHECK_MESSAGE(name.compare(0, stem.size(), stem) == 0, name);
      CHECK(name.size() > 4);
      CHECK(name.compare(name.size() - 4, 4, ".bin") == 0);
    }
  }
}

TEST_CASE("chip: an unknown version is refused, naming the block, its version and the known one") {
  auto t = gfx1100_table();
  version_set(t, hw_id_mp0, 13, 0, 10);  // RX 7600 (gfx1102)
  std::string err = select_error(t);
  CHECK(err.find("MP0 13.0.10") != std::string::npos);
  CHECK(err.find("13.0.0") != std::string::npos);

  t = gfx1100_table();
  version_set(t, hw_id_gc, 12, 0, 1);  // RDNA4
  err = select_error(t);
  CHECK(err.find("GC 12.0.1") != std::string::npos);

  t = gfx1100_table();
  version_set(t, hw_id_hdp, 7, 0, 0);  // a block with no firmware is checked too
  CHECK(select_error(t).find("HDP 7.0.0") != std::string::npos);
}

TEST_CASE("chip: a missing block and disagreeing instances are refused by name") {
  auto t = gfx1100_table();
  t.ips.erase(t.ips.begin() + 5);  // MMHUB
  CHECK(select_error(t).find("no MMHUB block") != std::string::npos);

  t = gfx1100_table();
  t.ips[4].minor = 2;  // SDMA instance 1 at 6.2.0
  const std::string err = select_error(t);
  CHECK(err.find("SDMA instances disagree") != std::string::npos);
  CHECK(err.find("6.2.0") != std::string::npos);

  t = gfx1100_table();
  t.ips[4].hw_id = hw_id_sdma1;  // the second engine under SDMA1's hw id
  t.ips[4].instance = 0;
  chip c;
  std::string ok_err;
  CHECK_MESSAGE(chip_select(t, &c, &ok_err), ok_err);
  t.ips[4].revision = 3;
  CHECK(select_error(t).find("6.0.3") != std::string::npos);

  CHECK(select_error(discovery_table{}).find("no GC block") != std::string::npos);
}
