// Which steps write and read each planned buffer of a capture: the producer/consumer facts that
// `inspect --json` prints and `view` draws. Derived from the launch list, not stored in the file.
#pragma once
#include <cstdint>
#include <vector>

#include "capgraph/capture_generated.h"

namespace capgraph {

struct BufferUsers {
  std::vector<uint32_t> writers;  // step indices, ascending
  std::vector<uint32_t> readers;  // step indices, ascending (a step that only writes is not here)
};

// One entry per Capture.buffers entry (empty when the capture has no plan). A step uses a planned
// buffer when one of its arena bindings overlaps the buffer's bytes during the buffer's lifetime
// [first_step, last_step]: outside it the same bytes hold other buffers. A launch's first binding
// is the buffer it stores to (the compiler's "slots": the stored buffer first, then the loaded
// ones, compiler/codegen/cpu_codegen.h), so it writes; its other bindings are read. A copy writes
// dst and reads src.
std::vector<BufferUsers> buffer_users(const fb::Capture *c);

}  // namespace capgraph
