/*
 * bridge_protocol.h — the wire protocol between capgraph's ASM2464PD bridge
 * firmware and the host (drivers/usb, the flasher, the emulator tests).
 *
 * Plain C89-compatible declarations only: compiled by SDCC (mcs51) for the
 * firmware and by the host C/C++ compilers. The ONE definition of request
 * codes, wire layouts, error codes and the image format constants.
 *
 * All multi-byte wire fields are little-endian (USB convention). Layouts are
 * given as byte offsets (BRIDGE_*_OFF_*) rather than C structs so SDCC and the
 * host agree without relying on packing rules.
 *
 * Sources (facts, not code):
 *  - tinygrad/asm2464pd-firmware handmade/src/main.c: vendor control requests
 *    on EP0 (bmRequestType 0x40/0xC0), a TLP request carried as an OUT data
 *    phase then a completion read as an IN transfer, SRAM DMA armed by a
 *    control request (wValue = sector count | bit15 direction, wIndex =
 *    first slot | slot count << 8), PCIe power request.
 *  - tinygrad/asm2464pd-firmware pcie/test_sram_verify.py: 512 KiB SRAM,
 *    512-byte sectors, 16 KiB slots, SRAM at PCIe bus address 0x200000.
 *  - tinygrad/asm2464pd-firmware flash.py: stock bootloader VID:PID
 *    174C:2464 / 174C:2463, its SCSI vendor CDBs E1 (config block write),
 *    E3 (firmware write, 0x50 = first 0xFF00 bytes, 0xD0 = the rest),
 *    E8 0x51 (commit/reset), carried over USB mass-storage Bulk-Only
 *    Transport.
 *  - tinygrad/asm2464pd-firmware handmade/Makefile: the image wrapper
 *    (LE32 body length, body, 0xA5, 8-bit sum of body, CRC32 of body LE).
 *  - tinygrad/asm2464pd-firmware handmade/e4_flash.py: SPI flash layout,
 *    config blocks at 0x000-0x0FF, image written at 0x100.
 *  - PCI Express Base Specification: TLP Fmt/Type encoding, config request
 *    addressing (bus[31:24] dev[23:19] fn[18:16] reg[11:0]), completion
 *    status codes (SC=0, UR=1, CRS=2, CA=4).
 * The request codes 0xB0.. and every layout below are our own choice.
 */
#ifndef CAPGRAPH_BRIDGE_PROTOCOL_H
#define CAPGRAPH_BRIDGE_PROTOCOL_H

/* ---- identity ------------------------------------------------------------ */
#define BRIDGE_PROTOCOL_MAJOR 1
#define BRIDGE_PROTOCOL_MINOR 3 /* 1.1: MEM_STREAM; 1.2: POSTED flags; 1.3: WATCH */
#define BRIDGE_FW_VERSION_MAJOR 0
#define BRIDGE_FW_VERSION_MINOR 4
#define BRIDGE_FW_VERSION_PATCH 0
#define BRIDGE_CHIP_ID 0x2464u

/* Our firmware's USB ids: an unregistered development pair, chosen by us.
 * Not the stock ASMedia ids and not tinygrad's handmade ids (ADD1:0001), so
 * neither their tools nor ours talk to the wrong protocol by accident. */
#define BRIDGE_USB_VID 0xADD1u
#define BRIDGE_USB_PID 0xCA90u
/* Stock ASMedia bootloader/firmware ids (flash.py SUPPORTED_CONTROLLERS). */
#define BRIDGE_STOCK_VID 0x174Cu
#define BRIDGE_STOCK_PID_2464 0x2464u
#define BRIDGE_STOCK_PID_2463 0x2463u

/* Endpoints of our firmware's single vendor-class interface. */
#define BRIDGE_EP_BULK_IN 0x81u
#define BRIDGE_EP_BULK_OUT 0x02u
#define BRIDGE_INTERFACE 0

/* ---- control requests ---------------------------------------------------- */
#define BRIDGE_RT_VENDOR_IN 0xC0u  /* device-to-host | vendor | device */
#define BRIDGE_RT_VENDOR_OUT 0x40u /* host-to-device | vendor | device */

