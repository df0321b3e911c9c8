// amd_usb — the open sequence of a gfx1100 behind the USB bridge, shared by `--device usb` (libusb,
// amd_usb_device.cpp) and `--device fake-usb` (the emulated bridge,
// targets/amd/fake/gfx1100/fake_usb.cpp): the caller brings the USB transport, this speaks the
// bridge protocol, powers PCIe, walks and numbers the switch chain, places the BARs, checks the
// endpoint is the GPU we drive, and boots it (partial boot when a previous session left it up). One
// copy, so the fake tests the real path.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "am_device.h"
#include "amd_am_transport.h"
#include "bridge.h"
#include "capgraph_runtime.h"
#include "usb_pci.h"

namespace capgraph::hcq {
class transport;
}

namespace capgraph::amd {

// The chip the AM driver boots (drivers/am): Navi 31, RX 7900 XTX.
// Sources: Linux drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c (0x744C, CHIP_IP_DISCOVERY).
constexpr uint16_t kUsbGpuVendor = 0x1002, kUsbGpuDevice = 0x744C;

// One bridge and the booted GPU behind it. The USB transport outlives it (the caller owns it).
struct usb_gpu {
  explicit usb_gpu(usb::BridgeTransport &wire) : bridge(wire) {}
  usb::Bridge bridge;
  usb::PciChain chain;
  std::unique_ptr<usb::pci_function_usb> pci;
  std::unique_ptr<am::device> gpu;
};

// Brings the GPU behind `wire` up. False with *err naming the step (the bridge's answer, the PCIe
// bus, the endpoint's ids, the AM driver's boot step); every step is bounded by the bridge's and
// the driver's timeouts. On failure `g` holds whatever was set up (its destructor frees it).
bool usb_gpu_open(usb_gpu &g, const am::device_options &o, std::string *err);

// What sits behind the bridge on `wire`, for `capgraph devices` (powers PCIe and walks the chain,
// boots nothing): "PCIe endpoint 1002:744c at bus 4 (RX 7900 XTX, gfx1100)" or "no GPU: why".
std::string usb_gpu_endpoint_describe(usb::BridgeTransport &wire);

// The label a transport shows: "<what> <pci name> (cold boot|partial boot)".
std::string usb_gpu_label(const usb_gpu &g, const std::string &what);

// A GPU opened by usb_gpu_open, with the USB wire it came through (usbfs or libusb), as the
// session every model loaded on it shares (amd_am_transport.h): destroying it (the last model's
// close) tears the GPU down (a failure is printed: a destructor cannot return it), then closes
// the wire.
class usb_gpu_session final : public am_session {
 public:
  usb_gpu_session(std::unique_ptr<usb::BridgeTransport> wire, std::unique_ptr<usb_gpu> g,
                  std::string label);
  ~usb_gpu_session() override;

 private:
  std::unique_ptr<usb::BridgeTransport> wire_;  // declared first: outlives g_, which uses it
  std::unique_ptr<usb_gpu> g_;
};

// Boots the GPU behind a wire just opened (usb_gpu_open) and makes its usb_gpu_session: the part
// every USB device's open shares. CAPGRAPH_ERR_DEVICE with *err naming the wire when the boot
// fails (a GPU that booted partly is left for the next open's cold boot; nothing else to undo).
capgraph_status usb_gpu_session_boot(std::unique_ptr<usb::BridgeTransport> wire,
                                     const am::device_options &o, std::shared_ptr<am_session> *made,
                                     std::string *err);

// Opens a session: the wire, usb_gpu_open, a session (usb_gpu_session, or a fake's own).
using usb_gpu_session_open_fn =
    std::function<capgraph_status(std::shared_ptr<am_session> *out, std::string *err)>;

// The session of the USB GPU `key` names in this process ("usb /dev/bus/usb/001/002": the bridge
// the open would take), opened by `open` when none is live; "" never shares. Loading a second
// model on a USB GPU must not boot it again under the first (a cold boot, even a partial one,
// resets the queues the first replays on): the models share the session, each with its own
// memory, and the last one's close tears the GPU down. Opens are serialized. *joined: an open
// session was found.
capgraph_status usb_gpu_session_get(const std::string &key, const usb_gpu_session_open_fn &open,
                                    std::shared_ptr<am_session> *out, bool *joined,
                                    std::string *err);

// The label of the transport of a model loaded on `s`: the boot's, and whether it joined.
std::string usb_gpu_model_label(const am_session &s, bool joined);

}  // namespace capgraph::amd
