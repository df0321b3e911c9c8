#include "pcie_endpoint.h"

#include <cstring>

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

PcieEndpoint::PcieEndpoint() {
  // A display-class AMD device with the BAR shape of a discrete GPU:
  // BAR0/1 64-bit prefetchable VRAM aperture, BAR2/3 64-bit doorbells,
  // BAR5 32-bit registers.
  put16(&cfg_[0x00], 0x1002);
  put16(&cfg_[0x02], 0x744C);  // Navi31 (RX 7900 XTX), the card behind a 4-deep chain
  cfg_[0x08] = 0x00;           // revision
  cfg_[0x09] = 0x00;           // prog-if
  cfg_[0x0A] = 0x00;           // subclass: VGA
  cfg_[0x0B] = 0x03;           // class: display
  cfg_[0x0E] = 0x00;           // header type 0
  put16(&cfg_[0x06], 0x0010);  // status: capabilities list
  cfg_[0x34] = 0x00;
  bars_ = {{256ull << 20, true, true}, {2ull << 20, true, false}, {512ull << 10, false, false}};
  // BAR dword slots: 0,1 <- bar 0; 2,3 <- bar 1; 5 <- bar 2.
  bar_shape_set(0, bars_[0]);
  bar_shape_set(2, bars_[1]);
  bar_shape_set(5, bars_[2]);
}

void PcieEndpoint::bar_shape_set(int slot, const Bar &b) {
  uint32_t flags = (b.is64 ? 0x4u : 0u) | (b.prefetch ? 0x8u : 0u);
  put32(&cfg_[0x10 + 4 * slot], flags);
  bar_mask_[slot] = uint32_t(~(b.size - 1)) & ~0xFu;
  if (b.is64) {
    bar_mask_[slot + 1] = uint32_t(~(b.size - 1) >> 32);
    put32(&cfg_[0x14 + 4 * slot], 0);
  }
}

void PcieEndpoint::rebar_offer(uint64_t max_bytes) {
  // As on a real GPU the ReBAR capability is not the first extended one: an
  // Advanced Error Reporting header (id 0x0001, version 2) at 0x100 points
  // to it at kRebarCap (headers: id 15:0, version 19:16, next 31:20).
  put32(&cfg_[0x100], 0x0001u | 2u << 16 | uint32_t(kRebarCap) << 20);
  put32(&cfg_[kRebarCap], 0x15u | 1u << 16);  // Resizable BAR, version 1, the last
  uint32_t sizes = 0;
  for (unsigned v = 0; v < 28; ++v)
    if ((1ull << (20 + v)) >= bars_[0].size && (1ull << (20 + v)) <= max_bytes)
      sizes |= 1u << (v + 4);
  put32(&cfg_[kRebarCap + 4], sizes);
  unsigned cur = 0;
  while ((1ull << (20 + cur)) < bars_[0].size) ++cur;
  put32(&cfg_[kRebarCap + 8],
        0u | 1u << 5 | cur << 8);  // BAR0, one resizable BAR, its current size
  rebar_ = true;
}

void PcieEndpoint::ids_set(uint16_t vendor, uint16_t device) {
  put16(&cfg_[0x00], vendor);
  put16(&cfg_[0x02], device);
}

uint32_t PcieEndpoint::config_read(uint16_t reg) const { return get32(&cfg_[reg & 0xFFC]); }

void PcieEndpoint::config_write(uint16_t reg, uint32_t value, uint8_t byte_en) {
  reg &= 0xFFC;
  uint32_t old = get32(&cfg_[reg]);
  uint32_t be_mask = 0;
  for (int i = 0; i < 4; ++i)
    if (byte_en & (1 << i)) be_mask |= 0xFFu << (8 * i);
  uint32_t writable = 0;
  if (reg == 0x04)
    writable = 0x00000547;  // command: io, mem, master, ...
  else if (reg >= 0x10 && reg <= 0x24)
    writable = bar_mask_[(reg - 0x10) / 4];
  else if (reg == 0x0C)
    writable = 0x0000FF00;  // latency timer
  else if (reg == 0x3C)
    writable = 0x000000FF;  // interrupt line
  else if (reg == kRebarCap + 8 && rebar_)
    writable = 0x00003F00;  // ReBAR control: BAR size
  writable &= be_mask;
  const uint32_t now = (old & ~writable) | (value & writable);
  if (reg == kRebarCap + 8 && rebar_ && now != old) {
    const unsigned v = (now >> 8) & 0x3F;
    if (v >= 28 || !(get32(&cfg_[kRebarCap + 4]) & (1u << (v + 4))))
      return;  // a size not offered: ignored (model choice)
    bars_[0].size = 1ull << (20 + v);
    bar_shape_set(0,
                  bars_[0]);  // the BAR's address bits change; software re-sizes and re-places it
  }
  put32(&cfg_[reg], now);
}

