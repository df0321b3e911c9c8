#include "flash.h"

#include <fstream>
#include <iterator>

#include "bridge.h"
#include "bridge_image.h"
#include "bridge_protocol.h"

namespace capgraph::bridge {

using usb::Bridge;
using usb::BridgeStatus;

bool flash_load_image(const std::string &path, std::vector<uint8_t> *image, std::string *error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = path + ": cannot read the image file";
    return false;
  }
  image->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::string why;
  if (!image_check(*image, true, nullptr, &why)) {
    *error = path + ": " + why + "; refusing to flash it";
    return false;
  }
  return true;
}

static FlashResult failed(const std::string &m) { return {false, m}; }

static std::string image_summary(const std::vector<uint8_t> &image) {
  ImageInfo info;
  std::string e;
  image_check(image, true, &info, &e);
  char b[160];
  std::snprintf(b, sizeof b, "capgraph bridge %u.%u.%u (protocol %u.%u), %zu bytes, crc32 %08x",
                info.fw_major, info.fw_minor, info.fw_patch, info.proto_major, info.proto_minor,
                image.size(), info.crc32);
  return b;
}

FlashResult flash_via_firmware(usb::BridgeTransport &t, const std::vector<uint8_t> &image,
                               const FlashOptions &opt, std::FILE *log) {
  std::string why;
  if (!image_check(image, true, nullptr, &why)) return failed("image rejected: " + why);
  Bridge bridge(t);
  BridgeStatus st = bridge.open();
  if (!st.ok()) return failed(st.message);
  const usb::BridgeInfo &info = bridge.info();

  const uint32_t img_at = BRIDGE_FLASH_IMAGE_ADDR;
  const uint32_t end = img_at + uint32_t(image.size());
  const uint32_t sectors = (end + BRIDGE_SPI_SECTOR - 1) / BRIDGE_SPI_SECTOR;
  std::string backup =
      opt.backup_path.empty() ? "bridge-config-" + info.serial_hex() + ".bin" : opt.backup_path;
  std::fprintf(log, "device: %s, firmware %s, serial %s\n", t.describe().c_str(),
               info.version().c_str(), info.serial_hex().c_str());
  std::fprintf(log, "image:  %s\n", image_summary(image).c_str());
  std::fprintf(log, "plan:   1. read config 0x000-0x0ff, save to %s\n", backup.c_str());
  std::fprintf(log, "        2. erase %u sectors of 4 KiB at 0x000-0x%05x\n", sectors,
               sectors * BRIDGE_SPI_SECTOR - 1);
  std::fprintf(log,
               "        3. write config back, then the image at 0x%03x-0x%05x, last page first\n",
               img_at, end - 1);
  std::fprintf(
      log,
      "        4. read back 0x000-0x%05x and compare; the new firmware runs after a power cycle\n",
      end - 1);

  std::vector<uint8_t> config(BRIDGE_FLASH_CONFIG_SIZE);
  st = bridge.spi_read(BRIDGE_FLASH_CONFIG_ADDR, config.data(), config.size());
  if (!st.ok()) return failed("reading the config blocks: " + st.message);
  if (opt.dry_run) return {true, "dry run: nothing written"};

  {
    std::ofstream out(backup, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char *>(config.data()), std::streamsize(config.size()));
    if (!out)
      return failed(backup + ": cannot write the config backup; nothing was changed on the device");
  }
  std::fprintf(log, "config backed up to %s\n", backup.c_str());

  // From here on an interruption leaves an image the boot ROM rejects.
  const std::string recovery =
      "; the bridge will come up in the stock bootloader: run `capgraph flash IMAGE "
      "--config-restore " +
      backup + "` to recover";
  for (uint32_t s = 0; s < sectors; ++s) {
    st = bridge.spi_erase_sector(s * BRIDGE_SPI_SECTOR);
    if (!st.ok()) return failed("erasing: " + st.message + recovery);
  }
  st = bridge.spi_program(BRIDGE_FLASH_CONFIG_ADDR, config.data(), config.size());
  if (!st.ok()) return failed("restoring config: " + st.message + recovery);
  // Pages of the image, last first: the page holding the length word is
  // written only when everything after it is in place.
  const uint32_t pages = uint32_t((image.size() + BRIDGE_SPI_PAGE - 1) / BRIDGE_SPI_PAGE);
  for (uint32_t p = pages; p-- > 0;) {
    size_t off = size_t(p) * BRIDGE_SPI_PAGE;
    size_t n = std::min<size_t>(BRIDGE_SPI_PAGE, image.size() - off);
    st = bridge.spi_program(img_at + uint32_t(off), image.data() + off, n);
    if (!st.ok()) return failed("writing: " + st.message + recovery);
  }
  std::vector<uint8_t> back(end);
  st = bridge.spi_read(0, back.data(), back.size());
  if (!st.ok()) return failed("reading back: " + st.message + recovery);
  for (size_t i = 0; i < back.size(); ++i) {
    uint8_t want = i < img_at ? config[i] : image[i - img_at];
    if (back[i] != want) {
      char b[96];
      std::snprintf(b, sizeof b, "verify failed at flash 0x%05zx (read %02x, wrote %02x)", i,
                    back[i], want);
      return failed(b + recovery);
    }
  }
  return {true, "flashed and verified " + std::to_string(image.size()) +
                    " bytes; power-cycle the bridge to run it"};
}

