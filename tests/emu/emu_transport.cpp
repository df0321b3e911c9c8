#include "emu_transport.h"

#include "bridge_protocol.h"

namespace capgraph::emu {

static usb::TransferStatus map(UsbResult r) {
  switch (r) {
    case UsbResult::ok: return usb::TransferStatus::ok;
    case UsbResult::stall: return usb::TransferStatus::stall;
    case UsbResult::timeout: return usb::TransferStatus::timeout;
    case UsbResult::no_device: return usb::TransferStatus::no_device;
    case UsbResult::overflow: return usb::TransferStatus::error;
  }
  return usb::TransferStatus::error;
}

usb::TransferStatus EmuTransport::control(const usb::ControlRequest &r, uint8_t *data,
                                          uint16_t length, size_t *actual, unsigned timeout_ms) {
  UsbSetup s{r.request_type, r.request, r.value, r.index, length};
  return map(dev_.control(s, data, actual, timeout_ms));
}

usb::TransferStatus EmuTransport::bulk(uint8_t endpoint, uint8_t *data, size_t length,
                                       size_t *actual, unsigned timeout_ms) {
  if (endpoint & 0x80) return map(dev_.bulk_in(endpoint, data, length, actual, timeout_ms));
  return map(dev_.bulk_out(endpoint, data, length, actual, timeout_ms));
}

uint16_t EmuTransport::vendor_id() const {
  return dev_.mode() == Asm2464::Mode::bootloader ? BRIDGE_STOCK_VID : BRIDGE_USB_VID;
}
uint16_t EmuTransport::product_id() const {
  return dev_.mode() == Asm2464::Mode::bootloader ? BRIDGE_STOCK_PID_2464 : BRIDGE_USB_PID;
}

static bool get_desc(Asm2464 &dev, uint8_t type, uint8_t index, uint16_t len,
                     std::vector<uint8_t> *out, std::string *error) {
  out->assign(len, 0);
  size_t got = 0;
  UsbSetup s{0x80, 6, uint16_t(type << 8 | index), uint16_t(type == 3 && index ? 0x0409 : 0), len};
  UsbResult r = dev.control(s, out->data(), &got, 500);
  if (r != UsbResult::ok) {
    *error = "GET_DESCRIPTOR type " + std::to_string(type) + " index " + std::to_string(index) +
             ": " + usb_result_name(r);
    return false;
  }
  out->resize(got);
  return true;
}

static std::string utf16_ascii(const std::vector<uint8_t> &d) {
  std::string s;
  for (size_t i = 2; i + 1 < d.size() && i < d[0]; i += 2) s.push_back(char(d[i]));
  return s;
}

bool usb_enumerate(Asm2464 &dev, Enumeration *e, std::string *error) {
  std::vector<uint8_t> d;
  // Like Linux: first 8 bytes (to learn bMaxPacketSize0), address, then all.
  if (!get_desc(dev, 1, 0, 8, &d, error)) return false;
  if (d.size() != 8 || d[1] != 1) {
    *error = "short or bad first device descriptor";
    return false;
  }
  size_t got = 0;
  if (dev.control({0x00, 5, 7, 0, 0}, nullptr, &got, 500) != UsbResult::ok) {
    *error = "SET_ADDRESS failed";
    return false;
  }
  if (!get_desc(dev, 1, 0, 18, &d, error)) return false;
  if (d.size() != 18) {
    *error = "device descriptor is not 18 bytes";
    return false;
  }
  e->bcd_usb = uint16_t(d[2] | d[3] << 8);
  e->device_class = d[4];
  e->max_packet0 = d[7];
  e->vid = uint16_t(d[8] | d[9] << 8);
  e->pid = uint16_t(d[10] | d[11] << 8);
  uint8_t i_mfg = d[14], i_prod = d[15], i_ser = d[16];
  if (!get_desc(dev, 2, 0, 9, &d, error)) return false;
  uint16_t total = uint16_t(d[2] | d[3] << 8);
  if (!get_desc(dev, 2, 0, total, &d, error)) return false;
  if (d.size() != total) {
    *error = "configuration descriptor shorter than wTotalLength";
    return false;
  }
  for (size_t p = 0; p + 1 < d.size() && d[p] >= 2; p += d[p]) {
    if (d[p + 1] == 4) e->interface_class = d[p + 5];
    if (d[p + 1] == 5) {
      e->endpoints.push_back(d[p + 2]);
      e->endpoint_max_packet.push_back(uint16_t(d[p + 4] | d[p + 5] << 8));
    }
  }
  if (e->bcd_usb >= 0x0210) {
    std::vector<uint8_t> bos;
    std::string ignore;
    e->has_bos = get_desc(dev, 15, 0, 5, &bos, &ignore) && bos.size() == 5 && bos[1] == 15;
  }
  if (i_mfg && get_desc(dev, 3, i_mfg, 255, &d, error)) e->manufacturer = utf16_ascii(d);
  if (i_prod && get_desc(dev, 3, i_prod, 255, &d, error)) e->product = utf16_ascii(d);
  if (i_ser && get_desc(dev, 3, i_ser, 255, &d, error)) e->serial = utf16_ascii(d);
  if (dev.control({0x00, 9, 1, 0, 0}, nullptr, &got, 500) != UsbResult::ok) {
    *error = "SET_CONFIGURATION failed";
    return false;
  }
  return true;
}

}  // namespace capgraph::emu
