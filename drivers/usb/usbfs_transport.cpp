// usbfs_transport — see usbfs_transport.h.
#include "usbfs_transport.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/usbdevice_fs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "bridge_protocol.h"

namespace capgraph::usb {
namespace {

// The real system calls. ioctl is not retried on EINTR: a transfer may have moved data.
class usbfs_sys_libc final : public usbfs_sys {
 public:
  int open(const char *path, int flags) override { return ::open(path, flags); }
  int close(int fd) override { return ::close(fd); }
  int ioctl(int fd, unsigned long request, void *arg) override { return ::ioctl(fd, request, arg); }
  int poll(pollfd *fds, nfds_t n, int timeout_ms) override { return ::poll(fds, n, timeout_ms); }
  bool dir_list(const std::string &path, std::vector<std::string> *names) override {
    DIR *d = ::opendir(path.c_str());
    if (!d) return false;
    while (const dirent *e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        names->push_back(e->d_name);
    ::closedir(d);
    return true;
  }
  bool text_read(const std::string &path, std::string *text) override {
    std::ifstream in(path);
    if (!in) return false;
    std::getline(in, *text);
    return true;
  }
};

// The largest USBDEVFS_BULK: the kernel copies each through a buffer of its own (devio.c,
// proc_bulk), so big ones are split; ENOMEM halves it down to kBulkChunkMin.
constexpr size_t kBulkChunkMax = 1u << 20, kBulkChunkMin = 16u << 10;

TransferStatus status_of_errno(int e) {
  switch (e) {
    case EPIPE: return TransferStatus::stall;
    case ETIMEDOUT: return TransferStatus::timeout;
    case ENODEV:
    case ESHUTDOWN:
    case ENOENT: return TransferStatus::no_device;
    default: return TransferStatus::error;
  }
}

bool hex16(const std::string &s, uint16_t *v) {
  unsigned x = 0;
  if (std::sscanf(s.c_str(), "%x", &x) != 1 || x > 0xFFFF) return false;
  *v = uint16_t(x);
  return true;
}

bool same_serial(const std::string &a, const std::string &b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower((unsigned char)x) == std::tolower((unsigned char)y);
         });
}

std::string errno_text(int e) { return std::string(std::strerror(e)); }

}  // namespace

std::shared_ptr<usbfs_sys> usbfs_sys_host() { return std::make_shared<usbfs_sys_libc>(); }

std::string UsbfsDevice::node() const {
  char b[64];
  std::snprintf(b, sizeof b, "/dev/bus/usb/%03u/%03u", bus, address);
  return b;
}

std::string usbfs_bridge_node(usbfs_sys &sys, const std::string &serial) {
  std::string why;
  for (const UsbfsDevice &d : usbfs_list_bridges(sys, &why))
    if (!d.stock && (serial.empty() || same_serial(serial, d.serial)) && d.vendor_iface)
      return d.node();
  return "";
}

std::string UsbfsDevice::describe() const {
  char b[160];
  std::snprintf(b, sizeof b, "usb %s %04x:%04x serial %s", sysfs_name.c_str(), vid, pid,
                serial.empty() ? "?" : serial.c_str());
  return b;
}

