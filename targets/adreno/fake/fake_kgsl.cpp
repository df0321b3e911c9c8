#include "fake_kgsl.h"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "a630_estimate.h"
#include "adreno_hcq.h"
#include "adreno_pm4.h"
#include "clock_text.h"
#include "hcq/word_compare.h"
#include "ir3_emu.h"
#include "kgsl_transport.h"

namespace capgraph::adreno {
namespace {

int fail_errno(int e) {
  errno = e;
  return -1;
}

constexpr int fake_fd = 1000;  // any number: the fake's only file

// The names the transport's messages give the ioctls (kgsl_uapi.h), for injected failures.
const char *ioctl_name(unsigned long request) {
  using namespace kgsl;
  switch (request) {
    case ioctl_device_getproperty: return "IOCTL_KGSL_DEVICE_GETPROPERTY";
    case ioctl_device_waittimestamp_ctxtid: return "IOCTL_KGSL_DEVICE_WAITTIMESTAMP_CTXTID";
    case ioctl_drawctxt_create: return "IOCTL_KGSL_DRAWCTXT_CREATE";
    case ioctl_drawctxt_destroy: return "IOCTL_KGSL_DRAWCTXT_DESTROY";
    case ioctl_map_user_mem: return "IOCTL_KGSL_MAP_USER_MEM";
    case ioctl_sharedmem_free: return "IOCTL_KGSL_SHAREDMEM_FREE";
    case ioctl_gpuobj_alloc: return "IOCTL_KGSL_GPUOBJ_ALLOC";
    case ioctl_gpuobj_free: return "IOCTL_KGSL_GPUOBJ_FREE";
    case ioctl_gpu_command: return "IOCTL_KGSL_GPU_COMMAND";
  }
  return "ioctl";
}

}  // namespace

fake_kgsl::fake_kgsl(uint32_t chip_id, fake_adreno_mode mode, fake::fault_plan faults)
    : chip_id_(chip_id), mode_(mode), faults_("fake-adreno", faults) {}

int64_t fake_kgsl::live_objects() const {
  return int64_t(regions_.size() + contexts_.size() + mapped_.size()) + (fd_ >= 0 ? 1 : 0);
}

fake_kgsl::~fake_kgsl() {
  session_end();
  for (auto &[gpu, r] : regions_) {
    if (r.user)
      ::munmap(reinterpret_cast<void *>(uintptr_t(r.gpu)), r.size);  // the reservation
    else
      ::munmap(r.cpu, r.size);
  }
}

int fake_kgsl::open(const char *path, int) {
  int e = 0;
  if (faults_.call(std::string("open ") + path, ENODEV, &e)) return fail_errno(e);
  if (absent_ || strcmp(path, kgsl::device_path) != 0) return fail_errno(ENOENT);
  if (fd_ >= 0) return fail_errno(EBUSY);  // one client at a time is all the transport needs
  fd_ = fake_fd;
  return fd_;
}

int fake_kgsl::close(int fd) {
  int e = 0;
  const bool injected = faults_.call("close", EIO, &e);  // released all the same, as close(2)
  if (fd != fd_ || fd_ < 0) return fail_errno(EBADF);
  fd_ = -1;
  if (profile_ && !profile_delivered_ && !kernel_names_.empty()) {
    profile_delivered_ = true;
    hcq::device_profile_deliver(profile_report());
  }
  session_end();
  return injected ? fail_errno(e) : 0;
}

void *fake_kgsl::mmap(void *, size_t length, int prot, int flags, int fd, off_t offset) {
  int e = 0;
  if (faults_.call("mmap", ENOMEM, &e)) return (errno = e, MAP_FAILED);
  if (fd != fd_ || fd_ < 0) return (errno = EBADF, MAP_FAILED);
  const auto o = objects_.find(uint32_t(uint64_t(offset) >> 12));
  if (uint64_t(offset) % 4096 || o == objects_.end()) return (errno = EINVAL, MAP_FAILED);
  const region &r = regions_.at(o->second);
  if (length != r.size || !(flags & MAP_SHARED) || !(prot & PROT_READ))
    return (errno = EINVAL, MAP_FAILED);
  mapped_[r.cpu] = r.size;
  return r.cpu;
}

int fake_kgsl::munmap(void *addr, size_t) {
  int e = 0;
  const bool injected = faults_.call("munmap", EINVAL, &e);  // unmapped all the same
  // The memory stays until GPUOBJ_FREE (which the transport calls right after).
  for (const auto &[gpu, r] : regions_)
    if (r.cpu == addr && !r.user) {
      mapped_.erase(addr);
      return injected ? fail_errno(e) : 0;
    }
  return fail_errno(EINVAL);
}

int fake_kgsl::ioctl(int fd, unsigned long request, void *arg) {
  using namespace kgsl;
  const bool alloc = request == ioctl_gpuobj_alloc || request == ioctl_map_user_mem ||
                     request == ioctl_drawctxt_create;
  const bool release = request == ioctl_gpuobj_free || request == ioctl_sharedmem_free ||
                       request == ioctl_drawctxt_destroy;
  int e = 0;
  const bool injected = faults_.call(ioctl_name(request),
                                     alloc                          ? ENOMEM
                                     : request == ioctl_gpu_command ? EIO
                                                                    : ENODEV,
                                     &e);
  if (injected && !release) return fail_errno(e);
  if (fd != fd_ || fd_ < 0) return fail_errno(EBADF);
  if (!arg) return fail_errno(EFAULT);
  const int r = ioctl_body(request, arg);
  return injected ? fail_errno(e) : r;  // a release is done, then reported failed
}

int fake_kgsl::ioctl_body(unsigned long request, void *arg) {
  using namespace kgsl;
  switch (request) {
    case ioctl_device_getproperty: {
      auto *p = static_cast<device_getproperty *>(arg);
      if (p->type != prop_device_info || p->sizebytes != sizeof(devinfo) || !p->value)
        return fail_errno(EINVAL);
      devinfo info{};
      info.device_id = 1;  // KGSL_DEVICE_3D0 + 1
      info.chip_id = chip_id_;
      info.mmu_enabled = 1;
      info.gpu_id = ((chip_id_ >> 24) & 0xff) * 100 + ((chip_id_ >> 16) & 0xff) * 10 +
                    ((chip_id_ >> 8) & 0xff);
      info.gmem_sizebytes = adreno::chip_find("a630")->gmem_bytes;  // the a630's, for any chip id
      memcpy(reinterpret_cast<void *>(uintptr_t(p->value)), &info, sizeof info);
      return 0;
    }
    case ioctl_drawctxt_create: {
      auto *c = static_cast<drawctxt_create *>(arg);
      c->drawctxt_id = next_context_++;
      contexts_[c->drawctxt_id] = c->flags;
      return 0;
    }
    case ioctl_drawctxt_destroy: {
      auto *c = static_cast<drawctxt_destroy *>(arg);
      return contexts_.erase(c->drawctxt_id) ? 0 : fail_errno(EINVAL);
    }
    case ioctl_gpuobj_alloc: {
      auto *a = static_cast<gpuobj_alloc *>(arg);
      // The transport relies on USE_CPU_MAP (GPU address = CPU address); without it this fake
      // would have to hand out GPU addresses no mapping gives, so it refuses.
      if (!a->size || !(a->flags & memflags_use_cpu_map)) return fail_errno(EINVAL);
      const uint64_t size = (a->size + 4095) / 4096 * 4096;
      void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return fail_errno(ENOMEM);
      region r;
      r.gpu = uint64_t(uintptr_t(p));
      r.size = size;
      r.cpu = static_cast<uint8_t *>(p);
      r.id = next_id_++;
      r.order = allocations_++;
      regions_[r.gpu] = r;
      objects_[r.id] = r.gpu;
      a->mmapsize = size;
      a->id = r.id;
      return 0;
    }
    case ioctl_gpuobj_free: {
      auto *f = static_cast<gpuobj_free *>(arg);
      const auto o = objects_.find(f->id);
      if (o == objects_.end()) return fail_errno(EINVAL);
      region &r = regions_.at(o->second);
      ::munmap(r.cpu, r.size);
      regions_.erase(o->second);
      objects_.erase(o);
      return 0;
    }
    case ioctl_map_user_mem: {
      auto *m = static_cast<map_user_mem *>(arg);
      if (m->memtype != user_mem_type_addr || !m->len || (m->hostptr | m->len) % 4096)
        return fail_errno(EINVAL);
      // A GPU address of its own (reserved, so nothing else lands there): the runtime must use
      // the address the driver returns, not the host pointer.
      void *va =
          ::mmap(nullptr, m->len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (va == MAP_FAILED) return fail_errno(ENOMEM);
      region r;
      r.gpu = uint64_t(uintptr_t(va));
      r.size = m->len;
      r.cpu = reinterpret_cast<uint8_t *>(uintptr_t(m->hostptr));
      r.user = true;
      r.order = imports_n_++;
      regions_[r.gpu] = r;
      m->gpuaddr = r.gpu;
      ++imports_;
      return 0;
    }
    case ioctl_sharedmem_free: {
      auto *f = static_cast<sharedmem_free *>(arg);
      const auto it = regions_.find(f->gpuaddr);
      if (it == regions_.end() || !it->second.user) return fail_errno(EINVAL);
      ::munmap(reinterpret_cast<void *>(uintptr_t(it->second.gpu)), it->second.size);
      regions_.erase(it);
      return 0;
    }
    case ioctl_gpu_command: {
      auto *c = static_cast<gpu_command *>(arg);
      if (!contexts_.count(c->context_id) || c->cmdsize != sizeof(command_object) || !c->numcmds ||
          !c->cmdlist)
        return fail_errno(EINVAL);
      if (faulted_) return fail_errno(EPROTO);
      c->timestamp = ++queued_;
      ++commands_;
      if (wedged_) return 0;  // accepted, never run
      command_run(*c);
      retired_ = queued_;
      return 0;
    }
    case ioctl_device_waittimestamp_ctxtid: {
      auto *w = static_cast<device_waittimestamp_ctxtid *>(arg);
      if (!contexts_.count(w->context_id)) return fail_errno(EINVAL);
      if (faulted_) return fail_errno(EPROTO);
      if (int32_t(retired_ - w->timestamp) >= 0) return 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(w->timeout));
      return fail_errno(ETIMEDOUT);
    }
    default: raise("unknown ioctl " + hex(request)); return fail_errno(ENOTTY);
  }
}

capgraph_status fake_kgsl::capture_attach(const fb::Capture *c,
                                          const std::vector<uint64_t> &program_gpu,
                                          std::string *err) {
  capture_ = c;
  kernel_at_.clear();
  programs_.clear();
  const size_t nk = c->kernels() ? c->kernels()->size() : 0;
  kernel_names_.clear();
  for (size_t k = 0; k < nk; ++k)
    kernel_names_.push_back(c->kernels()->Get(uint32_t(k))->name()->str());
  kernel_counts_.assign(nk, ir3_counts{});
  kernel_dispatches_.assign(nk, 0);
  kernel_us_.assign(nk, 0);
  kernel_top_us_.assign(nk, 0);
  kernel_bound_.assign(nk, "");
  kernel_launch_flops_.assign(nk, 0);
  kernel_unique_bytes_.assign(nk, 0);
  {
    // Launches of one kernel have one shape (a kernel is compiled for its shapes): FLOPs per
    // launch are their mean.
    std::vector<double> launches(nk, 0);
    for (uint32_t i = 0; c->steps() && i < c->steps()->size(); ++i) {
      const fb::Launch *l = c->steps()->Get(i)->launch();
      if (!l || l->kernel() >= nk) continue;
      kernel_launch_flops_[l->kernel()] += double(l->flops());
      launches[l->kernel()]++;
    }
    for (size_t k = 0; k < nk; ++k)
      if (launches[k]) kernel_launch_flops_[k] /= launches[k];
  }
  timeline_.clear();
  profile_delivered_ = false;
  for (uint32_t k = 0; c->kernels() && k < c->kernels()->size(); ++k) {
    const uint32_t p = c->kernels()->Get(k)->program();
    if (p < program_gpu.size() && program_gpu[p]) kernel_at_.emplace(program_gpu[p], k);
  }
  twins_ = hcq::host_twins();
  if (mode_ == fake_adreno_mode::emulate) return CAPGRAPH_OK;  // the machine code runs alone
  capgraph_status st = twins_.link(c, "fake-adreno", err);
  if (st != CAPGRAPH_OK) return st;
  for (uint32_t k = 0; c->kernels() && k < c->kernels()->size(); ++k)
    if (!twins_.has(k)) {
      *err = "fake-adreno: kernel '" + c->kernels()->Get(k)->name()->str() +
             "' has no host twin, which fake-adreno:" +
             (mode_ == fake_adreno_mode::twin ? "twin runs" : "check compares with");
      return CAPGRAPH_ERR_FORMAT;
    }
  return CAPGRAPH_OK;
}

namespace {

// The host's float unit flushing denormal inputs and results to zero while it lives, as the a6xx
// does (fp32 and fp16 denormals flushed: Mesa tu_device.cc's float controls; ir3_emu.h), so that
// a result the GPU flushes (a sigmoid of a large negative value) is no difference in check mode.
// x86-64: MXCSR FTZ (bit 15) and DAZ (bit 6); aarch64: FPCR.FZ (bit 24).
class denormals_flushed {
 public:
  denormals_flushed() {
#if defined(__x86_64__)
    saved_ = _mm_getcsr();
    _mm_setcsr(uint32_t(saved_) | 0x8040u);
#elif defined(__aarch64__)
    asm volatile("mrs %0, fpcr" : "=r"(saved_));
    asm volatile("msr fpcr, %0" : : "r"(saved_ | (1ull << 24)));
#endif
  }
  ~denormals_flushed() {
#if defined(__x86_64__)
    _mm_setcsr(uint32_t(saved_));
#elif defined(__aarch64__)
    asm volatile("msr fpcr, %0" : : "r"(saved_));
#endif
  }
  denormals_flushed(const denormals_flushed &) = delete;
  denormals_flushed &operator=(const denormals_flushed &) = delete;

