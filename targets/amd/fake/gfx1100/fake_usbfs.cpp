// fake_usbfs — see fake_usbfs.h. What it answers, and where the real kernel's behaviour comes from
// (drivers/usb/core/devio.c, include/uapi/linux/usbdevice_fs.h): USBDEVFS_CONTROL and
// USBDEVFS_BULK return the bytes moved; a STALL is EPIPE, a timeout ETIMEDOUT, a device gone
// ENODEV; a submitted URB completes with urb->status and actual_length and is collected by
// REAPURBNDELAY (EAGAIN while none has completed); poll() reports POLLOUT when one has, and
// POLLERR | POLLHUP once the device is gone; DISCARDURB completes a pending URB with -ENOENT.
#include "fake_usbfs.h"

#include <linux/usbdevice_fs.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

#include "amd_hcq.h"
#include "amd_usbfs_device.h"
#include "asm2464_model.h"
#include "bridge_protocol.h"
#include "emu_transport.h"
#include "fake_amd.h"
#include "fake_usb.h"
#include "gfx1100_hcq.h"
#include "hcq/target.h"
#include "usbfs_transport.h"

namespace capgraph::emu {
namespace {

constexpr const char *kNode = "/dev/bus/usb/001/002";
constexpr int kFd = 1000;  // the one descriptor the fake hands out
constexpr const char *kBridgeDir = "1-1";

int fail_errno(int e) {
  errno = e;
  return -1;
}

int errno_of(usb::TransferStatus s) {
  switch (s) {
    case usb::TransferStatus::ok: return 0;
    case usb::TransferStatus::stall: return EPIPE;
    case usb::TransferStatus::timeout: return ETIMEDOUT;
    case usb::TransferStatus::no_device: return ENODEV;
    default: return EIO;
  }
}

std::string hex4(unsigned v) {
  char b[8];
  std::snprintf(b, sizeof b, "%04x", v);
  return b;
}

}  // namespace

struct fake_usbfs::state {
  fake_usbfs_options o;
  Asm2464 dev;
  EmuTransport wire{dev};
  Enumeration en;
  bool plugged = false, unplugged = false, opened = false, claimed = false;
  usbdevfs_urb *pending = nullptr;           // submitted, not yet complete
  usbdevfs_urb *complete = nullptr;          // complete, not yet reaped
  std::map<std::string, std::string> files;  // sysfs attribute path -> text
};

bool fake_usbfs_options_parse(const std::string &text, fake_usbfs_options *o, std::string *why) {
  const auto number = [](const std::string &v, long long *out) {
    char *stop = nullptr;
    *out = std::strtoll(v.c_str(), &stop, 10);
    return !v.empty() && stop && !*stop && *out >= 0;
  };
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    long long n = 0;
    bool ok = true;
    if (eq == std::string::npos) {
      bool *flag = key == "absent"         ? &o->absent
                   : key == "stock"        ? &o->stock
                   : key == "deny"         ? &o->deny
                   : key == "busy"         ? &o->busy
                   : key == "old_firmware" ? &o->old_firmware
                   : key == "stats"        ? &o->stats
                                           : nullptr;
      if ((ok = flag != nullptr)) *flag = true;
    } else if (key == "image") {
      o->image = value;
      ok = !value.empty();
    } else if (key == "unplug" && number(value, &n)) {
      o->unplug_after = n;
    } else if (key == "gpu_ms" && number(value, &n) && n <= 60000) {
      o->gpu_ms = unsigned(n);
    } else {
      ok = false;
    }
    if (!ok) {
      *why = "fake usbfs: '" + item +
             "' is not one of absent, stock, deny, busy, old_firmware, stats, unplug=N, "
             "image=PATH, gpu_ms=T";
      return false;
    }
  }
  return true;
}