std::vector<UsbfsDevice> usbfs_list_bridges(usbfs_sys &sys, std::string *error) {
  std::vector<UsbfsDevice> out;
  std::vector<std::string> names;
  const std::string root = kUsbSysfsDevices;
  if (!sys.dir_list(root, &names)) {
    if (error) *error = "cannot read " + root + ": " + errno_text(errno) + " (no sysfs or usbfs)";
    return out;
  }
  std::sort(names.begin(), names.end());
  for (const std::string &n : names) {
    if (n.find(':') != std::string::npos) continue;  // an interface, not a device
    const std::string d = root + "/" + n + "/";
    std::string vid_s, pid_s, bus_s, dev_s;
    UsbfsDevice dev;
    if (!sys.text_read(d + "idVendor", &vid_s) || !sys.text_read(d + "idProduct", &pid_s) ||
        !hex16(vid_s, &dev.vid) || !hex16(pid_s, &dev.pid))
      continue;
    const bool ours = dev.vid == BRIDGE_USB_VID && dev.pid == BRIDGE_USB_PID;
    dev.stock = dev.vid == BRIDGE_STOCK_VID &&
                (dev.pid == BRIDGE_STOCK_PID_2464 || dev.pid == BRIDGE_STOCK_PID_2463);
    if (!ours && !dev.stock) continue;
    if (!sys.text_read(d + "busnum", &bus_s) || !sys.text_read(d + "devnum", &dev_s)) continue;
    dev.bus = unsigned(std::atoi(bus_s.c_str()));
    dev.address = unsigned(std::atoi(dev_s.c_str()));
    dev.sysfs_name = n;
    if (!sys.text_read(d + "serial", &dev.serial)) dev.serial.clear();
    // The vendor interface: directories "<name>:<config>.<interface>" beside the device's.
    for (const std::string &i : names) {
      if (i.rfind(n + ":", 0) != 0) continue;
      std::string num, cls;
      if (sys.text_read(root + "/" + i + "/bInterfaceNumber", &num) &&
          sys.text_read(root + "/" + i + "/bInterfaceClass", &cls) &&
          std::strtoul(num.c_str(), nullptr, 16) == BRIDGE_INTERFACE &&
          std::strtoul(cls.c_str(), nullptr, 16) == 0xff)
        dev.vendor_iface = true;
    }
    out.push_back(dev);
  }
  return out;
}

UsbfsTransport::UsbfsTransport(std::shared_ptr<usbfs_sys> sys, UsbfsDevice dev, int fd)
    : sys_(std::move(sys)), dev_(std::move(dev)), fd_(fd), bulk_chunk_(kBulkChunkMax) {
  name_ = "bridge " + sys_->kind() + dev_.describe();
}

UsbfsTransport::~UsbfsTransport() {
  if (fd_ < 0) return;
  unsigned iface = BRIDGE_INTERFACE;
  sys_->ioctl(fd_, USBDEVFS_RELEASEINTERFACE, &iface);
  sys_->close(fd_);
}

std::unique_ptr<UsbfsTransport> UsbfsTransport::open(std::shared_ptr<usbfs_sys> sys,
                                                     const std::string &serial,
                                                     std::string *error) {
  std::string why;
  std::vector<UsbfsDevice> all = usbfs_list_bridges(*sys, &why);
  if (!why.empty()) {
    *error = why;
    return nullptr;
  }
  std::string seen;
  bool any_ours = false;
  for (const UsbfsDevice &d : all) {
    if (d.stock) {
      seen += "; " + d.describe() + " runs stock firmware (flash ours with `capgraph flash`)";
      continue;
    }
    any_ours = true;
    if (!serial.empty() && !same_serial(serial, d.serial)) continue;
    if (!d.vendor_iface) {
      seen += "; " + d.describe() + " has no vendor interface " + std::to_string(BRIDGE_INTERFACE) +
              " in sysfs (old or broken firmware)";
      continue;
    }
    const std::string node = d.node();
    const int fd = sys->open(node.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      *error = "cannot open " + node + " (" + d.describe() + "): " + errno_text(e);
      if (e == EACCES || e == EPERM)
        *error +=
            ": no permission; install the udev rule drivers/usb/70-capgraph-bridge.rules "
            "(sudo cp it to /etc/udev/rules.d/, sudo udevadm control --reload-rules, replug)";
      else if (e == ENOENT || e == ENODEV)
        *error += ": the bridge went away (unplugged?)";
      return nullptr;
    }
    unsigned iface = BRIDGE_INTERFACE;
    if (sys->ioctl(fd, USBDEVFS_CLAIMINTERFACE, &iface) != 0) {
      const int e = errno;
      sys->close(fd);
      *error = "cannot claim interface " + std::to_string(iface) + " of " + d.describe() +
               " (USBDEVFS_CLAIMINTERFACE on " + node + "): " + errno_text(e);
      if (e == EBUSY)
        *error +=
            ": it is in use (another capgraph process, or a program or kernel driver that "
            "holds it; close that one first)";
      else if (e == ENODEV || e == ENOENT)
        *error += ": the bridge went away (unplugged?)";
      return nullptr;
    }
    return std::unique_ptr<UsbfsTransport>(new UsbfsTransport(sys, d, fd));
  }
  if (!any_ours && all.empty())
    *error = "no ASM2464PD attached (" + sys->kind() + "sysfs " + kUsbSysfsDevices + " lists none)";
  else if (!serial.empty() && any_ours)
    *error = "no bridge with serial " + serial + seen;
  else
    *error = "no bridge running capgraph firmware" + seen;
  return nullptr;
}

