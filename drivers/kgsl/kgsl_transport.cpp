#include "kgsl_transport.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "adreno_chips.h"
#include "clock_text.h"
#include "hcq/host_sys_libc.h"
#include "hcq/signal.h"
#include "hcq/wait.h"
#include "kgsl_uapi.h"

namespace capgraph::kgsl {
namespace {

using host_sys = hcq::host_sys_libc<kgsl_sys>;

int ioctl_retry(kgsl_sys &sys, int fd, unsigned long request, void *arg) {
  int r;
  do r = sys.ioctl(fd, request, arg);
  while (r < 0 && (errno == EINTR || errno == EAGAIN));
  return r;
}

// The D-cache lines of [p, p + size) cleaned to the point of coherency, so the GPU reads what the
// CPU wrote (imported memory is cached; Sources: tinygrad ops_qcom.py does `dc cvac` per 64-byte
// line and `dsb sy` before MAP_USER_MEM; Arm ARM DC CVAC). Nothing to do on x86-64 (the fake).
void dcache_clean(const void *p, uint64_t size) {
#if defined(__aarch64__)
  const uintptr_t line = 64;
  for (uintptr_t a = uintptr_t(p) & ~(line - 1); a < uintptr_t(p) + size; a += line)
    asm volatile("dc cvac, %0" ::"r"(a) : "memory");
  asm volatile("dsb sy" ::: "memory");
#else
  (void)p;
  (void)size;
#endif
}

class kgsl_transport final : public hcq::transport {
 public:
  kgsl_transport(std::shared_ptr<kgsl_sys> sys, std::string prefix, int fd, const devinfo &info,
                 uint32_t context)
      : sys_(std::move(sys)), prefix_(std::move(prefix)), fd_(fd), info_(info), context_(context) {}
  ~kgsl_transport() override {
    drawctxt_destroy d{context_};
    ioctl_retry(*sys_, fd_, ioctl_drawctxt_destroy, &d);
    sys_->close(fd_);
  }

  std::string name() const override {
    return prefix_ + " (" + sys_->kind() + "KGSL " + device_path + ", Adreno " +
           kgsl_chip_name(info_.chip_id) + " chip " + hex(info_.chip_id) + ")";
  }
  std::string chip_name() const override { return kgsl_chip_name(info_.chip_id); }
  // CP_ALWAYS_ON_COUNTER, which the timestamps read, counts at 19.2 MHz on a6xx
  // (adreno_plan.md §2.1, tinygrad ops_qcom.py divides by 19.2 for microseconds). Not measured.
  uint64_t clock_hz() const override { return 19200000; }

  capgraph_status alloc(uint64_t size, hcq::memory_kind, hcq::memory *out,
                        std::string *err) override {
    size = (size + 4095) / 4096 * 4096;
    // 4 KiB alignment (log2 12 in the MEMALIGN field), the CPU mapping's address as the GPU's,
    // uncached so neither side needs cache maintenance for signals, commands and arguments.
    // Uncached arena reads by the CPU are slow; not measured on a device.
    gpuobj_alloc a{};
    a.size = size;
    a.flags = (uint64_t(12) << memalign_shift) | memflags_use_cpu_map |
              (uint64_t(cachemode_uncached) << cachemode_shift);
    a.mmapsize = size;
    if (ioctl_retry(*sys_, fd_, ioctl_gpuobj_alloc, &a) < 0) {
      *err = name() + ": IOCTL_KGSL_GPUOBJ_ALLOC of " + std::to_string(size) +
             " bytes failed: " + strerror(errno);
      return CAPGRAPH_ERR_MEMORY;
    }
    void *p = sys_->mmap(nullptr, a.mmapsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                         off_t(uint64_t(a.id) * 4096));
    if (p == MAP_FAILED) {
      *err = name() + ": cannot map GPU object " + std::to_string(a.id) + ": " + strerror(errno);
      gpuobj_free f{};
      f.id = a.id;
      ioctl_retry(*sys_, fd_, ioctl_gpuobj_free, &f);
      return CAPGRAPH_ERR_MEMORY;
    }
    out->cpu = static_cast<uint8_t *>(p);
    out->gpu = uint64_t(uintptr_t(p));  // KGSL_MEMFLAGS_USE_CPU_MAP
    out->size = a.mmapsize;
    out->handle = a.id;
    return CAPGRAPH_OK;
  }

