#include "fake_amd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "amd_hcq.h"
#include "clock_text.h"
#include "cpu_target.h"
#include "hcq/device_profile.h"
#include "hcq/signal.h"
#include "hcq/wait.h"
#include "hcq/word_compare.h"

namespace capgraph::amd {
namespace {

bool compare(uint32_t func, uint32_t v, uint32_t ref) {
  switch (func) {  // WAIT_REG_MEM / POLL_REGMEM function codes (nvd.h, sdma pkt headers)
    case 0: return true;
    case 1: return v < ref;
    case 2: return v <= ref;
    case 3: return v == ref;
    case 4: return v != ref;
    case 5: return v >= ref;
    case 6: return v > ref;
  }
  return false;
}

}  // namespace

fake_gpu::fake_gpu(const chip &c, fake_mode mode, bool profile, fake::fault_plan faults)
    : chip_(c), mode_(mode), profile_(profile), faults_("fake-amd", faults) {}

fake_gpu::~fake_gpu() {
  faults_.finish(live_objects());
  if (profile_ && cur_) hcq::device_profile_deliver(profile_report());
  for (region &r : regions_)
    if (r.owned) std::free(r.cpu);
}

void fake_gpu::region_attach(uint64_t gpu, uint64_t size, uint8_t *cpu) {
  regions_.push_back({gpu, size, cpu, false});
}

void fake_gpu::region_detach(uint64_t gpu) {
  for (size_t i = 0; i < regions_.size(); ++i)
    if (!regions_[i].owned && regions_[i].gpu == gpu) {
      regions_.erase(regions_.begin() + long(i));
      return;
    }
}

uint64_t fake_gpu::queue_attach(hcq::queue_kind kind, uint64_t ring_gpu, uint64_t ring_bytes,
                                volatile uint64_t *write_ptr, volatile uint64_t *read_ptr) {
  queue_state q;
  q.kind = kind;
  q.ring_gpu = ring_gpu;
  q.ring_dwords = ring_bytes / 4;
  q.write_ptr = write_ptr;
  q.read_ptr = read_ptr;
  q.unit = kind == hcq::queue_kind::compute ? 4 : 1;
  q.rptr = *read_ptr;
  queues_.emplace(next_queue_, q);
  return next_queue_++;
}

std::string fake_gpu::name() const {
  const char *how = mode_ == fake_mode::twin ? "kernels run as their host twins"
                    : mode_ == fake_mode::check
                        ? "kernels run in an RDNA3 emulator, checked against their host twins"
                        : "kernels run in an RDNA3 emulator";
  return std::string("fake-amd (") + chip_.name + ", a fake GPU: " + how + ")";
}

rdna3_region fake_gpu::region_find(uint64_t gpu) const {
  for (const region &r : regions_)
    if (gpu >= r.gpu && gpu - r.gpu < r.size) return {r.gpu, r.size, r.cpu};
  return {};
}

uint64_t fake_gpu::clock() const { return now_ns(); }

bool fake_gpu::raise(const std::string &why) {
  if (fault_.empty()) fault_ = why;
  return false;
}

bool fake_gpu::fault_inject(const char *what, const char *ioctl, int default_error,
                            std::string *err) {
  int e = 0;
  if (!faults_.call(what, default_error, &e)) return false;
  if (err)
    *err = std::string("fake-amd: ") + ioctl + " failed: " + strerror(e) + " (" + what + "; " +
           faults_.injected_text() + ")";
  return true;
}

capgraph_status fake_gpu::alloc(uint64_t size, hcq::memory_kind, hcq::memory *out,
                                std::string *err) {
  if (fault_inject("alloc", "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU", ENOMEM, err))
    return CAPGRAPH_ERR_MEMORY;
  const capgraph_status st = alloc_region(size, out, err);
  if (st == CAPGRAPH_OK) client_memory_.insert(out->gpu);
  return st;
}

capgraph_status fake_gpu::alloc_region(uint64_t size, hcq::memory *out, std::string *err) {
  const uint64_t rounded = (size + 4095) / 4096 * 4096;
  void *p = rounded ? std::aligned_alloc(4096, rounded) : nullptr;
  if (!p) {
    *err = "fake-amd: cannot allocate " + std::to_string(size) + " bytes";
    return CAPGRAPH_ERR_MEMORY;
  }
  memset(p, 0, rounded);
  out->cpu = static_cast<uint8_t *>(p);
  out->gpu = next_gpu_;
  out->size = rounded;
  out->handle = next_gpu_;
  regions_.push_back({next_gpu_, rounded, out->cpu});
  next_gpu_ += rounded + (1u << 20);  // a gap: running off an allocation is a fault
  return CAPGRAPH_OK;
}

void fake_gpu::free(hcq::memory &m) {
  // KFD's FREE_MEMORY_OF_GPU frees even when it reports an error: counted, never failed.
  std::string ignored;
  if (client_memory_.erase(m.gpu))
    fault_inject("free", "AMDKFD_IOC_FREE_MEMORY_OF_GPU", EIO, &ignored);
  for (size_t i = 0; i < regions_.size(); ++i)
    if (regions_[i].gpu == m.gpu) {
      if (regions_[i].owned) std::free(regions_[i].cpu);
      regions_.erase(regions_.begin() + long(i));
      break;
    }
  m = {};
}

uint8_t *fake_gpu::host(uint64_t gpu, uint64_t size) const {
  for (const region &r : regions_)
    if (gpu >= r.gpu && gpu - r.gpu <= r.size && size <= r.size - (gpu - r.gpu))
      return r.cpu + (gpu - r.gpu);
  return nullptr;
}

capgraph_status fake_gpu::queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                                       std::string *err) {
  if (fault_inject("queue_create", "AMDKFD_IOC_CREATE_QUEUE", ENOMEM, err))
    return CAPGRAPH_ERR_DEVICE;
  hcq::memory ring, ptrs;
  capgraph_status st = alloc_region(ring_bytes, &ring, err);
  if (st != CAPGRAPH_OK) return st;
  if ((st = alloc_region(16, &ptrs, err)) != CAPGRAPH_OK) {
    free(ring);
    return st;
  }
  out->kind = kind;
  out->ring = ring;
  out->write_ptr = reinterpret_cast<volatile uint64_t *>(ptrs.cpu);
  out->read_ptr = reinterpret_cast<volatile uint64_t *>(ptrs.cpu + 8);
  // Compute rings count dwords, SDMA rings bytes (as the hardware's write pointers do).
  out->write_ptr_unit = kind == hcq::queue_kind::compute ? 4 : 1;
  out->no_wrap = kind == hcq::queue_kind::copy;  // SDMA packets may not wrap (header 0: NOP)
  out->handle = next_queue_++;
  queue_state q;
  q.kind = kind;
  q.ring_gpu = ring.gpu;
  q.ptrs_gpu = ptrs.gpu;
  q.ring_dwords = ring_bytes / 4;
  q.write_ptr = out->write_ptr;
  q.read_ptr = out->read_ptr;
  q.unit = out->write_ptr_unit;
  queues_.emplace(out->handle, q);
  client_queues_.insert(out->handle);
  return CAPGRAPH_OK;
}