TransferStatus UsbfsTransport::control(const ControlRequest &r, uint8_t *data, uint16_t length,
                                       size_t *actual, unsigned timeout_ms) {
  *actual = 0;
  usbdevfs_ctrltransfer c{};
  c.bRequestType = r.request_type;
  c.bRequest = r.request;
  c.wValue = r.value;
  c.wIndex = r.index;
  c.wLength = length;
  c.timeout = timeout_ms;
  c.data = data;
  const int rc = sys_->ioctl(fd_, USBDEVFS_CONTROL, &c);
  if (rc < 0) return status_of_errno(errno);
  *actual = size_t(rc);
  return TransferStatus::ok;
}

TransferStatus UsbfsTransport::bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                                    unsigned timeout_ms) {
  *actual = 0;
  size_t done = 0;
  while (done < length) {
    const size_t chunk = std::min(length - done, bulk_chunk_);
    usbdevfs_bulktransfer b{};
    b.ep = endpoint;
    b.len = unsigned(chunk);
    b.timeout = timeout_ms;
    b.data = data + done;
    const int rc = sys_->ioctl(fd_, USBDEVFS_BULK, &b);
    if (rc < 0) {
      if (errno == ENOMEM && bulk_chunk_ > kBulkChunkMin) {
        bulk_chunk_ /= 2;  // nothing moved: the kernel could not buffer this size
        continue;
      }
      return status_of_errno(errno);
    }
    done += size_t(rc);
    *actual = done;
    if (size_t(rc) < chunk) break;  // a short packet: the device had no more
  }
  return TransferStatus::ok;
}

TransferStatus UsbfsTransport::in_await(uint8_t endpoint, uint8_t *data, size_t length,
                                        size_t *actual, unsigned timeout_ms) {
  *actual = 0;
  usbdevfs_urb urb{};
  urb.type = USBDEVFS_URB_TYPE_BULK;
  urb.endpoint = endpoint;
  urb.buffer = data;
  urb.buffer_length = int(length);
  if (sys_->ioctl(fd_, USBDEVFS_SUBMITURB, &urb) != 0) return status_of_errno(errno);
  // Sleep until the URB completes (POLLOUT) or the bound passes; never a spin.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  TransferStatus ended = TransferStatus::timeout;
  for (;;) {
    pollfd p{fd_, POLLOUT, 0};
    const long long left = std::chrono::duration_cast<std::chrono::milliseconds>(
                               deadline - std::chrono::steady_clock::now())
                               .count();
    const int n = sys_->poll(&p, 1, int(std::max<long long>(left, 0)));
    if (n < 0 && errno != EINTR) {
      ended = status_of_errno(errno);
      break;
    }
    if (n > 0) {
      void *got = nullptr;
      if (sys_->ioctl(fd_, USBDEVFS_REAPURBNDELAY, &got) == 0 && got == &urb) {
        // A device unplugged while the URB was queued gives it back with -ESHUTDOWN / -ENODEV.
        if (urb.status != 0) return status_of_errno(-urb.status);
        *actual = size_t(urb.actual_length);
        return TransferStatus::ok;
      }
      if (errno == ENODEV || (p.revents & (POLLERR | POLLHUP))) {
        ended = TransferStatus::no_device;
        break;
      }
    }
    if (left <= 0) break;
  }
  // Timed out (or failed): cancel it and collect it, so the kernel holds no pointer into `data`.
  sys_->ioctl(fd_, USBDEVFS_DISCARDURB, &urb);
  void *got = nullptr;
  for (int i = 0; i < 100; ++i) {
    pollfd p{fd_, POLLOUT, 0};
    sys_->poll(&p, 1, 10);
    if (sys_->ioctl(fd_, USBDEVFS_REAPURBNDELAY, &got) == 0 || errno == ENODEV) break;
  }
  return ended;
}

}  // namespace capgraph::usb
