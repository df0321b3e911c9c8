// The HCQ verbs in AMD packets. PM4 for compute queues, SDMA for copy queues.
// Sources for the sequences (facts, not code): tinygrad runtime/ops_amd.py (exec: program
// registers, user SGPRs, DISPATCH_DIRECT; signal: RELEASE_MEM end-of-pipe with cache write-back;
// wait: WAIT_REG_MEM >=), Linux gfx_v11_0.c (emit_mem_sync, emit_fence) and sdma_v6_0.c
// (emit_copy_buffer: count = bytes - 1; emit_fence; emit_pipeline_sync: POLL_REGMEM).
#include "amd_hcq.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "amd_packets.h"
#include "amd_usbfs_device.h"
#include "kfd_transport.h"

namespace capgraph::hcq {
namespace {

std::string missing(const char *engine, const char *verb) {
  return std::string(engine) + " queues have no '" + verb + "' verb";
}

class pm4_encoder final : public encoder {
 public:
  pm4_encoder(const amd::chip &chip, std::vector<uint32_t> *out)
      : encoder(out), chip_(chip), w_(out) {}

  void exec(const dispatch &x) override {
    const amd_dispatch &d = x.facts_as<amd_dispatch>();
    // The program and its resources.
    sh_regs(amd::reg::COMPUTE_PGM_LO, {uint32_t(d.code >> 8), uint32_t(d.code >> 40)});
    sh_regs(amd::reg::COMPUTE_PGM_RSRC1, {d.rsrc1, d.rsrc2});
    if (chip_.has_pgm_rsrc3) sh_regs(amd::reg::COMPUTE_PGM_RSRC3, {d.rsrc3});
    sh_regs(amd::reg::COMPUTE_TMPRING_SIZE, {0});  // no scratch (refused at load)
    sh_regs(amd::reg::COMPUTE_RESOURCE_LIMITS, {0});
    // Every CU of every shader engine may take work.
    sh_regs(amd::reg::COMPUTE_STATIC_THREAD_MGMT_SE0, {0xffffffff, 0xffffffff});
    sh_regs(amd::reg::COMPUTE_STATIC_THREAD_MGMT_SE2, {0xffffffff, 0xffffffff});
    sh_regs(amd::reg::COMPUTE_RESTART_X, {0, 0, 0});
    // The kernarg pointer in its user SGPRs.
    sh_regs(amd::reg::COMPUTE_USER_DATA_0 + d.kernarg_sgpr,
            {uint32_t(x.kernargs), uint32_t(x.kernargs >> 32)});
    // Start at workgroup 0, one dimension.
    sh_regs(amd::reg::COMPUTE_START_X, {0, 0, 0, x.workgroup_size, 1, 1});
    uint32_t initiator = amd::dispatch_compute_shader_en | amd::dispatch_force_start_at_000;
    if (d.wave32) initiator |= amd::dispatch_cs_w32_en;
    using f = amd::fields::DISPATCH_DIRECT;
    w_.emit({{f::dim_x, x.groups}, {f::dim_y, 1}, {f::dim_z, 1}, {f::initiator, initiator}});
  }

  void copy(uint64_t, uint64_t, uint64_t) override { fail(missing("compute", "copy")); }

  void signal(uint64_t addr, uint64_t value) override {
    release_mem(amd::data_sel_gpu_clock, addr + 8, 0);
    release_mem(amd::data_sel_value64, addr, value);
  }

  void wait(uint64_t addr, uint32_t value) override {
    // function >=, memory space 1 (memory), operation 0 (wait), engine 0 (ME).
    using f = amd::fields::WAIT_REG_MEM;
    w_.emit({{f::function, amd::wait_func_ge},
             {f::mem_space, 1},
             {f::operation, 0},
             {f::engine_sel, 0},
             {f::addr, addr},
             {f::reference, value},
             {f::mask, 0xffffffff},
             {f::poll_interval, 4}});
  }

  void barrier() override {
    // Wait for earlier dispatches to drain, then make their writes visible to later ones.
    using ew = amd::fields::EVENT_WRITE;
    w_.emit({{ew::event_type, amd::event_cs_partial_flush},
             {ew::event_index, amd::event_index_partial_flush}});
    // The whole address range (size 0xff_ffffffff from base 0), polled every 10 clocks.
    if (chip_.gcr_cntl) {
      using f = amd::fields::ACQUIRE_MEM;
      w_.emit({{f::coher_size, 0xffffffff},
               {f::coher_size_hi, 0xff},
               {f::poll_interval, 10},
               {f::gcr_cntl, chip_.acquire_cache}});
    } else {
      using f = amd::fields::ACQUIRE_MEM_GFX9;
      w_.emit({{f::coher_cntl, chip_.acquire_cache},
               {f::coher_size, 0xffffffff},
               {f::coher_size_hi, 0xff},
               {f::poll_interval, 10}});
    }
  }

