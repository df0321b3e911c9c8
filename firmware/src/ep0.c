/*
 * ep0.c — the end of every control transfer: IN data, status, or STALL.
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/main.c (setup packet at
 * 0x9104; EP0 replies from 0x9E00 with the length in 0x9003/4; 0x9092 =
 * 0x04 to send, 0x02 to take the OUT data phase, 0x01 to stall),
 * src/include/registers.h.
 */
#include "ep0.h"

#include "bridge_protocol.h"
#include "regs.h"

__xdata uint8_t setup_bm, setup_req, setup_val_l, setup_val_h;
__xdata uint8_t setup_idx_l, setup_idx_h;
__xdata uint16_t setup_len;
__xdata uint8_t last_error, last_request;

void ep0_setup_load(void) {
  setup_bm = REG_USB_SETUP_BMREQ;
  setup_req = REG_USB_SETUP_BREQ;
  setup_val_l = REG_USB_SETUP_WVAL_L;
  setup_val_h = REG_USB_SETUP_WVAL_H;
  setup_idx_l = REG_USB_SETUP_WIDX_L;
  setup_idx_h = REG_USB_SETUP_WIDX_H;
  setup_len = ((uint16_t)REG_USB_SETUP_WLEN_H << 8) | REG_USB_SETUP_WLEN_L;
}

void ep0_send(uint16_t len) {
  REG_USB_EP0_LEN_H = (uint8_t)(len >> 8);
  REG_USB_EP0_LEN_L = (uint8_t)len;
  REG_USB_DMA_TRIGGER = USB_DMA_SEND;
}

void ep0_receive(void) { REG_USB_DMA_TRIGGER = USB_DMA_RECV; }

void ep0_stall(uint8_t err) {
  ep0_result(setup_req, err);
  REG_USB_DMA_TRIGGER = USB_DMA_STALL;
}

void ep0_done(uint16_t len) {
  ep0_result(setup_req, BRIDGE_ERR_NONE);
  ep0_send(len);
}

void ep0_result(uint8_t req, uint8_t err) {
  last_error = err;
  last_request = req;
}

uint16_t setup_val(void) { return ((uint16_t)setup_val_h << 8) | setup_val_l; }
uint16_t setup_idx(void) { return ((uint16_t)setup_idx_h << 8) | setup_idx_l; }
