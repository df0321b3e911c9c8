// bridge_image — the ASM2464PD firmware image format: build it from SDCC's
// Intel HEX output and check one before it goes near a flash chip.
//
// Format (Sources: tinygrad/asm2464pd-firmware handmade/Makefile target
// firmware_wrapped.bin, emulate/emu.py load_firmware):
//   LE32 body length | body | 0xA5 | 8-bit sum of body | LE32 CRC32(body)
// CRC32 is the zlib/IEEE 802.3 one (reflected poly 0xEDB88320).
// On top of the chip's format, our bodies carry an identity block at
// BRIDGE_FW_IDENT_ADDR (bridge_protocol.h) that says "capgraph bridge
// firmware, chip 2464, protocol x.y, version a.b.c".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace capgraph::bridge {

uint32_t crc32_ieee(const uint8_t *data, size_t size);

// Intel HEX (record types 00, 01; 04 with upper address 0) to a flat body
// from address 0 to the highest byte written; gaps are 0xFF (erased flash).
// Returns false and sets *error on malformed input or bad record checksums.
bool ihex_to_body(std::string_view text, std::vector<uint8_t> *body, std::string *error);

std::vector<uint8_t> image_wrap(const std::vector<uint8_t> &body);

struct ImageInfo {
  uint32_t body_size = 0;
  uint32_t crc32 = 0;
  uint8_t sum8 = 0;
  bool ours = false;  // identity block present and for this chip
  uint8_t proto_major = 0, proto_minor = 0;
  uint8_t fw_major = 0, fw_minor = 0, fw_patch = 0;
};

// Checks the wrapper (length, magic, sum, CRC, size budget). With
// require_ours, also that the body is capgraph bridge firmware for the
// ASM2464PD. On failure returns false with a sentence a person can act on.
bool image_check(const std::vector<uint8_t> &image, bool require_ours, ImageInfo *info,
                 std::string *error);

// The body of a wrapped image (caller has checked it).
std::vector<uint8_t> image_body(const std::vector<uint8_t> &image);

}  // namespace capgraph::bridge
