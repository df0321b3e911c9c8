/*
 * regs.h — every ASM2464PD hardware register the firmware touches, named
 * once. The emulator's device model (tests/emu/asm2464_model.cpp) takes its
 * addresses from here too (tests/emu/bridge_regs.h).
 *
 * Sources: tinygrad/asm2464pd-firmware src/include/registers.h (address
 * map, register names and bit meanings, reverse engineered from the stock
 * firmware), handmade/src/main.c, usb.h, flash.h, pcie_pio.h (the order in
 * which a working firmware uses them). Names keep that map's spelling.
 *
 * XDATA address map (registers.h):
 *   0x0000-0x5FFF  working RAM (our globals live at 0x0000-0x0FFF)
 *   0x7000-0x7FFF  flash / bulk-OUT landing buffer (CPU writes ignored)
 *   0x9000-0x93FF  USB controller
 *   0x9E00-0x9FFF  EP0 control data buffer (IN replies and OUT data)
 *   0xB200-0xB29F  PCIe TLP engine
 *   0xB400-0xB4FF  PCIe link / bridge config (LTSSM, PERST#)
 *   0xC000-0xC0FF  UART
 *   0xC400-0xC5FF  NVMe / MSC DMA engine (drives the SRAM DMA)
 *   0xC800-0xC8FF  interrupt status, SPI flash controller
 *   0xCC00-0xCCFF  timers, CPU control
 *   0xE700-0xE7FF  system status / link control
 *   0xF000-0xFFFF  window onto SRAM (bus address 0x200000)
 */
#ifndef FW_REGS_H
#define FW_REGS_H

#include <stdint.h>

/* A register is the byte at its XDATA address, a buffer the bytes from its
 * address on. A host program that wants the addresses alone (the emulator,
 * tests/emu/bridge_regs.h) defines both macros before including this. */
#ifndef XREG
#define XREG(addr) (*(volatile __xdata uint8_t *)(addr))
#endif
#ifndef XBUF
#define XBUF(addr) ((volatile __xdata uint8_t *)(addr))
#endif

/* The host compilers include this header only for the data tables below
 * (the emulator checks the PCIe PHY tuning against them). */
#ifdef __SDCC
__sfr __at(0x93) DPX; /* DPTR bank: 1 selects the PHY register bank (main.c) */
__sfr __at(0xA8) IE;
#endif
#define IE_EA 0x80
#define IE_EX0 0x01

