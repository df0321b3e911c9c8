// The open sequence of a gfx1100 behind the USB bridge (see amd_usb.h).
#include "amd_usb.h"

#include <cstdio>
#include <map>
#include <mutex>

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

capgraph_status usb_gpu_session_boot(std::unique_ptr<usb::BridgeTransport> wire,
                                     const am::device_options &o, std::shared_ptr<am_session> *made,
                                     std::string *err) {
  auto g = std::make_unique<usb_gpu>(*wire);
  std::string e;
  if (!usb_gpu_open(*g, o, &e)) {
    *err = "usb: " + wire->describe() + ": " + e;
    return CAPGRAPH_ERR_DEVICE;
  }
  std::string label = usb_gpu_label(*g, "usb " + wire->describe());
  *made = std::make_shared<usb_gpu_session>(std::move(wire), std::move(g), std::move(label));
  return CAPGRAPH_OK;
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

usb_gpu_session::usb_gpu_session(std::unique_ptr<usb::BridgeTransport> wire,
                                 std::unique_ptr<usb_gpu> g, std::string label)
    : am_session(*g->gpu, std::move(label)), wire_(std::move(wire)), g_(std::move(g)) {}

usb_gpu_session::~usb_gpu_session() {
  std::string e;
  if (!g_->gpu->teardown(&e)) std::fprintf(stderr, "usb: teardown: %s\n", e.c_str());
}

namespace {

std::mutex &sessions_lock() {
  static std::mutex m;
  return m;
}

std::map<std::string, std::weak_ptr<am_session>> &sessions() {
  static auto *s = new std::map<std::string, std::weak_ptr<am_session>>();  // outlives statics
  return *s;
}

}  // namespace

capgraph_status usb_gpu_session_get(const std::string &key, const usb_gpu_session_open_fn &open,
                                    std::shared_ptr<am_session> *out, bool *joined,
                                    std::string *err) {
  std::lock_guard<std::mutex> hold(sessions_lock());
  auto &all = sessions();
  for (auto it = all.begin(); it != all.end();)
    it = it->second.expired() ? all.erase(it) : std::next(it);
  *joined = false;
  if (!key.empty()) {
    auto it = all.find(key);
    if (it != all.end() && (*out = it->second.lock())) return *joined = true, CAPGRAPH_OK;
  }
  const capgraph_status st = open(out, err);
  if (st == CAPGRAPH_OK && !key.empty()) all[key] = *out;
  return st;
}

std::string usb_gpu_model_label(const am_session &s, bool joined) {
  return joined ? s.label + ", shared with the models loaded on it before" : s.label;
}

}  // namespace capgraph::amd
