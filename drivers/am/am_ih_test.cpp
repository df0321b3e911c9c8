// IH ring entries decoded as Linux's amdgpu_ih_decode_iv_helper and
// gmc_v11_0_process_interrupt read them (am_ih.h).
#include "am_ih.h"

#include <doctest/doctest.h>

using namespace capgraph::am;

TEST_CASE(
    "a GC hub page fault: client GFX, src 0, the 48-bit page address from two context dwords") {
  // dw0: client 0x0a | src 0 << 8 | ring 0 << 16 | vmid 3 << 24; dw4/5: address >> 12, bits 47:44.
  const uint32_t dw[8] = {0x0300000a, 0x1234, 0, 0x0005, 0x23456789, 0xF1, 0, 0};
  const ih_entry e = ih_entry_decode(dw);
  CHECK(e.client_id == kIhClientGfx);
  CHECK(e.src_id == 0);
  CHECK(e.vmid == 3);
  CHECK(e.pasid == 5);
  REQUIRE(e.vm_fault);
  CHECK(e.fault_addr == 0x123456789000ull);  // only the low 4 bits of dw5 count
  CHECK(ih_entry_describe(e) == "UTCL2 (GC hub) VM fault at 0x123456789000 vmid 3");
}

TEST_CASE("an MM hub fault names the VMC client; other sources print their raw fields") {
  const uint32_t mm[8] = {0x00000012, 0, 0, 0, 0x1, 0, 0, 0};
  CHECK(ih_entry_describe(ih_entry_decode(mm)) == "VMC (MM hub) VM fault at 0x1000 vmid 0");
  // An end-of-pipe interrupt from the CP (client GRBM_CP 0x14, src 0xb5): not a fault.
  const uint32_t eop[8] = {0x0102b514, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xdd};
  const ih_entry e = ih_entry_decode(eop);
  CHECK(!e.vm_fault);
  CHECK(e.ring_id == 2);
  CHECK(e.vmid == 1);
  CHECK(ih_entry_describe(e) == "client 0x14 src 0xb5 ring 2 vmid 1 data 0xaa 0xbb 0xcc 0xdd");
}
