// The HCQ verbs as NVIDIA push-buffer methods and QMDs, and the NvKernel checks. Sources for the
// sequences (facts, not code): tinygrad runtime/ops_nv.py (exec: QMD template, SEND_PCAS_A +
// PCAS2_B PREFETCH_SCHEDULE, chained QMDs; signal: SEM_EXECUTE RELEASE with RELEASE_WFI and
// RELEASE_TIMESTAMP; wait: ACQ_CIRC_GEQ; copy: OFFSET_*/LINE_LENGTH_IN/LAUNCH_DMA), Mesa NVK
// nak/qmd.rs (the QMD V04 fields Hopper needs), NVIDIA open-gpu-doc class and QMD headers (cited in
// nv_methods_table.cpp and nv_qmd_table.cpp). ../shared/research/nv_plan.md §2.4-§2.8.
#include "nv_hcq.h"

#include <cstdio>
#include <cstring>

#include "clock_text.h"
#include "nv_methods.h"
#include "nv_transport.h"

namespace capgraph::nv {

uint32_t push_words(uint32_t header) {
  const uint32_t sec_op = header >> 29;
  if (sec_op == 1) return 1 + (header >> 16 & 0x1fff);  // INC_METHOD
  if (header == kCallToken) return 3;
  return 0;
}

uint64_t nv_gpfifo_submit(gpfifo &f, const uint32_t *words, uint64_t count, std::string *error) {
  // Check first, so a bad stream submits nothing. One submission must fit the push ring whole:
  // a wrap inside it would overwrite its own first words before the GPU read them.
  if (count > f.push_dwords) {
    *error = "a submission of " + std::to_string(count) + " words does not fit the " +
             std::to_string(f.push_dwords) + "-word push ring";
    return 0;
  }
  for (uint64_t i = 0; i < count;) {
    const uint32_t n = push_words(words[i]);
    if (!n || i + n > count) {
      char b[96];
      snprintf(b, sizeof b, "word %llu (0x%08x) is not a method header this runtime writes",
               (unsigned long long)i, words[i]);
      *error = b;
      return 0;
    }
    if (n > f.push_dwords) {
      *error = "a push of " + std::to_string(n) + " words does not fit the push ring";
      return 0;
    }
    i += n;
  }
  uint64_t written = 0;
  const auto entry = [&](uint32_t w0, uint32_t w1) {
    const uint32_t slot = f.put % f.count;
    f.entries[2 * slot] = w0;
    f.entries[2 * slot + 1] = w1;
    ++f.put;
    written += 2;
  };
  const auto run = [&](uint64_t from, uint64_t to) {
    // Runs never straddle the push ring's end: a GP entry is one contiguous range.
    for (uint64_t at = from; at < to;) {
      uint64_t n = 0;
      while (at + n < to && n + push_words(words[at + n]) <= f.push_dwords)
        n += push_words(words[at + n]);
      if (f.push_pos + n > f.push_dwords) f.push_pos = 0;
      for (uint64_t k = 0; k < n; ++k) f.push[f.push_pos + k] = words[at + k];
      uint32_t e[2];
      gp_entry(f.push_gpu + 4 * f.push_pos, uint32_t(n), true, e);
      entry(e[0], e[1]);
      f.push_pos += n;
      written += n;
      at += n;
    }
  };
  uint64_t start = 0;
  for (uint64_t i = 0; i < count;) {
    const uint32_t n = push_words(words[i]);
    if (words[i] == kCallToken) {
      run(start, i);
      entry(words[i + 1], words[i + 2]);
      start = i + n;
    }
    i += n;
  }
  run(start, count);
  __atomic_thread_fence(__ATOMIC_RELEASE);  // entries and pushes before GPPut
  *f.gp_put = f.put % f.count;
  return written + 1;
}

}  // namespace capgraph::nv

namespace capgraph::hcq {
namespace {

using nv::method;
using nv::qmd_field;

// Methods shared by both engines' channels: the host class's semaphores (clc56f.h 205-233).
class nv_encoder_base : public encoder {
 public:
  nv_encoder_base(const nv::chip &chip, std::vector<uint32_t> *out)
      : encoder(out), chip_(chip), w_(out) {}

