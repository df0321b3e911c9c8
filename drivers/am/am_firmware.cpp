#include "am_firmware.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace capgraph::am {

namespace {

uint16_t le16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }
uint32_t le32(const uint8_t *p) {
  return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24);
}

bool fail(std::string *err, const std::string &name, const std::string &what) {
  *err = "AMD firmware " + name + ": " + what;
  return false;
}

std::string num(uint64_t v) { return std::to_string(v); }

bool ends_with(const std::string &s, const char *tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

// common_firmware_header field offsets (amdgpu_ucode.h).
constexpr size_t kSizeBytes = 0, kHeaderSizeBytes = 4, kHeaderVersionMajor = 8,
                 kHeaderVersionMinor = 10, kIpVersionMajor = 12, kIpVersionMinor = 14,
                 kUcodeVersion = 16, kUcodeSizeBytes = 20, kUcodeArrayOffsetBytes = 24, kCrc32 = 28;
constexpr size_t kPspBinCount = 32, kPspBinDescBytes = 16;

bool psp_bins_parse(firmware_file &f, std::string *err) {
  const std::string &name = f.name;
  const firmware_header &h = f.header;
  const uint64_t n = f.bytes.size();
  if (h.header_version_major != 2 || h.header_version_minor > 1)
    return fail(err, name,
                "header_version (byte 8) is " + num(h.header_version_major) + "." +
                    num(h.header_version_minor) +
                    "; a PSP sOS file needs psp_firmware_header_v2.0 or v2.1");
  const size_t desc_at = h.header_version_minor == 1 ? 40 : 36;
  if (n < desc_at)
    return fail(err, name, "truncated: psp_fw_bin_count (byte 32) lies past the end of the file");
  const uint32_t count = le32(&f.bytes[kPspBinCount]);
  if (count == 0 || count >= kFirmwarePspMaxBins)
    return fail(err, name,
                "psp_fw_bin_count (byte 32) is " + num(count) + "; expected 1 to " +
                    num(kFirmwarePspMaxBins - 1));
  const uint64_t table_end = desc_at + uint64_t(count) * kPspBinDescBytes;
  if (table_end > n)
    return fail(err, name,
                "truncated: " + num(count) + " psp_fw_bin descriptors end at byte " +
                    num(table_end) + ", past the " + num(n) + " bytes of the file");
  if (table_end > h.ucode_array_offset_bytes)
    return fail(err, name,
                "the psp_fw_bin descriptors (bytes " + num(desc_at) + ".." + num(table_end) +
                    ") overlap the payload at ucode_array_offset_bytes " +
                    num(h.ucode_array_offset_bytes));
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t *d = &f.bytes[desc_at + i * kPspBinDescBytes];
    psp_bin b;
    b.fw_type = le32(d);
    b.fw_version = le32(d + 4);
    const uint32_t offset_bytes = le32(d + 8);
    b.size = le32(d + 12);
    const std::string field = "psp_fw_bin[" + num(i) + "] (" + psp_fw_type_name(b.fw_type) +
                              ", byte " + num(desc_at + i * kPspBinDescBytes) + ")";
    const uint64_t start = uint64_t(h.ucode_array_offset_bytes) + offset_bytes;
    if (b.size == 0) return fail(err, name, field + " has size_bytes 0");
    if (start + b.size > n)
      return fail(err, name,
                  field + " runs past the end of the file: ucode_array_offset_bytes " +
                      num(h.ucode_array_offset_bytes) + " + offset_bytes " + num(offset_bytes) +
                      " + size_bytes " + num(b.size) + " > " + num(n) + " bytes");
    if (f.psp_find(b.fw_type)) return fail(err, name, field + " repeats a type already described");
    b.offset = uint32_t(start);
    f.psp_bins.push_back(b);
  }
  for (uint32_t need : {uint32_t(psp_fw_sos), uint32_t(psp_fw_sys_drv)})
    if (!f.psp_find(need))
      return fail(err, name,
                  "has no " + psp_fw_type_name(need) + " bin among its psp_fw_bin descriptors");
  return true;
}

}  // namespace

const psp_bin *firmware_file::psp_find(uint32_t fw_type) const {
  for (const psp_bin &b : psp_bins)
    if (b.fw_type == fw_type) return &b;
  return nullptr;
}

std::string psp_fw_type_name(uint32_t t) {
  static const char *names[] = {"UNKNOWN", "SOS",          "SYS_DRV", "KDB",      "TOC",
                                "SPL",     "RL",           "SOC_DRV", "INTF_DRV", "DBG_DRV",
                                "RAS_DRV", "IPKEYMGR_DRV", "SPDM_DRV"};
  return t < sizeof names / sizeof *names ? names[t] : "type " + num(t);
}

