#include "bridge_image.h"

#include <cstdio>

#include "bridge_protocol.h"

namespace capgraph::bridge {

uint32_t crc32_ieee(const uint8_t *data, size_t size) {
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

static int hex_nibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

bool ihex_to_body(std::string_view text, std::vector<uint8_t> *body, std::string *error) {
  std::vector<uint8_t> mem(0x10000, 0xFF);
  size_t top = 0;
  bool seen_eof = false;
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.empty()) continue;
    if (line[0] != ':' || line.size() < 11 || (line.size() - 1) % 2) {
      *error = "ihex line " + std::to_string(line_no) + ": not a record";
      return false;
    }
    std::vector<uint8_t> rec;
    for (size_t i = 1; i + 1 < line.size(); i += 2) {
      int hi = hex_nibble(line[i]), lo = hex_nibble(line[i + 1]);
      if (hi < 0 || lo < 0) {
        *error = "ihex line " + std::to_string(line_no) + ": bad hex digit";
        return false;
      }
      rec.push_back(uint8_t(hi * 16 + lo));
    }
    uint8_t sum = 0;
    for (uint8_t b : rec) sum = uint8_t(sum + b);
    if (sum != 0 || rec.size() != size_t(rec[0]) + 5) {
      *error = "ihex line " + std::to_string(line_no) + ": bad length or checksum";
      return false;
    }
    unsigned n = rec[0], addr = unsigned(rec[1]) << 8 | rec[2], type = rec[3];
    if (type == 0x01) {
      seen_eof = true;
      break;
    }
    if (type == 0x04) {
      if (n != 2 || rec[4] || rec[5]) {
        *error = "ihex line " + std::to_string(line_no) + ": data above 64 KiB";
        return false;
      }
      continue;
    }
    if (type != 0x00) continue;  // start-address records carry no bytes
    if (addr + n > 0x10000) {
      *error = "ihex line " + std::to_string(line_no) + ": data above 64 KiB";
      return false;
    }
    for (unsigned i = 0; i < n; ++i) mem[addr + i] = rec[4 + i];
    if (addr + n > top) top = addr + n;
  }
  if (!seen_eof) {
    *error = "ihex: no end-of-file record";
    return false;
  }
  mem.resize(top);
  *body = std::move(mem);
  return true;
}

std::vector<uint8_t> image_wrap(const std::vector<uint8_t> &body) {
  std::vector<uint8_t> out;
  uint32_t n = uint32_t(body.size());
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(n >> (8 * i)));
  out.insert(out.end(), body.begin(), body.end());
  uint8_t sum = 0;
  for (uint8_t b : body) sum = uint8_t(sum + b);
  out.push_back(BRIDGE_IMAGE_MAGIC);
  out.push_back(sum);
  uint32_t crc = crc32_ieee(body.data(), body.size());
  for (int i = 0; i < 4; ++i) out.push_back(uint8_t(crc >> (8 * i)));
  return out;
}

static uint32_t le32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

bool image_check(const std::vector<uint8_t> &image, bool require_ours, ImageInfo *info,
                 std::string *error) {
  ImageInfo local;
  ImageInfo &out = info ? *info : local;
  out = ImageInfo{};
  const size_t overhead = BRIDGE_IMAGE_HEADER + BRIDGE_IMAGE_FOOTER;
  if (image.size() < overhead + 1) {
    *error =
        "image is " + std::to_string(image.size()) + " bytes, too short to be a firmware image";
    return false;
  }
  uint32_t n = le32(image.data());
  if (size_t(n) + overhead != image.size()) {
    *error = "image length field says " + std::to_string(n) + " body bytes but the file holds " +
             std::to_string(image.size() - overhead) + " (truncated or not an ASM2464 image)";
    return false;
  }
  if (n > BRIDGE_IMAGE_MAX_BODY) {
    *error = "image body is " + std::to_string(n) + " bytes, more than the " +
             std::to_string(BRIDGE_IMAGE_MAX_BODY) + " the bridge can run";
    return false;
  }
  const uint8_t *body = image.data() + BRIDGE_IMAGE_HEADER;
  const uint8_t *foot = body + n;
  if (foot[0] != BRIDGE_IMAGE_MAGIC) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "image footer magic is 0x%02X, expected 0xA5", foot[0]);
    *error = buf;
    return false;
  }
  uint8_t sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum = uint8_t(sum + body[i]);
  if (sum != foot[1]) {
    *error = "image checksum mismatch (body corrupt)";
    return false;
  }
  uint32_t crc = crc32_ieee(body, n);
  if (crc != le32(foot + 2)) {
    *error = "image CRC32 mismatch (body corrupt)";
    return false;
  }
  out.body_size = n;
  out.crc32 = crc;
  out.sum8 = sum;
  const uint32_t id = BRIDGE_FW_IDENT_ADDR;
  if (n >= id + BRIDGE_FW_IDENT_SIZE &&
      std::string_view((const char *)body + id, 8) == "CGBRIDGE") {
    const uint8_t *p = body + id + 8;
    uint16_t chip = uint16_t(p[0] | p[1] << 8);
    out.proto_major = p[2];
    out.proto_minor = p[3];
    out.fw_major = p[4];
    out.fw_minor = p[5];
    out.fw_patch = p[6];
    out.ours = chip == BRIDGE_CHIP_ID;
    if (require_ours && chip != BRIDGE_CHIP_ID) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "image is capgraph bridge firmware for chip %04X, not %04X",
                    chip, unsigned(BRIDGE_CHIP_ID));
      *error = buf;
      return false;
    }
    if (require_ours && out.proto_major != BRIDGE_PROTOCOL_MAJOR) {
      *error = "image speaks bridge protocol " + std::to_string(out.proto_major) +
               ".x but this capgraph speaks " + std::to_string(BRIDGE_PROTOCOL_MAJOR) + ".x";
      return false;
    }
  } else if (require_ours) {
    *error = "image is a valid ASM2464 image but not capgraph bridge firmware (no identity block)";
    return false;
  }
  return true;
}

std::vector<uint8_t> image_body(const std::vector<uint8_t> &image) {
  return std::vector<uint8_t>(image.begin() + BRIDGE_IMAGE_HEADER,
                              image.end() - BRIDGE_IMAGE_FOOTER);
}

}  // namespace capgraph::bridge
