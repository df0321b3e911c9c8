#include "am_ucode.h"

namespace capgraph::am {

namespace {

uint32_t le32(const firmware_file &f, size_t at) {
  const uint8_t *p = f.bytes.data() + at;
  return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24);
}

bool ends_with(const std::string &s, const char *tail) {
  const std::string t = tail;
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

struct piece_reader {
  const firmware_file &f;
  std::string *err;
  ucode_file_pieces out;

  bool fail(const std::string &what) {
    *err = "AMD firmware " + f.name + ": " + what;
    return false;
  }
  // A header word, which must lie inside the file.
  bool word(size_t at, const char *field, uint32_t *v) {
    if (at + 4 > f.bytes.size())
      return fail(std::string("truncated: ") + field + " (byte " + std::to_string(at) +
                  ") lies past the end of the " + std::to_string(f.bytes.size()) + "-byte file");
    *v = le32(f, at);
    return true;
  }
  bool version(uint16_t major, uint16_t min_minor, const char *header) {
    const firmware_header &h = f.header;
    if (h.header_version_major != major || h.header_version_minor < min_minor)
      return fail("header_version (byte 8) is " + std::to_string(h.header_version_major) + "." +
                  std::to_string(h.header_version_minor) + "; expected " + header);
    return true;
  }
  bool add(uint32_t type, const char *name, uint64_t offset, uint64_t size, const char *fields) {
    if (size == 0) return fail(std::string(name) + " is empty (" + fields + ")");
    if (offset + size > f.bytes.size())
      return fail(std::string(name) + " runs past the end of the file: " + fields + " give bytes " +
                  std::to_string(offset) + ".." + std::to_string(offset + size) + " of " +
                  std::to_string(f.bytes.size()));
    out.pieces.push_back({type, name, uint32_t(offset), uint32_t(size)});
    return true;
  }
};

}  // namespace

bool ucode_locate(const firmware_file &f, ucode_file_pieces *out, std::string *err) {
  *out = ucode_file_pieces{};
  piece_reader r{f, err, {}};
  const firmware_header &h = f.header;
  const uint64_t payload = h.ucode_array_offset_bytes;
  const std::string &name = f.name;
  if (name.rfind("smu_", 0) == 0) {
    if (!r.add(gfx_fw_smu, "SMU", payload, h.ucode_size_bytes,
               "ucode_array_offset_bytes, ucode_size_bytes"))
      return false;
  } else if (name.rfind("sdma_", 0) == 0) {
    uint32_t ctx_size, ctl_offset, ctl_size;
    if (!r.version(2, 0, "sdma_firmware_header_v2.0") ||
        !r.word(36, "ctx_ucode_size_bytes", &ctx_size) ||
        !r.word(48, "ctl_ucode_offset", &ctl_offset) ||
        !r.word(52, "ctl_ucode_size_bytes", &ctl_size))
      return false;
    // tinygrad loads the control thread first (usbgpu_am_plan.md §1.9).
    if (!r.add(gfx_fw_sdma_ucode_th1, "SDMA_UCODE_TH1", ctl_offset, ctl_size,
               "ctl_ucode_offset (byte 48), ctl_ucode_size_bytes (byte 52)") ||
        !r.add(gfx_fw_sdma_ucode_th0, "SDMA_UCODE_TH0", payload, ctx_size,
               "ucode_array_offset_bytes (byte 24), ctx_ucode_size_bytes (byte 36)"))
      return false;
  } else if (ends_with(name, "_mec.bin")) {
    uint32_t code_size, data_size, data_offset, start_lo, start_hi;
    if (!r.version(2, 0, "gfx_firmware_header_v2.0 (RS64)") ||
        !r.word(36, "ucode_size_bytes", &code_size) || !r.word(44, "data_size_bytes", &data_size) ||
        !r.word(48, "data_offset_bytes", &data_offset) ||
        !r.word(52, "ucode_start_addr_lo", &start_lo) ||
        !r.word(56, "ucode_start_addr_hi", &start_hi))
      return false;
    if (!r.add(gfx_fw_rs64_mec, "RS64_MEC", payload, code_size,
               "ucode_array_offset_bytes (byte 24), ucode_size_bytes (byte 36)") ||
        !r.add(gfx_fw_rs64_mec_p0_stack, "RS64_MEC_P0_STACK", data_offset, data_size,
               "data_offset_bytes (byte 48), data_size_bytes (byte 44)"))
      return false;
    r.out.mec_ucode_start = uint64_t(start_hi) << 32 | start_lo;
  } else if (ends_with(name, "_imu.bin")) {
    uint32_t iram, dram;
    if (!r.version(1, 0, "imu_firmware_header_v1.0") ||
        !r.word(32, "imu_iram_ucode_size_bytes", &iram) ||
        !r.word(40, "imu_dram_ucode_size_bytes", &dram))
      return false;
    if (!r.add(gfx_fw_imu_i, "IMU_I", payload, iram,
               "ucode_array_offset_bytes (byte 24), imu_iram_ucode_size_bytes (byte 32)") ||
        !r.add(gfx_fw_imu_d, "IMU_D", payload + iram, dram,
               "ucode_array_offset_bytes + imu_iram_ucode_size_bytes, imu_dram_ucode_size_bytes "
               "(byte 40)"))
      return false;
  } else if (ends_with(name, "_rlc.bin")) {
    uint32_t v[8];
    static const char *fields[8] = {"rlc_iram_ucode_size_bytes", "rlc_iram_ucode_offset_bytes",
                                    "rlc_dram_ucode_size_bytes", "rlc_dram_ucode_offset_bytes",
                                    "rlcp_ucode_size_bytes",     "rlcp_ucode_offset_bytes",
                                    "rlcv_ucode_size_bytes",     "rlcv_ucode_offset_bytes"};
    static const size_t at[8] = {156, 160, 164, 168, 180, 184, 196, 200};
    if (!r.version(2, 3, "rlc_firmware_header_v2.3 or later")) return false;
    for (int i = 0; i < 8; ++i)
      if (!r.word(at[i], fields[i], &v[i])) return false;
    if (!r.add(gfx_fw_rlc_iram, "RLC_IRAM", v[1], v[0],
               "rlc_iram_ucode_offset/size_bytes (bytes 160/156)") ||
        !r.add(gfx_fw_rlc_dram_boot, "RLC_DRAM_BOOT", v[3], v[2],
               "rlc_dram_ucode_offset/size_bytes (bytes 168/164)") ||
        !r.add(gfx_fw_rlc_p, "RLC_P", v[5], v[4], "rlcp_ucode_offset/size_bytes (bytes 184/180)") ||
        !r.add(gfx_fw_rlc_v, "RLC_V", v[7], v[6], "rlcv_ucode_offset/size_bytes (bytes 200/196)") ||
        !r.add(gfx_fw_rlc_g, "RLC_G", payload, h.ucode_size_bytes,
               "ucode_array_offset_bytes, ucode_size_bytes"))
      return false;
  } else {
    return r.fail(
        "no LOAD_IP_FW pieces are known for this file (PSP sOS files go through the bootloader)");
  }
  *out = std::move(r.out);
  return true;
}

}  // namespace capgraph::am
