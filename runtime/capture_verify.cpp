#include "capture_verify.h"

#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "capture_hash.h"
#include "cpu_target.h"
#include "elf_link.h"
#include "hcq/target.h"

namespace capgraph {

size_t dtype_size(fb::DType t) {
  switch (t) {
    case fb::DType::f32: return 4;
    case fb::DType::f16: return 2;
    case fb::DType::f64: return 8;
    case fb::DType::i8: return 1;
    case fb::DType::u8: return 1;
    case fb::DType::i16: return 2;
    case fb::DType::i32: return 4;
    case fb::DType::i64: return 8;
    case fb::DType::boolean: return 1;
    case fb::DType::bf16: return 2;
    case fb::DType::u16: return 2;
    case fb::DType::u32: return 4;
    case fb::DType::u64: return 8;
  }
  return 0;
}

namespace {

bool in_range(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

class semantic_check {
 public:
  semantic_check(const fb::Capture *c, const char *label, std::string *err,
                 const hcq::target *device, const load_limits &limits)
      : c_(c), label_(label), err_(err), device_(device), limits_(limits) {}

  bool run() {
    if (!vectors_aligned_check()) return false;
    threads_ = c_->threads();
    if (threads_ < 1 || threads_ > k_max_threads)
      return fail("threads is %u; it must be 1 to %u", threads_, k_max_threads);
    arena_ = c_->arena_size();
    if (arena_ > limits_.max_arena_bytes)
      return fail(
          "the arena is %llu bytes, more than the %llu this runtime allows "
          "(CAPGRAPH_MAX_ARENA_BYTES)",
          (unsigned long long)arena_, (unsigned long long)limits_.max_arena_bytes);
    if (c_->buffers())
      for (uint32_t i = 0; i < c_->buffers()->size(); ++i) {
        const fb::PlannedBuffer *b = c_->buffers()->Get(i);
        if (!in_range(b->offset(), b->size(), arena_))
          return fail(
              "planned buffer %u '%s' (offset %llu, %llu bytes) is outside the arena "
              "(%llu bytes)",
              i, b->name() ? b->name()->c_str() : "", (unsigned long long)b->offset(),
              (unsigned long long)b->size(), (unsigned long long)arena_);
      }
    return tensors_check(c_->inputs(), "input") && tensors_check(c_->outputs(), "output") &&
           programs_check() && kernels_check() && steps_check();
  }

 private:
  __attribute__((format(printf, 2, 3))) bool fail(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    *err_ = std::string(label_) + ": " + buf;
    return false;
  }

  // flatbuffers 2.0.8's Verifier checks a vector's alignment only for its 4-byte length, and its
  // readers dereference elements in place: a vector of 8-byte elements 4 bytes off would be read
  // misaligned (UB, a fault on some CPUs). The compiler's builder always aligns them; refuse the
  // rest. `data` is 8-byte aligned (capture_verify's contract), so an address's alignment is its
  // offset's.
  template <class T>
  bool aligned(const flatbuffers::Vector<T> *v, const char *what, uint32_t i) {
    // An empty vector is never read (and flatbuffers does not align one: a scalar's shape).
    if (!v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->Data()) % 8 == 0) return true;
    return fail("%s %u is not 8-byte aligned in the file", what, i);
  }

  bool vectors_aligned_check() {
    for (const auto *list : {c_->inputs(), c_->outputs()})
      for (uint32_t i = 0; i < list->size(); ++i)
        if (!aligned(list->Get(i)->shape(), "the shape of tensor", i)) return false;
    if (c_->kernels())
      for (uint32_t i = 0; i < c_->kernels()->size(); ++i) {
        const fb::KernelBounds *b = c_->kernels()->Get(i)->bounds();
        if (b && (!aligned(b->buffer_sizes(), "the bounds' buffer_sizes of kernel", i) ||
                  !aligned(b->scalars(), "the bounds' scalars of kernel", i)))
          return false;
      }
    for (uint32_t i = 0; i < c_->steps()->size(); ++i) {
      const fb::Launch *l = c_->steps()->Get(i)->launch();
      if (l && (!aligned(l->buffers(), "the buffers of step", i) ||
                !aligned(l->scalars(), "the scalars of step", i) ||
                !aligned(l->partition(), "the partition of step", i) ||
                !aligned(l->buffer_sizes(), "the buffer_sizes of step", i)))
        return false;
    }
    return true;
  }

  bool tensors_check(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *list,
                     const char *kind) {
    std::set<std::string> names;
    for (uint32_t i = 0; i < list->size(); ++i) {
      const fb::TensorInfo *t = list->Get(i);
      const char *name = t->name()->c_str();
      if (!names.insert(name).second)
        return fail("%s %u '%s': the name is used twice", kind, i, name);
      const size_t elem = dtype_size(t->dtype());
      if (!elem) return fail("%s '%s': unknown dtype %u", kind, name, unsigned(t->dtype()));
      if (t->shape()->size() > CAPGRAPH_MAX_RANK)
        return fail("%s '%s': rank %u is more than %d", kind, name, t->shape()->size(),
                    CAPGRAPH_MAX_RANK);
      uint64_t bytes = elem;
      for (int64_t d : *t->shape()) {
        if (d < 0) return fail("%s '%s': dimension %lld is negative", kind, name, (long long)d);
        if (d && bytes > UINT64_MAX / uint64_t(d))
          return fail("%s '%s': the shape's byte size overflows", kind, name);
        bytes *= uint64_t(d);
      }
      if (t->size() != bytes)
        return fail("%s '%s': size is %llu bytes but its shape and dtype make %llu", kind, name,
                    (unsigned long long)t->size(), (unsigned long long)bytes);
      if (!in_range(t->offset(), t->size(), arena_))
        return fail("%s '%s' (offset %llu, %llu bytes) is outside the arena (%llu bytes)", kind,
                    name, (unsigned long long)t->offset(), (unsigned long long)t->size(),
                    (unsigned long long)arena_);
    }
    return true;
  }

  bool programs_check() {
    if (!c_->programs()) return true;
    const auto &imports = elf_runtime_imports();
    for (uint32_t i = 0; i < c_->programs()->size(); ++i) {
      const fb::Program *p = c_->programs()->Get(i);
      const bool gpu_code = device_ && p->format() == device_->program_format;
      if (p->format() != fb::ProgramFormat::elf_relocatable && !gpu_code)
        return fail(
            "program %u has format %u; this runtime loads elf_relocatable (0)%s", i,
            unsigned(p->format()),
            device_ ? (std::string(" and ") + fb::EnumNameProgramFormat(device_->program_format) +
                       " (" + std::to_string(unsigned(device_->program_format)) + ")")
                          .c_str()
                    : "");
      // Damaged machine code must be refused here: once linked it runs unchecked.
      if (capture_hash(p->binary()->data(), p->binary()->size()) != p->hash())
        return fail("program %u is damaged: its code does not match its checksum", i);
      if (!p->imports()) continue;
      for (const flatbuffers::String *name : *p->imports()) {
        bool known = false;
        for (const elf_import &imp : imports) known |= strcmp(imp.name, name->c_str()) == 0;
        if (!known)
          return fail("program %u imports '%s', which the runtime does not provide", i,
                      name->c_str());
      }
    }
    return true;
  }

  bool kernels_check() {
    if (!c_->kernels()) return true;
    const uint32_t programs = c_->programs() ? c_->programs()->size() : 0;
    for (uint32_t i = 0; i < c_->kernels()->size(); ++i) {
      const fb::Kernel *k = c_->kernels()->Get(i);
      if (k->program() >= programs)
        return fail("kernel %u '%s' uses program %u, but the capture has %u programs", i,
                    k->name()->c_str(), k->program(), programs);
      if (!kernel_bounds_check(i, k)) return false;
      if (device_ && !gpu_kernel_check(i, k)) return false;
    }
    return true;
  }

  // KernelBounds (capture.fbs): present, consistent with the kernel, and matching its hash.
  bool kernel_bounds_check(uint32_t i, const fb::Kernel *k) {
    const char *name = k->name()->c_str();
    const fb::KernelBounds *b = k->bounds();
    if (!b)
      return fail(
          "kernel %u '%s' has no bounds (KernelBounds, capture format 1.2): the file was "
          "written by an older compiler; compile the model again",
          i, name);
    if (b->buffer_sizes()->size() != k->num_buffers())
      return fail("kernel %u '%s': its bounds give %u buffer sizes for %u buffers", i, name,
                  b->buffer_sizes()->size(), k->num_buffers());
    const uint32_t scalars = b->scalars() ? b->scalars()->size() : 0;
    if (scalars != k->num_scalars())
      return fail("kernel %u '%s': its bounds give %u scalars, the kernel takes %u", i, name,
                  scalars, k->num_scalars());
    capture_bounds_hash h(c_->programs()->Get(k->program())->hash());
    h.str(k->entry()->c_str(), k->entry()->size());
    h.str(k->twin_entry() ? k->twin_entry()->c_str() : "",
          k->twin_entry() ? k->twin_entry()->size() : 0);
    h.u64(k->twin_work_size());
    h.u64(b->work_size());
    h.u64(b->buffer_sizes()->size());
    for (uint64_t v : *b->buffer_sizes()) h.u64(v);
    h.u64(scalars);
    for (uint32_t j = 0; j < scalars; ++j) h.u64(uint64_t(b->scalars()->Get(j)));
    const uint32_t tables = b->index_tables() ? b->index_tables()->size() : 0;
    h.u64(tables);
    for (uint32_t j = 0; j < tables; ++j) {
      const fb::IndexTable *t = b->index_tables()->Get(j);
      if (t->buffer() >= k->num_buffers())
        return fail("kernel %u '%s': index table %u is binding %u, the kernel takes %u", i, name, j,
                    t->buffer(), k->num_buffers());
      if (t->dtype() != fb::DType::i32 && t->dtype() != fb::DType::i64)
        return fail("kernel %u '%s': index table %u has dtype %u, not i32 or i64", i, name, j,
                    unsigned(t->dtype()));
      h.u64(t->buffer());
      h.u64(uint64_t(t->dtype()));
      h.u64(uint64_t(t->low()));
      h.u64(uint64_t(t->high()));
    }
    const uint32_t written = b->written() ? b->written()->size() : 0;
    h.u64(written);
    for (uint32_t j = 0; j < written; ++j) {
      if (b->written()->Get(j) >= k->num_buffers())
        return fail("kernel %u '%s': its bounds say it writes binding %u, the kernel takes %u", i,
                    name, b->written()->Get(j), k->num_buffers());
      h.u64(b->written()->Get(j));
    }
    if (h.value() != b->hash())
      return fail("kernel %u '%s': its bounds do not match their checksum", i, name);
    return true;
  }

  // A GPU kernel: its target's facts, and its host twin where it has one.
  bool gpu_kernel_check(uint32_t i, const fb::Kernel *k) {
    std::string why;
    if (!device_->kernel_check(c_, i, &why)) return fail("%s", why.c_str());
    if (k->twin_program() >= 0) {
      const char *name = k->name()->c_str();
      const uint32_t programs = c_->programs()->size();
      if (uint32_t(k->twin_program()) >= programs ||
          c_->programs()->Get(uint32_t(k->twin_program()))->format() !=
              fb::ProgramFormat::elf_relocatable)
        return fail("kernel %u '%s': twin_program %d is not an elf_relocatable program", i, name,
                    k->twin_program());
      if (!k->twin_entry()) return fail("kernel %u '%s': twin_program without twin_entry", i, name);
    }
    return true;
  }

  // "step 4 (launch of kernel 'add', ONNX nodes Add_1 Relu_2)"
  std::string launch_name(uint32_t step, const fb::Launch *l) const {
    std::string s = "step " + std::to_string(step) + " (launch of kernel ";
    const auto *kernels = c_->kernels();
    if (kernels && l->kernel() < kernels->size())
      s.append("'").append(kernels->Get(l->kernel())->name()->str()).append("'");
    else
      s += std::to_string(l->kernel());
    if (l->source_nodes() && l->source_nodes()->size()) {
      s += ", ONNX nodes";
      for (const flatbuffers::String *n : *l->source_nodes()) s.append(" ").append(n->str());
    }
    return s + ")";
  }

  // Size of the region a BufferRef points into, or false with a message.
  bool region_size(const fb::BufferRef &b, const std::string &where, uint64_t *size) {
    if (b.space() == fb::Space::arena) {
      *size = arena_;
      return true;
    }
    if (b.space() != fb::Space::weight)
      return fail("%s: unknown buffer space %u", where.c_str(), unsigned(b.space()));
    const uint32_t weights = c_->weights() ? c_->weights()->size() : 0;
    if (b.index() >= weights)
      return fail("%s: weight %u does not exist (the capture has %u)", where.c_str(), b.index(),
                  weights);
    *size = c_->weights()->Get(b.index())->data()->size();
    return true;
  }

  static std::string ref_name(const fb::BufferRef &b) {
    return b.space() == fb::Space::arena
               ? "arena offset " + std::to_string(b.offset())
               : "weight " + std::to_string(b.index()) + " offset " + std::to_string(b.offset());
  }

  bool launch_check(uint32_t step, const fb::Launch *l) {
    const std::string where = launch_name(step, l);
    const uint32_t kernels = c_->kernels() ? c_->kernels()->size() : 0;
    if (l->kernel() >= kernels)
      return fail("%s: kernel %u does not exist (the capture has %u)", where.c_str(), l->kernel(),
                  kernels);
    const fb::Kernel *k = c_->kernels()->Get(l->kernel());
    if (l->buffers()->size() != k->num_buffers())
      return fail("%s: %u buffers bound, the kernel takes %u", where.c_str(), l->buffers()->size(),
                  k->num_buffers());
    const uint32_t scalars = l->scalars() ? l->scalars()->size() : 0;
    if (scalars != k->num_scalars())
      return fail("%s: %u scalars bound, the kernel takes %u", where.c_str(), scalars,
                  k->num_scalars());
    if (l->buffer_sizes()->size() != l->buffers()->size())
      return fail("%s: %u buffer sizes for %u buffers", where.c_str(), l->buffer_sizes()->size(),
                  l->buffers()->size());
    for (uint32_t i = 0; i < l->buffers()->size(); ++i) {
      const fb::BufferRef *b = l->buffers()->Get(i);
      const std::string arg = where + ": buffer " + std::to_string(i);
      uint64_t size = 0;
      if (!region_size(*b, arg, &size)) return false;
      // The whole extent the kernel may touch must lie inside its region.
      const uint64_t extent = l->buffer_sizes()->Get(i);
      if (b->offset() >= size || !in_range(b->offset(), extent, size))
        return fail("%s (%s, %llu bytes) is outside the %s (%llu bytes)", arg.c_str(),
                    ref_name(*b).c_str(), (unsigned long long)extent,
                    b->space() == fb::Space::arena ? "arena" : "weight", (unsigned long long)size);
    }
    if (l->work_size() > uint64_t(INT64_MAX))
      return fail("%s: work_size %llu is too large", where.c_str(),
                  (unsigned long long)l->work_size());
    const auto *part = l->partition();
    if (part->size() != threads_ + 1)
      return fail("%s: partition has %u entries; threads is %u so it needs %u", where.c_str(),
                  part->size(), threads_, threads_ + 1);
    if (part->Get(0) != 0)
      return fail("%s: partition starts at %llu, not 0", where.c_str(),
                  (unsigned long long)part->Get(0));
    for (uint32_t t = 0; t < threads_; ++t)
      if (part->Get(t + 1) < part->Get(t))
        return fail("%s: partition decreases at thread %u (%llu after %llu)", where.c_str(), t,
                    (unsigned long long)part->Get(t + 1), (unsigned long long)part->Get(t));
    if (part->Get(threads_) != l->work_size())
      return fail("%s: partition ends at %llu, not at work_size %llu", where.c_str(),
                  (unsigned long long)part->Get(threads_), (unsigned long long)l->work_size());
    return launch_bounds_check(where, l, k);
  }

  // What makes replay safe by construction: a launch asks its kernel's code for no more than the
  // compiler made it for (KernelBounds, checked against its hash in kernel_bounds_check), and each
  // binding's region holds the bytes the code touches (launch_check checked offset + the launch's
  // size inside the region; here the launch's size covers the code's). Index tables are checked
  // entry by entry, since the code uses them unchecked.
  bool launch_bounds_check(const std::string &where, const fb::Launch *l, const fb::Kernel *k) {
    const fb::KernelBounds *b = k->bounds();
    if (l->work_size() > b->work_size())
      return fail("%s: work_size %llu is more than the %llu its kernel was compiled for",
                  where.c_str(), (unsigned long long)l->work_size(),
                  (unsigned long long)b->work_size());
    if (l->work_size() > limits_.max_work_size)
      return fail(
          "%s: work_size %llu is more than the %llu this runtime allows "
          "(CAPGRAPH_MAX_WORK_SIZE)",
          where.c_str(), (unsigned long long)l->work_size(),
          (unsigned long long)limits_.max_work_size);
    // Every work item stores at least one byte of its own, so a kernel's work cannot exceed the
    // bytes it touches: a bound on replay time that no checksum can fake.
    unsigned __int128 touched = 0;
    for (uint32_t i = 0; i < l->buffers()->size(); ++i) {
      const uint64_t need = b->buffer_sizes()->Get(i), given = l->buffer_sizes()->Get(i);
      touched += need;
      if (given < need)
        return fail("%s: buffer %u is given %llu bytes, but its kernel's code touches %llu",
                    where.c_str(), i, (unsigned long long)given, (unsigned long long)need);
    }
    if (l->work_size() > 1 && l->work_size() > touched)
      return fail("%s: work_size %llu is more than the %llu bytes its buffers hold", where.c_str(),
                  (unsigned long long)l->work_size(), (unsigned long long)touched);
    const uint32_t scalars = b->scalars() ? b->scalars()->size() : 0;
    for (uint32_t i = 0; i < scalars; ++i)
      if (l->scalars()->Get(i) != b->scalars()->Get(i))
        return fail("%s: scalar %u is %lld, but its kernel's code was compiled for %lld",
                    where.c_str(), i, (long long)l->scalars()->Get(i),
                    (long long)b->scalars()->Get(i));
    if (b->index_tables())
      for (const fb::IndexTable *t : *b->index_tables())
        if (!index_table_check(where, l, *t, b->buffer_sizes()->Get(t->buffer()))) return false;
    // Weights are read-only (mapped from the file): a store there would fault.
    if (b->written())
      for (uint32_t w : *b->written())
        if (l->buffers()->Get(w)->space() != fb::Space::arena)
          return fail("%s: buffer %u is written by its kernel but is a weight, not in the arena",
                      where.c_str(), w);
    return true;
  }

  // Every entry of an index table within the bytes its kernel reads is in [low, high).
  bool index_table_check(const std::string &where, const fb::Launch *l, const fb::IndexTable &t,
                         uint64_t bytes) {
    const fb::BufferRef *r = l->buffers()->Get(t.buffer());
    if (r->space() != fb::Space::weight)
      return fail("%s: buffer %u holds an index table but is not a weight", where.c_str(),
                  t.buffer());
    // launch_check put [offset, offset + bytes) inside the weight.
    const uint8_t *data = c_->weights()->Get(r->index())->data()->data() + r->offset();
    const size_t elem = t.dtype() == fb::DType::i64 ? 8 : 4;
    for (uint64_t at = 0; at + elem <= bytes; at += elem) {
      int64_t v;
      if (elem == 8) {
        memcpy(&v, data + at, 8);
      } else {
        int32_t v32;
        memcpy(&v32, data + at, 4);
        v = v32;
      }
      if (v < t.low() || v >= t.high())
        return fail(
            "%s: index table in buffer %u (weight %u) holds %lld at element %llu; its "
            "kernel reads out of bounds outside [%lld, %lld)",
            where.c_str(), t.buffer(), r->index(), (long long)v, (unsigned long long)(at / elem),
            (long long)t.low(), (long long)t.high());
    }
    return true;
  }

  bool copy_check(uint32_t step, const fb::Copy *c) {
    const std::string where = "step " + std::to_string(step) + " (copy)";
    if (!c->src() || !c->dst()) return fail("%s: source or destination missing", where.c_str());
    if (c->dst()->space() != fb::Space::arena)
      return fail("%s: destination is not in the arena (weights are read-only)", where.c_str());
    uint64_t src_size = 0, dst_size = 0;
    if (!region_size(*c->src(), where + ": source", &src_size) ||
        !region_size(*c->dst(), where + ": destination", &dst_size))
      return false;
    if (!in_range(c->src()->offset(), c->size(), src_size))
      return fail("%s: source (%s, %llu bytes) is outside its region (%llu bytes)", where.c_str(),
                  ref_name(*c->src()).c_str(), (unsigned long long)c->size(),
                  (unsigned long long)src_size);
    if (!in_range(c->dst()->offset(), c->size(), dst_size))
      return fail("%s: destination (%s, %llu bytes) is outside the arena (%llu bytes)",
                  where.c_str(), ref_name(*c->dst()).c_str(), (unsigned long long)c->size(),
                  (unsigned long long)dst_size);
    if (c->src()->space() == fb::Space::arena && c->size() &&
        c->src()->offset() < c->dst()->offset() + c->size() &&
        c->dst()->offset() < c->src()->offset() + c->size())
      return fail("%s: source and destination overlap", where.c_str());
    return true;
  }

  bool steps_check() {
    for (uint32_t i = 0; i < c_->steps()->size(); ++i) {
      const fb::Step *s = c_->steps()->Get(i);
      if (s->kind() == fb::StepKind::launch) {
        if (!s->launch() || s->copy())
          return fail("step %u: kind is launch but it %s", i,
                      s->copy() ? "also holds a copy" : "holds no launch");
        if (!launch_check(i, s->launch())) return false;
      } else if (s->kind() == fb::StepKind::copy) {
        if (!s->copy() || s->launch())
          return fail("step %u: kind is copy but it %s", i,
                      s->launch() ? "also holds a launch" : "holds no copy");
        if (!copy_check(i, s->copy())) return false;
      } else {
        return fail("step %u: unknown kind %u", i, unsigned(s->kind()));
      }
    }
    return true;
  }

  const fb::Capture *c_;
  const char *label_;
  std::string *err_;
  const hcq::target *device_;
  load_limits limits_;
  uint32_t threads_ = 1;
  uint64_t arena_ = 0;
};

}  // namespace

namespace {

bool starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

// Whether a capture for `name` runs on `device`; *why says which device it needs.
capgraph_status target_check(const fb::Target *t, const hcq::target *device, std::string *why) {
  const char *name = t->name()->c_str();
  if (!device) {
    if (!starts_with(name, "cpu-")) {
      const std::string devices = hcq::devices_for_capture(name);
      if (!devices.empty()) {
        *why = std::string("compiled for ") + name + "; run it with --device " + devices;
        return CAPGRAPH_ERR_TARGET;
      }
      // A GPU target no device of this build replays (adreno-a630 before its runtime
      // sides exist): the compiler writes such captures, the runtime names the target.
      *why = std::string("compiled for target '") + name +
             "', which no device of this runtime runs (it replays '" + cpu_target_name() +
             "' captures on the CPU and GPU captures of the targets it was built with)";
      return CAPGRAPH_ERR_TARGET;
    }
    return cpu_target_check(name, t->features() ? t->features()->c_str() : "", why);
  }
  if (device->capture_matches(name)) return CAPGRAPH_OK;
  *why = std::string("compiled for ") + name + ", not a " + device->name +
         " device this runtime knows (" + device->capture_names() + ")" +
         (starts_with(name, "cpu-") ? "; run it with --device cpu" : "");
  return CAPGRAPH_ERR_TARGET;
}

}  // namespace

load_limits load_limits_default() {
  load_limits l;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  l.max_arena_bytes = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(1) << 36;
  l.max_work_size = uint64_t(1) << 31;
  return l;
}

capgraph_status load_limits_from_env(load_limits *out, std::string *err) {
  *out = load_limits_default();
  const struct {
    const char *name;
    uint64_t *value;
  } vars[] = {{"CAPGRAPH_MAX_ARENA_BYTES", &out->max_arena_bytes},
              {"CAPGRAPH_MAX_WORK_SIZE", &out->max_work_size}};
  for (const auto &v : vars) {
    const char *s = getenv(v.name);
    if (!s) continue;
    char *end = nullptr;
    errno = 0;
    const unsigned long long n = strtoull(s, &end, 10);
    if (!*s || *end || errno || s[0] == '-' || n == 0) {
      *err = std::string(v.name) + " must be a positive whole number, not '" + s + "'";
      return CAPGRAPH_ERR_ARGUMENT;
    }
    *v.value = n;
  }
  return CAPGRAPH_OK;
}

std::string capture_versions_text() {
  std::string s = "versions ";
  for (unsigned m = k_capture_major_oldest; m <= k_capture_major_newest; ++m)
    s += std::to_string(m) + ".x" +
         (m + 1 == k_capture_major_newest ? " and "
          : m < k_capture_major_newest    ? ", "
                                          : "");
  return s;
}

capture_preamble capture_preamble_check(const uint8_t *data, size_t size) {
  using st = capture_preamble_status;
  capture_preamble p;
  if (size < 8 || !fb::CaptureBufferHasIdentifier(data)) return p.status = st::no_identifier, p;
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) return p.status = st::too_large, p;
  {
    flatbuffers::Verifier v(data, size);
    if (!v.VerifyOffset(0)) return p.status = st::bad_root_offset, p;
    // Generated tables inherit flatbuffers::Table privately; read the root as a plain Table.
    const auto *root = flatbuffers::GetRoot<flatbuffers::Table>(data);
    if (!root->VerifyTableStart(v) ||
        !root->VerifyField<uint16_t>(v, fb::Capture::VT_VERSION_MAJOR, 2) ||
        !root->VerifyField<uint16_t>(v, fb::Capture::VT_VERSION_MINOR, 2))
      return p.status = st::bad_root, p;
    // Through the generated accessors, which know the schema's defaults (a minor version equal to
    // its default, 1, is not stored; reading it with another default said "3.0" for 3.1).
    p.major = fb::GetCapture(data)->version_major();
    p.minor = fb::GetCapture(data)->version_minor();
    if (p.major < k_capture_major_oldest || p.major > k_capture_major_newest)
      return p.status = st::bad_version, p;
  }
  flatbuffers::Verifier v(data, size, /*max_depth=*/64, /*max_tables=*/1u << 24);
  if (!fb::VerifyCaptureBuffer(v)) p.status = st::bad_layout;
  return p;
}

