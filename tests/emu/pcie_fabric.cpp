#include "pcie_fabric.h"

namespace capgraph::emu {

static void put16(uint8_t *p, uint16_t v) {
  p[0] = uint8_t(v);
  p[1] = uint8_t(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24);
}

PcieBridgeFunction::PcieBridgeFunction(uint16_t vendor, uint16_t device) {
  put16(&cfg_[0x00], vendor);
  put16(&cfg_[0x02], device);
  cfg_[0x0A] = 0x04;  // subclass: PCI-to-PCI bridge
  cfg_[0x0B] = 0x06;  // class: bridge
  cfg_[0x0E] = 0x01;  // header type 1
  // Windows closed at reset (base > limit); prefetchable is 64-bit capable.
  put32(&cfg_[0x20], 0x0000FFF0u);
  put32(&cfg_[0x24], 0x0001FFF1u);
}

uint32_t PcieBridgeFunction::config_read(uint16_t reg) const { return get32(&cfg_[reg & 0xFFC]); }

void PcieBridgeFunction::config_write(uint16_t reg, uint32_t value, uint8_t byte_en) {
  reg &= 0xFFC;
  uint32_t writable = 0;
  switch (reg) {
    case 0x04: writable = 0x00000547u; break;  // command
    case 0x18: writable = 0x00FFFFFFu; break;  // primary/secondary/subordinate
    case 0x20: writable = 0xFFF0FFF0u; break;  // memory base/limit
    case 0x24: writable = 0xFFF0FFF0u; break;  // prefetchable base/limit
    case 0x28:
    case 0x2C: writable = 0xFFFFFFFFu; break;  // prefetchable upper 32 bits
    default: break;                            // the rest reads as reset
  }
  uint32_t be_mask = 0;
  for (int i = 0; i < 4; ++i)
    if (byte_en & (1 << i)) be_mask |= 0xFFu << (8 * i);
  writable &= be_mask;
  uint32_t old = get32(&cfg_[reg]);
  put32(&cfg_[reg], (old & ~writable) | (value & writable));
}

bool PcieBridgeFunction::window_claims(uint64_t a) const {
  const uint32_t mem = config_read(0x20), pref = config_read(0x24);
  const uint64_t mem_base = uint64_t(mem & 0xFFF0u) << 16;
  const uint64_t mem_limit = (uint64_t(mem >> 16 & 0xFFF0u) << 16) | 0xFFFFF;
  if (mem_base <= mem_limit && a >= mem_base && a <= mem_limit) return true;
  const uint64_t pref_base = (uint64_t(pref & 0xFFF0u) << 16) | uint64_t(config_read(0x28)) << 32;
  const uint64_t pref_limit =
      (uint64_t(pref >> 16 & 0xFFF0u) << 16) | 0xFFFFF | uint64_t(config_read(0x2C)) << 32;
  return pref_base <= pref_limit && a >= pref_base && a <= pref_limit;
}

PcieFabric::PcieFabric(PcieEndpoint &endpoint, int n) : endpoint_(endpoint) {
  for (int i = 0; i < n; ++i) {
    // Buses 0-1: the bridge's own switch; 2-3: the GPU's ports (upstream on
    // even buses, downstream on odd). Device ids are placeholders.
    const bool gpu_side = i >= 2;
    bridges.emplace_back(gpu_side ? 0x1002 : 0x1B21, uint16_t(0x0100 + (i & 1)));
  }
}

TlpCompletion PcieFabric::config(const TlpRequest &t) {
  TlpCompletion ur;
  ur.status = 1;
  const uint32_t a = uint32_t(t.addr);
  const unsigned bus = a >> 24, dev = (a >> 19) & 31, fn = (a >> 16) & 7;
  const bool type1 = (t.fmt_type & 0x1F) == 0x05, write = t.fmt_type & 0x40;
  // Which element of the chain (bridges..., then the endpoint) is the target.
  size_t target = 0;
  if (!type1) {
    if (bus != 0) return ur;  // model choice, see the header
  } else {
    size_t i = 0;
    for (;;) {
      if (i >= bridges.size()) return ur;
      const PcieBridgeFunction &b = bridges[i];
      if (b.secondary() != 0 && bus == b.secondary()) {
        target = i + 1;
        break;
      }
      if (b.secondary() == 0 || bus <= b.secondary() || bus > b.subordinate()) return ur;
      ++i;
    }
  }
  if (dev != 0 || fn != 0) return ur;  // point-to-point links: device 0 only
  if (target == bridges.size()) {
    // Delivered to the endpoint as type 0.
    TlpRequest t0 = t;
    t0.fmt_type = uint8_t(write ? 0x44 : 0x04);
    return endpoint_.handle(t0);
  }
  ++config_to_bridges;
  TlpCompletion c;
  PcieBridgeFunction &b = bridges[target];
  if (write) {
    b.config_write(uint16_t(a & 0xFFC), t.data, t.byte_en);
  } else {
    c.has_data = true;
    c.data = b.config_read(uint16_t(a & 0xFFC));
  }
  return c;
}

TlpCompletion PcieFabric::handle(const TlpRequest &t) {
  const uint8_t type = t.fmt_type & 0x1F;
  if (type == 0x04 || type == 0x05) return config(t);
  if (type == 0x00) {
    for (const auto &b : bridges) {
      if (!b.memory_enabled() || !b.window_claims(t.addr)) {
        TlpCompletion c;  // nobody claims it: a write is dropped, a read is UR
        if (!(t.fmt_type & 0x40)) c.status = 1;
        return c;
      }
    }
  }
  return endpoint_.handle(t);
}

bool PcieFabric::upstream_reaches_root(uint64_t addr) const {
  if (!(endpoint_.config_read(0x04) & 0x04)) return false;
  for (const auto &b : bridges)
    if (!b.bus_master() || b.window_claims(addr)) return false;
  return true;
}

}  // namespace capgraph::emu
