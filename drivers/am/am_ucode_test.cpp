// am_ucode: one synthetic file per kind the gfx11 boot loads, written here
// with the header layouts of Linux's amdgpu_ucode.h (see am_ucode.h) around
// our own payload bytes, each piece filled with its own pattern so a wrong
// offset or size shows; then damaged headers.
#include "am_ucode.h"

#include <doctest/doctest.h>

#include <map>

using namespace capgraph::am;

namespace {

void put16(std::vector<uint8_t> &b, size_t at, uint16_t v) {
  b[at] = uint8_t(v);
  b[at + 1] = uint8_t(v >> 8);
}
void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}
std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed * 37 + i * 11 + (i >> 8));
  return v;
}

struct region {
  uint32_t offset, size;
  uint8_t seed;
};

// A file of `total` bytes: the common header (payload = [256, 256 + ucode_size)),
// extra header words, and regions filled with pattern(size, seed).
std::vector<uint8_t> file_build(uint32_t total, uint16_t major, uint16_t minor, uint32_t ucode_size,
                                const std::map<size_t, uint32_t> &words,
                                const std::vector<region> &regions) {
  std::vector<uint8_t> b(total, 0);
  put32(b, 0, total);
  put32(b, 4, 256);
  put16(b, 8, major);
  put16(b, 10, minor);
  put32(b, 16, 0x1ee);
  put32(b, 20, ucode_size);
  put32(b, 24, 256);
  for (const auto &[at, v] : words) put32(b, at, v);
  for (const region &r : regions) {
    auto p = pattern(r.size, r.seed);
    std::copy(p.begin(), p.end(), b.begin() + r.offset);
  }
  return b;
}

// gfx1100-shaped files, sizes scaled down (real ones: usbgpu_am_plan.md §1.9).
std::vector<uint8_t> smu_build() {
  return file_build(256 + 2000, 2, 1, 2000, {}, {{256, 2000, 1}});
}
std::vector<uint8_t> sdma_build() {
  // ctx at the payload start, ctl after it.
  return file_build(256 + 1700 + 1650, 2, 0, 3350, {{36, 1700}, {48, 256 + 1700}, {52, 1650}},
                    {{256, 1700, 2}, {256 + 1700, 1650, 3}});
}
std::vector<uint8_t> mec_build() {
  return file_build(
      256 + 2600 + 1400, 2, 0, 4000,
      {{36, 2600}, {40, 0}, {44, 1400}, {48, 256 + 2600}, {52, 0x3000}, {56, 0x70000}},
      {{256, 2600, 4}, {256 + 2600, 1400, 5}});
}
std::vector<uint8_t> imu_build() {
  return file_build(256 + 660 + 640, 1, 0, 1300, {{32, 660}, {36, 0}, {40, 640}, {44, 660}},
                    {{256, 660, 6}, {256 + 660, 640, 7}});
}
std::vector<uint8_t> rlc_build(uint16_t minor = 3) {
  // G first (the common payload), then IRAM, DRAM, P, V.
  const uint32_t g = 250, iram = 660, dram = 330, p = 87, v = 128;
  uint32_t at = 256;
  const uint32_t g_at = at, iram_at = (at += g), dram_at = (at += iram), p_at = (at += dram),
                 v_at = (at += p);
  at += v;
  return file_build(
      at, 2, minor, g,
      {{156, iram},
       {160, iram_at},
       {164, dram},
       {168, dram_at},
       {180, p},
       {184, p_at},
       {196, v},
       {200, v_at}},
      {{g_at, g, 8}, {iram_at, iram, 9}, {dram_at, dram, 10}, {p_at, p, 11}, {v_at, v, 12}});
}

ucode_file_pieces pieces_of(const std::string &name, std::vector<uint8_t> b, firmware_file *keep) {
  std::string err;
  REQUIRE_MESSAGE(firmware_parse(name, std::move(b), keep, &err), err);
  ucode_file_pieces p;
  REQUIRE_MESSAGE(ucode_locate(*keep, &p, &err), err);
  return p;
}

struct expect {
  uint32_t type;
  const char *name;
  size_t size;
  uint8_t seed;
};

void pieces_check(const std::string &file, std::vector<uint8_t> b,
                  const std::vector<expect> &want) {
  firmware_file f;
  const ucode_file_pieces p = pieces_of(file, std::move(b), &f);
  REQUIRE(p.pieces.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const ucode_piece &pc = p.pieces[i];
    CHECK(pc.fw_type == want[i].type);
    CHECK(std::string(pc.name) == want[i].name);
    REQUIRE(pc.size == want[i].size);
    CHECK_MESSAGE(
        std::vector<uint8_t>(f.bytes.begin() + pc.offset, f.bytes.begin() + pc.offset + pc.size) ==
            pattern(want[i].size, want[i].seed),
        pc.name);
  }
}

