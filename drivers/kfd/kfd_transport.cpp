#include "kfd_transport.h"

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "amd_chips.h"
#include "clock_text.h"
#include "hcq/signal.h"
#include "hcq/wait.h"

namespace capgraph::kfd {
namespace {

std::string errno_text(int e) { return std::string(strerror(e)); }

int ioctl_retry(int fd, unsigned long request, void *arg) {
  int r;
  do r = ioctl(fd, request, arg);
  while (r < 0 && (errno == EINTR || errno == EAGAIN));
  return r;
}

// Compute queues need an end-of-pipe buffer and a context save area for wave save/restore.
// Sizes as tinygrad uses them for gfx11 (KFD checks them against its own minimum).
constexpr uint64_t kEopBytes = 0x1000;
constexpr uint64_t kCtxSaveBytes = 0x2C02000;
constexpr uint32_t kCtlStackBytes = 0xa000;

class kfd_transport final : public hcq::transport {
 public:
  kfd_transport(int kfd, int drm, const gpu_node &node, std::string render)
      : kfd_(kfd), drm_(drm), node_(node), render_(std::move(render)) {}
  ~kfd_transport() override {
    if (events_) {
      kfd_ioctl_destroy_event_args d{};
      d.event_id = event_id_;
      ioctl_retry(kfd_, AMDKFD_IOC_DESTROY_EVENT, &d);
    }
    free(event_page_);
    if (doorbells_) munmap(doorbells_, kDoorbellBytes);
    if (drm_ >= 0) close(drm_);
    if (kfd_ >= 0) close(kfd_);
  }

  std::string name() const override {
    const amd::chip *c = amd::chip_by_gfx_target_version(node_.gfx_target_version);
    return "kfd node " + std::to_string(node_.node) + " (" +
           (c ? c->name : "gfx_target_version " + std::to_string(node_.gfx_target_version)) + ", " +
           render_ + ")";
  }
  std::string chip_name() const override {
    const amd::chip *c = amd::chip_by_gfx_target_version(node_.gfx_target_version);
    return c ? c->name : "gfx_target_version " + std::to_string(node_.gfx_target_version);
  }
  // The chip's timestamp rate (amd_chips.h); 0 for a chip capgraph does not know, where no capture
  // runs (the target's device check refuses it first).
  uint64_t clock_hz() const override {
    const amd::chip *c = amd::chip_by_gfx_target_version(node_.gfx_target_version);
    return c ? c->timestamp_hz : 0;
  }

  capgraph_status alloc(uint64_t size, hcq::memory_kind kind, hcq::memory *out,
                        std::string *err) override {
    size = (size + 4095) / 4096 * 4096;
    uint32_t flags = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE;
    switch (kind) {
      case hcq::memory_kind::device:
        flags |= KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
        break;
      case hcq::memory_kind::code:
        flags |= KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC |
                 KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
        break;
      case hcq::memory_kind::host:
        flags |= KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT |
                 KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED;
        break;
    }
    capgraph_status st = alloc_flags(size, flags, out, err);
    // VRAM the CPU can see is limited by the PCI BAR without resizable BAR: fall back to GTT.
    if (st != CAPGRAPH_OK && kind != hcq::memory_kind::host) {
      flags &= ~(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC);
      flags |= KFD_IOC_ALLOC_MEM_FLAGS_GTT;
      st = alloc_flags(size, flags, out, err);
    }
    return st;
  }

