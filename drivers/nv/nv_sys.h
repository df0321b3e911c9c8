// The seam under the NVIDIA transport: every call it makes into the operating system. The real
// one (nv_sys_linux) is open/close/ioctl/mmap/munmap and a plain store for the doorbell; a fake
// (targets/nv/fake_nv.h) answers the same calls at the ioctl boundary, so the transport's whole
// RM/UVM sequence runs unchanged in the tests.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"

namespace capgraph::nv {

class nv_sys {
 public:
  virtual ~nv_sys() = default;
  // As the libc calls: -1 (or MAP_FAILED) with errno set on failure.
  virtual int open(const char *path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void *arg) = 0;
  virtual void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) = 0;
  virtual int munmap(void *addr, size_t length) = 0;
  // The doorbell: a 32-bit store of the channel's work-submit token into the usermode page.
  virtual void doorbell_write(volatile uint32_t *at, uint32_t token) = 0;
  // For fakes (transport::capture_attach passes it on): the capture and where its programs are.
  virtual bool capture_attach(const fb::Capture *, const std::vector<uint64_t> &, std::string *) { return true; }
  // A fake's fault, reported by waits ("" when none).
  virtual std::string fault() const { return ""; }
  // What sits behind the seam, for messages ("" for the real driver).
  virtual std::string what() const { return ""; }
};

std::shared_ptr<nv_sys> nv_sys_linux();

}  // namespace capgraph::nv
