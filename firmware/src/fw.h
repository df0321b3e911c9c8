/* fw.h — what the firmware's modules share. Globals live in main.c. */
#ifndef FW_H
#define FW_H

#include <stdint.h>
#include "regs.h"
#include "bridge_protocol.h"

/* The setup packet of the control transfer being served (main.c). */
extern __xdata uint8_t setup_bm, setup_req, setup_val_l, setup_val_h;
extern __xdata uint8_t setup_idx_l, setup_idx_h;
extern __xdata uint16_t setup_len;
extern __xdata uint8_t is_usb2;
extern __xdata uint8_t pcie_link_up;
extern __xdata uint8_t serial[4], serial_ok;

/* ep0 (main.c): end a control transfer. */
void ep0_send(uint16_t len);  /* IN data from USB_CTRL_BUF, or ZLP status */
void ep0_receive(void);       /* accept the OUT data phase into USB_CTRL_BUF */
void ep0_stall(uint8_t err);  /* refuse; err goes to info.last_error */

/* usb.c: standard requests and descriptors. */
void usb_std_request(void);
void usb_std_data_out(void);
void usb_init_controller(void);

/* deadline.c-like helpers (main.c): 0.5 ms ticks of hardware timer 0. */
void deadline_start(uint16_t half_ms);
uint8_t deadline_passed(void);
void sleep_ms(uint16_t ms);

/* pcie.c */
void pcie_init(void);
void pcie_power_on(void);
void pcie_power_off(void);
/* Runs the TLP in tlp_req (BRIDGE_TLP layout); fills tlp_result. */
void pcie_tlp_run(__xdata uint8_t *tlp_req);
extern __xdata uint8_t tlp_result[BRIDGE_TLP_RESULT_SIZE];
/* Streamed memory TLPs: count dwords at addr, addr+4, ... (inside one 4 GiB
 * window), data as LE dwords at buf (written from it, or read into it).
 * Returns how many completed; stream_err/stream_cpl say why it stopped. */
uint16_t pcie_stream_run(uint8_t write, uint32_t addr_lo, uint32_t addr_hi, uint16_t count,
                         __xdata uint8_t *buf);
extern __xdata uint8_t stream_err, stream_cpl;

/* main.c: drop a MEM_STREAM whose bulk stage has not finished. */
void stream_cancel(void);

/* spi.c: returns 1 on success, 0 when the controller or chip timed out. */
void spi_init(void);
uint8_t spi_read(uint32_t addr, uint16_t len); /* data lands in FLASH_BUF */
uint8_t spi_erase_4k(uint32_t addr);
uint8_t spi_program(uint32_t addr, uint16_t len); /* data from FLASH_BUF */
uint8_t spi_read_otp_serial(void);                /* fills serial[] */

#endif
