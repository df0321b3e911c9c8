// Two small things every driver, fake and replay loop needs: a monotonic clock for bounded waits
// and one spelling of numbers in messages. Header-only so drivers and fakes need no extra library.
#pragma once
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace capgraph {

// Monotonic nanoseconds (steady_clock): what every deadline and every replay timing is measured by.
inline uint64_t now_ns() noexcept {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

// "0x1f": addresses, register values and sizes in error messages, one spelling everywhere.
inline std::string hex(uint64_t v) {
  char s[24];
  snprintf(s, sizeof s, "0x%llx", (unsigned long long)v);
  return s;
}

}  // namespace capgraph
