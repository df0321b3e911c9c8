/*
 * stream.c — BRIDGE_REQ_MEM_STREAM: many dword MRd/MWr to consecutive PCIe
 * addresses in one request; the header on EP0, data and result over bulk
 * (layout and rules in bridge_protocol.h).
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/main.c request 0xF0
 * modes 1/2 (bulk OUT data at 0x7000, bulk IN from 0x8000 with its length
 * in 0x9007/0x9008, EP_CFG2 arm bits).
 */
#include "stream.h"

#include "ep0.h"
#include "pcie.h"
#include "regs.h"

#define STREAM_IDLE 0
#define STREAM_WAIT_OUT 1 /* write: waiting for count*4 bytes of bulk OUT */
#define STREAM_WAIT_IN 2  /* the result (and read data) is armed on bulk IN */
static __xdata uint8_t stream_state;
static __xdata uint8_t stream_hdr[BRIDGE_STREAM_SIZE];
static __xdata uint16_t stream_count;

static uint32_t le32_at(__xdata uint8_t *p) {
  return ((uint32_t)p[3] << 24) | ((uint32_t)p[2] << 16) | ((uint16_t)p[1] << 8) | p[0];
}

static void put_le16(__xdata uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

void stream_cancel(void) {
  if (stream_state == STREAM_IDLE) return;
  REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_IN;
  REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_OUT;
  stream_state = STREAM_IDLE;
}

void stream_bulk_in_done(void) {
  if (stream_state == STREAM_WAIT_IN) stream_state = STREAM_IDLE;
}

/* Result at r (BRIDGE_STREAM_RESULT layout), then send `len` bytes of the
 * bulk-IN buffer; the host's bulk IN collects them. */
static void stream_finish(__xdata uint8_t *r, uint16_t done, uint16_t len) {
  r[BRIDGE_STREAM_RESULT_OFF_TAG] = stream_hdr[BRIDGE_STREAM_OFF_TAG];
  r[BRIDGE_STREAM_RESULT_OFF_TAG + 1] = stream_hdr[BRIDGE_STREAM_OFF_TAG + 1];
  put_le16(r + BRIDGE_STREAM_RESULT_OFF_DONE, done);
  r[BRIDGE_STREAM_RESULT_OFF_ERR] = stream_err;
  r[BRIDGE_STREAM_RESULT_OFF_CPL] = stream_cpl;
  r[BRIDGE_STREAM_RESULT_OFF_OP] = stream_hdr[BRIDGE_STREAM_OFF_OP];
  r[BRIDGE_STREAM_RESULT_OFF_MAGIC] = BRIDGE_STREAM_RESULT_MAGIC;
  ep0_result(BRIDGE_REQ_MEM_STREAM, stream_err);
  REG_USB_BULK_IN_LEN_H = (uint8_t)(len >> 8);
  REG_USB_BULK_IN_LEN_L = (uint8_t)len;
  REG_USB_EP_CFG2 = USB_EP_CFG2_ARM_IN;
  stream_state = STREAM_WAIT_IN;
}

static uint16_t stream_run(__xdata uint8_t *buf) {
  __xdata uint8_t *h = stream_hdr;
  return pcie_stream_run(h[BRIDGE_STREAM_OFF_OP] == BRIDGE_STREAM_WRITE, h[BRIDGE_STREAM_OFF_FLAGS],
                         le32_at(h + BRIDGE_STREAM_OFF_ADDR_LO),
                         le32_at(h + BRIDGE_STREAM_OFF_ADDR_HI), stream_count, buf);
}

void stream_request(void) {
  __xdata uint8_t *h = stream_hdr;
  uint8_t i, op, flags;
  uint32_t lo;
  for (i = 0; i < BRIDGE_STREAM_SIZE; i++) h[i] = USB_CTRL_BUF[i];
  op = h[BRIDGE_STREAM_OFF_OP];
  flags = h[BRIDGE_STREAM_OFF_FLAGS];
  stream_count = ((uint16_t)h[BRIDGE_STREAM_OFF_COUNT + 1] << 8) | h[BRIDGE_STREAM_OFF_COUNT];
  lo = le32_at(h + BRIDGE_STREAM_OFF_ADDR_LO);
  if (stream_count == 0 || stream_count > BRIDGE_STREAM_MAX_DWORDS) {
    ep0_stall(BRIDGE_ERR_BAD_LENGTH);
    return;
  }
  if ((op != BRIDGE_STREAM_READ && op != BRIDGE_STREAM_WRITE) ||
      (flags && (flags != BRIDGE_STREAM_FLAG_POSTED || op != BRIDGE_STREAM_WRITE)) ||
      h[BRIDGE_STREAM_OFF_RSVD] || h[BRIDGE_STREAM_OFF_RSVD + 1] || (lo & 3) ||
      lo > 0xFFFFFFFFul - ((uint32_t)stream_count * 4 - 1)) {
    ep0_stall(BRIDGE_ERR_BAD_ARGUMENT); /* not dword aligned, or crosses 4 GiB */
    return;
  }
  stream_cancel();
  if (op == BRIDGE_STREAM_READ) {
    uint16_t done = stream_run((__xdata uint8_t *)USB_BULK_IN_BUF);
    stream_finish((__xdata uint8_t *)USB_BULK_IN_BUF + stream_count * 4, done,
                  stream_count * 4 + BRIDGE_STREAM_RESULT_SIZE);
    ep0_send(0);
    return;
  }
  stream_state = STREAM_WAIT_OUT;
  REG_USB_EP_CFG2 = USB_EP_CFG2_ARM_OUT; /* lands at FLASH_BUF, like SPI_PROGRAM */
  ep0_done(0);
}

/* Exactly count*4 bytes or nothing is written. */
uint8_t stream_bulk_out(uint16_t bytes) {
  uint16_t done = 0;
  if (stream_state != STREAM_WAIT_OUT) return 0;
  if (bytes != stream_count * 4) {
    stream_err = BRIDGE_ERR_BULK_LENGTH;
    stream_cpl = BRIDGE_CPL_SC;
  } else {
    done = stream_run((__xdata uint8_t *)FLASH_BUF);
  }
  stream_finish((__xdata uint8_t *)USB_BULK_IN_BUF, done, BRIDGE_STREAM_RESULT_SIZE);
  return 1;
}