void fake_gpu::queue_destroy(hcq::queue &q) {
  auto it = queues_.find(q.handle);
  if (it == queues_.end()) return;
  std::string ignored;  // KFD destroys the queue even when it reports an error: counted only
  if (client_queues_.erase(q.handle))
    fault_inject("queue_destroy", "AMDKFD_IOC_DESTROY_QUEUE", EIO, &ignored);
  hcq::memory ring{nullptr, it->second.ring_gpu, 0, 0}, ptrs{nullptr, it->second.ptrs_gpu, 0, 0};
  free(ring);
  free(ptrs);
  queues_.erase(it);
  q = {};
}

void fake_gpu::doorbell(hcq::queue &q, uint64_t) {
  // A doorbell cannot fail; the GPU behind it can be reset (as after a hang elsewhere): the queue
  // stops and every later wait reports it.
  std::string why;
  if (fault_inject("doorbell", "the doorbell write", ENODEV, &why)) {
    raise("the GPU was reset (" + why + ")");
    return;
  }
  run();
}

void fake_gpu::run() {
  for (bool progress = true; progress && fault_.empty();) {
    progress = false;
    for (auto &[id, q] : queues_) progress |= queue_advance(q);
  }
}

// Runs one queue until it is empty, blocked or faulted; true if anything ran.
bool fake_gpu::queue_advance(queue_state &q) {
  bool ran = false;
  const engine eng = q.kind == hcq::queue_kind::compute ? engine::pm4 : engine::sdma;
  std::vector<uint32_t> window;
  while (fault_.empty()) {
    decoded p;
    std::string err;
    const char *where = q.in_ib ? "indirect buffer" : "ring";
    if (q.in_ib) {
      if (q.ib_pos == q.ib_dwords) {
        q.in_ib = false;
        continue;
      }
      const uint32_t *w = reinterpret_cast<const uint32_t *>(
          host(q.ib_gpu + 4 * q.ib_pos, 4 * (q.ib_dwords - q.ib_pos)));
      if (!w) return raise("indirect buffer at " + hex(q.ib_gpu) + " is outside GPU memory");
      if (!packet_decode(eng, w, q.ib_dwords - q.ib_pos, &p, &err))
        return raise(std::string(where) + " dword " + std::to_string(q.ib_pos) + ": " + err);
    } else {
      const uint64_t wptr = *q.write_ptr;
      if (q.rptr == wptr) break;
      // The ring is circular: gather the pending dwords in order.
      const uint64_t pending = (wptr - q.rptr) * q.unit / 4;
      const uint64_t start = q.rptr * q.unit / 4;
      if (pending > q.ring_dwords) return raise("write pointer is more than a ring ahead");
      const uint32_t *ring =
          reinterpret_cast<const uint32_t *>(host(q.ring_gpu, 4 * q.ring_dwords));
      window.resize(pending);
      for (uint64_t i = 0; i < pending; ++i) window[i] = ring[(start + i) % q.ring_dwords];
      if (!packet_decode(eng, window.data(), pending, &p, &err))
        return raise(std::string(eng == engine::pm4 ? "compute" : "SDMA") + " ring dword " +
                     std::to_string(start % q.ring_dwords) + ": " + err);
      if (eng == engine::sdma && start % q.ring_dwords + p.dwords > q.ring_dwords)
        return raise("SDMA packet " + std::string(p.desc->name) + " wraps around the ring's end");
    }
    const bool from_ib = q.in_ib;
    if (!execute(q, p)) break;
    ++packets_;
    ran = true;
    if (from_ib) {
      q.ib_pos += p.dwords;
    } else {
      q.rptr += p.dwords * 4 / q.unit;
      *q.read_ptr = q.rptr;
    }
  }
  return ran;
}

