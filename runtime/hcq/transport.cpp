// The default submit: a ring in host memory, a write pointer and a doorbell, which is how every
// queue-based GPU capgraph drives takes commands.
#include "transport.h"

namespace capgraph::hcq {

uint64_t transport::submit(queue &q, const uint32_t *words, uint64_t count) noexcept {
  const uint64_t ring_dwords = q.ring.size / 4;
  uint64_t pos = q.submitted * q.write_ptr_unit / 4;  // in dwords
  uint64_t written = 0;
  auto *ring = reinterpret_cast<volatile uint32_t *>(q.ring.cpu);
  if (q.no_wrap && pos % ring_dwords + count > ring_dwords) {
    while (pos % ring_dwords) {
      ring[pos % ring_dwords] = 0;
      ++pos;
      ++written;
    }
  }
  for (uint64_t i = 0; i < count; ++i) {
    ring[pos % ring_dwords] = words[i];
    ++pos;
  }
  written += count;
  q.submitted = pos * 4 / q.write_ptr_unit;
  __atomic_thread_fence(__ATOMIC_RELEASE);  // the commands before the write pointer
  *q.write_ptr = q.submitted;
  doorbell(q, q.submitted);
  return written + 2 + 2;  // a 64-bit write pointer and a 64-bit doorbell
}

}  // namespace capgraph::hcq
