// usb_pci — PCIe behind the bridge: walk the chain of PCI-to-PCI bridges
// from bus 0 to the first endpoint (on an RX 7900 XTX: the ASM2464's switch
// on buses 0-1, the GPU's own ports on 2-3, the GPU at bus 4), give every
// bridge its bus numbers and forwarding windows, then size and place the
// endpoint's BARs. When the endpoint offers the Resizable BAR capability,
// BAR0 (VRAM) is first resized to the largest offered size up to
// kPciRebarMaxBytes (tinygrad's pci_setup_usb_bars takes the largest;
// usbgpu_am_plan.md §3.1); without it BAR0 keeps its size (256 MiB on Navi).
//
// Layout (as tinygrad's pci_setup_usb_bars does it; see
// shared/research/usbgpu_am_plan.md §3.1): non-prefetchable window from
// 0x1000_0000 to 4 GiB, prefetchable window from 32 GiB up; 64-bit
// prefetchable BARs (VRAM) go above 4 GiB (4DW TLPs), the rest below.
// Sources: PCI-to-PCI Bridge Architecture Spec 1.2 (type 1 header layout),
// PCI Local Bus Spec 3.0 (BAR sizing by writing all-ones, command bits),
// PCIe Base Spec 4.0 §7.8.6 (Resizable BAR capability id 0x15: capability
// register +4 bits 31:4, bit n = 1 MiB << (n-4) supported; control +8 bits
// 2:0 BAR index, 13:8 size = 1 MiB << value), §7.6.3 (extended capability
// headers from 0x100: id 15:0, next offset 31:20).
#pragma once

#include <cstdint>
#include <vector>

#include "am_pci.h"
#include "bridge.h"

namespace capgraph::usb {

constexpr uint64_t kPciMemWindowBase = 0x10000000ull;
constexpr uint64_t kPciPrefWindowBase = 0x800000000ull;  // 32 GiB
constexpr int kPciMaxBridges = 8;
// The largest BAR0 the prefetchable window gets: 32 GiB covers a 24 GiB RX
// 7900 XTX and keeps the BAR inside [32 GiB, 64 GiB) of bus space.
constexpr uint64_t kPciRebarMaxBytes = 32ull << 30;

struct PciBar {
  int index = 0;  // BAR register number 0..5 (a 64-bit BAR also uses index+1)
  uint64_t base = 0, size = 0;
  bool is64 = false, prefetch = false;
};

struct PciChain {
  uint8_t endpoint_bus = 0;
  uint16_t vendor = 0, device = 0;
  std::vector<uint16_t> bridge_ids;  // vendor of each bridge, bus 0 first
  std::vector<PciBar> bars;          // filled by pci_bars_assign
  uint64_t rebar_bytes = 0;          // BAR0's size set through ReBAR; 0: no ReBAR capability
};

// Programs every type 1 bridge from bus 0 down and stops at the first
// type 0 function; fails naming the bus when nothing answers or the chain
// is deeper than kPciMaxBridges.
BridgeStatus pci_chain_setup(Bridge &b, PciChain *chain);
// Resizes BAR0 through ReBAR when offered, sizes the endpoint's memory BARs,
// places them in the windows, and turns on memory decoding and bus mastering.
BridgeStatus pci_bars_assign(Bridge &b, PciChain *chain);

// The AM driver's view of the GPU (drivers/am/am_pci.h) over the bridge:
// BARs through streamed memory TLPs (Bridge::mem_read_block/write_block),
// the staging window is the bridge SRAM (BRIDGE_SRAM_BUS_ADDR, written by
// SRAM DMA in 512-byte sectors). The chain must have gone through
// pci_chain_setup and pci_bars_assign.
class pci_function_usb : public am::pci_function {
 public:
  pci_function_usb(Bridge &b, const PciChain &chain) : b_(b), chain_(chain) {}
  std::string name() const override;
  uint64_t bar_size(int bar) const override;
  bool bar_read(int bar, uint64_t off, uint32_t *dw, size_t n, std::string *err) override;
  bool bar_write(int bar, uint64_t off, const uint32_t *dw, size_t n, std::string *err) override;
  uint64_t staging_bus_addr() const override;
  uint64_t staging_bytes() const override;
  bool staging_write(uint64_t off, const uint8_t *p, size_t n, std::string *err) override;
  bool bar_write_without_bulk(int bar, uint64_t off, const uint32_t *dw, size_t n,
                              std::string *err) override;
  uint64_t staging_trigger_bus_addr() const override;
  bool staging_read_arm(uint64_t off, size_t n, std::string *err) override;
  bool staging_read_collect(uint8_t *p, size_t n, std::string *err) override;
  // Through the bridge's WATCH (protocol >= 1.3); unsupported on older firmware.
  watch_outcome watch64(int bar, uint64_t off, uint64_t target, int fault_bar, uint64_t fault_off,
                        unsigned timeout_ms, uint64_t *value, uint32_t *fault,
                        std::string *err) override;

 private:
  Bridge &b_;
  PciChain chain_;
  const PciBar *bar(int index) const;
  bool bar_check(int index, uint64_t off, size_t n, uint64_t *addr, std::string *err) const;
};

}  // namespace capgraph::usb
