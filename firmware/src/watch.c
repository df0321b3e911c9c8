/*
 * watch.c — BRIDGE_REQ_WATCH: read a 64-bit signal in PCIe memory (and a
 * fault register) from the main loop until it reaches the target, then send
 * the result on bulk IN (layout and rules in bridge_protocol.h).
 *
 * The reads use the TLP engine the USB interrupt also uses (TLP and
 * MEM_STREAM requests), so each round runs with INT0 masked: an event that
 * arrives meanwhile waits a few microseconds (INT0 is level-triggered and is
 * taken when unmasked). The bulk IN buffer is shared with MEM_STREAM: a
 * stream request stops the watch, and WATCH stops a stream (stream.c).
 */
#include "watch.h"

#include "ep0.h"
#include "pcie.h"
#include "regs.h"
#include "stream.h"

#define WATCH_IDLE 0
#define WATCH_ARMED 1
#define WATCH_SENT 2 /* the result is armed on bulk IN */
static __xdata uint8_t watch_state;
static __xdata uint8_t watch_req[BRIDGE_WATCH_SIZE];
static __xdata uint8_t watch_value[8];
static __xdata uint8_t watch_fault[4];
static __xdata uint8_t watch_polls;

static uint32_t le32_at(__xdata uint8_t *p) {
  return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint16_t)p[1] << 8) | p[0];
}

void watch_cancel(void) {
  if (watch_state == WATCH_SENT) REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_IN;
  watch_state = WATCH_IDLE;
}

void watch_bulk_in_done(void) {
  if (watch_state == WATCH_SENT) watch_state = WATCH_IDLE;
}

void watch_request(void) {
  uint8_t i;
  for (i = 0; i < BRIDGE_WATCH_SIZE; i++) watch_req[i] = USB_CTRL_BUF[i];
  if ((watch_req[BRIDGE_WATCH_OFF_SIGNAL] & 3) || (watch_req[BRIDGE_WATCH_OFF_FAULT] & 3)) {
    ep0_stall(BRIDGE_ERR_BAD_ARGUMENT); /* not dword aligned */
    return;
  }
  stream_cancel();
  watch_cancel();
  watch_polls = 0;
  watch_state = WATCH_ARMED;
  ep0_done(0);
}

/* signal - target >= 0 as a signed 64-bit number, byte by byte (LE). */
static uint8_t watch_reached(void) {
  __xdata uint8_t *t = watch_req + BRIDGE_WATCH_OFF_TARGET;
  uint8_t i, borrow = 0, d = 0;
  uint16_t diff;
  for (i = 0; i < 8; i++) {
    diff = (uint16_t)watch_value[i] - t[i] - borrow;
    d = (uint8_t)diff;
    borrow = (diff >> 8) ? 1 : 0;
  }
  return (d & 0x80) == 0; /* the top byte's sign */
}

static void watch_send(uint8_t status, uint8_t err) {
  __xdata uint8_t *r = (__xdata uint8_t *)USB_BULK_IN_BUF;
  uint8_t i;
  for (i = 0; i < 8; i++) r[BRIDGE_WATCH_RESULT_OFF_VALUE + i] = watch_value[i];
  for (i = 0; i < 4; i++) r[BRIDGE_WATCH_RESULT_OFF_FAULT + i] = watch_fault[i];
  r[BRIDGE_WATCH_RESULT_OFF_STATUS] = status;
  r[BRIDGE_WATCH_RESULT_OFF_ERR] = err;
  r[BRIDGE_WATCH_RESULT_OFF_MAGIC] = BRIDGE_WATCH_RESULT_MAGIC;
  r[BRIDGE_WATCH_RESULT_OFF_POLLS] = watch_polls;
  REG_USB_BULK_IN_LEN_H = 0;
  REG_USB_BULK_IN_LEN_L = BRIDGE_WATCH_RESULT_SIZE;
  REG_USB_EP_CFG2 = USB_EP_CFG2_ARM_IN;
  watch_state = WATCH_SENT;
}

void watch_poll(void) {
  __xdata uint8_t *f = watch_req + BRIDGE_WATCH_OFF_FAULT;
  uint32_t fault_lo, fault_hi;
  if (watch_state != WATCH_ARMED) return;
  IE &= (uint8_t)~IE_EX0;
  if (watch_state == WATCH_ARMED) { /* the interrupt may have stopped it */
    if (watch_polls != 0xFF) watch_polls++;
    if (pcie_stream_run(0, 0, le32_at(watch_req + BRIDGE_WATCH_OFF_SIGNAL),
                        le32_at(watch_req + BRIDGE_WATCH_OFF_SIGNAL + 4), 2, watch_value) != 2) {
      watch_send(BRIDGE_WATCH_READ_FAILED, stream_err);
    } else if (watch_reached()) {
      watch_send(BRIDGE_WATCH_REACHED, BRIDGE_ERR_NONE);
    } else {
      fault_lo = le32_at(f);
      fault_hi = le32_at(f + 4);
      if ((fault_lo | fault_hi) && (watch_polls % BRIDGE_WATCH_FAULT_EVERY) == 0) {
        if (pcie_stream_run(0, 0, fault_lo, fault_hi, 1, watch_fault) != 1)
          watch_send(BRIDGE_WATCH_READ_FAILED, stream_err);
        else if (watch_fault[0] | watch_fault[1] | watch_fault[2] | watch_fault[3])
          watch_send(BRIDGE_WATCH_FAULT, BRIDGE_ERR_NONE);
      }
    }
  }
  IE |= IE_EX0;
}
