// fake_usb — registers `--device fake-usb` (see fake_usb.cpp), and the pieces the fake usbfs
// (fake_usbfs.h) shares with it: the process's GPU model, its state file, the synthetic gfx1100
// firmware and an emulated bridge plugged in with our firmware image.
#pragma once

#include <string>

#include "asm2464_model.h"
#include "gfx1100_model.h"

namespace capgraph::amd {
void fake_usb_register();
}  // namespace capgraph::amd

namespace capgraph::emu {

// The register-model gfx1100 of this process (one GPU behind every emulated bridge).
gfx1100_model &fake_usb_gpu_model();
// Once per process, before the first boot: the GPU as the last process left it
// (CAPGRAPH_FAKE_USB_STATE); false with *err naming the file when it is refused.
bool fake_usb_gpu_state_load(std::string *err);
// After each session (CAPGRAPH_FAKE_USB_STATE; nothing without it).
void fake_usb_gpu_state_save();
// The folder of our synthetic gfx1100 firmware files, written once per process; "" on failure.
const std::string &fake_usb_firmware_dir();
// Loads the bridge firmware image (image_option, else $CAPGRAPH_BRIDGE_IMAGE, else bridge_fw.img
// beside the program) into dev's flash, attaches the GPU model and powers it on; false with *why.
bool fake_usb_bridge_plug(Asm2464 &dev, const std::string &image_option, std::string *why);

}  // namespace capgraph::emu
