// bridge_hw_test — checks that need a real ASM2464PD running capgraph's
// bridge firmware (ADD1:CA90). Registered in ctest with the label `hw`; with
// no bridge attached each check exits 77, which ctest reports as SKIPPED
// (never as passed).
//
//   bridge_hw_test info            INFO, protocol, serial, USB speed
//   bridge_hw_test sram            1 MiB each way through the SRAM DMA windows,
//                                  bit-exact, with MB/s
//   bridge_hw_test pcie            PCIe power and link, config space of 0:0.0
//   bridge_hw_test stream          streamed reads against single TLPs on an
//                                  already-assigned prefetchable BAR (read only)
//   bridge_hw_test flash IMAGE     self-update with IMAGE (only when
//                                  CAPGRAPH_HW_FLASH=1: it rewrites the bridge)
// Select a bridge with CAPGRAPH_BRIDGE=SERIAL when several are attached.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bridge.h"
#include "bridge_protocol.h"
#include "libusb_transport.h"

#ifdef CAPGRAPH_HAVE_FLASHER
#include "flash.h"
#endif

using namespace capgraph::usb;

namespace {

constexpr int kSkip = 77;

int skip(const std::string& why) {
  std::printf("SKIP: %s\n", why.c_str());
  return kSkip;
}
int fail(const std::string& why) {
  std::fprintf(stderr, "FAIL: %s\n", why.c_str());
  return 1;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int check_info(Bridge& b) {
  const BridgeInfo& i = b.info();
  std::printf("bridge firmware %s, protocol %u.%u, chip %04x, serial %s, USB %u, PCIe link %s\n",
              i.version().c_str(), i.proto_major, i.proto_minor, i.chip_id, i.serial_hex().c_str(),
              i.usb_speed, i.pcie_link ? "up" : "down");
  if (i.chip_id != BRIDGE_CHIP_ID) return fail("INFO reports a chip id other than 0x2464");
  if (i.usb_speed != 2 && i.usb_speed != 3) return fail("INFO reports an impossible USB speed");
  return 0;
}

int check_sram(Bridge& b) {
  const size_t total = 1u << 20, half = BRIDGE_SRAM_SIZE;
  std::vector<uint8_t> src(total), back(total);
  std::mt19937 rng(1234);
  for (auto& v : src) v = uint8_t(rng());
  double t_out = 0, t_in = 0;
  for (size_t off = 0; off < total; off += half) {
    auto t0 = std::chrono::steady_clock::now();
    BridgeStatus st = b.sram_write(0, src.data() + off, half);
    t_out += seconds_since(t0);
    if (!st.ok()) return fail(st.message);
    t0 = std::chrono::steady_clock::now();
    st = b.sram_read(0, back.data() + off, half);
    t_in += seconds_since(t0);
    if (!st.ok()) return fail(st.message);
  }
  for (size_t i = 0; i < total; ++i)
    if (back[i] != src[i]) return fail("SRAM read back differs at byte " + std::to_string(i));
  std::printf("SRAM DMA 1 MiB each way bit-exact: host->bridge %.1f MB/s, bridge->host %.1f MB/s\n",
              total / t_out / 1e6, total / t_in / 1e6);
  return 0;
}

int check_pcie(Bridge& b) {
  BridgeStatus st = b.pcie_power(true);
  if (!st.ok()) return skip("no PCIe link (nothing in the slot?): " + st.message);
  uint32_t id = 0, cls = 0;
  st = b.config_read32(0, 0, 0, 0x00, &id);
  if (!st.ok()) return fail(st.message);
  st = b.config_read32(0, 0, 0, 0x08, &cls);
  if (!st.ok()) return fail(st.message);
  std::printf("PCIe 0:0.0 vendor %04x device %04x class %06x\n", id & 0xFFFF, id >> 16, cls >> 8);
  if ((id & 0xFFFF) == 0xFFFF || (id & 0xFFFF) == 0) return fail("config read returned no vendor id");
  return 0;
}

// Reads only, and only a prefetchable memory BAR that something already
// assigned and enabled (reads of prefetchable memory have no side effects).
int check_stream(Bridge& b) {
  if (!b.info().pcie_link && !b.pcie_power(true).ok()) return skip("no PCIe link");
  uint32_t cmd = 0;
  if (!b.config_read32(0, 0, 0, 0x04, &cmd).ok() || !(cmd & 0x2))
    return skip("memory decoding of 0:0.0 is off (no BAR assigned yet)");
  for (uint16_t reg = 0x10; reg <= 0x24; reg += 4) {
    uint32_t lo = 0, hi = 0;
    if (!b.config_read32(0, 0, 0, reg, &lo).ok()) return fail("config read of a BAR failed");
    bool is64 = (lo & 0x6) == 0x4;
    if (is64 && !b.config_read32(0, 0, 0, uint16_t(reg + 4), &hi).ok()) return fail("config read failed");
    uint64_t base = (uint64_t(hi) << 32) | (lo & ~0xFull);
    if ((lo & 0x1) || !(lo & 0x8) || base == 0) {
      if (is64) reg += 4;
      continue;
    }
    const size_t n = 2048;
    std::vector<uint32_t> streamed(n), single(n);
    auto t0 = std::chrono::steady_clock::now();
    BridgeStatus st = b.mem_read_block(base, streamed.data(), n);
    double t_stream = seconds_since(t0);
    if (!st.ok()) return fail(st.message);
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < n; ++i)
      if (!(st = b.mem_read32(base + 4 * i, &single[i])).ok()) return fail(st.message);
    double t_single = seconds_since(t0);
    for (size_t i = 0; i < n; ++i)
      if (streamed[i] != single[i]) return fail("streamed read differs from single reads at dword " + std::to_string(i));
    std::printf("BAR at 0x%llx: 8 KiB streamed %.1f ms (%.2f MB/s), single TLPs %.1f ms (%.3f MB/s)\n",
                (unsigned long long)base, t_stream * 1e3, n * 4 / t_stream / 1e6, t_single * 1e3,
                n * 4 / t_single / 1e6);
    return 0;
  }
  return skip("no assigned prefetchable memory BAR on 0:0.0");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bridge_hw_test info|sram|pcie|stream|flash IMAGE\n");
    return 2;
  }
  const std::string what = argv[1];
  std::string error;
  auto list = devices_list_bridges(&error);
  if (!error.empty()) return skip("cannot look for bridges (" + error + ")");
  bool ours = false;
  for (const auto& d : list) ours = ours || (d.vid == BRIDGE_USB_VID && d.pid == BRIDGE_USB_PID);
  if (!ours)
    return skip(list.empty() ? "no ASM2464PD bridge attached"
                             : "no bridge runs capgraph firmware (flash it with `capgraph flash`)");
  const char* sel = std::getenv("CAPGRAPH_BRIDGE");
  auto t = LibusbTransport::open(sel ? sel : "", false, &error);
  if (!t) return fail(error + " (see drivers/usb/README.md for the udev rule)");
  Bridge b(*t);
  BridgeStatus st = b.open();
  if (!st.ok()) return fail(st.message);
  if (what == "info") return check_info(b);
  if (what == "sram") return check_sram(b);
  if (what == "pcie") return check_pcie(b);
  if (what == "stream") return check_stream(b);
  if (what == "flash") {
#ifdef CAPGRAPH_HAVE_FLASHER
    const char* allow = std::getenv("CAPGRAPH_HW_FLASH");
    if (!allow || std::strcmp(allow, "1") != 0)
      return skip("self-update rewrites the bridge's flash: set CAPGRAPH_HW_FLASH=1 to run it");
    if (argc < 3) return fail("flash needs an image path");
    std::vector<uint8_t> image;
    if (!capgraph::bridge::flash_load_image(argv[2], &image, &error)) return fail(error);
    auto r = capgraph::bridge::flash_via_firmware(*t, image, {}, stdout);
    if (!r.ok) return fail(r.message);
    std::printf("%s\n", r.message.c_str());
    return 0;
#else
    return skip("built without the flasher");
#endif
  }
  return fail("unknown check " + what);
}
