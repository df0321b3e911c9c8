#include "libusb_transport.h"

#include <libusb.h>

#include <cstdio>

#include "bridge.h"
#include "bridge_protocol.h"

namespace capgraph::usb {

static TransferStatus map_error(int rc) {
  switch (rc) {
    case LIBUSB_SUCCESS: return TransferStatus::ok;
    case LIBUSB_ERROR_PIPE: return TransferStatus::stall;
    case LIBUSB_ERROR_TIMEOUT: return TransferStatus::timeout;
    case LIBUSB_ERROR_NO_DEVICE: return TransferStatus::no_device;
    default: return TransferStatus::error;
  }
}

static bool is_ours(uint16_t vid, uint16_t pid) {
  return vid == BRIDGE_USB_VID && pid == BRIDGE_USB_PID;
}
static bool is_stock(uint16_t vid, uint16_t pid) {
  return vid == BRIDGE_STOCK_VID && (pid == BRIDGE_STOCK_PID_2464 || pid == BRIDGE_STOCK_PID_2463);
}

std::string BridgeDevice::describe() const {
  char b[256];
  std::snprintf(b, sizeof b, "usb %u-%u %04x:%04x serial %s: %s", bus, address, vid, pid,
                serial.empty() ? "?" : serial.c_str(), firmware.c_str());
  return b;
}

LibusbTransport::~LibusbTransport() {
  if (h_) {
    libusb_release_interface(h_, BRIDGE_INTERFACE);
    libusb_close(h_);
  }
  if (ctx_) libusb_exit(ctx_);
}

TransferStatus LibusbTransport::control(const ControlRequest &r, uint8_t *data, uint16_t length,
                                        size_t *actual, unsigned timeout_ms) {
  *actual = 0;
  int rc = libusb_control_transfer(h_, r.request_type, r.request, r.value, r.index, data, length,
                                   timeout_ms);
  if (rc < 0) return map_error(rc);
  *actual = size_t(rc);
  return TransferStatus::ok;
}

TransferStatus LibusbTransport::bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                                     unsigned timeout_ms) {
  *actual = 0;
  size_t done = 0;
  // libusb takes an int length; move large buffers in 16 MiB pieces.
  while (done < length) {
    int chunk = int(std::min<size_t>(length - done, 16u << 20));
    int got = 0;
    int rc = libusb_bulk_transfer(h_, endpoint, data + done, chunk, &got, timeout_ms);
    done += size_t(got);
    *actual = done;
    if (rc != 0) return map_error(rc);
    if (got < chunk) break;  // short packet: the device had no more
  }
  return TransferStatus::ok;
}

static std::string read_serial(libusb_device_handle *h, const libusb_device_descriptor &d) {
  if (!d.iSerialNumber) return "";
  unsigned char buf[64] = {};
  int n = libusb_get_string_descriptor_ascii(h, d.iSerialNumber, buf, sizeof buf);
  return n > 0 ? std::string(reinterpret_cast<char *>(buf), size_t(n)) : "";
}