bool fake_gpu::execute(queue_state &q, const decoded &p) {
  q.blocked.clear();
  return q.kind == hcq::queue_kind::compute ? pm4(q, p) : sdma(q, p);
}

bool fake_gpu::write32(uint64_t addr, uint32_t v) {
  uint8_t *h = host(addr, 4);
  if (!h && addr % 4 == 0 && bus_access &&
      bus_access(addr, reinterpret_cast<uint8_t *>(&v), 4, true))
    return true;
  if (!h || addr % 4)
    return raise("write of 4 bytes at " + hex(addr) + ": not mapped or not aligned");
  memcpy(h, &v, 4);
  return true;
}

bool fake_gpu::write64(uint64_t addr, uint64_t v) {
  uint8_t *h = host(addr, 8);
  if (!h || addr % 8)
    return raise("write of 8 bytes at " + hex(addr) + ": not mapped or not aligned");
  __atomic_store_n(reinterpret_cast<uint64_t *>(h), v, __ATOMIC_RELEASE);
  return true;
}

bool fake_gpu::mem_compare(uint64_t addr, uint32_t mask, uint32_t ref, uint32_t func,
                           const char *what, queue_state &q) {
  const uint8_t *h = host(addr, 4);
  if (!h || addr % 4)
    return raise(std::string(what) + " polls " + hex(addr) + ": not mapped or not aligned");
  if (func > 6)
    return raise(std::string(what) + ": unknown compare function " + std::to_string(func));
  uint32_t v;
  memcpy(&v, h, 4);
  if (!wedged_ && compare(func, v & mask, ref)) return true;
  q.blocked = std::string(what) + " at " + hex(addr) + " (function " + std::to_string(func) +
              ", reference " + std::to_string(ref) + ", value " + std::to_string(v) + ")";
  return false;
}

bool fake_gpu::pm4(queue_state &q, const decoded &p) {
  switch (p.desc->id) {
    case packet::NOP: return true;
    case packet::SET_SH_REG: {
      const uint64_t offset = p.get(fields::SET_SH_REG::reg_offset);
      if (offset + p.tail_len > sizeof sh_ / sizeof sh_[0])
        return raise("SET_SH_REG: registers " + hex(sh_reg_base + offset) + " + " +
                     std::to_string(p.tail_len) + " are outside the SH range");
      for (size_t i = 0; i < p.tail_len; ++i) sh_[offset + i] = p.tail[i];
      return true;
    }
    case packet::DISPATCH_DIRECT: {
      using f = fields::DISPATCH_DIRECT;
      return dispatch(uint32_t(p.get(f::dim_x)), uint32_t(p.get(f::dim_y)),
                      uint32_t(p.get(f::dim_z)), uint32_t(p.get(f::initiator)));
    }
    case packet::EVENT_WRITE: {
      const uint64_t event = p.get(fields::EVENT_WRITE::event_type),
                     index = p.get(fields::EVENT_WRITE::event_index);
      if (event != event_cs_partial_flush || index != event_index_partial_flush)
        return raise("EVENT_WRITE: event " + hex(event) + " index " + std::to_string(index) +
                     " is not one the fake knows");
      return true;  // dispatches run to completion here: nothing to drain
    }
    case packet::RELEASE_MEM: {
      using f = fields::RELEASE_MEM;
      const uint64_t event = p.get(f::event_type), dst_sel = p.get(f::dst_sel),
                     int_sel = p.get(f::int_sel), data_sel = p.get(f::data_sel),
                     addr = p.get(f::addr), data = p.get(f::data);
      if (event != event_cache_flush_and_inv_ts && event != event_bottom_of_pipe_ts)
        return raise("RELEASE_MEM: event " + hex(event) + " is not an end-of-pipe event");
      if (dst_sel != 0)
        return raise("RELEASE_MEM: dst_sel " + std::to_string(dst_sel) +
                     " (only memory, 0, is known)");
      if (int_sel > int_sel_after_write)
        return raise("RELEASE_MEM: int_sel " + std::to_string(int_sel) +
                     " is not one the fake knows");
      if (int_sel != int_sel_none) {
        ++interrupts_;
        last_interrupt_id_ = uint32_t(p.get(f::int_ctxid));
      }
      switch (data_sel) {
        case data_sel_none: return true;
        case data_sel_value32: return write32(addr, uint32_t(data));
        case data_sel_value64: return write64(addr, data);
        case data_sel_gpu_clock: return write64(addr, clock());
      }
      return raise("RELEASE_MEM: data_sel " + std::to_string(data_sel) +
                   " is not one the fake knows");
    }
    case packet::ACQUIRE_MEM:
    case packet::ACQUIRE_MEM_GFX9:
      if ((p.desc->id == packet::ACQUIRE_MEM) != chip_.gcr_cntl)
        return raise(std::string("ACQUIRE_MEM: the ") + (chip_.gcr_cntl ? "gfx9" : "gfx10+") +
                     " layout was sent to a " + chip_.name);
      return true;  // host memory is coherent
    case packet::WAIT_REG_MEM: {
      using f = fields::WAIT_REG_MEM;
      if (p.get(f::mem_space) != 1 || p.get(f::operation) != 0)
        return raise("WAIT_REG_MEM: only memory polls (mem_space 1, operation 0) are known");
      return mem_compare(p.get(f::addr), uint32_t(p.get(f::mask)), uint32_t(p.get(f::reference)),
                         uint32_t(p.get(f::function)), "WAIT_REG_MEM", q);
    }
    case packet::INDIRECT_BUFFER: {
      using f = fields::INDIRECT_BUFFER;
      const uint64_t base = p.get(f::ib_base), size = p.get(f::ib_size);
      if (q.in_ib)
        return raise("INDIRECT_BUFFER inside an indirect buffer (the fake runs one level)");
      if (!p.get(f::valid)) return raise("INDIRECT_BUFFER without the VALID bit");
      if (base % 4 || !host(base, 4 * size))
        return raise("INDIRECT_BUFFER at " + hex(base) + " (" + std::to_string(size) +
                     " dwords) is not in GPU memory");
      q.in_ib = true;  // its packets run next, then the ring goes on
      q.ib_gpu = base;
      q.ib_pos = 0;
      q.ib_dwords = size;
      return true;
    }
    case packet::WRITE_DATA: {
      const uint64_t dst_sel = p.get(fields::WRITE_DATA::dst_sel);
      if (dst_sel != 5)
        return raise("WRITE_DATA: dst_sel " + std::to_string(dst_sel) +
                     " (only memory, 5, is known)");
      for (size_t i = 0; i < p.tail_len; ++i)
        if (!write32(p.get(fields::WRITE_DATA::addr) + 4 * i, p.tail[i])) return false;
      return true;
    }
    default: break;
  }
  return raise(std::string("PM4 packet ") + p.desc->name +
               " on a compute queue is not one the fake runs");
}

