// amd_usbfs_device — `--device usb[:SERIAL]` in the dependency-free runtime: a gfx1100 behind our
// ASM2464PD bridge, reached through Linux's usbfs (drivers/usb/usbfs_transport.h), no libusb.
#pragma once

#include <memory>
#include <string>

#include "am_device.h"
#include "capgraph_runtime.h"
#include "hcq/transport.h"
#include "usbfs_sys.h"

namespace capgraph::amd {

// Opens `device` ("usb" or "usb:SERIAL") through `sys`: the bridge, then the shared open sequence
// (amd_usb.h). `what` names the device in messages and the label ("usb").
capgraph_status usbfs_gpu_open(std::shared_ptr<usb::usbfs_sys> sys, const char *device,
                               const am::device_options &o, std::unique_ptr<hcq::transport> *out,
                               std::string *err);
// `capgraph-run --devices` lines for the bridges `sys` shows (without booting the GPU).
std::string usbfs_gpu_describe(std::shared_ptr<usb::usbfs_sys> sys);

}  // namespace capgraph::amd

namespace capgraph::hcq {
// Registers `usb` over the real usbfs (called by target_amd_register).
void target_amd_usb_register();
}  // namespace capgraph::hcq
