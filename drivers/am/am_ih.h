// am_ih — the interrupt handler (IH) ring's entries, decoded. Over USB no
// interrupt reaches the host (MSI stays off), so the driver reads the ring
// out when something times out and puts what it finds in the error: which
// block raised it (client id), why (source id), the VMID and, for a VM page
// fault, the faulting GPU address.
//
// Sources: Linux amdgpu_ih.c amdgpu_ih_decode_iv_helper (entry layout, 8
// dwords on IH v6); gmc_v11_0.c gmc_v11_0_process_interrupt (VM faults come
// from client VMC for the MM hub and client GFX for the GC hub's UTCL2, src id
// 0; address = src_data[0] << 12 | (src_data[1] & 0xf) << 44);
// soc21_ih_clientid.h (client numbers; the same values are in tinygrad's
// autogen am.py enum_soc21_ih_clientid).
#pragma once

#include <cstdint>
#include <string>

namespace capgraph::am {

constexpr uint32_t kIhEntryBytes = 32;
constexpr uint32_t kIhClientGfx = 0x0a;  // SOC21_IH_CLIENTID_GFX (the GC hub's UTCL2)
constexpr uint32_t kIhClientVmc = 0x12;  // SOC21_IH_CLIENTID_VMC (the MM hub)
constexpr uint32_t kIhSrcVmFault =
    0x00;  // VMC_1_0__SRCID__VM_FAULT, GFX_11_0_0__SRCID__UTCL2_FAULT

struct ih_entry {
  uint32_t client_id = 0, src_id = 0, ring_id = 0, vmid = 0, pasid = 0;
  uint32_t src_data[4] = {};
  bool vm_fault = false;    // a page fault from either hub
  uint64_t fault_addr = 0;  // the faulting GPU address (page), when vm_fault
};

ih_entry ih_entry_decode(const uint32_t dw[8]);
// One line a person can act on, e.g. "VMC (MM hub) VM fault at 0x... vmid 0".
std::string ih_entry_describe(const ih_entry &e);

}  // namespace capgraph::am