std::string pieces_error(const std::string &name, std::vector<uint8_t> b) {
  firmware_file f;
  std::string err;
  REQUIRE_MESSAGE(firmware_parse(name, std::move(b), &f, &err), err);
  ucode_file_pieces p;
  CHECK_FALSE(ucode_locate(f, &p, &err));
  CHECK(p.pieces.empty());
  CHECK(err.find(name) != std::string::npos);
  return err;
}

bool has(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("ucode: each gfx11 file gives its LOAD_IP_FW pieces at the right bytes") {
  pieces_check("smu_13_0_0.bin", smu_build(), {{gfx_fw_smu, "SMU", 2000, 1}});
  pieces_check("sdma_6_0_0.bin", sdma_build(),
               {{gfx_fw_sdma_ucode_th1, "SDMA_UCODE_TH1", 1650, 3},
                {gfx_fw_sdma_ucode_th0, "SDMA_UCODE_TH0", 1700, 2}});
  pieces_check("gc_11_0_0_mec.bin", mec_build(),
               {{gfx_fw_rs64_mec, "RS64_MEC", 2600, 4},
                {gfx_fw_rs64_mec_p0_stack, "RS64_MEC_P0_STACK", 1400, 5}});
  pieces_check("gc_11_0_0_imu.bin", imu_build(),
               {{gfx_fw_imu_i, "IMU_I", 660, 6}, {gfx_fw_imu_d, "IMU_D", 640, 7}});
  pieces_check("gc_11_0_0_rlc.bin", rlc_build(),
               {{gfx_fw_rlc_iram, "RLC_IRAM", 660, 9},
                {gfx_fw_rlc_dram_boot, "RLC_DRAM_BOOT", 330, 10},
                {gfx_fw_rlc_p, "RLC_P", 87, 11},
                {gfx_fw_rlc_v, "RLC_V", 128, 12},
                {gfx_fw_rlc_g, "RLC_G", 250, 8}});
  firmware_file f;
  CHECK(pieces_of("gc_11_0_0_mec.bin", mec_build(), &f).mec_ucode_start == 0x7000000003000ull);
  CHECK(pieces_of("gc_11_0_0_rlc.bin", rlc_build(4), &f).pieces.size() == 5);  // v2.4 extends v2.3
}

TEST_CASE("ucode: wrong header versions and unknown files are refused by name") {
  auto b = sdma_build();
  put16(b, 8, 1);
  CHECK(has(pieces_error("sdma_6_0_0.bin", b),
            "header_version (byte 8) is 1.0; expected sdma_firmware_header_v2.0"));
  CHECK(has(pieces_error("gc_11_0_0_rlc.bin", rlc_build(2)),
            "is 2.2; expected rlc_firmware_header_v2.3"));
  b = imu_build();
  put16(b, 8, 2);
  CHECK(has(pieces_error("gc_11_0_0_imu.bin", b), "imu_firmware_header_v1.0"));
  CHECK(has(pieces_error("gc_11_0_0_pfp.bin", smu_build()), "no LOAD_IP_FW pieces"));
}

TEST_CASE("ucode: pieces past the end, empty pieces and short headers name the field") {
  auto b = sdma_build();
  put32(b, 52, 1651);  // ctl one byte too long
  std::string err = pieces_error("sdma_6_0_0.bin", b);
  CHECK(has(err, "SDMA_UCODE_TH1 runs past the end"));
  CHECK(has(err, "ctl_ucode_offset (byte 48)"));

  b = mec_build();
  put32(b, 48, 0xFFFFFFF0u);
  CHECK(has(pieces_error("gc_11_0_0_mec.bin", b), "RS64_MEC_P0_STACK runs past the end"));

  b = imu_build();
  put32(b, 40, 641);  // IMU_D runs one byte past
  CHECK(has(pieces_error("gc_11_0_0_imu.bin", b), "IMU_D runs past the end"));

  b = rlc_build();
  put32(b, 180, 0);
  CHECK(has(pieces_error("gc_11_0_0_rlc.bin", b), "RLC_P is empty"));

  // A v2.3 RLC header cut before its rlcv words: the common header is
  // consistent (payload inside the file), the RLC fields are not there.
  std::vector<uint8_t> s(190, 0);
  put32(s, 0, 190);
  put32(s, 4, 32);
  put16(s, 8, 2);
  put16(s, 10, 3);
  put32(s, 20, 4);
  put32(s, 24, 32);
  CHECK(has(pieces_error("gc_11_0_0_rlc.bin", s), "truncated: rlcv_ucode_size_bytes (byte 196)"));
}
