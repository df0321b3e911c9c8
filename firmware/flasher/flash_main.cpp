// flash_main / devices_print_bridges: the command-line side of the flasher
// (argument parsing, opening the device through libusb).
#include <cstring>

#include "flash.h"
#include "libusb_transport.h"

namespace capgraph::bridge {

static int usage(std::FILE *f) {
  std::fprintf(f,
               "usage: capgraph flash IMAGE [--dry-run] [--device SERIAL|VID:PID] [--backup FILE]\n"
               "                            [--config-restore FILE]\n");
  return 2;
}

int flash_main(int argc, char **argv) {
  FlashOptions opt;
  std::string image_path;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string *out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    if (a == "--dry-run")
      opt.dry_run = true;
    else if (a == "--device") {
      if (!value(&opt.device)) return usage(stderr);
    } else if (a == "--backup") {
      if (!value(&opt.backup_path)) return usage(stderr);
    } else if (a == "--config-restore") {
      if (!value(&opt.config_restore)) return usage(stderr);
    } else if (a == "-h" || a == "--help") {
      usage(stdout);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "capgraph flash: unknown option %s\n", a.c_str());
      return usage(stderr);
    } else if (image_path.empty())
      image_path = a;
    else
      return usage(stderr);
  }
  if (image_path.empty()) return usage(stderr);
  std::vector<uint8_t> image;
  std::string error;
  if (!flash_load_image(image_path, &image, &error)) {
    std::fprintf(stderr, "capgraph flash: %s\n", error.c_str());
    return 1;
  }
  auto t = usb::LibusbTransport::open(opt.device, true, &error);
  if (!t) {
    std::fprintf(stderr, "capgraph flash: %s\n", error.c_str());
    return 1;
  }
  FlashResult r = flash_image(*t, image, opt, stdout);
  if (!r.ok) {
    std::fprintf(stderr, "capgraph flash: %s\n", r.message.c_str());
    return 1;
  }
  std::printf("%s\n", r.message.c_str());
  return 0;
}

int devices_print_bridges(std::FILE *out) {
  std::string error;
  auto list = usb::devices_list_bridges(&error);
  if (!error.empty()) {
    std::fprintf(out, "bridges: %s\n", error.c_str());
    return 1;
  }
  if (list.empty()) std::fprintf(out, "bridges: none attached\n");
  for (const auto &d : list) std::fprintf(out, "bridge %s\n", d.describe().c_str());
  return 0;
}

}  // namespace capgraph::bridge
