// Verifies a capture once, at load: the file identifier, the format version, the flatbuffers
// layout, the target, and every fact replay relies on (offsets inside the arena or a weight,
// indices valid, thread partitions well formed, inputs/outputs consistent, every launch within
// what its kernel's code was compiled for (KernelBounds), index tables in range, every 8-byte
// vector aligned). After this the runtime trusts the capture and replays it blind.
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

// Ceilings on what a capture may ask for, checked before anything is allocated or run. The
// defaults come from load_limits_default(); CAPGRAPH_MAX_ARENA_BYTES and CAPGRAPH_MAX_WORK_SIZE
// override them (load_limits_from_env).
struct load_limits {
  uint64_t max_arena_bytes = 0;  // the arena's size; default: this machine's physical memory
  uint64_t max_work_size = 0;    // one launch's work items; default 2^31
};
load_limits load_limits_default();
// The defaults with the environment's overrides, or CAPGRAPH_ERR_ARGUMENT and *err naming the
// variable that is not a number in range.
capgraph_status load_limits_from_env(load_limits *out, std::string *err);

// The capture format versions this build reads: majors 1 and 2.
constexpr uint16_t k_capture_major_oldest = 1, k_capture_major_newest = 2;
// "versions 1.x and 2.x", for messages.
std::string capture_versions_text();

// What the first look at a capture's bytes finds, in the order it checks: the file identifier, the
// size a flatbuffer can address, the root table and the format version in it (read before the
// rest: a newer major version may lay out the other tables differently, and its reader deserves
// "version" rather than "corrupt"), then the flatbuffers layout of everything. The runtime's
// capture_verify and the capgraph CLI (inspect, view, profile) both start with it and word its
// findings each their own way.
enum class capture_preamble_status : uint8_t {
  ok,
  no_identifier,    // shorter than 8 bytes or no 'CAPG' file identifier
  too_large,        // 2 GiB or more
  bad_root_offset,  // the root table offset points outside the buffer
  bad_root,         // the root table or its version fields are invalid
  bad_version,      // a major version this build does not read (major, minor say which)
  bad_layout,       // the flatbuffers verifier refused the buffer
};
struct capture_preamble {
  capture_preamble_status status = capture_preamble_status::ok;
  uint16_t major = 0, minor = 0;  // when the root table was readable
};
capture_preamble capture_preamble_check(const uint8_t *data, size_t size);

// Returns CAPGRAPH_OK and the root in *out, or an error with *err starting with `label` (the file
// name) and naming the thing that is wrong. `data` must be 8-byte aligned. `device` is the GPU
// target (runtime/hcq/target.h) the capture is loaded for, nullptr for this CPU. A capture
// compiled for another kind of device is CAPGRAPH_ERR_TARGET, saying which device runs it.
capgraph_status capture_verify(const uint8_t *data, size_t size, const char *label,
                               const fb::Capture **out, std::string *err,
                               const hcq::target *device = nullptr,
                               const load_limits *limits = nullptr);

// Bytes per element, or 0 for a value outside the DType enum.
size_t dtype_size(fb::DType t);

}  // namespace capgraph
