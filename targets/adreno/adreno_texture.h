// The images Adreno kernels read through the texture unit (issue 28): a linear RGBA view of one
// buffer (4 channels per texel, float16 or float32), read with isam/isaml, texture t#i and sampler
// s#i where i is the image's place in the kernel's list (AdrenoKernel.images). Written once here,
// in the facts layer, for the compiler (which picks the geometry), the loader (which refuses facts
// the descriptor cannot hold or that reach past the buffer), the dispatch encoder (which writes
// the descriptors) and the fake KGSL (which checks them).
//
// Field layouts: Mesa 25.0.7 src/freedreno/registers/adreno/a6xx.xml, domain A6XX_TEX_CONST
// (16 dwords: 0 TILE_MODE 0-1, SWIZ_X..W 4-15, FMT 22-29; 1 WIDTH 0-14, HEIGHT 15-29; 2 PITCHALIGN
// 0-3, PITCH 7-28, TYPE 29-31; 4 BASE_LO 5-31 (shr 5); 5 BASE_HI 0-16) and A6XX_TEX_SAMP (4 dwords:
// 0 XY_MAG 1-2, XY_MIN 3-4, WRAP_S/T/R 5-7/8-10/11-13; 1 UNNORM_COORDS 5; 2 BCOLOR 7-31), the
// enums a6xx_format (FMT6_16_16_16_16_FLOAT 0x62, FMT6_32_32_32_32_FLOAT 0x82), a6xx_tex_type
// (A6XX_TEX_2D 1), a6xx_tex_clamp (A6XX_TEX_CLAMP_TO_BORDER 3). Alignment: a linear layout's base
// is 64-byte aligned and its pitch at least 64 (fd6_layout.c, base_align 64 and pitchalign 6 + 0);
// tinygrad's QCOM backend writes PITCHALIGN = ctz(pitch) - 6 (../shared/research/adreno_perf.md
// §3, ops_qcom.py), as here. Limits: 16384 texels per side (Mesa's a6xx max_texture_2d_size), at
// most 16 textures (ir3 encodes t# and s# as immediates below 16 without s2en,
// ir3_compiler_nir.c get_tex_samp_tex_src).
#pragma once
#include <cstdint>
#include <string>

namespace capgraph::adreno {

constexpr uint32_t fmt6_16_16_16_16_float = 0x62;
constexpr uint32_t fmt6_32_32_32_32_float = 0x82;
constexpr uint32_t tex_const_dwords = 16, tex_samp_dwords = 4;
constexpr uint32_t max_images = 16;
constexpr uint32_t max_image_extent = 16384;
constexpr uint32_t image_alignment = 64;  // base and pitch, bytes
// The border colour table SP_TP_BORDER_COLOR_BASE_ADDR points at: one 128-byte entry, zero
// (Mesa tu_util.h struct bcolor_entry, alignas(128)); BCOLOR 0 of every sampler selects it.
constexpr uint32_t border_color_bytes = 128;

struct image_facts {
  uint32_t slot = 0;    // the kernel parameter (launch buffer) it views
  uint32_t format = 0;  // a6xx_format
  uint32_t width = 0, height = 0;
  uint32_t pitch = 0;  // bytes
};

// Bytes per texel of `format`: 8 for FMT6_16_16_16_16_FLOAT, 16 for
// FMT6_32_32_32_32_FLOAT, 0 for any other.
uint32_t image_texel_bytes(uint32_t format);
// Bytes from the image's base to the end of its last texel.
uint64_t image_span_bytes(const image_facts &f);
// Whether a descriptor can hold `f` and it stays inside a buffer of `buffer_bytes` bytes; else
// *why names the field and the limit.
bool image_facts_check(const image_facts &f, uint64_t buffer_bytes, std::string *why);
// The A6XX_TEX_CONST descriptor of `f` at GPU address `base` (64-byte aligned): linear, 2D,
// swizzle XYZW.
void image_tex_const(const image_facts &f, uint64_t base, uint32_t out[tex_const_dwords]);
// The A6XX_TEX_SAMP of every image: nearest, unnormalized coordinates, CLAMP_TO_BORDER on S, T
// and R, border colour 0 (a read outside the image gives 0, as a padded border needs).
void image_sampler(uint32_t out[tex_samp_dwords]);

}  // namespace capgraph::adreno
