// How a device's result word is compared with its host twin's, the one rule of every check
// (`capgraph run --check` in graph_check.cpp, and fake-amd's `:check` mode): words are read as
// float32; finite normal floats (and zeros) match within a tolerance relative to the largest
// |value| the twin wrote (tests/tools/npy_compare's rule: 1e-3 * max + 1e-5); anything else
// (integers, denormal bit patterns, infinities) must be equal bit for bit; two NaNs match.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace capgraph::hcq {

inline double word_tolerance(double twin_max_abs) { return 1e-3 * twin_max_abs + 1e-5; }

// 0 when the words match whatever the tolerance, |a - b| for two ordinary floats, INFINITY when
// they must be equal and are not.
inline double word_difference(uint32_t device, uint32_t twin) {
  if (device == twin) return 0;
  float fd, ft;
  memcpy(&fd, &device, 4);
  memcpy(&ft, &twin, 4);
  if (std::isnan(fd) && std::isnan(ft)) return 0;
  const bool ordinary = (std::isnormal(fd) || fd == 0) && (std::isnormal(ft) || ft == 0);
  return ordinary ? std::fabs(double(fd) - double(ft)) : INFINITY;
}

}  // namespace capgraph::hcq