uint64_t PcieEndpoint::bar_base(int i) const {
  static const int slot[3] = {0, 2, 5};
  if (!(cfg_[0x04] & 0x02)) return 0;  // memory space disabled
  int s = slot[i];
  uint64_t base = get32(&cfg_[0x10 + 4 * s]) & ~0xFull;
  if (bars_[i].is64) base |= uint64_t(get32(&cfg_[0x14 + 4 * s])) << 32;
  return base;
}

uint8_t *PcieEndpoint::page(uint64_t addr, bool create) {
  uint64_t key = addr >> 12;
  auto it = pages_.find(key);
  if (it == pages_.end()) {
    if (!create) return nullptr;
    it = pages_.emplace(key, std::vector<uint8_t>(4096, 0)).first;
  }
  return it->second.data() + (addr & 0xFFF);
}

uint32_t PcieEndpoint::mem_read32(uint64_t a, bool *claimed) {
  *claimed = false;
  for (int i = 0; i < 3; ++i) {
    uint64_t base = bar_base(i);
    if (base && a >= base && a + 4 <= base + bars_[i].size) {
      *claimed = true;
      if (bar_read_hook) {
        uint32_t v = 0;
        bar_read_hook(i, a - base, &v);
        return v;
      }
      uint8_t *p = page((uint64_t(i) << 40) | (a - base), false);
      return p ? get32(p) : 0;
    }
  }
  return 0xFFFFFFFFu;
}

void PcieEndpoint::mem_write32(uint64_t a, uint32_t v, uint8_t byte_en) {
  for (int i = 0; i < 3; ++i) {
    uint64_t base = bar_base(i);
    if (base && a >= base && a + 4 <= base + bars_[i].size) {
      if (bar_write_hook) {
        bar_write_hook(i, a - base, v, byte_en);
        return;
      }
      uint8_t *p = page((uint64_t(i) << 40) | (a - base), true);
      for (int k = 0; k < 4; ++k)
        if (byte_en & (1 << k)) p[k] = uint8_t(v >> (8 * k));
      return;
    }
  }
  // Posted write nobody claims: dropped, as on a real link.
}

TlpCompletion PcieEndpoint::handle(const TlpRequest &t) {
  ++requests;
  TlpCompletion c;
  if (hang || requests >= hang_from_request) {
    c.completes = false;
    return c;
  }
  uint8_t type = t.fmt_type & 0x1F;
  bool write = t.fmt_type & 0x40;
  if (type == 0x04 || type == 0x05) {
    uint32_t a = uint32_t(t.addr);
    unsigned dev = (a >> 19) & 31, fn = (a >> 16) & 7;
    uint16_t reg = uint16_t(a & 0xFFC);
    // Routing to this function (bus number, type 1 -> 0) is the fabric's job
    // (pcie_fabric.h); here only device 0 function 0 exists.
    if (type != 0x04 || dev != 0 || fn != 0) {
      c.status = 1;  // UR: nothing at that function
      c.has_data = false;
      return c;
    }
    if (write) {
      config_write(reg, t.data, t.byte_en);
    } else {
      c.has_data = true;
      c.data = config_read(reg);
    }
    return c;
  }
  if (type == 0x00) {
    if (write) {
      mem_write32(t.addr, t.data, t.byte_en);
      return c;
    }
    bool claimed = false;
    uint32_t v = mem_read32(t.addr, &claimed);
    if (!claimed) {
      c.status = 1;
      return c;
    }
    c.has_data = true;
    c.data = v;
    return c;
  }
  c.status = 1;
  return c;
}

}  // namespace capgraph::emu
