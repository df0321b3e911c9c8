#include "usb_pci.h"

#include <cstdio>
#include <string>
#include <vector>

#include "bridge_protocol.h"

namespace capgraph::usb {

static BridgeStatus chain_error(const std::string &why) {
  BridgeStatus st;
  st.transfer = TransferStatus::error;
  st.message = "PCIe chain: " + why;
  return st;
}

BridgeStatus pci_chain_setup(Bridge &b, PciChain *chain) {
  *chain = PciChain{};
  for (int bus = 0; bus <= kPciMaxBridges; ++bus) {
    uint32_t id = 0, hdr = 0;
    BridgeStatus st = b.config_read32(uint8_t(bus), 0, 0, 0x00, &id);
    if (!st.ok())
      return chain_error("nothing answers at " + std::to_string(bus) + ":00.0: " + st.message);
    if (!(st = b.config_read32(uint8_t(bus), 0, 0, 0x0C, &hdr)).ok()) return st;
    const uint8_t type = (hdr >> 16) & 0x7F;
    if (type == 0) {
      chain->endpoint_bus = uint8_t(bus);
      chain->vendor = uint16_t(id);
      chain->device = uint16_t(id >> 16);
      // Narrow every bridge's subordinate bus to the endpoint's.
      for (int p = 0; p < bus; ++p)
        if (!(st = b.config_write32(uint8_t(p), 0, 0, 0x18,
                                    uint32_t(p) | uint32_t(p + 1) << 8 | uint32_t(bus) << 16))
                 .ok())
          return st;
      return {};
    }
    if (type != 1 || bus == kPciMaxBridges) {
      char buf[120];
      std::snprintf(buf, sizeof buf,
                    "%02x:00.0 (%04x:%04x) has header type %u; expected a bridge or "
                    "an endpoint within %d buses",
                    bus, id & 0xFFFF, id >> 16, type, kPciMaxBridges);
      return chain_error(buf);
    }
    chain->bridge_ids.push_back(uint16_t(id));
    const uint8_t p = uint8_t(bus);
    // Bus numbers: primary, secondary = next, subordinate open until the end is known.
    if (!(st = b.config_write32(p, 0, 0, 0x18, uint32_t(p) | uint32_t(p + 1) << 8 | 0xFFu << 16))
             .ok())
      return st;
    // Memory window 0x1000_0000..0xFFFF_FFFF: base/limit [15:4] = address [31:20].
    if (!(st = b.config_write32(p, 0, 0, 0x20, 0xFFF0u << 16 | uint32_t(kPciMemWindowBase >> 16)))
             .ok())
      return st;
    // Prefetchable window 32 GiB..2^64-1 (64-bit): low base 0, upper base/limit.
    if (!(st = b.config_write32(p, 0, 0, 0x24,
                                0xFFF0u << 16 | uint32_t(kPciPrefWindowBase >> 16 & 0xFFF0)))
             .ok())
      return st;
    if (!(st = b.config_write32(p, 0, 0, 0x28, uint32_t(kPciPrefWindowBase >> 32))).ok()) return st;
    if (!(st = b.config_write32(p, 0, 0, 0x2C, 0xFFFFFFFFu)).ok()) return st;
    // Memory space and bus master: requests down, the GPU's DMA up.
    if (!(st = b.config_write32(p, 0, 0, 0x04, 0x0006)).ok()) return st;
  }
  return chain_error("no endpoint found");
}

// Walks the extended capabilities from 0x100 for Resizable BAR (id 0x15) on
// BAR0 and sets the largest offered size up to kPciRebarMaxBytes. Bounded:
// at most 64 headers, each at a dword offset above 0x100.
static BridgeStatus rebar_setup(Bridge &b, PciChain *chain) {
  const uint8_t bus = chain->endpoint_bus;
  chain->rebar_bytes = 0;
  uint16_t at = 0x100;
  BridgeStatus st;
  for (int n = 0; n < 64 && at >= 0x100 && at < 0x1000; ++n) {
    uint32_t hdr = 0;
    if (!(st = b.config_read32(bus, 0, 0, at, &hdr)).ok()) return st;
    if (hdr == 0 || hdr == 0xFFFFFFFFu) return {};  // no extended capabilities
    if ((hdr & 0xFFFF) == 0x15) {
      uint32_t cap = 0, ctl = 0;
      if (!(st = b.config_read32(bus, 0, 0, uint16_t(at + 4), &cap)).ok()) return st;
      if (!(st = b.config_read32(bus, 0, 0, uint16_t(at + 8), &ctl)).ok()) return st;
      if ((ctl & 7) != 0) return {};  // resizes another BAR, not VRAM's
      int best = -1;
      for (int v = 0; v < 28; ++v)
        if ((cap & (1u << (v + 4))) && (1ull << (20 + v)) <= kPciRebarMaxBytes) best = v;
      if (best < 0) return {};
      if (!(st = b.config_write32(bus, 0, 0, uint16_t(at + 8),
                                  (ctl & ~0x3F00u) | uint32_t(best) << 8))
               .ok())
        return st;
      chain->rebar_bytes = 1ull << (20 + best);
      return {};
    }
    at = uint16_t(hdr >> 20);
    if (at == 0) return {};
  }
  return {};
}

BridgeStatus pci_bars_assign(Bridge &b, PciChain *chain) {
  const uint8_t bus = chain->endpoint_bus;
  uint64_t mem = kPciMemWindowBase, pref = kPciPrefWindowBase;
  chain->bars.clear();
  BridgeStatus st;
  // Decoding off while the BARs move (and before ReBAR changes a size:
  // PCIe Base Spec 4.0 §7.8.6.3 wants Memory Space Enable clear).
  if (!(st = b.config_write32(bus, 0, 0, 0x04, 0)).ok()) return st;
  if (!(st = rebar_setup(b, chain)).ok()) return st;
  for (int i = 0; i < 6; ++i) {
    const uint16_t reg = uint16_t(0x10 + 4 * i);
    uint32_t lo = 0, hi = 0xFFFFFFFFu;
    if (!(st = b.config_write32(bus, 0, 0, reg, 0xFFFFFFFFu)).ok()) return st;
    if (!(st = b.config_read32(bus, 0, 0, reg, &lo)).ok()) return st;
    if (lo == 0 || (lo & 1)) continue;  // absent, or I/O space (not used over USB)
    PciBar bar;
    bar.index = i;
    bar.is64 = (lo & 0x6) == 0x4;
    bar.prefetch = lo & 0x8;
    if (bar.is64) {
      if (i == 5) return chain_error("BAR5 claims to be 64-bit");
      if (!(st = b.config_write32(bus, 0, 0, uint16_t(reg + 4), 0xFFFFFFFFu)).ok()) return st;
      if (!(st = b.config_read32(bus, 0, 0, uint16_t(reg + 4), &hi)).ok()) return st;
    } else {
      hi = 0xFFFFFFFFu;
    }
    const uint64_t mask = (uint64_t(hi) << 32) | (lo & ~0xFull);
    bar.size = ~mask + 1;
    uint64_t &cursor = bar.is64 && bar.prefetch ? pref : mem;
    bar.base = (cursor + bar.size - 1) & ~(bar.size - 1);
    cursor = bar.base + bar.size;
    if (&cursor == &mem && cursor > 0x100000000ull)
      return chain_error("BARs do not fit below 4 GiB");
    if (!(st = b.config_write32(bus, 0, 0, reg, uint32_t(bar.base) | (lo & 0xF))).ok()) return st;
    if (bar.is64 &&
        !(st = b.config_write32(bus, 0, 0, uint16_t(reg + 4), uint32_t(bar.base >> 32))).ok())
      return st;
    chain->bars.push_back(bar);
    if (bar.is64) ++i;
  }
  return b.config_write32(bus, 0, 0, 0x04, 0x0006);
}

// ---- the AM driver's seam -----------------------------------------------

std::string pci_function_usb::name() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "usb %s %02x:00.0 %04x:%04x", b_.info().serial_hex().c_str(),
                chain_.endpoint_bus, chain_.vendor, chain_.device);
  return buf;
}

