#include "graph.h"

#include <cstring>

#include "signal.h"

namespace capgraph::hcq {
namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// The device held alone for a replay or a load (transport::exclusive).
struct device_turn {
  explicit device_turn(transport *d) : dev(d) { dev->exclusive(true); }
  ~device_turn() { dev->exclusive(false); }
  transport *dev;
};

constexpr uint64_t k_ring_bytes = 64 * 1024;

}  // namespace

graph::~graph() {
  if (!dev_) return;
  // A replay still running would write into memory freed below: give it its bound first.
  if (submitted_) {
    std::string ignored;
    auto *sig = reinterpret_cast<signal *>(signals_.cpu + slot_timeline);
    dev_->wait(&sig->value, timeline_, opt_.timeout_ns, &ignored);
  }
  if (has_copy_queue_) dev_->queue_destroy(copy_);
  if (compute_.ring.size) dev_->queue_destroy(compute_);
  for (memory &m : imports_) dev_->free(m);
  for (memory *m : {&scratch_, &stamps_, &ib_, &signals_, &kernargs_, &code_, &weights_, &arena_})
    if (m->size) dev_->free(*m);
}

capgraph_status graph::build(transport *dev, const target *t, const fb::Capture *c,
                             const char *label, const graph_options &opt,
                             std::unique_ptr<graph> *out, std::string *err) {
  std::string why;
  capgraph_status st = t->device_check(c, dev, &why);
  if (st == CAPGRAPH_OK) {
    device_turn turn(dev);
    auto g = std::make_unique<graph>();
    g->dev_ = dev;
    g->target_ = t;
    g->opt_ = opt;
    g->timeline_ = opt.timeline_start;
    std::vector<uint64_t> program_gpu, kernarg_at;
    std::vector<dispatch> kernels;
    if ((st = g->memory_load(c, &program_gpu, &why)) == CAPGRAPH_OK &&
        (st = g->kernels_resolve(c, program_gpu, &kernels, &why)) == CAPGRAPH_OK &&
        (st = g->kernargs_place(c, kernels, &kernarg_at, &why)) == CAPGRAPH_OK &&
        (st = g->commands_record(c, kernels, kernarg_at, &why)) == CAPGRAPH_OK &&
        (st = g->device_ready(c, &why)) == CAPGRAPH_OK) {
      *out = std::move(g);
      return CAPGRAPH_OK;
    }
  }
  *err = std::string(label) + ": " + why;
  return st;
}

capgraph_status graph::alloc_visible(uint64_t size, memory_kind kind, memory *m, const char *what,
                                     std::string *err) {
  std::string why;
  capgraph_status s = dev_->alloc(align_up(size ? size : 1, 4096), kind, m, &why);
  if (s != CAPGRAPH_OK) {
    *err = std::string("cannot allocate the ") + what + ": " + why;
  } else if (!m->cpu) {  // a shadowed transport gives host shadows
    *err = std::string("the ") + what + " is not CPU-visible on " + dev_->name();
    s = CAPGRAPH_ERR_DEVICE;
  }
  return s;
}

uint64_t graph::address(const fb::BufferRef &b) const {
  return b.space() == fb::Space::arena ? arena_.gpu + b.offset()
                                       : weights_.gpu + weight_at_[b.index()] + b.offset();
}