fake_usbfs::fake_usbfs(fake_usbfs_options o, std::string *why) : s_(std::make_unique<state>()) {
  s_->o = std::move(o);
  emu_thread_ = std::thread([this] {
    std::unique_lock<std::mutex> l(m_);
    for (;;) {
      cv_.wait(l, [this] { return quit_ || (job_ && !job_done_); });
      if (quit_) return;
      job_();
      job_done_ = true;
      cv_.notify_all();
    }
  });
  // The root hub is always there; discovery must pass over it.
  const std::string root = usb::kUsbSysfsDevices;
  s_->files = {{root + "/usb1/idVendor", "1d6b"},
               {root + "/usb1/idProduct", "0003"},
               {root + "/usb1/busnum", "1"},
               {root + "/usb1/devnum", "1"},
               {root + "/1-0:1.0/bInterfaceNumber", "00"},
               {root + "/1-0:1.0/bInterfaceClass", "09"}};
  if (s_->o.absent) return;
  fake_usb_gpu_model().compute_delay_ms = s_->o.gpu_ms;
  on_emulator([&] {
    if (!fake_usb_bridge_plug(s_->dev, s_->o.image, why)) return;
    if (!usb_enumerate(s_->dev, &s_->en, why))
      *why = "USB enumeration: " + *why;
    else
      s_->plugged = true;
  });
  if (!s_->plugged) return;
  // sysfs from what enumeration read: the ids and serial in the device descriptor, the interface.
  const std::string d = root + "/" + kBridgeDir + "/", i = root + "/" + kBridgeDir + ":1.0/";
  s_->files[d + "idVendor"] = hex4(s_->o.stock ? BRIDGE_STOCK_VID : s_->en.vid);
  s_->files[d + "idProduct"] = hex4(s_->o.stock ? BRIDGE_STOCK_PID_2464 : s_->en.pid);
  s_->files[d + "busnum"] = "1";
  s_->files[d + "devnum"] = "2";
  if (!s_->en.serial.empty()) s_->files[d + "serial"] = s_->en.serial;
  s_->files[i + "bInterfaceNumber"] = "00";
  char cls[8];
  std::snprintf(cls, sizeof cls, "%02x", s_->en.interface_class);
  s_->files[i + "bInterfaceClass"] = cls;
}

fake_usbfs::~fake_usbfs() {
  {
    std::lock_guard<std::mutex> l(m_);
    quit_ = true;
  }
  cv_.notify_all();
  emu_thread_.join();
  if (s_->plugged) fake_usb_gpu_state_save();
  if (s_->o.stats && s_->plugged)
    std::fprintf(stderr,
                 "fake usbfs: %llu transfers (%llu of them bulk IN URBs the host slept on), "
                 "%llu polls\n",
                 (unsigned long long)stats_.transfers, (unsigned long long)stats_.urbs,
                 (unsigned long long)stats_.polls);
}

void fake_usbfs::on_emulator(const std::function<void()> &job) {
  std::unique_lock<std::mutex> l(m_);
  job_ = job;
  job_done_ = false;
  cv_.notify_all();
  cv_.wait(l, [this] { return job_done_; });
  job_ = nullptr;
}

bool fake_usbfs::dir_list(const std::string &path, std::vector<std::string> *names) {
  if (path != usb::kUsbSysfsDevices) return fail_errno(ENOENT), false;
  names->push_back("usb1");
  names->push_back("1-0:1.0");
  if (s_->plugged && !s_->unplugged) {
    names->push_back(kBridgeDir);
    names->push_back(std::string(kBridgeDir) + ":1.0");
  }
  return true;
}

bool fake_usbfs::text_read(const std::string &path, std::string *text) {
  const bool bridge = path.find(std::string("/") + kBridgeDir) != std::string::npos;
  auto it = s_->files.find(path);
  if (it == s_->files.end() || (bridge && s_->unplugged)) return fail_errno(ENOENT), false;
  *text = it->second;
  return true;
}

int fake_usbfs::open(const char *path, int flags) {
  if (!s_->plugged || s_->unplugged || std::string(path) != kNode) return fail_errno(ENOENT);
  if (s_->o.deny) return fail_errno(EACCES);  // crw-rw-r-- root:root without the udev rule
  if (s_->opened) return fail_errno(EMFILE);  // the fake hands out one descriptor
  s_->opened = true;
  return kFd;
}

int fake_usbfs::close(int fd) {
  if (fd != kFd || !s_->opened) return fail_errno(EBADF);
  s_->opened = false;
  s_->claimed = false;
  return 0;
}

