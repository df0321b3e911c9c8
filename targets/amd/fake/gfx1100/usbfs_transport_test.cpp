// The usbfs bridge transport (drivers/usb/usbfs_transport.h) against the fake usbfs
// (fake_usbfs.h): discovery passes over the root hub and finds the emulated bridge by its
// descriptors; a serial selects it (any case); and each failure a host meets gives an error that
// names the device and the cause: none attached, stock firmware, no permission (the udev rule),
// the interface busy, the bridge pulled out mid-transfer (a transfer, and a submitted URB).
#include "usbfs_transport.h"

#include <doctest/doctest.h>
#include <linux/usbdevice_fs.h>

#include "bridge.h"
#include "bridge_protocol.h"
#include "fake_usbfs.h"
#include "usb_pci.h"

using namespace capgraph;

namespace {

bool have_image() {
  if (std::string(CAPGRAPH_BRIDGE_FW_IMAGE).empty()) {
    MESSAGE("SKIP: no bridge firmware image (sdcc missing)");
    return false;
  }
  return true;
}

std::shared_ptr<emu::fake_usbfs> fake(const std::string &faults) {
  emu::fake_usbfs_options o;
  std::string why;
  REQUIRE(emu::fake_usbfs_options_parse(faults, &o, &why));
  o.image = CAPGRAPH_BRIDGE_FW_IMAGE;
  auto f = std::make_shared<emu::fake_usbfs>(o, &why);
  REQUIRE_MESSAGE(why.empty(), why);
  return f;
}

bool has(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("usbfs: discovery finds the bridge by its descriptors and opens it by serial") {
  if (!have_image()) return;
  auto f = fake("");
  std::string err;
  const auto all = usb::usbfs_list_bridges(*f, &err);
  REQUIRE_MESSAGE(err.empty(), err);
  REQUIRE(all.size() == 1);  // not the root hub
  CHECK(all[0].vid == BRIDGE_USB_VID);
  CHECK(all[0].pid == BRIDGE_USB_PID);
  CHECK(all[0].vendor_iface);
  CHECK(all[0].node() == "/dev/bus/usb/001/002");
  CHECK(usb::UsbfsTransport::open(f, "deadbeef", &err) == nullptr);
  CHECK_MESSAGE(has(err, "no bridge with serial deadbeef"), err);
  auto t = usb::UsbfsTransport::open(f, "0BADCAFE", &err);  // sysfs has it in lower case
  REQUIRE_MESSAGE(t != nullptr, err);
  usb::Bridge b(*t);
  const usb::BridgeStatus st = b.open();
  REQUIRE_MESSAGE(st.ok(), st.message);
  CHECK(b.info().serial_hex() == all[0].serial);
}

TEST_CASE("usbfs: none attached, stock firmware, no permission, busy: each named") {
  if (!have_image()) return;
  std::string err;
  CHECK(usb::UsbfsTransport::open(fake("absent"), "", &err) == nullptr);
  CHECK_MESSAGE(has(err, "no ASM2464PD attached"), err);
  CHECK(usb::UsbfsTransport::open(fake("stock"), "", &err) == nullptr);
  CHECK_MESSAGE(has(err, "runs stock firmware"), err);
  CHECK(usb::UsbfsTransport::open(fake("deny"), "", &err) == nullptr);
  CHECK_MESSAGE(has(err, "/dev/bus/usb/001/002"), err);
  CHECK_MESSAGE(has(err, "70-capgraph-bridge.rules"), err);
  CHECK(usb::UsbfsTransport::open(fake("busy"), "", &err) == nullptr);
  CHECK_MESSAGE(has(err, "USBDEVFS_CLAIMINTERFACE"), err);
  CHECK_MESSAGE(has(err, "in use"), err);
}

TEST_CASE("usbfs: the bridge pulled out mid-transfer fails that transfer and every later one") {
  if (!have_image()) return;
  auto f = fake("unplug=1");  // INFO passes, the next transfer finds the bridge gone
  std::string err;
  auto t = usb::UsbfsTransport::open(f, "", &err);
  REQUIRE_MESSAGE(t != nullptr, err);
  usb::Bridge b(*t);
  usb::BridgeStatus st = b.open();
  REQUIRE_MESSAGE(st.ok(), st.message);
  st = b.pcie_power(true);
  CHECK(st.transfer == usb::TransferStatus::no_device);
  CHECK_MESSAGE(has(st.message, "unplugged"), st.message);
  uint8_t buf[16];
  size_t got = 0;
  CHECK(t->in_await(BRIDGE_EP_BULK_IN, buf, sizeof buf, &got, 100) ==
        usb::TransferStatus::no_device);
  CHECK(usb::usbfs_list_bridges(*f, &err).empty());  // sysfs no longer lists it
}

TEST_CASE("usbfs: a submitted IN transfer nobody answers times out, is discarded and reaped") {
  if (!have_image()) return;
  auto f = fake("");
  std::string err;
  auto t = usb::UsbfsTransport::open(f, "", &err);
  REQUIRE_MESSAGE(t != nullptr, err);
  uint8_t buf[16];
  size_t got = 0;
  CHECK(t->in_await(BRIDGE_EP_BULK_IN, buf, sizeof buf, &got, 50) == usb::TransferStatus::timeout);
  CHECK(got == 0);
  usb::Bridge b(*t);  // the endpoint is usable again afterwards
  const usb::BridgeStatus st = b.open();
  CHECK_MESSAGE(st.ok(), st.message);
}

// The firmware's signal watch (protocol 1.3, firmware/src/watch.c) through the usbfs transport:
// reached, a fault register that reads non-zero, and a target never reached (the host's bound
// passes, the watch is stopped and the bulk IN pipe is the streams' again); older firmware is
// refused by name.
TEST_CASE("usbfs: the bridge watches a VRAM signal; fault, timeout, older firmware") {
  if (!have_image()) return;
  auto f = fake("");
  std::string err;
  auto t = usb::UsbfsTransport::open(f, "", &err);
  REQUIRE_MESSAGE(t != nullptr, err);
  usb::Bridge b(*t);
  usb::PciChain chain;
  usb::BridgeStatus st = b.open();
  if (st.ok()) st = b.pcie_power(true);
  if (st.ok()) st = usb::pci_chain_setup(b, &chain);
  if (st.ok()) st = usb::pci_bars_assign(b, &chain);
  REQUIRE_MESSAGE(st.ok(), st.message);
  REQUIRE(b.has_watch());
  uint64_t vram = 0;
  for (const usb::PciBar &bar : chain.bars)
    if (bar.index == 0) vram = bar.base;
  REQUIRE(vram != 0);
  const uint64_t signal = vram + 0x10000, fault = vram + 0x20000;
  REQUIRE(b.mem_write32(signal, 7).ok());
  REQUIRE(b.mem_write32(signal + 4, 1).ok());  // 0x1_00000007
  REQUIRE(b.mem_write32(fault, 0).ok());
  usb::WatchResult r;
  st = b.watch(signal, 0x100000005ull, fault, 1000, &r);  // already past: reached at once
  REQUIRE_MESSAGE(st.ok(), st.message);
  CHECK(r.status == BRIDGE_WATCH_REACHED);
  CHECK(r.value == 0x100000007ull);
  CHECK(r.polls >= 1);
  st = b.watch(signal, 0x100000008ull, fault, 100, &r);  // never: the host's bound passes
  CHECK(st.transfer == usb::TransferStatus::timeout);
  CHECK_MESSAGE(has(st.message, "did not reach the target in 100 ms"), st.message);
  uint32_t v = 0;
  st = b.mem_read32(signal, &v);  // a stream's bulk IN after the stopped watch
  CHECK_MESSAGE(st.ok(), st.message);
  CHECK(v == 7);
  REQUIRE(b.mem_write32(fault, 0x40).ok());
  st = b.watch(signal, 0x100000008ull, fault, 1000, &r);
  REQUIRE_MESSAGE(st.ok(), st.message);
  CHECK(r.status == BRIDGE_WATCH_FAULT);
  CHECK(r.fault == 0x40);
  CHECK(r.polls >= BRIDGE_WATCH_FAULT_EVERY);

  auto old = fake("old_firmware");
  auto t2 = usb::UsbfsTransport::open(old, "", &err);
  REQUIRE_MESSAGE(t2 != nullptr, err);
  usb::Bridge b2(*t2);
  REQUIRE(b2.open().ok());
  CHECK_FALSE(b2.has_watch());
  st = b2.watch(signal, 1, 0, 100, &r);
  CHECK_MESSAGE(has(st.message, "needs 1.3"), st.message);
}
