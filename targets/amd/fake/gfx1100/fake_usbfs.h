// fake_usbfs — Linux's usbfs and the sysfs USB tree, faked at the usbfs_sys seam
// (drivers/usb/usbfs_sys.h), with the emulated ASM2464PD (tests/emu) running our firmware image
// and the register-model gfx1100 (gfx1100_model.h) behind the ioctls. The runtime's `usb` device
// (targets/amd/amd_usbfs_device.cpp) runs unchanged against it: discovery in the fake sysfs, the
// open of /dev/bus/usb/001/002, USBDEVFS_CLAIMINTERFACE, CONTROL, BULK, SUBMITURB, REAPURBNDELAY,
// DISCARDURB and poll. The transfers run on an emulator thread of their own, as the kernel and
// the device do: the caller's thread sleeps while they run, so its CPU time is the host's.
//
// Faults, to test the transport's messages (fake_usbfs_options, or CAPGRAPH_FAKE_USBFS as a
// comma-separated list): absent (sysfs lists no bridge), stock (the stock ASMedia ids), deny (the
// node's open fails EACCES, no udev rule), busy (CLAIMINTERFACE fails EBUSY), old_firmware (INFO
// says protocol 1.2, as an image without the signal watch does), unplug=N (the
// bridge is pulled out at the N-th transfer: it and every later one fail ENODEV, sysfs drops it),
// image=PATH (the bridge firmware image; else $CAPGRAPH_BRIDGE_IMAGE or bridge_fw.img beside the
// program), gpu_ms=T (the GPU takes T ms after each compute doorbell before it runs the queue),
// stats (print the transfers counted, on stderr, when the fake goes).
#pragma once

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "usbfs_sys.h"

namespace capgraph::emu {

struct fake_usbfs_options {
  bool absent = false, stock = false, deny = false, busy = false;
  bool old_firmware = false;    // INFO says protocol 1.2: no signal watch
  bool stats = false;           // print the transfers counted when the fake goes
  long long unplug_after = -1;  // transfers answered before the bridge goes; -1 never
  std::string image;
  unsigned gpu_ms = 0;
};
// Parses "absent,busy,unplug=40,..."; false with *why naming the item it does not know.
bool fake_usbfs_options_parse(const std::string &text, fake_usbfs_options *o, std::string *why);

struct fake_usbfs_stats {
  uint64_t ioctls = 0, transfers = 0, urbs = 0, polls = 0;
};

class fake_usbfs final : public usb::usbfs_sys {
 public:
  // Plugs the emulated bridge in (unless absent): firmware image, power on, enumeration, whose
  // descriptors fill the sysfs tree. *why says what failed; the fake then lists no bridge.
  fake_usbfs(fake_usbfs_options o, std::string *why);
  ~fake_usbfs() override;

  int open(const char *path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void *arg) override;
  int poll(pollfd *fds, nfds_t n, int timeout_ms) override;
  bool dir_list(const std::string &path, std::vector<std::string> *names) override;
  bool text_read(const std::string &path, std::string *text) override;
  std::string kind() const override { return "fake "; }
  const fake_usbfs_stats &stats() const { return stats_; }

 private:
  struct state;
  std::unique_ptr<state> s_;
  fake_usbfs_stats stats_;
  // Runs `job` on the emulator thread; the caller sleeps until it is done.
  void on_emulator(const std::function<void()> &job);
  std::thread emu_thread_;
  std::mutex m_;
  std::condition_variable cv_;
  std::function<void()> job_;
  bool job_done_ = false, quit_ = false;
};

}  // namespace capgraph::emu

namespace capgraph::amd {
// Registers `usb` again (replacing the runtime's) over a fake_usbfs configured from
// $CAPGRAPH_FAKE_USBFS, for capgraph-run-fake-usbfs and the tests.
void fake_usbfs_register();
}  // namespace capgraph::amd
