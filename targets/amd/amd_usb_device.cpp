// `--device usb-libusb[:SERIAL]`: a gfx1100 behind an ASM2464PD bridge running our firmware, over
// libusb, in the CLI (the runtime's own `usb` goes through usbfs, amd_usbfs_device.cpp; this one
// is for hosts without usbfs).
// Opens the bridge (the first one running our firmware, or the one whose USB serial is SERIAL),
// then the shared open sequence (amd_usb.h: PCIe chain, BARs, the GPU's ids, boot or partial
// boot) and hands out the AM transport; closing it tears the GPU down and releases the bridge.
// No step waits unbounded: libusb transfers carry the bridge's timeout, the AM driver's polls
// options.timeout_ms.
#include "amd_usb_device.h"

#include <cstdio>
#include <memory>

#include "amd_am_transport.h"
#include "amd_hcq.h"
#include "amd_usb.h"
#include "bridge_protocol.h"
#include "hcq/target.h"
#include "libusb_transport.h"

namespace capgraph::amd {
namespace {

// Our firmware's bridges on the machine, or why there is none ("" and a filled list when fine).
std::string bridges_ours(std::vector<usb::BridgeDevice> *ours,
                         std::vector<usb::BridgeDevice> *all) {
  std::string error;
  *all = usb::devices_list_bridges(&error);
  if (!error.empty()) return "libusb: " + error;
  for (const auto &d : *all)
    if (d.vid == BRIDGE_USB_VID && d.pid == BRIDGE_USB_PID) ours->push_back(d);
  if (!ours->empty()) return "";
  if (all->empty()) return "no ASM2464PD attached";
  return "the attached ASM2464PD runs stock firmware (flash ours with `capgraph flash`)";
}

capgraph_status usb_open(const char *device, std::unique_ptr<hcq::transport> *out,
                         std::string *err) {
  const std::string name(device);
  const std::string serial =
      name.size() > 11 ? name.substr(11) : std::string();  // "usb-libusb:SERIAL"
  std::vector<usb::BridgeDevice> ours, all;
  const std::string why = bridges_ours(&ours, &all);
  if (!why.empty()) {
    *err = "no capgraph bridge on USB: " + why + " (drivers/usb/README.md: flashing, udev rule)";
    return CAPGRAPH_ERR_DEVICE;
  }
  // A bridge this process holds already (through usb-libusb or usb): the model joins its
  // session (amd_usb.h). The one LibusbTransport::open takes: the first of ours with the serial.
  std::string key;
  for (const auto &d : ours)
    if (key.empty() && (serial.empty() || d.serial == serial)) {
      char b[48];
      std::snprintf(b, sizeof b, "usb /dev/bus/usb/%03u/%03u", d.bus, d.address);
      key = b;
    }
  const auto open = [&](std::shared_ptr<am_session> *made, std::string *why) {
    std::string e;
    std::unique_ptr<usb::LibusbTransport> wire = usb::LibusbTransport::open(serial, false, &e);
    if (!wire) {
      *why = "no capgraph bridge on USB" +
             std::string(serial.empty() ? "" : " with serial " + serial) + ": " + e;
      return CAPGRAPH_ERR_DEVICE;
    }
    am::device_options o;  // firmware from $CAPGRAPH_AMD_FIRMWARE or /lib/firmware/amdgpu
    return usb_gpu_session_boot(std::move(wire), o, made, why);
  };
  std::shared_ptr<am_session> s;
  bool joined = false;
  const capgraph_status st = usb_gpu_session_get(key, open, &s, &joined, err);
  if (st != CAPGRAPH_OK) return st;
  *out = std::make_unique<am_transport>(s, usb_gpu_model_label(*s, joined));
  return CAPGRAPH_OK;
}

// `capgraph devices`: each bridge running our firmware and the PCIe endpoint behind it (without
// booting it), or why not.
std::string usb_describe() {
  std::vector<usb::BridgeDevice> ours, all;
  const std::string why = bridges_ours(&ours, &all);
  if (!why.empty()) return "usb-libusb: no capgraph bridge (" + why + ")\n";
  std::string lines;
  for (const auto &d : ours) {
    std::string line = "usb-libusb:" + (d.serial.empty() ? std::string("?") : d.serial) + ": " +
                       d.describe() + "; ";
    std::string e;
    auto wire = usb::LibusbTransport::open(d.serial, false, &e);
    line += wire ? usb_gpu_endpoint_describe(*wire) : "cannot open it: " + e;
    lines += line + "\n";
  }
  return lines;
}

}  // namespace

void usb_device_register() {
  hcq::target_register("usb-libusb", &usb_open, &hcq::amd_target, &usb_describe);
}

}  // namespace capgraph::amd
