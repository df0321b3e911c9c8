// End to end: the real firmware image (built by SDCC in this build) boots in
// the emulated ASM2464PD and the host library and the flasher drive it
// through EmuTransport — the same code that runs over libusb.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "asm2464_model.h"
#include "bridge.h"
#include "bridge_image.h"
#include "bridge_protocol.h"
#include "bridge_rig.h"
#include "emu_transport.h"
#include "flash.h"

using namespace capgraph;
using emu::Asm2464;
using emu::EmuTransport;

using namespace capgraph::emu_test;

TEST_CASE("the image has the chip's format and our identity block") {
  if (!have_image()) return;
  bridge::ImageInfo info;
  std::string err;
  REQUIRE_MESSAGE(bridge::image_check(real_image(), true, &info, &err), err);
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", info.crc32);
  MESSAGE("firmware image: " << real_image().size() << " bytes, body " << info.body_size
                             << ", crc32 " << crc);
  CHECK(info.fw_major == BRIDGE_FW_VERSION_MAJOR);
  CHECK(info.fw_minor == BRIDGE_FW_VERSION_MINOR);
}

TEST_CASE("boots from flash and enumerates as a vendor-class device at USB 3 and USB 2") {
  if (!have_image()) return;
  for (bool usb3 : {true, false}) {
    CAPTURE(usb3);
    Asm2464::Options o;
    o.usb3 = usb3;
    Rig r(o);
    REQUIRE(r.dev.power_on() == Asm2464::Mode::firmware);
    emu::Enumeration e;
    std::string err;
    REQUIRE_MESSAGE(emu::usb_enumerate(r.dev, &e, &err), err);
    CHECK(e.vid == BRIDGE_USB_VID);
    CHECK(e.pid == BRIDGE_USB_PID);
    CHECK(e.device_class == 0xFF);
    CHECK(e.interface_class == 0xFF);
    CHECK(e.bcd_usb == (usb3 ? 0x0320 : 0x0210));
    CHECK(e.max_packet0 == (usb3 ? 9 : 64));
    CHECK(e.has_bos);
    REQUIRE(e.endpoints.size() == 2);
    CHECK(e.endpoints[0] == 0x81);
    CHECK(e.endpoints[1] == 0x02);
    CHECK(e.endpoint_max_packet[0] == (usb3 ? 1024 : 512));
    CHECK(e.serial == "0badcafe");
    CHECK(e.manufacturer == "capgraph");
    REQUIRE(r.bridge.open().ok());
    CHECK(r.bridge.info().usb_speed == (usb3 ? 3 : 2));
    CHECK(r.bridge.info().chip_id == 0x2464);
    CHECK(r.bridge.info().serial_hex() == "0badcafe");
    CHECK(r.bridge.info().max_ctrl == (usb3 ? 512 : 64));
    CHECK(r.dev.protocol_violations == 0);
  }
}

TEST_CASE("blank OTP gives serial ffffffff") {
  if (!have_image()) return;
  Rig r;
  r.dev.flash.otp.fill(0xFF);
  REQUIRE(r.dev.power_on() == Asm2464::Mode::firmware);
  emu::Enumeration e;
  std::string err;
  REQUIRE(emu::usb_enumerate(r.dev, &e, &err));
  CHECK(e.serial == "ffffffff");
}