  const std::string &error() const override { return error_.empty() ? w_.error() : error_; }

  void call(uint64_t addr, uint64_t dwords) override {
    uint32_t e[2];
    const std::string why = nv::gp_entry(addr, uint32_t(dwords), true, e);
    if (!why.empty() || dwords >> 21)
      return fail(why.empty() ? "indirect push of " + std::to_string(dwords) + " words is too long"
                              : why);
    out_->insert(out_->end(), {nv::kCallToken, e[0], e[1]});
  }

 protected:
  // OPERATION RELEASE (1) or ACQ_CIRC_GEQ (3); RELEASE_WFI waits for the channel's engines to be
  // idle first; PAYLOAD_SIZE 1 = 64 bits; RELEASE_TIMESTAMP writes the clock at +8.
  void semaphore(uint64_t addr, uint64_t payload, uint32_t operation, bool wfi, bool wide,
                 bool stamp) {
    std::string e;
    w_.call(nv::kSubchannelHost, method::SEM_ADDR_LO,
            {uint32_t(addr) & ~3u, uint32_t(addr >> 32), uint32_t(payload), uint32_t(payload >> 32),
             nv::method_word(method::SEM_EXECUTE,
                             {operation, wfi ? 1u : 0u, wide ? 1u : 0u, stamp ? 1u : 0u}, &e)});
    if (addr >> 40)
      fail("semaphore address " + hex(addr) + " is above 2^40 (SEM_ADDR_HI holds 8 bits)");
    if (!e.empty()) fail(e);
  }
  void fail(const std::string &why) {
    if (error_.empty()) error_ = why;
  }

  const nv::chip &chip_;
  nv::push_writer w_;
  std::string error_;
};

class compute_encoder final : public nv_encoder_base {
 public:
  using nv_encoder_base::nv_encoder_base;

