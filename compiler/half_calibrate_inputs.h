// The generated calibration inputs of float16 storage's per-tensor fallback (half_calibrate.h):
// what a compile without `--calibrate` measures float16's error on. One normal draw was not
// enough: PP-OCRv4 det's sigmoid map is 0.028 from float32 on it and 0.0865 on a real page, so a
// capture calibrated on it was silently 0.081 off there. Real inputs are images: spatially
// correlated, with flat regions, edges and thin strokes, which is what pushes a detector's
// outputs onto the steep part of its sigmoid. So there are several kinds, and the fallback is
// decided on the worst of them:
//   smooth   low-frequency fields (a few long cosine waves, the channels correlated) with
//            rectangles laid over them (straight edges, flat regions)
//   page     a document: a bright, unevenly lit background with lines of dark glyph strokes
//            (bars 1-4 pixels thick), the kind of input OCR detectors are trained on
//   texture  multi-scale noise (coarse grids of random values interpolated bilinearly, larger
//            scales weighted more: a 1/f-like spectrum) with a few straight steps across it
//   noise    independent values: a normal draw (mean 0, deviation 1) for float inputs, the whole
//            0..255 range for uint8 (what a model fed with noise, as the family tests are, sees)
// Every image kind is stretched to fill [0, 1]; a uint8 input gets that x 255 (the camera frames
// of comma's models: the model's front scales them), a float input the ImageNet normalisation
// of it, (p - mean) / std per channel (channel c % 3; mean 0.485 0.456 0.406, std 0.229 0.224
// 0.225): values in [-2.12, 2.64], what a normalised RGB image holds (PP-OCR and the torchvision
// classifiers normalise so). The last two dimensions are the image's height and width (a rank-1
// input is one row), the others its channels. Other types get 0. Fixed seeds: the same compile
// gives the same capture.
#pragma once
#include <cstdint>
#include <vector>

#include "graph/tensor.h"

namespace capgraph {

enum class CalibrationKind { smooth, page, texture, noise };
constexpr CalibrationKind kCalibrationKinds[] = {CalibrationKind::smooth, CalibrationKind::page,
                                                 CalibrationKind::texture, CalibrationKind::noise};
const char *calibration_kind_name(CalibrationKind k);

// Fills `bytes` (numel x dtype size) with input values of kind k for a tensor of type t and
// shape `shape`; `seed` varies the draw (per input).
void calibration_input_fill(CalibrationKind k, DType t, const Shape &shape, uint64_t seed,
                            std::vector<uint8_t> &bytes);

// A float rounded to float16 and back (round to nearest even, as a float16 store does: values
// from 65520 on become infinities, NaNs stay NaNs), in integer and float operations a compiler
// vectorises; the same value as half_to_float(half_from_double(v)), only fast.
inline float float_round_half(float v) {
  uint32_t x;
  __builtin_memcpy(&x, &v, 4);
  const uint32_t sign = x & 0x80000000u, a = x ^ sign;
  uint32_t r;
  if (a >= 0x7f800000u)
    r = a;  // infinity, NaN
  else if (a >= 0x38800000u) {
    // float16's normal range (from 2^-14): 10 of the 23 mantissa bits kept, to nearest even; a
    // carry into the exponent is right, and from 65520 on it reaches 2^16: infinity.
    r = (a + 0xfffu + ((a >> 13) & 1u)) & ~0x1fffu;
    if (r >= 0x47800000u) r = 0x7f800000u;
  } else {
    // Subnormal float16: multiples of 2^-24. Adding 0.5 (whose float32 step is 2^-24) rounds to
    // that step, to nearest even, in the default rounding mode (no -ffast-math here: the sum is
    // not folded away).
    float f;
    __builtin_memcpy(&f, &a, 4);
    f = (f + 0.5f) - 0.5f;
    __builtin_memcpy(&r, &f, 4);
  }
  r |= sign;
  float out;
  __builtin_memcpy(&out, &r, 4);
  return out;
}

}  // namespace capgraph
