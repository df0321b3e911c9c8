// The open sequence of a gfx1100 behind the USB bridge (see amd_usb.h).
#include "amd_usb.h"

#include <cstdio>

#include "amd_am_transport.h"

namespace capgraph::amd {

bool usb_gpu_open(usb_gpu &g, const am::device_options &o, std::string *err) {
  usb::BridgeStatus st = g.bridge.open();
  if (!st.ok()) {
    *err = "bridge: " + st.message;
    return false;
  }
  if ((st = g.bridge.pcie_power(true)).ok() &&
      (st = usb::pci_chain_setup(g.bridge, &g.chain)).ok()) {
    if (g.chain.vendor != kUsbGpuVendor || g.chain.device != kUsbGpuDevice) {
      char b[200];
      std::snprintf(b, sizeof b,
                    "the PCIe endpoint behind the bridge (bus %u) is %04x:%04x, not the GPU this "
                    "driver boots (%04x:%04x, RX 7900 XTX)",
                    g.chain.endpoint_bus, g.chain.vendor, g.chain.device, kUsbGpuVendor,
                    kUsbGpuDevice);
      *err = b;
      return false;
    }
    st = usb::pci_bars_assign(g.bridge, &g.chain);
  }
  if (!st.ok()) {
    *err = "PCIe: " + st.message;
    return false;
  }
  g.pci = std::make_unique<usb::pci_function_usb>(g.bridge, g.chain);
  g.gpu = std::make_unique<am::device>(*g.pci, o);
  return g.gpu->boot(err);
}

std::string usb_gpu_label(const usb_gpu &g, const std::string &what) {
  return what + " " + (g.pci ? g.pci->name() : std::string("?")) +
         (g.gpu && g.gpu->stats().partial        ? " (partial boot)"
          : g.gpu && g.gpu->stats().mode1_resets ? " (cold boot after a mode-1 reset)"
                                                 : " (cold boot)");
}

std::string usb_gpu_endpoint_describe(usb::BridgeTransport &wire) {
  usb_gpu g(wire);
  usb::BridgeStatus st;
  if (!(st = g.bridge.open()).ok() || !(st = g.bridge.pcie_power(true)).ok() ||
      !(st = usb::pci_chain_setup(g.bridge, &g.chain)).ok())
    return "no GPU: " + st.message;
  char b[160];
  const bool ok = g.chain.vendor == kUsbGpuVendor && g.chain.device == kUsbGpuDevice;
  std::snprintf(b, sizeof b, "PCIe endpoint %04x:%04x at bus %u%s", g.chain.vendor, g.chain.device,
                g.chain.endpoint_bus,
                ok ? " (RX 7900 XTX, gfx1100)" : " (not a GPU this driver boots)");
  return b;
}

namespace {

class usb_gpu_am_transport final : public am_transport {
 public:
  usb_gpu_am_transport(std::unique_ptr<usb::BridgeTransport> wire, std::unique_ptr<usb_gpu> g,
                       std::string label)
      : am_transport(*g->gpu, std::move(label)), wire_(std::move(wire)), g_(std::move(g)) {}
  ~usb_gpu_am_transport() override {
    std::string e;
    if (!g_->gpu->teardown(&e)) std::fprintf(stderr, "usb: teardown: %s\n", e.c_str());
  }

 private:
  std::unique_ptr<usb::BridgeTransport> wire_;  // declared first: outlives g_, which uses it
  std::unique_ptr<usb_gpu> g_;
};

}  // namespace

std::unique_ptr<hcq::transport> usb_gpu_transport(std::unique_ptr<usb::BridgeTransport> wire,
                                                  std::unique_ptr<usb_gpu> g, std::string label) {
  return std::make_unique<usb_gpu_am_transport>(std::move(wire), std::move(g), std::move(label));
}

}  // namespace capgraph::amd
