/*
 * capgraph bridge firmware for the ASM2464PD — entry, interrupt dispatch and
 * the vendor requests of bridge_protocol.h.
 *
 * Structure: main() initialises the chip and enables INT0; everything else
 * happens in the USB interrupt, one event at a time, except the signal watch
 * (watch.c), which the main loop runs between events. This file is the top of
 * the program: it calls into ep0, deadline, usb, stream, pcie, spi and
 * serial, and nothing calls back into it. Every wait is bounded
 * (hardware timer 0 deadline plus an iteration cap). Requests that are
 * unknown or malformed are STALLed before any state changes.
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/main.c (INT0 carries USB
 * events; 0x9101 says which; SRAM DMA register sequence of request 0xF2),
 * src/include/registers.h.
 */
#include "bridge_protocol.h"
#include "ep0.h"
#include "pcie.h"
#include "regs.h"
#include "serial.h"
#include "spi.h"
#include "stream.h"
#include "usb.h"
#include "watch.h"

/* Identity block at a fixed CODE address: lets the flasher recognise our
 * image for this chip (bridge_protocol.h, BRIDGE_FW_IDENT_*). */
__code __at(BRIDGE_FW_IDENT_ADDR) const uint8_t fw_ident[BRIDGE_FW_IDENT_SIZE] = {
    'C',
    'G',
    'B',
    'R',
    'I',
    'D',
    'G',
    'E',
    (uint8_t)(BRIDGE_CHIP_ID & 0xFF),
    (uint8_t)(BRIDGE_CHIP_ID >> 8),
    BRIDGE_PROTOCOL_MAJOR,
    BRIDGE_PROTOCOL_MINOR,
    BRIDGE_FW_VERSION_MAJOR,
    BRIDGE_FW_VERSION_MINOR,
    BRIDGE_FW_VERSION_PATCH,
    0};

static __xdata uint16_t requests_served;
/* SPI program waiting for its bulk OUT data. */
static __xdata uint8_t op_busy;
static __xdata uint32_t op_addr;
static __xdata uint16_t op_len;

static uint16_t ctrl_max(void) { return is_usb2 ? 64 : 512; }

