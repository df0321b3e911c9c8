// emu_transport — BridgeTransport onto the emulated ASM2464PD, so the host
// library and the flasher run unchanged against the real firmware image.
#pragma once

#include "asm2464_model.h"
#include "bridge_transport.h"

namespace capgraph::emu {

class EmuTransport final : public usb::BridgeTransport {
 public:
  explicit EmuTransport(Asm2464 &dev) : dev_(dev) {}
  usb::TransferStatus control(const usb::ControlRequest &r, uint8_t *data, uint16_t length,
                              size_t *actual, unsigned timeout_ms) override;
  usb::TransferStatus bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                           unsigned timeout_ms) override;
  std::string describe() const override { return "emulated bridge"; }
  uint16_t vendor_id() const override;
  uint16_t product_id() const override;

 private:
  Asm2464 &dev_;
};

// What an OS does when the device appears: read descriptors, set address
// and configuration. Fails with a message if anything is off.
struct Enumeration {
  uint16_t vid = 0, pid = 0, bcd_usb = 0;
  uint8_t device_class = 0, interface_class = 0, max_packet0 = 0;
  std::vector<uint8_t> endpoints;  // addresses of the bulk endpoints
  std::vector<uint16_t> endpoint_max_packet;
  std::string manufacturer, product, serial;
  bool has_bos = false;
};
bool usb_enumerate(Asm2464 &dev, Enumeration *out, std::string *error);

}  // namespace capgraph::emu
