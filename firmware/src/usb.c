/*
 * usb.c — descriptors, chapter 9 standard requests, USB controller start.
 *
 * The device is vendor class at device level (bDeviceClass 0xFF) with one
 * vendor interface and two bulk endpoints (0x81 IN, 0x02 OUT), so no
 * mass-storage or UAS driver binds and nothing has to be detached.
 *
 * Sources: USB 2.0 spec ch. 9 and USB 3.2 spec ch. 9 (descriptor layouts,
 * BOS, SuperSpeed endpoint companion, SET_SEL/SET_ISOCH_DELAY);
 * tinygrad/asm2464pd-firmware handmade/src/main.c (link event: 0x9300
 * bit 1 SuperSpeed up, bit 2 SuperSpeed failed -> run at high speed with
 * 0xCC30 = 0, 0x91C0 = 0x10), handmade/src/usb.h (SET_ADDRESS writes
 * 0x9090 = 0x80 | address and 0x91D0 = 0x02; controller start sequence;
 * SerDes lane tuning values at 0xC280/0xC300 without which the controller
 * raises no events), src/include/registers.h.
 */
#include "usb.h"

#include "bridge_protocol.h"
#include "ep0.h"
#include "regs.h"
#include "serial.h"
#include "stream.h"

#define U16(v) (uint8_t)((v) & 0xFF), (uint8_t)(((v) >> 8) & 0xFF)

#define STR_LANG 0
#define STR_MFG 1
#define STR_PRODUCT 2
#define STR_SERIAL 3

static __code const uint8_t dev_desc_hs[18] = {18,
                                               1,
                                               U16(0x0210),
                                               0xFF,
                                               0x00,
                                               0x00,
                                               64,
                                               U16(BRIDGE_USB_VID),
                                               U16(BRIDGE_USB_PID),
                                               BRIDGE_FW_VERSION_MAJOR,
                                               BRIDGE_FW_VERSION_MINOR,
                                               STR_MFG,
                                               STR_PRODUCT,
                                               STR_SERIAL,
                                               1};
static __code const uint8_t dev_desc_ss[18] = {18,
                                               1,
                                               U16(0x0320),
                                               0xFF,
                                               0x00,
                                               0x00,
                                               9, /* 2^9 = 512 */
                                               U16(BRIDGE_USB_VID),
                                               U16(BRIDGE_USB_PID),
                                               BRIDGE_FW_VERSION_MAJOR,
                                               BRIDGE_FW_VERSION_MINOR,
                                               STR_MFG,
                                               STR_PRODUCT,
                                               STR_SERIAL,
                                               1};
static __code const uint8_t cfg_desc_hs[32] = {
    9,       2,
    U16(32), 1,
    1,       0,
    0xC0,    0,
    9,       4,
    0,       0,
    2,       0xFF,
    0x00,    0x00,
    0,       7,
    5,       BRIDGE_EP_BULK_IN,
    2,       U16(512),
    0,       7,
    5,       BRIDGE_EP_BULK_OUT,
    2,       U16(512),
    0,
};
static __code const uint8_t cfg_desc_ss[44] = {
    9,
    2,
    U16(44),
    1,
    1,
    0,
    0xC0,
    0,
    9,
    4,
    0,
    0,
    2,
    0xFF,
    0x00,
    0x00,
    0,
    7,
    5,
    BRIDGE_EP_BULK_IN,
    2,
    U16(1024),
    0,
    6,
    0x30,
    15,
    0,
    U16(0), /* companion: bMaxBurst 15 */
    7,
    5,
    BRIDGE_EP_BULK_OUT,
    2,
    U16(1024),
    0,
    6,
    0x30,
    15,
    0,
    U16(0),
};
static __code const uint8_t bos_desc[22] = {
    5,  0x0F, U16(22), 2,    7,           0x10, 2,  0x02,
    0,  0,    0,                                                 /* USB 2.0 extension: LPM */
    10, 0x10, 3,       0x00, U16(0x000E), 1,    10, U16(0x0100), /* SS caps: HS/FS/SS */
};
static __code const char str_mfg[] = "capgraph";
static __code const char str_product[] = "capgraph ASM2464PD bridge";

__xdata uint8_t is_usb2;
static __xdata uint8_t configuration;

static void ep0_reply(__code const uint8_t *src, uint8_t len) {
  uint8_t i;
  if (setup_len < len) len = (uint8_t)setup_len;
  for (i = 0; i < len; i++) USB_CTRL_BUF[i] = src[i];
  ep0_send(len);
}

