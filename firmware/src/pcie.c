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
 * src/include/registers.h (B22A[7:5] completion status, B284 bit 0 CplD,
 * bank-1 0x6025 bit 7 TLP routing), handmade/src/pcie_tuning.h (RX PHY
 * tuning, data in regs.h).
 *
 * Posted writes: whether the engine ever sets COMPLETE (0xB296 bit 1) for a
 * MWr is not public; handmade's pcie_pio.h fires stream writes without
 * waiting ("fire-and-forget"). With BRIDGE_TLP_FLAG_POSTED /
 * BRIDGE_STREAM_FLAG_POSTED we do the same and only look once at the ERROR
 * bit the engine raises when it cannot send (link down); without the flag a
 * MWr waits for COMPLETE as before, which is how a hardware run answers the
 * question (drivers/usb/bridge_hw_test.cpp `posted`).
 */
#include "pcie.h"

#include "deadline.h"
#include "regs.h"

__xdata uint8_t pcie_link_up;
__xdata uint8_t tlp_result[BRIDGE_TLP_RESULT_SIZE];
static __xdata uint8_t tlp_seq;

/* The RX PHY tuning of regs.h as data: {kind, offset, value} per write, a
 * 0 kind ends a pass. */
#define PHY_ENTRY(kind, off, val) kind, off, val,
static __code const uint8_t phy_pass_1[] = {PCIE_RXPHY_PASS_1(PHY_ENTRY) 0};
static __code const uint8_t phy_pass_2[] = {PCIE_RXPHY_PASS_2(PHY_ENTRY) 0};
static __code const uint8_t phy_pass_3[] = {PCIE_RXPHY_PASS_3(PHY_ENTRY) 0};
static __code const uint8_t phy_pass_4[] = {PCIE_RXPHY_PASS_4(PHY_ENTRY) 0};
static __code const uint8_t phy_pass_5[] = {PCIE_RXPHY_PASS_5(PHY_ENTRY) 0};
static __code const uint8_t phy_lane_hi[] = PCIE_RXPHY_LANE_HI;
static __code const uint8_t phy_companion_hi[] = PCIE_RXPHY_COMPANION_HI;
static __code const uint8_t phy_tail_0b[] = PCIE_RXPHY_TAIL_0B;

static void phy_pass(__code const uint8_t *pass) {
  uint8_t slice;
  __code const uint8_t *p;
  for (slice = 0; slice < PCIE_RXPHY_SLICES; slice++) {
    for (p = pass; p[0]; p += 3) {
      uint8_t hi = p[0] == PHY_COMPANION ? phy_companion_hi[slice] : phy_lane_hi[slice];
      uint8_t v = p[0] == PHY_LANE_TAIL ? phy_tail_0b[slice] : p[2];
      DPX = 0x01;
      XREG(((uint16_t)hi << 8) | p[1]) = v;
      DPX = 0x00;
    }
  }
}

void pcie_init(void) {
  uint8_t i;
  REG_PCIE_TLP_CTRL = 0x01;
  REG_PCIE_TLP_LENGTH = 0x20;
  for (i = 0; i < BRIDGE_TLP_RESULT_SIZE; i++) tlp_result[i] = 0;
  tlp_result[BRIDGE_TLP_RESULT_OFF_STATUS] = BRIDGE_TLP_STATUS_NONE;
  /* Once, before the first power-off/power-on (handmade main.c order). */
  phy_pass(phy_pass_1);
  phy_pass(phy_pass_2);
  phy_pass(phy_pass_3);
  phy_pass(phy_pass_4);
  phy_pass(phy_pass_5);
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
  REG_PHY_TLP_ROUTING |= PHY_TLP_ROUTING_ENABLE; /* keeps the tuning's low bits */
  DPX = 0x00;
  REG_HDDPC_CTRL |= 0x20;
  REG_PCIE_LANE_CTRL_C659 |= 0x01;
  REG_PHY_TIMER_CTRL_E764 = 0x1C;
  REG_PCIE_TUNNEL_CFG = PCIE_TLP_CTRL_TUNNEL;
  REG_PCIE_PERST_CTRL = 0x00;
  /* Link up = three consecutive L0 samples; bounded to 40 samples. */
  for (tries = 0; tries < 40 && stable < 3; tries++) {
    if (REG_PCIE_LTSSM_STATE == PCIE_LTSSM_L0)
      stable++;
    else
      stable = 0;
    sleep_ms(5);
  }
  pcie_link_up = (stable >= 3) ? 1 : 0;
}

static uint8_t tlp_wait(void);

/* A posted write was triggered and is not waited for: only an engine that
 * refused to send it (ERROR at once) is a failure. */