const PciBar *pci_function_usb::bar(int index) const {
  for (const PciBar &b : chain_.bars)
    if (b.index == index) return &b;
  return nullptr;
}

uint64_t pci_function_usb::bar_size(int index) const {
  const PciBar *b = bar(index);
  return b ? b->size : 0;
}

bool pci_function_usb::bar_check(int index, uint64_t off, size_t n, uint64_t *addr,
                                 std::string *err) const {
  const PciBar *b = bar(index);
  if (!b || off + 4 * uint64_t(n) > b->size) {
    *err = "BAR" + std::to_string(index) + " offset " + std::to_string(off) + " (+" +
           std::to_string(4 * n) + " bytes) is outside the BAR";
    return false;
  }
  *addr = b->base + off;
  return true;
}

bool pci_function_usb::bar_read(int index, uint64_t off, uint32_t *dw, size_t n, std::string *err) {
  uint64_t a = 0;
  if (!bar_check(index, off, n, &a, err)) return false;
  BridgeStatus st = b_.mem_read_block(a, dw, n);
  if (!st.ok()) *err = st.message;
  return st.ok();
}

bool pci_function_usb::bar_write(int index, uint64_t off, const uint32_t *dw, size_t n,
                                 std::string *err) {
  uint64_t a = 0;
  if (!bar_check(index, off, n, &a, err)) return false;
  BridgeStatus st = b_.mem_write_block(a, dw, n);
  if (!st.ok()) *err = st.message;
  return st.ok();
}

