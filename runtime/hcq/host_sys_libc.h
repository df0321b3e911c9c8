// The real system calls behind a transport's seam (host_sys.h): Seam is the transport's own seam
// class (kgsl_sys, nv_sys); what the seam adds beyond the five calls the real transport defines in
// a class derived from this one. ioctl is retried on EINTR/EAGAIN, as the vendors' libraries do.
#pragma once
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace capgraph::hcq {

template <class Seam>
class host_sys_libc : public Seam {
 public:
  int open(const char *path, int flags) override { return ::open(path, flags); }
  int close(int fd) override { return ::close(fd); }
  int ioctl(int fd, unsigned long request, void *arg) override {
    int r;
    do r = ::ioctl(fd, request, arg);
    while (r < 0 && (errno == EINTR || errno == EAGAIN));
    return r;
  }
  void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) override {
    return ::mmap(addr, length, prot, flags, fd, offset);
  }
  int munmap(void *addr, size_t length) override { return ::munmap(addr, length); }
};

}  // namespace capgraph::hcq