int fake_usbfs::ioctl(int fd, unsigned long request, void *arg) {
  if (fd != kFd || !s_->opened) return fail_errno(EBADF);
  ++stats_.ioctls;
  // The bridge pulled out at the N-th transfer: that one and all after fail.
  const auto transfer_begins = [&] {
    ++stats_.transfers;
    if (s_->o.unplug_after >= 0 && stats_.transfers > uint64_t(s_->o.unplug_after) &&
        !s_->unplugged) {
      s_->unplugged = true;
      on_emulator([&] { s_->dev.unplug(); });
    }
    return !s_->unplugged;
  };
  if (s_->unplugged) return fail_errno(ENODEV);
  switch (request) {
    case USBDEVFS_CLAIMINTERFACE: {
      if (*static_cast<unsigned *>(arg) != BRIDGE_INTERFACE) return fail_errno(ENOENT);
      if (s_->o.busy) return fail_errno(EBUSY);  // another process holds it
      s_->claimed = true;
      return 0;
    }
    case USBDEVFS_RELEASEINTERFACE:
      if (!s_->claimed) return fail_errno(EINVAL);
      s_->claimed = false;
      return 0;
    case USBDEVFS_CONTROL: {
      auto *c = static_cast<usbdevfs_ctrltransfer *>(arg);
      if (!transfer_begins()) return fail_errno(ENODEV);
      usb::ControlRequest r{c->bRequestType, c->bRequest, c->wValue, c->wIndex};
      size_t actual = 0;
      usb::TransferStatus st;
      on_emulator([&] {
        st = s_->wire.control(r, static_cast<uint8_t *>(c->data), c->wLength, &actual, c->timeout);
      });
      if (st != usb::TransferStatus::ok) return fail_errno(errno_of(st));
      // An older image: INFO says protocol 1.2 (no WATCH), as firmware 0.3 did.
      if (s_->o.old_firmware && c->bRequest == BRIDGE_REQ_INFO && (c->bRequestType & 0x80) &&
          actual > BRIDGE_INFO_OFF_PROTO_MINOR)
        static_cast<uint8_t *>(c->data)[BRIDGE_INFO_OFF_PROTO_MINOR] = 2;
      return int(actual);
    }
    case USBDEVFS_BULK: {
      auto *b = static_cast<usbdevfs_bulktransfer *>(arg);
      if (!s_->claimed) return fail_errno(EINVAL);
      if (!transfer_begins()) return fail_errno(ENODEV);
      size_t actual = 0;
      usb::TransferStatus st;
      on_emulator([&] {
        st = s_->wire.bulk(uint8_t(b->ep), static_cast<uint8_t *>(b->data), b->len, &actual,
                           b->timeout);
      });
      if (st != usb::TransferStatus::ok) return fail_errno(errno_of(st));
      return int(actual);
    }
    case USBDEVFS_SUBMITURB: {
      auto *u = static_cast<usbdevfs_urb *>(arg);
      if (!s_->claimed || u->type != USBDEVFS_URB_TYPE_BULK || !(u->endpoint & 0x80))
        return fail_errno(EINVAL);  // the fake carries bulk IN URBs only
      if (s_->pending || s_->complete) return fail_errno(EBUSY);
      if (!transfer_begins()) return fail_errno(ENODEV);
      ++stats_.urbs;
      u->status = -EINPROGRESS;
      u->actual_length = 0;
      s_->pending = u;
      return 0;
    }
    case USBDEVFS_DISCARDURB: {
      if (!s_->pending || s_->pending != arg) return fail_errno(EINVAL);
      s_->pending->status = -ENOENT;
      s_->complete = s_->pending;
      s_->pending = nullptr;
      return 0;
    }
    case USBDEVFS_REAPURBNDELAY: {
      if (!s_->complete) return fail_errno(EAGAIN);
      *static_cast<void **>(arg) = s_->complete;
      s_->complete = nullptr;
      return 0;
    }
    default: return fail_errno(ENOTTY);
  }
}

