// How a device's result word is compared with its host twin's, the one rule of every check
// (`capgraph run --check` in graph_check.cpp, and fake-amd's `:check` mode): words are read as
// float32; finite normal floats (and zeros) match within a tolerance relative to the largest
// |value| the twin wrote (tests/tools/npy_compare's rule: 1e-3 * max + 1e-5); anything else
// (integers, denormal bit patterns, infinities) must be equal bit for bit; two NaNs match.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "half_float.h"

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

// float16 storage (capture.fbs Kernel.store_dtype): each 32-bit word holds two halves, each
// compared as a value: finite halves (subnormal ones too: whether the a6xx flushes float16
// subnormals is not published, and the host twin keeps them) within the tolerance, infinities and
// NaNs bit for bit (two NaNs match). Read as one float32, a 1-ulp difference in the low half could
// look like a denormal or an infinity and be called a mismatch.
inline double half_value(uint16_t h) { return half_to_float(h); }
inline double half_difference(uint16_t device, uint16_t twin) {
  if (device == twin) return 0;
  const bool fd = ((device >> 10) & 31) != 31, ft = ((twin >> 10) & 31) != 31;
  if (fd && ft) return std::fabs(half_value(device) - half_value(twin));
  const bool nd = !fd && (device & 1023), nt = !ft && (twin & 1023);
  return nd && nt ? 0 : INFINITY;
}
inline double word_difference(uint32_t device, uint32_t twin, bool half) {
  if (!half) return word_difference(device, twin);
  return std::fmax(half_difference(uint16_t(device), uint16_t(twin)),
                   half_difference(uint16_t(device >> 16), uint16_t(twin >> 16)));
}
// The largest finite |value| in a word (two halves when `half`), for the tolerance.
inline double word_max_abs(uint32_t w, bool half) {
  if (!half) {
    float f;
    memcpy(&f, &w, 4);
    return std::isfinite(f) ? std::fabs(double(f)) : 0;
  }
  double m = 0;
  for (uint16_t h : {uint16_t(w), uint16_t(w >> 16)})
    if (((h >> 10) & 31) != 31) m = std::fmax(m, std::fabs(half_value(h)));
  return m;
}

// The fakes' `:check` tally over the spans a kernel wrote (fake-adreno, fake-amd, fake-nv): the
// largest |value| the twin wrote sets the tolerance, then each word pair is compared; the worst
// difference is kept with its address (the caller's: a GPU address, or a binding and offset).
struct word_tally {
  bool half = false;  // words hold two float16 values
  double max_ref = 0, max_diff = 0;
  uint64_t differ = 0, worst_at = 0;
  bool exact_mismatch = false;

  // The twin's words (only those that differ from `before`, when given) into the tolerance.
  void reference(const uint8_t *twin, uint64_t bytes, const uint8_t *before = nullptr) {
    for (uint64_t o = 0; o + 4 <= bytes; o += 4) {
      uint32_t t;
      memcpy(&t, twin + o, 4);
      if (before) {
        uint32_t b;
        memcpy(&b, before + o, 4);
        if (b == t) continue;
      }
      max_ref = std::fmax(max_ref, word_max_abs(t, half));
    }
  }
  void compare(const uint8_t *device, const uint8_t *twin, uint64_t bytes, uint64_t address) {
    for (uint64_t o = 0; o + 4 <= bytes; o += 4) {
      uint32_t d, t;
      memcpy(&d, device + o, 4);
      memcpy(&t, twin + o, 4);
      if (d == t) continue;
      ++differ;
      const double diff = word_difference(d, t, half);
      if (diff == 0) continue;
      const bool exact = std::isinf(diff);
      exact_mismatch |= exact;
      if (diff > max_diff || (exact && !max_diff)) {
        max_diff = diff;
        worst_at = address + o;
      }
    }
  }
  double tolerance() const { return word_tolerance(max_ref); }
  bool match() const { return !exact_mismatch && max_diff <= tolerance(); }
};

}  // namespace capgraph::hcq