std::vector<BridgeDevice> devices_list_bridges(std::string *error) {
  std::vector<BridgeDevice> out;
  libusb_context *ctx = nullptr;
  if (int rc = libusb_init(&ctx); rc != 0) {
    if (error) *error = std::string("libusb init failed: ") + libusb_error_name(rc);
    return out;
  }
  libusb_device **list = nullptr;
  ssize_t n = libusb_get_device_list(ctx, &list);
  for (ssize_t i = 0; i < n; ++i) {
    libusb_device_descriptor d;
    if (libusb_get_device_descriptor(list[i], &d) != 0) continue;
    if (!is_ours(d.idVendor, d.idProduct) && !is_stock(d.idVendor, d.idProduct)) continue;
    BridgeDevice dev;
    dev.vid = d.idVendor;
    dev.pid = d.idProduct;
    dev.bus = libusb_get_bus_number(list[i]);
    dev.address = libusb_get_device_address(list[i]);
    dev.stock = is_stock(d.idVendor, d.idProduct);
    dev.firmware = dev.stock
                       ? "stock ASMedia firmware or bootloader (flash ours with `capgraph flash`)"
                       : "capgraph bridge (no access: check udev permissions)";
    libusb_device_handle *h = nullptr;
    if (libusb_open(list[i], &h) == 0) {
      dev.serial = read_serial(h, d);
      if (!dev.stock && libusb_claim_interface(h, BRIDGE_INTERFACE) == 0) {
        uint8_t b[BRIDGE_INFO_SIZE];
        int rc = libusb_control_transfer(h, BRIDGE_RT_VENDOR_IN, BRIDGE_REQ_INFO, 0, 0, b,
                                         BRIDGE_INFO_SIZE, 500);
        if (rc == int(BRIDGE_INFO_SIZE)) {
          char v[128];
          std::snprintf(
              v, sizeof v, "capgraph bridge %u.%u.%u (protocol %u.%u), USB %u, PCIe link %s",
              b[BRIDGE_INFO_OFF_FW_MAJOR], b[BRIDGE_INFO_OFF_FW_MINOR], b[BRIDGE_INFO_OFF_FW_PATCH],
              b[BRIDGE_INFO_OFF_PROTO_MAJOR], b[BRIDGE_INFO_OFF_PROTO_MINOR],
              b[BRIDGE_INFO_OFF_USB_SPEED], b[BRIDGE_INFO_OFF_PCIE_LINK] ? "up" : "down");
          dev.firmware = v;
        } else {
          dev.firmware = "capgraph bridge ids but no INFO reply (old or broken firmware)";
        }
        libusb_release_interface(h, BRIDGE_INTERFACE);
      }
      libusb_close(h);
    }
    out.push_back(dev);
  }
  if (list) libusb_free_device_list(list, 1);
  libusb_exit(ctx);
  return out;
}

std::unique_ptr<LibusbTransport> LibusbTransport::open(const std::string &selector,
                                                       bool allow_stock, std::string *error) {
  std::unique_ptr<LibusbTransport> t(new LibusbTransport());
  if (int rc = libusb_init(&t->ctx_); rc != 0) {
    *error = std::string("libusb init failed: ") + libusb_error_name(rc);
    t->ctx_ = nullptr;
    return nullptr;
  }
  unsigned want_vid = 0, want_pid = 0;
  bool by_ids = std::sscanf(selector.c_str(), "%x:%x", &want_vid, &want_pid) == 2 &&
                selector.find(':') != std::string::npos;
  libusb_device **list = nullptr;
  ssize_t n = libusb_get_device_list(t->ctx_, &list);
  std::string seen;
  for (ssize_t i = 0; i < n && !t->h_; ++i) {
    libusb_device_descriptor d;
    if (libusb_get_device_descriptor(list[i], &d) != 0) continue;
    bool ours = is_ours(d.idVendor, d.idProduct), stock = is_stock(d.idVendor, d.idProduct);
    if (!ours && !(stock && allow_stock)) continue;
    if (by_ids && (d.idVendor != want_vid || d.idProduct != want_pid)) continue;
    libusb_device_handle *h = nullptr;
    if (int rc = libusb_open(list[i], &h); rc != 0) {
      seen += std::string(" (found one but cannot open it: ") + libusb_error_name(rc) + ")";
      continue;
    }
    std::string serial = read_serial(h, d);
    if (!by_ids && !selector.empty() && serial != selector) {
      libusb_close(h);
      continue;
    }
    libusb_set_auto_detach_kernel_driver(h, 1);  // the stock device is mass storage
    if (int rc = libusb_claim_interface(h, BRIDGE_INTERFACE); rc != 0) {
      seen += std::string(" (cannot claim interface: ") + libusb_error_name(rc) + ")";
      libusb_close(h);
      continue;
    }
    t->h_ = h;
    t->vid_ = d.idVendor;
    t->pid_ = d.idProduct;
    char b[128];
    std::snprintf(b, sizeof b, "bridge usb %u-%u %04x:%04x serial %s",
                  libusb_get_bus_number(list[i]), libusb_get_device_address(list[i]), d.idVendor,
                  d.idProduct, serial.empty() ? "?" : serial.c_str());
    t->name_ = b;
  }
  if (list) libusb_free_device_list(list, 1);
  if (!t->h_) {
    *error = "no ASM2464PD bridge found" +
             (selector.empty() ? std::string() : " matching '" + selector + "'") + seen +
             "; `capgraph devices` lists what is attached";
    return nullptr;
  }
  return t;
}

}  // namespace capgraph::usb
