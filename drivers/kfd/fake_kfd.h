// A fake /dev/kfd and render nodes at the KFD transport's system-call seam (kfd_paths::sys), for
// tests: the real transport code (kfd_transport.cpp) runs unchanged against it. It models the
// rules of one process's KFD that decide whether two models can share a GPU, from Linux amdkfd
// (kfd_chardev.c, kfd_process.c, kfd_events.c; facts only):
// - one kfd_process per process: every open of /dev/kfd is the same process, which outlives its
//   files (until the process exits; here, until the fake is destroyed);
// - AMDKFD_IOC_ACQUIRE_VM binds a GPU of the process to one DRM file for good: the same file
//   again succeeds, another fails with EBUSY, and closing the fd does not unbind it;
// - one event page per process: a second one is EINVAL, freeing it is EPERM;
// - memory needs the GPU's VM, and two allocations may not overlap in it (EINVAL);
// - each GPU has one doorbell page per process, mmap'ed from /dev/kfd at the base of the
//   doorbell offsets CREATE_QUEUE returns.
// GPU memory is host memory mapped at the address the client reserved. The fake runs no packets
// itself: an engine attached with engine_attach (fake-kfd, targets/amd/fake/fake_kfd_device.cpp:
// fake-amd's packet engine) is told what is mapped and queued and runs at each WAIT_EVENTS, since
// a doorbell is a store the fake cannot see. Thread-safe.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hcq/host_sys.h"

namespace capgraph::kfd {

class fake_kfd final : public hcq::host_sys {
 public:
  struct gpu {
    uint32_t gpu_id;
    uint32_t render_minor;
  };
  fake_kfd(std::string kfd_path, std::string dri, std::vector<gpu> gpus);

  int open(const char *path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void *arg) override;
  void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) override;
  int munmap(void *addr, size_t length) override;

  // The next call of `request` (an AMDKFD_IOC_*) fails with errno `e`, as a driver may (ENOMEM).
  void fail_once(unsigned long request, int e);
  // Asked before every call (open, close, each ioctl, mmap, munmap) with the call's name and its
  // likely errno: the errno to fail it with, or 0. A call that releases something (close,
  // munmap, UNMAP, FREE, DESTROY_*) releases it, then fails, as close(2) does. Null: none fail.
  void inject_set(std::function<int(const char *what, int default_error)> f);
  // Runs f under the fake's lock (to change what inject's function reads).
  void run_locked(const std::function<void()> &f) {
    std::lock_guard<std::mutex> hold(lock_);
    f();
  }

  // A GPU behind the fake. Each hook is called with the fake's lock held: `memory` when a range
  // is mapped to the GPU (true) or unmapped (false); `queue` when one is created (ring, its
  // bytes, the write and read pointers' addresses; compute or SDMA) or destroyed (ring_bytes 0);
  // `run` at each WAIT_EVENTS, before it returns.
  struct engine {
    std::function<void(uint64_t va, uint64_t size, bool mapped)> memory;
    std::function<void(uint32_t id, bool compute, uint64_t ring, uint64_t ring_bytes,
                       uint64_t write_ptr, uint64_t read_ptr)>
        queue;
    std::function<void()> run;
  };
  void engine_attach(engine e);

  // What was called and what is live.
  struct counts {
    int kfd_opens = 0, drm_opens = 0, acquire_vm = 0, doorbell_maps = 0, event_pages = 0;
    int open_fds = 0, memory = 0, queues = 0, events = 0;
    int client_objects = 0;  // memory (less the kept event page), queues and events
  };
  counts now() const;
  // The first call that broke a rule above, with the errno it got ("" if none).
  std::string refused() const;
  // The GPU address range of every live allocation (for overlap checks by the test).
  std::vector<std::pair<uint64_t, uint64_t>> ranges() const;

 private:
  struct bo {
    uint32_t gpu_id;
    uint64_t va, size, mmap_offset;
    bool mapped = false;
  };
  int fail(int e, const std::string &why);  // records, sets errno, returns -1
  int kfd_ioctl(unsigned long request, void *arg);
  int injected(const char *what, int default_error);  // inject_'s errno, 0 when none
  bool vm_bound(uint32_t gpu_id) const { return vm_file_.count(gpu_id) != 0; }
  static uint64_t doorbell_base(size_t gpu_index) { return (uint64_t(gpu_index) + 1) << 36; }

  mutable std::mutex lock_;
  std::string kfd_path_, dri_;
  std::vector<gpu> gpus_;
  int next_fd_ = 1000;
  std::map<int, int> fds_;                // fd -> 0 for /dev/kfd, else the DRM file's id
  std::map<int, uint32_t> drm_file_gpu_;  // DRM file id -> its GPU id
  int next_file_ = 1;
  std::map<uint32_t, int> vm_file_;  // GPU id -> the DRM file its VM is bound to
  std::map<uint64_t, bo> bos_;       // by handle
  uint64_t next_handle_ = 1;
  std::map<uint32_t, uint32_t> queues_;  // queue id -> GPU id
  std::set<uint32_t> events_;            // ids (= slots)
  uint64_t event_page_ = 0;              // the handle, 0 while unset
  counts counts_;
  std::string refused_;
  std::map<unsigned long, int> fail_once_;  // request -> errno
  engine engine_;
  std::function<int(const char *, int)> inject_;
};

}  // namespace capgraph::kfd