/* ---- USB controller (0x9000-0x93FF, 0x9E00) ---- */
#define REG_USB_CONFIG XREG(0x9002)
#define REG_USB_EP0_LEN_H XREG(0x9003)
#define REG_USB_EP0_LEN_L XREG(0x9004)
#define REG_USB_EP0_CFG XREG(0x9005)
#define REG_USB_BULK_IN_LEN_H XREG(0x9007) /* bytes to send from USB_BULK_IN_BUF */
#define REG_USB_BULK_IN_LEN_L XREG(0x9008)
#define REG_USB_MSC_CFG XREG(0x900B)       /* 0 = plain bulk, bypass MSC engine */
#define REG_USB_INT_MASK_9090 XREG(0x9090) /* SET_ADDRESS: 0x80 | address */
#define REG_USB_CTRL_PHASE XREG(0x9091)
#define USB_CTRL_PHASE_SETUP 0x01
#define USB_CTRL_PHASE_STAT_OUT 0x02
#define USB_CTRL_PHASE_DATA_OUT 0x04
#define USB_CTRL_PHASE_DATA_IN 0x08
#define USB_CTRL_PHASE_STAT_IN 0x10
#define REG_USB_DMA_TRIGGER XREG(0x9092)
#define USB_DMA_STALL 0x01
#define USB_DMA_RECV 0x02
#define USB_DMA_SEND 0x04
#define REG_USB_EP_CFG1 XREG(0x9093)
#define USB_EP_CFG1_BULK_OUT_COMPLETE 0x02
#define USB_EP_CFG1_BULK_IN_COMPLETE 0x08
#define REG_USB_EP_CFG2 XREG(0x9094)
#define USB_EP_CFG2_CLEAR_IN 0x01
#define USB_EP_CFG2_ARM_IN 0x02 /* send REG_USB_BULK_IN_LEN bytes of 0x8000 */
#define USB_EP_CFG2_CLEAR_OUT 0x08
#define USB_EP_CFG2_ARM_OUT 0x10
#define REG_USB_PERIPH_STATUS XREG(0x9101)
#define USB_PERIPH_BUS_RESET 0x01
#define USB_PERIPH_CONTROL 0x02
#define USB_PERIPH_BULK_DATA 0x04
#define USB_PERIPH_LINK_EVENT 0x10
#define REG_USB_SETUP_BMREQ XREG(0x9104)
#define REG_USB_SETUP_BREQ XREG(0x9105)
#define REG_USB_SETUP_WVAL_L XREG(0x9106)
#define REG_USB_SETUP_WVAL_H XREG(0x9107)
#define REG_USB_SETUP_WIDX_L XREG(0x9108)
#define REG_USB_SETUP_WIDX_H XREG(0x9109)
#define REG_USB_SETUP_WLEN_L XREG(0x910A)
#define REG_USB_SETUP_WLEN_H XREG(0x910B)
#define REG_USB_BULK_OUT_BC_H XREG(0x910D)
#define REG_USB_BULK_OUT_BC_L XREG(0x910E)
#define REG_USB_PHY_CTRL_91C0 XREG(0x91C0)
#define REG_USB_EP_CTRL_91D0 XREG(0x91D0)
#define REG_USB_PHY_CTRL_91D1 XREG(0x91D1) /* bus-reset / link event, W1C */
#define REG_POWER_STATUS XREG(0x92C2)
#define POWER_STATUS_USB_PATH 0x40
#define REG_BUF_CFG_9300 XREG(0x9300)
#define BUF_CFG_9300_SS_OK 0x02
#define BUF_CFG_9300_SS_FAIL 0x04
/* 0x8000-0x8FFF: the buffer an armed bulk IN sends from (handmade main.c
 * do_usb_bulk_in; registers.h calls it a window into SRAM, not aliased with
 * the 0xF000 window). */
#define USB_BULK_IN_BUF XBUF(0x8000)
#define USB_BULK_IN_BUF_SIZE 0x1000
#define USB_CTRL_BUF XBUF(0x9E00)
#define USB_CTRL_BUF_SIZE 0x200

/* ---- PCIe TLP engine (0xB210-0xB298) ---- */
#define REG_PCIE_FMT_TYPE XREG(0xB210)
#define REG_PCIE_TLP_CTRL XREG(0xB213)
#define REG_PCIE_TLP_LENGTH XREG(0xB216)
#define REG_PCIE_BYTE_EN XREG(0xB217)
/* B218..B21B = address[31:0] most significant byte first,
 * B21C..B21F = address[63:32] most significant byte first (main.c). */
#define REG_PCIE_ADDR(i) XREG(0xB218 + (i))
/* B220..B223 = data dword, most significant byte first (pcie_pio.h). */
#define REG_PCIE_DATA(i) XREG(0xB220 + (i))
#define REG_PCIE_CPL_HDR_HI XREG(0xB22A) /* [7:5] completion status */
#define REG_PCIE_CPL_HDR_LO XREG(0xB22B)
#define REG_PCIE_TRIGGER XREG(0xB254)
#define PCIE_TRIGGER_EXEC 0x0F
#define REG_PCIE_COMPL_STATUS XREG(0xB284)
#define PCIE_COMPL_HAS_DATA 0x01
#define REG_PCIE_STATUS XREG(0xB296)
#define PCIE_STATUS_ERROR 0x01
#define PCIE_STATUS_COMPLETE 0x02
#define PCIE_STATUS_KICK 0x04
#define REG_PCIE_TUNNEL_CFG XREG(0xB298)
#define PCIE_TLP_CTRL_TUNNEL 0x10
#define PCIE_FMT_HAS_DATA 0x40