bool fake_gpu::sdma(queue_state &q, const decoded &p) {
  switch (p.desc->id) {
    case packet::SDMA_NOP: return true;
    case packet::SDMA_COPY_LINEAR: {
      using f = fields::SDMA_COPY_LINEAR;
      const uint64_t n = p.get(f::count) + 1, from = p.get(f::src), to = p.get(f::dst);
      uint8_t *dst = host(to, n);
      uint8_t *src = host(from, n);
      const auto not_mapped = [&] {
        return raise("COPY_LINEAR of " + std::to_string(n) + " bytes from " + hex(from) + " to " +
                     hex(to) + ": not in GPU memory");
      };
      if (dst && src) {
        memmove(dst, src, n);
        return true;
      }
      // One side in system memory (a copy through the bridge SRAM): the bus carries it.
      if (!bus_access) return not_mapped();
      if (dst) return bus_access(from, dst, n, false) || not_mapped();
      if (src) return bus_access(to, src, n, true) || not_mapped();
      std::vector<uint8_t> bounce(n);
      return (bus_access(from, bounce.data(), n, false) &&
              bus_access(to, bounce.data(), n, true)) ||
             not_mapped();
    }
    case packet::SDMA_FENCE:
      return write32(p.get(fields::SDMA_FENCE::addr), uint32_t(p.get(fields::SDMA_FENCE::data)));
    case packet::SDMA_TRAP:
      ++interrupts_;
      last_interrupt_id_ = uint32_t(p.get(fields::SDMA_TRAP::int_context));
      return true;
    case packet::SDMA_POLL_REGMEM: {
      using f = fields::SDMA_POLL_REGMEM;
      if (!p.get(f::mem_poll))
        return raise("POLL_REGMEM: register polls are not known to the fake");
      return mem_compare(p.get(f::addr), uint32_t(p.get(f::mask)), uint32_t(p.get(f::value)),
                         uint32_t(p.get(f::func)), "POLL_REGMEM", q);
    }
    case packet::SDMA_TIMESTAMP: return write64(p.get(fields::SDMA_TIMESTAMP::addr), clock());
    default: break;
  }
  return raise(std::string("SDMA packet ") + p.desc->name + " is not one the fake runs");
}

