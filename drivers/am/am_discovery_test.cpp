// am_discovery: tables built here, byte by byte, in the layout of Linux's
// discovery.h (see am_discovery.h): a gfx1100-shaped chip with its IP
// versions (shared/research/usbgpu_am_plan.md §5.4: GC 11.0.0, MP0/MP1
// 13.0.0, SDMA 6.0.0, MMHUB 3.0.0, NBIO 4.3.0, HDP 6.0.0, OSSSYS 6.0.0; the
// base addresses are made-up test values), then every way the table can be
// damaged.
#include "am_discovery.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace capgraph::am;

namespace {

struct entry {
  uint16_t hw_id;
  uint8_t instance, major, minor, revision, byte7;
  std::vector<uint64_t> base;
};

void put16(std::vector<uint8_t> &b, size_t at, uint16_t v) {
  b[at] = uint8_t(v);
  b[at + 1] = uint8_t(v >> 8);
}
void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
uint16_t sum(const std::vector<uint8_t> &b, size_t from, size_t to) {
  uint16_t s = 0;
  for (size_t i = from; i < to; ++i) s = uint16_t(s + b[i]);
  return s;
}

constexpr size_t kIpOff = 0x40, kDieOff = 0x100;

// A binary: header, IP discovery header at 0x40 (one die), die at 0x100.
// Checksums are computed last, as a real table carries them.
std::vector<uint8_t> table_build(const std::vector<entry> &ips, uint16_t version = 3,
                                 bool base64 = false) {
  std::vector<uint8_t> b(kDiscoveryTableBytes, 0);
  size_t at = kDieOff;
  put16(b, at, 0);  // die id
  put16(b, at + 2, uint16_t(ips.size()));
  at += 4;
  for (const entry &e : ips) {
    put16(b, at, e.hw_id);
    b[at + 2] = e.instance;
    b[at + 3] = uint8_t(e.base.size());
    b[at + 4] = e.major;
    b[at + 5] = e.minor;
    b[at + 6] = e.revision;
    b[at + 7] = e.byte7;
    at += 8;
    for (uint64_t a : e.base) {
      put32(b, at, uint32_t(a));
      if (base64) put32(b, at + 4, uint32_t(a >> 32));
      at += base64 ? 8 : 4;
    }
  }
  const size_t end = at;
  put32(b, kIpOff, kDiscoveryIpSignature);
  put16(b, kIpOff + 4, version);
  put16(b, kIpOff + 6, uint16_t(end - kIpOff));  // the IP table runs to the last entry
  put16(b, kIpOff + 12, 1);                      // one die
  put16(b, kIpOff + 14, 0);
  put16(b, kIpOff + 16, uint16_t(kDieOff));
  if (base64) b[kIpOff + 78] = 1;
  put32(b, 0, kDiscoveryBinarySignature);
  put16(b, 4, 1);
  put16(b, 6, 0);
  put16(b, 10, uint16_t(end));
  put16(b, 12, uint16_t(kIpOff));
  put16(b, 14, sum(b, kIpOff, end));
  put16(b, 16, uint16_t(end - kIpOff));
  put16(b, 8, sum(b, 10, end));
  return b;
}

// Recomputes both checksums after a test edited the bytes.
void checksums_fix(std::vector<uint8_t> &b) {
  const uint16_t size = uint16_t(b[10] | b[11] << 8),
                 ip_size = uint16_t(b[kIpOff + 6] | b[kIpOff + 7] << 8);
  put16(b, 14, sum(b, kIpOff, kIpOff + ip_size));
  put16(b, 8, sum(b, 10, size));
}

const std::vector<entry> gfx1100 = {
    {hw_id_gc, 0, 11, 0, 0, 0, {0x1260, 0xA000, 0x1C000, 0x2402C00}},
    {hw_id_mp0, 0, 13, 0, 0, 0, {0x16000, 0x243FC00}},
    {hw_id_mp1, 0, 13, 0, 0, 0, {0x16000, 0x243FC00}},
    {hw_id_sdma0, 0, 6, 0, 0, 0, {0x1260, 0xA000}},
    {hw_id_sdma0, 1, 6, 0, 0, 0x21, {0x1260, 0xA000}},
    {hw_id_mmhub, 0, 3, 0, 0, 0, {0x1A000, 0x2408800}},
    {hw_id_nbif, 0, 4, 3, 0, 0, {0, 0x14, 0xD20, 0x10400, 0x241B000}},
    {hw_id_hdp, 0, 6, 0, 0, 0, {0xF20, 0x240A400}},
    {hw_id_osssys, 0, 6, 0, 0, 0, {0x10A0, 0x240A000}},
};

std::string parse_error(const std::vector<uint8_t> &b, size_t n = SIZE_MAX) {
  discovery_table t;
  std::string err;
  CHECK_FALSE(discovery_parse(b.data(), n == SIZE_MAX ? b.size() : n, &t, &err));
  CHECK(t.ips.empty());
  CHECK_FALSE(err.empty());
  return err;
}

}  // namespace

