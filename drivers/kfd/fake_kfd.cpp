#include "fake_kfd.h"

#include <linux/kfd_ioctl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>

namespace capgraph::kfd {

fake_kfd::fake_kfd(std::string kfd_path, std::string dri, std::vector<gpu> gpus)
    : kfd_path_(std::move(kfd_path)), dri_(std::move(dri)), gpus_(std::move(gpus)) {}

int fake_kfd::fail(int e, const std::string &why) {
  if (refused_.empty()) refused_ = why + ": " + strerror(e);
  errno = e;
  return -1;
}

fake_kfd::counts fake_kfd::now() const {
  std::lock_guard<std::mutex> hold(lock_);
  counts c = counts_;
  c.open_fds = int(fds_.size());
  c.memory = int(bos_.size());
  c.queues = int(queues_.size());
  c.events = int(events_.size());
  c.client_objects =
      c.memory - (event_page_ && bos_.count(event_page_) ? 1 : 0) + c.queues + c.events;
  return c;
}

std::string fake_kfd::refused() const {
  std::lock_guard<std::mutex> hold(lock_);
  return refused_;
}

std::vector<std::pair<uint64_t, uint64_t>> fake_kfd::ranges() const {
  std::lock_guard<std::mutex> hold(lock_);
  std::vector<std::pair<uint64_t, uint64_t>> r;
  for (const auto &[handle, b] : bos_) r.emplace_back(b.va, b.size);
  return r;
}

int fake_kfd::open(const char *path, int) {
  std::lock_guard<std::mutex> hold(lock_);
  if (const int e = injected("open", ENOMEM)) return errno = e, -1;
  const std::string p = path;
  if (p == kfd_path_) {  // every open is the same kfd_process
    ++counts_.kfd_opens;
    fds_[next_fd_] = 0;
    return next_fd_++;
  }
  for (const gpu &g : gpus_)
    if (p == dri_ + "/renderD" + std::to_string(g.render_minor)) {
      ++counts_.drm_opens;
      drm_file_gpu_[next_file_] = g.gpu_id;
      fds_[next_fd_] = next_file_++;
      return next_fd_++;
    }
  errno = ENOENT;
  return -1;
}

int fake_kfd::close(int fd) {
  std::lock_guard<std::mutex> hold(lock_);
  // The kfd_process and a DRM file its VM holds outlive the fd.
  if (!fds_.erase(fd)) return fail(EBADF, "close of fd " + std::to_string(fd));
  if (const int e = injected("close", EIO)) return errno = e, -1;  // closed all the same
  return 0;
}

int fake_kfd::ioctl(int fd, unsigned long request, void *arg) {
  std::lock_guard<std::mutex> hold(lock_);
  auto it = fds_.find(fd);
  if (it == fds_.end()) return fail(EBADF, "ioctl on fd " + std::to_string(fd));
  if (it->second != 0) return fail(ENOTTY, "ioctl on a render node");  // none are used
  struct call {
    unsigned long request;
    const char *name;
    int error;
    bool releases;
  };
  static const call calls[] = {
      {AMDKFD_IOC_GET_VERSION, "ioctl AMDKFD_IOC_GET_VERSION", EINVAL, false},
      {AMDKFD_IOC_ACQUIRE_VM, "ioctl AMDKFD_IOC_ACQUIRE_VM", ENOMEM, false},
      {AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, "ioctl AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", ENOMEM, false},
      {AMDKFD_IOC_MAP_MEMORY_TO_GPU, "ioctl AMDKFD_IOC_MAP_MEMORY_TO_GPU", ENOMEM, false},
      {AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, "ioctl AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU", EIO, true},
      {AMDKFD_IOC_FREE_MEMORY_OF_GPU, "ioctl AMDKFD_IOC_FREE_MEMORY_OF_GPU", EIO, true},
      {AMDKFD_IOC_CREATE_QUEUE, "ioctl AMDKFD_IOC_CREATE_QUEUE", ENOMEM, false},
      {AMDKFD_IOC_DESTROY_QUEUE, "ioctl AMDKFD_IOC_DESTROY_QUEUE", EIO, true},
      {AMDKFD_IOC_CREATE_EVENT, "ioctl AMDKFD_IOC_CREATE_EVENT", ENOMEM, false},
      {AMDKFD_IOC_DESTROY_EVENT, "ioctl AMDKFD_IOC_DESTROY_EVENT", EIO, true},
      {AMDKFD_IOC_WAIT_EVENTS, "ioctl AMDKFD_IOC_WAIT_EVENTS", EIO, false},
  };
  for (const call &c : calls)
    if (c.request == request)
      if (const int e = injected(c.name, c.error)) {
        if (c.releases) kfd_ioctl(request, arg);
        errno = e;
        return -1;
      }
  return kfd_ioctl(request, arg);
}

void fake_kfd::engine_attach(engine e) {
  std::lock_guard<std::mutex> hold(lock_);
  engine_ = std::move(e);
}

void fake_kfd::inject_set(std::function<int(const char *, int)> f) {
  std::lock_guard<std::mutex> hold(lock_);
  inject_ = std::move(f);
}

int fake_kfd::injected(const char *what, int default_error) {
  return inject_ ? inject_(what, default_error) : 0;
}

void fake_kfd::fail_once(unsigned long request, int e) {
  std::lock_guard<std::mutex> hold(lock_);
  fail_once_[request] = e;
}

int fake_kfd::kfd_ioctl(unsigned long request, void *arg) {
  auto once = fail_once_.find(request);
  if (once != fail_once_.end()) {
    const int e = once->second;
    fail_once_.erase(once);
    errno = e;  // a driver's failure, not a broken rule: not recorded in refused()
    return -1;
  }
  switch (request) {
    case AMDKFD_IOC_GET_VERSION: {
      auto *a = static_cast<kfd_ioctl_get_version_args *>(arg);
      a->major_version = 1;
      a->minor_version = 14;
      return 0;
    }
    case AMDKFD_IOC_ACQUIRE_VM: {
      // kfd_chardev.c kfd_ioctl_acquire_vm / kfd_process.c kfd_process_device_init_vm.
      auto *a = static_cast<kfd_ioctl_acquire_vm_args *>(arg);
      ++counts_.acquire_vm;
      auto f = fds_.find(int(a->drm_fd));
      if (f == fds_.end() || f->second == 0) return fail(EBADF, "ACQUIRE_VM of a non-DRM fd");
      if (drm_file_gpu_[f->second] != a->gpu_id)
        return fail(EINVAL, "ACQUIRE_VM with another GPU's render node");
      auto bound = vm_file_.find(a->gpu_id);
      if (bound != vm_file_.end())
        return bound->second == f->second
                   ? 0
                   : fail(EBUSY, "ACQUIRE_VM of GPU " + std::to_string(a->gpu_id) +
                                     " with a second DRM file");
      vm_file_[a->gpu_id] = f->second;
      return 0;
    }
    case AMDKFD_IOC_ALLOC_MEMORY_OF_GPU: {
      auto *a = static_cast<kfd_ioctl_alloc_memory_of_gpu_args *>(arg);
      if (!vm_bound(a->gpu_id)) return fail(EINVAL, "ALLOC_MEMORY_OF_GPU before ACQUIRE_VM");
      if (!a->size || a->size % 4096 || a->va_addr % 4096)
        return fail(EINVAL, "ALLOC_MEMORY_OF_GPU of an unaligned range");
      for (const auto &[h, b] : bos_)
        if (b.gpu_id == a->gpu_id && a->va_addr < b.va + b.size && b.va < a->va_addr + a->size)
          return fail(EINVAL, "ALLOC_MEMORY_OF_GPU over another allocation in the VM");
      const uint64_t handle = next_handle_++;
      bos_[handle] = {a->gpu_id, a->va_addr, a->size, handle << 32};
      a->handle = handle;
      a->mmap_offset = handle << 32;
      return 0;
    }
    case AMDKFD_IOC_MAP_MEMORY_TO_GPU:
    case AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU: {
      // The two argument structs start alike: handle, device ids, count, count done.
      auto *a = static_cast<kfd_ioctl_map_memory_to_gpu_args *>(arg);
      auto b = bos_.find(a->handle);
      if (b == bos_.end()) return fail(EINVAL, "(UN)MAP_MEMORY of an unknown handle");
      const bool map = request == AMDKFD_IOC_MAP_MEMORY_TO_GPU;
      if (b->second.mapped == map) return fail(EINVAL, "(UN)MAP_MEMORY twice");
      b->second.mapped = map;
      a->n_success = a->n_devices;
      if (engine_.memory) engine_.memory(b->second.va, b->second.size, map);
      return 0;
    }
    case AMDKFD_IOC_FREE_MEMORY_OF_GPU: {
      auto *a = static_cast<kfd_ioctl_free_memory_of_gpu_args *>(arg);
      if (a->handle == event_page_) return fail(EPERM, "FREE_MEMORY_OF_GPU of the event page");
      auto b = bos_.find(a->handle);
      if (b == bos_.end()) return fail(EINVAL, "FREE_MEMORY_OF_GPU of an unknown handle");
      if (b->second.mapped && engine_.memory) engine_.memory(b->second.va, b->second.size, false);
      bos_.erase(b);
      return 0;
    }
    case AMDKFD_IOC_CREATE_QUEUE: {
      auto *a = static_cast<kfd_ioctl_create_queue_args *>(arg);
      if (!vm_bound(a->gpu_id)) return fail(EINVAL, "CREATE_QUEUE before ACQUIRE_VM");
      const auto inside = [&](uint64_t va) {
        for (const auto &[h, b] : bos_)
          if (b.gpu_id == a->gpu_id && b.mapped && va >= b.va && va < b.va + b.size) return true;
        return false;
      };
      if (!inside(a->ring_base_address) || !inside(a->write_pointer_address) ||
          !inside(a->read_pointer_address))
        return fail(EINVAL, "CREATE_QUEUE with a ring or pointer outside mapped memory");
      uint32_t id = 0;  // the lowest free, as KFD's queue bitmap gives
      while (queues_.count(id)) ++id;
      if (id >= 1024) return fail(ENOMEM, "CREATE_QUEUE past 1024 queues");
      size_t index = 0;
      while (gpus_[index].gpu_id != a->gpu_id) ++index;
      queues_[id] = a->gpu_id;
      a->queue_id = id;
      if (engine_.queue)
        engine_.queue(id, a->queue_type == KFD_IOC_QUEUE_TYPE_COMPUTE, a->ring_base_address,
                      a->ring_size, a->write_pointer_address, a->read_pointer_address);
      a->doorbell_offset = doorbell_base(index) + 8ull * id;
      return 0;
    }
    case AMDKFD_IOC_DESTROY_QUEUE: {
      auto *a = static_cast<kfd_ioctl_destroy_queue_args *>(arg);
      if (!queues_.erase(a->queue_id)) return fail(EINVAL, "DESTROY_QUEUE of an unknown queue");
      if (engine_.queue) engine_.queue(a->queue_id, false, 0, 0, 0, 0);
      return 0;
    }
    case AMDKFD_IOC_CREATE_EVENT: {
      auto *a = static_cast<kfd_ioctl_create_event_args *>(arg);
      if (a->event_type != KFD_IOC_EVENT_SIGNAL) return fail(EINVAL, "CREATE_EVENT not a signal");
      if (a->event_page_offset) {
        if (event_page_) return fail(EINVAL, "CREATE_EVENT with a second event page");
        auto b = bos_.find(a->event_page_offset);
        if (b == bos_.end()) return fail(EINVAL, "CREATE_EVENT with an unknown event page");
        event_page_ = a->event_page_offset;
        ++counts_.event_pages;
      } else if (!event_page_) {
        // KFD would allocate a page of its own, which a dGPU's queues cannot reach: the
        // transport must not rely on it.
        return fail(EINVAL, "CREATE_EVENT before the event page is set (not modelled)");
      }
      uint32_t id = 0;  // a signal event's id is its slot
      while (events_.count(id)) ++id;
      events_.insert(id);
      a->event_id = id;
      a->event_slot_index = id;
      return 0;
    }
    case AMDKFD_IOC_DESTROY_EVENT: {
      auto *a = static_cast<kfd_ioctl_destroy_event_args *>(arg);
      if (!events_.erase(a->event_id)) return fail(EINVAL, "DESTROY_EVENT of an unknown event");
      return 0;
    }
    case AMDKFD_IOC_WAIT_EVENTS: {
      // No interrupts are modelled: the engine (if any) runs, the wait ends at once and the
      // caller re-reads its signal.
      auto *a = static_cast<kfd_ioctl_wait_events_args *>(arg);
      auto *ev = reinterpret_cast<kfd_event_data *>(uintptr_t(a->events_ptr));
      for (uint32_t i = 0; i < a->num_events; ++i)
        if (!events_.count(ev[i].event_id)) return fail(EINVAL, "WAIT_EVENTS on an unknown event");
      if (engine_.run) engine_.run();
      a->wait_result = KFD_IOC_WAIT_RESULT_COMPLETE;
      return 0;
    }
  }
  return fail(EINVAL, "an ioctl the fake does not know");
}

void *fake_kfd::mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) {
  std::lock_guard<std::mutex> hold(lock_);
  if (const int e = injected("mmap", ENOMEM)) return errno = e, MAP_FAILED;
  if (fd < 0) return ::mmap(addr, length, prot, flags, fd, offset);  // address space only
  auto it = fds_.find(fd);
  bool known = false;
  if (it != fds_.end() && it->second != 0) {  // a BO's CPU view, from the render node
    for (const auto &[h, b] : bos_)
      known |= b.mmap_offset == uint64_t(offset) && b.va == uint64_t(uintptr_t(addr)) &&
               b.size == length && drm_file_gpu_[it->second] == b.gpu_id;
    if (!known || !(flags & MAP_FIXED)) {
      fail(EINVAL, "mmap of a render node at no allocation's offset and address");
      return MAP_FAILED;
    }
  } else if (it != fds_.end()) {  // the doorbell page of a GPU, from /dev/kfd
    for (size_t i = 0; i < gpus_.size(); ++i)
      known |= uint64_t(offset) == doorbell_base(i) && vm_bound(gpus_[i].gpu_id);
    if (!known || length != 0x2000) {
      fail(EINVAL, "mmap of /dev/kfd at no GPU's doorbell page");
      return MAP_FAILED;
    }
    ++counts_.doorbell_maps;
  } else {
    fail(EBADF, "mmap of fd " + std::to_string(fd));
    return MAP_FAILED;
  }
  // Host memory stands for both.
  return ::mmap(addr, length, prot, (flags & MAP_FIXED) | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
}

int fake_kfd::munmap(void *addr, size_t length) {
  std::lock_guard<std::mutex> hold(lock_);
  const int r = ::munmap(addr, length);
  if (const int e = injected("munmap", EINVAL)) return errno = e, -1;  // unmapped all the same
  return r;
}

}  // namespace capgraph::kfd
