#include "capture_verify.h"

#include "capture_hash.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <set>

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
                 const hcq::target *device)
      : c_(c), label_(label), err_(err), device_(device) {}

  bool run() {
    threads_ = c_->threads();
    if (threads_ < 1 || threads_ > k_max_threads)
      return fail("threads is %u; it must be 1 to %u", threads_, k_max_threads);
    arena_ = c_->arena_size();
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
        return fail("program %u has format %u; this runtime loads elf_relocatable (0)%s", i,
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
      if (device_ && !gpu_kernel_check(i, k)) return false;
    }
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
  uint32_t threads_ = 1;
  uint64_t arena_ = 0;
};

}  // namespace

namespace {

bool starts_with(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

// Whether a capture for `name` runs on `device`; *why says which device it needs.
// Captures of a GPU family the compiler writes but no runtime has a device for yet (its
// targets/<name>/ has no runtime.cmake): refused by name, rather than as "not this CPU".
bool target_unbuilt(const char *name, std::string *why) {
  if (!starts_with(name, "nv-") || !hcq::devices_for_capture(name).empty()) return false;
  *why = std::string("compiled for ") + name + ", an NVIDIA GPU target, and this build's runtime has no " +
         "NVIDIA device yet (issue 15); `capgraph inspect` reads the capture";
  return true;
}

capgraph_status target_check(const fb::Target *t, const hcq::target *device, std::string *why) {
  const char *name = t->name()->c_str();
  if (target_unbuilt(name, why)) return CAPGRAPH_ERR_TARGET;
  if (!device) {
    if (!starts_with(name, "cpu-")) {
      const std::string devices = hcq::devices_for_capture(name);
      if (!devices.empty()) {
        *why = std::string("compiled for ") + name + "; run it with --device " + devices;
        return CAPGRAPH_ERR_TARGET;
      }
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

capgraph_status capture_verify(const uint8_t *data, size_t size, const char *label,
                               const fb::Capture **out, std::string *err,
                               const hcq::target *device) {
  *out = nullptr;
  const std::string prefix = std::string(label) + ": ";
  if (size < 8 || !fb::CaptureBufferHasIdentifier(data)) {
    *err = prefix + "not a capture file (no 'CAPG' file identifier)";
    return CAPGRAPH_ERR_FORMAT;
  }
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    *err = prefix + "larger than the 2 GiB a flatbuffer can address";
    return CAPGRAPH_ERR_FORMAT;
  }
  // Read the version before verifying the rest: a newer major version may lay out the other
  // tables differently, and its reader deserves "version" rather than "corrupt".
  {
    flatbuffers::Verifier v(data, size);
    const size_t root_offset = v.VerifyOffset(0);
    if (!root_offset) {
      *err = prefix + "corrupt capture: the root table offset is invalid";
      return CAPGRAPH_ERR_FORMAT;
    }
    // Generated tables inherit flatbuffers::Table privately; read the root as a plain Table.
    const auto *root = flatbuffers::GetRoot<flatbuffers::Table>(data);
    if (!root->VerifyTableStart(v) ||
        !root->VerifyField<uint16_t>(v, fb::Capture::VT_VERSION_MAJOR, 2) ||
        !root->VerifyField<uint16_t>(v, fb::Capture::VT_VERSION_MINOR, 2)) {
      *err = prefix + "corrupt capture: the root table is invalid";
      return CAPGRAPH_ERR_FORMAT;
    }
    const uint16_t major = root->GetField<uint16_t>(fb::Capture::VT_VERSION_MAJOR, 1);
    const uint16_t minor = root->GetField<uint16_t>(fb::Capture::VT_VERSION_MINOR, 0);
    if (major != 1 && major != 2) {
      *err = prefix + "capture format version " + std::to_string(major) + "." +
             std::to_string(minor) + " cannot be read by this runtime, which reads versions 1.x "
             "and 2.x";
      return CAPGRAPH_ERR_VERSION;
    }
  }
  flatbuffers::Verifier v(data, size, /*max_depth=*/64, /*max_tables=*/1u << 24);
  if (!fb::VerifyCaptureBuffer(v)) {
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
           std::to_string(c->version_minor()) + " is a GPU capture from an older capgraph (its "
           "kernel launch facts predate version 2.0); compile the model again";
    return CAPGRAPH_ERR_VERSION;
  }
  semantic_check check(c, label, err, device);
  if (!check.run()) return CAPGRAPH_ERR_FORMAT;
  *out = c;
  return CAPGRAPH_OK;
}

}  // namespace capgraph