  void free(hcq::memory &m) override {
    if (!m.size) return;
    uint32_t id = node_.gpu_id;
    kfd_ioctl_unmap_memory_from_gpu_args unmap{};
    unmap.handle = m.handle;
    unmap.device_ids_array_ptr = uint64_t(uintptr_t(&id));
    unmap.n_devices = 1;
    ioctl_retry(kfd_, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &unmap);
    kfd_ioctl_free_memory_of_gpu_args f{};
    f.handle = m.handle;
    ioctl_retry(kfd_, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
    munmap(reinterpret_cast<void *>(uintptr_t(m.gpu)), m.size);
    m = {};
  }

  capgraph_status queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                               std::string *err) override {
    owned q;
    capgraph_status st;
    if ((st = alloc(ring_bytes, hcq::memory_kind::host, &q.ring, err)) != CAPGRAPH_OK) return st;
    if ((st = alloc(4096, hcq::memory_kind::host, &q.ptrs, err)) != CAPGRAPH_OK) return st;
    kfd_ioctl_create_queue_args a{};
    a.ring_base_address = q.ring.gpu;
    a.ring_size = uint32_t(ring_bytes);
    a.write_pointer_address = q.ptrs.gpu;
    a.read_pointer_address = q.ptrs.gpu + 8;
    a.gpu_id = node_.gpu_id;
    a.queue_percentage = 100;  // KFD_MAX_QUEUE_PERCENTAGE
    a.queue_priority = 7;      // the middle of KFD's 0..15
    if (kind == hcq::queue_kind::compute) {
      a.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
      if ((st = alloc(kEopBytes, hcq::memory_kind::device, &q.eop, err)) != CAPGRAPH_OK) return st;
      if ((st = alloc(kCtxSaveBytes, hcq::memory_kind::device, &q.ctx, err)) != CAPGRAPH_OK)
        return st;
      a.eop_buffer_address = q.eop.gpu;
      a.eop_buffer_size = kEopBytes;
      a.ctx_save_restore_address = q.ctx.gpu;
      a.ctx_save_restore_size = uint32_t(kCtxSaveBytes);
      a.ctl_stack_size = kCtlStackBytes;
    } else {
      a.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
    }
    if (ioctl_retry(kfd_, AMDKFD_IOC_CREATE_QUEUE, &a) < 0) {
      *err = name() + ": AMDKFD_IOC_CREATE_QUEUE failed: " + errno_text(errno);
      q.release(this);
      return CAPGRAPH_ERR_DEVICE;
    }
    // Doorbells: one page-aligned window of /dev/kfd, mapped once (Sources: kfd_chardev.c
    // kfd_mmap with KFD_MMAP_TYPE_DOORBELL offsets; tinygrad maps 0x2000 bytes at the offset
    // rounded down to 8 KiB).
    const uint64_t base = a.doorbell_offset & ~uint64_t(kDoorbellBytes - 1);
    if (!doorbells_) {
      void *p =
          mmap(nullptr, kDoorbellBytes, PROT_READ | PROT_WRITE, MAP_SHARED, kfd_, off_t(base));
      if (p == MAP_FAILED) {
        *err = name() + ": cannot map the doorbells: " + errno_text(errno);
        kfd_ioctl_destroy_queue_args d{};
        d.queue_id = a.queue_id;
        ioctl_retry(kfd_, AMDKFD_IOC_DESTROY_QUEUE, &d);
        q.release(this);
        return CAPGRAPH_ERR_DEVICE;
      }
      doorbells_ = static_cast<uint8_t *>(p);
      doorbell_base_ = base;
    }
    q.queue_id = a.queue_id;
    q.doorbell =
        reinterpret_cast<volatile uint64_t *>(doorbells_ + (a.doorbell_offset - doorbell_base_));
    out->kind = kind;
    out->ring = q.ring;
    out->write_ptr = reinterpret_cast<volatile uint64_t *>(q.ptrs.cpu);
    out->read_ptr = reinterpret_cast<volatile uint64_t *>(q.ptrs.cpu + 8);
    // Compute (PM4) write pointers count dwords, SDMA ones bytes (Linux amdgpu_ring and
    // sdma_v6_0_ring_set_wptr: wptr << 2).
    out->write_ptr_unit = kind == hcq::queue_kind::compute ? 4 : 1;
    // SDMA packets may not wrap around the ring's end (header 0 is its NOP).
    out->no_wrap = kind == hcq::queue_kind::copy;
    queues_.push_back(q);
    out->handle = queues_.size();  // index + 1
    return CAPGRAPH_OK;
  }

  void queue_destroy(hcq::queue &q) override {
    if (!q.handle || q.handle > queues_.size()) return;
    owned &o = queues_[q.handle - 1];
    kfd_ioctl_destroy_queue_args d{};
    d.queue_id = o.queue_id;
    ioctl_retry(kfd_, AMDKFD_IOC_DESTROY_QUEUE, &d);
    o.release(this);
    q = {};
  }

  void doorbell(hcq::queue &q, uint64_t write_ptr) override {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    *queues_[q.handle - 1].doorbell = write_ptr;
  }

  // Creates the KFD signal event a replay's last packet interrupts (an event page in GTT, as
  // dGPUs need; Sources: kfd_chardev.c kfd_ioctl_create_event: "For dGPUs the event page is
  // allocated in user mode", its handle passed in event_page_offset on the first call). Without
  // it waits poll only.
  void events_setup() {
    std::string ignored;
    if (alloc(0x8000, hcq::memory_kind::host, &event_page_, &ignored) != CAPGRAPH_OK) return;
    kfd_ioctl_create_event_args e{};
    e.event_page_offset = event_page_.handle;
    e.event_type = KFD_IOC_EVENT_SIGNAL;
    e.auto_reset = 1;
    e.node_id = node_.node;
    if (ioctl_retry(kfd_, AMDKFD_IOC_CREATE_EVENT, &e) < 0 ||
        uint64_t(e.event_slot_index) * 8 >= event_page_.size) {
      free(event_page_);
      return;
    }
    event_id_ = e.event_id;
    event_slot_ = e.event_slot_index;
    events_ = true;
  }

