// Timeline signals: a 64-bit value the device raises and a timestamp it writes, 16 bytes in
// memory both sides see. Values only grow; comparisons are wrap-safe (a value counts as reached
// when it is at most 2^63 - 1 ahead of the target), so a timeline may run through 2^64.
#pragma once
#include <cstdint>

namespace capgraph::hcq {

struct signal {
  volatile uint64_t value;
  volatile uint64_t timestamp;  // GPU clock when the value was written (where the engine can)
};
static_assert(sizeof(signal) == 16);

inline bool timeline_reached(uint64_t current, uint64_t target) {
  return int64_t(current - target) >= 0;
}

}  // namespace capgraph::hcq