  void exec(const dispatch &x) override {
    const nv::nv_dispatch &d = x.facts_as<nv::nv_dispatch>();
    if (!x.kernargs_cpu) return fail("exec without the kernel-argument block's CPU mapping");
    setup();
    // Constant bank 0's driver area (nv_kernel.fbs): the initial stack pointer at 0x28 (top of the
    // local window less 0x240, as tinygrad writes it), and on sm_86/89 the shared and local windows
    // at 0x18 / 0x20 (sm_90 reads the shared window from hardware: nv_plan.md §2.8).
    uint8_t *cb = x.kernargs_cpu;
    const uint32_t sp = 0xfffdc0;
    memcpy(cb + 0x28, &sp, 4);
    if (chip_.sm < 90) {
      memcpy(cb + 0x18, &nv::kSharedWindow, 8);
      memcpy(cb + 0x20, &nv::kLocalWindow, 8);
    }
    const nv::qmd_version v = chip_.qmd;
    std::vector<uint32_t> q(nv::qmd_dwords(v), 0);
    const auto set = [&](qmd_field f, uint64_t value) {
      const std::string e = nv::qmd_set(q, v, f, value);
      if (!e.empty()) fail("kernel QMD: " + e);
    };
    const uint64_t cbank0 = x.kernargs, qmd = x.kernargs + d.qmd_offset;
    set(qmd_field::QMD_GROUP_ID, 0x3f);
    if (v == nv::qmd_version::V03_00) set(qmd_field::SM_GLOBAL_CACHING_ENABLE, 1);
    for (qmd_field f :
         {qmd_field::INVALIDATE_TEXTURE_HEADER_CACHE, qmd_field::INVALIDATE_TEXTURE_SAMPLER_CACHE,
          qmd_field::INVALIDATE_TEXTURE_DATA_CACHE, qmd_field::INVALIDATE_SHADER_DATA_CACHE,
          qmd_field::INVALIDATE_INSTRUCTION_CACHE, qmd_field::INVALIDATE_SHADER_CONSTANT_CACHE})
      set(f, 1);
    set(qmd_field::CWD_MEMBAR_TYPE, kMembarL1Sysmembar);
    set(qmd_field::API_VISIBLE_CALL_LIMIT, 1);  // NO_CHECK
    set(qmd_field::SAMPLER_INDEX, 1);           // INDEPENDENTLY
    set(qmd_field::QMD_MAJOR_VERSION, nv::qmd_major(v));
    set(qmd_field::QMD_MINOR_VERSION, 0);
    set(qmd_field::GRID_WIDTH, x.groups);
    set(qmd_field::GRID_HEIGHT, 1);
    set(qmd_field::GRID_DEPTH, 1);
    set(qmd_field::CTA_THREAD_DIMENSION0, d.block_x);
    set(qmd_field::CTA_THREAD_DIMENSION1, 1);
    set(qmd_field::CTA_THREAD_DIMENSION2, 1);
    set(qmd_field::REGISTER_COUNT, d.registers);
    set(qmd_field::BARRIER_COUNT, d.barriers);
    set(qmd_field::SHARED_MEMORY_SIZE, shared_size(d.shared_bytes));
    const uint32_t config = sm_config(d.shared_bytes);
    set(qmd_field::MIN_SM_CONFIG_SHARED_MEM_SIZE, config);
    set(qmd_field::TARGET_SM_CONFIG_SHARED_MEM_SIZE, config);
    set(qmd_field::MAX_SM_CONFIG_SHARED_MEM_SIZE, chip_.max_shared_kb / 4 + 1);
    set(qmd_field::SASS_VERSION, (chip_.sm / 10) << 4 | chip_.sm % 10);
    set(qmd_field::PROGRAM_ADDRESS_LOWER, uint32_t(d.program));
    set(qmd_field::PROGRAM_ADDRESS_UPPER, d.program >> 32);
    set(qmd_field::PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED, uint32_t(d.program >> 8));
    set(qmd_field::PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED, d.program >> 40);
    set(qmd_field::PROGRAM_PREFETCH_SIZE, std::min<uint64_t>((d.text_size + 255) >> 8, 0x1ff));
    set(qmd_field::CONSTANT_BUFFER0_VALID, 1);
    set(qmd_field::CONSTANT_BUFFER0_INVALIDATE, 1);
    if (v == nv::qmd_version::V03_00) {
      set(qmd_field::CONSTANT_BUFFER0_ADDR_LOWER, uint32_t(cbank0));
      set(qmd_field::CONSTANT_BUFFER0_ADDR_UPPER, cbank0 >> 32);
    } else {  // V04 holds the address >> 6
      set(qmd_field::CONSTANT_BUFFER0_ADDR_LOWER, uint32_t(cbank0 >> 6));
      set(qmd_field::CONSTANT_BUFFER0_ADDR_UPPER, cbank0 >> 38);
    }
    set(qmd_field::CONSTANT_BUFFER0_SIZE_SHIFTED4, (d.cbank0_bytes + 15) / 16);
    memcpy(x.kernargs_cpu + d.qmd_offset, q.data(), 4 * q.size());

    if (pending_ && chainable_) {
      // The previous grid schedules this one when it ends (DEPENDENT_QMD0, ACTION 1 = SCHEDULE).
      std::vector<uint32_t> prev(q.size());
      memcpy(prev.data(), pending_cpu_, 4 * prev.size());
      const auto setp = [&](qmd_field f, uint64_t value) {
        const std::string e = nv::qmd_set(prev, v, f, value);
        if (!e.empty()) fail("chained QMD: " + e);
      };
      setp(qmd_field::DEPENDENT_QMD0_POINTER, qmd >> 8);
      setp(qmd_field::DEPENDENT_QMD0_ACTION, 1);
      setp(qmd_field::DEPENDENT_QMD0_PREFETCH, 1);
      setp(qmd_field::DEPENDENT_QMD0_ENABLE, 1);
      memcpy(pending_cpu_, prev.data(), 4 * prev.size());
    } else {
      if (pending_ && barrier_) wfi();
      std::string e;
      w_.call(nv::kSubchannelCompute, method::SEND_PCAS_A, {uint32_t(qmd >> 8)});
      w_.call(nv::kSubchannelCompute, method::SEND_SIGNALING_PCAS2_B,
              {nv::method_word(method::SEND_SIGNALING_PCAS2_B, {nv::PCAS_ACTION_PREFETCH_SCHEDULE},
                               &e)});
      if (!e.empty()) fail(e);
    }
    if (qmd >> 40) fail("QMD address " + hex(qmd) + " is above 2^40");
    if (qmd % 256) fail("QMD address " + hex(qmd) + " is not 256-byte aligned");
    pending_ = true;
    chainable_ = true;
    barrier_ = false;
    release_free_ = true;
    pending_cpu_ = x.kernargs_cpu + d.qmd_offset;
  }