/* ---- PCIe link / power ---- */
#define REG_TUNNEL_CTRL_B403 XREG(0xB403)
#define REG_TUNNEL_LINK_STATE XREG(0xB430)
#define REG_TUNNEL_LINK_STATUS XREG(0xB431)
#define PCIE_LINK_WIDTH_x2 0x0C
#define REG_PCIE_LTSSM_STATE XREG(0xB450)
#define PCIE_LTSSM_L0 0x78 /* "CONNECTED" in main.c */
#define REG_PCIE_PERST_CTRL XREG(0xB480)
#define PCIE_PERST_ASSERT 0x01
#define REG_PCIE_LANE_CTRL_C659 XREG(0xC659) /* bit0: 12 V rail */
/* Bank 1 (DPX=1) 0x6025 bit 7: without it TLPs from the B210 engine never
 * reach the downstream device; the stock firmware sets it read-modify-write
 * (registers.h, "PCIe switch TLP routing control"). */
#define REG_PHY_TLP_ROUTING XREG(0x6025)
#define PHY_TLP_ROUTING_ENABLE 0x80
#define REG_HDDPC_CTRL XREG(0xC656)          /* bit5: 3.3 V rail */
#define REG_PHY_TIMER_CTRL_E764 XREG(0xE764) /* 0x1C starts link training */
#define REG_SYS_CTRL_E765 XREG(0xE765)
#define SYS_CTRL_E765_PCIE_LINK_UP 0x02

/* ---- PCIe RX PHY tuning (bank 1), applied once at boot before link-up ----
 * Source: tinygrad/asm2464pd-firmware handmade/src/pcie_tuning.h, a port of
 * the stock firmware's writes seen in a trace with an RX 7900 XTX attached
 * (trace lines 719..1399), applied by handmade main.c right after the TLP
 * engine constants (B213/B216) and before the first pcie_power_off().
 * The registers are undocumented PHY/switch-plane registers; what each one
 * does is not public, only the values and their order are.
 *
 * Four lane slices (bank-1 0x78xx, 0x79xx, 0x7Axx, 0x7Bxx) each with a
 * companion slice (0x60xx, 0x64xx, 0x68xx, 0x6Cxx). The sequence is five
 * passes; each pass applies its list to slice 0, then 1, 2, 3. An entry is
 * W(kind, offset, value): PHY_LANE writes lane_base + offset, PHY_COMPANION
 * companion_base + offset, PHY_LANE_TAIL writes lane_base + offset with the
 * slice's PCIE_RXPHY_TAIL_0B value (0x56 on lanes 0/1, 0x5C on lanes 2/3,
 * the only per-lane difference in the trace). Repeated writes to one
 * register are in the source and are kept: the order is the fact. */
#define PHY_LANE 1
#define PHY_COMPANION 2
#define PHY_LANE_TAIL 3
#define PCIE_RXPHY_SLICES 4
#define PCIE_RXPHY_LANE_HI {0x78, 0x79, 0x7A, 0x7B}
#define PCIE_RXPHY_COMPANION_HI {0x60, 0x64, 0x68, 0x6C}
#define PCIE_RXPHY_TAIL_0B {0x56, 0x56, 0x5C, 0x5C}
/* One row of writes per trace span: */
/* clang-format off */
/* pass 1: preamble (trace 719..806) */
#define PCIE_RXPHY_PASS_1(W) \
  W(PHY_LANE, 0x9B, 0x10) W(PHY_LANE, 0x9B, 0x90) \
  W(PHY_COMPANION, 0x00, 0xC0) W(PHY_COMPANION, 0x04, 0x2B) W(PHY_COMPANION, 0x06, 0x41) \
  W(PHY_COMPANION, 0x07, 0x81) W(PHY_COMPANION, 0x59, 0x41) W(PHY_COMPANION, 0x5A, 0x00) \
  W(PHY_COMPANION, 0x0A, 0x11) W(PHY_COMPANION, 0x42, 0xBF) W(PHY_COMPANION, 0x05, 0x8A)
/* pass 2: lane stage 0 (trace 807..838) */
#define PCIE_RXPHY_PASS_2(W) \
  W(PHY_LANE, 0x64, 0x0F) W(PHY_LANE, 0xBF, 0xB0) W(PHY_LANE, 0xBF, 0x30) W(PHY_LANE, 0x67, 0xD0)
