// am_discovery — the IP discovery table an AMD GPU keeps at the top of its
// VRAM: which IP blocks the chip has (GC, MP0/MP1, SDMA, MMHUB, ...), their
// versions and their register base addresses. The AM driver reads it first
// and refuses a chip whose versions it does not know.
//
// Layout (little-endian, packed), from Linux drivers/gpu/drm/amd/include/
// discovery.h (MIT) and the checks of amdgpu_discovery.c:
//   binary_header  @0: u32 signature 0x28211407, u16 version major/minor,
//                  u16 binary_checksum (16-bit byte sum of bytes
//                  [10, binary_size)), u16 binary_size, then 6 table_info
//                  {u16 offset, u16 checksum, u16 size, u16 pad}; table 0 is
//                  the IP discovery table, 1 GC info, 2 harvest info.
//   ip_discovery_header @table_info[0].offset: u32 signature 0x53445049
//                  ("IPDS"), u16 version, u16 size (its checksum covers that
//                  many bytes), u32 id, u16 num_dies, 16 x {u16 die_id,
//                  u16 die_offset}, then (version 4) a byte whose bit 0 says
//                  base addresses are 64-bit.
//   die_header     @die_offset: u16 die_id, u16 num_ips, then num_ips entries
//                  of {u16 hw_id, u8 instance, u8 num_base_address, u8 major,
//                  u8 minor, u8 revision, u8 (v1/v2: harvest in bits 3:0;
//                  v3/v4: sub_revision 3:0, variant 7:4)} + num_base_address
//                  u32 (u64 with the version-4 flag) base addresses.
// hw ids: Linux drivers/gpu/drm/amd/include/soc15_hw_ip.h. Where the table
// lives: tinygrad amdev.py `_run_discovery` (VRAM end - 64 KiB, 10 KiB), as
// summarised in shared/research/usbgpu_am_plan.md §1.2.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::am {

constexpr uint32_t kDiscoveryBinarySignature = 0x28211407u;
constexpr uint32_t kDiscoveryIpSignature = 0x53445049u;
constexpr uint64_t kDiscoveryOffsetFromVramEnd = 64 * 1024;
constexpr size_t kDiscoveryTableBytes = 10 * 1024;
constexpr int kDiscoveryMaxDies = 16;

// soc15_hw_ip.h hardware ids of the blocks a gfx11 boot touches.
enum hw_id : uint16_t {
  hw_id_mp1 = 1,
  hw_id_gc = 11,
  hw_id_mmhub = 34,
  hw_id_osssys = 40,
  hw_id_hdp = 41,
  hw_id_sdma0 = 42,
  hw_id_sdma1 = 43,
  hw_id_nbif = 108,
  hw_id_mp0 = 255,
};

struct ip_block {
  uint16_t die = 0;
  uint16_t hw_id = 0;
  uint8_t instance = 0;
  uint8_t major = 0, minor = 0, revision = 0;
  uint8_t harvest = 0;         // table versions 1-2
  uint8_t sub_revision = 0;    // table versions 3-4
  uint8_t variant = 0;         // table versions 3-4
  std::vector<uint64_t> base;  // register segment bases (dword addresses)
};

struct discovery_table {
  uint16_t version_major = 0, version_minor = 0;
  uint16_t ip_table_version = 0;
  std::vector<ip_block> ips;
  const ip_block *find(uint16_t hw_id, uint8_t instance = 0) const;
};

// Parses and checks a discovery binary (signatures, both checksums, every
// offset and count against the bytes given). False with a message naming
// the field and its byte offset when anything is off; *out is then empty.
bool discovery_parse(const uint8_t *bin, size_t n, discovery_table *out, std::string *err);

// "GC 11.0.0" etc. for messages.
std::string ip_block_name(const ip_block &ip);

}  // namespace capgraph::am