  void interrupt(uint64_t mailbox, uint32_t id) override {
    // The interrupt's context id names the KFD event; the mailbox write lets KFD find it when
    // the id does not fit the interrupt (Sources: amdkfd kfd_events.c
    // kfd_signal_event_interrupt; tinygrad ops_amd.py signal()).
    using f = amd::fields::RELEASE_MEM;
    w_.emit({{f::event_type, amd::event_cache_flush_and_inv_ts},
             {f::event_index, amd::event_index_end_of_pipe},
             {f::cache_ctl, chip_.release_cache},
             {f::int_sel, amd::int_sel_after_write},
             {f::data_sel, amd::data_sel_value32},
             {f::addr, mailbox},
             {f::data, id},
             {f::int_ctxid, id}});
  }

  void timestamp(uint64_t addr) override {
    using f = amd::fields::RELEASE_MEM;
    w_.emit({{f::event_type, amd::event_bottom_of_pipe_ts},
             {f::event_index, amd::event_index_end_of_pipe},
             {f::int_sel, amd::int_sel_none},
             {f::data_sel, amd::data_sel_gpu_clock},
             {f::addr, addr}});
  }

  void call(uint64_t addr, uint64_t dwords) override {
    // chain 0, valid 1, vmid 0 (the queue's own).
    using f = amd::fields::INDIRECT_BUFFER;
    w_.emit({{f::ib_base, addr}, {f::ib_size, dwords}, {f::chain, 0}, {f::valid, 1}, {f::vmid, 0}});
  }

  const std::string &error() const override { return error_.empty() ? w_.error() : error_; }

 private:
  void sh_regs(uint32_t reg, std::initializer_list<uint32_t> values) {
    w_.emit({{amd::fields::SET_SH_REG::reg_offset, reg - amd::sh_reg_base}}, values.begin(),
            values.size());
  }
  void release_mem(uint32_t data_sel, uint64_t addr, uint64_t data) {
    // End of pipe, caches written back first (the chip's bits), memory destination (dst_sel 0).
    using f = amd::fields::RELEASE_MEM;
    w_.emit({{f::event_type, amd::event_cache_flush_and_inv_ts},
             {f::event_index, amd::event_index_end_of_pipe},
             {f::cache_ctl, chip_.release_cache},
             {f::int_sel, amd::int_sel_none},
             {f::data_sel, data_sel},
             {f::addr, addr},
             {f::data, data}});
  }
  void fail(const std::string &why) {
    if (error_.empty()) error_ = why;
  }

  const amd::chip &chip_;
  amd::packet_writer w_;
  std::string error_;
};

class sdma_encoder final : public encoder {
  static constexpr uint64_t kMtypeUc = 3;

 public:
  sdma_encoder(const amd::chip &chip, std::vector<uint32_t> *out) : encoder(out), w_(out) {}

  void exec(const dispatch &) override { fail(missing("copy (SDMA)", "exec")); }

  void copy(uint64_t dst, uint64_t src, uint64_t size) override {
    for (uint64_t done = 0; done < size;) {
      const uint64_t n = size - done < amd::sdma_max_copy ? size - done : amd::sdma_max_copy;
      using f = amd::fields::SDMA_COPY_LINEAR;
      w_.emit({{f::count, n - 1}, {f::src, src + done}, {f::dst, dst + done}});
      done += n;
    }
  }

  void signal(uint64_t addr, uint64_t value) override {
    timestamp(addr + 8);
    // FENCE writes 32 bits: the low half first, so a reader never sees the new high half with
    // the old low half (which could look ahead of the true value). MTYPE 3 (uncached): the CPU
    // and the other engines see the write (as amdgpu's sdma_v6_0_ring_emit_fence sets it).
    using f = amd::fields::SDMA_FENCE;
    w_.emit({{f::mtype, kMtypeUc}, {f::addr, addr}, {f::data, uint32_t(value)}});
    w_.emit({{f::mtype, kMtypeUc}, {f::addr, addr + 4}, {f::data, uint32_t(value >> 32)}});
  }

