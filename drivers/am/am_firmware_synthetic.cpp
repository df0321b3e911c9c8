#include "am_firmware_synthetic.h"

#include <fstream>

#include "am_firmware.h"
#include "am_ucode.h"

namespace capgraph::am {

namespace {

constexpr uint32_t kHeaderBytes = 256;  // room for every header below; pieces start here

void put16(std::vector<uint8_t> &b, size_t at, uint16_t v) {
  b[at] = uint8_t(v);
  b[at + 1] = uint8_t(v >> 8);
}
void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}

struct file_builder {
  std::vector<uint8_t> b = std::vector<uint8_t>(kHeaderBytes, 0);
  // Appends a piece, 256-byte aligned; returns its offset.
  uint32_t piece(uint32_t type, uint32_t size) {
    b.resize((b.size() + 255) & ~size_t(255), 0);
    const uint32_t at = uint32_t(b.size());
    for (uint32_t i = 0; i < size; ++i) b.push_back(synthetic_firmware_byte(type, i));
    return at;
  }
  // The common header (amdgpu_ucode.h), written last when sizes are known.
  std::vector<uint8_t> finish(uint16_t major, uint16_t minor, uint32_t ucode_version,
                              uint32_t payload_size) {
    put32(b, 0, uint32_t(b.size()));
    put32(b, 4, kHeaderBytes);
    put16(b, 8, major);
    put16(b, 10, minor);
    put32(b, 16, ucode_version);
    put32(b, 20, payload_size);
    put32(b, 24, kHeaderBytes);
    return std::move(b);
  }
};

std::vector<uint8_t> sos_build() {
  // Bookworm's psp_13_0_0_sos.bin bins (usbgpu_am_plan.md §1.9).
  const struct {
    uint32_t type, size;
  } bins[] = {{psp_fw_sys_drv, 157584}, {psp_fw_sos, 99200}, {psp_fw_toc, 2304},
              {psp_fw_kdb, 5888},       {psp_fw_spl, 672},   {psp_fw_rl, 2400}};
  file_builder f;
  put32(f.b, 32, 6);
  for (uint32_t i = 0; i < 6; ++i) {
    const uint32_t at = f.piece(kSyntheticSosTypeBase + bins[i].type, bins[i].size);
    const size_t d = 36 + 16 * i;
    put32(f.b, d, bins[i].type);
    put32(f.b, d + 4, 0x100 + i);
    put32(f.b, d + 8, at - kHeaderBytes);  // from ucode_array_offset_bytes
    put32(f.b, d + 12, bins[i].size);
  }
  const uint32_t payload = uint32_t(f.b.size()) - kHeaderBytes;
  return f.finish(2, 0, 0x00310025, payload);
}

std::vector<uint8_t> smu_build() {
  file_builder f;
  const uint32_t size = 261632;
  f.piece(gfx_fw_smu, size);
  return f.finish(2, 1, 0x004e4b00, size);
}

std::vector<uint8_t> sdma_build() {
  file_builder f;
  const uint32_t ctx = 17408, ctl = 16896;
  f.piece(gfx_fw_sdma_ucode_th0, ctx);
  const uint32_t ctl_at = f.piece(gfx_fw_sdma_ucode_th1, ctl);
  put32(f.b, 36, ctx);
  put32(f.b, 48, ctl_at);
  put32(f.b, 52, ctl);
  return f.finish(2, 0, 0x13, uint32_t(f.b.size()) - kHeaderBytes);
}

std::vector<uint8_t> mec_build() {
  file_builder f;
  const uint32_t code = 267552, data = 139264;
  const uint64_t start = 0x7000000003000ull;
  f.piece(gfx_fw_rs64_mec, code);
  const uint32_t data_at = f.piece(gfx_fw_rs64_mec_p0_stack, data);
  put32(f.b, 36, code);
  put32(f.b, 44, data);
  put32(f.b, 48, data_at);
  put32(f.b, 52, uint32_t(start));
  put32(f.b, 56, uint32_t(start >> 32));
  return f.finish(2, 0, 0x1ee, uint32_t(f.b.size()) - kHeaderBytes);
}

std::vector<uint8_t> imu_build() {
  // IMU_D follows IMU_I directly (no alignment gap): that is how Linux finds it.
  std::vector<uint8_t> b(kHeaderBytes, 0);
  const uint32_t iram = 66048, dram = 66048;
  for (uint32_t i = 0; i < iram; ++i) b.push_back(synthetic_firmware_byte(gfx_fw_imu_i, i));
  for (uint32_t i = 0; i < dram; ++i) b.push_back(synthetic_firmware_byte(gfx_fw_imu_d, i));
  put32(b, 32, iram);
  put32(b, 36, kHeaderBytes);
  put32(b, 40, dram);
  put32(b, 44, kHeaderBytes + iram);
  file_builder f;
  f.b = std::move(b);
  return f.finish(1, 0, 0x0b1f3600, iram + dram);
}

std::vector<uint8_t> rlc_build() {
  file_builder f;
  const uint32_t g = 25088, iram = 66048, dram = 33280, p = 8704, v = 12800;
  f.piece(gfx_fw_rlc_g, g);
  const uint32_t iram_at = f.piece(gfx_fw_rlc_iram, iram),
                 dram_at = f.piece(gfx_fw_rlc_dram_boot, dram), p_at = f.piece(gfx_fw_rlc_p, p),
                 v_at = f.piece(gfx_fw_rlc_v, v);
  const std::pair<size_t, uint32_t> words[] = {{156, iram},    {160, iram_at}, {164, dram},
                                               {168, dram_at}, {180, p},       {184, p_at},
                                               {196, v},       {200, v_at}};
  for (const auto &[at, val] : words) put32(f.b, at, val);
  return f.finish(2, 3, 0x6e, g);
}

}  // namespace

uint8_t synthetic_firmware_byte(uint32_t type, size_t i) {
  return uint8_t((i * 131 + type * 29 + (i >> 8) * 7) ^ 0xA5);
}

std::vector<uint8_t> synthetic_firmware_file(const std::string &name) {
  if (name == "psp_13_0_0_sos.bin") return sos_build();
  if (name == "smu_13_0_0.bin") return smu_build();
  if (name == "sdma_6_0_0.bin") return sdma_build();
  if (name == "gc_11_0_0_mec.bin") return mec_build();
  if (name == "gc_11_0_0_imu.bin") return imu_build();
  if (name == "gc_11_0_0_rlc.bin") return rlc_build();
  return {};
}

bool synthetic_firmware_write(const std::string &dir, std::string *err) {
  for (const char *name : {"psp_13_0_0_sos.bin", "smu_13_0_0.bin", "sdma_6_0_0.bin",
                           "gc_11_0_0_mec.bin", "gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin"}) {
    const std::vector<uint8_t> b = synthetic_firmware_file(name);
    const std::string path = dir + "/" + name;
    std::ofstream o(path, std::ios::binary | std::ios::trunc);
    if (!o || !o.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size())) ||
        !o.flush()) {
      *err = "synthetic AMD firmware: cannot write " + path;
      return false;
    }
  }
  return true;
}

}  // namespace capgraph::am
