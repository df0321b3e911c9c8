// graph::check: `capgraph run --check` on any GPU device. Each launch runs alone on the device;
// then its host twin (the same computation compiled for this CPU, carried in the capture) runs on
// a host copy of the arena as it was before the launch, and the two arenas are compared. The
// first launch that differs is reported with the kernel and how much it differs by, so a wrong
// register, a bad address or a miscompiled wave is named where it happens rather than seen as a
// wrong output many kernels later. It works the same on a real GPU and on a fake one, because it
// only uses the transport and the encoder verbs.
#include <cmath>
#include <cstring>

#include "graph.h"
#include "signal.h"
#include "word_compare.h"

namespace capgraph::hcq {
namespace {

// Whether arena byte offset `at` lies in a binding the kernel declares it writes.
bool written_by(const fb::Kernel *kern, const fb::Launch *l, uint64_t at) {
  const fb::KernelBounds *b = kern->bounds();
  if (!b || !b->written()) return false;
  for (uint32_t w : *b->written()) {
    if (w >= l->buffers()->size() || w >= l->buffer_sizes()->size()) continue;
    const fb::BufferRef *ref = l->buffers()->Get(w);
    if (ref->space() != fb::Space::arena) continue;
    if (at >= ref->offset() && at - ref->offset() < l->buffer_sizes()->Get(w)) return true;
  }
  return false;
}

// The largest finite |value| of the twin's result over the kernel's written bindings, read as
// float32: the scale the tolerance is relative to (tests/tools/npy_compare uses the same rule).
double written_max(const fb::Kernel *kern, const fb::Launch *l, const uint8_t *arena,
                   uint64_t arena_size) {
  double max_ref = 0;
  const fb::KernelBounds *b = kern->bounds();
  if (!b || !b->written()) return 0;
  const bool half = kern->store_float16();
  for (uint32_t w : *b->written()) {
    if (w >= l->buffers()->size() || w >= l->buffer_sizes()->size()) continue;
    const fb::BufferRef *ref = l->buffers()->Get(w);
    if (ref->space() != fb::Space::arena || ref->offset() > arena_size) continue;
    const uint64_t end = std::min<uint64_t>(arena_size, ref->offset() + l->buffer_sizes()->Get(w));
    for (uint64_t o = ref->offset(); o + 4 <= end; o += 4) {
      uint32_t word;
      memcpy(&word, arena + o, 4);
      max_ref = std::max(max_ref, word_max_abs(word, half));
    }
  }
  return max_ref;
}

}  // namespace

capgraph_status graph::check(const fb::Capture *c, const host_twins &twins, check_result *out,
                             std::string *err) {
  *out = check_result{};
  auto *timeline = reinterpret_cast<signal *>(signals_.cpu + slot_timeline);
  if (submitted_) {
    capgraph_status st = dev_->wait(&timeline->value, timeline_, opt_.timeout_ns, err);
    if (st != CAPGRAPH_OK) return st;
  }
  // A shadowed transport (device memory the CPU cannot map: the GPU behind the USB bridge): the
  // host shadow is brought level with the device before the first launch and after each one,
  // the whole arena over the transport each time. Slow, but --check is a debugging tool, and a
  // write outside a kernel's outputs shows as it does on a mapped device.
  const uint64_t size = c->arena_size();
  const auto shadow_sync = [&](bool up, uint64_t at, uint64_t bytes, const char *what) {
    if (!shadowed_ || !bytes) return CAPGRAPH_OK;
    std::string why;
    capgraph_status st =
        up ? dev_->upload(arena_, at, bytes, &why) : dev_->download(arena_, at, bytes, &why);
    if (st != CAPGRAPH_OK) *err = std::string("check: ") + what + ": " + why;
    return st;
  };
  if (shadowed_) {
    std::string why;
    capgraph_status st = shadow_inputs_upload(&why);
    if (st != CAPGRAPH_OK) {
      *err = "check: writing the inputs and kernel arguments: " + why;
      return st;
    }
    if ((st = shadow_sync(false, 0, size, "reading the arena")) != CAPGRAPH_OK) return st;
  }
  // The twins run on a copy of the arena: an input or output bound to caller memory (bind) is
  // not in it.
  for (const patch_site &p : patch_sites_) {
    uint64_t a;
    memcpy(&a, kernargs_.cpu + p.kernarg_at, 8);
    if (a != arena_.gpu + p.arena_offset) {
      *err =
          "check: an input or output is bound to caller memory (capgraph_bind_*); --check "
          "compares the arena, so unbind it first";
      return CAPGRAPH_ERR_ARGUMENT;
    }
  }
  std::vector<uint8_t> host(arena_.cpu, arena_.cpu + size);  // the twins' arena
  const auto resolve = [&](const fb::BufferRef &b, bool device) -> uint8_t * {
    if (b.space() == fb::Space::arena) return (device ? arena_.cpu : host.data()) + b.offset();
    return weights_.cpu + weight_at_[b.index()] + b.offset();  // weights are read-only
  };
  std::vector<uint32_t> words;
  for (uint32_t i = 0; i < steps_; ++i) {
    const fb::Step *s = c->steps()->Get(i);
    if (s->kind() == fb::StepKind::copy) {
      const fb::Copy *cp = s->copy();
      if (!cp->size()) continue;
      memmove(resolve(*cp->dst(), true), resolve(*cp->src(), true), cp->size());
      memmove(resolve(*cp->dst(), false), resolve(*cp->src(), false), cp->size());
      if (cp->dst()->space() == fb::Space::arena) {
        capgraph_status st = shadow_sync(true, cp->dst()->offset(), cp->size(), "copy step");
        if (st != CAPGRAPH_OK) return st;
      }
      continue;
    }
    const fb::Launch *l = s->launch();
    const fb::Kernel *kern = c->kernels()->Get(l->kernel());
    // The device: this launch alone, after a barrier (the CPU's copies and the previous
    // launch's writes visible), then the timeline raised.
    const dispatch &d = launch_dispatch_[i];
    if (d.groups) {
      // A fresh encoder each time: an encoder may link consecutive launches (NVIDIA chains
      // QMDs), and here each launch must start on its own.
      words.clear();
      std::unique_ptr<encoder> enc = target_->encoder_create(c, queue_kind::compute, &words);
      enc->barrier();
      enc->exec(d);
      enc->signal(signals_.gpu + slot_timeline, timeline_ + 1);
      if (interrupt_) enc->interrupt(interrupt_mailbox_, interrupt_id_);
      if (!enc->error().empty()) {
        *err = "check: step " + std::to_string(i) + ": encoding: " + enc->error();
        return CAPGRAPH_ERR_FORMAT;
      }
      dev_->submit(compute_, words.data(), words.size());
      submitted_ = true;
      ++timeline_;
      capgraph_status st = dev_->wait(&timeline->value, timeline_, opt_.timeout_ns, err);
      if (st == CAPGRAPH_OK) st = shadow_sync(false, 0, size, "reading the arena");
      if (st != CAPGRAPH_OK) {
        *err =
            "check: kernel '" + kern->name()->str() + "' (step " + std::to_string(i) + "): " + *err;
        return st;
      }
    }
    if (!twins.has(l->kernel())) {
      ++out->launches_unchecked;
      memcpy(host.data(), arena_.cpu, size);  // nothing to compare with: take the device's
      continue;
    }
    // The twin, on the arena as it was before the launch.
    std::vector<void *> bufs;
    for (const fb::BufferRef *b : *l->buffers()) bufs.push_back(resolve(*b, false));
    std::vector<int64_t> scalars;
    if (l->scalars()) scalars.assign(l->scalars()->begin(), l->scalars()->end());
    twins.run(l->kernel(), bufs.data(), scalars.empty() ? nullptr : scalars.data());
    ++out->launches_checked;

    // Compare word by word (equal 4 KiB blocks skipped with memcmp) by word_compare.h's rule.
    // The device's words are then taken, so the next launch starts from what the device
    // computed, as in a replay.
    const double tolerance = word_tolerance(written_max(kern, l, host.data(), size));
    check_result r;
    for (uint64_t block = 0; block < size; block += 4096) {
      const uint64_t n = std::min<uint64_t>(4096, size - block);
      if (memcmp(arena_.cpu + block, host.data() + block, n) == 0) continue;
      for (uint64_t o = block; o < block + n; o += 4) {
        const uint64_t len = std::min<uint64_t>(4, block + n - o);
        if (memcmp(arena_.cpu + o, host.data() + o, len) == 0) continue;
        uint32_t dw = 0, tw = 0;
        memcpy(&dw, arena_.cpu + o, len);
        memcpy(&tw, host.data() + o, len);
        memcpy(host.data() + o, arena_.cpu + o, len);
        const double diff = word_difference(dw, tw, kern->store_float16());
        if (diff == 0) continue;
        const bool outside = !written_by(kern, l, o);
        if (diff <= tolerance && !outside) continue;
        if (!r.words_differ) r.first_offset = o;
        ++r.words_differ;
        r.max_diff = std::max(r.max_diff, diff);
        r.outside_outputs |= outside;
      }
    }
    if (r.words_differ) {
      r.launches_checked = out->launches_checked;
      r.launches_unchecked = out->launches_unchecked;
      r.differs = true;
      r.step = i;
      r.kernel = l->kernel();
      r.tolerance = tolerance;
      *out = r;
      return CAPGRAPH_OK;
    }
  }
  return CAPGRAPH_OK;
}

}  // namespace capgraph::hcq