capgraph_status capture_verify(const uint8_t *data, size_t size, const char *label,
                               const fb::Capture **out, std::string *err, const hcq::target *device,
                               const load_limits *limits) {
  *out = nullptr;
  const std::string prefix = std::string(label) + ": ";
  const capture_preamble pre = capture_preamble_check(data, size);
  switch (pre.status) {
    case capture_preamble_status::ok: break;
    case capture_preamble_status::no_identifier:
      *err = prefix + "not a capture file (no 'CAPG' file identifier)";
      return CAPGRAPH_ERR_FORMAT;
    case capture_preamble_status::too_large:
      *err = prefix + "larger than the 2 GiB a flatbuffer can address";
      return CAPGRAPH_ERR_FORMAT;
    case capture_preamble_status::bad_root_offset:
      *err = prefix + "corrupt capture: the root table offset is invalid";
      return CAPGRAPH_ERR_FORMAT;
    case capture_preamble_status::bad_root:
      *err = prefix + "corrupt capture: the root table is invalid";
      return CAPGRAPH_ERR_FORMAT;
    case capture_preamble_status::bad_version:
      *err = prefix + "capture format version " + std::to_string(pre.major) + "." +
             std::to_string(pre.minor) + " cannot be read by this runtime, which reads " +
             capture_versions_text();
      return CAPGRAPH_ERR_VERSION;
    case capture_preamble_status::bad_layout:
      *err = prefix + "corrupt or truncated capture (flatbuffers verification failed)";
      return CAPGRAPH_ERR_FORMAT;
  }
  const fb::Capture *c = fb::GetCapture(data);
  std::string why;
  const capgraph_status target = target_check(c->target(), device, &why);
  if (target != CAPGRAPH_OK) {
    *err = prefix + why;
    return target;
  }
  // Version 1.1 kept AMD launch facts in Kernel.amd, which 2.0 replaced by the Kernel.facts
  // union: a GPU capture from before that has no facts this runtime can read.
  if (device && c->version_major() < 2) {
    *err = prefix + "capture format version " + std::to_string(c->version_major()) + "." +
           std::to_string(c->version_minor()) +
           " is a GPU capture from an older capgraph (its "
           "kernel launch facts predate version 2.0); compile the model again";
    return CAPGRAPH_ERR_VERSION;
  }
  semantic_check check(c, label, err, device, limits ? *limits : load_limits_default());
  if (!check.run()) return CAPGRAPH_ERR_FORMAT;
  *out = c;
  return CAPGRAPH_OK;
}

}  // namespace capgraph