TEST_CASE("register read and write, both banks") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  std::vector<uint8_t> w(100), back(100);
  for (size_t i = 0; i < w.size(); ++i) w[i] = uint8_t(i * 7 + 1);
  REQUIRE(r.bridge.reg_write(0x5000, w.data(), w.size()).ok());
  REQUIRE(r.bridge.reg_read(0x5000, back.data(), back.size()).ok());
  CHECK(back == w);
  uint8_t v = 0x5A, got = 0;
  REQUIRE(r.bridge.reg_write(0x6025, &v, 1, 1).ok());
  REQUIRE(r.bridge.reg_read(0x6025, &got, 1, 1).ok());
  CHECK(got == 0x5A);
  REQUIRE(r.bridge.reg_read(0x6025, &got, 1, 0).ok());
  CHECK(got == 0x00);  // bank 0 is a different space
  // The SRAM window at 0xF000 through registers: same bytes the DMA sees.
  r.dev.sram[3] = 0xC3;
  REQUIRE(r.bridge.reg_read(0xF003, &got, 1).ok());
  CHECK(got == 0xC3);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE("faults: a TLP that never completes, and TLPs with the link down") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  uint32_t v = 0;
  auto st = r.bridge.config_read32(0, 0, 0, 0, &v);
  CHECK_FALSE(st.ok());
  CHECK(st.message.find("link down") != std::string::npos);
  const uint8_t gpu = pcie_bring_up(r).endpoint_bus;
  r.dev.endpoint.hang = true;
  st = r.bridge.config_read32(gpu, 0, 0, 0, &v);
  CHECK_FALSE(st.ok());
  CHECK(st.transfer == usb::TransferStatus::timeout);
  CHECK(st.message.find("no completion") != std::string::npos);
  r.dev.endpoint.hang = false;
  REQUIRE(r.bridge.config_read32(gpu, 0, 0, 0, &v).ok());  // the engine recovered
  CHECK(v == 0x744C1002u);
}