 private:
  uint64_t saved_ = 0;
};

}  // namespace

bool fake_kgsl::raise(const std::string &why) {
  if (fault_.empty()) {
    fault_ = why;
    fprintf(stderr, "fake-adreno: GPU fault: %s\n", why.c_str());
  }
  faulted_ = true;
  return false;
}

uint64_t fake_kgsl::clock() const {
  const uint64_t ns = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
  return ns / 1000 * 192 / 10;  // 19.2 ticks per microsecond
}

uint8_t *fake_kgsl::host(uint64_t gpu, uint64_t size) const {
  auto it = regions_.upper_bound(gpu);
  if (it == regions_.begin()) return nullptr;
  --it;
  const region &r = it->second;
  if (gpu < r.gpu || gpu - r.gpu > r.size || size > r.size - (gpu - r.gpu)) return nullptr;
  return r.cpu + (gpu - r.gpu);
}

std::string fake_kgsl::address_text(uint64_t gpu) const {
  auto it = regions_.upper_bound(gpu);
  if (it != regions_.begin()) {
    --it;
    const region &r = it->second;
    if (gpu >= r.gpu && gpu - r.gpu < r.size)
      return std::string(r.user ? "user" : "obj") + std::to_string(r.order) + "+" +
             hex(gpu - r.gpu);
  }
  return hex(gpu);
}

bool fake_kgsl::write32(uint64_t gpu, uint32_t v) {
  uint8_t *p = host(gpu, 4);
  if (!p || gpu % 4)
    return raise("a 32-bit write to " + hex(gpu) + " is outside every allocation or unaligned");
  __atomic_store_n(reinterpret_cast<uint32_t *>(p), v, __ATOMIC_RELEASE);
  return true;
}

bool fake_kgsl::command_run(const kgsl::gpu_command &c) {
  // Each command starts with the state a context has after its preamble: nothing the runtime set.
  std::fill(written_.begin(), written_.end(), false);
  std::fill(const_loaded_.begin(), const_loaded_.end(), false);
  shader_loaded_ = 0;
  tex_state_reset();
  compute_marker_ = false;
  const auto *list = reinterpret_cast<const kgsl::command_object *>(uintptr_t(c.cmdlist));
  for (uint32_t i = 0; i < c.numcmds; ++i) {
    const kgsl::command_object &o = list[i];
    if (!(o.flags & kgsl::cmdlist_ib) || o.size % 4 || !host(o.gpuaddr, o.size))
      return raise("command object " + std::to_string(i) +
                   " is not an indirect buffer of whole dwords inside an allocation");
    if (!ib_run(o.gpuaddr, o.size / 4, 1)) return false;
  }
  return true;
}

bool fake_kgsl::ib_run(uint64_t gpu, uint64_t dwords, int depth) {
  const auto *w = reinterpret_cast<const uint32_t *>(host(gpu, dwords * 4));
  if (!w || gpu % 4)
    return raise("indirect buffer " + address_text(gpu) + " (" + std::to_string(dwords) +
                 " dwords) is outside every allocation");
  for (uint64_t i = 0; i < dwords;) {
    const std::string at = "IB" + std::to_string(depth) + " " + address_text(gpu + 4 * i);
    const packet p = packet_decode(w[i]);
    if (p.kind == packet::bad) return raise(at + ": " + p.why);
    if (i + 1 + p.count > dwords) return raise(at + ": the packet runs past the end of its buffer");
    const uint32_t *body = w + i + 1;
    if (p.kind == packet::type4) {
      for (uint32_t k = 0; k < p.count; ++k) {
        const uint32_t r = p.reg_or_opcode + k;
        if (!reg_known(r)) return raise(at + ": write to unknown register " + hex(r));
        const auto o = overrides_.find(r);
        regs_[r] = o == overrides_.end() ? body[k] : o->second;
        written_[r] = true;
        // CS_STATE drops the shader and constants loaded before.
        if (r == HLSQ_INVALIDATE_CMD && field_get(body[k], fields::HLSQ_INVALIDATE_CMD::CS_STATE)) {
          std::fill(const_loaded_.begin(), const_loaded_.end(), false);
          shader_loaded_ = 0;
          tex_state_reset();
        }
      }
    } else if (!type7(p.reg_or_opcode, body, p.count, depth)) {
      if (fault_.find(" at IB") == std::string::npos) fault_ += " (at " + at + ")";
      return false;
    }
    i += 1 + p.count;
  }
  return true;
}

bool fake_kgsl::type7(uint32_t op, const uint32_t *p, uint32_t n, int depth) {
  const auto need = [&](uint32_t words) {
    return n == words ? true
                      : raise(std::string(opcode_name(op)) + " with " + std::to_string(n) +
                              " payload words, not " + std::to_string(words));
  };
  const auto get = [&](auto field) { return field_get(p, n, field); };
  switch (op) {
    case CP_NOP: return true;
    case CP_WAIT_MEM_WRITES:
    case CP_WAIT_FOR_IDLE: return need(0);  // execution is serial: everything before is done
    case CP_SET_MARKER:
      if (!need(1)) return false;
      if (get(fields::CP_SET_MARKER::MODE) != RM6_COMPUTE)
        return raise("CP_SET_MARKER mode " + hex(p[0]) + ": only RM6_COMPUTE is known");
      compute_marker_ = true;
      return true;
    case CP_LOAD_STATE6_FRAG: return load_state(p, n);
    case CP_EXEC_CS: {
      using f = fields::CP_EXEC_CS;
      return need(4) && dispatch(uint32_t(get(f::NGROUPS_X)), uint32_t(get(f::NGROUPS_Y)),
                                 uint32_t(get(f::NGROUPS_Z)));
    }
    case CP_EVENT_WRITE: {
      using f = fields::CP_EVENT_WRITE;
      const uint64_t event = get(f::EVENT);
      if (event == CACHE_INVALIDATE && n == 1) return true;
      if (event != CACHE_FLUSH_TS)
        return raise("CP_EVENT_WRITE event " + hex(event) + " is not one this fake knows");
      if (!get(f::TIMESTAMP)) return need(1);
      return need(4) && write32(get(f::ADDR_0), uint32_t(get(f::VALUE)));
    }
    case CP_WAIT_REG_MEM: {
      using f = fields::CP_WAIT_REG_MEM;
      if (!need(6)) return false;
      if (get(f::FUNCTION) != WRITE_GE || get(f::POLL) != POLL_MEMORY)
        return raise("CP_WAIT_REG_MEM function " + hex(p[0]) +
                     ": only WRITE_GE on memory is known");
      const uint64_t at = get(f::POLL_ADDR);
      const uint8_t *m = host(at, 4);
      if (!m) return raise("CP_WAIT_REG_MEM polls " + hex(at) + ", outside every allocation");
      uint32_t v;
      memcpy(&v, m, 4);
      // Execution is serial: nothing else will ever write it.
      if ((v & get(f::MASK)) < get(f::REF))
        return raise("CP_WAIT_REG_MEM waits for " + std::to_string(get(f::REF)) + " at " +
                     address_text(at) + ", which holds " + std::to_string(v) + ": a deadlock");
      return true;
    }
    case CP_REG_TO_MEM: {
      using f = fields::CP_REG_TO_MEM;
      if (!need(3)) return false;
      if (get(f::REG) != CP_ALWAYS_ON_COUNTER || get(f::CNT) != 2 || !get(f::SIZE_64B))
        return raise("CP_REG_TO_MEM " + hex(p[0]) +
                     ": only the 64-bit CP_ALWAYS_ON_COUNTER is known");
      const uint64_t t = clock();
      return write32(get(f::DEST), uint32_t(t)) && write32(get(f::DEST) + 4, uint32_t(t >> 32));
    }
    case CP_INDIRECT_BUFFER:
      if (!need(3)) return false;
      // a6xx runs IB1 (the submitted command) and IB2 (called from it), no deeper.
      if (depth >= 2) return raise("CP_INDIRECT_BUFFER inside an IB2: the CP has two IB levels");
      return ib_run(get(fields::CP_INDIRECT_BUFFER::IB_BASE),
                    get(fields::CP_INDIRECT_BUFFER::IB_SIZE), depth + 1);
    case CP_MEMCPY: {
      using f = fields::CP_MEMCPY;
      if (!need(5)) return false;
      const uint64_t bytes = get(f::DWORDS) * 4;
      uint8_t *dst = host(get(f::DST), bytes);
      const uint8_t *src = host(get(f::SRC), bytes);
      if (!dst || !src)
        return raise("CP_MEMCPY of " + std::to_string(bytes) + " bytes outside every allocation");
      memmove(dst, src, bytes);
      if (profile_) timeline_.push_back({hcq::profile_dispatch::kCopy, a630_copy_us(bytes)});
      return true;
    }
    default: return raise("unknown opcode " + hex(op));
  }
}

// SB6_CS_TEX (Mesa fd6_texture.cc for a compute stage): ST6_CONSTANTS loads 16-dword texture
// descriptors, ST6_SHADER 4-dword samplers, into slots [dst, dst + units), from memory.
bool fake_kgsl::load_tex_state(uint32_t type, uint32_t src, uint32_t dst, uint32_t units,
                               uint64_t from, uint32_t n) {
  const bool descriptors = type == ST6_CONSTANTS;
  if (type != ST6_CONSTANTS && type != ST6_SHADER)
    return raise("CP_LOAD_STATE6 type " + std::to_string(type) +
                 " to SB6_CS_TEX: only ST6_CONSTANTS (textures) and ST6_SHADER (samplers)");
  if (src != SS6_INDIRECT || n != 3) return raise("texture state loaded other than SS6_INDIRECT");
  if (!units || dst + units > 16)
    return raise("texture state slots [" + std::to_string(dst) + ", +" + std::to_string(units) +
                 ") outside the 16 there are");
  const uint32_t dwords = descriptors ? 16 : 4;
  const uint32_t *data =
      reinterpret_cast<const uint32_t *>(host(from, uint64_t(units) * dwords * 4));
  if (!data || from % (descriptors ? 64 : 16))
    return raise(std::string(descriptors ? "texture descriptors" : "samplers") + " from " +
                 hex(from) + " outside every allocation or not " + (descriptors ? "64" : "16") +
                 "-byte aligned");
  for (uint32_t u = 0; u < units; ++u) {
    if (descriptors) {
      memcpy(textures_[dst + u].words, data + 16 * u, 64);
      texture_loaded_[dst + u] = true;
    } else {
      memcpy(samplers_[dst + u].data(), data + 4 * u, 16);
      sampler_loaded_[dst + u] = true;
    }
  }
  (descriptors ? textures_from_ : samplers_from_) = from - uint64_t(dst) * dwords * 4;
  return true;
}

void fake_kgsl::tex_state_reset() {
  std::fill(texture_loaded_.begin(), texture_loaded_.end(), false);
  std::fill(sampler_loaded_.begin(), sampler_loaded_.end(), false);
  textures_from_ = samplers_from_ = 0;
}

// The texture state of kernel k's images (AdrenoKernel.images) against what the packets loaded:
// SP_CS_TEX_COUNT and SP_CS_CONFIG's NTEX/NSAMP the image count; SP_CS_TEX_CONST and
// SP_CS_TEX_SAMP where the loads read from; per image a descriptor (linear, 2D, swizzle XYZW, the
// format, size and pitch of the facts, PITCHALIGN the pitch's, based at the image's buffer as
// the constant file holds it) and a sampler (nearest, unnormalized, CLAMP_TO_BORDER on S/T/R,
// border colour 0), and a border colour table whose entry 0 is zero. Field layouts: a6xx.xml
// A6XX_TEX_CONST and A6XX_TEX_SAMP (Mesa 25.0.7), read here field by field, not through the
// encoder's writer (adreno_texture.h). The descriptors go to the emulator as loaded.
bool fake_kgsl::textures_check(uint32_t k, const fb::AdrenoKernel *a,
                               const std::vector<uint64_t> &gpus, ir3_dispatch *d) {
  const fb::Kernel *kern = capture_->kernels()->Get(k);
  const std::string what = "kernel " + std::to_string(k) + " '" + kern->name()->str() + "': ";
  const auto bad = [&](const std::string &s) { return raise(what + s); };
  const uint32_t n = a->images() ? a->images()->size() : 0;
  using config = fields::SP_CS_CONFIG;
  const uint32_t cfg = regs_[SP_CS_CONFIG];
  if (regs_[SP_CS_TEX_COUNT] != n || field_get(cfg, config::NTEX) != n ||
      field_get(cfg, config::NSAMP) != n)
    return bad("SP_CS_TEX_COUNT " + std::to_string(regs_[SP_CS_TEX_COUNT]) + ", NTEX " +
               std::to_string(field_get(cfg, config::NTEX)) + " and NSAMP " +
               std::to_string(field_get(cfg, config::NSAMP)) + " are not its " + std::to_string(n) +
               " images");
  if (field_get(cfg, config::BINDLESS_TEX) || field_get(cfg, config::BINDLESS_SAMP))
    return bad("SP_CS_CONFIG asks for bindless textures or samplers");
  d->textures.clear();
  if (!n) return true;
  for (uint32_t r :
       {uint32_t(SP_CS_TEX_CONST), uint32_t(SP_CS_TEX_CONST_HI), uint32_t(SP_CS_TEX_SAMP),
        uint32_t(SP_CS_TEX_SAMP_HI), uint32_t(SP_TP_BORDER_COLOR_BASE_ADDR),
        uint32_t(SP_TP_BORDER_COLOR_BASE_ADDR_HI)})
    if (!written_[r])
      return bad(std::string("it reads images but ") + reg_name(r) + " was not written");
  const auto reg64 = [&](uint32_t r) { return uint64_t(regs_[r + 1]) << 32 | regs_[r]; };
  if (reg64(SP_CS_TEX_CONST) != textures_from_ || reg64(SP_CS_TEX_SAMP) != samplers_from_)
    return bad(
        "SP_CS_TEX_CONST / SP_CS_TEX_SAMP are not where CP_LOAD_STATE6 read the "
        "descriptors and samplers");
  const uint64_t border = reg64(SP_TP_BORDER_COLOR_BASE_ADDR);
  const uint8_t *entry = host(border, 128);
  if (!entry || border % 128)
    return bad("SP_TP_BORDER_COLOR_BASE_ADDR " + address_text(border) +
               " is no 128-byte aligned border colour table");
  for (int b = 0; b < 128; ++b)
    if (entry[b])
      return bad("its border colour entry 0 is not zero (padding reads would not be 0)");
  for (uint32_t i = 0; i < n; ++i) {
    const fb::AdrenoImage *m = a->images()->Get(i);
    const std::string im = "image " + std::to_string(i) + ": ";
    if (!texture_loaded_[i] || !sampler_loaded_[i])
      return bad(im + "texture " + std::to_string(i) + " or sampler " + std::to_string(i) +
                 " was not loaded (CP_LOAD_STATE6 SB6_CS_TEX) since the last invalidate");
    const uint32_t *w = textures_[i].words;
    const uint32_t fmt = (w[0] >> 22) & 0xff, tile = w[0] & 3, swiz = (w[0] >> 4) & 0xfff,
                   width = w[1] & 0x7fff, height = (w[1] >> 15) & 0x7fff,
                   pitch = (w[2] >> 7) & 0x3fffff, type = (w[2] >> 29) & 7, pitchalign = w[2] & 0xf;
    const uint64_t base = (uint64_t(w[5] & 0x1ffff) << 32) | (w[4] & ~31u);
    if (tile != 0 || type != 1 || swiz != (0u | 1u << 3 | 2u << 6 | 3u << 9))
      return bad(im + "the descriptor is not a linear 2D image with swizzle XYZW");
    if (fmt != m->format() || width != m->width() || height != m->height() || pitch != m->pitch())
      return bad(im + "the descriptor's format " + hex(fmt) + ", size " + std::to_string(width) +
                 "x" + std::to_string(height) + ", pitch " + std::to_string(pitch) +
                 " are not the capture's " + hex(m->format()) + ", " + std::to_string(m->width()) +
                 "x" + std::to_string(m->height()) + ", " + std::to_string(m->pitch()));
    if (!pitch || (pitch >> (pitchalign + 6)) << (pitchalign + 6) != pitch)
      return bad(im + "PITCHALIGN " + std::to_string(pitchalign) +
                 " claims more than the pitch's "
                 "alignment");
    if (m->slot() >= gpus.size() || base != gpus[m->slot()])
      return bad(im + "the descriptor's base " + address_text(base) +
                 " is not the address of its buffer (parameter " + std::to_string(m->slot()) + ")");
    const auto &sm = samplers_[i];
    const uint32_t mag = (sm[0] >> 1) & 3, min = (sm[0] >> 3) & 3, ws = (sm[0] >> 5) & 7,
                   wt = (sm[0] >> 8) & 7, wr = (sm[0] >> 11) & 7, unnorm = (sm[1] >> 5) & 1,
                   bcolor = sm[2] >> 7;
    if (mag || min || ws != 3 || wt != 3 || wr != 3 || !unnorm || bcolor)
      return bad(im + "sampler " + hex(sm[0]) + " " + hex(sm[1]) + " " + hex(sm[2]) +
                 " is not nearest, unnormalized, CLAMP_TO_BORDER with border colour 0");
  }
  d->textures.assign(textures_.begin(), textures_.begin() + n);
  return true;
}

bool fake_kgsl::load_state(const uint32_t *p, uint32_t n) {
  if (n < 3) return raise("CP_LOAD_STATE6_FRAG with " + std::to_string(n) + " payload words");
  using f = fields::CP_LOAD_STATE6_FRAG;
  const auto get = [&](f field) { return uint32_t(field_get(p, n, field)); };
  const uint32_t dst = get(f::DST_OFF), type = get(f::STATE_TYPE), src = get(f::STATE_SRC),
                 block = get(f::STATE_BLOCK), units = get(f::NUM_UNIT);
  const uint64_t from = field_get(p, n, f::EXT_SRC_ADDR);
  if (block == SB6_CS_TEX) return load_tex_state(type, src, dst, units, from, n);
  if (block != SB6_CS_SHADER)
    return raise("CP_LOAD_STATE6 to state block " + hex(block) +
                 ": only SB6_CS_SHADER and SB6_CS_TEX are known");
  if (type == ST6_SHADER) {
    if (src != SS6_INDIRECT || n != 3) return raise("a shader load that is not SS6_INDIRECT");
    if (!units || !host(from, uint64_t(units) * 128))
      return raise("a shader load of " + std::to_string(units) + " units from " + hex(from) +
                   " outside every allocation");
    if (from % 128) return raise("a shader at " + hex(from) + ", not 128-byte aligned");
    shader_loaded_ = from;
    return true;
  }
  if (type != ST6_CONSTANTS)
    return raise("CP_LOAD_STATE6 type " + std::to_string(type) +
                 ": only ST6_SHADER and ST6_CONSTANTS are known");
  if (!units || dst + units > 256)
    return raise("constants [" + std::to_string(dst) + ", +" + std::to_string(units) +
                 ") outside the 256-vec4 constant file");
  const uint32_t *data;
  if (src == SS6_DIRECT) {
    if (n != 3 + units * 4)
      return raise("a direct constant load of " + std::to_string(units) + " vec4 with " +
                   std::to_string(n - 3) + " data words");
    data = p + 3;
  } else if (src == SS6_INDIRECT) {
    if (n != 3) return raise("an indirect constant load with inline data");
    data = reinterpret_cast<const uint32_t *>(host(from, uint64_t(units) * 16));
    if (!data || from % 16)
      return raise("constants from " + hex(from) +
                   " outside every allocation or not 16-byte aligned");
  } else {
    return raise("CP_LOAD_STATE6 source " + std::to_string(src) + " is not known");
  }
  memcpy(consts_ + dst * 4, data, units * 16);
  for (uint32_t u = 0; u < units; ++u) const_loaded_[dst + u] = true;
  return true;
}

bool fake_kgsl::dispatch(uint32_t gx, uint32_t gy, uint32_t gz) {
  if (!capture_) return raise("CP_EXEC_CS with no capture attached");
  const auto at =
      kernel_at_.find(uint64_t(regs_[SP_CS_OBJ_START + 1]) << 32 | regs_[SP_CS_OBJ_START]);
  // Every register the dispatch reads must have been written in this command.
  for (uint32_t r :
       {uint32_t(SP_CS_CTRL_REG0), uint32_t(SP_CS_CTRL_REG1), uint32_t(SP_CS_OBJ_START),
        uint32_t(SP_CS_OBJ_START + 1), uint32_t(SP_CS_INSTRLEN), uint32_t(SP_CS_CONFIG),
        uint32_t(SP_MODE_CONTROL), uint32_t(HLSQ_CS_CNTL), uint32_t(HLSQ_CS_CNTL_0),
        uint32_t(HLSQ_CS_CNTL_1), uint32_t(HLSQ_CS_NDRANGE_0), uint32_t(HLSQ_CS_NDRANGE_0 + 1),
        uint32_t(HLSQ_CS_NDRANGE_0 + 3), uint32_t(HLSQ_CS_NDRANGE_0 + 5), uint32_t(SP_CS_TEX_COUNT),
        uint32_t(SP_CS_IBO_COUNT)})
    if (!written_[r])
      return raise(std::string("CP_EXEC_CS before ") + reg_name(r) + " was written");
  if (!compute_marker_) return raise("CP_EXEC_CS without CP_SET_MARKER(RM6_COMPUTE)");
  if (at == kernel_at_.end())
    return raise("CP_EXEC_CS with SP_CS_OBJ_START " +
                 address_text(uint64_t(regs_[SP_CS_OBJ_START + 1]) << 32 | regs_[SP_CS_OBJ_START]) +
                 ", which is no kernel's program");
  const uint32_t k = at->second;
  const fb::Kernel *kern = capture_->kernels()->Get(k);
  const fb::AdrenoKernel *a = kern->facts_as_AdrenoKernel();
  const std::string what = "kernel " + std::to_string(k) + " '" + kern->name()->str() + "': ";
  const auto bad = [&](const std::string &s) { return raise(what + s); };
  if (shader_loaded_ != at->first)
    return bad("its shader was not loaded (CP_LOAD_STATE6 ST6_SHADER) since the last invalidate");
  using reg0 = fields::SP_CS_CTRL_REG0;
  using reg1 = fields::SP_CS_CTRL_REG1;
  const uint32_t r0 = regs_[SP_CS_CTRL_REG0], r1 = regs_[SP_CS_CTRL_REG1];
  if (uint64_t(regs_[SP_CS_INSTRLEN]) * 32 < a->instr_dwords())
    return bad("SP_CS_INSTRLEN " + std::to_string(regs_[SP_CS_INSTRLEN]) + " is short of its " +
               std::to_string(a->instr_dwords()) + " dwords");
  if (field_get(r0, reg0::HALFREGFOOTPRINT) < a->half_regs() ||
      field_get(r0, reg0::FULLREGFOOTPRINT) < a->full_regs())
    return bad("SP_CS_CTRL_REG0 footprints are smaller than the kernel's registers");
  if (field_get(r0, reg0::BRANCHSTACK) < a->branch_stack())
    return bad("SP_CS_CTRL_REG0 BRANCHSTACK too small");
  if (field_get(r0, reg0::THREADSIZE) != uint32_t(a->double_threadsize()) ||
      field_get(regs_[HLSQ_CS_CNTL_1], fields::HLSQ_CS_CNTL_1::THREADSIZE) !=
          uint32_t(a->double_threadsize()))
    return bad("THREADSIZE in SP_CS_CTRL_REG0 / HLSQ_CS_CNTL_1 is not the kernel's wave size");
  if (field_get(r0, reg0::MERGEDREGS) != uint32_t(a->merged_regs()))
    return bad("MERGEDREGS is not the kernel's");
  // SHARED_SIZE n gives the workgroup (n + 1) KiB: Mesa programs max(1, (bytes - 1) / 1024)
  // (src/gallium/drivers/freedreno/a6xx/fd6_compute.cc, cs_program_emit / fd6_launch_grid). A
  // kernel using more than that would read and write past its workgroup's share.
  const uint32_t shared = uint32_t(field_get(r1, reg1::SHARED_SIZE));
  if ((shared + 1) * 1024 < a->shared_memory_bytes())
    return bad("SP_CS_CTRL_REG1 SHARED_SIZE " + std::to_string(shared) + " enables " +
               std::to_string((shared + 1) * 1024) + " bytes of shared memory, the kernel uses " +
               std::to_string(a->shared_memory_bytes()));
  const uint64_t ram = field_get(r1, reg1::CONSTANTRAMMODE);
  const uint32_t ram_vec4 = ram == CONSTLEN_128 ? 128 : ram == CONSTLEN_192 ? 192 : 256;
  if (ram_vec4 < a->constlen_vec4()) return bad("CONSTANTRAMMODE is below its constant length");
  const uint32_t cntl = regs_[HLSQ_CS_CNTL];
  if (!field_get(cntl, fields::HLSQ_CS_CNTL::ENABLED) ||
      field_get(cntl, fields::HLSQ_CS_CNTL::CONSTLEN) < a->constlen_vec4())
    return bad("HLSQ_CS_CNTL is not enabled with its constant length");
  if (!field_get(regs_[SP_CS_CONFIG], fields::SP_CS_CONFIG::ENABLED))
    return bad("SP_CS_CONFIG is not ENABLED");
  using mode = fields::SP_MODE_CONTROL;
  if (!field_get(regs_[SP_MODE_CONTROL], mode::CONSTANT_DEMOTION_ENABLE) ||
      field_get(regs_[SP_MODE_CONTROL], mode::ISAMMODE) != ISAMMODE_GL)
    return bad("SP_MODE_CONTROL lacks ir3's CONSTANT_DEMOTION_ENABLE and ISAMMODE_GL");
  if (a->private_memory_bytes()) {
    // Private memory: each fiber's share covers the kernel's, the buffer covers both SP cores'
    // shares, the layout is the kernel's, and the return-address stack starts after it.
    const uint64_t per_fiber =
        field_get(regs_[SP_CS_PVT_MEM_PARAM], fields::SP_CS_PVT_MEM_PARAM::MEMSIZEPERITEM);
    const uint64_t per_sp =
        field_get(regs_[SP_CS_PVT_MEM_SIZE], fields::SP_CS_PVT_MEM_SIZE::TOTALPVTMEMSIZE);
    const uint64_t base = uint64_t(regs_[SP_CS_PVT_MEM_ADDR + 1]) << 32 | regs_[SP_CS_PVT_MEM_ADDR];
    if (per_fiber < a->private_memory_bytes() || per_sp < per_fiber * 128 * 16)
      return bad("SP_CS_PVT_MEM_PARAM / SIZE give less private memory than its " +
                 std::to_string(a->private_memory_bytes()) + " bytes");
    if (!host(base, per_sp * 2))
      return bad("SP_CS_PVT_MEM_ADDR " + address_text(base) +
                 " is not a buffer for both SP cores' private memory");
    if (field_get(regs_[SP_CS_PVT_MEM_SIZE], fields::SP_CS_PVT_MEM_SIZE::PERWAVEMEMLAYOUT) !=
        uint32_t(a->private_memory_per_wave()))
      return bad("PERWAVEMEMLAYOUT is not the kernel's");
    if (field_get(regs_[SP_CS_PVT_MEM_HW_STACK_OFFSET],
                  fields::SP_CS_PVT_MEM_HW_STACK_OFFSET::OFFSET) != per_sp)
      return bad("the HW stack does not start after the private memory");
  }
  const uint32_t c0 = regs_[HLSQ_CS_CNTL_0];
  const uint32_t wgsize = a->driver_params_offset_vec4() == 0xffffffffu
                              ? regid_none
                              : a->driver_params_offset_vec4() * 4 + 8;
  using cntl0 = fields::HLSQ_CS_CNTL_0;
  if (field_get(c0, cntl0::WGIDCONSTID) != a->workgroup_id_regid() ||
      field_get(c0, cntl0::LOCALIDREGID) != a->local_id_regid() ||
      field_get(c0, cntl0::WGSIZECONSTID) != wgsize)
    return bad("HLSQ_CS_CNTL_0 " + hex(c0) +
               " does not hold its workgroup id, local id and workgroup size registers");
  const uint32_t nd = regs_[HLSQ_CS_NDRANGE_0];
  using ndrange = fields::HLSQ_CS_NDRANGE_0;
  const uint32_t local[3] = {uint32_t(field_get(nd, ndrange::LOCALSIZEX)) + 1,
                             uint32_t(field_get(nd, ndrange::LOCALSIZEY)) + 1,
                             uint32_t(field_get(nd, ndrange::LOCALSIZEZ)) + 1};
  const uint32_t want_local[3] = {a->workgroup_size_x(), a->workgroup_size_y(),
                                  a->workgroup_size_z()};
  const uint32_t groups[3] = {gx, gy, gz}, want_groups[3] = {a->grid_x(), a->grid_y(), a->grid_z()};
  for (int d = 0; d < 3; ++d) {
    if (local[d] != want_local[d])
      return bad("HLSQ_CS_NDRANGE_0 local size " + std::to_string(d) + " is " +
                 std::to_string(local[d]) + ", not " + std::to_string(want_local[d]));
    if (groups[d] != want_groups[d])
      return bad("CP_EXEC_CS groups " + std::to_string(d) + " is " + std::to_string(groups[d]) +
                 ", not " + std::to_string(want_groups[d]));
    if (regs_[HLSQ_CS_NDRANGE_0 + 1 + 2 * d] != groups[d] * local[d])
      return bad("HLSQ_CS_NDRANGE global size " + std::to_string(d) +
                 " is not groups x local size");
  }
  // The constant file: parameters and immediates loaded, immediates as compiled.
  const uint32_t pbase = a->params_offset_vec4();
  for (uint32_t u = pbase; u < pbase + (a->params_bytes() + 15) / 16; ++u)
    if (!const_loaded_[u])
      return bad("constant vec4 " + std::to_string(u) + " (its parameters) was not loaded");
  const uint32_t nimm = a->immediates() ? a->immediates()->size() : 0;
  for (uint32_t i = 0; i < nimm; ++i) {
    const uint32_t at4 = a->immediates_offset_vec4() * 4 + i;
    if (!const_loaded_[at4 / 4] || consts_[at4] != a->immediates()->Get(i))
      return bad("immediate " + std::to_string(i) + " is not in the constant file at vec4 " +
                 std::to_string(at4 / 4));
  }
  if (a->driver_params_offset_vec4() != 0xffffffffu) {
    const uint32_t dp = a->driver_params_offset_vec4() * 4;
    for (int d = 0; d < 3; ++d)
      if (dp + 8 + d < a->constlen_vec4() * 4 && consts_[dp + 8 + d] != want_local[d])
        return bad("the driver params do not hold its workgroup size");
  }
  // The buffers, read back out of the constant file.
  const uint32_t nbuf = kern->num_buffers(), nscalar = kern->num_scalars();
  std::vector<void *> bufs(nbuf);
  std::vector<uint64_t> gpus(nbuf);
  std::vector<int64_t> scalars(nscalar);
  for (uint32_t b = 0; b < nbuf; ++b) {
    gpus[b] = uint64_t(consts_[pbase * 4 + 2 * b + 1]) << 32 | consts_[pbase * 4 + 2 * b];
    bufs[b] = host(gpus[b], 1);
    if (!bufs[b])
      return bad("binding " + std::to_string(b) + " holds " + hex(gpus[b]) +
                 ", outside every allocation");
  }
  for (uint32_t s = 0; s < nscalar; ++s)
    memcpy(&scalars[s], consts_ + pbase * 4 + 2 * (nbuf + s), 8);
  {
    ir3_dispatch tex;
    if (!textures_check(k, a, gpus, &tex)) return false;
    dispatch_textures_ = std::move(tex.textures);
  }
  if (mode_ == fake_adreno_mode::twin) {
    twins_.run(k, bufs.data(), scalars.data());
  } else {
    // Check mode compares what the kernel writes: its written bindings, as far as its bounds say
    // the code reaches (KernelBounds, checked at load), not whole allocations (a whole arena three
    // times per dispatch tripled the zoo's time).
    std::vector<written_span> spans;
    if (mode_ == fake_adreno_mode::check && kern->bounds() && kern->bounds()->written())
      for (uint32_t w : *kern->bounds()->written()) {
        const uint64_t size =
            w < kern->bounds()->buffer_sizes()->size() ? kern->bounds()->buffer_sizes()->Get(w) : 0;
        if (w >= nbuf || !size) continue;
        uint8_t *at = host(gpus[w], size);
        if (!at)
          return bad("written binding " + std::to_string(w) + " at " + address_text(gpus[w]) +
                     " does not hold the " + std::to_string(size) + " bytes its bounds give");
        spans.push_back({gpus[w], at, std::vector<uint8_t>(at, at + size)});
      }
    if (!kernel_emulate(k, groups)) return false;
    if (mode_ == fake_adreno_mode::check && !kernel_check(k, spans, bufs.data(), scalars.data()))
      return false;
  }
  ++dispatches_;
  return true;
}

bool fake_kgsl::kernel_emulate(uint32_t k, const uint32_t groups[3]) {
  // Everything from the registers and the constant file as the packets left them; the facts
  // were only used by the checks above.
  ir3_dispatch d;
  d.kernel = std::to_string(k) + " '" + capture_->kernels()->Get(k)->name()->str() + "'";
  const std::string what = "kernel " + d.kernel + ": ";
  const uint64_t shader = uint64_t(regs_[SP_CS_OBJ_START + 1]) << 32 | regs_[SP_CS_OBJ_START];
  auto prog = programs_.find(shader);
  if (prog == programs_.end()) {
    // SP_CS_INSTRLEN counts 128-byte units, 16 instructions each (a6xx.xml); the shader is
    // fetched from SP_CS_OBJ_START past what CP_LOAD_STATE6 preloaded.
    const uint64_t count = uint64_t(regs_[SP_CS_INSTRLEN]) * 16;
    const uint8_t *code = host(shader, count * 8);
    if (!code)
      return raise(what + "SP_CS_OBJ_START " + address_text(shader) + " + SP_CS_INSTRLEN " +
                   std::to_string(regs_[SP_CS_INSTRLEN]) + " runs past its allocation");
    std::vector<ir3_instr> decoded;
    std::string err;
    if (!ir3_program_decode(reinterpret_cast<const uint32_t *>(code), size_t(count), d.kernel,
                            &decoded, &err))
      return raise("ir3 decoder: " + err);
    prog = programs_.emplace(shader, std::move(decoded)).first;
  }
  const uint32_t r0 = regs_[SP_CS_CTRL_REG0], r1 = regs_[SP_CS_CTRL_REG1],
                 nd = regs_[HLSQ_CS_NDRANGE_0], c0 = regs_[HLSQ_CS_CNTL_0];
  d.wave128 = (r0 >> 20) & 1;  // THREADSIZE (the checks above hold HLSQ_CS_CNTL_1 to it)
  d.half_regs = (r0 >> 1) & 0x3f;
  d.full_regs = (r0 >> 7) & 0x3f;
  d.merged_regs = r0 >> 31;
  for (int a = 0; a < 3; ++a) {
    d.local[a] = ((nd >> (2 + 10 * a)) & 0x3ff) + 1;
    d.groups[a] = groups[a];
  }
  d.shared_bytes = ((r1 & 0x1f) + 1) * 1024;  // SHARED_SIZE n: (n + 1) KiB (see above)
  d.private_bytes = written_[SP_CS_PVT_MEM_PARAM] ? (regs_[SP_CS_PVT_MEM_PARAM] & 0xff) * 512 : 0;
  d.constlen_vec4 = (regs_[HLSQ_CS_CNTL] & 0xff) * 4;  // CONSTLEN is in units of 4 vec4
  d.workgroup_id_regid = c0 & 0xff;
  d.local_id_regid = (c0 >> 24) & 0xff;
  d.constant_demotion = regs_[SP_MODE_CONTROL] & 1;
  d.textures = dispatch_textures_;  // the descriptors as CP_LOAD_STATE6 loaded them
  // Constants never loaded in this command hold a NaN that is no address, so a kernel reading one
  // (a missing or misplaced CP_LOAD_STATE6) computes garbage or faults instead of reading the
  // previous kernel's.
  for (uint32_t u = 0; u < 256; ++u)
    for (uint32_t c = 0; c < 4; ++c)
      d.consts[u * 4 + c] = const_loaded_[u] ? consts_[u * 4 + c] : 0x7fbadbadu;
  d.threads = std::max(1u, std::thread::hardware_concurrency());
  const ir3_region_find find = [this](uint64_t gpu) -> ir3_region {
    auto it = regions_.upper_bound(gpu);
    if (it == regions_.begin()) return {};
    const region &r = std::prev(it)->second;
    return gpu - r.gpu < r.size ? ir3_region{r.gpu, r.size, r.cpu} : ir3_region{};
  };
  std::vector<ir3_finding> findings;
  std::string err;
  d.program.swap(prog->second);  // lent for the run, not copied
  ir3_counts counts;
  const bool ran = ir3_dispatch_run(d, find, &counts, &findings, &err);
  d.program.swap(prog->second);
  if (!ran) return raise("ir3 emulator: " + err);
  if (k < kernel_counts_.size()) {
    kernel_counts_[k].add(counts);
    kernel_dispatches_[k]++;
    if (profile_) {
      // DRAM traffic: what the kernel's bounds say it touches (each byte once), no more than it
      // moved.
      a630_dispatch_shape shape;
      shape.wave128 = d.wave128;
      shape.full_regs = d.full_regs;
      shape.shared_bytes =
          counts.shared_load_bytes + counts.shared_store_bytes ? d.shared_bytes : 0;
      shape.group_threads = d.local[0] * d.local[1] * d.local[2];
      uint64_t touched = 0;
      const fb::Kernel *kern = capture_->kernels()->Get(k);
      if (kern->bounds())
        for (uint64_t b : *kern->bounds()->buffer_sizes()) touched += b;
      shape.unique_bytes = std::min(
          touched, counts.global_load_bytes + counts.global_store_bytes + counts.texture_bytes);
      const a630_estimate e = a630_estimate_of(counts, shape);
      kernel_us_[k] += e.us;
      kernel_unique_bytes_[k] += double(shape.unique_bytes);
      if (e.us > kernel_top_us_[k]) kernel_top_us_[k] = e.us, kernel_bound_[k] = e.bound;
      timeline_.push_back({k, e.us});
    }
  }
  // The a6xx does not interlock: each finding is a result the hardware may compute wrong.
  if (!findings.empty())
    return raise(what + "hazard " + findings[0].text +
                 (findings.size() > 1
                      ? " (and " + std::to_string(findings.size() - 1) + " more findings)"
                      : std::string()));
  return true;
}

bool fake_kgsl::kernel_check(uint32_t k, std::vector<written_span> &spans, void **bufs,
                             int64_t *scalars) {
  // The emulator's results stay in memory (they are the replay's); the twin runs on the memory
  // as it was before the dispatch, with the host flushing denormals as the a6xx does, and the
  // words are compared by the rule of every check (runtime/hcq/word_compare.h), as fake-amd:check
  // and capgraph run --check compare: the tolerance is relative to the largest value the twin
  // wrote.
  std::vector<std::vector<uint8_t>> emulated;
  for (written_span &w : spans) {
    emulated.emplace_back(w.cpu, w.cpu + w.before.size());
    memcpy(w.cpu, w.before.data(), w.before.size());
  }
  {
    const denormals_flushed ftz;
    twins_.run(k, bufs, scalars);
  }
  hcq::word_tally tally;
  tally.half = capture_->kernels()->Get(k)->store_float16();
  for (const written_span &w : spans) tally.reference(w.cpu, w.before.size());
  for (size_t i = 0; i < spans.size(); ++i)
    tally.compare(emulated[i].data(), spans[i].cpu, spans[i].before.size(), spans[i].gpu);
  for (size_t i = 0; i < spans.size(); ++i)
    memcpy(spans[i].cpu, emulated[i].data(), emulated[i].size());
  if (tally.match()) return true;
  char b[200];
  snprintf(b, sizeof b, "max |emulator - twin| = %g at %s (tolerance %g), %llu words differ",
           tally.max_diff, address_text(tally.worst_at).c_str(), tally.tolerance(),
           (unsigned long long)tally.differ);
  return raise("check: kernel '" + capture_->kernels()->Get(k)->name()->str() + "' (kernel " +
               std::to_string(k) + ") differs from its host twin: " + b);
}

namespace {

// The counts per kernel, as the emulator keeps them (ir3_emu.h), in the order the text and the
// JSON show them.
std::vector<hcq::profile_count> counts_named(const ir3_counts &c) {
  return {{"workgroups", double(c.workgroups)},
          {"waves", double(c.waves)},
          {"instructions", double(c.instructions)},
          {"alu", double(c.alu)},
          {"alu_f16", double(c.alu_f16)},
          {"sfu", double(c.sfu)},
          {"flow", double(c.flow)},
          {"memory", double(c.mem)},
          {"texture", double(c.tex)},
          {"sync", double(c.sync)},
          {"rpt_extra", double(c.rpt_extra)},
          {"nops", double(c.nops)},
          {"nop_slots", double(c.nop_slots)},
          {"issue_slots", double(c.issue_slots)},
          {"fma_lanes", double(c.fma_lanes)},
          {"fma_f16_lanes", double(c.fma_f16_lanes)},
          {"global_load_bytes", double(c.global_load_bytes)},
          {"global_store_bytes", double(c.global_store_bytes)},
          {"shared_load_bytes", double(c.shared_load_bytes)},
          {"shared_store_bytes", double(c.shared_store_bytes)},
          {"private_bytes", double(c.private_bytes)},
          {"texels", double(c.texels)},
          {"texture_bytes", double(c.texture_bytes)},
          {"image_stores", double(c.image_stores)},
          {"barriers", double(c.barriers)},
          {"ss_waits", double(c.ss_waits)},
          {"sy_waits", double(c.sy_waits)},
          {"divergent_branches", double(c.divergent_branches)}};
}

}  // namespace

hcq::device_profile fake_kgsl::profile_report() const {
  hcq::device_profile p;
  p.device = "fake-adreno";
  char b[640];
  snprintf(b, sizeof b, "Adreno 630 at %.0f MHz", a630_clock_hz() / 1e6);
  p.hardware = b;
  p.model =
      "ESTIMATE, not a measurement: per dispatch t_launch + max(issue, texels, L2 bytes, DRAM "
      "bytes, shared bytes, latency chain) from the ir3 emulator's counts, constants from "
      "published a630/a640 figures (targets/adreno/README.md, \"Estimated a630 time\")";
  p.dispatches = timeline_;
  for (const hcq::profile_dispatch &d : timeline_) p.estimated_total_us += d.estimated_us;
  std::string &t = p.text;
  t = "fake-adreno: what the ir3 emulator counted per kernel (wave instructions; bytes over active "
      "fibers) and an ESTIMATED a630 time (est_us: a cost model, not a measurement)\n";
  snprintf(
      b, sizeof b,
      "%-34s %5s %7s %10s %8s %7s %8s %8s %8s %7s %9s %12s %12s %11s %9s %6s %8s %8s %-8s %10s "
      "%10s %6s %-5s\n",
      "kernel", "disp", "waves", "ALU", "f16", "SFU", "flow", "mem", "rpt", "nops", "texels",
      "load_B", "store_B", "shared_B", "barriers", "ss", "sy", "sy/wave", "bound", "est_us",
      "roof_us", "%roof", "limit");
  t += b;
  ir3_counts total;
  uint64_t total_dispatches = 0;
  double kernels_us = 0, roof_us = 0;
  auto row = [&](const std::string &name, uint64_t disp, const ir3_counts &c, const char *bound,
                 double us, double roof_us, const char *limit) {
    snprintf(b, sizeof b,
             "%-34.34s %5llu %7llu %10llu %8llu %7llu %8llu %8llu %8llu %7llu %9llu %12llu %12llu "
             "%11llu %9llu %6llu %8llu %8.1f %-8s %10.1f %10.1f %5.0f%% %-5s\n",
             name.c_str(), (unsigned long long)disp, (unsigned long long)c.waves,
             (unsigned long long)c.alu, (unsigned long long)c.alu_f16, (unsigned long long)c.sfu,
             (unsigned long long)c.flow, (unsigned long long)c.mem, (unsigned long long)c.rpt_extra,
             (unsigned long long)c.nops, (unsigned long long)c.texels,
             (unsigned long long)c.global_load_bytes, (unsigned long long)c.global_store_bytes,
             (unsigned long long)(c.shared_load_bytes + c.shared_store_bytes),
             (unsigned long long)c.barriers, (unsigned long long)c.ss_waits,
             (unsigned long long)c.sy_waits, c.waves ? double(c.sy_waits) / double(c.waves) : 0.0,
             bound, us, roof_us, us > 0 ? 100 * roof_us / us : 0.0, limit);
    t += b;
  };
  for (size_t k = 0; k < kernel_names_.size(); ++k) {
    if (!kernel_dispatches_[k]) continue;
    hcq::profile_kernel pk;
    pk.kernel = uint32_t(k);
    pk.name = kernel_names_[k];
    pk.dispatches = kernel_dispatches_[k];
    pk.counts = counts_named(kernel_counts_[k]);
    pk.estimated_us = kernel_us_[k];
    pk.bound = kernel_bound_[k];
    const ir3_counts &c = kernel_counts_[k];
    const a630_roofline r =
        a630_roofline_of(kernel_launch_flops_[k] * double(pk.dispatches),
                         c.fma_lanes ? double(c.fma_f16_lanes) / double(c.fma_lanes) : 0,
                         double(c.texels), kernel_unique_bytes_[k]);
    pk.roofline_us = r.us;
    pk.roofline_limit = r.limit;
    row(pk.name, pk.dispatches, c, pk.bound.c_str(), pk.estimated_us, r.us, r.limit);
    roof_us += r.us;
    total.add(kernel_counts_[k]);
    total_dispatches += pk.dispatches;
    kernels_us += pk.estimated_us;
    p.kernels.push_back(std::move(pk));
  }
  row("total", total_dispatches, total, "", kernels_us, roof_us, "");
  snprintf(b, sizeof b,
           "ESTIMATED a630 time (%s; %zu dispatches, %.1f us of copies): %.3f ms; not a "
           "measurement\n",
           p.hardware.c_str(), size_t(total_dispatches), p.estimated_total_us - kernels_us,
           p.estimated_total_us / 1000);
  t += b;
  t += "  cost model (a630_estimate.h): " + p.model + "\n";
  t += "  roof_us: the kernel's work at the a630's limit (its FLOPs at the MAD peak of its "
       "precision, its texels at 16 a clock, its unique bytes at 26 GB/s; a630_roofline_of); "
       "%roof = roof_us / est_us, the share of that limit the estimate reaches\n";
  return p;
}

namespace {

std::mutex g_last_lock;
std::shared_ptr<fake_kgsl> g_last;
// Which fake is behind each transport fake_adreno_open made (the real KGSL transport keeps its
// system-call seam to itself): how the capture_attach hook finds it. An entry goes when its fake
// goes (the transport owns the fake; a new transport at a reused address replaces the entry).
std::map<const hcq::transport *, std::weak_ptr<fake_kgsl>> g_behind;

capgraph_status fake_adreno_open(const char *device, std::unique_ptr<hcq::transport> *out,
                                 std::string *err) {
  // "fake-adreno[:a630|:a640][:wedge][:twin|:check][:profile][:fail=N[:ERRNO]][:count]", the
  // words in any order.
  uint32_t chip = adreno::chip_find("a630")->chip_id;
  fake_adreno_mode mode = fake_adreno_mode::emulate;
  fake::fault_plan faults;
  bool wedge = false, profile = false;
  const char *env = getenv("CAPGRAPH_FAKE_ADRENO_WEDGE");
  if (env && strcmp(env, "1") == 0) wedge = true;
  for (const char *at = strchr(device, ':'); at; at = strchr(at + 1, ':')) {
    const char *end = strchr(at + 1, ':');
    const std::string word(at + 1, end ? end : at + 1 + strlen(at + 1));
    std::string why;
    if (fake::fault_word(word, &faults, &why)) {
      if (why.empty()) continue;
      *err = std::string("device '") + device + "': " + why;
      return CAPGRAPH_ERR_ARGUMENT;
    }
    if (word == "wedge")
      wedge = true;
    else if (word == "a640")
      chip = 0x06040001;
    else if (word == "twin")
      mode = fake_adreno_mode::twin;
    else if (word == "check")
      mode = fake_adreno_mode::check;
    else if (word == "profile")
      profile = true;
    else if (word != "a630") {
      *err = std::string("device '") + device + "': '" + word +
             "' is none of fake-adreno's a630, a640, wedge, twin, check, profile, " +
             fake::fault_words_usage;
      return CAPGRAPH_ERR_ARGUMENT;
    }
  }
  if (profile && mode == fake_adreno_mode::twin) {
    *err = std::string("device '") + device +
           "': fake-adreno:twin runs host twins, no machine code: it has nothing to count for "
           ":profile";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  auto fake = std::make_shared<fake_kgsl>(chip, mode, faults);
  fake->wedge(wedge);
  fake->profile(profile);
  const capgraph_status st = kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", out, err);
  if (st != CAPGRAPH_OK) fake->session_end();  // no transport will close it
  std::lock_guard<std::mutex> hold(g_last_lock);
  g_last = fake;
  if (st == CAPGRAPH_OK) {
    for (auto it = g_behind.begin(); it != g_behind.end();)  // forget fakes that are gone
      it = it->second.expired() ? g_behind.erase(it) : std::next(it);
    g_behind[out->get()] = fake;
  }
  return st;
}

// The capture_attach hook of "fake-adreno": the fake behind the transport fake_adreno_open made.
capgraph_status fake_adreno_attach(hcq::transport *dev, const fb::Capture *c,
                                   const std::vector<uint64_t> &program_gpu, std::string *err) {
  std::shared_ptr<fake_kgsl> fake;
  {
    std::lock_guard<std::mutex> hold(g_last_lock);
    auto it = g_behind.find(dev);
    if (it != g_behind.end()) fake = it->second.lock();
  }
  if (!fake) {
    *err = "fake-adreno: this transport was not opened by fake-adreno";
    return CAPGRAPH_ERR_DEVICE;
  }
  return fake->capture_attach(c, program_gpu, err);
}

}  // namespace

hcq::graph_options graph_options_for(const std::shared_ptr<fake_kgsl> &fake) {
  hcq::graph_options o;
  o.capture_attach = [fake](const fb::Capture *c, const std::vector<uint64_t> &at,
                            std::string *err) { return fake->capture_attach(c, at, err); };
  return o;
}

std::shared_ptr<fake_kgsl> fake_adreno_last() {
  std::lock_guard<std::mutex> hold(g_last_lock);
  return g_last;
}

void fake_adreno_register() {
  hcq::target_register(
      "fake-adreno", &fake_adreno_open, &adreno_target,
      [] {
        fake_kgsl probe;
        return kgsl::kgsl_devices_describe(probe, "fake-adreno") +
               "fake-adreno: (a fake KGSL running kernels' machine code in an ir3 emulator, for "
               "tests; :check compares each kernel with its host twin, :twin runs the twins, "
               ":wedge never finishes, :a640 is another chip, :profile counts and estimates a630 "
               "time)\n";
      },
      &fake_adreno_attach);
}

}  // namespace capgraph::adreno
