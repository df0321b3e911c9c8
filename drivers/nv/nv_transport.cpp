#include "nv_transport.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "clock_text.h"
#include "hcq/host_sys_libc.h"
#include "hcq/signal.h"
#include "hcq/wait.h"
#include "nv_abi.h"
#include "nv_chips.h"
#include "nv_hcq.h"  // the GPFIFO submit

namespace capgraph::nv {
namespace {

using namespace abi;

class linux_sys final : public hcq::host_sys_libc<nv_sys> {
 public:
  void doorbell_write(volatile uint32_t *at, uint32_t token) override {
    __atomic_thread_fence(__ATOMIC_SEQ_CST);  // GPPut and the pushes before the doorbell
    *at = token;
  }
};

// The GPU address range this transport hands out, reserved in the CPU's address space too
// (PROT_NONE) so CPU mappings at the same addresses cannot collide with anything else. Below 2^40:
// GP entries and semaphores carry 40 address bits (clc56f.h GP_ENTRY1_GET_HI, SEM_ADDR_HI).
constexpr uint64_t kVaBase = 0x1000000000ull, kVaSize = 0x2000000000ull;  // 128 GiB per transport
constexpr int kVaTries = 6;
// The last resort, one of four 384 MiB ranges low in the address space: where a process has no
// room above (under AddressSanitizer, whose shadow gap covers 2.4 GB to 2 TB on x86-64: the
// sanitizer job's case). Four, so that a few transports can be open at once there too.
constexpr uint64_t kVaLowBase = 0x10000000ull, kVaLowSize = 0x18000000ull;
constexpr int kVaLowTries = 4;
constexpr uint32_t kGpfifoEntries = 0x1000;
constexpr uint64_t kUserdOffset = 0x10000, kGpfifoBytes = 0x20000, kPushBytes = 4 << 20;

struct channel {
  uint32_t handle = 0, object = 0, token = 0;
  hcq::memory ring, notifier, push;
  gpfifo f;
  bool in_use = false;
};

struct allocation {
  uint32_t memory = 0;  // RM handle
  int fd = -1;          // the registered device fd the CPU mapping came from
  uint64_t size = 0;
};

class nv_transport final : public hcq::transport {
 public:
  nv_transport(std::shared_ptr<nv_sys> sys, nv_paths paths)
      : sys_(std::move(sys)), paths_(std::move(paths)) {}
  ~nv_transport() override {
    for (auto &[gpu, a] : allocs_) release(gpu, a);
    if (client_) {
      NVOS00_PARAMETERS p{client_, 0, client_,
                          0};  // freeing the client frees every object under it
      sys_->ioctl(ctl_, nv_ioctl(NV_ESC_RM_FREE, sizeof p), &p);
    }
    if (usermode_cpu_) sys_->munmap(usermode_cpu_, USERMODE_BYTES);
    if (usermode_fd_ >= 0) sys_->close(usermode_fd_);
    if (va_cpu_) sys_->munmap(va_cpu_, va_size_);
    for (int fd : {uvm_mm_, uvm_, ctl_})
      if (fd >= 0) sys_->close(fd);
  }

  capgraph_status open(unsigned index, std::string *err);

  std::string name() const override {
    std::string s = "nv:" + std::to_string(index_) + " (" +
                    (chip_ ? std::string(chip_->family) + ", " + chip_->name : "?") + ", driver " +
                    version_ + ")";
    const std::string w = sys_->what();
    return w.empty() ? s : s + " on " + w;
  }
  std::string chip_name() const override { return chip_ ? chip_->name : "?"; }
  // Semaphore timestamps are the GPU's global timer in nanoseconds (tinygrad ops_nv.py divides by
  // 1000 for microseconds). Not measured here.
  uint64_t clock_hz() const override { return 1000000000; }

  capgraph_status alloc(uint64_t size, hcq::memory_kind kind, hcq::memory *out,
                        std::string *err) override;
  void free(hcq::memory &m) override {
    auto it = allocs_.find(m.gpu);
    if (it != allocs_.end()) {
      release(it->first, it->second);
      allocs_.erase(it);
    }
    m = {};
  }