// The arena, the weights and the code objects in device memory; the device's capture_attach
// hook (fakes); the target's scratch memory.
capgraph_status graph::memory_load(const fb::Capture *c, std::vector<uint64_t> *program_gpu,
                                   std::string *err) {
  // The arena: inputs and outputs are read and written in place through the CPU mapping.
  capgraph_status st = alloc_visible(c->arena_size(), memory_kind::device, &arena_, "arena", err);
  if (st != CAPGRAPH_OK) return st;
  memset(arena_.cpu, 0, arena_.size);

  // Weights, each 256-byte aligned.
  uint64_t total = 0;
  const uint32_t nweights = c->weights() ? c->weights()->size() : 0;
  for (uint32_t i = 0; i < nweights; ++i) {
    weight_at_.push_back(total);
    total = align_up(total + c->weights()->Get(i)->data()->size(), 256);
  }
  if ((st = alloc_visible(total, memory_kind::device, &weights_, "weights", err)) != CAPGRAPH_OK)
    return st;
  for (uint32_t i = 0; i < nweights; ++i) {
    const auto *d = c->weights()->Get(i)->data();
    memcpy(weights_.cpu + weight_at_[i], d->data(), d->size());
  }

  // Code objects, copied as they are (their kernels are found through descriptor offsets).
  // Host twins (elf_relocatable programs) stay on the host: program_gpu is 0 for them.
  std::vector<uint64_t> program_at;
  total = 0;
  const uint32_t nprograms = c->programs() ? c->programs()->size() : 0;
  for (uint32_t i = 0; i < nprograms; ++i) {
    const fb::Program *p = c->programs()->Get(i);
    program_at.push_back(total);
    if (p->format() == target_->program_format) total = align_up(total + p->binary()->size(), 4096);
  }
  if ((st = alloc_visible(total, memory_kind::code, &code_, "code objects", err)) != CAPGRAPH_OK)
    return st;
  for (uint32_t i = 0; i < nprograms; ++i) {
    const fb::Program *p = c->programs()->Get(i);
    const bool gpu = p->format() == target_->program_format;
    if (gpu) memcpy(code_.cpu + program_at[i], p->binary()->data(), p->binary()->size());
    program_gpu->push_back(gpu ? code_.gpu + program_at[i] : 0);
  }
  if (opt_.capture_attach && (st = opt_.capture_attach(c, *program_gpu, err)) != CAPGRAPH_OK)
    return st;

  // Scratch memory the target's kernels share (private memory), once.
  if (const uint64_t bytes = target_->scratch_bytes ? target_->scratch_bytes(c) : 0) {
    std::string why;
    if ((st = dev_->alloc(align_up(bytes, 4096), memory_kind::device, &scratch_, &why)) !=
        CAPGRAPH_OK) {
      *err = "cannot allocate " + std::to_string(bytes) + " bytes of scratch memory: " + why;
      return st;
    }
  }
  return CAPGRAPH_OK;
}

// Each kernel's launch facts resolved against its program's device address, by the target.
capgraph_status graph::kernels_resolve(const fb::Capture *c,
                                       const std::vector<uint64_t> &program_gpu,
                                       std::vector<dispatch> *kernels, std::string *err) {
  const uint32_t nkernels = c->kernels() ? c->kernels()->size() : 0;
  for (uint32_t i = 0; i < nkernels; ++i) {
    dispatch d;
    const uint32_t prog = c->kernels()->Get(i)->program();
    if (capgraph_status st = target_->kernel_resolve(c, i, program_gpu[prog], &d, err);
        st != CAPGRAPH_OK)
      return st;
    d.scratch = scratch_.gpu;
    kernels->push_back(d);
  }
  return CAPGRAPH_OK;
}

// Kernel-argument blocks: buffer addresses, then scalars, 8 bytes each (capture.fbs, the
// KernelFacts tables); their size and alignment come from the target. Then the signals and the
// step timestamps.
capgraph_status graph::kernargs_place(const fb::Capture *c, const std::vector<dispatch> &kernels,
                                      std::vector<uint64_t> *kernarg_at, std::string *err) {
  uint64_t total = 0;
  for (const fb::Step *s : *c->steps()) {
    if (s->kind() != fb::StepKind::launch) {
      kernarg_at->push_back(0);
      continue;
    }
    const dispatch &d = kernels[s->launch()->kernel()];
    total = align_up(total, d.kernarg_align < 16 ? 16 : d.kernarg_align);
    kernarg_at->push_back(total);
    total += d.kernarg_size;
  }
  capgraph_status st = alloc_visible(total, memory_kind::host, &kernargs_, "kernel arguments", err);
  if (st != CAPGRAPH_OK) return st;
  memset(kernargs_.cpu, 0, kernargs_.size);
  if ((st = alloc_visible(4096, memory_kind::host, &signals_, "signals", err)) != CAPGRAPH_OK)
    return st;
  memset(signals_.cpu, 0, signals_.size);
  reinterpret_cast<signal *>(signals_.cpu + slot_timeline)->value = timeline_;
  steps_ = c->steps()->size();
  if ((st = alloc_visible(target_->stamp_bytes * (steps_ + 1), memory_kind::host, &stamps_,
                          "timestamps", err)) != CAPGRAPH_OK)
    return st;
  memset(stamps_.cpu, 0, stamps_.size);
  launch_dispatch_.resize(steps_);
  return CAPGRAPH_OK;
}