/* Every request not listed here, and every listed request with a wrong
 * direction, length or argument, is answered with a STALL and leaves the
 * firmware state unchanged (except info.last_error / info.last_request). */
/* One request per row, its comment beside it: */
/* clang-format off */
#define BRIDGE_REQ_INFO 0xB0u       /* IN,  wLength >= BRIDGE_INFO_SIZE          */
#define BRIDGE_REQ_REG_READ 0xB1u   /* IN,  wValue=XDATA addr, wIndex=bank(0|1),
                                       wLength=1..BRIDGE_REG_MAX                 */
#define BRIDGE_REQ_REG_WRITE 0xB2u  /* OUT, wValue=addr, wIndex=bank, data 1..MAX */
#define BRIDGE_REQ_TLP 0xB3u        /* OUT, data = BRIDGE_TLP_SIZE bytes; runs the
                                       TLP and waits (bounded) for completion      */
#define BRIDGE_REQ_TLP_RESULT 0xB4u /* IN,  wLength = BRIDGE_TLP_RESULT_SIZE      */
#define BRIDGE_REQ_DMA 0xB5u        /* OUT, no data: arm SRAM DMA, see below      */
#define BRIDGE_REQ_PCIE_POWER 0xB6u /* OUT, no data: wValue 1=on(+link), 0=off     */
#define BRIDGE_REQ_SPI_READ 0xB7u   /* IN,  wValue=addr[15:0], wIndex=addr[23:16],
                                       wLength=1..BRIDGE_SPI_READ_MAX             */
#define BRIDGE_REQ_SPI_ERASE 0xB8u  /* OUT, no data: wValue=4 KiB sector index    */
#define BRIDGE_REQ_SPI_PROGRAM 0xB9u /* OUT, no data: wValue=256-byte page index,
                                       wIndex=length 1..256; the bytes follow as
                                       one bulk OUT transfer on EP 0x02; then
                                       poll BRIDGE_REQ_INFO until op_busy == 0    */

#define BRIDGE_REQ_MEM_STREAM 0xBAu /* OUT, data = BRIDGE_STREAM_SIZE bytes:
                                       many dword MRd/MWr to consecutive PCIe
                                       addresses in one request (protocol 1.1),
                                       data and result over bulk, see below      */
#define BRIDGE_REQ_WATCH 0xBBu      /* OUT, protocol 1.3: wValue 1, data =
                                       BRIDGE_WATCH_SIZE bytes: watch a 64-bit
                                       signal in PCIe memory, answer on bulk IN
                                       when it is reached; wValue 0, no data:
                                       stop watching, see below                  */
/* clang-format on */

#define BRIDGE_REG_MAX 64u
#define BRIDGE_SPI_READ_MAX 64u
#define BRIDGE_SPI_PAGE 256u
#define BRIDGE_SPI_SECTOR 4096u

/* BRIDGE_REQ_DMA: wValue bits 14:0 = sectors of 512 bytes (>0),
 * bit 15 = 1 for SRAM->host (bulk IN), 0 for host->SRAM (bulk OUT);
 * wIndex low byte = first 16 KiB slot, high byte = slot count (0 means 1).
 * sectors*512 must fit in the slots and first+count <= BRIDGE_SRAM_SLOTS. */
#define BRIDGE_DMA_DIR_IN 0x8000u
#define BRIDGE_SECTOR_SIZE 512u
#define BRIDGE_SLOT_SIZE 0x4000u
#define BRIDGE_SRAM_SLOTS 32u
#define BRIDGE_SRAM_SIZE 0x80000ul
#define BRIDGE_SRAM_BUS_ADDR 0x200000ul /* where PCIe devices see the SRAM */

/* SRAM -> host (wValue bit 15) is gated: after the arm, the bulk IN starts
 * only once something on the PCIe side (the GPU) writes into the "completion
 * queue" window at BRIDGE_CQ_BUS_ADDR; the hardware behaves as if finishing
 * an NVMe read. tinygrad's SDMA writes a zero dword at 0x82200C; the
 * asm2464pd-firmware test writes a 16-byte CQE there. So: arm, let the GPU
 * write the trigger, then read (Bridge::sram_read_arm / sram_read_collect).
 * Sources: tinygrad/asm2464pd-firmware pcie/test_sram_verify.py (read-back
 * needs the CQ write), tinygrad ops_amd.py `_copyout` (cq_buf + 12). */
