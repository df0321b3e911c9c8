#include "cli/buffer_users.h"

#include <algorithm>

namespace capgraph {

namespace {

// Half-open byte ranges; a zero-sized range still counts as touching its first byte.
bool ranges_overlap(uint64_t a, uint64_t a_size, uint64_t b, uint64_t b_size) {
  return a < b + std::max<uint64_t>(b_size, 1) && b < a + std::max<uint64_t>(a_size, 1);
}

void add_once(std::vector<uint32_t> &v, uint32_t step) {
  if (v.empty() || v.back() != step) v.push_back(step);
}

}  // namespace

std::vector<BufferUsers> buffer_users(const fb::Capture *c) {
  std::vector<BufferUsers> users;
  if (!c->buffers()) return users;
  const uint32_t n_steps = c->steps()->size();
  users.resize(c->buffers()->size());
  for (uint32_t b = 0; b < c->buffers()->size(); b++) {
    const fb::PlannedBuffer *pb = c->buffers()->Get(b);
    BufferUsers &u = users[b];
    auto touch = [&](const fb::BufferRef *ref, uint64_t size, uint32_t step, bool writes) {
      if (!ref || ref->space() != fb::Space::arena ||
          !ranges_overlap(ref->offset(), size, pb->offset(), pb->size()))
        return;
      add_once(writes ? u.writers : u.readers, step);
    };
    // The file was verified by flatbuffers only: clamp the lifetime rather than trust it.
    for (uint32_t s = pb->first_step(); s <= pb->last_step() && s < n_steps; s++) {
      const fb::Step *step = c->steps()->Get(s);
      if (step->kind() == fb::StepKind::launch && step->launch()) {
        const fb::Launch *l = step->launch();
        for (uint32_t j = 0; j < l->buffers()->size(); j++) {
          const uint64_t size = j < l->buffer_sizes()->size() ? l->buffer_sizes()->Get(j) : 0;
          touch(l->buffers()->Get(j), size, s, j == 0);
        }
      } else if (step->kind() == fb::StepKind::copy && step->copy()) {
        touch(step->copy()->dst(), step->copy()->size(), s, true);
        touch(step->copy()->src(), step->copy()->size(), s, false);
      }
    }
  }
  return users;
}

}  // namespace capgraph