  capgraph_status queue_create(hcq::queue_kind kind, uint64_t, hcq::queue *out,
                               std::string *err) override {
    channel &ch = channels_[kind == hcq::queue_kind::compute ? 0 : 1];
    if (ch.in_use) {
      *err = name() + ": its " + (kind == hcq::queue_kind::compute ? "compute" : "copy") +
             " channel is already in use";
      return CAPGRAPH_ERR_DEVICE;
    }
    ch.in_use = true;
    out->kind = kind;
    out->ring = ch.ring;
    out->handle = kind == hcq::queue_kind::compute ? 0 : 1;
    out->write_ptr_unit = 8;  // GP entries
    return CAPGRAPH_OK;
  }
  void queue_destroy(hcq::queue &q) override {
    channels_[q.handle & 1].in_use = false;
    q = {};
  }
  void doorbell(hcq::queue &q, uint64_t) override {
    sys_->doorbell_write(reinterpret_cast<volatile uint32_t *>(usermode_cpu_ + USERMODE_DOORBELL),
                         channels_[q.handle & 1].token);
  }
  uint64_t submit(hcq::queue &q, const uint32_t *words, uint64_t count) noexcept override {
    channel &ch = channels_[q.handle & 1];
    std::string why;
    const uint64_t written = nv_gpfifo_submit(ch.f, words, count, &why);
    if (!why.empty()) {
      if (submit_error_.empty()) submit_error_ = why;
      return 0;
    }
    q.submitted = ch.f.put;
    doorbell(q, q.submitted);
    return written + 1;
  }

  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override {
    const auto read = [&](uint64_t *now, std::string *e) {
      *now = __atomic_load_n(value, __ATOMIC_ACQUIRE);
      if (hcq::timeline_reached(*now, target)) return CAPGRAPH_OK;
      const std::string fault = sys_->fault();
      if (fault.empty() && submit_error_.empty()) return CAPGRAPH_OK;
      *e = name() + ": device error: " + (fault.empty() ? submit_error_ : fault);
      return CAPGRAPH_ERR_DEVICE;
    };
    const capgraph_status st = hcq::wait_bounded(target, timeout_ns, read, hcq::wait_nap{}, err);
    if (st != CAPGRAPH_ERR_TIMEOUT) return st;
    *err = name() + ": " + *err;
    for (int i = 0; i < 2; ++i) {
      const channel &ch = channels_[i];
      if (!ch.ring.cpu) continue;
      uint32_t get, put;
      memcpy(&get, ch.ring.cpu + kUserdOffset + USERD_GP_GET, 4);
      memcpy(&put, ch.ring.cpu + kUserdOffset + USERD_GP_PUT, 4);
      *err += std::string("; ") + (i ? "copy" : "compute") + " channel GPGet " +
              std::to_string(get) + ", GPPut " + std::to_string(put);
    }
    return st;
  }