TEST_CASE("faults: malformed requests STALL and change nothing") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  uint8_t canary = 0x77;
  REQUIRE(r.bridge.reg_write(0x5100, &canary, 1).ok());
  using TS = usb::TransferStatus;
  struct Case {
    uint8_t rt, req;
    uint16_t val, idx, len;
    uint8_t err;
    const char *what;
  };
  const Case cases[] = {
      {0xC0, 0x55, 0, 0, 4, BRIDGE_ERR_UNKNOWN_REQUEST, "unknown vendor request"},
      {0x40, BRIDGE_REQ_INFO, 0, 0, 0, BRIDGE_ERR_UNKNOWN_REQUEST, "INFO as OUT"},
      {0xC0, BRIDGE_REQ_INFO, 0, 0, 4, BRIDGE_ERR_BAD_LENGTH, "INFO too short"},
      {0xC0, BRIDGE_REQ_REG_READ, 0x5100, 0, 0, BRIDGE_ERR_BAD_LENGTH, "REG_READ length 0"},
      {0xC0, BRIDGE_REQ_REG_READ, 0x5100, 0, 65, BRIDGE_ERR_BAD_LENGTH, "REG_READ length 65"},
      {0xC0, BRIDGE_REQ_REG_READ, 0x5100, 2, 1, BRIDGE_ERR_BAD_ARGUMENT, "REG_READ bank 2"},
      {0xC0, BRIDGE_REQ_REG_READ, 0xFFF0, 0, 32, BRIDGE_ERR_BAD_ARGUMENT, "REG_READ past 0xFFFF"},
      {0x40, BRIDGE_REQ_REG_WRITE, 0x5100, 0, 0, BRIDGE_ERR_BAD_LENGTH, "REG_WRITE no data"},
      {0xC1, BRIDGE_REQ_REG_READ, 0x5100, 0, 1, BRIDGE_ERR_UNKNOWN_REQUEST, "vendor to interface"},
      {0x40, BRIDGE_REQ_TLP, 0, 0, 15, BRIDGE_ERR_BAD_LENGTH, "TLP 15 bytes"},
      {0xC0, BRIDGE_REQ_TLP_RESULT, 0, 0, 7, BRIDGE_ERR_BAD_LENGTH, "TLP_RESULT 7 bytes"},
      {0x40, BRIDGE_REQ_DMA, 0, 0, 0, BRIDGE_ERR_BAD_ARGUMENT, "DMA 0 sectors"},
      {0x40, BRIDGE_REQ_DMA, 64, 31 | (2 << 8), 0, BRIDGE_ERR_BAD_ARGUMENT, "DMA past slot 32"},
      {0x40, BRIDGE_REQ_DMA, 33, 0 | (1 << 8), 0, BRIDGE_ERR_BAD_ARGUMENT,
       "DMA more than its slots"},
      {0x40, BRIDGE_REQ_PCIE_POWER, 2, 0, 0, BRIDGE_ERR_BAD_ARGUMENT, "PCIE_POWER 2"},
      {0xC0, BRIDGE_REQ_SPI_READ, 0, 0, 65, BRIDGE_ERR_BAD_LENGTH, "SPI_READ 65"},
      {0x40, BRIDGE_REQ_SPI_ERASE, 4096, 0, 0, BRIDGE_ERR_BAD_ARGUMENT, "SPI_ERASE past 16 MiB"},
      {0x40, BRIDGE_REQ_SPI_PROGRAM, 0, 257, 0, BRIDGE_ERR_BAD_LENGTH, "SPI_PROGRAM 257"},
      {0x80, 6, 0x2200, 0, 64, BRIDGE_ERR_BAD_ARGUMENT, "GET_DESCRIPTOR of an unknown type"},
      {0x80, 6, 0x0307, 0, 64, BRIDGE_ERR_BAD_ARGUMENT, "string index 7"},
      {0x21, 0x01, 0, 0, 0, BRIDGE_ERR_UNKNOWN_REQUEST, "class request"},
      {0x00, 9, 2, 0, 0, BRIDGE_ERR_UNKNOWN_REQUEST, "SET_CONFIGURATION 2"},
  };
  for (const Case &c : cases) {
    CAPTURE(c.what);
    CHECK(r.raw(c.rt, c.req, c.val, c.idx, c.len) == TS::stall);
    CHECK(r.last_error() == c.err);
  }
  // A TLP request with the right length but a bad body is refused after its
  // data stage: bad fmt/type, misaligned address, 3DW with a high address.
  uint8_t tlp[BRIDGE_TLP_SIZE] = {0x7F, 0x0F};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp) == TS::stall);
  CHECK(r.last_error() == BRIDGE_ERR_BAD_ARGUMENT);
  uint8_t tlp2[BRIDGE_TLP_SIZE] = {BRIDGE_TLP_MRD32, 0x0F, 0, 0, 0x02};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp2) == TS::stall);
  uint8_t tlp3[BRIDGE_TLP_SIZE] = {BRIDGE_TLP_MRD32, 0x0F, 0, 0, 0, 0, 0, 0, 1};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp3) == TS::stall);
  uint8_t tlp4[BRIDGE_TLP_SIZE] = {BRIDGE_TLP_MRD32, 0x00};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp4) == TS::stall);
  // POSTED only on a memory write, and no other flag bit.
  uint8_t tlp5[BRIDGE_TLP_SIZE] = {BRIDGE_TLP_MRD32, 0x0F, BRIDGE_TLP_FLAG_POSTED};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp5) == TS::stall);
  CHECK(r.last_error() == BRIDGE_ERR_BAD_ARGUMENT);
  uint8_t tlp6[BRIDGE_TLP_SIZE] = {BRIDGE_TLP_CFGWR1, 0x0F, BRIDGE_TLP_FLAG_POSTED};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp6) == TS::stall);
  uint8_t tlp7[BRIDGE_TLP_SIZE] = {BRIDGE_TLP_MWR32, 0x0F, 0x02};
  CHECK(r.raw(0x40, BRIDGE_REQ_TLP, 0, 0, BRIDGE_TLP_SIZE, tlp7) == TS::stall);
  // Nothing changed: the canary, no DMA armed, TLP result untouched.
  uint8_t got = 0;
  REQUIRE(r.bridge.reg_read(0x5100, &got, 1).ok());
  CHECK(got == 0x77);
  uint8_t res[BRIDGE_TLP_RESULT_SIZE];
  REQUIRE(r.raw(0xC0, BRIDGE_REQ_TLP_RESULT, 0, 0, BRIDGE_TLP_RESULT_SIZE, res) == TS::ok);
  CHECK(res[BRIDGE_TLP_RESULT_OFF_STATUS] == BRIDGE_TLP_STATUS_NONE);
  std::vector<uint8_t> in(512);
  size_t n = 0;
  CHECK(r.t.bulk(0x81, in.data(), in.size(), &n, 5) == TS::timeout);
  CHECK(r.dev.protocol_violations == 0);
  // And it still works.
  usb::BridgeInfo info;
  REQUIRE(r.bridge.read_info(&info).ok());
  CHECK(info.last_error == BRIDGE_ERR_NONE);
}

