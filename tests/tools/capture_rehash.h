// Recomputes a capture's checksums in place, as an attacker (or a test planting a change) would:
// every program's hash, then every kernel's KernelBounds hash over it (schema/capture_hash.h).
// For tests and fuzzing only; header-only so any test can use it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capture_hash.h"

namespace capgraph::test {

// Where the 8-byte scalar field `vt` of `table` (inside `bytes`) is stored, as an offset into
// `bytes`; SIZE_MAX if the file does not store it. Read before anything is written: one write can
// change another table's vtable when a hostile file lets them share bytes.
inline size_t u64_field_offset(const std::vector<uint8_t> &bytes, const void *table, uint16_t vt) {
  const uint8_t *p = reinterpret_cast<const flatbuffers::Table *>(table)->GetAddressOf(vt);
  if (!p || p < bytes.data() || p + 8 > bytes.data() + bytes.size()) return SIZE_MAX;
  return size_t(p - bytes.data());
}

// Writes each (offset, value) pair found by u64_field_offset.
inline void u64_stores(std::vector<uint8_t> &bytes,
                       const std::vector<std::pair<size_t, uint64_t>> &stores) {
  for (const auto &[at, v] : stores)
    if (at != SIZE_MAX) memcpy(bytes.data() + at, &v, 8);
}

// Whether the bytes are a structurally valid capture (flatbuffers verifier, as the loader runs it).
inline bool capture_structure_ok(const std::vector<uint8_t> &bytes) {
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 1u << 24);
  return bytes.size() >= 8 && capgraph::fb::CaptureBufferHasIdentifier(bytes.data()) &&
         capgraph::fb::VerifyCaptureBuffer(v);
}

// The checksums of every program and kernel bound recomputed in place. A stored hash can overlap
// other fields in a hostile file (flatbuffers tables may share bytes), so the structure is
// verified again after the program hashes are written, and within each step every hash and
// every field address is computed before any is written (fuzz_capture_rehash found the tool
// reading through a length it had just overwritten, then writing through a vtable it had just
// overwritten).
inline void capture_checksums_recompute(std::vector<uint8_t> &bytes) {
  if (!capture_structure_ok(bytes)) return;
  const capgraph::fb::Capture *c = capgraph::fb::GetCapture(bytes.data());
  if (!c->programs()) return;
  std::vector<std::pair<size_t, uint64_t>> program_stores;
  for (const capgraph::fb::Program *p : *c->programs())
    program_stores.emplace_back(u64_field_offset(bytes, p, capgraph::fb::Program::VT_HASH),
                                capture_hash(p->binary()->data(), p->binary()->size()));
  u64_stores(bytes, program_stores);
  if (!capture_structure_ok(bytes)) return;
  c = capgraph::fb::GetCapture(bytes.data());
  if (!c->kernels()) return;
  std::vector<std::pair<size_t, uint64_t>> stores;
  for (const capgraph::fb::Kernel *k : *c->kernels()) {
    const capgraph::fb::KernelBounds *b = k->bounds();
    if (!b || k->program() >= c->programs()->size()) continue;
    capture_bounds_hash h(c->programs()->Get(k->program())->hash());
    h.str(k->entry()->c_str(), k->entry()->size());
    h.str(k->twin_entry() ? k->twin_entry()->c_str() : "",
          k->twin_entry() ? k->twin_entry()->size() : 0);
    h.u64(k->twin_work_size());
    h.u64(b->work_size());
    h.u64(b->buffer_sizes()->size());
    for (uint32_t i = 0; i < b->buffer_sizes()->size(); ++i) {
      uint64_t v;
      memcpy(&v, b->buffer_sizes()->Data() + 8 * i, 8);  // the vector may be misaligned
      h.u64(v);
    }
    const uint32_t scalars = b->scalars() ? b->scalars()->size() : 0;
    h.u64(scalars);
    for (uint32_t i = 0; i < scalars; ++i) {
      uint64_t v;
      memcpy(&v, b->scalars()->Data() + 8 * i, 8);
      h.u64(v);
    }
    const uint32_t tables = b->index_tables() ? b->index_tables()->size() : 0;
    h.u64(tables);
    for (uint32_t i = 0; i < tables; ++i) {
      const capgraph::fb::IndexTable *t = b->index_tables()->Get(i);
      h.u64(t->buffer());
      h.u64(uint64_t(t->dtype()));
      h.u64(uint64_t(t->low()));
      h.u64(uint64_t(t->high()));
    }
    const uint32_t written = b->written() ? b->written()->size() : 0;
    h.u64(written);
    for (uint32_t i = 0; i < written; ++i) h.u64(b->written()->Get(i));
    stores.emplace_back(u64_field_offset(bytes, b, capgraph::fb::KernelBounds::VT_HASH), h.value());
  }
  u64_stores(bytes, stores);
}

}  // namespace capgraph::test