bool fake_gpu::dispatch(uint32_t dim_x, uint32_t dim_y, uint32_t dim_z, uint32_t initiator) {
  const auto sh = [&](uint32_t reg) { return sh_[reg - sh_reg_base]; };
  if (attached_.empty()) return raise("DISPATCH_DIRECT before any capture was attached");
  const uint64_t code =
      (uint64_t(sh(reg::COMPUTE_PGM_LO)) << 8) | (uint64_t(sh(reg::COMPUTE_PGM_HI)) << 40);
  // Which kernel's code is at that address (of which model's capture): read the kernel
  // descriptors in GPU memory.
  int32_t found = -1;
  for (const auto &a : attached_) {
    const fb::Capture *c = a->capture;
    for (uint32_t k = 0; c->kernels() && k < c->kernels()->size() && found < 0; ++k) {
      const fb::Kernel *kern = c->kernels()->Get(k);
      const uint64_t base =
          kern->program() < a->program_gpu.size() ? a->program_gpu[kern->program()] : 0;
      if (!base || !kern->facts_as_AmdKernel()) continue;
      const uint8_t *kd =
          host(base + kern->facts_as_AmdKernel()->descriptor_offset(), hcq::kd_size);
      if (!kd) continue;
      const int64_t entry = hcq::kernel_descriptor_decode(kd).code_entry_offset;
      if (base + kern->facts_as_AmdKernel()->descriptor_offset() + uint64_t(entry) == code)
        found = int32_t(k);
    }
    if (found >= 0) {
      cur_ = a.get();
      break;
    }
  }
  if (found < 0)
    return raise("DISPATCH_DIRECT: COMPUTE_PGM_LO/HI point at " + hex(code) +
                 ", which is not the code of any kernel");
  const fb::Kernel *k = cur_->capture->kernels()->Get(uint32_t(found));
  const fb::AmdKernel *a = k->facts_as_AmdKernel();
  const std::string what = "DISPATCH_DIRECT of kernel '" + k->name()->str() + "': ";
  uint32_t rsrc2 = 0;
  if (!hcq::amd_rsrc2_with_lds(chip_, a->rsrc2(), a->group_segment_size(), &rsrc2))
    return raise(what + "its group segment does not fit the LDS");
  if (sh(reg::COMPUTE_PGM_RSRC1) != a->rsrc1() || sh(reg::COMPUTE_PGM_RSRC2) != rsrc2 ||
      (chip_.has_pgm_rsrc3 && sh(reg::COMPUTE_PGM_RSRC3) != a->rsrc3()))
    return raise(what + "COMPUTE_PGM_RSRC1/2/3 differ from its descriptor");
  if (sh(reg::COMPUTE_NUM_THREAD_X) != a->workgroup_size() ||
      sh(reg::COMPUTE_NUM_THREAD_X + 1) != 1 || sh(reg::COMPUTE_NUM_THREAD_X + 2) != 1)
    return raise(what + "COMPUTE_NUM_THREAD_X/Y/Z are " +
                 std::to_string(sh(reg::COMPUTE_NUM_THREAD_X)) + "/" +
                 std::to_string(sh(reg::COMPUTE_NUM_THREAD_X + 1)) + "/" +
                 std::to_string(sh(reg::COMPUTE_NUM_THREAD_X + 2)) +
                 ", the kernel's workgroup is " + std::to_string(a->workgroup_size()) + "/1/1");
  if (dim_y != 1 || dim_z != 1 || dim_x == 0) return raise(what + "the grid must be N x 1 x 1");
  if (!(initiator & dispatch_compute_shader_en))
    return raise(what + "DISPATCH_INITIATOR lacks COMPUTE_SHADER_EN");
  if (bool(initiator & dispatch_cs_w32_en) != (a->wavefront_size() == 32))
    return raise(what + "DISPATCH_INITIATOR.CS_W32_EN disagrees with wavefront_size " +
                 std::to_string(a->wavefront_size()));
  const uint32_t sgpr = hcq::amd_kernarg_sgpr(a->kernel_code_properties());
  const uint64_t kernargs = sh(reg::COMPUTE_USER_DATA_0 + sgpr) |
                            (uint64_t(sh(reg::COMPUTE_USER_DATA_0 + sgpr + 1)) << 32);
  const uint32_t nb = k->num_buffers(), ns = k->num_scalars();
  const uint8_t *args = host(kernargs, 8ull * (nb + ns));
  if (!args) return raise(what + "its kernarg pointer " + hex(kernargs) + " is not in GPU memory");
  if (kernargs % (a->kernarg_align() ? a->kernarg_align() : 1))
    return raise(what + "its kernarg pointer " + hex(kernargs) + " is not " +
                 std::to_string(a->kernarg_align()) + "-byte aligned");
  if (mode_ != fake_mode::emulate && !cur_->twins.has(uint32_t(found)))
    return raise(what + "the kernel has no host twin, so the fake cannot " +
                 (mode_ == fake_mode::twin ? "run" : "check") + " it");
  std::vector<void *> bufs(nb);
  std::vector<size_t> touched;  // regions the buffers live in (check mode copies them)
  for (uint32_t b = 0; b < nb; ++b) {
    uint64_t gpu;
    memcpy(&gpu, args + 8 * b, 8);
    bufs[b] = host(gpu, 0);
    if (!bufs[b])
      return raise(what + "buffer " + std::to_string(b) + " at " + hex(gpu) +
                   " is not in GPU memory");
    for (size_t r = 0; r < regions_.size(); ++r)
      if (gpu >= regions_[r].gpu && gpu - regions_[r].gpu <= regions_[r].size &&
          std::find(touched.begin(), touched.end(), r) == touched.end())
        touched.push_back(r);
  }
  std::vector<int64_t> scalars(ns);
  if (ns) memcpy(scalars.data(), args + 8 * nb, 8ull * ns);
  if (mode_ == fake_mode::twin) {
    cur_->twins.run(uint32_t(found), bufs.data(), ns ? scalars.data() : nullptr);
  } else {
    std::vector<std::vector<uint8_t>> before;
    if (mode_ == fake_mode::check)
      for (size_t r : touched)
        before.emplace_back(regions_[r].cpu, regions_[r].cpu + regions_[r].size);
    if (!kernel_emulate(uint32_t(found), dim_x)) return false;
    if (mode_ == fake_mode::check &&
        !kernel_check(uint32_t(found), touched, before, bufs.data(), scalars.data()))
      return false;
  }
  ++dispatches_;
  return true;
}