// Record. Launches go to the compute queue, with a barrier between them (each may read what the
// one before wrote). A run of copies goes to the copy queue: compute signals the sync value k,
// the copy queue waits for k, copies, signals k + 1, compute waits for k + 1. Where the target
// records copies in the compute stream (target::copies_in_compute), the same handshake goes into
// that one stream, in order.
capgraph_status graph::commands_record(const fb::Capture *c, const std::vector<dispatch> &kernels,
                                       const std::vector<uint64_t> &kernarg_at, std::string *err) {
  const target *t = target_;
  const uint64_t stride = t->stamp_bytes;
  const uint64_t stamps =
      stamps_.gpu + stride - 8;  // the clock of slot i is at stamps + stride * i
  std::unique_ptr<encoder> run = t->encoder_create(c, queue_kind::compute, &ib_words_);
  std::unique_ptr<encoder> copy_queue =
      t->copies_in_compute ? nullptr : t->encoder_create(c, queue_kind::copy, &copy_words_);
  encoder *copies = t->copies_in_compute ? run.get() : copy_queue.get();
  const uint64_t sig = signals_.gpu;
  run->timestamp(stamps);
  uint32_t sync = 0;
  bool in_copies = false, first = true;
  for (uint32_t i = 0; i < c->steps()->size(); ++i) {
    const fb::Step *s = c->steps()->Get(i);
    if (s->kind() == fb::StepKind::copy) {
      if (!in_copies) {
        run->signal(sig + slot_sync, ++sync);
        copies->wait(sig + slot_sync, sync);
        in_copies = true;
      }
      const fb::Copy *cp = s->copy();
      if (cp->size()) copies->copy(address(*cp->dst()), address(*cp->src()), cp->size());
      for (const fb::BufferRef *b : {cp->dst(), cp->src()})
        if (b->space() == fb::Space::arena) copy_ranges_.push_back({b->offset(), cp->size()});
      copies->timestamp(stamps + stride * (i + 1));
      continue;
    }
    if (in_copies) {
      copies->signal(sig + slot_sync, ++sync);
      run->wait(sig + slot_sync, sync);
      in_copies = false;
      run->barrier();  // the copies' writes visible to the kernels
    } else if (!first) {
      run->barrier();
    }
    first = false;
    dispatch d;
    if (capgraph_status st = launch_prepare(i, s->launch(), kernels, kernarg_at, &d, err);
        st != CAPGRAPH_OK)
      return st;
    if (d.groups) run->exec(d);
    launch_dispatch_[i] = d;
    run->timestamp(stamps + stride * (i + 1));  // when this dispatch has finished
  }
  if (in_copies) {
    copies->signal(sig + slot_sync, ++sync);
    run->wait(sig + slot_sync, sync);
  }
  for (encoder *e : {run.get(), copies})
    if (!e->error().empty()) {
      *err = "encoding: " + e->error();
      return CAPGRAPH_ERR_FORMAT;
    }
  return CAPGRAPH_OK;
}