  void wait(uint64_t addr, uint32_t value) override {
    // no HDP flush, function >=, memory poll; interval 10, retry 0xfff (for ever).
    using f = amd::fields::SDMA_POLL_REGMEM;
    w_.emit({{f::hdp_flush, 0},
             {f::func, amd::wait_func_ge},
             {f::mem_poll, 1},
             {f::addr, addr},
             {f::value, value},
             {f::mask, 0xffffffff},
             {f::interval, 10},
             {f::retry_count, 0xfff}});
  }

  void interrupt(uint64_t mailbox, uint32_t id) override {
    w_.emit({{amd::fields::SDMA_FENCE::mtype, kMtypeUc},
             {amd::fields::SDMA_FENCE::addr, mailbox},
             {amd::fields::SDMA_FENCE::data, id}});
    w_.emit({{amd::fields::SDMA_TRAP::int_context, id & 0xfffffff}});
  }

  // SDMA runs its packets in order and each copy completes before the next packet.
  void barrier() override {}

  void timestamp(uint64_t addr) override { w_.emit({{amd::fields::SDMA_TIMESTAMP::addr, addr}}); }

  void call(uint64_t, uint64_t) override { fail(missing("copy (SDMA)", "call")); }

  const std::string &error() const override { return error_.empty() ? w_.error() : error_; }

