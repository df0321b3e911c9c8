/* watch.h — BRIDGE_REQ_WATCH (protocol 1.3): the firmware reads the GPU's
 * completion signal between USB events and answers one bulk IN when it is
 * reached, so the host sleeps instead of polling over USB. */
#ifndef FW_WATCH_H
#define FW_WATCH_H

#include <stdint.h>

void watch_request(void);      /* data stage of WATCH wValue 1: arm */
void watch_cancel(void);       /* stop; drop an unsent result */
void watch_bulk_in_done(void); /* the host collected the result */
void watch_poll(void);         /* from main(): one round of reads when armed */

#endif