#define BRIDGE_CQ_TRIGGER_BUS_ADDR 0x82200Cul

/* Small bridge-memory windows a PCIe device can read and write by bus
 * mastering, each also visible to the 8051 (and to REG_READ/REG_WRITE) in
 * XDATA. Sources: tinygrad/asm2464pd-firmware src/include/registers.h
 * (XDATA map: 0xA000-0xAFFF window onto PCIe 0x820000, 0xB000-0xB1FF NVMe
 * admin queues, 0xB800-0xB8FF window onto PCIe 0x822000), tinygrad
 * ops_amd.py USBIface (sys_buf 0xA000 <-> 0x820000 with its fence at
 * +0x800, cq_buf 0xB800 <-> 0x822000), test/mockgpu/usb.py (0xB000 <->
 * 0x800000). Sizes are the XDATA ranges the register map gives. */
#define BRIDGE_SYS_WINDOW_BUS_ADDR 0x820000ul
#define BRIDGE_SYS_WINDOW_XDATA 0xA000u
#define BRIDGE_SYS_WINDOW_SIZE 0x1000u
#define BRIDGE_CQ_WINDOW_BUS_ADDR 0x822000ul
#define BRIDGE_CQ_WINDOW_XDATA 0xB800u
#define BRIDGE_CQ_WINDOW_SIZE 0x100u
#define BRIDGE_ADMIN_WINDOW_BUS_ADDR 0x800000ul
#define BRIDGE_ADMIN_WINDOW_XDATA 0xB000u
#define BRIDGE_ADMIN_WINDOW_SIZE 0x200u

/* ---- INFO reply (BRIDGE_INFO_SIZE bytes) --------------------------------- */
#define BRIDGE_INFO_SIZE 24u
#define BRIDGE_INFO_MAGIC0 'C' /* bytes 0..3 = "CGBR" */
#define BRIDGE_INFO_MAGIC1 'G'
#define BRIDGE_INFO_MAGIC2 'B'
#define BRIDGE_INFO_MAGIC3 'R'
#define BRIDGE_INFO_OFF_MAGIC 0
#define BRIDGE_INFO_OFF_PROTO_MAJOR 4
#define BRIDGE_INFO_OFF_PROTO_MINOR 5
#define BRIDGE_INFO_OFF_FW_MAJOR 6
#define BRIDGE_INFO_OFF_FW_MINOR 7
#define BRIDGE_INFO_OFF_FW_PATCH 8
#define BRIDGE_INFO_OFF_USB_SPEED 9     /* 2 = USB 2 high speed, 3 = USB 3      */
#define BRIDGE_INFO_OFF_CHIP_ID 10      /* LE16                                 */
#define BRIDGE_INFO_OFF_SERIAL 12       /* 4 bytes from OTP, FF.. when blank    */
#define BRIDGE_INFO_OFF_SERIAL_OK 16    /* 1 if the OTP checksum matched        */
#define BRIDGE_INFO_OFF_PCIE_LINK 17    /* 1 when the PCIe link is up           */
#define BRIDGE_INFO_OFF_LAST_ERROR 18   /* BRIDGE_ERR_* of the last request     */
#define BRIDGE_INFO_OFF_LAST_REQUEST 19 /* bRequest that set last_error        */
#define BRIDGE_INFO_OFF_OP_BUSY 20      /* 1 while a SPI program is pending     */
#define BRIDGE_INFO_OFF_MAX_CTRL 21     /* max control data bytes / 8           */
#define BRIDGE_INFO_OFF_REQUESTS 22     /* LE16 count of requests served        */