  capgraph_status import(void *host, uint64_t size, hcq::memory *out, std::string *err) override {
    if ((uintptr_t(host) | size) % 4096 || !size) {
      *err = name() +
             ": memory to import must be page-aligned (4096 bytes) in address and size, not " +
             hex(uintptr_t(host)) + " + " + std::to_string(size);
      return CAPGRAPH_ERR_ARGUMENT;
    }
    dcache_clean(host, size);
    map_user_mem m{};
    m.fd = -1;
    m.len = size;
    m.hostptr = uint64_t(uintptr_t(host));
    m.memtype = user_mem_type_addr;
    if (ioctl_retry(*sys_, fd_, ioctl_map_user_mem, &m) < 0) {
      *err = name() + ": IOCTL_KGSL_MAP_USER_MEM of " + std::to_string(size) + " bytes at " +
             hex(m.hostptr) + " failed: " + strerror(errno);
      return CAPGRAPH_ERR_DEVICE;
    }
    out->cpu = static_cast<uint8_t *>(host);
    out->gpu = m.gpuaddr;  // the driver's choice: not necessarily the host address
    out->size = size;
    out->handle = 0;
    imported_.insert(m.gpuaddr);
    return CAPGRAPH_OK;
  }

  void free(hcq::memory &m) override {
    if (!m.size) return;
    if (imported_.erase(m.gpu)) {
      sharedmem_free f{m.gpu};
      ioctl_retry(*sys_, fd_, ioctl_sharedmem_free, &f);
    } else {
      sys_->munmap(m.cpu, m.size);
      gpuobj_free f{};
      f.id = uint32_t(m.handle);
      ioctl_retry(*sys_, fd_, ioctl_gpuobj_free, &f);
    }
    m = {};
  }

  // A "queue" is a ring of host memory the submissions are written into; the engine reads each
  // as an indirect buffer named by GPU_COMMAND. One KGSL context runs its commands in order, so a
  // second queue waiting on the first would deadlock behind it: only compute queues.
  capgraph_status queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                               std::string *err) override {
    if (kind != hcq::queue_kind::compute) {
      *err = name() +
             ": no copy queue (one KGSL context runs one command stream; the Adreno target "
             "records copy steps into the compute stream)";
      return CAPGRAPH_ERR_DEVICE;
    }
    hcq::memory ring;
    capgraph_status st = alloc(ring_bytes, hcq::memory_kind::host, &ring, err);
    if (st != CAPGRAPH_OK) return st;
    out->kind = kind;
    out->ring = ring;
    out->write_ptr = &pointers_[0];  // bookkeeping only: the engine is told through GPU_COMMAND
    out->read_ptr = &pointers_[1];
    out->write_ptr_unit = 4;
    out->no_wrap = true;
    out->handle = 1;
    return CAPGRAPH_OK;
  }

  void queue_destroy(hcq::queue &q) override {
    free(q.ring);
    q = {};
  }

  void doorbell(hcq::queue &, uint64_t) override {}  // GPU_COMMAND is the doorbell

