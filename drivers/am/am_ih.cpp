#include "am_ih.h"

#include <cstdio>

namespace capgraph::am {

ih_entry ih_entry_decode(const uint32_t dw[8]) {
  ih_entry e;
  e.client_id = dw[0] & 0xFF;
  e.src_id = (dw[0] >> 8) & 0xFF;
  e.ring_id = (dw[0] >> 16) & 0xFF;
  e.vmid = (dw[0] >> 24) & 0xF;
  e.pasid = dw[3] & 0xFFFF;
  for (int i = 0; i < 4; ++i) e.src_data[i] = dw[4 + i];
  e.vm_fault =
      (e.client_id == kIhClientVmc || e.client_id == kIhClientGfx) && e.src_id == kIhSrcVmFault;
  if (e.vm_fault)
    e.fault_addr = uint64_t(e.src_data[0]) << 12 | uint64_t(e.src_data[1] & 0xF) << 44;
  return e;
}

std::string ih_entry_describe(const ih_entry &e) {
  char b[160];
  if (e.vm_fault) {
    std::snprintf(b, sizeof b, "%s VM fault at 0x%llx vmid %u",
                  e.client_id == kIhClientVmc ? "VMC (MM hub)" : "UTCL2 (GC hub)",
                  (unsigned long long)e.fault_addr, e.vmid);
  } else {
    std::snprintf(b, sizeof b, "client 0x%x src 0x%x ring %u vmid %u data 0x%x 0x%x 0x%x 0x%x",
                  e.client_id, e.src_id, e.ring_id, e.vmid, e.src_data[0], e.src_data[1],
                  e.src_data[2], e.src_data[3]);
  }
  return b;
}

}  // namespace capgraph::am
