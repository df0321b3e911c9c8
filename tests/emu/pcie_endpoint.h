// pcie_endpoint — a simulated PCIe device behind the bridge: a type 0
// config space with BARs that size and decode like real hardware, sparse
// memory behind the BARs, fault switches, and bus-master reads back into
// the bridge (how a GPU fetches from the bridge SRAM at 0x200000) and
// bus-master writes into it (copy-out, fences, the SRAM-read trigger).
// Optionally a Resizable BAR extended capability for BAR0 (rebar_offer).
//
// Sources: PCI Local Bus Spec 3.0 / PCIe Base Spec (config header layout,
// BAR sizing by writing all-ones, command register bit 1 = memory space,
// completion status UR for unclaimed requests, config address fields
// bus[31:24] dev[23:19] fn[18:16] reg[11:2]); PCI-SIG vendor id 0x1002 (AMD);
// PCIe Base Spec 4.0 §7.8.6 (Resizable BAR: extended capability id 0x15,
// capability register +4 bits 31:4 = supported sizes, bit n: 1 MiB << (n-4);
// control register +8 bits 2:0 BAR index, 7:5 number of resizable BARs,
// 13:8 BAR size, 1 MiB << value).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

namespace capgraph::emu {

struct TlpRequest {
  uint8_t fmt_type = 0;
  uint8_t byte_en = 0x0F;
  uint64_t addr = 0;
  uint32_t data = 0;
};

struct TlpCompletion {
  bool completes = true;  // false: the request is lost (no completion ever)
  uint8_t status = 0;     // 0 SC, 1 UR, 2 CRS, 4 CA
  bool has_data = false;
  uint32_t data = 0;
};

class PcieEndpoint {
 public:
  struct Bar {
    uint64_t size;  // power of two
    bool is64;
    bool prefetch;
  };

  PcieEndpoint();

  TlpCompletion handle(const TlpRequest &tlp);

  uint32_t config_read(uint16_t reg) const;
  // Another card in the slot (tests of the host's id check).
  void ids_set(uint16_t vendor, uint16_t device);
  void config_write(uint16_t reg, uint32_t value, uint8_t byte_en);
  // Offer a Resizable BAR capability for BAR0 (at kRebarCap, second in the
  // extended list) with sizes from BAR0's current size up to max_bytes
  // (powers of two, >= 1 MiB).
  static constexpr uint16_t kRebarCap = 0x200;
  void rebar_offer(uint64_t max_bytes);
  uint64_t bar_size(int i) const { return bars_[i].size; }
  // Assigned base of BAR i (0 if unassigned or decoding disabled).
  uint64_t bar_base(int i) const;
  uint32_t mem_read32(uint64_t bus_addr, bool *claimed);
  void mem_write32(uint64_t bus_addr, uint32_t v, uint8_t byte_en);

  // Bus-master read / write: the device reaching memory upstream (the
  // bridge's SRAM and windows). False: nobody upstream claimed it (UR), e.g.
  // Bus Master Enable off somewhere on the path or an address the bridge
  // does not decode.
  std::function<bool(uint64_t addr, uint8_t *dst, size_t n)> dma_read;
  std::function<bool(uint64_t addr, const uint8_t *src, size_t n)> dma_write;

  // A device model behind the BARs (targets/amd/fake/gfx1100): when set, memory
  // requests inside BAR i (0: BAR0, 1: BAR2, 2: BAR5) go to it, off in bytes
  // from the BAR's base, instead of to the sparse memory.
  std::function<bool(int bar, uint64_t off, uint32_t *v)> bar_read_hook;
  std::function<void(int bar, uint64_t off, uint32_t v, uint8_t byte_en)> bar_write_hook;

  bool hang = false;  // drop every request (a TLP that never completes)
  // Drop the request with this number (1-based, counting `requests`) and
  // every one after it: a device that hangs in the middle of a stream.
  uint64_t hang_from_request = UINT64_MAX;
  uint32_t requests = 0;

 private:
  std::array<uint8_t, 4096> cfg_{};
  std::array<uint32_t, 6> bar_mask_{};  // writable address bits per BAR dword
  std::vector<Bar> bars_;
  bool rebar_ = false;
  void bar_shape_set(int slot, const Bar &b);
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;  // 4 KiB pages
  uint8_t *page(uint64_t addr, bool create);
};

}  // namespace capgraph::emu
