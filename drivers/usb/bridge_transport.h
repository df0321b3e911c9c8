// bridge_transport — the seam between the bridge protocol code and whatever
// carries USB transfers: libusb for a real device (libusb_transport.h), the
// ASM2464PD emulator in tests (tests/emu/emu_transport.h). The protocol code
// (bridge.h, the flasher) only ever sees this interface, so the tests run the
// same code path a real device gets.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace capgraph::usb {

enum class TransferStatus { ok, stall, timeout, no_device, error };
const char *transfer_status_name(TransferStatus s);

struct ControlRequest {
  uint8_t request_type = 0;  // bmRequestType; bit 7 = device-to-host
  uint8_t request = 0;       // bRequest
  uint16_t value = 0;        // wValue
  uint16_t index = 0;        // wIndex
};

class BridgeTransport {
 public:
  virtual ~BridgeTransport() = default;
  // A control transfer with `length` (wLength) data bytes in the direction
  // bit 7 of request_type says. *actual gets the bytes moved.
  virtual TransferStatus control(const ControlRequest &r, uint8_t *data, uint16_t length,
                                 size_t *actual, unsigned timeout_ms) = 0;
  // A bulk transfer; endpoint bit 7 = IN.
  virtual TransferStatus bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                              unsigned timeout_ms) = 0;
  // An IN transfer the caller expects to wait long for (the bridge's signal watch, protocol >=
  // 1.3): the thread sleeps in the kernel until the device answers or timeout_ms passes. usbfs
  // submits it and sleeps in poll(); by default it is a bulk transfer, which blocks as well.
  virtual TransferStatus in_await(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                                  unsigned timeout_ms) {
    return bulk(endpoint, data, length, actual, timeout_ms);
  }
  // Who we talk to, for error messages ("usb 3-2 ADD1:CA90 serial 0badcafe").
  virtual std::string describe() const = 0;
  virtual uint16_t vendor_id() const = 0;
  virtual uint16_t product_id() const = 0;
};

}  // namespace capgraph::usb
