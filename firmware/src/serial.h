/* serial.h — the bridge's serial number: four OTP bytes and whether their
 * checksum matched. Filled once at boot; read by INFO and the USB serial
 * string. Depends on spi.h. */
#ifndef FW_SERIAL_H
#define FW_SERIAL_H

#include <stdint.h>

extern __xdata uint8_t serial[4], serial_ok;

/* Reads the OTP; serial_ok = 1 when its XOR checksum matches. */
void serial_load(void);

#endif