int fake_usbfs::poll(pollfd *fds, nfds_t n, int timeout_ms) {
  if (n != 1 || fds[0].fd != kFd || !s_->opened) return fail_errno(EINVAL);
  ++stats_.polls;
  fds[0].revents = 0;
  if (s_->unplugged) {
    fds[0].revents = POLLERR | POLLHUP;
    return 1;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms < 0 ? 0 : timeout_ms);
  if (s_->pending) {
    // The device answers when its firmware arms the IN endpoint: run the emulated bridge (on its
    // thread; this one sleeps) in slices of emulated time until it does or the wall-clock bound
    // passes, as the kernel's wait would.
    usbdevfs_urb *u = s_->pending;
    usb::TransferStatus st = usb::TransferStatus::timeout;
    size_t actual = 0;
    on_emulator([&] {
      do {
        st = s_->wire.bulk(u->endpoint, static_cast<uint8_t *>(u->buffer), size_t(u->buffer_length),
                           &actual, 2);
      } while (st == usb::TransferStatus::timeout && std::chrono::steady_clock::now() < deadline);
    });
    if (st != usb::TransferStatus::timeout) {
      u->status = -errno_of(st);
      u->actual_length = int(actual);
      s_->complete = u;
      s_->pending = nullptr;
    }
  } else if (!s_->complete) {
    std::this_thread::sleep_until(deadline);
  }
  if (s_->complete) fds[0].revents = POLLOUT | POLLWRNORM;
  return fds[0].revents ? 1 : 0;
}

}  // namespace capgraph::emu

namespace capgraph::amd {
namespace {

bool options_from_env(emu::fake_usbfs_options *o, std::string *why) {
  const char *env = std::getenv("CAPGRAPH_FAKE_USBFS");
  return emu::fake_usbfs_options_parse(env ? env : "", o, why);
}

}  // namespace

void fake_usbfs_register() {
  hcq::target_register(
      "usb",
      [](const char *device, std::unique_ptr<hcq::transport> *out, std::string *err) {
        emu::fake_usbfs_options fo;
        std::string why;
        if (!options_from_env(&fo, &why))
          return *err = why + " (CAPGRAPH_FAKE_USBFS)", CAPGRAPH_ERR_ARGUMENT;
        const std::string &fw_dir = emu::fake_usb_firmware_dir();
        if (fw_dir.empty()) {
          *err = "fake usbfs: cannot write the synthetic gfx1100 firmware files";
          return CAPGRAPH_ERR_DEVICE;
        }
        if (!emu::fake_usb_gpu_state_load(&why))
          return *err = "fake usbfs: " + why, CAPGRAPH_ERR_DEVICE;
        // One fake machine while a model holds its bridge: a second fake would plug another
        // bridge in front of the process's one GPU model under the first model's session.
        static std::weak_ptr<emu::fake_usbfs> live;
        std::shared_ptr<emu::fake_usbfs> fake = live.lock();
        if (!fake) {
          fake = std::make_shared<emu::fake_usbfs>(fo, &why);
          if (!why.empty())
            return *err = "fake usbfs: the emulated bridge: " + why, CAPGRAPH_ERR_DEVICE;
          live = fake;
        }
        am::device_options o;
        o.firmware_dir = fw_dir;
        const capgraph_status st = usbfs_gpu_open(fake, device, o, out, err);
        if (st == CAPGRAPH_OK) std::fprintf(stderr, "%s\n", (*out)->name().c_str());
        return st;
      },
      &hcq::amd_target,
      [] {
        emu::fake_usbfs_options fo;
        std::string why;
        if (!options_from_env(&fo, &why)) return "usb: " + why + "\n";
        auto fake = std::make_shared<emu::fake_usbfs>(fo, &why);
        return usbfs_gpu_describe(fake);
      },
      [](hcq::transport *t, const fb::Capture *c, const std::vector<uint64_t> &at,
         std::string *err) {
        // The queues run on the process's GPU model, whichever session booted it; the transport
        // is usbfs_gpu_open's am_transport.
        return emu::gfx1100_capture_attach(*static_cast<amd::am_transport *>(t),
                                           emu::fake_usb_gpu_model(), c, at, err);
      });
}

}  // namespace capgraph::amd