bool fake_gpu::kernel_emulate(uint32_t k, uint32_t groups) {
  const auto sh = [&](uint32_t reg) { return sh_[reg - sh_reg_base]; };
  const fb::Kernel *kern = cur_->capture->kernels()->Get(k);
  rdna3_dispatch d;
  d.kernel = kern->name()->str();
  d.code = (uint64_t(sh(reg::COMPUTE_PGM_LO)) << 8) | (uint64_t(sh(reg::COMPUTE_PGM_HI)) << 40);
  d.rsrc1 = sh(reg::COMPUTE_PGM_RSRC1);
  d.rsrc2 = sh(reg::COMPUTE_PGM_RSRC2);
  for (uint32_t i = 0; i < 32; ++i) d.user_data[i] = sh(reg::COMPUTE_USER_DATA_0 + i);
  d.groups = groups;
  d.workgroup_size = sh(reg::COMPUTE_NUM_THREAD_X);
  d.wave32 = kern->facts_as_AmdKernel()->wavefront_size() == 32;
  d.threads = std::max(1u, std::thread::hardware_concurrency());
  if (strncmp(chip_.name, "gfx11", 5) != 0)
    return raise("kernel '" + d.kernel + "': the emulator decodes RDNA3 (gfx11) code, not " +
                 chip_.name + "'s; run it with fake-amd:" + chip_.name + ":twin");
  const rdna3_region_find find = [this](uint64_t gpu) { return region_find(gpu); };
  auto it = programs_.find(d.code);
  std::string err;
  if (it == programs_.end()) {
    rdna3_program p;
    if (!rdna3_program_decode(d, find, &p, &err)) return raise("RDNA3 emulator: " + err);
    it = programs_.emplace(d.code, std::move(p)).first;
  }
  std::vector<rdna3_counts> &counts = cur_->counts;
  if (counts.size() <= k) counts.resize(cur_->capture->kernels()->size());
  if (!rdna3_dispatch_run(d, it->second, find, &counts[k], &err))
    return raise("RDNA3 emulator: " + err);
  return true;
}

bool fake_gpu::kernel_check(uint32_t k, const std::vector<size_t> &touched,
                            const std::vector<std::vector<uint8_t>> &before, void **bufs,
                            int64_t *scalars) {
  // The emulator's results stay in GPU memory (they are the replay's); the twin runs on the
  // memory as it was before the dispatch, and the words either of them changed are compared by
  // the rule of every check (runtime/hcq/word_compare.h).
  const fb::Kernel *kern = cur_->capture->kernels()->Get(k);
  std::vector<std::vector<uint8_t>> emulated;
  for (size_t i = 0; i < touched.size(); ++i) {
    region &r = regions_[touched[i]];
    emulated.emplace_back(r.cpu, r.cpu + r.size);
    memcpy(r.cpu, before[i].data(), r.size);
  }
  cur_->twins.run(k, bufs, scalars);
  hcq::word_tally tally;
  for (size_t i = 0; i < touched.size(); ++i) {
    const region &r = regions_[touched[i]];
    tally.reference(r.cpu, r.size, before[i].data());
    tally.compare(emulated[i].data(), r.cpu, r.size, r.gpu);
  }
  for (size_t i = 0; i < touched.size(); ++i)
    memcpy(regions_[touched[i]].cpu, emulated[i].data(), regions_[touched[i]].size);
  if (tally.match()) return true;
  char b[160];
  snprintf(b, sizeof b, "max |emulator - twin| = %g at %s (tolerance %g), %llu words differ",
           tally.max_diff, hex(tally.worst_at).c_str(), tally.tolerance(),
           (unsigned long long)tally.differ);
  return raise("check: kernel '" + kern->name()->str() + "' (kernel " + std::to_string(k) +
               ") differs from its host twin: " + b);
}

