#include "kfd_transport.h"

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "amd_chips.h"
#include "clock_text.h"
#include "hcq/host_sys_libc.h"
#include "hcq/signal.h"
#include "hcq/wait.h"

namespace capgraph::kfd {
namespace {

std::string errno_text(int e) { return std::string(strerror(e)); }

// Compute queues need an end-of-pipe buffer and a context save area for wave save/restore.
// Sizes as tinygrad uses them for gfx11 (KFD checks them against its own minimum).
constexpr uint64_t kEopBytes = 0x1000;
constexpr uint64_t kCtxSaveBytes = 0x2C02000;
constexpr uint32_t kCtlStackBytes = 0xa000;
constexpr uint64_t kDoorbellBytes = 0x2000;
constexpr uint64_t kEventPageBytes = 0x8000;

// /dev/kfd as this process holds it: one file, kept until the process exits. KFD has one
// kfd_process per process (Linux amdkfd/kfd_process.c kfd_create_process finds the caller's
// existing one; it lives until the process's mm goes, not until the file closes), and that
// process has one event page for its life (kfd_events.c kfd_kmap_event_page: "Event page is
// already set", EINVAL; kfd_chardev.c kfd_ioctl_free_memory_of_gpu refuses to free it, EPERM).
struct kfd_process_file {
  std::shared_ptr<hcq::host_sys> sys;
  std::string path;
  int fd = -1;
  std::mutex lock;                // event_page_taken
  bool event_page_taken = false;  // by the session of some GPU; the others' waits poll
};

// One GPU of that process: its render-node file, bound to the process's VM on that GPU by
// AMDKFD_IOC_ACQUIRE_VM once (kfd_chardev.c kfd_ioctl_acquire_vm and kfd_process.c
// kfd_process_device_init_vm: `if (pdd->drm_priv) return -EBUSY`: a second DRM file for the same
// process and GPU is refused, and the kernel holds the first until the process exits), the
// doorbell window of the process's queues on it, and the event page when this GPU set it. Shared
// by every model loaded on the GPU and kept until the process exits. Memory from alloc() has
// GPU address = CPU address (reserved with mmap first), so two models' allocations never overlap
// in the one VM.
class kfd_gpu_session {
 public:
  kfd_gpu_session(std::shared_ptr<kfd_process_file> p, int drm, const gpu_node &node,
                  std::string render)
      : process_(std::move(p)), drm_(drm), node_(node), render_(std::move(render)) {}
  kfd_gpu_session(const kfd_gpu_session &) = delete;
  kfd_gpu_session &operator=(const kfd_gpu_session &) = delete;

  hcq::host_sys &sys() const { return *process_->sys; }
  int kfd() const { return process_->fd; }
  const gpu_node &node() const { return node_; }

  std::string name() const {
    const amd::chip *c = amd::chip_by_gfx_target_version(node_.gfx_target_version);
    return "kfd node " + std::to_string(node_.node) + " (" +
           (c ? c->name : "gfx_target_version " + std::to_string(node_.gfx_target_version)) + ", " +
           render_ + ")";
  }

