// gfx1100_direct — the AM driver's PCI seam (am_pci.h) straight onto the fake
// GPU, no bridge: for fast unit tests of the driver. The staging window is
// a 512 KiB buffer at the bridge SRAM's bus address, which the model reaches
// by "bus-master DMA" exactly as it reaches the bridge SRAM when attached to
// the emulated bridge; reads back are gated on a bus-master write to the
// trigger dword, as the bridge's are (bridge_protocol.h). `unplug_after` drops the device after
// that many more BAR accesses (every later access fails, as over a pulled cable).
// `drop_mmio_writes` swallows register writes at those BAR5 byte offsets: a
// driver that skips a boot step, for the tests that show the model catches it.
#pragma once

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "am_pci.h"
#include "gfx1100_model.h"

namespace capgraph::emu {

class gfx1100_direct : public am::pci_function {
 public:
  static constexpr uint64_t kStagingBus = 0x200000, kStagingBytes = 512 * 1024;
  static constexpr uint64_t kTriggerBus = 0x82200C;
  explicit gfx1100_direct(gfx1100_model &m) : m_(m), sram_(kStagingBytes, 0) {
    m_.dma_read = [this](uint64_t a, uint8_t *d, size_t n) {
      if (a < kStagingBus || a + n > kStagingBus + kStagingBytes) return false;
      std::memcpy(d, sram_.data() + (a - kStagingBus), n);
      return true;
    };
    m_.dma_write = [this](uint64_t a, const uint8_t *s, size_t n) {
      if (a == kTriggerBus && n == 4) {
        triggered_ = armed_ != 0;  // a trigger before the arm completes nothing
        return true;
      }
      if (a < kStagingBus || a + n > kStagingBus + kStagingBytes) return false;
      std::memcpy(sram_.data() + (a - kStagingBus), s, n);
      return true;
    };
  }
  std::string name() const override { return "direct gfx1100 model"; }
  uint64_t bar_size(int bar) const override {
    return bar == am::kBarVram       ? m_.vram_bytes()
           : bar == am::kBarDoorbell ? (2u << 20)
           : bar == am::kBarMmio     ? (512u << 10)
                                     : 0;
  }
  bool bar_read(int bar, uint64_t off, uint32_t *dw, size_t n, std::string *err) override {
    if (!check(bar, off, n, err)) return false;
    for (size_t i = 0; i < n; ++i) dw[i] = m_.bar_read32(bar, off + 4 * i);
    return true;
  }
  bool bar_write(int bar, uint64_t off, const uint32_t *dw, size_t n, std::string *err) override {
    if (!check(bar, off, n, err)) return false;
    for (size_t i = 0; i < n; ++i)
      if (bar != am::kBarMmio || !drop_mmio_writes.count(off + 4 * i))
        m_.bar_write32(bar, off + 4 * i, dw[i]);
    return true;
  }
  uint64_t staging_bus_addr() const override { return kStagingBus; }
  uint64_t staging_bytes() const override { return kStagingBytes; }
  bool staging_write(uint64_t off, const uint8_t *p, size_t n, std::string *err) override {
    if (off + n > kStagingBytes) {
      *err = "staging write past the window";
      return false;
    }
    std::memcpy(sram_.data() + off, p, n);
    return true;
  }

  uint64_t staging_trigger_bus_addr() const override { return kTriggerBus; }
  bool staging_read_arm(uint64_t off, size_t n, std::string *err) override {
    if (off % 0x4000 || n == 0 || n % 512 || off + n > kStagingBytes) {
      *err = "staging read arm outside the window or not in 512-byte sectors";
      return false;
    }
    armed_off_ = off;
    armed_ = n;
    triggered_ = false;
    return true;
  }
  bool staging_read_collect(uint8_t *p, size_t n, std::string *err) override {
    if (!armed_ || n != armed_ || !triggered_) {
      *err = !armed_       ? "staging read: nothing armed"
             : n != armed_ ? "staging read: not the armed size"
                           : "staging read: the GPU never wrote the trigger";
      armed_ = 0;
      return false;
    }
    std::memcpy(p, sram_.data() + armed_off_, n);
    armed_ = 0;
    triggered_ = false;
    return true;
  }

  uint64_t accesses = 0;
  uint64_t unplug_after = UINT64_MAX;
  std::set<uint64_t> drop_mmio_writes;

 private:
  gfx1100_model &m_;
  std::vector<uint8_t> sram_;
  uint64_t armed_off_ = 0;
  size_t armed_ = 0;
  bool triggered_ = false;
  bool check(int bar, uint64_t off, size_t n, std::string *err) {
    if (++accesses > unplug_after) {
      *err = "device gone (unplugged)";
      return false;
    }
    if (off + 4 * n > bar_size(bar)) {
      *err = "BAR" + std::to_string(bar) + " access past its end";
      return false;
    }
    return true;
  }
};

}  // namespace capgraph::emu