// The emulator's counts per kernel, and an estimate of the time on a Radeon RX 7900 XTX (gfx1100)
// from them: max(VALU wave instructions at the dual-issue peak, VMEM bytes at the DRAM bandwidth).
// 96 CUs x 2 SIMD32 x 2 (VOPD dual issue) x 2.5 GHz = 960 G wave instructions/s, i.e. 61.4
// TFLOP/s when every one is an FMA. It is a roofline ESTIMATE (no caches, no latency, no LDS or
// issue limits, no occupancy), for comparing lowerings, not a measurement. Sources: AMD Radeon RX
// 7900 XTX specifications (96 compute units, 2.5 GHz boost, 61.4 TFLOP/s FP32, 960 GB/s); RDNA3
// ISA guide ch. 1 (two SIMD32 per compute unit) and 6.5 (VOPD dual issue).
std::string fake_gpu::profile_text() const {
  constexpr double valu_per_s = 96 * 2 * 2 * 2.5e9, bytes_per_s = 960e9;
  auto est_us = [&](const rdna3_counts &c) {
    return 1e6 * std::max(double(c.valu) / valu_per_s,
                          double(c.vmem_load_bytes + c.vmem_store_bytes) / bytes_per_s);
  };
  std::string s =
      "fake-amd emulator counts per kernel (wave instructions; bytes over active lanes; "
      "est_us: roofline estimate for a 7900 XTX, not a measurement)\n";
  char b[512];
  snprintf(b, sizeof b, "%-36s %8s %12s %6s %13s %10s %8s %14s %12s %9s %12s %10s\n", "kernel",
           "waves", "VALU", "FMA%", "FMA_lanes", "SALU", "waits", "VMEM_load_B", "VMEM_store_B",
           "load_B/FMA", "LDS_B", "est_us");
  s += b;
  auto row = [&](const char *name, const rdna3_counts &c, double us) {
    snprintf(b, sizeof b,
             "%-36.36s %8llu %12llu %6.1f %13llu %10llu %8llu %14llu %12llu %9.2f %12llu %10.1f\n",
             name, (unsigned long long)c.waves, (unsigned long long)c.valu,
             c.valu ? 100.0 * double(c.valu_fma) / double(c.valu) : 0.0,
             (unsigned long long)c.fma_lanes, (unsigned long long)c.salu,
             (unsigned long long)c.waits, (unsigned long long)c.vmem_load_bytes,
             (unsigned long long)c.vmem_store_bytes,
             c.fma_lanes ? double(c.vmem_load_bytes) / double(c.fma_lanes) : 0.0,
             (unsigned long long)c.lds_bytes, us);
    s += b;
  };
  rdna3_counts total;
  double sum_us = 0;  // kernels run one after another: their estimates add
  static const std::vector<rdna3_counts> none;
  const std::vector<rdna3_counts> &counts = cur_ ? cur_->counts : none;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (!counts[k].waves) continue;
    total.add(counts[k]);
    sum_us += est_us(counts[k]);
    row(cur_->capture->kernels()->Get(uint32_t(k))->name()->c_str(), counts[k], est_us(counts[k]));
  }
  row("total", total, sum_us);
  snprintf(b, sizeof b,
           "estimate for a 7900 XTX (61.4 TFLOP/s FP32 dual-issue, 960 GB/s; not a measurement): "
           "%.4f ms\n",
           sum_us / 1000);
  s += b;
  return s;
}

hcq::device_profile fake_gpu::profile_report() const {
  constexpr double valu_per_s = 96 * 2 * 2 * 2.5e9, bytes_per_s = 960e9;  // as profile_text
  hcq::device_profile p;
  p.device = "fake-amd";
  p.hardware = "Radeon RX 7900 XTX (gfx1100)";
  p.model =
      "ESTIMATE, not a measurement: roofline max(VALU wave instructions at the dual-issue peak, "
      "VMEM bytes at 960 GB/s) per kernel (targets/amd/fake/fake_amd.cpp, profile_text)";
  static const std::vector<rdna3_counts> none;
  const std::vector<rdna3_counts> &counts = cur_ ? cur_->counts : none;
  for (size_t k = 0; k < counts.size(); ++k) {
    const rdna3_counts &c = counts[k];
    if (!c.waves) continue;
    hcq::profile_kernel pk;
    pk.kernel = uint32_t(k);
    pk.name = cur_->capture->kernels()->Get(uint32_t(k))->name()->str();
    const double valu_s = double(c.valu) / valu_per_s,
                 vmem_s = double(c.vmem_load_bytes + c.vmem_store_bytes) / bytes_per_s;
    pk.estimated_us = 1e6 * std::max(valu_s, vmem_s);
    pk.bound = valu_s >= vmem_s ? "valu" : "vmem";
    pk.counts = {{"waves", double(c.waves)},
                 {"valu", double(c.valu)},
                 {"valu_fma", double(c.valu_fma)},
                 {"fma_lanes", double(c.fma_lanes)},
                 {"salu", double(c.salu)},
                 {"smem", double(c.smem)},
                 {"branches", double(c.branches)},
                 {"waits", double(c.waits)},
                 {"vmem_load_bytes", double(c.vmem_load_bytes)},
                 {"vmem_store_bytes", double(c.vmem_store_bytes)},
                 {"lds_bytes", double(c.lds_bytes)},
                 {"smem_bytes", double(c.smem_bytes)}};
    p.estimated_total_us += pk.estimated_us;
    p.kernels.push_back(std::move(pk));
  }
  p.text = profile_text();
  return p;
}

