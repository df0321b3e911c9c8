// usbfs_sys — the seam under the usbfs bridge transport (usbfs_transport.h): the system calls a
// program makes to talk to a USB device through Linux's usbfs without libusb, as host_sys
// (runtime/hcq/host_sys.h) is for the KGSL and NVIDIA transports. open, close and ioctl on
// /dev/bus/usb/BBB/DDD, poll to sleep until an asynchronous transfer completes, and the two reads
// discovery makes in sysfs (/sys/bus/usb/devices: a directory's entries, a small attribute file).
// A fake (targets/amd/fake/gfx1100/fake_usbfs.*) answers these with a sysfs tree of its own and the
// emulated bridge behind the ioctls, so the real transport code runs unchanged against it. Calls
// return what the libc calls return and set errno the same way.
#pragma once
#include <poll.h>

#include <memory>
#include <string>
#include <vector>

namespace capgraph::usb {

class usbfs_sys {
 public:
  virtual ~usbfs_sys() = default;
  virtual int open(const char *path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void *arg) = 0;
  virtual int poll(pollfd *fds, nfds_t n, int timeout_ms) = 0;
  // The names in directory `path` ("." and ".." left out); false with errno set when unreadable.
  virtual bool dir_list(const std::string &path, std::vector<std::string> *names) = 0;
  // A sysfs attribute's text, without its trailing newline; false with errno set when unreadable.
  virtual bool text_read(const std::string &path, std::string *text) = 0;
  // For messages: "" for the real kernel, "fake " for a fake.
  virtual std::string kind() const { return ""; }
};

// The real system calls and files.
std::shared_ptr<usbfs_sys> usbfs_sys_host();

}  // namespace capgraph::usb