TEST_CASE("1 MiB through the SRAM DMA windows, both directions, bit-exact; protocol cost") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  const size_t total = 1u << 20, half = BRIDGE_SRAM_SIZE;
  std::vector<uint8_t> src(total), back(total);
  std::mt19937 rng(42);
  for (auto &b : src) b = uint8_t(rng());
  pcie_bring_up(r);  // the GPU side needs the link and bus mastering
  r.dev.stats = {};
  const uint8_t trigger[4] = {};
  for (size_t off = 0; off < total; off += half) {
    auto st = r.bridge.sram_write(0, src.data() + off, half);
    REQUIRE_MESSAGE(st.ok(), st.message);
    // The PCIe side (a GPU fetching from 0x200000) sees the same bytes.
    std::vector<uint8_t> seen(4096);
    REQUIRE(r.dev.endpoint.dma_read(BRIDGE_SRAM_BUS_ADDR + 0x1000, seen.data(), seen.size()));
    CHECK(std::equal(seen.begin(), seen.end(), src.begin() + off + 0x1000));
    // Back to the host: arm, the GPU writes the trigger, collect.
    REQUIRE(r.bridge.sram_read_arm(0, half).ok());
    REQUIRE(r.dev.endpoint.dma_write(BRIDGE_CQ_TRIGGER_BUS_ADDR, trigger, 4));
    st = r.bridge.sram_read_collect(back.data() + off, half);
    REQUIRE_MESSAGE(st.ok(), st.message);
  }
  CHECK(back == src);
  // Unaligned or odd sizes are refused before anything moves.
  CHECK_FALSE(r.bridge.sram_write(0x100, src.data(), 512).ok());
  CHECK_FALSE(r.bridge.sram_write(0, src.data(), 100).ok());
  const auto &s = r.dev.stats;
  double mib_each_way = double(total) / double(1 << 20);
  MESSAGE("protocol cost per MiB, host->device: "
          << double(s.bulk_out_packets) / mib_each_way << " bulk packets, "
          << double(s.bulk_out_bytes) / mib_each_way << " bulk bytes, "
          << double(s.bulk_out_transfers) / mib_each_way << " bulk transfers");
  MESSAGE("protocol cost per MiB, device->host: "
          << double(s.bulk_in_packets) / mib_each_way << " bulk packets, "
          << double(s.bulk_in_bytes) / mib_each_way << " bulk bytes, "
          << double(s.bulk_in_transfers) / mib_each_way << " bulk transfers");
  MESSAGE("control overhead for 2 MiB moved: " << s.control_transfers << " control transfers, "
                                               << s.control_transactions << " transactions, "
                                               << s.control_bytes << " bytes");
  CHECK(s.bulk_out_bytes == total);
  CHECK(s.bulk_in_bytes == total);
  CHECK(s.bulk_out_packets == total / 1024);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE("faults: the device vanishes in the middle of a transfer") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  std::vector<uint8_t> buf(BRIDGE_SRAM_SIZE, 0xAB);
  r.dev.unplug_after_bulk_bytes(100000);
  auto st = r.bridge.sram_write(0, buf.data(), buf.size());
  CHECK_FALSE(st.ok());
  CHECK(st.transfer == usb::TransferStatus::no_device);
  CHECK(st.message.find("unplugged") != std::string::npos);
  usb::BridgeInfo info;
  st = r.bridge.read_info(&info);
  CHECK(st.transfer == usb::TransferStatus::no_device);
  // Plugging back in (power cycle) gives a working bridge.
  REQUIRE(r.boot());
}