/* ---- TLP request (OUT data of BRIDGE_REQ_TLP) ---------------------------- */
#define BRIDGE_TLP_SIZE 16u
#define BRIDGE_TLP_OFF_FMT_TYPE 0 /* PCIe Fmt[7:5] Type[4:0]                 */
#define BRIDGE_TLP_OFF_BYTE_EN 1  /* first-DW byte enables, 0x0F = all       */
#define BRIDGE_TLP_OFF_FLAGS 2    /* 0, or BRIDGE_TLP_FLAG_POSTED on a MWr   */
#define BRIDGE_TLP_OFF_RSVD 3     /* must be 0                               */
#define BRIDGE_TLP_OFF_ADDR_LO 4  /* LE32; for config: bus/dev/fn/reg        */
#define BRIDGE_TLP_OFF_ADDR_HI 8  /* LE32; 0 unless a 4DW memory TLP         */
#define BRIDGE_TLP_OFF_DATA 12    /* LE32 write payload                      */
/* Protocol >= 1.2, MWr32/MWr64 only: send the write and do not wait for the
 * engine's COMPLETE bit (posted writes get no completion on the link, and
 * whether the ASM2464's engine flags them done is not public; tinygrad's
 * handmade pcie_pio.h never waits for writes). The result then has status
 * BRIDGE_TLP_STATUS_POSTED, or ENGINE_ERROR when the engine refused to send
 * it (link down). Without the flag the firmware waits up to 10 ms. */
#define BRIDGE_TLP_FLAG_POSTED 0x01u

/* PCIe Fmt/Type values the firmware accepts (PCIe Base Spec, TLP header). */
#define BRIDGE_TLP_MRD32 0x00u
#define BRIDGE_TLP_MRD64 0x20u
#define BRIDGE_TLP_MWR32 0x40u
#define BRIDGE_TLP_MWR64 0x60u
#define BRIDGE_TLP_CFGRD0 0x04u
#define BRIDGE_TLP_CFGWR0 0x44u
#define BRIDGE_TLP_CFGRD1 0x05u
#define BRIDGE_TLP_CFGWR1 0x45u

/* ---- TLP result (IN data of BRIDGE_REQ_TLP_RESULT) ----------------------- */
#define BRIDGE_TLP_RESULT_SIZE 8u
#define BRIDGE_TLP_RESULT_OFF_DATA 0     /* LE32 read data                   */
#define BRIDGE_TLP_RESULT_OFF_CPL 4      /* PCIe completion status 0..7      */
#define BRIDGE_TLP_RESULT_OFF_HAS_DATA 5 /* 1 for CplD                       */
#define BRIDGE_TLP_RESULT_OFF_STATUS 6   /* BRIDGE_TLP_STATUS_*              */
#define BRIDGE_TLP_RESULT_OFF_SEQ 7      /* low byte of the TLP sequence     */
#define BRIDGE_TLP_STATUS_OK 0u
#define BRIDGE_TLP_STATUS_ENGINE_ERROR 1u
#define BRIDGE_TLP_STATUS_TIMEOUT 2u
#define BRIDGE_TLP_STATUS_NONE 3u   /* no TLP has run since boot             */
#define BRIDGE_TLP_STATUS_POSTED 4u /* sent with FLAG_POSTED, not waited for  */
#define BRIDGE_CPL_SC 0u
#define BRIDGE_CPL_UR 1u
#define BRIDGE_CPL_CRS 2u
#define BRIDGE_CPL_CA 4u

/* ---- streamed memory TLPs (BRIDGE_REQ_MEM_STREAM, protocol >= 1.1) ------- */
/* One request moves `count` dwords between the host and consecutive PCIe
 * memory addresses (addr, addr+4, ...), each dword one MRd/MWr TLP through the
 * engine, in one USB exchange instead of two control transfers per dword:
 *   read:  control OUT (header) -> the firmware runs every MRd, stopping at
 *          the first failure -> bulk IN of count*4 data bytes + the 8-byte
 *          result (BRIDGE_STREAM_RESULT_*), always exactly that length.
 *   write: control OUT (header) -> bulk OUT of exactly count*4 bytes -> the
 *          firmware runs every MWr, stopping at the first failure -> bulk IN
 *          of the 8-byte result.
 * A bulk OUT of the wrong length writes nothing (err BULK_LENGTH, done 0).
 * A new MEM_STREAM, DMA or SPI_PROGRAM, a bus reset, SET_CONFIGURATION /
 * SET_INTERFACE or CLEAR_FEATURE(halt) abandons a stream whose bulk stage
 * has not finished. A stream must not cross a 4 GiB boundary (BAD_ARGUMENT).
 * Writes are posted: a dword nobody claims is dropped, as on a real link;
 * a read that completes with UR/CA stops the stream (err TLP_COMPLETION).
 * The header is refused with a STALL (nothing runs) when wLength is not
 * BRIDGE_STREAM_SIZE (BAD_LENGTH), count is 0 or above the maximum
 * (BAD_LENGTH), op/flags/reserved bytes are wrong or the address is not
 * dword aligned (BAD_ARGUMENT), or a SPI program is pending (BUSY).
 * Shape from tinygrad/asm2464pd-firmware handmade/src/main.c request 0xF0
 * modes 1/2 and pcie_pio.h (address auto-increment by 4 through B218..B21F,
 * bulk OUT data at 0x7000, bulk IN from 0x8000 with its length in
 * 0x9007/0x9008); header, result and limits are our own. */