  void copy(uint64_t, uint64_t, uint64_t) override { fail("compute queues have no 'copy' verb"); }

  void signal(uint64_t addr, uint64_t value) override {
    methods();
    semaphore(addr, value, nv::SEM_EXECUTE_OPERATION_RELEASE, true, true, true);
  }

  void wait(uint64_t addr, uint32_t value) override {
    methods();
    semaphore(addr, value, nv::SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ, false, false, false);
  }

  void barrier() override {
    if (pending_) barrier_ = true;
  }

  void interrupt(uint64_t mailbox, uint32_t id) override {
    methods();
    semaphore(mailbox, id, nv::SEM_EXECUTE_OPERATION_RELEASE, true, false, false);
    w_.call(nv::kSubchannelHost, method::NON_STALL_INTERRUPT, {0});
  }

  void timestamp(uint64_t addr) override {
    if (pending_ && chainable_ && release_free_) {
      // When the grid ends: a four-word report (64-bit payload 0, then the clock) at addr - 8.
      std::vector<uint32_t> q(nv::qmd_dwords(chip_.qmd));
      memcpy(q.data(), pending_cpu_, 4 * q.size());
      const nv::qmd_version v = chip_.qmd;
      const uint64_t report = addr - 8;
      for (auto [f, value] : {std::pair{qmd_field::RELEASE0_ENABLE, uint64_t(1)},
                              {qmd_field::RELEASE0_STRUCTURE_SIZE, uint64_t(0)},
                              {qmd_field::RELEASE0_PAYLOAD64B, uint64_t(1)},
                              {qmd_field::RELEASE0_ADDRESS_LOWER, uint64_t(uint32_t(report))},
                              {qmd_field::RELEASE0_ADDRESS_UPPER, report >> 32},
                              {qmd_field::RELEASE0_PAYLOAD_LOWER, uint64_t(0)},
                              {qmd_field::RELEASE0_PAYLOAD_UPPER, uint64_t(0)}}) {
        const std::string e = nv::qmd_set(q, v, f, value);
        if (!e.empty()) fail("QMD release: " + e);
      }
      memcpy(pending_cpu_, q.data(), 4 * q.size());
      release_free_ = false;
      return;
    }
    methods();
    semaphore(addr - 8, 0, nv::SEM_EXECUTE_OPERATION_RELEASE, true, true, true);
  }

 private:
  // CWD_MEMBAR_TYPE L1_SYSMEMBAR: the grid's writes reach memory every engine and the CPU see
  // before it counts as done (clc6c0qmd.h CWD_MEMBAR_TYPE; tinygrad sets it).
  static constexpr uint32_t kMembarL1Sysmembar = 1;

