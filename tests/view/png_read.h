// Reads the PNG screenshots Chromium writes, so a test can look at the pixels: 8-bit RGB or RGBA
// (also grey and grey+alpha), not interlaced. Anything else is refused with a message.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::view_test {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // width * height * 3, rows top to bottom
  const uint8_t *at(int x, int y) const {
    return &rgb[(size_t(y) * size_t(width) + size_t(x)) * 3];
  }
};

// Decodes a PNG file's bytes; throws std::runtime_error saying what is wrong.
Image png_decode(const std::vector<uint8_t> &file);

}  // namespace capgraph::view_test
