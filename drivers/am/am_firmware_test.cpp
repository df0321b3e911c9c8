// am_firmware: files written here with the header layouts of Linux's
// amdgpu_ucode.h (see am_firmware.h) around our own payload bytes: a PSP
// v2.0 sOS container with six bins shaped like MP0 13.0.0's (SYS_DRV, SOS,
// TOC, KDB, SPL, RL; the sizes are scaled down), a plain v1-style file, and
// every way they can be missing, cut or damaged.
#include "am_firmware.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace capgraph::am;
namespace fs = std::filesystem;

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
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed * 31 + i * 7);
  return v;
}

void common_put(std::vector<uint8_t> &b, uint32_t header_bytes, uint16_t major, uint16_t minor,
                uint32_t ucode_off, uint32_t ucode_size) {
  put32(b, 0, uint32_t(b.size()));
  put32(b, 4, header_bytes);
  put16(b, 8, major);
  put16(b, 10, minor);
  put16(b, 12, 13);  // ip version 13.0
  put16(b, 14, 0);
  put32(b, 16, 0x00310025);  // ucode_version, as bookworm's psp_13_0_0_sos.bin
  put32(b, 20, ucode_size);
  put32(b, 24, ucode_off);
  put32(b, 28, 0x12345678);
}

struct bin_spec {
  uint32_t type;
  size_t size;
};
const std::vector<bin_spec> sos_bins = {{psp_fw_sys_drv, 1584}, {psp_fw_sos, 992},
                                        {psp_fw_toc, 230},      {psp_fw_kdb, 588},
                                        {psp_fw_spl, 67},       {psp_fw_rl, 240}};
constexpr uint32_t kSosHeaderBytes = 256;

// A psp_firmware_header_v2.x file; bin i's payload is pattern(size, i + 1).
std::vector<uint8_t> sos_build(uint16_t minor = 0) {
  size_t payload = 0;
  for (const bin_spec &s : sos_bins) payload += s.size;
  std::vector<uint8_t> b(kSosHeaderBytes + payload, 0);
  common_put(b, kSosHeaderBytes, 2, minor, kSosHeaderBytes, uint32_t(payload));
  put32(b, 32, uint32_t(sos_bins.size()));
  const size_t desc_at = minor == 1 ? 40 : 36;
  size_t off = 0;
  for (size_t i = 0; i < sos_bins.size(); ++i) {
    const size_t d = desc_at + i * 16;
    put32(b, d, sos_bins[i].type);
    put32(b, d + 4, 0x100 + uint32_t(i));
    put32(b, d + 8, uint32_t(off));
    put32(b, d + 12, uint32_t(sos_bins[i].size));
    auto p = pattern(sos_bins[i].size, uint8_t(i + 1));
    std::copy(p.begin(), p.end(), b.begin() + kSosHeaderBytes + off);
    off += sos_bins[i].size;
  }
  return b;
}

// A file with only the common header (smu/sdma/gc files start this way).
std::vector<uint8_t> plain_build() {
  std::vector<uint8_t> b(96 + 500, 0);
  common_put(b, 96, 2, 1, 96, 500);
  auto p = pattern(500, 9);
  std::copy(p.begin(), p.end(), b.begin() + 96);
  return b;
}

std::string parse_error(const std::string &name, std::vector<uint8_t> b) {
  firmware_file f;
  std::string err;
  CHECK_FALSE(firmware_parse(name, std::move(b), &f, &err));
  CHECK(f.bytes.empty());
  CHECK(f.psp_bins.empty());
  CHECK(err.find(name) != std::string::npos);
  return err;
}

bool has(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string t = (fs::temp_directory_path() / "am_firmware_test.XXXXXX").string();
    REQUIRE(mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~temp_dir() { fs::remove_all(path); }
  void write(const std::string &name, const std::vector<uint8_t> &b) const {
    std::ofstream o(path / name, std::ios::binary);
    o.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
  }
};

}  // namespace

