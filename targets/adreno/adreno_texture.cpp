#include "adreno_texture.h"

#include <bit>

namespace capgraph::adreno {

uint32_t image_texel_bytes(uint32_t format) {
  return format == fmt6_16_16_16_16_float ? 8 : format == fmt6_32_32_32_32_float ? 16 : 0;
}

uint64_t image_span_bytes(const image_facts &f) {
  if (!f.width || !f.height) return 0;
  return uint64_t(f.pitch) * (f.height - 1) + uint64_t(f.width) * image_texel_bytes(f.format);
}

bool image_facts_check(const image_facts &f, uint64_t buffer_bytes, std::string *why) {
  const auto bad = [&](const std::string &s) { return *why = s, false; };
  const uint32_t texel = image_texel_bytes(f.format);
  if (!texel)
    return bad("format " + std::to_string(f.format) +
               " is not FMT6_16_16_16_16_FLOAT (0x62) or FMT6_32_32_32_32_FLOAT (0x82)");
  if (!f.width || f.width > max_image_extent || !f.height || f.height > max_image_extent)
    return bad("size " + std::to_string(f.width) + "x" + std::to_string(f.height) +
               " is not 1 to " + std::to_string(max_image_extent) + " texels a side");
  if (f.pitch % image_alignment || uint64_t(f.pitch) < uint64_t(f.width) * texel ||
      f.pitch >= (1u << 22))
    return bad("pitch " + std::to_string(f.pitch) + " is not a multiple of " +
               std::to_string(image_alignment) + " bytes, at least a row (" +
               std::to_string(uint64_t(f.width) * texel) + " bytes) and below 2^22");
  if (image_span_bytes(f) > buffer_bytes)
    return bad("its " + std::to_string(image_span_bytes(f)) + " bytes reach past its " +
               std::to_string(buffer_bytes) + "-byte buffer");
  return true;
}

void image_tex_const(const image_facts &f, uint64_t base, uint32_t out[tex_const_dwords]) {
  for (uint32_t i = 0; i < tex_const_dwords; ++i) out[i] = 0;
  // Word 0: TILE_MODE 0 (linear), SWIZ_X..W = X, Y, Z, W (0..3), FMT.
  out[0] = 0u << 4 | 1u << 7 | 2u << 10 | 3u << 13 | (f.format & 0xff) << 22;
  out[1] = (f.width & 0x7fff) | (f.height & 0x7fff) << 15;
  // PITCHALIGN: log2(alignment / 64) of the pitch, at most 15.
  const uint32_t align = f.pitch ? uint32_t(std::countr_zero(f.pitch)) : 6;
  const uint32_t pitchalign = align < 6 ? 0 : align - 6 > 15 ? 15 : align - 6;
  out[2] = pitchalign | (f.pitch & 0x3fffff) << 7 | 1u << 29;  // TYPE = A6XX_TEX_2D
  out[4] = uint32_t(base) & ~31u;                              // BASE_LO (shr 5)
  out[5] = uint32_t(base >> 32) & 0x1ffff;                     // BASE_HI
}

void image_sampler(uint32_t out[tex_samp_dwords]) {
  constexpr uint32_t clamp_to_border = 3, nearest = 0;
  out[0] = nearest << 1 | nearest << 3 | clamp_to_border << 5 | clamp_to_border << 8 |
           clamp_to_border << 11;
  out[1] = 1u << 5;  // UNNORM_COORDS: integer texel coordinates, as isam uses them
  out[2] = 0;        // BCOLOR 0: the first (zero) border colour entry
  out[3] = 0;
}

}  // namespace capgraph::adreno
