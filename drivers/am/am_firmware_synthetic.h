// am_firmware_synthetic — a folder of gfx1100 firmware files made of our own
// bytes inside AMD's container layouts, for tests and the future fake GPU
// (issue 14: "synthetic firmware files the tests generate"). No AMD byte is
// ever in them. Piece sizes are those of Debian bookworm's files
// (firmware-amd-graphics 20230210-5, usbgpu_am_plan.md §1.9), so size limits
// (the 512 KiB bridge SRAM a piece is staged in) are exercised as on
// hardware; each piece's bytes are synthetic_firmware_byte(type, i), so a
// fake PSP can check that what reached it is the piece it was told it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::am {

// The bytes of one file, by name (the six of am_chip's gfx1100 row); empty
// for a name it does not make.
std::vector<uint8_t> synthetic_firmware_file(const std::string &name);

// Byte i of a piece: `type` is a psp_fw_type for sOS bins, a gfx_fw_type
// (am_ucode.h) for LOAD_IP_FW pieces; sOS types are offset by 1000 so the
// two enums never give the same bytes.
uint8_t synthetic_firmware_byte(uint32_t type, size_t i);
constexpr uint32_t kSyntheticSosTypeBase = 1000;

// Writes the six gfx1100 files into dir (which must exist). False with a
// message naming the file on a write error.
bool synthetic_firmware_write(const std::string &dir, std::string *err);

}  // namespace capgraph::am
