// `--device fake-usb`: the host code of a GPU behind the USB bridge (drivers/usb's Bridge and
// pci_function_usb, drivers/am's boot, targets/amd's am_transport), run against the emulated
// ASM2464PD executing our firmware image with the register-model gfx1100 behind it, whose
// queues run on fake-amd's packet interpreter and RDNA3 emulator. Each open plugs a fresh
// emulated bridge in, walks PCIe, boots the GPU and hands the transport out; closing it tears
// the GPU down. The GPU model lives as long as the process, so a second open in one process
// finds the last session clean and partial-boots (across processes the GPU is always cold: no
// state file).
#include "fake_usb.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include <unistd.h>

#include "am_device.h"
#include "am_firmware_synthetic.h"
#include "amd_hcq.h"
#include "amd_usb.h"
#include "asm2464_model.h"
#include "bridge.h"
#include "bridge_protocol.h"
#include "emu_transport.h"
#include "gfx1100_hcq.h"
#include "gfx1100_model.h"
#include "usb_pci.h"

namespace capgraph::emu {
namespace {

Gfx1100Model &gpu_model() {
  static Gfx1100Model gpu;
  return gpu;
}

// One plugged-in bridge and the booted GPU behind it.
struct session {
  Asm2464 dev;
  EmuTransport wire{dev};
  amd::usb_gpu g{wire};  // the same open sequence as `--device usb` (targets/amd/amd_usb.h)
};

class fake_usb_transport final : public Gfx1100Transport {
 public:
  fake_usb_transport(std::unique_ptr<session> s, std::string label)
      : Gfx1100Transport(*s->g.gpu, gpu_model(), std::move(label)), s_(std::move(s)) {}
  ~fake_usb_transport() override {
    std::string e;
    if (!s_->g.gpu->teardown(&e)) fprintf(stderr, "fake-usb: %s\n", e.c_str());
  }

 private:
  std::unique_ptr<session> s_;
};

capgraph_status fail(std::string *err, const std::string &why) {
  *err = "fake-usb: " + why;
  return CAPGRAPH_ERR_DEVICE;
}

capgraph_status fake_usb_open(const char *device, std::unique_ptr<hcq::transport> *out, std::string *err) {
  if (std::string(device) != "fake-usb") {
    *err = std::string("fake-usb: '") + device + "': the fake has one bridge and no options";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  std::vector<uint8_t> image;
  {
    std::ifstream in(CAPGRAPH_BRIDGE_FW_IMAGE, std::ios::binary);
    if (in) image.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (image.empty())
    return fail(err, "no bridge firmware image at " CAPGRAPH_BRIDGE_FW_IMAGE " (built with sdcc; see firmware/README.md)");
  // Our synthetic gfx1100 firmware files (the model checks every byte the PSP is handed), once.
  static const std::string fw_dir = [] {
    namespace fs = std::filesystem;
    const fs::path d = fs::temp_directory_path() / ("capgraph_fake_usb_fw_" + std::to_string(::getpid()));
    std::error_code ec;
    fs::create_directories(d, ec);
    std::string e;
    return am::synthetic_firmware_write(d.string(), &e) ? d.string() : std::string();
  }();
  if (fw_dir.empty()) return fail(err, "cannot write the synthetic gfx1100 firmware files to the temporary folder");

  auto s = std::make_unique<session>();
  std::fill(s->dev.flash.data.begin(), s->dev.flash.data.end(), 0xFF);
  if (BRIDGE_FLASH_IMAGE_ADDR + image.size() > s->dev.flash.data.size())
    return fail(err, "the bridge firmware image does not fit the emulated flash");
  std::copy(image.begin(), image.end(), s->dev.flash.data.begin() + BRIDGE_FLASH_IMAGE_ADDR);
  s->dev.flash.set_otp_serial(0x0BADCAFE);
  gpu_model().attach(s->dev.endpoint);
  if (s->dev.power_on() != Asm2464::Mode::firmware) return fail(err, "the emulated bridge did not start its firmware");
  Enumeration en;
  std::string why;
  if (!usb_enumerate(s->dev, &en, &why)) return fail(err, "USB enumeration: " + why);
  am::device_options o;
  o.firmware_dir = fw_dir;
  if (!amd::usb_gpu_open(s->g, o, &why)) return fail(err, why);
  const std::string label = amd::usb_gpu_label(s->g, "fake-usb");
  *out = std::make_unique<fake_usb_transport>(std::move(s), label);
  return CAPGRAPH_OK;
}

}  // namespace

void fake_usb_register() {
  hcq::target_register("fake-usb", &fake_usb_open, &hcq::amd_target, [] {
    return std::string(
        "fake-usb: a fake gfx1100 behind the emulated USB bridge running our firmware image: the "
        "`usb` device's host code end to end (boot, AM transport), kernels in the RDNA3 emulator; "
        "cold boot per process, partial boot on a second open in one process; measures no time\n");
  });
}

}  // namespace capgraph::emu