static void put_le16(__xdata uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void info_reply(void) {
  volatile __xdata uint8_t *b = USB_CTRL_BUF;
  uint8_t i;
  for (i = 0; i < BRIDGE_INFO_SIZE; i++) b[i] = 0;
  b[0] = BRIDGE_INFO_MAGIC0;
  b[1] = BRIDGE_INFO_MAGIC1;
  b[2] = BRIDGE_INFO_MAGIC2;
  b[3] = BRIDGE_INFO_MAGIC3;
  b[BRIDGE_INFO_OFF_PROTO_MAJOR] = BRIDGE_PROTOCOL_MAJOR;
  b[BRIDGE_INFO_OFF_PROTO_MINOR] = BRIDGE_PROTOCOL_MINOR;
  b[BRIDGE_INFO_OFF_FW_MAJOR] = BRIDGE_FW_VERSION_MAJOR;
  b[BRIDGE_INFO_OFF_FW_MINOR] = BRIDGE_FW_VERSION_MINOR;
  b[BRIDGE_INFO_OFF_FW_PATCH] = BRIDGE_FW_VERSION_PATCH;
  b[BRIDGE_INFO_OFF_USB_SPEED] = is_usb2 ? 2 : 3;
  put_le16((__xdata uint8_t *)b + BRIDGE_INFO_OFF_CHIP_ID, BRIDGE_CHIP_ID);
  for (i = 0; i < 4; i++) b[BRIDGE_INFO_OFF_SERIAL + i] = serial[i];
  b[BRIDGE_INFO_OFF_SERIAL_OK] = serial_ok;
  b[BRIDGE_INFO_OFF_PCIE_LINK] = pcie_link_up;
  b[BRIDGE_INFO_OFF_LAST_ERROR] = last_error;
  b[BRIDGE_INFO_OFF_LAST_REQUEST] = last_request;
  b[BRIDGE_INFO_OFF_OP_BUSY] = op_busy;
  b[BRIDGE_INFO_OFF_MAX_CTRL] = (uint8_t)(ctrl_max() >> 3);
  put_le16((__xdata uint8_t *)b + BRIDGE_INFO_OFF_REQUESTS, requests_served);
  /* INFO reports the previous request's error, so it must not reset it. */
  ep0_send(setup_len < BRIDGE_INFO_SIZE ? setup_len : BRIDGE_INFO_SIZE);
}

/* XDATA access window for REG_READ/REG_WRITE: bank 0 or 1, no wrap. */
static uint8_t reg_range_ok(uint8_t max) {
  uint32_t end = (uint32_t)setup_val() + setup_len;
  if (setup_len == 0 || setup_len > max || setup_len > ctrl_max()) return BRIDGE_ERR_BAD_LENGTH;
  if (setup_idx() > 1 || end > 0x10000ul) return BRIDGE_ERR_BAD_ARGUMENT;
  return BRIDGE_ERR_NONE;
}

static void reg_read(void) {
  uint16_t addr = setup_val();
  uint8_t bank = setup_idx_l, i, v;
  volatile __xdata uint8_t *b = USB_CTRL_BUF;
  for (i = 0; i < (uint8_t)setup_len; i++) {
    DPX = bank;
    v = XREG(addr + i);
    DPX = 0;
    b[i] = v;
  }
  ep0_done(setup_len);
}

static void reg_write(void) {
  uint16_t addr = setup_val();
  uint8_t bank = setup_idx_l, i, v;
  volatile __xdata uint8_t *b = USB_CTRL_BUF;
  for (i = 0; i < (uint8_t)setup_len; i++) {
    v = b[i];
    DPX = bank;
    XREG(addr + i) = v;
    DPX = 0;
  }
  ep0_done(0);
}

/* SRAM DMA: hand the NVMe/MSC engine a sector count and slot range; the
 * engine then moves bulk data between EP 0x81/0x02 and SRAM on its own.
 * Register sequence: handmade/src/main.c request 0xF2. */
static void dma_arm(void) {
  uint16_t v = setup_val();
  uint16_t sectors = v & 0x7FFF;
  uint8_t first = setup_idx_l, count = setup_idx_h ? setup_idx_h : 1;
  if (sectors == 0 || (uint16_t)first + count > BRIDGE_SRAM_SLOTS ||
      (uint32_t)sectors * BRIDGE_SECTOR_SIZE > (uint32_t)count * BRIDGE_SLOT_SIZE) {
    ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
    return;
  }
  if (op_busy) {
    ep0_stall(BRIDGE_ERR_BUSY);
    return;
  }
  stream_cancel();
  REG_NVME_DOORBELL = 0x00;
  REG_NVME_SECTOR_SIZE_HI = (uint8_t)(BRIDGE_SECTOR_SIZE >> 8);
  REG_NVME_SECTOR_SIZE_LO = (uint8_t)BRIDGE_SECTOR_SIZE;
  REG_NVME_SLOT_START = NVME_SLOT_ENABLE | first;
  REG_NVME_SLOT_END = first + count;
  REG_NVME_SECTOR_COUNT_HI = (uint8_t)(sectors >> 8);
  REG_NVME_SECTOR_COUNT_LO = (uint8_t)sectors;
  REG_NVME_CTRL_STATUS = NVME_CTRL_DMA_START | ((v & BRIDGE_DMA_DIR_IN) ? 0 : NVME_CTRL_WRITE_DIR);
  REG_NVME_CMD_PARAM = first;
  ep0_done(0);
}

static uint32_t spi_setup_addr(void) { return ((uint32_t)setup_idx_l << 16) | setup_val(); }

static void spi_read_req(void) {
  uint8_t i;
  volatile __xdata uint8_t *b = USB_CTRL_BUF;
  if (setup_len == 0 || setup_len > BRIDGE_SPI_READ_MAX) {
    ep0_stall(BRIDGE_ERR_BAD_LENGTH);
    return;
  }
  if (setup_idx_h != 0) {
    ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
    return;
  }
  if (op_busy) {
    ep0_stall(BRIDGE_ERR_BUSY);
    return;
  }
  if (!spi_read(spi_setup_addr(), setup_len)) {
    ep0_stall(BRIDGE_ERR_FLASH_TIMEOUT);
    return;
  }
  for (i = 0; i < (uint8_t)setup_len; i++) b[i] = FLASH_BUF[i];
  ep0_done(setup_len);
}

static void spi_erase_req(void) {
  uint16_t sector = setup_val();
  if (setup_idx() != 0 || sector >= 4096) {
    ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
    return;
  }
  if (op_busy) {
    ep0_stall(BRIDGE_ERR_BUSY);
    return;
  }
  if (!spi_erase_4k((uint32_t)sector * BRIDGE_SPI_SECTOR)) {
    ep0_stall(BRIDGE_ERR_FLASH_TIMEOUT);
    return;
  }
  ep0_done(0);
}

static void spi_program_req(void) {
  uint16_t len = setup_idx();
  if (len == 0 || len > BRIDGE_SPI_PAGE) {
    ep0_stall(BRIDGE_ERR_BAD_LENGTH);
    return;
  }
  if (op_busy) {
    ep0_stall(BRIDGE_ERR_BUSY);
    return;
  }
  stream_cancel(); /* its bulk OUT would land in the same buffer */
  op_addr = (uint32_t)setup_val() * BRIDGE_SPI_PAGE;
  op_len = len;
  op_busy = 1;
  /* Bulk OUT data lands in the 0x7000 buffer (registers.h, e4_flash.py). */
  REG_USB_EP_CFG2 = USB_EP_CFG2_ARM_OUT;
  ep0_done(0);
}

/* Bulk OUT finished (data at FLASH_BUF): complete a pending SPI program or
 * stream write. Bulk IN finished: the stream result was collected. */
static void bulk_event(void) {
  uint16_t count;
  uint8_t cfg1 = REG_USB_EP_CFG1;
  REG_USB_EP_CFG1 = cfg1; /* write-1-to-clear */
  if (cfg1 & USB_EP_CFG1_BULK_IN_COMPLETE) {
    stream_bulk_in_done();
    watch_bulk_in_done();
  }
  if (!(cfg1 & USB_EP_CFG1_BULK_OUT_COMPLETE)) return;
  count = ((uint16_t)REG_USB_BULK_OUT_BC_H << 8) | REG_USB_BULK_OUT_BC_L;
  if (!op_busy) {
    stream_bulk_out(count);
    return;
  }
  ep0_result(BRIDGE_REQ_SPI_PROGRAM, count != op_len                ? BRIDGE_ERR_BULK_LENGTH
                                     : spi_program(op_addr, op_len) ? BRIDGE_ERR_NONE
                                                                    : BRIDGE_ERR_FLASH_TIMEOUT);
  op_busy = 0;
}

/* Vendor request, setup stage: validate everything we can before touching
 * state; OUT requests with data accept the data phase here. */
static void vendor_setup(void) {
  uint8_t err;
  uint8_t in = (setup_bm == BRIDGE_RT_VENDOR_IN);
  if (!in && setup_bm != BRIDGE_RT_VENDOR_OUT) {
    ep0_stall(BRIDGE_ERR_UNKNOWN_REQUEST);
    return;
  }
  requests_served++;
  switch (setup_req) {
    case BRIDGE_REQ_INFO:
      if (!in) break;
      if (setup_len < BRIDGE_INFO_SIZE) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      info_reply();
      return;
    case BRIDGE_REQ_REG_READ:
    case BRIDGE_REQ_REG_WRITE:
      if (in != (setup_req == BRIDGE_REQ_REG_READ)) break;
      err = reg_range_ok(BRIDGE_REG_MAX);
      if (err) {
        ep0_stall(err);
        return;
      }
      if (in)
        reg_read();
      else
        ep0_receive();
      return;
    case BRIDGE_REQ_TLP:
      if (in) break;
      if (setup_len != BRIDGE_TLP_SIZE) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      ep0_receive();
      return;
    case BRIDGE_REQ_TLP_RESULT:
      if (!in) break;
      if (setup_len != BRIDGE_TLP_RESULT_SIZE) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      for (err = 0; err < BRIDGE_TLP_RESULT_SIZE; err++) USB_CTRL_BUF[err] = tlp_result[err];
      ep0_done(BRIDGE_TLP_RESULT_SIZE);
      return;
    case BRIDGE_REQ_DMA:
      if (in) break;
      if (setup_len != 0) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      dma_arm();
      return;
    case BRIDGE_REQ_PCIE_POWER:
      if (in) break;
      if (setup_len != 0) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      if (setup_idx() != 0 || setup_val() > 1) {
        ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
        return;
      }
      if (setup_val_l)
        pcie_power_on();
      else
        pcie_power_off();
      if (setup_val_l && !pcie_link_up) {
        ep0_result(setup_req, BRIDGE_ERR_LINK_DOWN);
        ep0_send(0);
        return;
      }
      ep0_done(0);
      return;
    case BRIDGE_REQ_SPI_READ:
      if (!in) break;
      spi_read_req();
      return;
    case BRIDGE_REQ_SPI_ERASE:
      if (in) break;
      if (setup_len != 0) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      spi_erase_req();
      return;
    case BRIDGE_REQ_SPI_PROGRAM:
      if (in) break;
      if (setup_len != 0) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      spi_program_req();
      return;
    case BRIDGE_REQ_WATCH:
      if (in) break;
      if (setup_val() == 0 && setup_len == 0) { /* stop watching */
        watch_cancel();
        ep0_done(0);
        return;
      }
      if (setup_val() != 1 || setup_idx() != 0) {
        ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
        return;
      }
      if (setup_len != BRIDGE_WATCH_SIZE) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      if (op_busy) {
        ep0_stall(BRIDGE_ERR_BUSY);
        return;
      }
      ep0_receive();
      return;
    case BRIDGE_REQ_MEM_STREAM:
      if (in) break;
      if (setup_len != BRIDGE_STREAM_SIZE) {
        ep0_stall(BRIDGE_ERR_BAD_LENGTH);
        return;
      }
      if (op_busy) {
        ep0_stall(BRIDGE_ERR_BUSY);
        return;
      }
      ep0_receive();
      return;
    default: break;
  }
  ep0_stall(BRIDGE_ERR_UNKNOWN_REQUEST);
}

/* TLP request fields that must hold before the engine is touched. */
static uint8_t tlp_request_ok(__xdata uint8_t *t) {
  uint8_t ft = t[BRIDGE_TLP_OFF_FMT_TYPE], be = t[BRIDGE_TLP_OFF_BYTE_EN];
  uint8_t is64 = (ft == BRIDGE_TLP_MRD64 || ft == BRIDGE_TLP_MWR64);
  if (!(ft == BRIDGE_TLP_MRD32 || ft == BRIDGE_TLP_MWR32 || is64 || ft == BRIDGE_TLP_CFGRD0 ||
        ft == BRIDGE_TLP_CFGWR0 || ft == BRIDGE_TLP_CFGRD1 || ft == BRIDGE_TLP_CFGWR1))
    return 0;
  if (be == 0 || be > 0x0F) return 0;
  /* POSTED only makes sense for a memory write: everything else completes. */
  if (t[BRIDGE_TLP_OFF_FLAGS] && (t[BRIDGE_TLP_OFF_FLAGS] != BRIDGE_TLP_FLAG_POSTED ||
                                  !(ft == BRIDGE_TLP_MWR32 || ft == BRIDGE_TLP_MWR64)))
    return 0;
  if (t[BRIDGE_TLP_OFF_RSVD]) return 0;
  if (t[BRIDGE_TLP_OFF_ADDR_LO] & 0x03) return 0;
  if (!is64 && (t[8] | t[9] | t[10] | t[11])) return 0;
  return 1;
}

static void vendor_data_out(void) {
  static __xdata uint8_t tlp_req[BRIDGE_TLP_SIZE];
  uint8_t i;
  switch (setup_req) {
    case BRIDGE_REQ_REG_WRITE: reg_write(); return;
    case BRIDGE_REQ_TLP:
      for (i = 0; i < BRIDGE_TLP_SIZE; i++) tlp_req[i] = USB_CTRL_BUF[i];
      if (!tlp_request_ok(tlp_req)) {
        ep0_stall(BRIDGE_ERR_BAD_ARGUMENT);
        return;
      }
      pcie_tlp_run(tlp_req);
      i = tlp_result[BRIDGE_TLP_RESULT_OFF_STATUS];
      ep0_result(setup_req, i == BRIDGE_TLP_STATUS_OK || i == BRIDGE_TLP_STATUS_POSTED
                                ? BRIDGE_ERR_NONE
                            : i == BRIDGE_TLP_STATUS_TIMEOUT ? BRIDGE_ERR_TLP_TIMEOUT
                                                             : BRIDGE_ERR_TLP_ENGINE);
      ep0_send(0); /* the outcome is in TLP_RESULT */
      return;
    case BRIDGE_REQ_MEM_STREAM:
      watch_cancel(); /* the bulk IN buffer is the stream's now */
      stream_request();
      return;
    case BRIDGE_REQ_WATCH: watch_request(); return;
    default: ep0_stall(BRIDGE_ERR_UNKNOWN_REQUEST);
  }
}

static void control_event(void) {
  uint8_t phase = REG_USB_CTRL_PHASE;
  if (phase & USB_CTRL_PHASE_SETUP) {
    REG_USB_CTRL_PHASE = USB_CTRL_PHASE_SETUP;
    ep0_setup_load();
    if ((setup_bm & 0x60) == 0x00)
      usb_std_request();
    else if ((setup_bm & 0x60) == 0x40)
      vendor_setup();
    else
      ep0_stall(BRIDGE_ERR_UNKNOWN_REQUEST);
  } else if (phase & USB_CTRL_PHASE_DATA_OUT) {
    REG_USB_CTRL_PHASE = USB_CTRL_PHASE_DATA_OUT;
    if ((setup_bm & 0x60) == 0x40)
      vendor_data_out();
    else
      usb_std_data_out();
  } else {
    REG_USB_CTRL_PHASE = phase; /* status stages need nothing from us */
  }
}

static void bus_reset(void) {
  uint8_t v = REG_USB_PHY_CTRL_91D1;
  REG_USB_PHY_CTRL_91D1 = v;
  /* A reset aborts any SPI program or stream waiting for data. */
  op_busy = 0;
  stream_cancel();
  watch_cancel();
}

void usb_isr(void) __interrupt(0) {
  uint8_t n;
  /* Bounded: at most 8 events per entry; INT0 is level-triggered, so
   * anything left re-enters the handler. */
  for (n = 0; n < 8; n++) {
    uint8_t st;
    if (!(REG_INT_USB_STATUS & INT_USB_GATE)) break;
    st = REG_USB_PERIPH_STATUS;
    /* Bulk data before control: it completes a request already accepted
     * (SPI program), and the host polls INFO until it is done. */
    if (st & USB_PERIPH_BUS_RESET)
      bus_reset();
    else if (st & USB_PERIPH_LINK_EVENT)
      usb_link_event();
    else if (st & USB_PERIPH_BULK_DATA)
      bulk_event();
    else if (st & USB_PERIPH_CONTROL)
      control_event();
    else
      break;
  }
}

void main(void) {
  REG_UART_LCR &= (uint8_t)~0x38; /* no parity (handmade main.c) */
  is_usb2 = 0;
  spi_init();
  serial_load();
  pcie_init();
  pcie_power_off();
  usb_init_controller();
  IE = IE_EA | IE_EX0;
  for (;;) {
    /* everything else happens in usb_isr */
    watch_poll();
  }
}
