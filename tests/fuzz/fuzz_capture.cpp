// libFuzzer: capture bytes through capgraph_load_memory (verify, link, plan) and, when the file is
// accepted, one replay on zero inputs (the arena starts zeroed). Machine code is covered by its
// checksum, so mutated code is refused at load and only compiled code ever runs: whatever else the
// mutation changed, the replay must stay inside what was allocated (issue 16).
#include <cstdint>

#include "capgraph_runtime.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const capgraph_options opts{1};  // one thread: no pool to start per input
  capgraph_model *m = nullptr;
  char err[512];
  if (capgraph_load_memory(data, size, &opts, &m, err, sizeof err) != CAPGRAPH_OK) return 0;
  capgraph_run(m);
  capgraph_free(m);
  return 0;
}
