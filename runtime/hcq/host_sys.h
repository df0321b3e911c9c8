// The seam under a kernel-driver transport: the five system calls a GPU driver's userspace half
// makes (open, close, ioctl, mmap, munmap). Each transport's own seam (drivers/kgsl/kgsl_sys.h,
// drivers/nv/nv_sys.h) adds what only it needs; a fake driver answers these calls at the ioctl
// boundary so the real transport code runs unchanged against it (the way tinygrad's mock GPUs
// replace the driver, not the runtime). Calls return what the libc calls return and set errno
// the same way.
#pragma once
#include <sys/types.h>

#include <cstddef>

namespace capgraph::hcq {

class host_sys {
 public:
  virtual ~host_sys() = default;
  virtual int open(const char *path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void *arg) = 0;
  virtual void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) = 0;
  virtual int munmap(void *addr, size_t length) = 0;
};

}  // namespace capgraph::hcq