static uint8_t tlp_sent(void) {
  return (REG_PCIE_STATUS & PCIE_STATUS_ERROR) ? BRIDGE_ERR_TLP_ENGINE : BRIDGE_ERR_NONE;
}

void pcie_tlp_run(__xdata uint8_t *t) {
  uint8_t ft = t[BRIDGE_TLP_OFF_FMT_TYPE], status, i;
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

  if (t[BRIDGE_TLP_OFF_FLAGS] & BRIDGE_TLP_FLAG_POSTED) {
    status =
        tlp_sent() == BRIDGE_ERR_NONE ? BRIDGE_TLP_STATUS_POSTED : BRIDGE_TLP_STATUS_ENGINE_ERROR;
  } else {
    i = tlp_wait();
    status = i == BRIDGE_ERR_NONE         ? BRIDGE_TLP_STATUS_OK
             : i == BRIDGE_ERR_TLP_ENGINE ? BRIDGE_TLP_STATUS_ENGINE_ERROR
                                          : BRIDGE_TLP_STATUS_TIMEOUT;
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

/* Waits (bounded: 10 ms and an iteration cap) for the TLP just triggered. */
static uint8_t tlp_wait(void) {
  uint16_t cap;
  uint8_t s;
  deadline_start(20);
  for (cap = 0xFFFF; cap; cap--) {
    s = REG_PCIE_STATUS;
    if (s & PCIE_STATUS_ERROR) return BRIDGE_ERR_TLP_ENGINE;
    if (s & PCIE_STATUS_COMPLETE) return BRIDGE_ERR_NONE;
    if (deadline_passed()) break;
  }
  return BRIDGE_ERR_TLP_TIMEOUT;
}

__xdata uint8_t stream_err, stream_cpl;

uint16_t pcie_stream_run(uint8_t write, uint8_t flags, uint32_t addr_lo, uint32_t addr_hi,
                         uint16_t count, __xdata uint8_t *buf) {
  uint16_t done;
  uint8_t i, low, posted = write && (flags & BRIDGE_STREAM_FLAG_POSTED);
  stream_err = BRIDGE_ERR_NONE;
  stream_cpl = BRIDGE_CPL_SC;
  REG_PCIE_FMT_TYPE = addr_hi ? (write ? BRIDGE_TLP_MWR64 : BRIDGE_TLP_MRD64)
                              : (write ? BRIDGE_TLP_MWR32 : BRIDGE_TLP_MRD32);
  REG_PCIE_BYTE_EN = 0x0F;
  for (i = 0; i < 4; i++) {
    REG_PCIE_ADDR(i) = (uint8_t)(addr_lo >> (24 - 8 * i));
    REG_PCIE_ADDR(4 + i) = (uint8_t)(addr_hi >> (24 - 8 * i));
  }
  for (done = 0; done < count; done++, buf += 4) {
    if (write) {
      REG_PCIE_DATA(0) = buf[3];
      REG_PCIE_DATA(1) = buf[2];
      REG_PCIE_DATA(2) = buf[1];
      REG_PCIE_DATA(3) = buf[0];
    }
    /* Clear error/complete/kick in one write, then fire (pcie_pio.h). */
    REG_PCIE_STATUS = PCIE_STATUS_ERROR | PCIE_STATUS_COMPLETE | PCIE_STATUS_KICK;
    REG_PCIE_TRIGGER = PCIE_TRIGGER_EXEC;
    stream_err = posted ? tlp_sent() : tlp_wait();
    if (stream_err) break;
    if (!write) {
      stream_cpl = REG_PCIE_CPL_HDR_HI >> 5;
      if (stream_cpl != BRIDGE_CPL_SC) {
        stream_err = BRIDGE_ERR_TLP_COMPLETION;
        break;
      }
      buf[0] = REG_PCIE_DATA(3);
      buf[1] = REG_PCIE_DATA(2);
      buf[2] = REG_PCIE_DATA(1);
      buf[3] = REG_PCIE_DATA(0);
    }
    /* Next dword: the caller keeps the stream inside one 4 GiB window, so
     * only the low address bytes carry (B21B is the least significant). */
    low = REG_PCIE_ADDR(3) + 4;
    REG_PCIE_ADDR(3) = low;
    if (low < 4) {
      for (i = 3; i-- > 0;) {
        low = REG_PCIE_ADDR(i) + 1;
        REG_PCIE_ADDR(i) = low;
        if (low) break;
      }
    }
  }
  REG_PCIE_STATUS = PCIE_STATUS_ERROR | PCIE_STATUS_COMPLETE;
  return done;
}
