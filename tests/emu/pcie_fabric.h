// pcie_fabric — what sits between the ASM2464's root port and the GPU: a
// chain of PCI-to-PCI bridges (type 1 headers), then one endpoint. On an
// RX 7900 XTX behind the bridge the chain is four deep and the GPU is at
// bus 4 (the ASM2464's switch on buses 0-1, Navi31's own upstream and
// downstream ports on 2-3); `bridges = 0` puts the endpoint directly on the
// link at bus 0.
//
// Routing follows the PCIe Base Spec / PCI-to-PCI Bridge Architecture:
//  - a type 0 config request is taken by the function on the link (bus 0,
//    device 0); a type 1 request is forwarded by each bridge whose
//    secondary..subordinate range holds the bus, and turned into type 0 by
//    the bridge whose secondary bus it is. Anything else completes with UR;
//    so a bridge whose bus numbers were never programmed passes nothing on.
//  - Our model choice where the spec leaves it to the receiver: a type 0
//    request whose bus field is not 0 completes with UR (it cannot reach a
//    device behind a bridge; real silicon may instead answer as the function
//    on the link, which is as wrong for the caller).
//  - memory requests go down through a bridge only when its Memory Space
//    Enable is set and the address is inside its memory or prefetchable
//    window; bus-master requests from the endpoint go up only when every
//    bridge (and the endpoint) has Bus Master Enable set and the address is
//    outside the bridges' downstream windows.
// Sources: PCI-to-PCI Bridge Architecture Spec 1.2 (type 1 header: 0x18 bus
// numbers, 0x20 memory base/limit [15:4] = address [31:20], 0x24 prefetchable
// base/limit with bit 0 = 64-bit, 0x28/0x2C upper 32 bits; command bit 1
// memory, bit 2 bus master), PCIe Base Spec (type 0/1 config routing, UR);
// tinygrad system.py pci_setup_usb_bars as summarised in
// shared/research/usbgpu_am_plan.md §3.1 and asm2464_firmware.md §6.4 (bus
// 4, four bridges at device 0 of buses 0-3).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "pcie_endpoint.h"

namespace capgraph::emu {

// One type 1 function (a switch port). Vendor/device ids are placeholders
// (model choice): 0x1B21 is ASMedia's PCI vendor id, 0x1002 AMD's.
class PcieBridgeFunction {
 public:
  PcieBridgeFunction(uint16_t vendor, uint16_t device);
  uint32_t config_read(uint16_t reg) const;
  void config_write(uint16_t reg, uint32_t value, uint8_t byte_en);
  uint8_t secondary() const { return cfg_[0x19]; }
  uint8_t subordinate() const { return cfg_[0x1A]; }
  bool memory_enabled() const { return cfg_[0x04] & 0x02; }
  bool bus_master() const { return cfg_[0x04] & 0x04; }
  // Inside the memory or the prefetchable window (each valid when base <= limit).
  bool window_claims(uint64_t addr) const;

 private:
  std::array<uint8_t, 4096> cfg_{};
};

class PcieFabric {
 public:
  PcieFabric(PcieEndpoint &endpoint, int bridges);
  // A request from the root port, travelling downstream.
  TlpCompletion handle(const TlpRequest &tlp);
  // May a bus-master request from the endpoint to `addr` reach the root?
  bool upstream_reaches_root(uint64_t addr) const;
  // The bus the endpoint answers on once the chain is programmed (= depth).
  int endpoint_bus() const { return int(bridges.size()); }

  std::vector<PcieBridgeFunction> bridges;
  uint32_t config_to_bridges = 0;  // config requests a bridge answered

 private:
  PcieEndpoint &endpoint_;
  TlpCompletion config(const TlpRequest &tlp);
};

}  // namespace capgraph::emu