  // Once per push buffer, before the first compute method: the compute object on its subchannel,
  // the windows, and fresh caches (the CPU wrote inputs since the last replay).
  void setup() {
    if (set_up_) return;
    set_up_ = true;
    std::string e;
    w_.call(nv::kSubchannelCompute, method::SET_OBJECT,
            {nv::method_word(method::SET_OBJECT, {chip_.compute_class, 0}, &e)});
    w_.call(nv::kSubchannelCompute, method::SET_SHADER_SHARED_MEMORY_WINDOW_A,
            {uint32_t(nv::kSharedWindow >> 32), uint32_t(nv::kSharedWindow)});
    w_.call(nv::kSubchannelCompute, method::SET_SHADER_LOCAL_MEMORY_WINDOW_A,
            {uint32_t(nv::kLocalWindow >> 32), uint32_t(nv::kLocalWindow)});
    w_.call(nv::kSubchannelCompute, method::INVALIDATE_SHADER_CACHES_NO_WFI,
            {nv::method_word(method::INVALIDATE_SHADER_CACHES_NO_WFI, {1, 1, 1}, &e)});
    if (!e.empty()) fail(e);
  }
  // A method goes between the pending launch and the next: no chaining past it, and an ordered
  // barrier becomes a wait for idle here.
  void methods() {
    if (pending_ && barrier_) wfi();
    chainable_ = false;
  }
  void wfi() {
    w_.call(nv::kSubchannelHost, method::WFI, {0});
    pending_ = false;
    barrier_ = false;
  }
  static uint32_t shared_size(uint32_t bytes) { return (bytes + 255) / 256 * 256; }
  // The carve-out in 4 KB units plus one, from the sizes Ampere and later offer (tinygrad ops_nv.py
  // picks 32, 64 or 100 KB; Hopper offers more, which the kernel's own need bounds).
  uint32_t sm_config(uint32_t bytes) const {
    uint32_t kb = 32;
    while (kb * 1024 < bytes && kb < chip_.max_shared_kb)
      kb = kb < 64 ? 64 : kb < 100 ? 100 : chip_.max_shared_kb;
    return kb / 4 + 1;
  }

  bool set_up_ = false;
  bool pending_ = false;    // a grid was launched and nothing since waited for it
  bool chainable_ = false;  // no method since it: the next launch may chain to it
  bool barrier_ = false;    // the next work must see its writes
  bool release_free_ = false;
  uint8_t *pending_cpu_ = nullptr;
};

class copy_encoder final : public nv_encoder_base {
 public:
  using nv_encoder_base::nv_encoder_base;

  void exec(const dispatch &) override { fail("copy queues have no 'exec' verb"); }

  void copy(uint64_t dst, uint64_t src, uint64_t size) override {
    setup();
    constexpr uint64_t kMax = 1ull << 31;  // LINE_LENGTH_IN is 32 bits; tinygrad splits at 2 GB
    for (uint64_t done = 0; done < size;) {
      const uint64_t n = size - done < kMax ? size - done : kMax;
      const uint64_t s = src + done, d = dst + done;
      w_.call(nv::kSubchannelCopy, method::OFFSET_IN_UPPER,
              {uint32_t(s >> 32), uint32_t(s), uint32_t(d >> 32), uint32_t(d)});
      w_.call(nv::kSubchannelCopy, method::LINE_LENGTH_IN, {uint32_t(n), 1});
      launch(nv::LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED, 0, true);
      done += n;
    }
  }

  void signal(uint64_t addr, uint64_t value) override {
    // A copy-engine semaphore holds a 32-bit payload; signals a device waits on stay small
    // (encoder.h), and the timeline lives on the compute queue.
    if (value >> 32)
      fail("copy-engine signal value " + std::to_string(value) + " does not fit 32 bits");
    release(addr, uint32_t(value));
  }

  void wait(uint64_t addr, uint32_t value) override {
    semaphore(addr, value, nv::SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ, false, false, false);
  }

  // The copy engine runs non-pipelined launches in order, each after the one before completed.
  void barrier() override {}

  void interrupt(uint64_t mailbox, uint32_t id) override {
    semaphore(mailbox, id, nv::SEM_EXECUTE_OPERATION_RELEASE, true, false, false);
    w_.call(nv::kSubchannelHost, method::NON_STALL_INTERRUPT, {0});
  }

  void timestamp(uint64_t addr) override { release(addr - 8, 0); }

