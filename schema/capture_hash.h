// The checksum a capture stores for each program binary, shared by the compiler (writes it) and
// the runtime (checks it at load). FNV-1a, 64 bit: tiny, fast enough for kernel code (hundreds of
// KiB at most) and catches any flipped bit or truncation of the code.
#pragma once
#include <stddef.h>
#include <stdint.h>

static inline uint64_t capture_hash(const uint8_t *data, size_t size) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  for (size_t i = 0; i < size; i++) {
    h ^= data[i];
    h *= 1099511628211ull;  // FNV prime
  }
  return h;
}

#ifdef __cplusplus
// KernelBounds.hash (capture.fbs): FNV-1a 64 over the facts in a fixed order, each integer as 8
// little-endian bytes and each string as its length then its bytes, so that the compiler (from its
// own vectors) and the runtime (from the flatbuffer, element by element: its vectors need not be
// aligned) compute the same value without building the same byte layout.
class capture_bounds_hash {
 public:
  explicit capture_bounds_hash(uint64_t program_hash) { u64(program_hash); }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; i++) byte(uint8_t(v >> (8 * i)));
  }
  void str(const char *s, size_t n) {
    u64(n);
    for (size_t i = 0; i < n; i++) byte(uint8_t(s[i]));
  }
  uint64_t value() const { return h_; }

 private:
  void byte(uint8_t b) {
    h_ ^= b;
    h_ *= 1099511628211ull;
  }
  uint64_t h_ = 14695981039346656037ull;
};
#endif
