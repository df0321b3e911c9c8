/*
 * spi.c — the SPI flash controller: reads, 4 KiB erase, page program, and
 * raw OTP reads (serial.c interprets them).
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/flash.h and
 * handmade/e4_flash.py (controller init CC33/CA81/C805/C8A6; transaction =
 * mode C8AD, buffer offset C8AE/AF, command C8AA, address-length C8AC
 * (0x04 none, 0x07 three bytes), address C8A1/C8A2/C8AB, big-endian byte
 * count C8A3/C8A4, start C8A9 = 1 and poll bit 0; data in/out through the
 * 0x7000 buffer; mode 1 for commands that send buffer data; OTP bytes are
 * read between ENSO 0xB1 and EXSO 0xC1),
 * Macronix MX25 datasheet (WREN 0x06, RDSR 0x05 bit 0 WIP, SE 0x20, PP 0x02).
 */
#include "spi.h"

#include "deadline.h"
#include "regs.h"

void spi_init(void) {
  REG_CPU_EXEC_STATUS_2 = 0x04;
  REG_CPU_CTRL_CA81 |= 0x01;
  REG_INT_AUX_STATUS = 0x02;
  REG_FLASH_DIV = 0x04;
}

/* One controller transaction; 0 when the busy bit never cleared. */
static uint8_t spi_cmd(uint8_t cmd, uint32_t addr, uint8_t addr_len, uint16_t len, uint8_t mode) {
  uint16_t cap;
  uint8_t ok = 0;
  REG_FLASH_MODE = mode;
  REG_FLASH_BUF_OFFSET_LO = 0;
  REG_FLASH_BUF_OFFSET_HI = 0;
  REG_FLASH_CMD = cmd;
  REG_FLASH_ADDR_LEN = addr_len;
  REG_FLASH_ADDR_LO = (uint8_t)addr;
  REG_FLASH_ADDR_MD = (uint8_t)(addr >> 8);
  REG_FLASH_ADDR_HI = (uint8_t)(addr >> 16);
  REG_FLASH_DATA_LEN_HI = (uint8_t)(len >> 8);
  REG_FLASH_DATA_LEN_LO = (uint8_t)len;
  REG_FLASH_CSR = FLASH_CSR_BUSY;
  for (cap = 0xFFFF; cap; cap--) {
    if (!(REG_FLASH_CSR & FLASH_CSR_BUSY)) {
      ok = 1;
      break;
    }
  }
  REG_FLASH_MODE = 0;
  return ok;
}

/* Wait for the chip's write-in-progress bit; erase takes tens of ms. */
static uint8_t spi_wait_ready(uint16_t half_ms) {
  uint16_t cap;
  deadline_start(half_ms);
  for (cap = 0xFFFF; cap; cap--) {
    if (!spi_cmd(SPI_CMD_READ_STATUS, 0, FLASH_ADDR_LEN_NOADDR, 1, 0)) return 0;
    if (!(FLASH_BUF[0] & SPI_STATUS_WIP)) return 1;
    if (deadline_passed()) return 0;
  }
  return 0;
}

uint8_t spi_read(uint32_t addr, uint16_t len) {
  return spi_cmd(SPI_CMD_READ, addr, FLASH_ADDR_LEN_3BYTE, len, 0);
}

uint8_t spi_erase_4k(uint32_t addr) {
  if (!spi_cmd(SPI_CMD_WRITE_ENABLE, 0, FLASH_ADDR_LEN_NOADDR, 0, 0)) return 0;
  if (!spi_cmd(SPI_CMD_SECTOR_ERASE_4K, addr, FLASH_ADDR_LEN_3BYTE, 0, 0)) return 0;
  return spi_wait_ready(2 * 400);
}

uint8_t spi_program(uint32_t addr, uint16_t len) {
  if (!spi_cmd(SPI_CMD_WRITE_ENABLE, 0, FLASH_ADDR_LEN_NOADDR, 0, 0)) return 0;
  if (!spi_cmd(SPI_CMD_PAGE_PROGRAM, addr, FLASH_ADDR_LEN_3BYTE, len, 1)) return 0;
  return spi_wait_ready(2 * 10);
}

uint8_t spi_read_otp(uint16_t len) {
  uint8_t ok;
  if (!spi_cmd(SPI_CMD_ENTER_OTP, 0, FLASH_ADDR_LEN_NOADDR, 0, 0)) return 0;
  ok = spi_cmd(SPI_CMD_READ, 0, FLASH_ADDR_LEN_3BYTE, len, 0);
  spi_cmd(SPI_CMD_EXIT_OTP, 0, FLASH_ADDR_LEN_NOADDR, 0, 0);
  return ok;
}
