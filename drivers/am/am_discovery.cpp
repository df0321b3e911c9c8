#include "am_discovery.h"

#include <cstdio>

namespace capgraph::am {

namespace {

// Bounds-checked little-endian reads over the binary.
struct reader {
  const uint8_t *p;
  size_t n;
  std::string *err;
  bool ok = true;
  bool need(size_t off, size_t len, const char *what) {
    if (ok && (off > n || len > n - off)) {
      char b[160];
      std::snprintf(b, sizeof b, "IP discovery: %s at byte %zu (+%zu) runs past the %zu bytes read",
                    what, off, len, n);
      *err = b;
      ok = false;
    }
    return ok;
  }
  uint8_t u8(size_t off, const char *what) { return need(off, 1, what) ? p[off] : 0; }
  uint16_t u16(size_t off, const char *what) {
    return need(off, 2, what) ? uint16_t(p[off] | p[off + 1] << 8) : 0;
  }
  uint32_t u32(size_t off, const char *what) {
    return need(off, 4, what)
               ? uint32_t(p[off] | p[off + 1] << 8 | p[off + 2] << 16 | uint32_t(p[off + 3]) << 24)
               : 0;
  }
  uint64_t u64(size_t off, const char *what) {
    return need(off, 8, what) ? uint64_t(u32(off, what)) | uint64_t(u32(off + 4, what)) << 32 : 0;
  }
};

uint16_t byte_sum(const uint8_t *p, size_t n) {
  uint16_t s = 0;
  for (size_t i = 0; i < n; ++i) s = uint16_t(s + p[i]);
  return s;
}

bool fail(std::string *err, const char *fmt, unsigned long a, unsigned long b) {
  char m[200];
  std::snprintf(m, sizeof m, fmt, a, b);
  *err = std::string("IP discovery: ") + m;
  return false;
}

// binary_header field offsets (discovery.h).
constexpr size_t kBinVersionMajor = 4, kBinVersionMinor = 6, kBinChecksum = 8, kBinSize = 10,
                 kBinTables = 12, kTableInfoSize = 8;
// ip_discovery_header field offsets.
constexpr size_t kIpVersion = 4, kIpSize = 6, kIpNumDies = 12, kIpDieInfo = 14, kIpFlags = 78;
constexpr size_t kIpEntryHead = 8;

}  // namespace

const ip_block *discovery_table::find(uint16_t hw, uint8_t instance) const {
  for (const ip_block &ip : ips)
    if (ip.hw_id == hw && ip.instance == instance) return &ip;
  return nullptr;
}

std::string ip_block_name(const ip_block &ip) {
  const char *name = nullptr;
  switch (ip.hw_id) {
    case hw_id_mp1: name = "MP1"; break;
    case hw_id_gc: name = "GC"; break;
    case hw_id_mmhub: name = "MMHUB"; break;
    case hw_id_osssys: name = "OSSSYS"; break;
    case hw_id_hdp: name = "HDP"; break;
    case hw_id_sdma0: name = "SDMA0"; break;
    case hw_id_sdma1: name = "SDMA1"; break;
    case hw_id_nbif: name = "NBIF"; break;
    case hw_id_mp0: name = "MP0"; break;
    default: break;
  }
  char b[64];
  if (name)
    std::snprintf(b, sizeof b, "%s %u.%u.%u", name, ip.major, ip.minor, ip.revision);
  else
    std::snprintf(b, sizeof b, "hw id %u %u.%u.%u", ip.hw_id, ip.major, ip.minor, ip.revision);
  return b;
}

bool discovery_parse(const uint8_t *bin, size_t n, discovery_table *out, std::string *err) {
  *out = discovery_table{};
  reader r{bin, n, err};
  const uint32_t sig = r.u32(0, "binary signature");
  if (!r.ok) return false;
  if (sig != kDiscoveryBinarySignature)
    return fail(err,
                "binary signature is 0x%08lx, expected 0x%08lx (not a discovery table, or VRAM "
                "not readable)",
                sig, kDiscoveryBinarySignature);
  discovery_table t;
  t.version_major = r.u16(kBinVersionMajor, "binary version");
  t.version_minor = r.u16(kBinVersionMinor, "binary version");
  const uint16_t bin_checksum = r.u16(kBinChecksum, "binary checksum");
  const uint16_t bin_size = r.u16(kBinSize, "binary size");
  if (!r.ok) return false;
  if (bin_size < kBinTables + kTableInfoSize)
    return fail(err, "binary_size %lu is smaller than its own header (%lu bytes)", bin_size,
                kBinTables + kTableInfoSize);
  if (!r.need(0, bin_size, "the binary (binary_size)")) return false;
  if (byte_sum(bin + kBinSize, bin_size - kBinSize) != bin_checksum)
    return fail(err, "binary checksum mismatch: stored 0x%04lx, bytes sum to 0x%04lx", bin_checksum,
                byte_sum(bin + kBinSize, bin_size - kBinSize));
  // Everything below stays inside the binary_size bytes the checksum covered.
  r.n = bin_size;

  const size_t ip_off = r.u16(kBinTables, "IP discovery table offset");
  const uint16_t ip_checksum = r.u16(kBinTables + 2, "IP discovery table checksum");
  const uint32_t ip_sig = r.u32(ip_off, "IP discovery header signature");
  if (!r.ok) return false;
  if (ip_sig != kDiscoveryIpSignature)
    return fail(err, "IP discovery header signature is 0x%08lx, expected 0x%08lx", ip_sig,
                kDiscoveryIpSignature);
  t.ip_table_version = r.u16(ip_off + kIpVersion, "IP discovery header version");
  const uint16_t ip_size = r.u16(ip_off + kIpSize, "IP discovery header size");
  const uint16_t num_dies = r.u16(ip_off + kIpNumDies, "IP discovery die count");
  if (!r.need(ip_off, ip_size, "the IP discovery table (its size field)")) return false;
  if (byte_sum(bin + ip_off, ip_size) != ip_checksum)
    return fail(err, "IP discovery table checksum mismatch: stored 0x%04lx, bytes sum to 0x%04lx",
                ip_checksum, byte_sum(bin + ip_off, ip_size));
  if (t.ip_table_version < 1 || t.ip_table_version > 4)
    return fail(err, "IP discovery table version %lu is not one we read (1..%lu)",
                t.ip_table_version, 4);
  if (num_dies == 0 || num_dies > kDiscoveryMaxDies)
    return fail(err, "die count %lu outside 1..%lu", num_dies, kDiscoveryMaxDies);
  const bool base64 =
      t.ip_table_version == 4 && (r.u8(ip_off + kIpFlags, "IP discovery flags") & 1);
  const size_t base_bytes = base64 ? 8 : 4;

  for (size_t d = 0; d < num_dies; ++d) {
    const size_t info = ip_off + kIpDieInfo + 4 * d;
    const uint16_t die_id = r.u16(info, "die id");
    const size_t die_off = r.u16(info + 2, "die offset");
    const uint16_t num_ips = r.u16(die_off + 2, "die IP count");
    if (!r.ok) return false;
    size_t at = die_off + 4;
    for (size_t i = 0; i < num_ips; ++i) {
      ip_block ip;
      ip.die = die_id;
      ip.hw_id = r.u16(at, "IP entry");
      ip.instance = r.u8(at + 2, "IP entry");
      const uint8_t nbase = r.u8(at + 3, "IP entry");
      ip.major = r.u8(at + 4, "IP entry");
      ip.minor = r.u8(at + 5, "IP entry");
      ip.revision = r.u8(at + 6, "IP entry");
      const uint8_t b7 = r.u8(at + 7, "IP entry");
      if (t.ip_table_version >= 3) {
        ip.sub_revision = b7 & 0xF;
        ip.variant = b7 >> 4;
      } else {
        ip.harvest = b7 & 0xF;
      }
      if (!r.need(at + kIpEntryHead, nbase * base_bytes, "IP entry base addresses")) return false;
      for (size_t k = 0; k < nbase; ++k) {
        const size_t o = at + kIpEntryHead + k * base_bytes;
        ip.base.push_back(base64 ? r.u64(o, "base address") : r.u32(o, "base address"));
      }
      at += kIpEntryHead + nbase * base_bytes;
      t.ips.push_back(std::move(ip));
    }
  }
  if (!r.ok) return false;
  *out = std::move(t);
  return true;
}

}  // namespace capgraph::am
