/* usb.h — descriptors, chapter 9 requests, USB controller start and link
 * events. Depends on ep0.h, serial.h and stream.h. */
#ifndef FW_USB_H
#define FW_USB_H

#include <stdint.h>

extern __xdata uint8_t is_usb2; /* 1 after SuperSpeed failed: high speed */

void usb_std_request(void);
void usb_std_data_out(void);
void usb_init_controller(void);
void usb_link_event(void);

#endif