 private:
  void setup() {
    if (set_up_) return;
    set_up_ = true;
    std::string e;
    w_.call(nv::kSubchannelCopy, method::SET_OBJECT_HOST,
            {nv::method_word(method::SET_OBJECT_HOST, {chip_.copy_class, 0}, &e)});
    if (!e.empty()) fail(e);
  }
  // A four-word semaphore report (payload, then the clock at +8) after the copies before it.
  void release(uint64_t addr, uint32_t payload) {
    setup();
    w_.call(nv::kSubchannelCopy, method::SET_SEMAPHORE_A,
            {uint32_t(addr >> 32), uint32_t(addr), payload});
    launch(0, nv::LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE, false);
  }
  void launch(uint32_t transfer, uint32_t semaphore, bool data) {
    std::string e;
    // DATA_TRANSFER_TYPE, FLUSH_ENABLE, SEMAPHORE_TYPE, INTERRUPT_TYPE, SRC/DST_MEMORY_LAYOUT
    // (PITCH), MULTI_LINE_ENABLE, FLUSH_TYPE (0 = SYS).
    const uint32_t layout = data ? nv::LAUNCH_DMA_MEMORY_LAYOUT_PITCH : 0;
    w_.call(nv::kSubchannelCopy, method::LAUNCH_DMA,
            {nv::method_word(method::LAUNCH_DMA, {transfer, 1, semaphore, 0, layout, layout, 0, 0},
                             &e)});
    if (!e.empty()) fail(e);
  }
  bool set_up_ = false;
};

bool in_range(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

std::string format_kernel(uint32_t i, const fb::Kernel *k) {
  return "kernel " + std::to_string(i) + " '" + k->name()->str() + "'";
}

bool nv_kernel_check(const fb::Capture *c, uint32_t i, std::string *why) {
  const fb::Kernel *k = c->kernels()->Get(i);
  const std::string what = format_kernel(i, k);
  const fb::Program *p = c->programs()->Get(k->program());
  if (p->format() != fb::ProgramFormat::nv_cubin)
    return *why = what + ": its program is not an nv_cubin", false;
  const fb::NvKernel *n = k->facts_as_NvKernel();
  if (!n) return *why = what + ": no NvKernel launch facts", false;
  const nv::chip *chip = nv_capture_chip(c->target()->name()->c_str());
  if (!chip || n->sm() != chip->sm)
    return *why = what + ": built for sm_" + std::to_string(n->sm()) +
                  ", the capture's target is " + c->target()->name()->str(),
           false;
  if (n->qmd_version() != nv::qmd_major(chip->qmd))
    return *why = what + ": qmd_version " + std::to_string(n->qmd_version()) + " is not " +
                  chip->name + "'s",
           false;
  if (!in_range(n->text_offset(), n->text_size(), p->binary()->size()) || n->text_size() == 0)
    return *why = what + ": its code [text_offset, +text_size) lies outside its cubin", false;
  if (n->text_align() == 0 || n->text_align() > 4096 || (n->text_align() & (n->text_align() - 1)) ||
      n->text_offset() % n->text_align())
    return *why = what + ": text_align " + std::to_string(n->text_align()) +
                  " is not a power of two up to 4096 dividing text_offset",
           false;
  if (n->block_x() < 1 || n->block_x() > 1024 || n->block_y() != 1 || n->block_z() != 1)
    return *why = what + ": block " + std::to_string(n->block_x()) + "x" +
                  std::to_string(n->block_y()) + "x" + std::to_string(n->block_z()) +
                  " is not N x 1 x 1 with N in 1..1024",
           false;
  if (n->registers() > 255)
    return *why = what + ": " + std::to_string(n->registers()) + " registers (at most 255)", false;
  if (n->barriers() > 16)
    return *why = what + ": " + std::to_string(n->barriers()) + " barriers (at most 16)", false;
  if (n->shared_bytes() > chip->max_shared_kb * 1024)
    return *why = what + ": " + std::to_string(n->shared_bytes()) +
                  " bytes of shared memory, more than " + chip->family + " offers",
           false;
  const uint64_t args = 8ull * (uint64_t(k->num_buffers()) + k->num_scalars());
  if (n->cbank0_bytes() > 0x10000 || !in_range(n->param_offset(), args, n->cbank0_bytes()) ||
      n->param_bytes() < args || n->param_offset() < 0x30 || n->param_offset() % 8)
    return *why = what + ": its parameters (param_offset " + std::to_string(n->param_offset()) +
                  ", " + std::to_string(args) + " bytes for " + std::to_string(k->num_buffers()) +
                  " buffers and " + std::to_string(k->num_scalars()) +
                  " scalars) do not fit constant bank 0 of " + std::to_string(n->cbank0_bytes()) +
                  " bytes",
           false;
  return true;
}

capgraph_status nv_kernel_resolve(const fb::Capture *c, uint32_t index, uint64_t program_gpu,
                                  dispatch *out, std::string *err) {
  const fb::Kernel *k = c->kernels()->Get(index);
  const fb::NvKernel *n = k->facts_as_NvKernel();
  const std::string what = format_kernel(index, k);
  const uint64_t local = std::max(n->frame_bytes(), n->min_stack_bytes());
  if (local || n->crs_stack_bytes()) {
    *err = what + ": needs " + std::to_string(local) + " bytes of local memory (and " +
           std::to_string(n->crs_stack_bytes()) +
           " of call stack) per thread, which this runtime does not set up yet";
    return CAPGRAPH_ERR_FORMAT;
  }
  const uint64_t program = program_gpu + n->text_offset();
  if (program % 128) {
    *err = what + ": its code lands at " + hex(program) + ", not 128-byte aligned";
    return CAPGRAPH_ERR_FORMAT;
  }
  const nv::chip &chip = *nv_capture_chip(c->target()->name()->c_str());
  nv::nv_dispatch &d = out->facts_as<nv::nv_dispatch>();
  d.program = program;
  d.text_size = uint32_t(n->text_size());
  d.cbank0_bytes = n->cbank0_bytes();
  d.qmd_offset = (n->cbank0_bytes() + 255) / 256 * 256;
  d.registers = n->registers();
  d.barriers = n->barriers();
  d.shared_bytes = n->shared_bytes();
  d.block_x = n->block_x();
  out->workgroup_size = n->block_x();
  out->kernarg_offset = n->param_offset();
  out->kernarg_size = d.qmd_offset + 4 * nv::qmd_dwords(chip.qmd);
  out->kernarg_align = 256;
  return CAPGRAPH_OK;
}

bool nv_capture_matches(const char *t) { return nv_capture_chip(t) != nullptr; }

capgraph_status nv_device_check(const fb::Capture *c, transport *dev, std::string *why) {
  const nv::chip *chip = nv_capture_chip(c->target()->name()->c_str());
  if (!chip) {
    *why = "target '" + c->target()->name()->str() + "' is not an NVIDIA GPU this runtime knows";
    return CAPGRAPH_ERR_TARGET;
  }
  if (dev->chip_name() != chip->name) {
    *why = std::string("compiled for nv-") + chip->name + ", but the device " + dev->name() +
           " is " + dev->chip_name();
    return CAPGRAPH_ERR_TARGET;
  }
  return CAPGRAPH_OK;
}

std::unique_ptr<encoder> nv_encoder_create(const fb::Capture *c, queue_kind kind,
                                           std::vector<uint32_t> *out) {
  return nv_encoder(*nv_capture_chip(c->target()->name()->c_str()), kind, out);
}

}  // namespace

std::unique_ptr<encoder> nv_encoder(const nv::chip &chip, queue_kind kind,
                                    std::vector<uint32_t> *out) {
  if (kind == queue_kind::compute) return std::make_unique<compute_encoder>(chip, out);
  return std::make_unique<copy_encoder>(chip, out);
}

const nv::chip *nv_capture_chip(const char *target_name) {
  if (strncmp(target_name, "nv-", 3) != 0) return nullptr;
  return nv::chip_find(target_name + 3);
}

const target nv_target = {"nv",
                          fb::ProgramFormat::nv_cubin,
                          &nv_capture_matches,
                          &nv::chip_names,
                          &nv_kernel_check,
                          &nv_device_check,
                          &nv_kernel_resolve,
                          &nv_encoder_create,
                          16};

// Called by the runtime's generated targets_builtin_register (CAPGRAPH_TARGETS holds "nv").
void target_nv_register() {
  target_register("nv", &nv::nv_open, &nv_target, [] { return nv::nv_devices_describe(); });
  // "nvidia" names the same devices (issue 15 spells it so); described once, under "nv".
  target_register("nvidia", &nv::nv_open, &nv_target);
}

}  // namespace capgraph::hcq