TEST_CASE("flash refuses corrupt and foreign images before touching the device") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  auto corrupt = real_image();
  corrupt[100] ^= 0x01;
  std::vector<uint8_t> foreign = bridge::image_wrap(std::vector<uint8_t>(4096, 0x22));
  auto truncated = real_image();
  truncated.erase(truncated.end() - 3, truncated.end());
  for (const auto *img : {&corrupt, &foreign, &truncated}) {
    bridge::FlashOptions opt;
    opt.backup_path = temp_path("refused.bin");
    auto res = bridge::flash_via_firmware(r.t, *img, opt, stdout);
    CHECK_FALSE(res.ok);
    MESSAGE("refused: " << res.message);
    CHECK(res.message.find("image rejected") != std::string::npos);
  }
  CHECK(r.dev.flash.erases == 0);
  CHECK(r.dev.flash.programs == 0);
  std::string err;
  std::ofstream(temp_path("corrupt.img"), std::ios::binary)
      .write(reinterpret_cast<const char *>(corrupt.data()), std::streamsize(corrupt.size()));
  std::vector<uint8_t> loaded;
  CHECK_FALSE(bridge::flash_load_image(temp_path("corrupt.img"), &loaded, &err));
  CHECK(err.find("refusing") != std::string::npos);
}

TEST_CASE("flash: dry run writes nothing; a real run updates the bridge's own flash") {
  if (!have_image()) return;
  // Start from a different (but valid) image: ours with 512 bytes of padding.
  auto body = bridge::image_body(real_image());
  body.resize(body.size() + 512, 0xFF);
  auto older = bridge::image_wrap(body);
  Rig r;
  put_flash(r.dev, older);
  REQUIRE(r.boot());
  bridge::FlashOptions opt;
  opt.dry_run = true;
  opt.backup_path = temp_path("dry.bin");
  std::filesystem::remove(opt.backup_path);
  auto res = bridge::flash_via_firmware(r.t, real_image(), opt, stdout);
  REQUIRE_MESSAGE(res.ok, res.message);
  CHECK(r.dev.flash.erases == 0);
  CHECK(r.dev.flash.programs == 0);
  CHECK_FALSE(std::filesystem::exists(opt.backup_path));

  opt.dry_run = false;
  opt.backup_path = temp_path("config-backup.bin");
  res = bridge::flash_image(r.t, real_image(), opt, stdout);
  REQUIRE_MESSAGE(res.ok, res.message);
  const auto &f = r.dev.flash.data;
  CHECK(std::equal(real_image().begin(), real_image().end(), f.begin() + BRIDGE_FLASH_IMAGE_ADDR));
  auto cfg = config_pattern();
  CHECK(std::equal(cfg.begin(), cfg.end(), f.begin()));
  std::ifstream b(opt.backup_path, std::ios::binary);
  std::vector<uint8_t> saved((std::istreambuf_iterator<char>(b)), std::istreambuf_iterator<char>());
  CHECK(saved == cfg);
  REQUIRE(r.boot());  // power cycle: the new image runs
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE("flash: power lost at every stage leaves no silently bad image; recovery works") {
  if (!have_image()) return;
  // Count the flash operations of one update.
  uint32_t ops = 0;
  {
    Rig r;
    REQUIRE(r.boot());
    bridge::FlashOptions opt;
    opt.backup_path = temp_path("count.bin");
    std::FILE *quiet = std::fopen("/dev/null", "w");
    REQUIRE(bridge::flash_via_firmware(r.t, real_image(), opt, quiet).ok);
    std::fclose(quiet);
    ops = r.dev.flash.erases + r.dev.flash.programs;
  }
  REQUIRE(ops > 3);
  MESSAGE("a self-update is " << ops << " erase/program operations; cutting power before each");
  std::FILE *quiet = std::fopen("/dev/null", "w");
  for (uint32_t cut = 0; cut < ops; ++cut) {
    CAPTURE(cut);
    Rig r;
    REQUIRE(r.boot());
    r.dev.flash.power_cut_before = [cut](uint32_t i) { return i == cut; };
    bridge::FlashOptions opt;
    opt.backup_path = temp_path("cut.bin");
    auto res = bridge::flash_via_firmware(r.t, real_image(), opt, quiet);
    CHECK_FALSE(res.ok);  // the host saw the device go
    CHECK(res.message.find("stock bootloader") != std::string::npos);
    r.dev.flash.power_cut_before = nullptr;
    // Power back: either a CRC-valid image boots (it must be the exact new
    // one) or the boot ROM refuses it and the bootloader answers.
    auto mode = r.dev.power_on();
    if (mode == Asm2464::Mode::firmware) {
      CHECK(std::equal(real_image().begin(), real_image().end(),
                       r.dev.flash.data.begin() + BRIDGE_FLASH_IMAGE_ADDR));
    } else {
      REQUIRE(mode == Asm2464::Mode::bootloader);
      bridge::FlashOptions rec;
      rec.config_restore = opt.backup_path;
      auto rr = bridge::flash_image(r.t, real_image(), rec, quiet);
      REQUIRE_MESSAGE(rr.ok, rr.message);
      REQUIRE(r.boot());
      auto cfg = config_pattern();
      CHECK(std::equal(cfg.begin(), cfg.end(), r.dev.flash.data.begin()));
    }
  }
  std::fclose(quiet);
}

TEST_CASE("a bridge that only has the stock bootloader takes the E1/E3/E8 path") {
  if (!have_image()) return;
  Rig r;
  std::fill(r.dev.flash.data.begin(), r.dev.flash.data.end(), 0xFF);
  REQUIRE(r.dev.power_on() == Asm2464::Mode::bootloader);
  emu::Enumeration e;
  std::string err;
  REQUIRE(emu::usb_enumerate(r.dev, &e, &err));
  CHECK(e.vid == BRIDGE_STOCK_VID);
  CHECK(e.interface_class == 0x08);
  bridge::FlashOptions opt;
  auto res = bridge::flash_image(r.t, real_image(), opt, stdout);
  REQUIRE_MESSAGE(res.ok, res.message);
  REQUIRE(r.boot());
  CHECK(r.bridge.info().version() == std::to_string(BRIDGE_FW_VERSION_MAJOR) + "." +
                                         std::to_string(BRIDGE_FW_VERSION_MINOR) + "." +
                                         std::to_string(BRIDGE_FW_VERSION_PATCH));
}

namespace {
// A bridge with an erased flash: only the stock bootloader answers.
void make_bootloader_only(Rig &r) {
  std::fill(r.dev.flash.data.begin(), r.dev.flash.data.end(), 0xFF);
  REQUIRE(r.dev.power_on() == Asm2464::Mode::bootloader);
}
std::string config_backup_file() {
  auto path = temp_path("boot-config.bin");
  auto cfg = config_pattern();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(cfg.data()), std::streamsize(cfg.size()));
  return path;
}
}  // namespace