// ---- stock bootloader: SCSI vendor CDBs over Bulk-Only Transport ----

// One SCSI command over Bulk-Only Transport: CBW, optional data stage (OUT
// from `data`, or IN into `data` when data_in), CSW.
static bool bot_command(usb::BridgeTransport &t, uint32_t tag, const uint8_t *cdb, size_t cdb_len,
                        uint8_t *data, size_t n, bool data_in, std::string *error) {
  uint8_t cbw[31] = {'U', 'S', 'B', 'C'};  // USB MSC BOT 1.0, 5.1
  for (int i = 0; i < 4; ++i) {
    cbw[4 + i] = uint8_t(tag >> (8 * i));
    cbw[8 + i] = uint8_t(n >> (8 * i));
  }
  cbw[12] = data_in ? 0x80 : 0x00;  // bmCBWFlags: direction
  cbw[14] = uint8_t(cdb_len);
  std::copy(cdb, cdb + cdb_len, cbw + 15);
  size_t got = 0;
  usb::TransferStatus s = t.bulk(BRIDGE_EP_BULK_OUT, cbw, sizeof cbw, &got, 2000);
  if (s != usb::TransferStatus::ok) {
    *error = std::string("sending command: ") + usb::transfer_status_name(s);
    return false;
  }
  if (n && data_in) {
    s = t.bulk(BRIDGE_EP_BULK_IN, data, n, &got, 10000);
    if (s != usb::TransferStatus::ok || got != n) {
      *error = std::string("receiving data: ") + usb::transfer_status_name(s) + ", " +
               std::to_string(got) + " of " + std::to_string(n) + " bytes";
      return false;
    }
  } else if (n) {
    s = t.bulk(BRIDGE_EP_BULK_OUT, data, n, &got, 10000);
    if (s != usb::TransferStatus::ok || got != n) {
      *error = std::string("sending data: ") + usb::transfer_status_name(s);
      return false;
    }
  }
  uint8_t csw[13] = {};
  s = t.bulk(0x80 | (BRIDGE_EP_BULK_IN & 0x7F), csw, sizeof csw, &got, 10000);
  if (s != usb::TransferStatus::ok || got != 13 || csw[0] != 'U' || csw[3] != 'S') {
    *error = std::string("reading status: ") + usb::transfer_status_name(s);
    return false;
  }
  uint32_t csw_tag = uint32_t(csw[4] | csw[5] << 8 | csw[6] << 16 | uint32_t(csw[7]) << 24);
  if (csw_tag != tag || csw[12] != 0) {
    *error = "bootloader reported failure (CSW status " + std::to_string(csw[12]) + ")";
    return false;
  }
  return true;
}

