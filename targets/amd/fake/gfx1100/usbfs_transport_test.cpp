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
