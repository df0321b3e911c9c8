/* stream.h — BRIDGE_REQ_MEM_STREAM between its control request and the end
 * of its bulk stage. Depends on ep0.h and pcie.h. */
#ifndef FW_STREAM_H
#define FW_STREAM_H

#include <stdint.h>

/* The header arrived in USB_CTRL_BUF (data stage): check it, then run a
 * read now or wait for a write's bulk OUT. Ends the control transfer. */
void stream_request(void);
/* Bulk OUT of `bytes` landed at FLASH_BUF: returns 1 if it was a stream
 * write's data (and ran it), 0 if no stream waits for data. */
uint8_t stream_bulk_out(uint16_t bytes);
/* The host collected the bulk IN result. */
void stream_bulk_in_done(void);
/* Drop a stream whose bulk stage has not finished (reset, halt, new DMA). */
void stream_cancel(void);

#endif