FlashResult flash_via_bootloader(usb::BridgeTransport &t, const std::vector<uint8_t> &image,
                                 const FlashOptions &opt, std::FILE *log) {
  std::string why;
  if (!image_check(image, true, nullptr, &why)) return failed("image rejected: " + why);
  std::vector<uint8_t> config;
  if (!opt.config_restore.empty()) {
    std::ifstream in(opt.config_restore, std::ios::binary);
    config.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (config.size() != BRIDGE_FLASH_CONFIG_SIZE)
      return failed(opt.config_restore + ": a config backup is exactly 256 bytes");
  }
  size_t part1 = std::min<size_t>(image.size(), BRIDGE_FLASH_PART1);
  std::fprintf(log, "device: %s (stock ASMedia firmware/bootloader)\n", t.describe().c_str());
  std::fprintf(log, "image:  %s\n", image_summary(image).c_str());
  std::fprintf(log,
               "plan:   %sE3 0x50 (%zu bytes)%s, read back with %sE2 and compare, "
               "E8 0x51 commit; power-cycle to run it\n",
               config.empty() ? "" : "E1 0x50 config blocks 0 and 1 (from the backup), ", part1,
               image.size() > part1 ? ", E3 0xD0 (the rest)" : "", config.empty() ? "" : "E0/");
  if (opt.dry_run) return {true, "dry run: nothing written"};
  uint32_t tag = 1;
  std::string err;
  std::vector<uint8_t> buf;
  // E1/E3 write and E0/E2 read: the write layouts are flash.py's; the read
  // layouts are assumed to mirror them (firmware/NOTES.md).
  auto cmd = [&](uint8_t op, uint8_t which, const uint8_t *p, size_t n, bool in) {
    uint8_t cdb[16] = {op, which};
    if (op == 0xE0 || op == 0xE1) {  // config: 0x50, block index
      cdb[1] = 0x50;
      cdb[2] = which;
    } else {  // E2/E3 0x50|0xD0, E8 0x51: then the length, big-endian
      for (int i = 0; i < 4; ++i) cdb[2 + i] = uint8_t(n >> (24 - 8 * i));
    }
    if (p)
      buf.assign(p, p + n);
    else
      buf.assign(n, 0);
    return bot_command(t, tag++, cdb, 16, buf.data(), n, in, &err);
  };
  for (uint8_t idx = 0; idx < 2 && !config.empty(); ++idx)
    if (!cmd(0xE1, idx, config.data() + idx * 0x80, 0x80, false))
      return failed(t.describe() + ": config block " + std::to_string(idx) + ": " + err);
  if (!cmd(0xE3, 0x50, image.data(), part1, false))
    return failed(t.describe() + ": writing image: " + err);
  if (image.size() > part1 && !cmd(0xE3, 0xD0, image.data() + part1, image.size() - part1, false))
    return failed(t.describe() + ": writing image tail: " + err);

  // Verify before the commit: a mismatch is never committed.
  const std::string not_done = "; nothing was committed: run the same command again";
  auto verify = [&](const char *what, uint32_t flash_at, const uint8_t *want,
                    size_t n) -> std::string {
    for (size_t i = 0; i < n; ++i)
      if (buf[i] != want[i]) {
        char b[128];
        std::snprintf(b, sizeof b, "verify failed at flash 0x%05zx (%s: read %02x, wrote %02x)",
                      flash_at + i, what, buf[i], want[i]);
        return b;
      }
    return "";
  };
  std::string bad;
  for (uint8_t idx = 0; idx < 2 && !config.empty() && bad.empty(); ++idx) {
    if (!cmd(0xE0, idx, nullptr, 0x80, true))
      return failed(t.describe() + ": reading back config block " + std::to_string(idx) +
                    " (E0): " + err + "; written but NOT verified" + not_done);
    bad =
        verify("config", BRIDGE_FLASH_CONFIG_ADDR + idx * 0x80u, config.data() + idx * 0x80, 0x80);
  }
  if (bad.empty()) {
    if (!cmd(0xE2, 0x50, nullptr, part1, true))
      return failed(t.describe() + ": reading back the image (E2): " + err +
                    "; written but NOT verified" + not_done);
    bad = verify("image", BRIDGE_FLASH_IMAGE_ADDR, image.data(), part1);
  }
  if (bad.empty() && image.size() > part1) {
    if (!cmd(0xE2, 0xD0, nullptr, image.size() - part1, true))
      return failed(t.describe() + ": reading back the image tail (E2): " + err +
                    "; written but NOT verified" + not_done);
    bad = verify("image", BRIDGE_FLASH_IMAGE_ADDR + uint32_t(part1), image.data() + part1,
                 image.size() - part1);
  }
  if (!bad.empty()) return failed(t.describe() + ": " + bad + not_done);
  if (!cmd(0xE8, 0x51, nullptr, 0, false)) return failed(t.describe() + ": commit: " + err);
  return {true, "written through the stock bootloader and verified by reading back " +
                    std::to_string(image.size()) + " bytes; power-cycle the bridge to run it"};
}

FlashResult flash_image(usb::BridgeTransport &t, const std::vector<uint8_t> &image,
                        const FlashOptions &opt, std::FILE *log) {
  if (t.vendor_id() == BRIDGE_USB_VID && t.product_id() == BRIDGE_USB_PID)
    return flash_via_firmware(t, image, opt, log);
  return flash_via_bootloader(t, image, opt, log);
}

}  // namespace capgraph::bridge
