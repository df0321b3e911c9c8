/* spi.h — the SPI flash controller: reads, 4 KiB erase, page program, OTP
 * reads. Each returns 1 on success, 0 when the controller or the chip
 * timed out. Data moves through FLASH_BUF (0x7000). Depends on deadline.h. */
#ifndef FW_SPI_H
#define FW_SPI_H

#include <stdint.h>

void spi_init(void);
uint8_t spi_read(uint32_t addr, uint16_t len); /* data lands in FLASH_BUF */
uint8_t spi_erase_4k(uint32_t addr);
uint8_t spi_program(uint32_t addr, uint16_t len); /* data from FLASH_BUF */
uint8_t spi_read_otp(uint16_t len);               /* OTP bytes 0.. into FLASH_BUF */

#endif
