// bridge_rig — what the end-to-end tests share: the SDCC-built image (or a
// SKIP message when there is none), a device with it in flash, the host
// library on top, and raw control requests for malformed-request tests.
#pragma once

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "asm2464_model.h"
#include "bridge.h"
#include "bridge_protocol.h"
#include "emu_transport.h"
#include "usb_pci.h"

namespace capgraph::emu_test {

using emu::Asm2464;
using emu::EmuTransport;

inline const std::vector<uint8_t> &real_image() {
  static std::vector<uint8_t> img = [] {
    std::vector<uint8_t> v;
    std::ifstream in(CAPGRAPH_BRIDGE_FW_IMAGE, std::ios::binary);
    if (in) v.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    return v;
  }();
  return img;
}

inline bool have_image() {
  if (real_image().empty()) {
    MESSAGE("SKIP: no firmware image (sdcc missing or image not built): " CAPGRAPH_BRIDGE_FW_IMAGE);
    return false;
  }
  return true;
}

inline std::vector<uint8_t> config_pattern() {
  std::vector<uint8_t> c(BRIDGE_FLASH_CONFIG_SIZE);
  for (size_t i = 0; i < c.size(); ++i) c[i] = uint8_t(0x30 + i % 64);
  return c;
}

inline void put_flash(Asm2464 &dev, const std::vector<uint8_t> &image) {
  std::fill(dev.flash.data.begin(), dev.flash.data.end(), 0xFF);
  auto cfg = config_pattern();
  std::copy(cfg.begin(), cfg.end(), dev.flash.data.begin() + BRIDGE_FLASH_CONFIG_ADDR);
  std::copy(image.begin(), image.end(), dev.flash.data.begin() + BRIDGE_FLASH_IMAGE_ADDR);
}

struct Rig {
  Asm2464 dev;
  EmuTransport t{dev};
  usb::Bridge bridge{t};
  explicit Rig(Asm2464::Options o = {}) : dev(o) {
    dev.flash.set_otp_serial(0x0BADCAFE);
    put_flash(dev, real_image());
  }
  bool boot() {
    if (dev.power_on() != Asm2464::Mode::firmware) return false;
    emu::Enumeration e;
    std::string err;
    return emu::usb_enumerate(dev, &e, &err) && bridge.open().ok();
  }
  usb::TransferStatus raw(uint8_t rt, uint8_t req, uint16_t val, uint16_t idx, uint16_t len,
                          uint8_t *data = nullptr) {
    std::vector<uint8_t> buf(len ? len : 1);
    size_t got = 0;
    return t.control({rt, req, val, idx}, data ? data : buf.data(), len, &got, 200);
  }
  uint8_t last_error() {
    usb::BridgeInfo i;
    REQUIRE(bridge.read_info(&i).ok());
    return i.last_error;
  }
};

// The cable losing transfers, as the fault sweep's `fake-usb:fail=N` does: a lost bulk IN times out
// having moved nothing and never reaches the device (what it would have read stays at the
// endpoint); a short control OUT reaches the device whole but the host is told half its bytes
// moved.
struct LossyWire final : usb::BridgeTransport {
  explicit LossyWire(usb::BridgeTransport &in) : inner(in) {}
  usb::BridgeTransport &inner;
  size_t lose_bulk_in_of = 0;  // the next bulk IN of this many bytes is lost (0: none)
  int short_control_outs = 0;  // the next this-many control OUTs with data are short
  int lost = 0, shortened = 0;
  usb::TransferStatus control(const usb::ControlRequest &r, uint8_t *data, uint16_t length,
                              size_t *actual, unsigned timeout_ms) override {
    const usb::TransferStatus s = inner.control(r, data, length, actual, timeout_ms);
    if (!(r.request_type & 0x80) && length && short_control_outs > 0) {
      --short_control_outs;
      ++shortened;
      *actual = length / 2;
    }
    return s;
  }
  usb::TransferStatus bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                           unsigned timeout_ms) override {
    if ((endpoint & 0x80) && lose_bulk_in_of && length == lose_bulk_in_of) {
      lose_bulk_in_of = 0;
      ++lost;
      *actual = 0;
      return usb::TransferStatus::timeout;
    }
    return inner.bulk(endpoint, data, length, actual, timeout_ms);
  }
  std::string describe() const override { return inner.describe(); }
  uint16_t vendor_id() const override { return inner.vendor_id(); }
  uint16_t product_id() const override { return inner.product_id(); }
};

// PCIe power on, then the switch chain and the endpoint's BARs as the host
// library programs them (drivers/usb/usb_pci.h): GPU at bus 4 by default,
// BAR0 at 32 GiB, BAR2 at 0x1000_0000, BAR5 at 0x1020_0000.
inline usb::PciChain pcie_bring_up(Rig &r) {
  usb::PciChain chain;
  auto st = r.bridge.pcie_power(true);
  REQUIRE_MESSAGE(st.ok(), st.message);
  st = usb::pci_chain_setup(r.bridge, &chain);
  REQUIRE_MESSAGE(st.ok(), st.message);
  st = usb::pci_bars_assign(r.bridge, &chain);
  REQUIRE_MESSAGE(st.ok(), st.message);
  return chain;
}

inline std::string temp_path(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / "capgraph_bridge_e2e";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace capgraph::emu_test
