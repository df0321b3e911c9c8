// bridge_image_pack IN.ihx OUT.img — SDCC's Intel HEX to a wrapped,
// checked ASM2464PD image. Used by the firmware build (build_firmware.cmake).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>

#include "bridge_image.h"

int main(int argc, char **argv) {
  using namespace capgraph::bridge;
  if (argc != 3) {
    std::fprintf(stderr, "usage: bridge_image_pack IN.ihx OUT.img\n");
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "bridge_image_pack: cannot read %s\n", argv[1]);
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<uint8_t> body;
  std::string error;
  if (!ihex_to_body(ss.str(), &body, &error)) {
    std::fprintf(stderr, "bridge_image_pack: %s: %s\n", argv[1], error.c_str());
    return 1;
  }
  std::vector<uint8_t> image = image_wrap(body);
  ImageInfo info;
  if (!image_check(image, true, &info, &error)) {
    std::fprintf(stderr, "bridge_image_pack: %s\n", error.c_str());
    return 1;
  }
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(image.data()), std::streamsize(image.size()));
  if (!out) {
    std::fprintf(stderr, "bridge_image_pack: cannot write %s\n", argv[2]);
    return 1;
  }
  std::printf("bridge image: body %u bytes, crc32 %08x, fw %u.%u.%u\n", info.body_size, info.crc32,
              info.fw_major, info.fw_minor, info.fw_patch);
  return 0;
}