capgraph_status fake_gpu::capture_attach(const fb::Capture *c,
                                         const std::vector<uint64_t> &program_gpu, std::string *err,
                                         const void *owner) {
  capture_detach(owner);
  auto a = std::make_unique<attached_capture>();
  a->owner = owner;
  a->capture = c;
  a->program_gpu = program_gpu;
  a->counts.assign(c->kernels() ? c->kernels()->size() : 0, rdna3_counts{});
  // The machine code runs in emulate mode: twins are not needed.
  if (mode_ != fake_mode::emulate) {
    const capgraph_status st = a->twins.link(c, "fake-amd", err);
    if (st != CAPGRAPH_OK) return st;
  }
  attached_.push_back(std::move(a));
  cur_ = attached_.back().get();
  return CAPGRAPH_OK;
}

void fake_gpu::capture_detach(const void *owner) {
  for (auto it = attached_.begin(); it != attached_.end(); ++it)
    if ((*it)->owner == owner) {
      attached_.erase(it);
      break;
    }
  cur_ = attached_.empty() ? nullptr : attached_.back().get();
  // Decoded programs are keyed by code address, which the next model's code may reuse.
  programs_.clear();
}

bool fake_gpu::interrupt_target(uint64_t *mailbox, uint32_t *id) {
  std::string err;
  // AMDKFD_IOC_CREATE_EVENT; without an event the transport's waits poll.
  if (fault_inject("interrupt_target", "AMDKFD_IOC_CREATE_EVENT", ENOMEM, &err)) return false;
  if (!mailbox_.size && alloc_region(4096, &mailbox_, &err) != CAPGRAPH_OK) return false;
  *mailbox = mailbox_.gpu;
  *id = 1;
  return true;
}

capgraph_status fake_gpu::wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                               std::string *err) {
  if (fault_inject("wait", "AMDKFD_IOC_WAIT_EVENTS", ENODEV, err)) return CAPGRAPH_ERR_DEVICE;
  const auto read = [&](uint64_t *now, std::string *e) {
    if (!fault_.empty()) {
      *e = "fake-amd: device error: " + fault_;
      return CAPGRAPH_ERR_DEVICE;
    }
    return hcq::wait_read(value, now);
  };
  const capgraph_status st = hcq::wait_bounded(target, timeout_ns, read, hcq::wait_nap{}, err);
  if (st != CAPGRAPH_ERR_TIMEOUT) return st;
  *err = "fake-amd: " + *err;
  for (const auto &[id, q] : queues_)
    if (!q.blocked.empty())
      *err += std::string("; the ") + (q.kind == hcq::queue_kind::compute ? "compute" : "SDMA") +
              " queue is stuck at " + q.blocked;
  return st;
}

namespace {

// "fake-amd[:CHIP][:check|:twin][:profile][:fail=N[:ERRNO]][:count]", in any order after the
// name.
capgraph_status fake_open(const char *device, std::unique_ptr<hcq::transport> *out,
                          std::string *err) {
  const chip *c = chip_find("gfx1100");
  fake::fault_plan faults;
  fake_mode mode = fake_mode::emulate;
  bool profile = false;
  for (const char *p = strchr(device, ':'); p; p = strchr(p + 1, ':')) {
    const char *end = strchr(p + 1, ':');
    const std::string word(p + 1, end ? size_t(end - p - 1) : strlen(p + 1));
    std::string why;
    if (fake::fault_word(word, &faults, &why)) {
      if (why.empty()) continue;
      *err = "fake-amd: " + why;
      return CAPGRAPH_ERR_ARGUMENT;
    }
    if (word == "check")
      mode = fake_mode::check;
    else if (word == "twin")
      mode = fake_mode::twin;
    else if (word == "profile")
      profile = true;
    else if (!(c = chip_find(word.c_str()))) {
      *err = "fake-amd: '" + word + "' is neither a chip nor one of check, twin, profile, " +
             fake::fault_words_usage;
      return CAPGRAPH_ERR_ARGUMENT;
    }
  }
  *out = std::make_unique<fake_gpu>(*c, mode, profile, faults);
  return CAPGRAPH_OK;
}

}  // namespace

hcq::graph_options graph_options_for(fake_gpu &gpu, hcq::graph_options o) {
  o.capture_attach = [&gpu](const fb::Capture *c, const std::vector<uint64_t> &at,
                            std::string *err) { return gpu.capture_attach(c, at, err); };
  return o;
}

void fake_amd_register() {
  hcq::target_register(
      "fake-amd", &fake_open, &hcq::amd_target,
      [] {
        return std::string(
            "a fake AMD GPU for tests (gfx1100; fake-amd:gfx1200 etc.): runs gfx11 "
            "kernels in an RDNA3 emulator (fake-amd:check compares each with its host "
            "twin, fake-amd:twin runs the twins, fake-amd:profile prints counts), "
            "measures no time\n");
      },
      &fake_amd_attach);
  fake_kfd_register();
}

capgraph_status fake_amd_attach(hcq::transport *dev, const fb::Capture *c,
                                const std::vector<uint64_t> &program_gpu, std::string *err) {
  return static_cast<fake_gpu *>(dev)->capture_attach(c, program_gpu, err);
}

}  // namespace capgraph::amd