TEST_CASE("discovery: a gfx1100-shaped table gives every block, version and base") {
  auto b = table_build(gfx1100);
  discovery_table t;
  std::string err;
  REQUIRE_MESSAGE(discovery_parse(b.data(), b.size(), &t, &err), err);
  CHECK(t.version_major == 1);
  CHECK(t.ip_table_version == 3);
  REQUIRE(t.ips.size() == gfx1100.size());
  const ip_block *gc = t.find(hw_id_gc);
  REQUIRE(gc);
  CHECK(ip_block_name(*gc) == "GC 11.0.0");
  CHECK(gc->base == std::vector<uint64_t>{0x1260, 0xA000, 0x1C000, 0x2402C00});
  const ip_block *nbif = t.find(hw_id_nbif);
  REQUIRE(nbif);
  CHECK(ip_block_name(*nbif) == "NBIF 4.3.0");
  CHECK(nbif->base.size() == 5);
  CHECK(nbif->base[4] == 0x241B000);
  const ip_block *sdma1 = t.find(hw_id_sdma0, 1);
  REQUIRE(sdma1);
  CHECK(sdma1->sub_revision == 1);
  CHECK(sdma1->variant == 2);
  CHECK(t.find(hw_id_sdma0, 2) == nullptr);
  CHECK(t.find(hw_id_sdma1) == nullptr);
  CHECK(ip_block_name(*t.find(hw_id_mp0)) == "MP0 13.0.0");
}

TEST_CASE("discovery: version 4 with 64-bit bases; version 1 keeps the harvest nibble") {
  std::vector<entry> ips = {{hw_id_gc, 0, 11, 0, 2, 0x05, {0x123456789ull, 0xA000}}};
  auto b = table_build(ips, 4, true);
  discovery_table t;
  std::string err;
  REQUIRE_MESSAGE(discovery_parse(b.data(), b.size(), &t, &err), err);
  REQUIRE(t.ips.size() == 1);
  CHECK(t.ips[0].base == std::vector<uint64_t>{0x123456789ull, 0xA000});
  CHECK(t.ips[0].revision == 2);
  CHECK(t.ips[0].sub_revision == 5);
  b = table_build(ips, 1, false);
  REQUIRE_MESSAGE(discovery_parse(b.data(), b.size(), &t, &err), err);
  CHECK(t.ips[0].harvest == 5);
  CHECK(t.ips[0].sub_revision == 0);
  CHECK(t.ips[0].base == std::vector<uint64_t>{0x23456789u, 0xA000});  // 32-bit bases
}

TEST_CASE("discovery: damaged tables are refused with the field named") {
  const auto good = table_build(gfx1100);
  SUBCASE("not a table (VRAM of a GPU that is not up reads as ones)") {
    std::vector<uint8_t> ones(kDiscoveryTableBytes, 0xFF);
    CHECK(parse_error(ones).find("binary signature is 0xffffffff") != std::string::npos);
  }
  SUBCASE("fewer bytes than the header") {
    CHECK(parse_error(good, 6).find("runs past the 6 bytes") != std::string::npos);
  }
  SUBCASE("binary_size beyond what was read") {
    CHECK(parse_error(good, 0x120).find("binary_size") != std::string::npos);
  }
  SUBCASE("one byte flipped: the binary checksum") {
    auto b = good;
    b[kDieOff + 12] ^= 0x10;
    CHECK(parse_error(b).find("binary checksum mismatch") != std::string::npos);
  }
  SUBCASE("IP table checksum wrong while the binary's is right") {
    auto b = good;
    put16(b, 14, uint16_t(b[14] + 1));
    put16(b, 8, sum(b, 10, size_t(b[10] | b[11] << 8)));
    CHECK(parse_error(b).find("IP discovery table checksum mismatch") != std::string::npos);
  }
  SUBCASE("IP discovery header signature") {
    auto b = good;
    b[kIpOff] = 0;
    checksums_fix(b);
    CHECK(parse_error(b).find("IP discovery header signature") != std::string::npos);
  }
  SUBCASE("IP table offset past the binary") {
    auto b = good;
    put16(b, 12, 0x3000);
    checksums_fix(b);
    CHECK(parse_error(b).find("IP discovery header signature at byte 12288") != std::string::npos);
  }
  SUBCASE("unknown table version") {
    auto b = good;
    put16(b, kIpOff + 4, 5);
    checksums_fix(b);
    CHECK(parse_error(b).find("version 5") != std::string::npos);
  }
  SUBCASE("17 dies") {
    auto b = good;
    put16(b, kIpOff + 12, 17);
    checksums_fix(b);
    CHECK(parse_error(b).find("die count 17") != std::string::npos);
  }
  SUBCASE("an entry claiming more base addresses than the binary holds") {
    auto b = good;
    b[kDieOff + 4 + 3] = 200;
    checksums_fix(b);
    CHECK(parse_error(b).find("IP entry base addresses") != std::string::npos);
  }
  SUBCASE("a die claiming more entries than the binary holds") {
    auto b = good;
    put16(b, kDieOff + 2, 500);
    checksums_fix(b);
    CHECK(parse_error(b).find("runs past") != std::string::npos);
  }
}
