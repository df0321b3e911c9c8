/*
 * pcie.c — PCIe power/link bring-up and single TLPs through the chip's TLP
 * engine.
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/main.c (power-on order:
 * link width, B403, PERST#, tunnel state, bank-1 TLP routing, 3.3 V then
 * 12 V rails, E764 = 0x1C starts training, B298 tunnel bit, PERST# release;
 * LTSSM 0x78 = link up; single-TLP sequence: fmt/type, byte enables, address
 * bytes, data bytes, status clears, B254 = 0x0F; completion from B296),
 * handmade/src/pcie_pio.h (byte order of address and data registers),
 * src/include/registers.h (B22A[7:5] completion status, B284 bit 0 CplD).
 */
#include "fw.h"

__xdata uint8_t tlp_result[BRIDGE_TLP_RESULT_SIZE];
static __xdata uint8_t tlp_seq;

void pcie_init(void) {
  uint8_t i;
  REG_PCIE_TLP_CTRL = 0x01;
  REG_PCIE_TLP_LENGTH = 0x20;
  for (i = 0; i < BRIDGE_TLP_RESULT_SIZE; i++) tlp_result[i] = 0;
  tlp_result[BRIDGE_TLP_RESULT_OFF_STATUS] = BRIDGE_TLP_STATUS_NONE;
}

void pcie_power_off(void) {
  REG_PCIE_PERST_CTRL = PCIE_PERST_ASSERT; /* reset before the rails drop */
  REG_TUNNEL_LINK_STATE = 0x00;
  REG_PHY_TIMER_CTRL_E764 = 0x00;
  REG_PCIE_LANE_CTRL_C659 &= (uint8_t)~0x01;
  REG_HDDPC_CTRL &= (uint8_t)~0x20;
  pcie_link_up = 0;
}

void pcie_power_on(void) {
  uint8_t stable = 0, tries;
  REG_TUNNEL_LINK_STATUS = PCIE_LINK_WIDTH_x2;
  REG_TUNNEL_CTRL_B403 = 0x01;
  REG_PCIE_PERST_CTRL = PCIE_PERST_ASSERT;
  REG_TUNNEL_LINK_STATE = 0x00;
  DPX = 0x01;
  REG_PHY_TLP_ROUTING = 0x01;
  DPX = 0x00;
  REG_HDDPC_CTRL |= 0x20;
  REG_PCIE_LANE_CTRL_C659 |= 0x01;
  REG_PHY_TIMER_CTRL_E764 = 0x1C;
  REG_PCIE_TUNNEL_CFG = PCIE_TLP_CTRL_TUNNEL;
  REG_PCIE_PERST_CTRL = 0x00;
  /* Link up = three consecutive L0 samples; bounded to 40 samples. */
  for (tries = 0; tries < 40 && stable < 3; tries++) {
    if (REG_PCIE_LTSSM_STATE == PCIE_LTSSM_L0) stable++;
    else stable = 0;
    sleep_ms(5);
  }
  pcie_link_up = (stable >= 3) ? 1 : 0;
}

void pcie_tlp_run(__xdata uint8_t *t) {
  uint8_t ft = t[BRIDGE_TLP_OFF_FMT_TYPE], s = 0, status, i;
  uint16_t cap;
  tlp_seq++;
  REG_PCIE_FMT_TYPE = ft;
  REG_PCIE_BYTE_EN = t[BRIDGE_TLP_OFF_BYTE_EN];
  for (i = 0; i < 4; i++) {
    REG_PCIE_ADDR(i) = t[BRIDGE_TLP_OFF_ADDR_LO + 3 - i];
    REG_PCIE_ADDR(4 + i) = t[BRIDGE_TLP_OFF_ADDR_HI + 3 - i];
  }
  if (ft & PCIE_FMT_HAS_DATA)
    for (i = 0; i < 4; i++) REG_PCIE_DATA(i) = t[BRIDGE_TLP_OFF_DATA + 3 - i];
  REG_PCIE_STATUS = PCIE_STATUS_ERROR;
  REG_PCIE_STATUS = PCIE_STATUS_COMPLETE;
  REG_PCIE_STATUS = PCIE_STATUS_KICK;
  REG_PCIE_TRIGGER = PCIE_TRIGGER_EXEC;

  status = BRIDGE_TLP_STATUS_TIMEOUT;
  deadline_start(20); /* 10 ms */
  for (cap = 0xFFFF; cap; cap--) {
    s = REG_PCIE_STATUS;
    if (s & PCIE_STATUS_ERROR) { status = BRIDGE_TLP_STATUS_ENGINE_ERROR; break; }
    if (s & PCIE_STATUS_COMPLETE) { status = BRIDGE_TLP_STATUS_OK; break; }
    if (deadline_passed()) break;
  }
  /* Leave the engine idle whatever happened, so the next TLP starts clean. */
  REG_PCIE_STATUS = PCIE_STATUS_ERROR | PCIE_STATUS_COMPLETE;

  for (i = 0; i < BRIDGE_TLP_RESULT_SIZE; i++) tlp_result[i] = 0;
  if (status == BRIDGE_TLP_STATUS_OK) {
    for (i = 0; i < 4; i++) tlp_result[BRIDGE_TLP_RESULT_OFF_DATA + i] = REG_PCIE_DATA(3 - i);
    tlp_result[BRIDGE_TLP_RESULT_OFF_CPL] = REG_PCIE_CPL_HDR_HI >> 5;
    tlp_result[BRIDGE_TLP_RESULT_OFF_HAS_DATA] = REG_PCIE_COMPL_STATUS & PCIE_COMPL_HAS_DATA;
  }
  tlp_result[BRIDGE_TLP_RESULT_OFF_STATUS] = status;
  tlp_result[BRIDGE_TLP_RESULT_OFF_SEQ] = tlp_seq;
}