  bool interrupt_target(uint64_t *mailbox, uint32_t *id) override {
    if (!events_) return false;
    *mailbox = event_page_.gpu + 8ull * event_slot_;
    *id = event_id_;
    return true;
  }

  // Spins briefly, then sleeps on the KFD event (at most 10 ms at a time, the signal is
  // re-checked after each) or, without one, in growing naps up to 1 ms; until the bound.
  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override {
    hcq::wait_nap nap;
    const auto read = [value](uint64_t *now, std::string *) { return hcq::wait_read(value, now); };
    // Between polls: block on the KFD event the replay's last signal raises (at most 10 ms at a
    // time), else nap.
    const auto pass = [&](uint64_t left_ns, std::string *e) {
      if (events_) {
        kfd_event_data ev{};
        ev.event_id = event_id_;
        kfd_ioctl_wait_events_args w{};
        w.events_ptr = uint64_t(uintptr_t(&ev));
        w.num_events = 1;
        w.wait_for_all = 1;
        const uint64_t left_ms = (left_ns + 999999) / 1000000;
        w.timeout = uint32_t(left_ms < 10 ? left_ms : 10);
        if (ioctl_retry(kfd_, AMDKFD_IOC_WAIT_EVENTS, &w) == 0) return CAPGRAPH_OK;
      }
      return nap(left_ns, e);
    };
    const capgraph_status st = hcq::wait_bounded(target, timeout_ns, read, pass, err);
    if (st == CAPGRAPH_ERR_TIMEOUT) *err = name() + ": " + *err;
    return st;
  }

 private:
  static constexpr uint64_t kDoorbellBytes = 0x2000;

  struct owned {
    hcq::memory ring, ptrs, eop, ctx;
    uint32_t queue_id = 0;
    volatile uint64_t *doorbell = nullptr;
    void release(kfd_transport *t) {
      for (hcq::memory *m : {&ring, &ptrs, &eop, &ctx}) t->free(*m);
    }
  };

  capgraph_status alloc_flags(uint64_t size, uint32_t flags, hcq::memory *out, std::string *err) {
    // The GPU address is the CPU address: reserve it, allocate there, map the CPU view over it.
    void *va = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (va == MAP_FAILED) {
      *err = name() + ": cannot reserve " + std::to_string(size) + " bytes of address space";
      return CAPGRAPH_ERR_MEMORY;
    }
    kfd_ioctl_alloc_memory_of_gpu_args a{};
    a.va_addr = uint64_t(uintptr_t(va));
    a.size = size;
    a.gpu_id = node_.gpu_id;
    a.flags = flags;
    if (ioctl_retry(kfd_, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a) < 0) {
      *err = name() + ": AMDKFD_IOC_ALLOC_MEMORY_OF_GPU of " + std::to_string(size) +
             " bytes failed: " + errno_text(errno);
      munmap(va, size);
      return CAPGRAPH_ERR_MEMORY;
    }
    void *cpu =
        mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, drm_, off_t(a.mmap_offset));
    uint32_t id = node_.gpu_id;
    kfd_ioctl_map_memory_to_gpu_args m{};
    m.handle = a.handle;
    m.device_ids_array_ptr = uint64_t(uintptr_t(&id));
    m.n_devices = 1;
    if (cpu == MAP_FAILED || ioctl_retry(kfd_, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m) < 0) {
      *err = name() +
             (cpu == MAP_FAILED ? ": cannot map GPU memory for the CPU: "
                                : ": AMDKFD_IOC_MAP_MEMORY_TO_GPU failed: ") +
             errno_text(errno);
      kfd_ioctl_free_memory_of_gpu_args f{};
      f.handle = a.handle;
      ioctl_retry(kfd_, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
      munmap(va, size);
      return CAPGRAPH_ERR_MEMORY;
    }
    out->cpu = static_cast<uint8_t *>(va);
    out->gpu = a.va_addr;
    out->size = size;
    out->handle = a.handle;
    return CAPGRAPH_OK;
  }

