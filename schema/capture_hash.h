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
