// PNG facts from the W3C PNG specification (2nd edition, 2003): the 8-byte signature; chunks of
// length (big-endian), type, data, CRC; IHDR first; image data is the concatenation of all IDAT
// chunks, one zlib stream; each scanline starts with a filter type byte 0..4 (None, Sub, Up,
// Average, Paeth, section 9.2).
#include "png_read.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace capgraph::view_test {

namespace {

uint32_t be32(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

int paeth(int a, int b, int c) {
  const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
  if (pa <= pb && pa <= pc) return a;
  return pb <= pc ? b : c;
}

}  // namespace

Image png_decode(const std::vector<uint8_t> &file) {
  static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (file.size() < 8 || std::memcmp(file.data(), signature, 8) != 0)
    throw std::runtime_error("PNG: no PNG signature");
  Image img;
  int channels = 0;
  std::vector<uint8_t> compressed;
  for (size_t pos = 8; pos + 12 <= file.size();) {
    const uint32_t len = be32(&file[pos]);
    const std::string type(reinterpret_cast<const char *>(&file[pos + 4]), 4);
    if (len > file.size() - pos - 12)
      throw std::runtime_error("PNG: chunk " + type + " runs past the end");
    const uint8_t *data = &file[pos + 8];
    if (type == "IHDR") {
      if (len < 13) throw std::runtime_error("PNG: short IHDR");
      img.width = int(be32(data));
      img.height = int(be32(data + 4));
      const int depth = data[8], colour = data[9], interlace = data[12];
      channels = colour == 0 ? 1 : colour == 2 ? 3 : colour == 4 ? 2 : colour == 6 ? 4 : 0;
      if (depth != 8 || channels == 0 || interlace != 0)
        throw std::runtime_error("PNG: only 8-bit grey/RGB(A) without interlacing is read (depth " +
                                 std::to_string(depth) + ", colour type " + std::to_string(colour) +
                                 ", interlace " + std::to_string(interlace) + ")");
      if (img.width <= 0 || img.height <= 0 || img.width > 20000 || img.height > 20000)
        throw std::runtime_error("PNG: bad size");
    } else if (type == "IDAT") {
      compressed.insert(compressed.end(), data, data + len);
    } else if (type == "IEND") {
      break;
    }
    pos += 12 + len;
  }
  if (channels == 0) throw std::runtime_error("PNG: no IHDR");
  const size_t stride = size_t(img.width) * size_t(channels);
  std::vector<uint8_t> raw((stride + 1) * size_t(img.height));
  uLongf raw_len = uLongf(raw.size());
  if (uncompress(raw.data(), &raw_len, compressed.data(), uLong(compressed.size())) != Z_OK ||
      raw_len != raw.size())
    throw std::runtime_error("PNG: the image data does not inflate to " +
                             std::to_string(raw.size()) + " bytes");
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  img.rgb.resize(size_t(img.width) * size_t(img.height) * 3);
  for (int y = 0; y < img.height; y++) {
    const uint8_t *line = &raw[size_t(y) * (stride + 1)];
    const int filter = line[0];
    for (size_t x = 0; x < stride; x++) {
      const int a = x >= size_t(channels) ? cur[x - size_t(channels)] : 0, b = prev[x],
                c = x >= size_t(channels) ? prev[x - size_t(channels)] : 0;
      int pred;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) / 2; break;
        case 4: pred = paeth(a, b, c); break;
        default:
          throw std::runtime_error("PNG: bad filter type " + std::to_string(filter) + " on row " +
                                   std::to_string(y));
      }
      cur[x] = uint8_t(line[1 + x] + pred);
    }
    for (int x = 0; x < img.width; x++) {
      const uint8_t *p = &cur[size_t(x) * size_t(channels)];
      uint8_t *o = &img.rgb[(size_t(y) * size_t(img.width) + size_t(x)) * 3];
      // Grey (+alpha) spreads to three channels; alpha is ignored (screenshots are opaque).
      if (channels <= 2)
        o[0] = o[1] = o[2] = p[0];
      else
        o[0] = p[0], o[1] = p[1], o[2] = p[2];
    }
    std::swap(prev, cur);
  }
  return img;
}

}  // namespace capgraph::view_test