TEST_CASE("bootloader path: reads back before committing; a bad write is caught, never committed") {
  if (!have_image()) return;
  Rig r;
  make_bootloader_only(r);
  std::FILE *quiet = std::fopen("/dev/null", "w");
  bridge::FlashOptions opt;
  opt.config_restore = config_backup_file();
  r.dev.boot_corrupt_flash_at = BRIDGE_FLASH_IMAGE_ADDR + 1000;
  auto res = bridge::flash_image(r.t, real_image(), opt, quiet);
  CHECK_FALSE(res.ok);
  MESSAGE(res.message);
  CHECK(res.message.find("verify failed at flash 0x004e8") != std::string::npos);
  CHECK(res.message.find("nothing was committed") != std::string::npos);
  CHECK(r.dev.boot_commits == 0);
  // A config byte stored wrong is caught the same way.
  r.dev.boot_corrupt_flash_at = BRIDGE_FLASH_CONFIG_ADDR + 0x85;
  res = bridge::flash_image(r.t, real_image(), opt, quiet);
  CHECK(res.message.find("verify failed at flash 0x00085 (config") != std::string::npos);
  CHECK(r.dev.boot_commits == 0);
  // A bootloader that refuses the read-back: written, said to be unverified.
  r.dev.boot_corrupt_flash_at = UINT32_MAX;
  r.dev.boot_refuses_reads = true;
  res = bridge::flash_image(r.t, real_image(), opt, quiet);
  CHECK_FALSE(res.ok);
  CHECK(res.message.find("NOT verified") != std::string::npos);
  CHECK(r.dev.boot_commits == 0);
  // Healthy: verified, committed once, and the image boots with the config.
  r.dev.boot_refuses_reads = false;
  res = bridge::flash_image(r.t, real_image(), opt, quiet);
  REQUIRE_MESSAGE(res.ok, res.message);
  CHECK(res.message.find("verified") != std::string::npos);
  CHECK(r.dev.boot_commits == 1);
  REQUIRE(r.boot());
  auto cfg = config_pattern();
  CHECK(std::equal(cfg.begin(), cfg.end(), r.dev.flash.data.begin()));
  std::fclose(quiet);
}

