/* ep0.h — the control transfer being served: its setup packet, how a
 * request ends (data/status, or STALL), and the error INFO reports.
 * Depends on regs.h only; every request handler sits above it. */
#ifndef FW_EP0_H
#define FW_EP0_H

#include <stdint.h>

/* The setup packet of the control transfer being served. */
extern __xdata uint8_t setup_bm, setup_req, setup_val_l, setup_val_h;
extern __xdata uint8_t setup_idx_l, setup_idx_h;
extern __xdata uint16_t setup_len;
/* What INFO reports about the last request (BRIDGE_ERR_*, its bRequest). */
extern __xdata uint8_t last_error, last_request;

void ep0_setup_load(void);                 /* copy the setup packet from the controller */
void ep0_send(uint16_t len);               /* IN data from USB_CTRL_BUF, or ZLP status */
void ep0_receive(void);                    /* accept the OUT data phase into USB_CTRL_BUF */
void ep0_stall(uint8_t err);               /* refuse; err goes to last_error */
void ep0_done(uint16_t len);               /* success: clear last_error, then send */
void ep0_result(uint8_t req, uint8_t err); /* record an outcome, send nothing */
uint16_t setup_val(void);
uint16_t setup_idx(void);

#endif