am::pci_function::watch_outcome pci_function_usb::watch64(int bar, uint64_t off, uint64_t target,
                                                          int fault_bar, uint64_t fault_off,
                                                          unsigned timeout_ms, uint64_t *value,
                                                          uint32_t *fault, std::string *err) {
  if (!b_.has_watch()) return watch_outcome::unsupported;
  uint64_t a = 0, f = 0;
  if (!bar_check(bar, off, 2, &a, err) || !bar_check(fault_bar, fault_off, 1, &f, err))
    return watch_outcome::error;
  WatchResult r;
  const BridgeStatus st = b_.watch(a, target, f, timeout_ms, &r);
  *value = r.value;
  *fault = r.fault;
  if (st.transfer == TransferStatus::timeout) return watch_outcome::timeout;
  if (!st.ok()) return *err = st.message, watch_outcome::error;
  return r.status == BRIDGE_WATCH_FAULT ? watch_outcome::fault : watch_outcome::reached;
}

uint64_t pci_function_usb::staging_bus_addr() const { return BRIDGE_SRAM_BUS_ADDR; }
uint64_t pci_function_usb::staging_bytes() const { return BRIDGE_SRAM_SIZE; }

bool pci_function_usb::staging_write(uint64_t off, const uint8_t *p, size_t n, std::string *err) {
  // SRAM DMA moves whole 512-byte sectors (bridge_protocol.h); the tail is
  // zero-padded (the PSP reads the sizes it was told, tinygrad pads too).
  const size_t padded = (n + 511) & ~size_t(511);
  if (off + padded > BRIDGE_SRAM_SIZE) {
    *err = "staging write of " + std::to_string(n) + " bytes at " + std::to_string(off) +
           " exceeds the SRAM";
    return false;
  }
  BridgeStatus st;
  if (padded == n) {
    st = b_.sram_write(uint32_t(off), p, n);
  } else {
    std::vector<uint8_t> buf(padded, 0);
    std::copy(p, p + n, buf.begin());
    st = b_.sram_write(uint32_t(off), buf.data(), padded);
  }
  if (!st.ok()) *err = st.message;
  return st.ok();
}

bool pci_function_usb::bar_write_without_bulk(int index, uint64_t off, const uint32_t *dw, size_t n,
                                              std::string *err) {
  uint64_t a = 0;
  if (!bar_check(index, off, n, &a, err)) return false;
  for (size_t i = 0; i < n; ++i) {  // BRIDGE_REQ_TLP + its result: EP0 only
    BridgeStatus st = b_.mem_write32(a + 4 * i, dw[i]);
    if (!st.ok()) {
      *err = st.message;
      return false;
    }
  }
  return true;
}

// The bridge sends SRAM to the host only after a PCIe write into its CQ
// window (bridge_protocol.h BRIDGE_CQ_TRIGGER_BUS_ADDR).
uint64_t pci_function_usb::staging_trigger_bus_addr() const { return BRIDGE_CQ_TRIGGER_BUS_ADDR; }

bool pci_function_usb::staging_read_arm(uint64_t off, size_t n, std::string *err) {
  BridgeStatus st = b_.sram_read_arm(uint32_t(off), n);
  if (!st.ok()) *err = st.message;
  return st.ok();
}

bool pci_function_usb::staging_read_collect(uint8_t *p, size_t n, std::string *err) {
  BridgeStatus st = b_.sram_read_collect(p, n);
  if (!st.ok()) *err = st.message;
  return st.ok();
}

}  // namespace capgraph::usb
