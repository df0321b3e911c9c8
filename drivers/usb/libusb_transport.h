// libusb_transport — BridgeTransport over libusb-1.0 for a real bridge, and
// the list of bridges attached to this machine (for `capgraph devices`).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bridge_transport.h"

struct libusb_context;
struct libusb_device_handle;

namespace capgraph::usb {

struct BridgeDevice {
  uint16_t vid = 0, pid = 0;
  uint8_t bus = 0, address = 0;
  bool stock = false;            // ASMedia ids: the stock firmware or its bootloader
  std::string serial;            // USB serial string ("" if unreadable)
  std::string firmware;          // "capgraph bridge 0.1.0 (protocol 1.0)", "stock ASMedia", ...
  std::string describe() const;  // one line for `capgraph devices`
};

// Every ASM2464PD bridge on the machine, ours or stock. An empty list with
// *error set means libusb itself failed; an empty list alone, none attached.
std::vector<BridgeDevice> devices_list_bridges(std::string *error);

class LibusbTransport final : public BridgeTransport {
 public:
  // Opens the first bridge whose serial matches `selector` (or "VID:PID",
  // or "" for the first one found); stock devices only when allow_stock.
  static std::unique_ptr<LibusbTransport> open(const std::string &selector, bool allow_stock,
                                               std::string *error);
  ~LibusbTransport() override;

  TransferStatus control(const ControlRequest &r, uint8_t *data, uint16_t length, size_t *actual,
                         unsigned timeout_ms) override;
  TransferStatus bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                      unsigned timeout_ms) override;
  std::string describe() const override { return name_; }
  uint16_t vendor_id() const override { return vid_; }
  uint16_t product_id() const override { return pid_; }

 private:
  LibusbTransport() = default;
  libusb_context *ctx_ = nullptr;
  libusb_device_handle *h_ = nullptr;
  std::string name_;
  uint16_t vid_ = 0, pid_ = 0;
};

}  // namespace capgraph::usb