TEST_CASE("bootloader path: power lost before each write; the next run recovers and verifies") {
  if (!have_image()) return;
  std::FILE *quiet = std::fopen("/dev/null", "w");
  uint32_t ops = 0;
  {
    Rig r;
    make_bootloader_only(r);
    bridge::FlashOptions opt;
    opt.config_restore = config_backup_file();
    REQUIRE(bridge::flash_image(r.t, real_image(), opt, quiet).ok);
    ops = r.dev.flash.programs;
  }
  REQUIRE(ops >= 3);  // E1 x2, E3 (x2 for images over 0xFF00)
  for (uint32_t cut = 0; cut < ops; ++cut) {
    CAPTURE(cut);
    Rig r;
    make_bootloader_only(r);
    r.dev.flash.power_cut_before = [cut](uint32_t i) { return i == cut; };
    bridge::FlashOptions opt;
    opt.config_restore = config_backup_file();
    CHECK_FALSE(bridge::flash_image(r.t, real_image(), opt, quiet).ok);
    r.dev.flash.power_cut_before = nullptr;
    auto mode = r.dev.power_on();
    if (mode == Asm2464::Mode::firmware) {  // only ever the exact new image
      CHECK(std::equal(real_image().begin(), real_image().end(),
                       r.dev.flash.data.begin() + BRIDGE_FLASH_IMAGE_ADDR));
      continue;
    }
    auto res = bridge::flash_image(r.t, real_image(), opt, quiet);
    REQUIRE_MESSAGE(res.ok, res.message);
    REQUIRE(r.boot());
    auto cfg = config_pattern();
    CHECK(std::equal(cfg.begin(), cfg.end(), r.dev.flash.data.begin()));
  }
  std::fclose(quiet);
}

TEST_CASE("a short control OUT is an error naming the request, and the next request works") {
  if (!have_image()) return;
  // A control OUT's data stage moves all its bytes or fails (USB 2.0 9.3); a transport that says
  // fewer moved (the fault sweep's `fake-usb:fail=N:short`) must not pass for a request the
  // firmware took whole.
  Rig r;
  LossyWire w(r.t);
  usb::Bridge bridge(w);
  REQUIRE(r.dev.power_on() == Asm2464::Mode::firmware);
  emu::Enumeration en;
  std::string err;
  REQUIRE_MESSAGE(emu::usb_enumerate(r.dev, &en, &err), err);
  REQUIRE(bridge.open().ok());
  const uint8_t v[4] = {1, 2, 3, 4};
  w.short_control_outs = 1;
  const usb::BridgeStatus st = bridge.reg_write(0x5000, v, sizeof v);
  CHECK(w.shortened == 1);
  REQUIRE_FALSE(st.ok());
  CHECK(st.transfer == usb::TransferStatus::error);
  CHECK_MESSAGE(st.message.find("REG_WRITE (control OUT) moved 2 of 4 bytes") != std::string::npos,
                st.message);
  CHECK_MESSAGE(st.message.find("short") != std::string::npos, st.message);
  uint8_t back[4] = {};
  REQUIRE(bridge.reg_write(0x5000, v, sizeof v).ok());
  REQUIRE(bridge.reg_read(0x5000, back, sizeof back).ok());
  CHECK(std::memcmp(back, v, sizeof v) == 0);
}
