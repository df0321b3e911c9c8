#include "bridge_image.h"

#include <doctest/doctest.h>

#include "bridge_protocol.h"

using namespace capgraph::bridge;

static std::vector<uint8_t> our_body() {
  std::vector<uint8_t> b(0x200, 0x00);
  const char id[] = "CGBRIDGE";
  std::copy(id, id + 8, b.begin() + BRIDGE_FW_IDENT_ADDR);
  b[BRIDGE_FW_IDENT_ADDR + 8] = 0x64;
  b[BRIDGE_FW_IDENT_ADDR + 9] = 0x24;
  b[BRIDGE_FW_IDENT_ADDR + 10] = BRIDGE_PROTOCOL_MAJOR;
  return b;
}

TEST_CASE("crc32 matches the IEEE/zlib check value") {
  const char *s = "123456789";
  CHECK(crc32_ieee(reinterpret_cast<const uint8_t *>(s), 9) == 0xCBF43926u);
}

TEST_CASE("ihex to body: records, gaps, checksums") {
  std::vector<uint8_t> body;
  std::string err;
  REQUIRE(ihex_to_body(":03000000020059A2\n:02000500AABB94\n:00000001FF\n", &body, &err));
  REQUIRE(body.size() == 7);
  CHECK(body[0] == 0x02);
  CHECK(body[3] == 0xFF);  // gap
  CHECK(body[6] == 0xBB);
  CHECK_FALSE(ihex_to_body(":03000000020059A3\n:00000001FF\n", &body, &err));
  CHECK(err.find("checksum") != std::string::npos);
  CHECK_FALSE(ihex_to_body(":03000000020059A2\n", &body, &err));
}

TEST_CASE("wrap and check: layout, and every corruption is named") {
  std::vector<uint8_t> img = image_wrap(our_body());
  REQUIRE(img.size() == 0x200 + 10);
  CHECK(img[0] == 0x00);
  CHECK(img[1] == 0x02);
  CHECK(img[4 + 0x200] == 0xA5);
  ImageInfo info;
  std::string err;
  REQUIRE(image_check(img, true, &info, &err));
  CHECK(info.ours);
  CHECK(info.body_size == 0x200);

  auto bad = img;
  bad[10] ^= 1;
  CHECK_FALSE(image_check(bad, true, &info, &err));
  CHECK(err.find("checksum") != std::string::npos);
  bad = img;
  bad.back() ^= 0x80;
  CHECK_FALSE(image_check(bad, true, &info, &err));
  CHECK(err.find("CRC32") != std::string::npos);
  bad = img;
  bad[4 + 0x200] = 0x5A;
  CHECK_FALSE(image_check(bad, true, &info, &err));
  CHECK(err.find("magic") != std::string::npos);
  bad = img;
  bad.pop_back();
  CHECK_FALSE(image_check(bad, true, &info, &err));
  CHECK(err.find("truncated") != std::string::npos);

  std::vector<uint8_t> foreign(0x200, 0x11);
  CHECK(image_check(image_wrap(foreign), false, &info, &err));
  CHECK_FALSE(image_check(image_wrap(foreign), true, &info, &err));
  CHECK(err.find("not capgraph") != std::string::npos);
  auto other = our_body();
  other[BRIDGE_FW_IDENT_ADDR + 8] = 0x63;
  CHECK_FALSE(image_check(image_wrap(other), true, &info, &err));
  CHECK(err.find("chip 2463") != std::string::npos);
  CHECK_FALSE(
      image_check(image_wrap(std::vector<uint8_t>(BRIDGE_IMAGE_MAX_BODY + 1)), false, &info, &err));
}