/* pass 3: lane stage 1 (trace 839..902) */
#define PCIE_RXPHY_PASS_3(W) \
  W(PHY_LANE, 0x40, 0x01) W(PHY_LANE, 0x01, 0x7C) W(PHY_LANE, 0x11, 0x7C) \
  W(PHY_LANE, 0x21, 0xF0) W(PHY_LANE, 0x31, 0xF0)
/* pass 4: lane stage 2 (trace 903..1237), companion profile (951..1231),
 * then lane + 0x85 = 0xA6 */
#define PCIE_RXPHY_PASS_4(W) \
  W(PHY_LANE, 0x34, 0x07) W(PHY_LANE, 0x35, 0x6D) W(PHY_LANE, 0x26, 0x3A) W(PHY_LANE, 0x36, 0x57) \
  W(PHY_LANE, 0x06, 0x73) W(PHY_LANE, 0x16, 0x73) W(PHY_LANE, 0x26, 0x7A) W(PHY_LANE, 0x36, 0x77) \
  W(PHY_LANE, 0x37, 0x6F) W(PHY_LANE, 0x46, 0x74) W(PHY_LANE, 0x46, 0x64) W(PHY_LANE, 0x46, 0x44) \
  W(PHY_LANE, 0x46, 0x04) W(PHY_LANE, 0x1D, 0x40) W(PHY_LANE, 0x2D, 0x40) W(PHY_LANE, 0x3D, 0x4A) \
  W(PHY_LANE, 0x1A, 0x44) W(PHY_LANE, 0x3A, 0x4D) W(PHY_LANE, 0x1B, 0x4A) W(PHY_LANE, 0x3B, 0x4F) \
  W(PHY_LANE, 0x0C, 0x17) W(PHY_LANE, 0x1C, 0x17) W(PHY_LANE, 0x02, 0xE8) W(PHY_LANE, 0x22, 0x30) \
  W(PHY_LANE, 0x32, 0x30) W(PHY_LANE, 0x6C, 0x0C) W(PHY_LANE, 0x6C, 0x6C) \
  W(PHY_COMPANION, 0x20, 0x60) W(PHY_COMPANION, 0x20, 0x10) W(PHY_COMPANION, 0x21, 0xF2) \
  W(PHY_COMPANION, 0x21, 0x42) W(PHY_COMPANION, 0x22, 0xC6) W(PHY_COMPANION, 0x22, 0x26) \
  W(PHY_COMPANION, 0x23, 0xED) W(PHY_COMPANION, 0x23, 0xA9) W(PHY_COMPANION, 0x24, 0xEC) \
  W(PHY_COMPANION, 0x24, 0xCC) W(PHY_COMPANION, 0x25, 0x7D) W(PHY_COMPANION, 0x25, 0x41) \
  W(PHY_COMPANION, 0x26, 0xDF) W(PHY_COMPANION, 0x27, 0xDA) W(PHY_COMPANION, 0x27, 0xDE) \
  W(PHY_COMPANION, 0x28, 0x20) W(PHY_COMPANION, 0x28, 0x00) W(PHY_COMPANION, 0x29, 0x61) \
  W(PHY_COMPANION, 0x29, 0x31) W(PHY_COMPANION, 0x2A, 0xA4) W(PHY_COMPANION, 0x2A, 0x74) \
  W(PHY_COMPANION, 0x2B, 0xE9) W(PHY_COMPANION, 0x2B, 0xC9) \
  W(PHY_LANE, 0x85, 0xA6)
/* pass 5: tail adjustments (trace 1287..1399) */
#define PCIE_RXPHY_PASS_5(W) \
  W(PHY_LANE, 0x87, 0x10) W(PHY_LANE, 0x88, 0x08) W(PHY_LANE, 0x07, 0xEF) W(PHY_LANE, 0x17, 0xEF) \
  W(PHY_LANE, 0x37, 0x4F) W(PHY_LANE, 0x12, 0xA8) W(PHY_LANE, 0x2C, 0x17) \
  W(PHY_COMPANION, 0x26, 0xD1) \
  W(PHY_LANE_TAIL, 0x0B, 0x00) W(PHY_LANE, 0x2A, 0x46) W(PHY_LANE, 0x0D, 0x5A) \
  W(PHY_LANE, 0x1D, 0x50) W(PHY_LANE, 0x2D, 0x50) W(PHY_LANE, 0x3D, 0x5A)
