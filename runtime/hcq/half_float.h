// float16 bits to float32, exact (every float16 value, subnormals included, is a float32 value):
// the compiler's tensors, the ir3 emulator, the PTX interpreter and the checks' word rule share
// it. IEEE 754 binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits.
#pragma once
#include <cstdint>
#include <cstring>

namespace capgraph::hcq {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16, exp = h >> 10 & 31, man = h & 1023;
  uint32_t bits;
  if (exp == 0 && man == 0) {
    bits = sign;
  } else if (exp == 0) {  // subnormal, man * 2^-24: renormalized in bits (no FPU, so the
                          // caller's flush-to-zero mode cannot touch it)
    int e = 127 - 15 + 1;
    uint32_t m = man;
    while (!(m & 1024)) m <<= 1, e--;
    bits = sign | uint32_t(e) << 23 | (m & 1023) << 13;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | man << 13;  // infinity, NaN (payload kept)
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

}  // namespace capgraph::hcq