  // The words go into the ring (from its start when they do not fit before its end: the
  // previous submission has finished, graph::replay waits for it), then one GPU_COMMAND runs them.
  uint64_t submit(hcq::queue &q, const uint32_t *words, uint64_t count) noexcept override {
    const uint64_t ring_dwords = q.ring.size / 4;
    if (count > ring_dwords) {
      submit_error_ = name() + ": " + std::to_string(count) + " command words do not fit the " +
                      std::to_string(q.ring.size) + "-byte ring";
      return 0;
    }
    uint64_t pos = q.submitted;
    if (pos + count > ring_dwords) pos = 0;
    auto *ring = reinterpret_cast<volatile uint32_t *>(q.ring.cpu);
    for (uint64_t i = 0; i < count; ++i) ring[pos + i] = words[i];
    __atomic_thread_fence(__ATOMIC_RELEASE);
    command_object ib{};
    ib.gpuaddr = q.ring.gpu + pos * 4;
    ib.size = count * 4;
    ib.flags = cmdlist_ib;
    gpu_command c{};
    c.cmdlist = uint64_t(uintptr_t(&ib));
    c.cmdsize = sizeof ib;
    c.numcmds = 1;
    c.context_id = context_;
    if (ioctl_retry(*sys_, fd_, ioctl_gpu_command, &c) < 0) {
      submit_error_ = name() + ": IOCTL_KGSL_GPU_COMMAND failed: " + strerror(errno);
      return count;
    }
    submit_error_.clear();
    q.submitted = pos + count;
    *q.write_ptr = q.submitted;
    timestamp_ = c.timestamp;
    submitted_ = true;
    return count;
  }

  // Polls the signal; between polls sleeps in DEVICE_WAITTIMESTAMP_CTXTID on the last command
  // (at most 10 ms at a time), until the bound. A command that retired without raising the signal
  // is a device error (a GPU fault ends a command that way).
  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override {
    const auto read = [&](uint64_t *now, std::string *e) {
      *now = __atomic_load_n(value, __ATOMIC_ACQUIRE);
      if (hcq::timeline_reached(*now, target) || submit_error_.empty()) return CAPGRAPH_OK;
      *e = submit_error_;
      return CAPGRAPH_ERR_DEVICE;
    };
    hcq::wait_nap nap;
    const auto pass = [&](uint64_t left_ns, std::string *e) {
      if (!submitted_) return nap(left_ns, e);
      const uint64_t left_ms = (left_ns + 999999) / 1000000;
      device_waittimestamp_ctxtid w{context_, timestamp_, uint32_t(left_ms < 10 ? left_ms : 10)};
      if (ioctl_retry(*sys_, fd_, ioctl_device_waittimestamp_ctxtid, &w) == 0) {
        if (hcq::timeline_reached(__atomic_load_n(value, __ATOMIC_ACQUIRE), target))
          return CAPGRAPH_OK;
        *e = name() + ": command " + std::to_string(timestamp_) +
             " retired without raising signal value " + std::to_string(target) + " (it holds " +
             std::to_string(*value) + ")";
        return CAPGRAPH_ERR_DEVICE;
      }
      if (errno != ETIMEDOUT && errno != EINTR && errno != EAGAIN) {
        *e = name() +
             ": IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID failed (the GPU faulted or the context "
             "was lost): " +
             strerror(errno);
        return CAPGRAPH_ERR_DEVICE;
      }
      return CAPGRAPH_OK;
    };
    const capgraph_status st = hcq::wait_bounded(target, timeout_ns, read, pass, err);
    if (st == CAPGRAPH_ERR_TIMEOUT) *err = name() + ": " + *err;
    return st;
  }