/* clang-format on */

/* ---- SRAM DMA through the NVMe/MSC engine (0xC412-0xC42A) ---- */
#define REG_NVME_CTRL_STATUS XREG(0xC412)
#define NVME_CTRL_WRITE_DIR 0x01
#define NVME_CTRL_DMA_START 0x02
#define REG_NVME_SLOT_START XREG(0xC414)
#define NVME_SLOT_ENABLE 0x80
#define REG_NVME_SLOT_END XREG(0xC415)
#define REG_NVME_SECTOR_SIZE_HI XREG(0xC422)
#define REG_NVME_SECTOR_SIZE_LO XREG(0xC423)
#define REG_NVME_SECTOR_COUNT_HI XREG(0xC426)
#define REG_NVME_SECTOR_COUNT_LO XREG(0xC427)
#define REG_NVME_CMD_PARAM XREG(0xC429)
#define REG_NVME_DOORBELL XREG(0xC42A)

/* ---- UART (debug output) ---- */
#define REG_UART_THR XREG(0xC001)
#define REG_UART_LCR XREG(0xC007)

/* ---- interrupt status, SPI flash controller (0xC800-0xC8AF) ---- */
#define REG_INT_STATUS_C800 XREG(0xC800)
#define REG_INT_USB_STATUS XREG(0xC802)
#define INT_USB_GATE 0x01
#define REG_INT_AUX_STATUS XREG(0xC805)
#define REG_FLASH_ADDR_LO XREG(0xC8A1)
#define REG_FLASH_ADDR_MD XREG(0xC8A2)
#define REG_FLASH_DATA_LEN_HI XREG(0xC8A3) /* byte count, big-endian pair */
#define REG_FLASH_DATA_LEN_LO XREG(0xC8A4)
#define REG_FLASH_DIV XREG(0xC8A6)
#define REG_FLASH_CSR XREG(0xC8A9) /* write 1 to start; bit0 = busy */
#define FLASH_CSR_BUSY 0x01
#define REG_FLASH_CMD XREG(0xC8AA)
#define REG_FLASH_ADDR_HI XREG(0xC8AB)
#define REG_FLASH_ADDR_LEN XREG(0xC8AC)
#define FLASH_ADDR_LEN_NOADDR 0x04
#define FLASH_ADDR_LEN_3BYTE 0x07
#define REG_FLASH_MODE XREG(0xC8AD)
#define REG_FLASH_BUF_OFFSET_LO XREG(0xC8AE)
#define REG_FLASH_BUF_OFFSET_HI XREG(0xC8AF)
#define FLASH_BUF XBUF(0x7000)

/* ---- CPU control, timer 0 (0xCA00-0xCCFF) ---- */
#define REG_CPU_CTRL_CA81 XREG(0xCA81) /* bit0 needed by the flash controller */
#define REG_TIMER0_DIV XREG(0xCC10)    /* [2:0] = 4: 0.5 ms ticks */
#define REG_TIMER0_CSR XREG(0xCC11)
#define TIMER_CSR_ENABLE 0x01
#define TIMER_CSR_EXPIRED 0x02
#define TIMER_CSR_CLEAR 0x04
#define REG_TIMER0_THRESHOLD_HI XREG(0xCC12)
#define REG_TIMER0_THRESHOLD_LO XREG(0xCC13)
#define REG_CPU_MODE XREG(0xCC30) /* 0 = USB 2 mode */
#define REG_CPU_EXEC_STATUS_2 XREG(0xCC33)

/* ---- SPI flash commands (JEDEC / Macronix MX25 datasheet; flash.h) ---- */
#define SPI_CMD_PAGE_PROGRAM 0x02
#define SPI_CMD_READ 0x03
#define SPI_CMD_READ_STATUS 0x05
#define SPI_CMD_WRITE_ENABLE 0x06
#define SPI_CMD_SECTOR_ERASE_4K 0x20
#define SPI_CMD_ENTER_OTP 0xB1 /* ENSO */
#define SPI_CMD_EXIT_OTP 0xC1  /* EXSO */
#define SPI_STATUS_WIP 0x01

#endif