std::string firmware_dir() {
  const char *env = std::getenv(kFirmwareDirEnv);
  return env && *env ? env : kFirmwareDirDefault;
}

bool firmware_parse(const std::string &name, std::vector<uint8_t> bytes, firmware_file *out,
                    std::string *err) {
  *out = firmware_file{};
  firmware_file f;
  f.name = name;
  f.bytes = std::move(bytes);
  const uint64_t n = f.bytes.size();
  if (n < kFirmwareCommonHeaderBytes)
    return fail(err, name,
                "truncated: " + num(n) + " bytes, shorter than the 32-byte common_firmware_header");
  const uint8_t *p = f.bytes.data();
  firmware_header &h = f.header;
  h.size_bytes = le32(p + kSizeBytes);
  h.header_size_bytes = le32(p + kHeaderSizeBytes);
  h.header_version_major = le16(p + kHeaderVersionMajor);
  h.header_version_minor = le16(p + kHeaderVersionMinor);
  h.ip_version_major = le16(p + kIpVersionMajor);
  h.ip_version_minor = le16(p + kIpVersionMinor);
  h.ucode_version = le32(p + kUcodeVersion);
  h.ucode_size_bytes = le32(p + kUcodeSizeBytes);
  h.ucode_array_offset_bytes = le32(p + kUcodeArrayOffsetBytes);
  h.crc32 = le32(p + kCrc32);
  // Linux's only check (amdgpu_ucode_validate); a short read or a file cut
  // in a copy shows here first.
  if (h.size_bytes != n)
    return fail(err, name,
                "size_bytes (byte 0) says " + num(h.size_bytes) + " but the file has " + num(n) +
                    " bytes (truncated or not an amdgpu firmware file)");
  if (h.header_size_bytes < kFirmwareCommonHeaderBytes || h.header_size_bytes > n)
    return fail(
        err, name,
        "header_size_bytes (byte 4) is " + num(h.header_size_bytes) + "; expected 32 to " + num(n));
  if (h.ucode_array_offset_bytes < kFirmwareCommonHeaderBytes)
    return fail(err, name,
                "ucode_array_offset_bytes (byte 24) is " + num(h.ucode_array_offset_bytes) +
                    ", inside the common header");
  if (uint64_t(h.ucode_array_offset_bytes) + h.ucode_size_bytes > n)
    return fail(err, name,
                "the payload runs past the end of the file: ucode_array_offset_bytes (byte 24) " +
                    num(h.ucode_array_offset_bytes) + " + ucode_size_bytes (byte 20) " +
                    num(h.ucode_size_bytes) + " > " + num(n) + " bytes");
  if (ends_with(name, "_sos.bin") && !psp_bins_parse(f, err)) return false;
  *out = std::move(f);
  return true;
}

bool firmware_read(const std::string &dir, const std::string &name, firmware_file *out,
                   std::string *err) {
  *out = firmware_file{};
  const std::string path = dir + "/" + name;
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) {
    const int e = errno;
    std::string m = "AMD firmware file " + path + " ";
    if (e != ENOENT && e != ENOTDIR) {
      *err = m + "cannot be read: " + std::strerror(e);
      return false;
    }
    m += "is missing: install Debian's " + std::string(kFirmwarePackage) +
         " package (non-free-firmware), or set " + kFirmwareDirEnv + " to a folder holding " + name;
    // Newer distributions ship zstd-compressed files; we read only plain ones.
    struct stat zst{};
    if (stat((path + ".zst").c_str(), &zst) == 0)
      m += " (" + path + ".zst exists: decompress it, e.g. with unzstd)";
    *err = m;
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *err = "AMD firmware file " + path + " is not a regular file";
    return false;
  }
  if (uint64_t(st.st_size) > kFirmwareMaxFileBytes) {
    *err = "AMD firmware file " + path + " is " + num(uint64_t(st.st_size)) +
           " bytes, larger than any amdgpu firmware (limit " + num(kFirmwareMaxFileBytes) + ")";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::vector<uint8_t> bytes(size_t(st.st_size));
  if (!in || !in.read(reinterpret_cast<char *>(bytes.data()), std::streamsize(bytes.size()))) {
    *err =
        "AMD firmware file " + path + " cannot be read (" + num(bytes.size()) + " bytes expected)";
    return false;
  }
  return firmware_parse(name, std::move(bytes), out, err);
}

bool firmware_read_all(const std::string &dir, const std::vector<std::string> &names,
                       std::vector<firmware_file> *out, std::string *err) {
  out->clear();
  std::vector<firmware_file> files;
  for (const std::string &name : names) {
    firmware_file f;
    if (!firmware_read(dir, name, &f, err)) return false;
    files.push_back(std::move(f));
  }
  *out = std::move(files);
  return true;
}

}  // namespace capgraph::am