#define BRIDGE_STREAM_SIZE 16u
#define BRIDGE_STREAM_OFF_OP 0      /* BRIDGE_STREAM_READ / _WRITE           */
#define BRIDGE_STREAM_OFF_FLAGS 1   /* 0, or BRIDGE_STREAM_FLAG_POSTED (write) */
#define BRIDGE_STREAM_OFF_COUNT 2   /* LE16 dwords, 1..BRIDGE_STREAM_MAX_DWORDS */
#define BRIDGE_STREAM_OFF_ADDR_LO 4 /* LE32, dword aligned                   */
#define BRIDGE_STREAM_OFF_ADDR_HI 8 /* LE32; non-zero selects 4DW TLPs       */
#define BRIDGE_STREAM_OFF_TAG 12    /* LE16, echoed in the result            */
#define BRIDGE_STREAM_OFF_RSVD 14   /* 2 bytes, must be 0                    */
/* Protocol >= 1.2, writes only: no dword waits for COMPLETE (see
 * BRIDGE_TLP_FLAG_POSTED); the stream stops only when the engine refuses to
 * send (ERROR). Refused (BAD_ARGUMENT) on a read. */
#define BRIDGE_STREAM_FLAG_POSTED 0x01u
#define BRIDGE_STREAM_READ 0x01u
#define BRIDGE_STREAM_WRITE 0x02u
/* 4 KiB buffers: data + result of a read fill the 0x8000 bulk-IN buffer. */
#define BRIDGE_STREAM_MAX_DWORDS 1022u
/* Result (after the data of a read; alone after a write). */
#define BRIDGE_STREAM_RESULT_SIZE 8u
#define BRIDGE_STREAM_RESULT_OFF_TAG 0 /* LE16 tag of the request            */
#define BRIDGE_STREAM_RESULT_OFF_DONE                                        \
  2                                      /* LE16 dwords that completed; when \
                                            err != NONE it is also the index \
                                            of the dword that failed          */
#define BRIDGE_STREAM_RESULT_OFF_ERR 4   /* BRIDGE_ERR_*                       */
#define BRIDGE_STREAM_RESULT_OFF_CPL 5   /* completion status of that dword    */
#define BRIDGE_STREAM_RESULT_OFF_OP 6    /* op of the request                  */
#define BRIDGE_STREAM_RESULT_OFF_MAGIC 7 /* BRIDGE_STREAM_RESULT_MAGIC         */
#define BRIDGE_STREAM_RESULT_MAGIC 0x5Au

/* ---- BRIDGE_REQ_WATCH (protocol 1.3) --------------------------------------
 * So the host can sleep while the GPU works: instead of reading the GPU's
 * completion signal over USB in a loop, the host hands the firmware the
 * signal's PCIe address and the value it waits for, then submits one bulk IN
 * and sleeps in the kernel until it completes. Between USB events the
 * firmware reads the signal (two MRd dwords, low first) and, every
 * BRIDGE_WATCH_FAULT_EVERY reads, the fault register (one MRd dword; address
 * 0: none). When the signal minus the target is >= 0 as a signed 64-bit
 * number (wrap-safe), the fault register reads non-zero, or a read fails, it
 * sends BRIDGE_WATCH_RESULT_SIZE bytes on bulk IN and stops watching.
 * A MEM_STREAM request, a bus reset or WATCH with wValue 0 stops a watch (and
 * drops an unsent result); WATCH stops a stream waiting for its bulk stage.
 * The firmware has no timeout of its own: the host's bulk IN has one, and the
 * host stops the watch when it passes. Request (LE): */