  int kfd_, drm_;
  gpu_node node_;
  std::string render_;
  uint8_t *doorbells_ = nullptr;
  uint64_t doorbell_base_ = 0;
  hcq::memory event_page_;
  uint32_t event_id_ = 0, event_slot_ = 0;
  bool events_ = false;
  std::vector<owned> queues_;
};

capgraph_status device_index(const char *device, uint32_t *index, std::string *err) {
  *index = 0;
  const char *colon = strchr(device, ':');
  if (!colon) return CAPGRAPH_OK;
  char *end = nullptr;
  const unsigned long n = strtoul(colon + 1, &end, 10);
  if (!colon[1] || *end || n > 64) {
    *err = std::string("device '") + device + "': expected amd or amd:N with N a GPU number";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  *index = uint32_t(n);
  return CAPGRAPH_OK;
}

}  // namespace

capgraph_status kfd_open_at(const kfd_paths &paths, const char *device,
                            std::unique_ptr<hcq::transport> *out, std::string *err) {
  uint32_t index;
  capgraph_status st = device_index(device, &index, err);
  if (st != CAPGRAPH_OK) return st;
  const int kfd = open(paths.kfd.c_str(), O_RDWR | O_CLOEXEC);
  if (kfd < 0) {
    const int e = errno;
    *err = e == ENOENT ? "no AMD GPU: " + paths.kfd + " is absent (no amdgpu driver or no AMD GPU)"
           : e == EACCES
               ? paths.kfd + ": permission denied (the user must be in the 'render' group)"
               : paths.kfd + ": " + errno_text(e);
    return CAPGRAPH_ERR_DEVICE;
  }
  const auto fail = [&](const std::string &why) {
    close(kfd);
    *err = why;
    return CAPGRAPH_ERR_DEVICE;
  };
  kfd_ioctl_get_version_args version{};
  if (ioctl_retry(kfd, AMDKFD_IOC_GET_VERSION, &version) < 0)
    return fail(paths.kfd + ": AMDKFD_IOC_GET_VERSION failed: " + errno_text(errno));
  if (version.major_version != KFD_IOCTL_MAJOR_VERSION)
    return fail(paths.kfd + ": KFD interface " + std::to_string(version.major_version) + "." +
                std::to_string(version.minor_version) +
                " is not the version 1.x this runtime speaks");
  std::vector<gpu_node> gpus;
  std::string why;
  if (!topology_read(paths.topology, &gpus, &why)) return fail(why);
  if (index >= gpus.size())
    return fail(gpus.empty() ? "no AMD GPU: KFD reports no GPU node in " + paths.topology
                             : std::string("device '") + device + "': KFD reports " +
                                   std::to_string(gpus.size()) + " GPU(s), numbered from 0");
  const gpu_node &node = gpus[index];
  const std::string render = paths.dri + "/renderD" + std::to_string(node.drm_render_minor);
  const int drm = open(render.c_str(), O_RDWR | O_CLOEXEC);
  if (drm < 0) return fail(render + ": " + errno_text(errno));
  kfd_ioctl_acquire_vm_args vm{};
  vm.drm_fd = uint32_t(drm);
  vm.gpu_id = node.gpu_id;
  if (ioctl_retry(kfd, AMDKFD_IOC_ACQUIRE_VM, &vm) < 0) {
    close(drm);
    return fail(paths.kfd + ": AMDKFD_IOC_ACQUIRE_VM for " + render +
                " failed: " + errno_text(errno));
  }
  auto t = std::make_unique<kfd_transport>(kfd, drm, node, render);
  t->events_setup();
  *out = std::move(t);
  return CAPGRAPH_OK;
}

capgraph_status kfd_open(const char *device, std::unique_ptr<hcq::transport> *out,
                         std::string *err) {
  return kfd_open_at(kfd_paths{}, device, out, err);
}

std::string kfd_devices_describe(const kfd_paths &paths) {
  struct stat st;
  if (stat(paths.kfd.c_str(), &st) != 0)
    return "no AMD GPU: " + paths.kfd + " is absent (no amdgpu driver or no AMD GPU)\n";
  std::vector<gpu_node> gpus;
  std::string why;
  if (!topology_read(paths.topology, &gpus, &why)) return "KFD topology unreadable: " + why + "\n";
  if (gpus.empty()) return paths.kfd + " is present but KFD reports no GPU\n";
  std::string s;
  for (size_t i = 0; i < gpus.size(); ++i) {
    const gpu_node &g = gpus[i];
    const amd::chip *c = amd::chip_by_gfx_target_version(g.gfx_target_version);
    s += "amd:" + std::to_string(i) + ": " +
         (c ? std::string(c->name) + " (" + c->family + ")"
            : "gfx_target_version " + std::to_string(g.gfx_target_version) + " (not supported)") +
         ", " + std::to_string(g.simd_count) + " SIMDs, " + std::to_string(g.local_mem_size >> 20) +
         " MiB VRAM, renderD" + std::to_string(g.drm_render_minor) + ", kfd node " +
         std::to_string(g.node) + "\n";
  }
  return s;
}

}  // namespace capgraph::kfd
