/*
 * serial.c — the serial number from the SPI flash's OTP area.
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/flash.h (OTP layout:
 * 4 serial bytes then their XOR checksum, read between ENSO 0xB1 and
 * EXSO 0xC1).
 */
#include "serial.h"

#include "regs.h"
#include "spi.h"

__xdata uint8_t serial[4], serial_ok;

void serial_load(void) {
  uint8_t i, csum = 0, ok;
  for (i = 0; i < 4; i++) serial[i] = 0xFF;
  ok = spi_read_otp(5);
  if (ok) {
    for (i = 0; i < 4; i++) {
      serial[i] = FLASH_BUF[i];
      csum ^= serial[i];
    }
    ok = (FLASH_BUF[4] == csum);
  }
  /* A blank OTP (all FF) has checksum 0x00 != 0xFF, so it reads as not ok. */
  serial_ok = ok;
}