#define BRIDGE_WATCH_SIZE 24u
#define BRIDGE_WATCH_OFF_SIGNAL 0 /* u64 PCIe address of the signal, 4-aligned */
#define BRIDGE_WATCH_OFF_TARGET 8 /* u64 value waited for                     */
#define BRIDGE_WATCH_OFF_FAULT 16 /* u64 PCIe address of a fault register or 0 */
#define BRIDGE_WATCH_FAULT_EVERY 8u
/* Result on bulk IN (LE): */
#define BRIDGE_WATCH_RESULT_SIZE 16u
#define BRIDGE_WATCH_RESULT_OFF_VALUE 0   /* u64 the signal's last value          */
#define BRIDGE_WATCH_RESULT_OFF_FAULT 8   /* u32 the fault register's last value  */
#define BRIDGE_WATCH_RESULT_OFF_STATUS 12 /* BRIDGE_WATCH_*                      */
#define BRIDGE_WATCH_RESULT_OFF_ERR 13    /* BRIDGE_ERR_* of a failed read        */
#define BRIDGE_WATCH_RESULT_OFF_MAGIC 14  /* BRIDGE_WATCH_RESULT_MAGIC            */
#define BRIDGE_WATCH_RESULT_OFF_POLLS 15  /* signal reads made, saturating at 255 */
#define BRIDGE_WATCH_RESULT_MAGIC 0x57u
#define BRIDGE_WATCH_REACHED 0u
#define BRIDGE_WATCH_FAULT 1u
#define BRIDGE_WATCH_READ_FAILED 2u

/* ---- error codes (info.last_error) --------------------------------------- */
#define BRIDGE_ERR_NONE 0u
#define BRIDGE_ERR_UNKNOWN_REQUEST 1u
#define BRIDGE_ERR_BAD_LENGTH 2u
#define BRIDGE_ERR_BAD_ARGUMENT 3u
#define BRIDGE_ERR_TLP_TIMEOUT 4u
#define BRIDGE_ERR_TLP_ENGINE 5u
#define BRIDGE_ERR_FLASH_TIMEOUT 6u
#define BRIDGE_ERR_BUSY 7u
#define BRIDGE_ERR_LINK_DOWN 8u
#define BRIDGE_ERR_BULK_LENGTH 9u
#define BRIDGE_ERR_TLP_COMPLETION 10u /* completion status not SC (UR, CA, ..) */

/* ---- firmware image (what `capgraph flash` writes) ----------------------- */
/* Wrapper: LE32 body length | body | 0xA5 | sum8(body) | LE32 crc32(body). */
#define BRIDGE_IMAGE_MAGIC 0xA5u
#define BRIDGE_IMAGE_HEADER 4u
#define BRIDGE_IMAGE_FOOTER 6u
#define BRIDGE_IMAGE_MAX_BODY 0xC000ul /* our code space budget: 48 KiB     */
/* SPI flash layout (e4_flash.py): config blocks, then the wrapped image. */
#define BRIDGE_FLASH_CONFIG_ADDR 0x000ul
#define BRIDGE_FLASH_CONFIG_SIZE 0x100ul /* two 128-byte blocks (E1 idx 0,1) */
#define BRIDGE_FLASH_IMAGE_ADDR 0x100ul
#define BRIDGE_FLASH_PART1 0xFF00ul /* E3 0x50 writes this many image bytes  */

/* Identity block at a fixed CODE address inside OUR body, so the flasher
 * can tell our firmware (for this chip) from anything else. */
#define BRIDGE_FW_IDENT_ADDR 0x0040u
#define BRIDGE_FW_IDENT_SIZE 16u
/* bytes 0..7 "CGBRIDGE", 8..9 chip id LE16, 10 proto major, 11 proto minor,
 * 12 fw major, 13 fw minor, 14 fw patch, 15 0 */

#endif /* CAPGRAPH_BRIDGE_PROTOCOL_H */