  capgraph_status alloc(uint64_t size, uint32_t flags, hcq::memory *out, std::string *err) {
    hcq::host_sys &s = sys();
    // The GPU address is the CPU address: reserve it, allocate there, map the CPU view over it.
    void *va = s.mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (va == MAP_FAILED) {
      *err = name() + ": cannot reserve " + std::to_string(size) +
             " bytes of address space: " + errno_text(errno);
      return CAPGRAPH_ERR_MEMORY;
    }
    kfd_ioctl_alloc_memory_of_gpu_args a{};
    a.va_addr = uint64_t(uintptr_t(va));
    a.size = size;
    a.gpu_id = node_.gpu_id;
    a.flags = flags;
    if (s.ioctl(kfd(), AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a) < 0) {
      *err = name() + ": AMDKFD_IOC_ALLOC_MEMORY_OF_GPU of " + std::to_string(size) +
             " bytes failed: " + errno_text(errno);
      s.munmap(va, size);
      return CAPGRAPH_ERR_MEMORY;
    }
    void *cpu = s.mmap(va, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, drm_,
                       off_t(a.mmap_offset));
    uint32_t id = node_.gpu_id;
    kfd_ioctl_map_memory_to_gpu_args m{};
    m.handle = a.handle;
    m.device_ids_array_ptr = uint64_t(uintptr_t(&id));
    m.n_devices = 1;
    if (cpu == MAP_FAILED || s.ioctl(kfd(), AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m) < 0) {
      *err = name() +
             (cpu == MAP_FAILED ? ": cannot map GPU memory for the CPU: "
                                : ": AMDKFD_IOC_MAP_MEMORY_TO_GPU failed: ") +
             errno_text(errno);
      kfd_ioctl_free_memory_of_gpu_args f{};
      f.handle = a.handle;
      s.ioctl(kfd(), AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
      s.munmap(va, size);
      return CAPGRAPH_ERR_MEMORY;
    }
    out->cpu = static_cast<uint8_t *>(va);
    out->gpu = a.va_addr;
    out->size = size;
    out->handle = a.handle;
    return CAPGRAPH_OK;
  }

  void free(hcq::memory &m) {
    if (!m.size) return;
    hcq::host_sys &s = sys();
    uint32_t id = node_.gpu_id;
    kfd_ioctl_unmap_memory_from_gpu_args unmap{};
    unmap.handle = m.handle;
    unmap.device_ids_array_ptr = uint64_t(uintptr_t(&id));
    unmap.n_devices = 1;
    s.ioctl(kfd(), AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &unmap);
    kfd_ioctl_free_memory_of_gpu_args f{};
    f.handle = m.handle;
    s.ioctl(kfd(), AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
    s.munmap(reinterpret_cast<void *>(uintptr_t(m.gpu)), m.size);
    m = {};
  }

  // The doorbell of a queue KFD created at `offset`: one page-aligned window of /dev/kfd per
  // process and GPU, mapped once (Sources: kfd_chardev.c kfd_mmap with KFD_MMAP_TYPE_DOORBELL
  // offsets; tinygrad maps 0x2000 bytes at the offset rounded down to 8 KiB). nullptr with *err
  // when it cannot be mapped or the offset falls outside the window mapped first.
  volatile uint64_t *doorbell(uint64_t offset, std::string *err) {
    std::lock_guard<std::mutex> hold(lock_);
    const uint64_t base = offset & ~uint64_t(kDoorbellBytes - 1);
    if (!doorbells_) {
      void *p = sys().mmap(nullptr, kDoorbellBytes, PROT_READ | PROT_WRITE, MAP_SHARED, kfd(),
                           off_t(base));
      if (p == MAP_FAILED) {
        *err = name() + ": cannot map the doorbells: " + errno_text(errno);
        return nullptr;
      }
      doorbells_ = static_cast<uint8_t *>(p);
      doorbell_base_ = base;
    }
    if (offset < doorbell_base_ || offset + 8 > doorbell_base_ + kDoorbellBytes) {
      *err = name() + ": a queue's doorbell (offset " + std::to_string(offset) +
             ") is outside the doorbell page mapped for this GPU";
      return nullptr;
    }
    return reinterpret_cast<volatile uint64_t *>(doorbells_ + (offset - doorbell_base_));
  }

  // A signal event for one model, in this process's event page (a page in GTT, as dGPUs need;
  // Sources: kfd_chardev.c kfd_ioctl_create_event: "For dGPUs the event page is allocated in
  // user mode", its handle passed in event_page_offset on the first call only). The first event
  // of the process allocates the page here; later ones on this GPU use it; on another GPU whose
  // session did not set it, false (that model's waits poll).
  bool event_create(uint32_t *id, uint32_t *slot, uint64_t *mailbox) {
    std::lock_guard<std::mutex> hold(process_->lock);
    bool first = false;
    if (!event_page_.size) {
      std::string ignored;
      if (process_->event_page_taken ||
          alloc(kEventPageBytes,
                KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
                    KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED,
                &event_page_, &ignored) != CAPGRAPH_OK)
        return false;
      first = true;
    }
    kfd_ioctl_create_event_args e{};
    e.event_page_offset = first ? event_page_.handle : 0;
    e.event_type = KFD_IOC_EVENT_SIGNAL;
    e.auto_reset = 1;
    e.node_id = node_.node;
    if (sys().ioctl(kfd(), AMDKFD_IOC_CREATE_EVENT, &e) < 0) {
      if (first) free(event_page_);  // not taken: KFD takes the page only with a created event
      return false;
    }
    if (first) process_->event_page_taken = true;
    if (uint64_t(e.event_slot_index) * 8 >= event_page_.size) {
      event_destroy(e.event_id);
      return false;
    }
    *id = e.event_id;
    *slot = e.event_slot_index;
    *mailbox = event_page_.gpu + 8ull * e.event_slot_index;
    return true;
  }

  void event_destroy(uint32_t id) {
    kfd_ioctl_destroy_event_args d{};
    d.event_id = id;
    sys().ioctl(kfd(), AMDKFD_IOC_DESTROY_EVENT, &d);
  }

 private:
  std::shared_ptr<kfd_process_file> process_;
  int drm_;
  gpu_node node_;
  std::string render_;
  std::mutex lock_;  // the doorbell mapping
  uint8_t *doorbells_ = nullptr;
  uint64_t doorbell_base_ = 0;
  hcq::memory event_page_;  // set when this GPU's session gave KFD the process's event page
};

// One model's transport on a GPU session: its own memory, queues and signal event.
class kfd_transport final : public hcq::transport {
 public:
  explicit kfd_transport(std::shared_ptr<kfd_gpu_session> s) : s_(std::move(s)) {}
  ~kfd_transport() override {
    if (events_) s_->event_destroy(event_id_);
  }

  std::string name() const override { return s_->name(); }
  std::string chip_name() const override {
    const amd::chip *c = amd::chip_by_gfx_target_version(s_->node().gfx_target_version);
    return c ? c->name : "gfx_target_version " + std::to_string(s_->node().gfx_target_version);
  }
  // The chip's timestamp rate (amd_chips.h); 0 for a chip capgraph does not know, where no capture
  // runs (the target's device check refuses it first).
  uint64_t clock_hz() const override {
    const amd::chip *c = amd::chip_by_gfx_target_version(s_->node().gfx_target_version);
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
    capgraph_status st = s_->alloc(size, flags, out, err);
    // VRAM the CPU can see is limited by the PCI BAR without resizable BAR: fall back to GTT.
    if (st != CAPGRAPH_OK && kind != hcq::memory_kind::host) {
      flags &= ~(KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC);
      flags |= KFD_IOC_ALLOC_MEM_FLAGS_GTT;
      st = s_->alloc(size, flags, out, err);
    }
    return st;
  }

  void free(hcq::memory &m) override { s_->free(m); }

  capgraph_status queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                               std::string *err) override {
    owned q;
    capgraph_status st;
    if ((st = alloc(ring_bytes, hcq::memory_kind::host, &q.ring, err)) != CAPGRAPH_OK) return st;
    if ((st = alloc(4096, hcq::memory_kind::host, &q.ptrs, err)) != CAPGRAPH_OK) {
      q.release(this);
      return st;
    }
    kfd_ioctl_create_queue_args a{};
    a.ring_base_address = q.ring.gpu;
    a.ring_size = uint32_t(ring_bytes);
    a.write_pointer_address = q.ptrs.gpu;
    a.read_pointer_address = q.ptrs.gpu + 8;
    a.gpu_id = s_->node().gpu_id;
    a.queue_percentage = 100;  // KFD_MAX_QUEUE_PERCENTAGE
    a.queue_priority = 7;      // the middle of KFD's 0..15
    if (kind == hcq::queue_kind::compute) {
      a.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE;
      if ((st = alloc(kEopBytes, hcq::memory_kind::device, &q.eop, err)) != CAPGRAPH_OK ||
          (st = alloc(kCtxSaveBytes, hcq::memory_kind::device, &q.ctx, err)) != CAPGRAPH_OK) {
        q.release(this);
        return st;
      }
      a.eop_buffer_address = q.eop.gpu;
      a.eop_buffer_size = kEopBytes;
      a.ctx_save_restore_address = q.ctx.gpu;
      a.ctx_save_restore_size = uint32_t(kCtxSaveBytes);
      a.ctl_stack_size = kCtlStackBytes;
    } else {
      a.queue_type = KFD_IOC_QUEUE_TYPE_SDMA;
    }
    if (s_->sys().ioctl(s_->kfd(), AMDKFD_IOC_CREATE_QUEUE, &a) < 0) {
      *err = name() + ": AMDKFD_IOC_CREATE_QUEUE failed: " + errno_text(errno);
      q.release(this);
      return CAPGRAPH_ERR_DEVICE;
    }
    q.queue_id = a.queue_id;
    q.doorbell = s_->doorbell(a.doorbell_offset, err);
    if (!q.doorbell) {
      queue_release(q);
      return CAPGRAPH_ERR_DEVICE;
    }
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
    queue_release(queues_[q.handle - 1]);
    q = {};
  }

  void doorbell(hcq::queue &q, uint64_t write_ptr) override {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    *queues_[q.handle - 1].doorbell = write_ptr;
  }

  // This model's signal event, which its replays' last packet interrupts; without one its waits
  // poll.
  void events_setup() { events_ = s_->event_create(&event_id_, &event_slot_, &mailbox_); }

  bool interrupt_target(uint64_t *mailbox, uint32_t *id) override {
    if (!events_) return false;
    *mailbox = mailbox_;
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
        if (s_->sys().ioctl(s_->kfd(), AMDKFD_IOC_WAIT_EVENTS, &w) == 0) return CAPGRAPH_OK;
      }
      return nap(left_ns, e);
    };
    const capgraph_status st = hcq::wait_bounded(target, timeout_ns, read, pass, err);
    if (st == CAPGRAPH_ERR_TIMEOUT) *err = name() + ": " + *err;
    return st;
  }