static void string_reply(__code const char *s) {
  uint8_t n = 0;
  while (s[n] && n < 62) {
    USB_CTRL_BUF[2 + 2 * n] = s[n];
    USB_CTRL_BUF[3 + 2 * n] = 0;
    n++;
  }
  USB_CTRL_BUF[0] = 2 + 2 * n;
  USB_CTRL_BUF[1] = 3;
  ep0_send(setup_len < (uint16_t)(2 + 2 * n) ? setup_len : (uint16_t)(2 + 2 * n));
}

/* Serial number: the OTP's four bytes as 8 lowercase hex digits,
 * "ffffffff" when the OTP is blank or its checksum fails. */
static void serial_reply(void) {
  static __code const char hex[] = "0123456789abcdef";
  uint8_t i, b;
  USB_CTRL_BUF[0] = 18;
  USB_CTRL_BUF[1] = 3;
  for (i = 0; i < 4; i++) {
    b = serial_ok ? serial[i] : 0xFF;
    USB_CTRL_BUF[2 + 4 * i] = hex[b >> 4];
    USB_CTRL_BUF[3 + 4 * i] = 0;
    USB_CTRL_BUF[4 + 4 * i] = hex[b & 0x0F];
    USB_CTRL_BUF[5 + 4 * i] = 0;
  }
  ep0_send(setup_len < 18 ? setup_len : 18);
}

static void get_descriptor(void) {
  switch (setup_val_h) {
    case 1: ep0_reply(is_usb2 ? dev_desc_hs : dev_desc_ss, 18); return;
    case 2:
      if (setup_val_l != 0) break;
      if (is_usb2)
        ep0_reply(cfg_desc_hs, sizeof(cfg_desc_hs));
      else
        ep0_reply(cfg_desc_ss, sizeof(cfg_desc_ss));
      return;
    case 3:
      if (setup_val_l == STR_LANG) {
        USB_CTRL_BUF[0] = 4;
        USB_CTRL_BUF[1] = 3;
        USB_CTRL_BUF[2] = 0x09;
        USB_CTRL_BUF[3] = 0x04; /* en-US */
        ep0_send(setup_len < 4 ? setup_len : 4);
      } else if (setup_val_l == STR_MFG) {
        string_reply(str_mfg);
      } else if (setup_val_l == STR_PRODUCT) {
        string_reply(str_product);
      } else if (setup_val_l == STR_SERIAL) {
        serial_reply();
      } else {
        break;
      }
      return;
    case 15: ep0_reply(bos_desc, sizeof(bos_desc)); return;
    default: break;
  }
  ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
}

static void bulk_reset(void) {
  stream_cancel();
  REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_IN;
  REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_OUT;
}

/* Zero-length status for a standard request (does not touch last_error). */
static void std_ok(void) { ep0_send(0); }

void usb_std_request(void) {
  uint8_t bm = setup_bm, rq = setup_req;
  uint16_t val = ((uint16_t)setup_val_h << 8) | setup_val_l;
  if (rq == 6 && bm == 0x80) {
    get_descriptor();
    return;
  }
  if (rq == 5 && bm == 0x00 && setup_len == 0 && val < 128) {
    REG_USB_INT_MASK_9090 = 0x80 | setup_val_l;
    REG_USB_EP_CTRL_91D0 = 0x02;
    std_ok();
    return;
  }
  if (rq == 9 && bm == 0x00 && setup_len == 0 && val <= 1) {
    REG_USB_MSC_CFG = 0x00; /* plain bulk, bypass the MSC engine */
    bulk_reset();
    configuration = setup_val_l;
    std_ok();
    return;
  }
  if (rq == 8 && bm == 0x80 && setup_len == 1) {
    USB_CTRL_BUF[0] = configuration;
    ep0_send(1);
    return;
  }
  if (rq == 0 && (bm & 0xFC) == 0x80 && setup_len == 2) {
    USB_CTRL_BUF[0] = 0;
    USB_CTRL_BUF[1] = 0;
    ep0_send(2);
    return;
  }
  if (rq == 11 && bm == 0x01 && setup_len == 0 && val == 0 && setup_idx_l == 0) {
    bulk_reset();
    std_ok();
    return;
  }
  if (rq == 10 && bm == 0x81 && setup_len == 1 && setup_idx_l == 0) {
    USB_CTRL_BUF[0] = 0;
    ep0_send(1);
    return;
  }
  if (rq == 1 && bm == 0x02 && val == 0 && setup_len == 0) { /* CLEAR_FEATURE(ENDPOINT_HALT) */
    if (setup_idx_l == BRIDGE_EP_BULK_OUT || setup_idx_l == BRIDGE_EP_BULK_IN) stream_cancel();
    if (setup_idx_l == BRIDGE_EP_BULK_OUT)
      REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_OUT;
    else if (setup_idx_l == BRIDGE_EP_BULK_IN)
      REG_USB_EP_CFG2 = USB_EP_CFG2_CLEAR_IN;
    else if (setup_idx_l != 0) {
      ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
      return;
    }
    std_ok();
    return;
  }
  if ((rq == 3 || rq == 1) && bm == 0x00 && setup_len == 0 &&
      (val == 48 || val == 49 || val == 1)) {
    std_ok(); /* U1/U2 enable, remote wakeup: accepted, nothing to do */
    return;
  }
  if (rq == 48 && bm == 0x00 && setup_len == 6) { /* SET_SEL: 6 bytes follow */
    ep0_receive();
    return;
  }
  if (rq == 49 && bm == 0x00 && setup_len == 0) { /* SET_ISOCH_DELAY */
    std_ok();
    return;
  }
  ep0_stall(BRIDGE_ERR_UNKNOWN_REQUEST);
}

