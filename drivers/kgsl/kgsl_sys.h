// The seam under the KGSL transport: the five system calls it makes (open, close, ioctl, mmap,
// munmap), so a fake KGSL (targets/adreno/fake_kgsl.*) can sit at the ioctl boundary and the
// real transport code runs unchanged against it (the way tinygrad's mock GPUs replace the driver,
// not the runtime). Calls return what the libc calls return and set errno the same way.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"

namespace capgraph::kgsl {

class kgsl_sys {
 public:
  virtual ~kgsl_sys() = default;
  virtual int open(const char *path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void *arg) = 0;
  virtual void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) = 0;
  virtual int munmap(void *addr, size_t length) = 0;
  // For fakes only (a real driver needs nothing): the capture and its programs' GPU addresses,
  // once at load, so a fake can run each dispatch as the kernel's host twin.
  virtual capgraph_status capture_attach(const fb::Capture *, const std::vector<uint64_t> &,
                                         std::string *) {
    return CAPGRAPH_OK;
  }
  // For messages: "" for the real driver, "fake " for a fake.
  virtual std::string kind() const { return ""; }
};

// The real system calls.
std::shared_ptr<kgsl_sys> kgsl_sys_host();

}  // namespace capgraph::kgsl
