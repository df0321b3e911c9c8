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
#include "capture_rehash.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // An 8-byte aligned copy (the flatbuffers reader's contract, as capgraph_load_memory makes it).
  std::vector<uint8_t> bytes(data, data + size);
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 1u << 24);
  if (size >= 8 && capgraph::fb::CaptureBufferHasIdentifier(bytes.data()) &&
      capgraph::fb::VerifyCaptureBuffer(v))
    capgraph::test::capture_checksums_recompute(bytes);
  capgraph_model *m = nullptr;
  char err[512];
  const capgraph_options opts{1};
  if (capgraph_load_memory(bytes.data(), bytes.size(), &opts, &m, err, sizeof err) == CAPGRAPH_OK)
    capgraph_free(m);
  return 0;
}