// Step `step`'s launch: its kernel-argument block filled (each arena address remembered for
// bind()) and its dispatch completed with the block's address and the workgroup count.
capgraph_status graph::launch_prepare(uint32_t step, const fb::Launch *l,
                                      const std::vector<dispatch> &kernels,
                                      const std::vector<uint64_t> &kernarg_at, dispatch *out,
                                      std::string *err) {
  dispatch d = kernels[l->kernel()];
  uint8_t *args = kernargs_.cpu + kernarg_at[step] + d.kernarg_offset;
  for (uint32_t b = 0; b < l->buffers()->size(); ++b) {
    const uint64_t a = address(*l->buffers()->Get(b));
    memcpy(args + 8 * b, &a, 8);
    if (l->buffers()->Get(b)->space() == fb::Space::arena)
      patch_sites_.push_back(
          {kernarg_at[step] + d.kernarg_offset + 8 * b, l->buffers()->Get(b)->offset()});
  }
  if (l->scalars())
    for (uint32_t v = 0; v < l->scalars()->size(); ++v) {
      const int64_t x = l->scalars()->Get(v);
      memcpy(args + 8 * (l->buffers()->size() + v), &x, 8);
    }
  d.kernargs = kernargs_.gpu + kernarg_at[step];
  d.kernargs_cpu = kernargs_.cpu + kernarg_at[step];
  const uint64_t groups = (l->work_size() + d.workgroup_size - 1) / d.workgroup_size;
  if (groups > 0xffffffffull) {
    *err = "step " + std::to_string(step) + ": " + std::to_string(groups) +
           " workgroups do not fit one dispatch";
    return CAPGRAPH_ERR_FORMAT;
  }
  d.groups = uint32_t(groups);
  *out = d;
  return CAPGRAPH_OK;
}

// The recorded commands into device memory, everything over once on a shadowed transport, the
// queues, the interrupt, and room for the per-replay ring packets (so replay never allocates).
capgraph_status graph::device_ready(const fb::Capture *c, std::string *err) {
  capgraph_status st =
      alloc_visible(ib_words_.size() * 4, memory_kind::host, &ib_, "command buffer", err);
  if (st != CAPGRAPH_OK) return st;
  memcpy(ib_.cpu, ib_words_.data(), ib_words_.size() * 4);

  std::string why;
  shadowed_ = dev_->shadowed();
  if (shadowed_) {  // device memory the CPU cannot map: everything written above goes over now
    for (memory *m : {&arena_, &weights_, &code_, &kernargs_, &signals_, &stamps_, &ib_})
      if ((st = dev_->upload(*m, 0, m->size, &why)) != CAPGRAPH_OK) {
        *err = "cannot write device memory: " + why;
        return st;
      }
    for (const fb::TensorInfo *ti : *c->inputs()) inputs_.push_back({ti->offset(), ti->size()});
    for (const fb::TensorInfo *ti : *c->outputs()) outputs_.push_back({ti->offset(), ti->size()});
    patched_.reserve(patch_sites_.size());
  }
  if ((st = dev_->queue_create(queue_kind::compute, k_ring_bytes, &compute_, &why)) !=
      CAPGRAPH_OK) {
    *err = "cannot create the compute queue: " + why;
    return st;
  }
  if (!copy_words_.empty()) {
    uint64_t ring = k_ring_bytes;
    while (ring < 2 * 4 * copy_words_.size()) ring *= 2;
    if ((st = dev_->queue_create(queue_kind::copy, ring, &copy_, &why)) != CAPGRAPH_OK) {
      *err = "cannot create the copy queue: " + why;
      return st;
    }
    has_copy_queue_ = true;
  }
  interrupt_ = dev_->interrupt_target(&interrupt_mailbox_, &interrupt_id_);
  ring_words_.reserve(64);
  ring_encoder_ = target_->encoder_create(c, queue_kind::compute, &ring_words_);
  return CAPGRAPH_OK;
}

capgraph_status graph::shadow_inputs_upload(std::string *err) {
  capgraph_status st = CAPGRAPH_OK;
  for (uint64_t at : patched_)
    if (st == CAPGRAPH_OK) st = dev_->upload(kernargs_, at, 8, err);
  patched_.clear();
  for (const auto &[at, bytes] : inputs_)
    if (st == CAPGRAPH_OK && bytes) st = dev_->upload(arena_, at, bytes, err);
  return st;
}

