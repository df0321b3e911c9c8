// Verifies a capture once, at load: the file identifier, the format version, the flatbuffers
// layout, the target, and every fact replay relies on (offsets inside the arena or a weight,
// indices valid, thread partitions well formed, inputs/outputs consistent). After this the
// runtime trusts the capture and replays it blind.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"

namespace capgraph::hcq {
struct target;
}

namespace capgraph {

// The most threads a capture (or a caller) may ask for.
constexpr uint32_t k_max_threads = 1024;

// Returns CAPGRAPH_OK and the root in *out, or an error with *err starting with `label` (the file
// name) and naming the thing that is wrong. `data` must be 8-byte aligned. `device` is the GPU
// target (runtime/hcq/target.h) the capture is loaded for, nullptr for this CPU. A capture
// compiled for another kind of device is CAPGRAPH_ERR_TARGET, saying which device runs it.
capgraph_status capture_verify(const uint8_t *data, size_t size, const char *label,
                               const fb::Capture **out, std::string *err,
                               const hcq::target *device = nullptr);

// Bytes per element, or 0 for a value outside the DType enum.
size_t dtype_size(fb::DType t);

}  // namespace capgraph
