// libFuzzer: capture bytes whose checksums are recomputed after mutation, as an attacker would, so
// the ELF linker (elf_link) and the checks behind the checksums (KernelBounds, index tables) see
// hostile objects and facts. Load only: code whose checksum was recomputed is arbitrary code, and
// running it proves nothing about the runtime.
#include <cstdint>
#include <cstring>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "capture_hash.h"

namespace {

namespace fb = capgraph::fb;

// Overwrites the 8-byte scalar field `vt` of `table` (inside `bytes`) if the file stores it.
void u64_store(std::vector<uint8_t> &bytes, const void *table, uint16_t vt, uint64_t v) {
  const uint8_t *p = reinterpret_cast<const flatbuffers::Table *>(table)->GetAddressOf(vt);
  if (p) memcpy(bytes.data() + (p - bytes.data()), &v, 8);
}

// The checksums of every program and kernel bound recomputed in place.
void checksums_recompute(std::vector<uint8_t> &bytes) {
  const fb::Capture *c = fb::GetCapture(bytes.data());
  if (!c->programs()) return;
  for (const fb::Program *p : *c->programs())
    u64_store(bytes, p, fb::Program::VT_HASH, capture_hash(p->binary()->data(), p->binary()->size()));
  if (!c->kernels()) return;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::KernelBounds *b = k->bounds();
    if (!b || k->program() >= c->programs()->size()) continue;
    capture_bounds_hash h(c->programs()->Get(k->program())->hash());
    h.str(k->entry()->c_str(), k->entry()->size());
    h.str(k->twin_entry() ? k->twin_entry()->c_str() : "", k->twin_entry() ? k->twin_entry()->size() : 0);
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
      const fb::IndexTable *t = b->index_tables()->Get(i);
      h.u64(t->buffer());
      h.u64(uint64_t(t->dtype()));
      h.u64(uint64_t(t->low()));
      h.u64(uint64_t(t->high()));
    }
    const uint32_t written = b->written() ? b->written()->size() : 0;
    h.u64(written);
    for (uint32_t i = 0; i < written; ++i) h.u64(b->written()->Get(i));
    u64_store(bytes, b, fb::KernelBounds::VT_HASH, h.value());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // An 8-byte aligned copy (the flatbuffers reader's contract, as capgraph_load_memory makes it).
  std::vector<uint8_t> bytes(data, data + size);
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 1u << 24);
  if (size >= 8 && fb::CaptureBufferHasIdentifier(bytes.data()) && fb::VerifyCaptureBuffer(v))
    checksums_recompute(bytes);
  capgraph_model *m = nullptr;
  char err[512];
  const capgraph_options opts{1};
  if (capgraph_load_memory(bytes.data(), bytes.size(), &opts, &m, err, sizeof err) == CAPGRAPH_OK)
    capgraph_free(m);
  return 0;
}
