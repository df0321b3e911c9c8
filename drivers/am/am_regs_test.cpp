// Facts: a dozen register offsets of the shared table (am_regs.h) against
// the numbers in Linux's headers, so a wrong shared offset cannot pass both
// the driver and the fake GPU.
#include "am_regs.h"

#include <doctest/doctest.h>

#include <cstring>

using namespace capgraph::am;

TEST_CASE("register offsets and segments match the Linux headers") {
  struct fact {
    reg r;
    uint8_t seg;
    uint32_t off;
  } facts[] = {
      // gc_11_0_0_offset.h
      {regCP_MQD_BASE_ADDR, 0, 0x1fa9},
      {regCP_HQD_ACTIVE, 0, 0x1fab},
      {regCP_HQD_PQ_WPTR_HI, 0, 0x1fe0},
      {regSCRATCH_REG7, 1, 0x2047},
      {regGRBM_GFX_CNTL, 1, 0x0900},
      {regCP_MEC_RS64_CNTL, 1, 0x2904},
      {regSDMA0_QUEUE0_RB_CNTL, 0, 0x0080},
      // the hub caches, AGP, SH_MEM and RLC rows (gc_11_0_0_offset.h, also in
      // tinygrad's extra/hip_gpu_driver/gc_11_0_0_offset.h copy)
      {regGCVM_L2_CNTL, 0, 0x15bc},
      {regGCVM_L2_CNTL4, 0, 0x15d4},
      {regGCVM_L2_CNTL5, 0, 0x15da},
      {regGCMC_VM_AGP_BOT, 0, 0x167b},
      {regGCMC_VM_MX_L1_TLB_CNTL, 0, 0x167f},
      {regSH_MEM_CONFIG, 1, 0x09e4},
      {regRLC_SAFE_MODE, 1, 0x0980},
      {regRLC_CGCG_CGLS_CTRL, 1, 0x4c49},
      // mp_13_0_0_offset.h, mp_11_0_offset.h
      {regMP0_SMN_C2PMSG_35, 0, 0x0063},
      {regMP0_SMN_C2PMSG_81, 0, 0x0091},
      {regMP1_SMN_C2PMSG_66, 0, 0x0282},
      {regMP1_SMN_C2PMSG_90, 0, 0x029a},
      // mmhub_3_0_0_offset.h, osssys_6_0_0_offset.h, nbio_4_3_0_offset.h
      {regMMVM_INVALIDATE_ENG17_REQ, 0, 0x0774},
      {regIH_RB_CNTL, 0, 0x0080},
      {regMMVM_L2_CNTL, 0, 0x0700},
      {regMMMC_VM_MX_L1_TLB_CNTL, 0, 0x08f3},
      {regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL, 2, 0x012d},
      {regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE, 2, 0x00c3},
  };
  for (const fact &f : facts) {
    CAPTURE(reg_info(f.r).name);
    CHECK(reg_info(f.r).segment == f.seg);
    CHECK(reg_info(f.r).offset == f.off);
  }
  CHECK(kHqdRegCount == 56);
  CHECK(std::strcmp(reg_info(regCP_MQD_BASE_ADDR).name, "regCP_MQD_BASE_ADDR") == 0);
}

TEST_CASE("absolute addresses from a discovery table; a missing block is named") {
  discovery_table t;
  auto add = [&](uint16_t hw, std::vector<uint64_t> base) {
    ip_block b;
    b.hw_id = hw;
    b.base = std::move(base);
    t.ips.push_back(b);
  };
  add(hw_id_gc, {0x1260, 0xA000});
  add(hw_id_mp0, {0x16000});
  add(hw_id_mp1, {0x16000});
  add(hw_id_mmhub, {0x1A000});
  add(hw_id_osssys, {0x10A0});
  std::string err;
  reg_map m;
  CHECK(!reg_map_build(t, &m, &err));
  CHECK_MESSAGE(err.find("regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE") != std::string::npos, err);
  add(hw_id_nbif, {0x0, 0x14});
  CHECK(!reg_map_build(t, &m, &err));
  CHECK_MESSAGE(err.find("needs segment 2") != std::string::npos, err);
  t.ips.back().base.push_back(0xD20);
  REQUIRE_MESSAGE(reg_map_build(t, &m, &err), err);
  // tinygrad reads VRAM size at absolute dword 0xde3 (amdev.py:292): Navi's NBIO seg 2 base + 0xc3.
  CHECK(m[regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE] == 0xde3);
  CHECK(m[regCP_MQD_BASE_ADDR] == 0x1260 + 0x1fa9);
  CHECK(m[regSCRATCH_REG7] == 0xA000 + 0x2047);
  CHECK(reg_find(m, 0x1260 + 0x1fab) == regCP_HQD_ACTIVE);
  CHECK(reg_find(m, 0x7) == reg_count);
}