TEST_CASE("firmware: a PSP v2.0 sOS file gives every bin at the right bytes") {
  for (uint16_t minor : {0, 1}) {
    firmware_file f;
    std::string err;
    auto b = sos_build(minor);
    REQUIRE_MESSAGE(firmware_parse("psp_13_0_0_sos.bin", b, &f, &err), err);
    CHECK(f.header.size_bytes == b.size());
    CHECK(f.header.header_version_major == 2);
    CHECK(f.header.header_version_minor == minor);
    CHECK(f.header.ip_version_major == 13);
    CHECK(f.header.ucode_version == 0x00310025u);
    CHECK(f.header.crc32 == 0x12345678u);
    REQUIRE(f.psp_bins.size() == sos_bins.size());
    for (size_t i = 0; i < sos_bins.size(); ++i) {
      const psp_bin *bin = f.psp_find(sos_bins[i].type);
      REQUIRE(bin);
      CHECK(bin->fw_version == 0x100 + i);
      REQUIRE(bin->size == sos_bins[i].size);
      CHECK(std::vector<uint8_t>(f.bytes.begin() + bin->offset,
                                 f.bytes.begin() + bin->offset + bin->size) ==
            pattern(sos_bins[i].size, uint8_t(i + 1)));
    }
    CHECK(f.psp_find(psp_fw_sos)->offset == kSosHeaderBytes + 1584);
    CHECK(f.psp_find(psp_fw_ras_drv) == nullptr);
  }
  CHECK(psp_fw_type_name(psp_fw_sys_drv) == "SYS_DRV");
  CHECK(psp_fw_type_name(99) == "type 99");
}

TEST_CASE("firmware: a file with only the common header gives its payload") {
  firmware_file f;
  std::string err;
  REQUIRE_MESSAGE(firmware_parse("smu_13_0_0.bin", plain_build(), &f, &err), err);
  CHECK(f.header.ucode_size_bytes == 500);
  CHECK(std::vector<uint8_t>(f.ucode(), f.ucode() + 500) == pattern(500, 9));
  CHECK(f.psp_bins.empty());
}

TEST_CASE("firmware: every truncation is refused, naming the file and the field") {
  const auto b = sos_build();
  for (size_t n = 0; n < b.size(); n += (n < 300 ? 1 : 97)) {
    std::vector<uint8_t> cut(b.begin(), b.begin() + n);
    const std::string err = parse_error("psp_13_0_0_sos.bin", cut);
    CHECK_MESSAGE((has(err, "truncated") || has(err, "size_bytes (byte 0)")), err);
  }
  // Cut, and size_bytes rewritten to match, as a tool that "fixes" sizes
  // would: the bins that no longer fit are named.
  std::vector<uint8_t> cut(b.begin(), b.end() - 100);
  put32(cut, 0, uint32_t(cut.size()));
  put32(cut, 20, uint32_t(cut.size() - kSosHeaderBytes));
  const std::string err = parse_error("psp_13_0_0_sos.bin", cut);
  CHECK(has(err, "psp_fw_bin[5] (RL"));
  CHECK(has(err, "runs past the end"));
}