void usb_std_data_out(void) {
  if (setup_req == 48) {
    std_ok();
    return;
  } /* SET_SEL values are not used */
  ep0_stall(BRIDGE_ERR_UNKNOWN_REQUEST);
}

/* SerDes lane tuning: {offset, keep-mask, set-bits}, applied to both lanes.
 * Values from handmade/src/usb.h usb_serdes_tune_lane (stock-firmware trace). */
static __code const uint8_t serdes_tune[][3] = {
    {0x02, 0x1F, 0xA0}, {0x03, 0xF3, 0x00}, {0x04, 0x8F, 0x40}, {0x05, 0x0F, 0x60},
    {0x06, 0xF0, 0x07}, {0x07, 0x1F, 0x60}, {0x09, 0x0F, 0x90}, {0x0B, 0xC0, 0x0A},
    {0x0C, 0xFD, 0x00}, {0x10, 0xE0, 0x03}, {0x11, 0xE0, 0x08}, {0x12, 0x1F, 0x20},
    {0x13, 0xF3, 0x04}, {0x14, 0xFF, 0x06}, {0x15, 0xF0, 0x0C}, {0x16, 0xF0, 0x0F},
    {0x17, 0x1F, 0x40}, {0x19, 0x0F, 0x80}, {0x1A, 0xF0, 0x0E}, {0x1B, 0xC0, 0x00},
    {0x1C, 0xFD, 0x02}, {0x20, 0xE0, 0x03}, {0x21, 0xE0, 0x08}, {0x22, 0xE0, 0x0A},
    {0x23, 0xFC, 0x02}, {0x24, 0xF0, 0x07}, {0x25, 0xF0, 0x0F}, {0x26, 0xF0, 0x0B},
    {0x27, 0x1F, 0x40}, {0x29, 0x0F, 0x80}, {0x2A, 0xFF, 0x01}, {0x2B, 0xC0, 0x00},
    {0x2C, 0xFD, 0x02}, {0x3C, 0xFD, 0x00}, {0x43, 0xC3, 0x1C}, {0x45, 0xF0, 0x0B},
    {0x46, 0xF0, 0x0D}, {0x49, 0x80, 0x41}, {0x4A, 0xFE, 0x00}, {0x4C, 0xF1, 0x0E},
    {0x4E, 0xFF, 0x40}, {0x5B, 0xE0, 0x1B},
};

void usb_init_controller(void) {
  uint8_t i, lane;
  for (lane = 0; lane < 2; lane++) {
    uint16_t base = lane ? 0xC300 : 0xC280;
    for (i = 0; i < sizeof(serdes_tune) / 3; i++) {
      uint16_t a = base + serdes_tune[i][0];
      XREG(a) = (XREG(a) & serdes_tune[i][1]) | serdes_tune[i][2];
    }
  }
  REG_POWER_STATUS &= (uint8_t)~POWER_STATUS_USB_PATH;
  REG_INT_STATUS_C800 = 0x01;
  REG_USB_CONFIG = 0xE0;
  REG_USB_EP0_CFG = 0xF0;
  XREG(0x9010) = 0x00; /* REG_USB_DATA_L */
  XREG(0x905E) = 0x00; /* REG_USB_EP_MGMT */
  XREG(0x9303) = 0x33; /* REG_BUF_CFG_9303 */
}

void usb_link_event(void) {
  uint8_t v = REG_BUF_CFG_9300;
  if (v & BUF_CFG_9300_SS_FAIL) {
    is_usb2 = 1;
    REG_CPU_MODE = 0x00;
    REG_USB_PHY_CTRL_91C0 = 0x10;
  } else if (v & BUF_CFG_9300_SS_OK) {
    is_usb2 = 0;
  }
  REG_BUF_CFG_9300 = v;
}
