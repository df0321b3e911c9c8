// The IP discovery binary the fake gfx1100 keeps at VRAM end - 64 KiB,
// generated (as the synthetic firmware is) in Linux discovery.h's layout,
// table version 3 with 32-bit bases (am_discovery.h has the layout).
// Versions: the RX 7900 XTX's (am_chip.h). Register segment bases: Linux
// navi10_ip_offset.h's values, which tinygrad's mock AM also uses
// (test/mockgpu/am/amgpu.py IP_BASES); a real Navi31 reports its own, the
// driver reads whatever the table says (model choice).
#include <cstdint>
#include <vector>

#include "am_discovery.h"

namespace capgraph::emu {

namespace {
void put16(std::vector<uint8_t> &b, size_t at, uint16_t v) {
  b[at] = uint8_t(v);
  b[at + 1] = uint8_t(v >> 8);
}
void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
uint16_t byte_sum(const std::vector<uint8_t> &b, size_t from, size_t to) {
  uint16_t s = 0;
  for (size_t i = from; i < to; ++i) s = uint16_t(s + b[i]);
  return s;
}
}  // namespace

std::vector<uint8_t> gfx1100_discovery_binary() {
  using namespace am;
  struct block {
    uint16_t hw;
    uint8_t major, minor, rev;
    std::vector<uint32_t> base;
  };
  const std::vector<uint32_t> gc = {0x1260, 0xA000, 0x1C000, 0x2402C00};
  const std::vector<uint32_t> mp = {0x16000, 0xDC0000, 0xE00000, 0xE40000, 0x243FC00};
  const std::vector<block> blocks = {
      {hw_id_gc, 11, 0, 0, gc},
      {hw_id_sdma0, 6, 0, 0, gc},
      {hw_id_mmhub, 3, 0, 0, {0x1A000, 0x2408800}},
      {hw_id_nbif, 4, 3, 0, {0x0, 0x14, 0xD20, 0x10400, 0x241B000, 0x4040000}},
      {hw_id_mp0, 13, 0, 0, mp},
      {hw_id_mp1, 13, 0, 0, mp},
      {hw_id_hdp, 6, 0, 0, {0xF20, 0x240A400}},
      {hw_id_osssys, 6, 0, 0, {0x10A0, 0x240A000}},
  };
  std::vector<uint8_t> b;
  b.reserve(1024);  // the whole table; also keeps GCC 12 from a false -Warray-bounds on growth
  b.resize(64, 0);  // binary_header: 12 bytes + 6 table_info of 8 = 60
  const size_t ip_off = b.size();
  b.resize(ip_off + 80, 0);  // ip_discovery_header (16 dies of 4 bytes from byte 14)
  const size_t die_off = b.size();
  b.resize(die_off + 4, 0);
  put16(b, die_off, 0);
  put16(b, die_off + 2, uint16_t(blocks.size()));
  for (const block &k : blocks) {
    const size_t at = b.size();
    b.resize(at + 8 + 4 * k.base.size(), 0);
    put16(b, at, k.hw);
    b[at + 2] = 0;  // instance
    b[at + 3] = uint8_t(k.base.size());
    b[at + 4] = k.major;
    b[at + 5] = k.minor;
    b[at + 6] = k.rev;
    for (size_t i = 0; i < k.base.size(); ++i) put32(b, at + 8 + 4 * i, k.base[i]);
  }
  const size_t ip_size = b.size() - ip_off;
  put32(b, ip_off, kDiscoveryIpSignature);
  put16(b, ip_off + 4, 3);  // table version
  put16(b, ip_off + 6, uint16_t(ip_size));
  put16(b, ip_off + 12, 1);  // one die
  put16(b, ip_off + 14, 0);
  put16(b, ip_off + 16, uint16_t(die_off));
  put32(b, 0, kDiscoveryBinarySignature);
  put16(b, 4, 1);
  put16(b, 6, 0);
  put16(b, 10, uint16_t(b.size()));
  put16(b, 12, uint16_t(ip_off));
  put16(b, 14, byte_sum(b, ip_off, ip_off + ip_size));
  put16(b, 16, uint16_t(ip_size));
  put16(b, 8, byte_sum(b, 10, b.size()));
  return b;
}

}  // namespace capgraph::emu
