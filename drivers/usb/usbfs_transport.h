// usbfs_transport — BridgeTransport over Linux's usbfs (/dev/bus/usb/BBB/DDD), with no library:
// the transport of the dependency-free runtime's `usb` device (targets/amd/amd_usbfs_device.cpp),
// so an aarch64 host such as the comma device drives the bridge with `capgraph-run` alone. The
// libusb transport (libusb_transport.h) stays for the flasher and hosts without usbfs.
//
// Discovery reads sysfs (/sys/bus/usb/devices/B-P: idVendor, idProduct, serial, busnum, devnum,
// and the interface directories B-P:C.I with bInterfaceNumber and bInterfaceClass). Only our
// vendor interface (BRIDGE_INTERFACE, class 0xff) is claimed; a kernel driver bound to it is not
// detached (an EBUSY says so). Every transfer carries a timeout the kernel enforces.
//
// Linux uapi facts (include/uapi/linux/usbdevice_fs.h): USBDEVFS_CLAIMINTERFACE takes the
// interface number (unsigned int); USBDEVFS_CONTROL takes usbdevfs_ctrltransfer (bRequestType,
// bRequest, wValue, wIndex, wLength, timeout in ms, data) and returns the bytes moved;
// USBDEVFS_BULK takes usbdevfs_bulktransfer (ep, len, timeout in ms, data) and returns the bytes
// moved; USBDEVFS_SUBMITURB queues a usbdevfs_urb and USBDEVFS_REAPURBNDELAY collects a completed
// one (EAGAIN when none), poll() reporting POLLOUT once one has completed
// (drivers/usb/core/devio.c, usbdev_poll); USBDEVFS_DISCARDURB cancels one. Errors: EPIPE a STALL,
// ETIMEDOUT the timeout, ENODEV / ESHUTDOWN the device gone (unplugged), EBUSY an interface someone
// else holds, EACCES the device node not ours to open (the udev rule 70-capgraph-bridge.rules
// grants it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bridge_transport.h"
#include "usbfs_sys.h"

namespace capgraph::usb {

// Where sysfs lists USB devices (the fake keeps the same paths).
constexpr const char *kUsbSysfsDevices = "/sys/bus/usb/devices";

// One ASM2464PD found in sysfs (ours or stock).
struct UsbfsDevice {
  std::string sysfs_name;  // "1-2"
  uint16_t vid = 0, pid = 0;
  unsigned bus = 0, address = 0;
  std::string serial;            // "" if sysfs has none
  bool stock = false;            // ASMedia ids: stock firmware or its bootloader
  bool vendor_iface = false;     // interface BRIDGE_INTERFACE of class 0xff is there
  std::string node() const;      // "/dev/bus/usb/001/002"
  std::string describe() const;  // "usb 1-2 add1:ca90 serial 0badcafe"
};

// Every ASM2464PD sysfs lists. Empty with *error set: sysfs could not be read (no usbfs/sysfs
// on this host); empty alone: none attached.
std::vector<UsbfsDevice> usbfs_list_bridges(usbfs_sys &sys, std::string *error);

// The node UsbfsTransport::open(sys, serial) would open ("/dev/bus/usb/001/002"), or "" when it
// would find none: which bridge a load means, before opening it (a second open of a bridge this
// process holds is refused: the interface is claimed).
std::string usbfs_bridge_node(usbfs_sys &sys, const std::string &serial);

class UsbfsTransport final : public BridgeTransport {
 public:
  // Opens the bridge running our firmware whose serial is `serial` (case-insensitive; "" for the
  // first one) and claims its vendor interface. nullptr and *error naming the device and the
  // cause: none attached, no permission (the udev rule), the interface busy, the node gone.
  static std::unique_ptr<UsbfsTransport> open(std::shared_ptr<usbfs_sys> sys,
                                              const std::string &serial, std::string *error);
  ~UsbfsTransport() override;

  TransferStatus control(const ControlRequest &r, uint8_t *data, uint16_t length, size_t *actual,
                         unsigned timeout_ms) override;
  TransferStatus bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                      unsigned timeout_ms) override;
  TransferStatus in_await(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                          unsigned timeout_ms) override;
  std::string describe() const override { return name_; }
  uint16_t vendor_id() const override { return dev_.vid; }
  uint16_t product_id() const override { return dev_.pid; }

 private:
  UsbfsTransport(std::shared_ptr<usbfs_sys> sys, UsbfsDevice dev, int fd);
  std::shared_ptr<usbfs_sys> sys_;
  UsbfsDevice dev_;
  int fd_ = -1;
  std::string name_;
  size_t bulk_chunk_;  // halved on ENOMEM (the kernel buffers each USBDEVFS_BULK whole)
};

}  // namespace capgraph::usb
