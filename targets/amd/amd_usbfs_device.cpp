// `--device usb[:SERIAL]` over usbfs (see amd_usbfs_device.h). Opens the bridge (the first one
// running our firmware, or the one whose USB serial is SERIAL), then the shared open sequence
// (amd_usb.h: PCIe chain, BARs, the GPU's ids, boot or partial boot) and hands out the AM
// transport; closing it tears the GPU down and releases the interface. No step waits unbounded:
// each usbfs transfer carries the bridge's timeout, the AM driver's polls options.timeout_ms.
#include "amd_usbfs_device.h"

#include "amd_am_transport.h"
#include "amd_hcq.h"
#include "amd_usb.h"
#include "hcq/target.h"
#include "usbfs_transport.h"

namespace capgraph::amd {
namespace {

constexpr const char *kHelp = " (drivers/usb/README.md: flashing, the udev rule)";

}  // namespace

capgraph_status usbfs_gpu_open(std::shared_ptr<usb::usbfs_sys> sys, const char *device,
                               const am::device_options &o, std::unique_ptr<hcq::transport> *out,
                               std::string *err) {
  const std::string name(device);
  const std::string serial = name.size() > 4 ? name.substr(4) : std::string();  // "usb:SERIAL"
  // A bridge this process holds already: the model joins its session (amd_usb.h).
  const std::string node = usb::usbfs_bridge_node(*sys, serial);
  const auto open = [&](std::shared_ptr<am_session> *made, std::string *why) {
    std::string e;
    std::unique_ptr<usb::UsbfsTransport> wire = usb::UsbfsTransport::open(sys, serial, &e);
    if (!wire) {
      // The cause names the serial when one was asked for ("no bridge with serial ...").
      *why = "no capgraph bridge on USB: " + e + kHelp;
      return CAPGRAPH_ERR_DEVICE;
    }
    return usb_gpu_session_boot(std::move(wire), o, made, why);
  };
  std::shared_ptr<am_session> s;
  bool joined = false;
  const capgraph_status st =
      usb_gpu_session_get(node.empty() ? "" : "usb " + node, open, &s, &joined, err);
  if (st != CAPGRAPH_OK) return st;
  *out = std::make_unique<am_transport>(s, usb_gpu_model_label(*s, joined));
  return CAPGRAPH_OK;
}

std::string usbfs_gpu_describe(std::shared_ptr<usb::usbfs_sys> sys) {
  std::string why;
  const std::vector<usb::UsbfsDevice> all = usb::usbfs_list_bridges(*sys, &why);
  std::string lines;
  for (const usb::UsbfsDevice &d : all) {
    if (d.stock) continue;
    std::string line = "usb:" + (d.serial.empty() ? std::string("?") : d.serial) + ": " +
                       d.describe() + " (usbfs); ";
    std::string e;
    auto wire = usb::UsbfsTransport::open(sys, d.serial, &e);
    line += wire ? usb_gpu_endpoint_describe(*wire) : "cannot open it: " + e;
    lines += line + "\n";
  }
  if (!lines.empty()) return lines;
  if (!why.empty()) return "usb: no capgraph bridge (" + why + ")\n";
  for (const usb::UsbfsDevice &d : all)
    if (d.stock)
      return "usb: no capgraph bridge (" + d.describe() +
             " runs stock firmware: flash ours with `capgraph flash`)\n";
  return "usb: no capgraph bridge (no ASM2464PD attached)\n";
}

}  // namespace capgraph::amd

namespace capgraph::hcq {

void target_amd_usb_register() {
  target_register(
      "usb",
      [](const char *device, std::unique_ptr<transport> *out, std::string *err) {
        am::device_options o;  // firmware from $CAPGRAPH_AMD_FIRMWARE or /lib/firmware/amdgpu
        return amd::usbfs_gpu_open(usb::usbfs_sys_host(), device, o, out, err);
      },
      &amd_target, [] { return amd::usbfs_gpu_describe(usb::usbfs_sys_host()); });
}

}  // namespace capgraph::hcq