TEST_CASE("firmware: damaged headers are refused, naming the field") {
  auto edit = [](auto fn) {
    auto b = sos_build();
    fn(b);
    return parse_error("psp_13_0_0_sos.bin", b);
  };
  CHECK(has(edit([](auto &b) { put32(b, 4, 8); }), "header_size_bytes (byte 4)"));
  CHECK(has(edit([](auto &b) { put32(b, 24, 4); }), "ucode_array_offset_bytes (byte 24) is 4"));
  CHECK(has(edit([](auto &b) { put32(b, 20, uint32_t(b.size())); }), "ucode_size_bytes (byte 20)"));
  CHECK(has(edit([](auto &b) { put16(b, 8, 1); }), "header_version (byte 8) is 1.0"));
  CHECK(has(edit([](auto &b) { put32(b, 32, 0); }), "psp_fw_bin_count (byte 32) is 0"));
  CHECK(has(edit([](auto &b) { put32(b, 32, 26); }), "psp_fw_bin_count (byte 32) is 26"));
  CHECK(has(edit([](auto &b) { put32(b, 32, 15); }), "overlap the payload"));
  CHECK(has(edit([](auto &b) { put32(b, 36 + 16 + 8, 0xFFFFFFF0u); }),
            "psp_fw_bin[1] (SOS, byte 52) runs past"));
  CHECK(has(edit([](auto &b) { put32(b, 36 + 12, 0); }),
            "psp_fw_bin[0] (SYS_DRV, byte 36) has size_bytes 0"));
  CHECK(has(edit([](auto &b) { put32(b, 36 + 32, psp_fw_sos); }), "repeats a type"));
  CHECK(has(edit([](auto &b) { put32(b, 36 + 16, psp_fw_ras_drv); }), "has no SOS bin"));
  // A plain file is not held to the PSP layout, but to the common header.
  auto p = plain_build();
  put32(p, 0, 7);
  CHECK(has(parse_error("sdma_6_0_0.bin", p), "size_bytes (byte 0) says 7"));
}

TEST_CASE(
    "firmware: files are read from the folder; a missing one names the file and the package") {
  temp_dir dir;
  dir.write("psp_13_0_0_sos.bin", sos_build());
  dir.write("smu_13_0_0.bin", plain_build());
  std::vector<firmware_file> files;
  std::string err;
  REQUIRE_MESSAGE(
      firmware_read_all(dir.path.string(), {"psp_13_0_0_sos.bin", "smu_13_0_0.bin"}, &files, &err),
      err);
  REQUIRE(files.size() == 2);
  CHECK(files[0].name == "psp_13_0_0_sos.bin");
  CHECK(files[0].psp_bins.size() == 6);
  CHECK(files[1].header.ucode_size_bytes == 500);

  CHECK_FALSE(
      firmware_read_all(dir.path.string(), {"smu_13_0_0.bin", "sdma_6_0_0.bin"}, &files, &err));
  CHECK(files.empty());
  CHECK(has(err, "sdma_6_0_0.bin is missing"));
  CHECK(has(err, "firmware-amd-graphics"));
  CHECK(has(err, "CAPGRAPH_AMD_FIRMWARE"));

  dir.write("gc_11_0_0_mec.bin.zst", {0x28, 0xb5, 0x2f, 0xfd});
  firmware_file f;
  CHECK_FALSE(firmware_read(dir.path.string(), "gc_11_0_0_mec.bin", &f, &err));
  CHECK(has(err, ".zst exists"));

  fs::create_directory(dir.path / "rlc.bin");
  CHECK_FALSE(firmware_read(dir.path.string(), "rlc.bin", &f, &err));
  CHECK(has(err, "not a regular file"));

  // A cut file on disk is refused by name too.
  auto b = sos_build();
  b.resize(b.size() / 2);
  dir.write("psp_13_0_0_sos.bin", b);
  CHECK_FALSE(firmware_read(dir.path.string(), "psp_13_0_0_sos.bin", &f, &err));
  CHECK(has(err, "psp_13_0_0_sos.bin"));
  CHECK(has(err, "size_bytes (byte 0)"));
}

TEST_CASE(
    "firmware: the folder defaults to /lib/firmware/amdgpu and CAPGRAPH_AMD_FIRMWARE overrides "
    "it") {
  const char *saved = std::getenv(kFirmwareDirEnv);
  const std::string keep = saved ? saved : "";
  unsetenv(kFirmwareDirEnv);
  CHECK(firmware_dir() == "/lib/firmware/amdgpu");
  setenv(kFirmwareDirEnv, "", 1);
  CHECK(firmware_dir() == "/lib/firmware/amdgpu");
  setenv(kFirmwareDirEnv, "/tmp/fw", 1);
  CHECK(firmware_dir() == "/tmp/fw");
  if (saved)
    setenv(kFirmwareDirEnv, keep.c_str(), 1);
  else
    unsetenv(kFirmwareDirEnv);
}
