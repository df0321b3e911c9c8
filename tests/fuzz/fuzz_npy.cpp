// libFuzzer: .npy bytes through npy_parse (the reader of every `run` input). A parse either fails
// with a message or gives an array whose data size matches its shape and dtype.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  capgraph::npy_array a;
  std::string err;
  if (!capgraph::npy_parse(data, size, "fuzz.npy", &a, &err)) {
    if (err.rfind("fuzz.npy: ", 0) != 0) abort();  // every message names the file
    return 0;
  }
  uint64_t n = capgraph::npy_dtype_size(a.dtype);
  for (int64_t d : a.shape) {
    if (d < 0) abort();
    n *= uint64_t(d);
  }
  if (n != a.data.size()) abort();
  return 0;
}