 private:
  // One RM call; false with *err naming the step and the RM status (or errno).
  bool rm_call(unsigned nr, void *params, size_t size, uint32_t *status, const char *what,
               std::string *err) {
    if (sys_->ioctl(ctl_, nv_ioctl(nr, size), params) < 0) {
      *err = std::string(what) + ": " + strerror(errno);
      return false;
    }
    if (*status != NV_OK) {
      *err = std::string(what) + ": RM status " + hex(*status);
      return false;
    }
    return true;
  }
  bool rm_alloc(uint32_t parent, uint32_t cls, void *params, uint32_t size, uint32_t *handle,
                const char *what, std::string *err) {
    NVOS21_PARAMETERS p{};
    p.hRoot = client_;
    p.hObjectParent = parent;
    p.hClass = cls;
    p.pAllocParms = reinterpret_cast<uintptr_t>(params);
    p.paramsSize = size;
    if (!rm_call(NV_ESC_RM_ALLOC, &p, sizeof p, &p.status, what, err)) return false;
    *handle = p.hObjectNew;
    return true;
  }
  bool rm_control(uint32_t object, uint32_t cmd, void *params, uint32_t size, const char *what,
                  std::string *err) {
    NVOS54_PARAMETERS p{};
    p.hClient = client_;
    p.hObject = object;
    p.cmd = cmd;
    p.params = reinterpret_cast<uintptr_t>(params);
    p.paramsSize = size;
    return rm_call(NV_ESC_RM_CONTROL, &p, sizeof p, &p.status, what, err);
  }
  bool uvm(unsigned long request, void *params, uint32_t *status, const char *what,
           std::string *err) {
    if (sys_->ioctl(uvm_, request, params) < 0) {
      *err = std::string(what) + ": " + strerror(errno);
      return false;
    }
    if (*status != NV_OK) {
      *err = std::string(what) + ": RM status " + hex(*status);
      return false;
    }
    return true;
  }
  // A device fd registered with the control fd: RM_MAP_MEMORY binds one pending CPU mapping to it.
  int device_fd(std::string *err) {
    const std::string path = paths_.dev + std::to_string(minor_);
    const int fd = sys_->open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      *err = "open " + path + ": " + strerror(errno);
      return -1;
    }
    nv_ioctl_register_fd_t r{ctl_};
    if (sys_->ioctl(fd, nv_ioctl(NV_ESC_REGISTER_FD, sizeof r), &r) < 0) {
      *err = "NV_ESC_REGISTER_FD on " + path + ": " + strerror(errno);
      sys_->close(fd);
      return -1;
    }
    return fd;
  }
  // Maps RM memory `memory` for the CPU at `at` (nullptr: anywhere) through a fresh device fd.
  void *cpu_map(uint32_t parent, uint32_t memory, uint64_t size, void *at, bool cached, int *fd_out,
                std::string *err) {
    const int fd = device_fd(err);
    if (fd < 0) return nullptr;
    nv_ioctl_nvos33_parameters_with_fd p{};
    p.params.hClient = client_;
    p.params.hDevice = parent;
    p.params.hMemory = memory;
    p.params.length = size;
    p.params.flags =
        cached ? NVOS33_FLAGS_CACHING_TYPE_CACHED : NVOS33_FLAGS_CACHING_TYPE_WRITECOMBINED;
    p.fd = fd;
    if (!rm_call(NV_ESC_RM_MAP_MEMORY, &p, sizeof p, &p.params.status, "NV_ESC_RM_MAP_MEMORY",
                 err)) {
      sys_->close(fd);
      return nullptr;
    }
    void *cpu =
        sys_->mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);
    if (cpu == MAP_FAILED || (at && cpu != at)) {
      *err = "mmap of RM memory " + hex(memory) + ": " + strerror(errno);
      sys_->close(fd);
      return nullptr;
    }
    *fd_out = fd;
    return cpu;
  }
  bool va_take(uint64_t size, uint64_t align, uint64_t *va, std::string *err) {
    const uint64_t at = (va_next_ + align - 1) / align * align;
    if (at + size > va_base_ + va_size_) {
      *err = "the " + std::to_string(va_size_ >> 20) + " MiB GPU address range is used up (" +
             std::to_string(size) + " more bytes asked)";
      return false;
    }
    *va = at;
    va_next_ = at + size;
    return true;
  }
  void release(uint64_t gpu, allocation &a) {
    UVM_FREE_PARAMS f{};
    f.base = gpu;
    f.length = a.size;
    sys_->ioctl(uvm_, UVM_FREE, &f);
    // Back to a reservation, so the range stays ours.
    sys_->mmap(reinterpret_cast<void *>(gpu), a.size, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    if (a.fd >= 0) sys_->close(a.fd);
    NVOS00_PARAMETERS p{client_, device_, a.memory, 0};
    sys_->ioctl(ctl_, nv_ioctl(NV_ESC_RM_FREE, sizeof p), &p);
  }
  capgraph_status driver_open(std::string *why);
  capgraph_status gpu_open(unsigned index, std::string *why);
  capgraph_status address_space_open(std::string *why);
  capgraph_status channels_open(std::string *err);
  capgraph_status channel_create(channel &ch, uint32_t gpfifo_class, uint32_t engine_class,
                                 const char *what, std::string *err);

  std::shared_ptr<nv_sys> sys_;
  nv_paths paths_;
  unsigned index_ = 0;
  int ctl_ = -1, uvm_ = -1, uvm_mm_ = -1, usermode_fd_ = -1;
  uint32_t minor_ = 0;
  std::string version_;
  const chip *chip_ = nullptr;
  uint32_t client_ = 0, device_ = 0, subdevice_ = 0, usermode_ = 0, vaspace_ = 0, tsg_ = 0,
           ctxshare_ = 0;
  uint8_t uuid_[16] = {};
  uint8_t *usermode_cpu_ = nullptr;
  void *va_cpu_ = nullptr;
  uint64_t va_base_ = 0, va_next_ = 0, va_size_ = 0;
  std::map<uint64_t, allocation> allocs_;
  channel channels_[2];
  std::string submit_error_;
};

capgraph_status nv_transport::alloc(uint64_t size, hcq::memory_kind kind, hcq::memory *out,
                                    std::string *err) {
  // Big allocations take 2 MiB pages (as tinygrad does from 8 MiB on).
  const uint64_t page = size >= (8u << 20) ? (2u << 20) : 4096;
  size = (size + page - 1) / page * page;
  uint64_t va;
  if (!va_take(size, page, &va, err)) return CAPGRAPH_ERR_MEMORY;
  NV_MEMORY_ALLOCATION_PARAMS p{};
  p.owner = client_;
  p.type = NVOS32_TYPE_IMAGE;
  p.size = size;
  p.alignment = page;
  const bool host = kind == hcq::memory_kind::host;
  p.flags = NVOS32_ALLOC_FLAGS_IGNORE_BANK_PLACEMENT | NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE |
            NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED | (host ? 0 : NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM);
  p.attr =
      NVOS32_ATTR_PHYSICALITY_NONCONTIGUOUS |
      (host ? NVOS32_ATTR_LOCATION_PCI | NVOS32_ATTR_COHERENCY_CACHED | NVOS32_ATTR_PAGE_SIZE_4KB
            : NVOS32_ATTR_LOCATION_VIDMEM |
                  (page > 4096 ? NVOS32_ATTR_PAGE_SIZE_HUGE : NVOS32_ATTR_PAGE_SIZE_4KB));
  p.attr2 = host ? NVOS32_ATTR2_GPU_CACHEABLE_NO : NVOS32_ATTR2_GPU_CACHEABLE_YES;
  allocation a;
  a.size = size;
  std::string why;
  const uint32_t cls = host ? NV1_MEMORY_SYSTEM : NV1_MEMORY_USER;
  if (!rm_alloc(device_, cls, &p, sizeof p, &a.memory,
                host ? "RM_ALLOC NV1_MEMORY_SYSTEM" : "RM_ALLOC NV1_MEMORY_USER", &why)) {
    *err = name() + ": " + std::to_string(size) + " bytes: " + why;
    return CAPGRAPH_ERR_MEMORY;
  }
  const auto undo = [&](const std::string &w) {
    *err = name() + ": mapping " + std::to_string(size) + " bytes: " + w;
    NVOS00_PARAMETERS f{client_, device_, a.memory, 0};
    sys_->ioctl(ctl_, nv_ioctl(NV_ESC_RM_FREE, sizeof f), &f);
    return CAPGRAPH_ERR_MEMORY;
  };
  // The CPU sees it at its GPU address (BAR1 for video memory, write-combined).
  if (!cpu_map(device_, a.memory, size, reinterpret_cast<void *>(va), host, &a.fd, &why))
    return undo(why);
  UVM_CREATE_EXTERNAL_RANGE_PARAMS r{};
  r.base = va;
  r.length = size;
  UVM_MAP_EXTERNAL_ALLOCATION_PARAMS m{};
  m.base = va;
  m.length = size;
  memcpy(m.perGpuAttributes[0].gpuUuid, uuid_, 16);
  m.perGpuAttributes[0].gpuMappingType = UvmGpuMappingTypeReadWriteAtomic;
  m.gpuAttributesCount = 1;
  m.rmCtrlFd = ctl_;
  m.hClient = client_;
  m.hMemory = a.memory;
  if (!uvm(UVM_CREATE_EXTERNAL_RANGE, &r, &r.rmStatus, "UVM_CREATE_EXTERNAL_RANGE", &why) ||
      !uvm(UVM_MAP_EXTERNAL_ALLOCATION, &m, &m.rmStatus, "UVM_MAP_EXTERNAL_ALLOCATION", &why)) {
    sys_->close(a.fd);
    sys_->mmap(reinterpret_cast<void *>(va), size, PROT_NONE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    return undo(why);
  }
  allocs_[va] = a;
  out->cpu = reinterpret_cast<uint8_t *>(va);
  out->gpu = va;
  out->size = size;
  out->handle = a.memory;
  return CAPGRAPH_OK;
}

capgraph_status nv_transport::channel_create(channel &ch, uint32_t gpfifo_class,
                                             uint32_t engine_class, const char *what,
                                             std::string *err) {
  std::string why;
  capgraph_status st;
  if ((st = alloc(kGpfifoBytes, hcq::memory_kind::device, &ch.ring, err)) != CAPGRAPH_OK) return st;
  if ((st = alloc(4096, hcq::memory_kind::host, &ch.notifier, err)) != CAPGRAPH_OK) return st;
  if ((st = alloc(kPushBytes, hcq::memory_kind::host, &ch.push, err)) != CAPGRAPH_OK) return st;
  memset(ch.ring.cpu, 0, ch.ring.size);
  NV_CHANNEL_ALLOC_PARAMS p{};
  p.hObjectError = uint32_t(ch.notifier.handle);
  p.hObjectBuffer = uint32_t(ch.ring.handle);
  p.gpFifoOffset = ch.ring.gpu;
  p.gpFifoEntries = kGpfifoEntries;
  p.hContextShare = ctxshare_;
  p.hUserdMemory[0] = uint32_t(ch.ring.handle);
  p.userdOffset[0] = kUserdOffset;
  const auto fail = [&](const std::string &w) {
    *err = name() + ": " + what + " channel: " + w;
    return CAPGRAPH_ERR_DEVICE;
  };
  if (!rm_alloc(tsg_, gpfifo_class, &p, sizeof p, &ch.handle, "RM_ALLOC GPFIFO channel", &why))
    return fail(why);
  if (!rm_alloc(ch.handle, engine_class, nullptr, 0, &ch.object, "RM_ALLOC engine object", &why))
    return fail(why);
  NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS t{};
  if (!rm_control(ch.handle, NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN, &t, sizeof t,
                  "GPFIFO_GET_WORK_SUBMIT_TOKEN", &why))
    return fail(why);
  ch.token = t.workSubmitToken;
  // UVM keeps the channel's context buffers in a range of our address space.
  UVM_REGISTER_CHANNEL_PARAMS r{};
  memcpy(r.gpuUuid, uuid_, 16);
  r.rmCtrlFd = ctl_;
  r.hClient = client_;
  r.hChannel = ch.handle;
  if (!va_take(64u << 20, 64u << 20, &r.base, &why)) return fail(why);
  r.length = 64u << 20;
  if (!uvm(UVM_REGISTER_CHANNEL, &r, &r.rmStatus, "UVM_REGISTER_CHANNEL", &why)) return fail(why);
  ch.f.entries = reinterpret_cast<volatile uint32_t *>(ch.ring.cpu);
  ch.f.count = kGpfifoEntries;
  ch.f.gp_put = reinterpret_cast<volatile uint32_t *>(ch.ring.cpu + kUserdOffset + USERD_GP_PUT);
  ch.f.push = reinterpret_cast<volatile uint32_t *>(ch.push.cpu);
  ch.f.push_gpu = ch.push.gpu;
  ch.f.push_dwords = ch.push.size / 4;
  return CAPGRAPH_OK;
}

// Opening is four steps; each message names the device ("nv:0: ...").
capgraph_status nv_transport::open(unsigned index, std::string *err) {
  index_ = index;
  std::string why;
  capgraph_status st;
  if ((st = driver_open(&why)) != CAPGRAPH_OK || (st = gpu_open(index, &why)) != CAPGRAPH_OK ||
      (st = address_space_open(&why)) != CAPGRAPH_OK) {
    *err = "nv:" + std::to_string(index) + ": " + why;
    return st;
  }
  return channels_open(err);
}

// The control device, the driver's version, our RM client, UVM.
capgraph_status nv_transport::driver_open(std::string *why) {
  const auto fail = [&](capgraph_status st, const std::string &w) {
    *why = w;
    return st;
  };
  if ((ctl_ = sys_->open(paths_.ctl.c_str(), O_RDWR | O_CLOEXEC)) < 0)
    return fail(CAPGRAPH_ERR_DEVICE,
                errno == ENOENT ? paths_.ctl + " is missing: no NVIDIA kernel driver is loaded"
                                : "open " + paths_.ctl + ": " + strerror(errno));
  // The driver's version first: every layout below belongs to one branch. CMD_QUERY makes the
  // driver copy its NV_VERSION_STRING into versionString (src/nvidia/arch/nvalloc/unix/src/
  // osapi.c RmPerformVersionCheck; kernel-open/nvidia/nv.c takes it on the control device only).
  nv_ioctl_rm_api_version_t v{};
  v.cmd = NV_RM_API_VERSION_CMD_QUERY;
  if (sys_->ioctl(ctl_, nv_ioctl(NV_ESC_CHECK_VERSION_STR, sizeof v), &v) < 0)
    return fail(CAPGRAPH_ERR_DEVICE, std::string("NV_ESC_CHECK_VERSION_STR: ") + strerror(errno));
  version_.assign(v.versionString, strnlen(v.versionString, sizeof v.versionString));
  const unsigned branch = nv_branch(version_);
  bool known = false;
  for (unsigned b : kBranches) known |= b == branch;
  if (!known)
    return fail(CAPGRAPH_ERR_DEVICE,
                "NVIDIA driver " + (version_.empty() ? std::string("(no version)") : version_) +
                    ": its RM/UVM ABI is not one this runtime knows (it knows the 580 branch; "
                    "see drivers/nv/README.md to add one)");
  NVOS21_PARAMETERS root{};
  root.hClass = NV01_ROOT_CLIENT;
  if (!rm_call(NV_ESC_RM_ALLOC, &root, sizeof root, &root.status, "RM_ALLOC NV01_ROOT_CLIENT", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  client_ = root.hObjectNew;

  if ((uvm_ = sys_->open(paths_.uvm.c_str(), O_RDWR | O_CLOEXEC)) < 0)
    return fail(CAPGRAPH_ERR_DEVICE, "open " + paths_.uvm + ": " + strerror(errno) +
                                         " (the nvidia-uvm module is needed)");
  UVM_INITIALIZE_PARAMS ui{};
  if (!uvm(UVM_INITIALIZE, &ui, &ui.rmStatus, "UVM_INITIALIZE", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  // A second UVM fd for UVM_MM_INITIALIZE, as libcuda and tinygrad do; its failure is not fatal
  // (tinygrad: "CUDA hits it too").
  if ((uvm_mm_ = sys_->open(paths_.uvm.c_str(), O_RDWR | O_CLOEXEC)) >= 0) {
    UVM_MM_INITIALIZE_PARAMS mi{uvm_, 0};
    sys_->ioctl(uvm_mm_, UVM_MM_INITIALIZE, &mi);
  }

  return CAPGRAPH_OK;
}

// The index-th GPU the driver reports: its device and subdevice objects, its chip (from the
// compute class it offers), its doorbell page.
capgraph_status nv_transport::gpu_open(unsigned index, std::string *why) {
  const auto fail = [&](capgraph_status st, const std::string &w) {
    *why = w;
    return st;
  };
  nv_ioctl_card_info_t cards[64] = {};
  if (sys_->ioctl(ctl_, nv_ioctl(NV_ESC_CARD_INFO, sizeof cards), cards) < 0)
    return fail(CAPGRAPH_ERR_DEVICE, std::string("NV_ESC_CARD_INFO: ") + strerror(errno));
  unsigned seen = 0;
  const nv_ioctl_card_info_t *card = nullptr;
  for (const auto &c : cards)
    if (c.valid && seen++ == index) card = &c;
  if (!card)
    return fail(CAPGRAPH_ERR_DEVICE,
                "no such GPU (the driver reports " + std::to_string(seen) + ")");
  minor_ = card->minor_number;
  NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS id{};
  id.gpuId = card->gpu_id;
  if (!rm_control(client_, NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2, &id, sizeof id, "GPU_GET_ID_INFO_V2",
                  why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);

  NV0080_ALLOC_PARAMETERS dp{};
  dp.deviceId = id.deviceInstance;
  dp.hClientShare = client_;
  dp.vaMode = NV_DEVICE_ALLOCATION_VAMODE_OPTIONAL_MULTIPLE_VASPACES;
  if (!rm_alloc(client_, NV01_DEVICE_0, &dp, sizeof dp, &device_, "RM_ALLOC NV01_DEVICE_0", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  NV2080_ALLOC_PARAMETERS sp{};
  if (!rm_alloc(device_, NV20_SUBDEVICE_0, &sp, sizeof sp, &subdevice_, "RM_ALLOC NV20_SUBDEVICE_0",
                why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);

  // The chip from the compute class the device offers.
  NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS classes{};
  if (!rm_control(device_, NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2, &classes, sizeof classes,
                  "GPU_GET_CLASSLIST_V2", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  for (uint32_t i = 0; i < classes.numClasses && i < 200 && !chip_; ++i)
    chip_ = chip_by_compute_class(classes.classList[i]);
  if (!chip_)
    return fail(CAPGRAPH_ERR_DEVICE,
                "PCI device 10de:" + hex(card->pci_info.device_id).substr(2) +
                    " offers no compute class this runtime drives (Ampere GA10x, Ada, Hopper: " +
                    chip_names() + ")");

  // The doorbell page.
  if (!rm_alloc(subdevice_, chip_->usermode_class, nullptr, 0, &usermode_, "RM_ALLOC usermode",
                why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  void *um = cpu_map(subdevice_, usermode_, USERMODE_BYTES, nullptr, false, &usermode_fd_, why);
  if (!um) return fail(CAPGRAPH_ERR_DEVICE, "usermode page: " + *why);
  usermode_cpu_ = static_cast<uint8_t *>(um);

  return CAPGRAPH_OK;
}

capgraph_status nv_transport::address_space_open(std::string *why) {
  const auto fail = [&](capgraph_status st, const std::string &w) {
    *why = w;
    return st;
  };
  // The GPU address space, owned by UVM (page faulting on: UVM manages it, as libcuda's).
  NV_VASPACE_ALLOCATION_PARAMETERS va{};
  va.vaBase = 0x1000;
  va.vaSize = 0x1fffffb000000ull;
  va.flags = NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING |
             NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED;
  if (!rm_alloc(device_, FERMI_VASPACE_A, &va, sizeof va, &vaspace_, "RM_ALLOC FERMI_VASPACE_A",
                why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  NV2080_CTRL_GPU_GET_GID_INFO_PARAMS gid{};
  gid.flags = NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY;
  gid.length = 16;
  if (!rm_control(subdevice_, NV2080_CTRL_CMD_GPU_GET_GID_INFO, &gid, sizeof gid,
                  "GPU_GET_GID_INFO", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  memcpy(uuid_, gid.data, 16);
  UVM_REGISTER_GPU_PARAMS rg{};
  memcpy(rg.gpu_uuid, uuid_, 16);
  rg.rmCtrlFd = -1;
  if (!uvm(UVM_REGISTER_GPU, &rg, &rg.rmStatus, "UVM_REGISTER_GPU", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);
  UVM_REGISTER_GPU_VASPACE_PARAMS rv{};
  memcpy(rv.gpuUuid, uuid_, 16);
  rv.rmCtrlFd = ctl_;
  rv.hClient = client_;
  rv.hVaSpace = vaspace_;
  if (!uvm(UVM_REGISTER_GPU_VASPACE, &rv, &rv.rmStatus, "UVM_REGISTER_GPU_VASPACE", why))
    return fail(CAPGRAPH_ERR_DEVICE, *why);

  // Our part of that space, reserved in the CPU's too.
  for (int i = 0; i < kVaTries + kVaLowTries && !va_cpu_; ++i) {
    const uint64_t size = i < kVaTries ? kVaSize : kVaLowSize;
    void *want =
        reinterpret_cast<void *>(i < kVaTries ? kVaBase + uint64_t(i) * kVaSize
                                              : kVaLowBase + uint64_t(i - kVaTries) * kVaLowSize);
    void *got =
        sys_->mmap(want, size, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (got == want) {
      va_cpu_ = got;
      va_size_ = size;
    } else if (got != MAP_FAILED) {
      sys_->munmap(got, size);
    }
  }
  if (!va_cpu_)
    return fail(CAPGRAPH_ERR_MEMORY,
                "cannot reserve a GPU address range below 2^40 in this process");
  va_base_ = va_next_ = reinterpret_cast<uint64_t>(va_cpu_);

  return CAPGRAPH_OK;
}

capgraph_status nv_transport::channels_open(std::string *err) {
  std::string why;
  const auto fail = [&](const std::string &w) {
    *err = "nv:" + std::to_string(index_) + ": " + w;
    return CAPGRAPH_ERR_DEVICE;
  };
  // A channel group with a subcontext on our address space, and its two channels.
  NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS tg{};
  tg.engineType = NV2080_ENGINE_TYPE_GRAPHICS;
  if (!rm_alloc(device_, KEPLER_CHANNEL_GROUP_A, &tg, sizeof tg, &tsg_,
                "RM_ALLOC KEPLER_CHANNEL_GROUP_A", &why))
    return fail(why);
  NV_CTXSHARE_ALLOCATION_PARAMETERS cs{};
  cs.hVASpace = vaspace_;
  cs.flags = NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC;
  if (!rm_alloc(tsg_, FERMI_CONTEXT_SHARE_A, &cs, sizeof cs, &ctxshare_,
                "RM_ALLOC FERMI_CONTEXT_SHARE_A", &why))
    return fail(why);
  capgraph_status st;
  if ((st = channel_create(channels_[0], chip_->gpfifo_class, chip_->compute_class, "compute",
                           err)) != CAPGRAPH_OK)
    return st;
  if ((st = channel_create(channels_[1], chip_->gpfifo_class, chip_->copy_class, "copy", err)) !=
      CAPGRAPH_OK)
    return st;
  NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS sched{1, 0, 0};
  if (!rm_control(tsg_, NVA06C_CTRL_CMD_GPFIFO_SCHEDULE, &sched, sizeof sched, "GPFIFO_SCHEDULE",
                  &why))
    return fail(why);
  return CAPGRAPH_OK;
}

unsigned device_index(const char *device, bool *ok) {
  const char *colon = strchr(device, ':');
  *ok = true;
  if (!colon) return 0;
  char *end;
  const unsigned long n = strtoul(colon + 1, &end, 10);
  *ok = end != colon + 1 && *end == 0 && n < 64;
  return unsigned(n);
}

}  // namespace

unsigned nv_branch(const std::string &version) {
  unsigned major = 0;
  size_t i = 0;
  for (; i < version.size() && version[i] >= '0' && version[i] <= '9' && i < 4; ++i)
    major = major * 10 + unsigned(version[i] - '0');
  return i > 0 && i < version.size() && version[i] == '.' ? major : 0;
}

std::shared_ptr<nv_sys> nv_sys_linux() { return std::make_shared<linux_sys>(); }

capgraph_status nv_open_with(std::shared_ptr<nv_sys> sys, const nv_paths &paths, const char *device,
                             std::unique_ptr<hcq::transport> *out, std::string *err) {
  bool ok;
  const unsigned index = device_index(device, &ok);
  if (!ok) {
    *err = std::string("'") + device + "': an NVIDIA device is nv or nv:N";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  auto t = std::make_unique<nv_transport>(std::move(sys), paths);
  capgraph_status st = t->open(index, err);
  if (st != CAPGRAPH_OK) return st;
  *out = std::move(t);
  return CAPGRAPH_OK;
}

capgraph_status nv_open(const char *device, std::unique_ptr<hcq::transport> *out,
                        std::string *err) {
  return nv_open_with(nv_sys_linux(), nv_paths{}, device, out, err);
}

std::string nv_devices_describe() {
  std::unique_ptr<hcq::transport> t;
  std::string err;
  if (::access("/dev/nvidiactl", F_OK) != 0)
    return "nv: no NVIDIA GPU (/dev/nvidiactl is missing: no NVIDIA kernel driver is loaded)\n";
  std::string lines;
  for (unsigned i = 0; i < 64; ++i) {
    const std::string name = "nv:" + std::to_string(i);
    if (nv_open(name.c_str(), &t, &err) != CAPGRAPH_OK) {
      if (i == 0 || err.find("no such GPU") == std::string::npos)
        lines += (i ? "" : "nv: ") + err + "\n";
      break;
    }
    lines += t->name() + "\n";
    t.reset();
  }
  return lines;
}

}  // namespace capgraph::nv