 private:
  std::shared_ptr<kgsl_sys> sys_;
  std::string prefix_;
  int fd_;
  devinfo info_;
  uint32_t context_;
  uint32_t timestamp_ = 0;
  bool submitted_ = false;
  std::string submit_error_;
  std::set<uint64_t> imported_;
  volatile uint64_t pointers_[2] = {};
};

capgraph_status device_open(kgsl_sys &sys, int *fd, devinfo *info, std::string *err) {
  *fd = sys.open(device_path, O_RDWR | O_CLOEXEC);
  if (*fd < 0) {
    const int e = errno;
    *err = e == ENOENT
               ? std::string("no Adreno GPU: ") + device_path + " is absent (no KGSL driver)"
           : e == EACCES ? std::string(device_path) + ": permission denied"
                         : std::string(device_path) + ": " + strerror(e);
    return CAPGRAPH_ERR_DEVICE;
  }
  device_getproperty p{};
  p.type = prop_device_info;
  p.value = uint64_t(uintptr_t(info));
  p.sizebytes = sizeof *info;
  if (ioctl_retry(sys, *fd, ioctl_device_getproperty, &p) < 0) {
    *err = std::string(device_path) +
           ": IOCTL_KGSL_DEVICE_GETPROPERTY(DEVICE_INFO) failed: " + strerror(errno);
    sys.close(*fd);
    return CAPGRAPH_ERR_DEVICE;
  }
  return CAPGRAPH_OK;
}

}  // namespace

std::shared_ptr<kgsl_sys> kgsl_sys_host() { return std::make_shared<host_sys>(); }

std::string kgsl_chip_name(uint32_t chip_id) {
  return "a" + std::to_string((chip_id >> 24) & 0xff) + std::to_string((chip_id >> 16) & 0xff) +
         std::to_string((chip_id >> 8) & 0xff);
}

capgraph_status kgsl_open_with(std::shared_ptr<kgsl_sys> sys, const char *prefix,
                               const char *device, std::unique_ptr<hcq::transport> *out,
                               std::string *err) {
  const char *colon = strchr(device, ':');
  if (colon && strcmp(colon, ":0") != 0) {
    *err = std::string("device '") + device + "': expected " + prefix + " (or " + prefix +
           ":0): there is one Adreno GPU";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  int fd;
  devinfo info{};
  capgraph_status st = device_open(*sys, &fd, &info, err);
  if (st != CAPGRAPH_OK) return st;
  // A context for compute: no GMEM (no rendering), a preamble, fine-grained preemption, medium
  // priority, no fault tolerance (a fault fails the command instead of replaying it). Sources:
  // tinygrad ops_qcom.py (these flags, 0x04008A12 with its power constraint, which is left out).
  drawctxt_create c{};
  c.flags = context_preamble | context_no_gmem_alloc | context_no_fault_tolerance |
            (8u << context_priority_shift) |
            (context_preempt_finegrain << context_preempt_style_shift);
  if (ioctl_retry(*sys, fd, ioctl_drawctxt_create, &c) < 0) {
    *err = std::string(device_path) + ": IOCTL_KGSL_DRAWCTXT_CREATE failed: " + strerror(errno);
    sys->close(fd);
    return CAPGRAPH_ERR_DEVICE;
  }
  *out = std::make_unique<kgsl_transport>(std::move(sys), prefix, fd, info, c.drawctxt_id);
  return CAPGRAPH_OK;
}

capgraph_status kgsl_open(const char *device, std::unique_ptr<hcq::transport> *out,
                          std::string *err) {
  return kgsl_open_with(kgsl_sys_host(), "adreno", device, out, err);
}

std::string kgsl_devices_describe(kgsl_sys &sys, const char *prefix) {
  int fd;
  devinfo info{};
  std::string why;
  if (device_open(sys, &fd, &info, &why) != CAPGRAPH_OK) return why + "\n";
  sys.close(fd);
  const adreno::chip *known = adreno::chip_by_id(info.chip_id);
  return std::string(prefix) + ":0: " + sys.kind() + "Adreno " + kgsl_chip_name(info.chip_id) +
         " (chip " + hex(info.chip_id) + ", gpu_id " + std::to_string(info.gpu_id) + ")" +
         (known ? std::string(", runs adreno-") + known->name + " captures"
                : ": capgraph compiles for " + adreno::chip_names() + " only") +
         "\n";
}

}  // namespace capgraph::kgsl