 private:
  void fail(const std::string &why) {
    if (error_.empty()) error_ = why;
  }
  amd::packet_writer w_;
  std::string error_;
};

template <class T>
T load_le(const uint8_t *p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

std::unique_ptr<encoder> amd_compute_encoder(const amd::chip &chip, std::vector<uint32_t> *out) {
  return std::make_unique<pm4_encoder>(chip, out);
}
std::unique_ptr<encoder> amd_copy_encoder(const amd::chip &chip, std::vector<uint32_t> *out) {
  return std::make_unique<sdma_encoder>(chip, out);
}

const amd::chip *amd_capture_chip(const char *target_name) {
  if (strncmp(target_name, "amd-", 4) != 0) return nullptr;
  return amd::chip_find(target_name + 4);
}

kernel_descriptor kernel_descriptor_decode(const uint8_t *kd) {
  return {load_le<int64_t>(kd + kd_code_entry_offset), load_le<uint32_t>(kd + kd_rsrc1),
          load_le<uint32_t>(kd + kd_rsrc2), load_le<uint32_t>(kd + kd_rsrc3),
          load_le<uint16_t>(kd + kd_kernel_code_properties)};
}

bool amd_rsrc2_with_lds(const amd::chip &chip, uint32_t rsrc2, uint32_t group_segment_size,
                        uint32_t *out) {
  const uint32_t blocks = (group_segment_size + 511) / 512;
  if (group_segment_size > chip.lds_bytes || blocks > 0x1ff) return false;
  *out = (rsrc2 & ~(0x1ffu << 15)) | std::max(blocks, (rsrc2 >> 15) & 0x1ff) << 15;
  return true;
}

uint32_t amd_kernarg_sgpr(uint16_t p) {
  return (p & kcp_private_segment_buffer ? 4 : 0) + (p & kcp_dispatch_ptr ? 2 : 0) +
         (p & kcp_queue_ptr ? 2 : 0);
}

capgraph_status amd_kernel_resolve(const fb::Capture *c, uint32_t index, uint64_t program_gpu,
                                   dispatch *out, std::string *err) {
  const fb::Kernel *k = c->kernels()->Get(index);
  const fb::AmdKernel *a = k->facts_as_AmdKernel();
  const auto *bin = c->programs()->Get(k->program())->binary();
  const std::string what = "kernel " + std::to_string(index) + " '" + k->name()->str() + "'";
  const uint8_t *kd = bin->data() + a->descriptor_offset();
  // kernel_code_entry_byte_offset is signed and relative to the descriptor.
  const kernel_descriptor desc = kernel_descriptor_decode(kd);
  const int64_t entry = desc.code_entry_offset;
  int64_t code_at;
  const bool overflow = __builtin_add_overflow(int64_t(a->descriptor_offset()), entry, &code_at);
  const uint64_t code = uint64_t(code_at);
  if (overflow || code_at < 0 || code >= bin->size()) {
    *err = what + ": its descriptor's code entry offset " + std::to_string(entry) +
           " points outside its code object";
    return CAPGRAPH_ERR_FORMAT;
  }
  if ((program_gpu + code) % 256) {
    *err = what + ": its code starts at byte " + std::to_string(code) +
           " of its code object, which is not 256-byte aligned (COMPUTE_PGM_LO holds address >> 8)";
    return CAPGRAPH_ERR_FORMAT;
  }
  const uint32_t rsrc3 = desc.rsrc3, rsrc1 = desc.rsrc1, rsrc2 = desc.rsrc2;
  const uint16_t props = desc.kernel_code_properties;
  if (rsrc1 != a->rsrc1() || rsrc2 != a->rsrc2() || rsrc3 != a->rsrc3() ||
      props != a->kernel_code_properties()) {
    *err = what +
           ": AmdKernel's rsrc1/rsrc2/rsrc3/kernel_code_properties disagree with the "
           "kernel descriptor in its code object";
    return CAPGRAPH_ERR_FORMAT;
  }
  // This runtime provides the kernarg pointer and nothing else (no dispatch packet, queue,
  // scratch): a kernel asking for more would read garbage, so it is refused here.
  const uint16_t unsupported = kcp_private_segment_buffer | kcp_dispatch_ptr | kcp_queue_ptr |
                               kcp_dispatch_id | kcp_flat_scratch_init | kcp_private_segment_size;
  if (props & unsupported) {
    *err = what +
           ": its kernel descriptor enables user SGPRs this runtime does not provide "
           "(kernel_code_properties 0x";
    char hex[16];
    snprintf(hex, sizeof hex, "%x", props);
    *err += std::string(hex) + "; only the kernarg segment pointer is supported)";
    return CAPGRAPH_ERR_FORMAT;
  }
  if (a->private_segment_size() != 0) {
    *err = what + ": needs " + std::to_string(a->private_segment_size()) +
           " bytes of scratch per work-item, which this runtime does not set up yet";
    return CAPGRAPH_ERR_FORMAT;
  }
  if (!(props & kcp_kernarg_segment_ptr) && k->num_buffers() + k->num_scalars() > 0) {
    *err = what + ": takes arguments but its descriptor does not enable the kernarg pointer";
    return CAPGRAPH_ERR_FORMAT;
  }
  if (bool(props & kcp_wavefront_size32) != (a->wavefront_size() == 32)) {
    *err = what + ": wavefront_size " + std::to_string(a->wavefront_size()) +
           " disagrees with its descriptor";
    return CAPGRAPH_ERR_FORMAT;
  }
  const amd::chip *chip = amd_capture_chip(c->target()->name()->c_str());
  if (a->wavefront_size() == 32 && !chip->wave32) {
    *err = what + " is wave32, which " + chip->name + " does not run";
    return CAPGRAPH_ERR_FORMAT;
  }
  amd_dispatch &d = out->facts_as<amd_dispatch>();
  d.code = program_gpu + code;
  d.kernarg_sgpr = amd_kernarg_sgpr(props);
  d.rsrc1 = rsrc1;
  if (!amd_rsrc2_with_lds(*chip, rsrc2, a->group_segment_size(), &d.rsrc2)) {
    *err = what + ": needs " + std::to_string(a->group_segment_size()) +
           " bytes of LDS, more than the " + std::to_string(chip->lds_bytes / 1024) +
           " KiB one workgroup may have";
    return CAPGRAPH_ERR_FORMAT;
  }
  d.rsrc3 = rsrc3;
  d.wave32 = a->wavefront_size() == 32;
  out->workgroup_size = a->workgroup_size();
  out->kernarg_size = a->kernarg_size();
  out->kernarg_align = a->kernarg_align();
  return CAPGRAPH_OK;
}

namespace {

bool in_range(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

// The AmdKernel facts the dispatch and the fake GPU rely on (capture.fbs, AmdKernel).
bool amd_kernel_check(const fb::Capture *c, uint32_t i, std::string *why) {
  const fb::Kernel *k = c->kernels()->Get(i);
  const char *name = k->name()->c_str();
  const fb::Program *p = c->programs()->Get(k->program());
  if (p->format() != fb::ProgramFormat::amdgpu_code_object)
    return *why = format("kernel %u '%s': its program %u is not an amdgpu_code_object", i, name,
                         k->program()),
           false;
  const fb::AmdKernel *a = k->facts_as_AmdKernel();
  if (!a) return *why = format("kernel %u '%s': no AmdKernel launch facts", i, name), false;
  if (a->descriptor_offset() % 64 || !in_range(a->descriptor_offset(), 64, p->binary()->size()))
    return *why = format(
               "kernel %u '%s': descriptor_offset %llu is not a 64-byte aligned "
               "descriptor inside its %u-byte code object",
               i, name, (unsigned long long)a->descriptor_offset(), p->binary()->size()),
           false;
  if (a->wavefront_size() != 32 && a->wavefront_size() != 64)
    return *why = format("kernel %u '%s': wavefront_size %u is not 32 or 64", i, name,
                         a->wavefront_size()),
           false;
  if (a->workgroup_size() < 1 || a->workgroup_size() > 1024)
    return *why = format("kernel %u '%s': workgroup_size %u is not 1 to 1024", i, name,
                         a->workgroup_size()),
           false;
  const uint64_t args = 8ull * (uint64_t(k->num_buffers()) + k->num_scalars());
  if (a->kernarg_size() < args)
    return *why = format(
               "kernel %u '%s': kernarg_size %u is less than the %llu bytes its %u "
               "buffers and %u scalars take",
               i, name, a->kernarg_size(), (unsigned long long)args, k->num_buffers(),
               k->num_scalars()),
           false;
  // The sizes the kernel descriptor also holds (amd_kernel_descriptor_t: group_segment_fixed_size
  // at byte 0, private_segment_fixed_size at 4, kernarg_size at 8; LLVM AMDGPUUsage "Kernel
  // Descriptor") must agree with it: the descriptor is inside the checksummed code object, these
  // facts are not, and each sizes an allocation or a register (fuzz_gpu_capture: a kernarg_size of
  // 2^31 made the load allocate 2 GiB of kernel arguments).
  const uint8_t *kd = p->binary()->data() + a->descriptor_offset();
  uint32_t kd_group, kd_private, kd_kernarg;
  memcpy(&kd_group, kd, 4);
  memcpy(&kd_private, kd + 4, 4);
  memcpy(&kd_kernarg, kd + 8, 4);
  if (a->kernarg_size() != kd_kernarg || a->group_segment_size() != kd_group ||
      a->private_segment_size() != kd_private)
    return *why = format(
               "kernel %u '%s': kernarg_size %u, group_segment_size %u or private_segment_size "
               "%u disagrees with its kernel descriptor's %u, %u, %u",
               i, name, a->kernarg_size(), a->group_segment_size(), a->private_segment_size(),
               kd_kernarg, kd_group, kd_private),
           false;
  const uint32_t align = a->kernarg_align();
  if (align > 4096 || (align & (align - 1)))
    return *why = format("kernel %u '%s': kernarg_align %u is not a power of two up to 4096", i,
                         name, align),
           false;
  return true;
}

bool amd_capture_matches(const char *capture_target) {
  return amd_capture_chip(capture_target) != nullptr;
}

std::string amd_capture_names() {
  unsigned n;
  const amd::chip *chips = amd::chips_all(&n);
  std::string known;
  for (unsigned i = 0; i < n; ++i) known += std::string(i ? ", amd-" : "amd-") + chips[i].name;
  return known;
}

capgraph_status amd_device_check(const fb::Capture *c, transport *dev, std::string *why) {
  const amd::chip *chip = amd_capture_chip(c->target()->name()->c_str());
  if (!chip) {
    *why = "target '" + c->target()->name()->str() + "' is not an AMD GPU this runtime knows";
    return CAPGRAPH_ERR_TARGET;
  }
  if (dev->chip_name() != chip->name) {
    *why = std::string("compiled for ") + chip->name + ", but the device " + dev->name() + " is " +
           dev->chip_name();
    return CAPGRAPH_ERR_TARGET;
  }
  return CAPGRAPH_OK;
}

std::unique_ptr<encoder> amd_encoder_create(const fb::Capture *c, queue_kind kind,
                                            std::vector<uint32_t> *out) {
  const amd::chip &chip = *amd_capture_chip(c->target()->name()->c_str());
  return kind == queue_kind::compute ? amd_compute_encoder(chip, out) : amd_copy_encoder(chip, out);
}

}  // namespace

const target amd_target = {"amd",
                           fb::ProgramFormat::amdgpu_code_object,
                           &amd_capture_matches,
                           &amd_capture_names,
                           &amd_kernel_check,
                           &amd_device_check,
                           &amd_kernel_resolve,
                           &amd_encoder_create};

// Called by the runtime's generated targets_builtin_register (CAPGRAPH_TARGETS holds "amd").
void target_amd_register() {
  target_register("amd", &kfd::kfd_open, &amd_target, [] { return kfd::kfd_devices_describe(); });
  target_amd_usb_register();  // a gfx1100 behind our USB bridge, through usbfs
}

}  // namespace capgraph::hcq