capgraph_status graph::replay(std::string *err) noexcept {
  device_turn turn(dev_);
  auto *timeline = reinterpret_cast<signal *>(signals_.cpu + slot_timeline);
  auto *sync = reinterpret_cast<signal *>(signals_.cpu + slot_sync);
  words_written_ = words_pending_;
  words_pending_ = 0;
  // The previous replay must be done before its signals and rings are reused.
  if (submitted_) {
    capgraph_status st = dev_->wait(&timeline->value, timeline_, opt_.timeout_ns, err);
    if (st != CAPGRAPH_OK) return st;
  }
  sync->value = 0;
  words_written_ += 2;
  if (shadowed_) {  // what the CPU wrote into the shadows since the last replay goes over
    capgraph_status st = CAPGRAPH_OK;
    if (has_copy_queue_) st = dev_->upload(signals_, slot_sync, 8, err);
    if (st == CAPGRAPH_OK) st = shadow_inputs_upload(err);
    if (st != CAPGRAPH_OK) return st;
  }
  if (has_copy_queue_)
    words_written_ += dev_->submit(copy_, copy_words_.data(), copy_words_.size());
  // Compute ring: call the recorded commands, then raise the timeline.
  const uint64_t next = timeline_ + 1;
  ring_words_.clear();
  ring_encoder_->call(ib_.gpu, ib_words_.size());
  ring_encoder_->signal(signals_.gpu + slot_timeline, next);
  if (interrupt_) ring_encoder_->interrupt(interrupt_mailbox_, interrupt_id_);
  words_written_ += dev_->submit(compute_, ring_words_.data(), ring_words_.size());
  timeline_ = next;
  submitted_ = true;
  capgraph_status st = dev_->wait(&timeline->value, next, opt_.timeout_ns, err);
  for (const auto &[at, bytes] : outputs_)
    if (st == CAPGRAPH_OK && bytes) st = dev_->download(arena_, at, bytes, err);
  return st;
}

capgraph_status graph::bind(uint64_t offset, uint64_t size, void *host, uint64_t host_bytes,
                            std::string *err) {
  if (host && host_bytes < size) {
    *err = "a buffer of " + std::to_string(host_bytes) + " bytes for " + std::to_string(size) +
           " bytes";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  for (const auto &[at, bytes] : copy_ranges_)
    if (at < offset + size && offset < at + bytes) {
      *err = "a copy step reads or writes it (its address is inside the recorded commands)";
      return CAPGRAPH_ERR_ARGUMENT;
    }
  if (submitted_) {  // the launches about to be patched may still be running
    auto *timeline = reinterpret_cast<signal *>(signals_.cpu + slot_timeline);
    capgraph_status st = dev_->wait(&timeline->value, timeline_, opt_.timeout_ns, err);
    if (st != CAPGRAPH_OK) return st;
  }
  uint64_t base = arena_.gpu + offset;
  if (host) {
    const memory *found = nullptr;
    for (const memory &m : imports_)
      if (m.cpu == host && m.size >= host_bytes) found = &m;
    if (!found) {
      // A camera rotates through a few buffers; more than this is a caller binding fresh memory
      // every frame, which would pin memory without bound.
      if (imports_.size() >= 64) {
        *err = "64 caller buffers are already imported; bind the same buffers again";
        return CAPGRAPH_ERR_ARGUMENT;
      }
      memory m;
      capgraph_status st = dev_->import(host, host_bytes, &m, err);
      if (st != CAPGRAPH_OK) return st;
      imports_.push_back(m);
      found = &imports_.back();
    }
    base = found->gpu;
  }
  for (const patch_site &p : patch_sites_)
    if (p.arena_offset >= offset && p.arena_offset < offset + size) {
      const uint64_t a = base + (p.arena_offset - offset);
      memcpy(kernargs_.cpu + p.kernarg_at, &a, 8);
      words_pending_ += 2;
      if (shadowed_) patched_.push_back(p.kernarg_at);
    }
  return CAPGRAPH_OK;
}

void graph::step_times(uint64_t *step_ns) const noexcept {
  const double ns_per_tick = 1e9 / double(dev_->clock_hz());
  const uint64_t stride = target_->stamp_bytes;
  uint64_t prev;
  memcpy(&prev, stamps_.cpu + stride - 8, 8);
  for (uint32_t i = 0; i < steps_; ++i) {
    uint64_t t;
    memcpy(&t, stamps_.cpu + stride * (i + 1) + stride - 8, 8);
    step_ns[i] = t >= prev ? uint64_t(double(t - prev) * ns_per_tick) : 0;
    prev = t;
  }
}

}  // namespace capgraph::hcq
