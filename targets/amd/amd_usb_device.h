// amd_usb_device — registers `--device usb-libusb[:SERIAL]` (a gfx1100 behind our USB bridge,
// libusb).
#pragma once

namespace capgraph::amd {
void usb_device_register();
}