 private:
  struct owned {
    hcq::memory ring, ptrs, eop, ctx;
    uint32_t queue_id = 0;
    volatile uint64_t *doorbell = nullptr;
    void release(kfd_transport *t) {
      for (hcq::memory *m : {&ring, &ptrs, &eop, &ctx}) t->free(*m);
    }
  };

  void queue_release(owned &o) {
    kfd_ioctl_destroy_queue_args d{};
    d.queue_id = o.queue_id;
    s_->sys().ioctl(s_->kfd(), AMDKFD_IOC_DESTROY_QUEUE, &d);
    o.release(this);
  }

  std::shared_ptr<kfd_gpu_session> s_;
  uint32_t event_id_ = 0, event_slot_ = 0;
  uint64_t mailbox_ = 0;
  bool events_ = false;
  std::vector<owned> queues_;
};

// The process's KFD files and GPU sessions, by seam and /dev/kfd path (and GPU id). Kept until
// the process exits, as the kernel keeps what they stand for.
struct session_registry {
  std::mutex lock;  // held for a whole open, so two loads never both acquire a GPU's VM
  std::map<std::pair<const hcq::host_sys *, std::string>, std::shared_ptr<kfd_process_file>>
      processes;
  std::map<std::tuple<const hcq::host_sys *, std::string, uint32_t>,
           std::shared_ptr<kfd_gpu_session>>
      gpus;
};

session_registry &registry() {
  static session_registry *r = new session_registry;  // never destroyed: exit-time loads' safety
  return *r;
}

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

namespace {

// This process's /dev/kfd at `paths.kfd`: the one already open, else opened and its version
// checked. The registry's lock is held.
capgraph_status process_file_get(const kfd_paths &paths, const std::shared_ptr<hcq::host_sys> &sys,
                                 std::shared_ptr<kfd_process_file> *out, std::string *err) {
  auto &known = registry().processes[{sys.get(), paths.kfd}];
  if (known) return *out = known, CAPGRAPH_OK;
  const int kfd = sys->open(paths.kfd.c_str(), O_RDWR | O_CLOEXEC);
  if (kfd < 0) {
    const int e = errno;
    *err = e == ENOENT ? "no AMD GPU: " + paths.kfd + " is absent (no amdgpu driver or no AMD GPU)"
           : e == EACCES
               ? paths.kfd + ": permission denied (the user must be in the 'render' group)"
               : paths.kfd + ": " + errno_text(e);
    return CAPGRAPH_ERR_DEVICE;
  }
  kfd_ioctl_get_version_args version{};
  std::string why;
  if (sys->ioctl(kfd, AMDKFD_IOC_GET_VERSION, &version) < 0)
    why = paths.kfd + ": AMDKFD_IOC_GET_VERSION failed: " + errno_text(errno);
  else if (version.major_version != KFD_IOCTL_MAJOR_VERSION)
    why = paths.kfd + ": KFD interface " + std::to_string(version.major_version) + "." +
          std::to_string(version.minor_version) + " is not the version 1.x this runtime speaks";
  if (!why.empty()) {
    sys->close(kfd);
    *err = why;
    return CAPGRAPH_ERR_DEVICE;
  }
  known = std::make_shared<kfd_process_file>();
  known->sys = sys;
  known->path = paths.kfd;
  known->fd = kfd;
  *out = known;
  return CAPGRAPH_OK;
}

// The session of GPU `node` in this process: the one already open, else its render node opened
// and bound to the process's VM on it. The registry's lock is held.
capgraph_status gpu_session_get(const kfd_paths &paths, const std::shared_ptr<kfd_process_file> &p,
                                const gpu_node &node, std::shared_ptr<kfd_gpu_session> *out,
                                std::string *err) {
  auto &known = registry().gpus[{p->sys.get(), paths.kfd, node.gpu_id}];
  if (known) return *out = known, CAPGRAPH_OK;
  hcq::host_sys &sys = *p->sys;
  const std::string render = paths.dri + "/renderD" + std::to_string(node.drm_render_minor);
  const int drm = sys.open(render.c_str(), O_RDWR | O_CLOEXEC);
  if (drm < 0) {
    *err = render + ": " + errno_text(errno);
    return CAPGRAPH_ERR_DEVICE;
  }
  kfd_ioctl_acquire_vm_args vm{};
  vm.drm_fd = uint32_t(drm);
  vm.gpu_id = node.gpu_id;
  if (sys.ioctl(p->fd, AMDKFD_IOC_ACQUIRE_VM, &vm) < 0) {
    const int e = errno;
    sys.close(drm);
    *err = paths.kfd + ": AMDKFD_IOC_ACQUIRE_VM for " + render + " failed: " + errno_text(e) +
           (e == EBUSY ? " (this process's VM on that GPU is bound to another DRM file: "
                         "another GPU runtime in the process, such as ROCm/HIP?)"
                       : "");
    return CAPGRAPH_ERR_DEVICE;
  }
  known = std::make_shared<kfd_gpu_session>(p, drm, node, render);
  *out = known;
  return CAPGRAPH_OK;
}

}  // namespace

capgraph_status kfd_open_at(const kfd_paths &paths, const char *device,
                            std::unique_ptr<hcq::transport> *out, std::string *err) {
  uint32_t index;
  capgraph_status st = device_index(device, &index, err);
  if (st != CAPGRAPH_OK) return st;
  static const auto libc = std::make_shared<hcq::host_sys_libc<hcq::host_sys>>();
  const std::shared_ptr<hcq::host_sys> sys = paths.sys ? paths.sys : libc;
  std::lock_guard<std::mutex> hold(registry().lock);
  std::shared_ptr<kfd_process_file> process;
  if ((st = process_file_get(paths, sys, &process, err)) != CAPGRAPH_OK) return st;
  std::vector<gpu_node> gpus;
  std::string why;
  if (!topology_read(paths.topology, &gpus, &why)) return *err = why, CAPGRAPH_ERR_DEVICE;
  if (index >= gpus.size()) {
    *err = gpus.empty() ? "no AMD GPU: KFD reports no GPU node in " + paths.topology
                        : std::string("device '") + device + "': KFD reports " +
                              std::to_string(gpus.size()) + " GPU(s), numbered from 0";
    return CAPGRAPH_ERR_DEVICE;
  }
  std::shared_ptr<kfd_gpu_session> session;
  if ((st = gpu_session_get(paths, process, gpus[index], &session, err)) != CAPGRAPH_OK) return st;
  auto t = std::make_unique<kfd_transport>(session);
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
