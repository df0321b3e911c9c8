// bridge — the host side of capgraph's ASM2464PD bridge protocol
// (firmware/include/bridge_protocol.h) over any BridgeTransport: bridge
// registers, PCIe TLPs (config and memory), SRAM DMA, PCIe power, SPI flash.
//
// Every call returns a BridgeStatus; failures carry a sentence naming the
// device, the request and the cause (the firmware's own error code is read
// back after a STALL). No exceptions, every transfer has a timeout.
#pragma once

#include <cstdint>
#include <string>

#include "bridge_transport.h"

namespace capgraph::usb {

struct BridgeStatus {
  TransferStatus transfer = TransferStatus::ok;
  uint8_t device_error = 0;  // BRIDGE_ERR_* when the firmware refused
  std::string message;       // empty when ok
  bool ok() const { return message.empty(); }
};

struct BridgeInfo {
  uint8_t proto_major = 0, proto_minor = 0;
  uint8_t fw_major = 0, fw_minor = 0, fw_patch = 0;
  uint8_t usb_speed = 0;  // 2 or 3
  uint16_t chip_id = 0;
  uint8_t serial[4] = {};
  bool serial_ok = false;
  bool pcie_link = false;
  uint8_t last_error = 0, last_request = 0;
  bool op_busy = false;
  uint16_t max_ctrl = 0;  // bytes of data per control transfer
  uint16_t requests = 0;
  std::string serial_hex() const;  // the USB serial-number string
  std::string version() const;     // "0.1.0"
};

struct TlpResult {
  uint32_t data = 0;
  uint8_t completion = 0;  // PCIe completion status: 0 SC, 1 UR, 2 CRS, 4 CA
  bool has_data = false;
  uint8_t status = 0;  // BRIDGE_TLP_STATUS_*
};

// What BRIDGE_REQ_WATCH answered (bridge_protocol.h).
struct WatchResult {
  uint64_t value = 0;  // the signal's last value
  uint32_t fault = 0;  // the fault register's last value
  uint8_t status = 0;  // BRIDGE_WATCH_*
  uint8_t polls = 0;   // signal reads the firmware made (saturating)
};

const char *bridge_error_name(uint8_t code);

// Every USB transfer this Bridge made, counted where it is handed to the
// transport (requested lengths: a short reply still counts its wLength):
// the cost report's source (drivers/am/README.md, scripts/usb_cost.sh).
struct BridgeCounters {
  uint64_t control = 0, control_bytes = 0;  // EP0 transfers, both directions (data stage bytes)
  uint64_t bulk_out = 0, bulk_out_bytes = 0, bulk_in = 0, bulk_in_bytes = 0;
  // Of the bulk bytes, those of SRAM DMA (sram_write, sram_read_collect): the fast engine, as
  // opposed to the streamed TLPs the 8051 carries out one dword at a time.
  uint64_t sram_out_bytes = 0, sram_in_bytes = 0;
  uint64_t transfers() const { return control + bulk_out + bulk_in; }
  uint64_t bytes() const { return control_bytes + bulk_out_bytes + bulk_in_bytes; }
  BridgeCounters since(const BridgeCounters &a) const {
    return {control - a.control,
            control_bytes - a.control_bytes,
            bulk_out - a.bulk_out,
            bulk_out_bytes - a.bulk_out_bytes,
            bulk_in - a.bulk_in,
            bulk_in_bytes - a.bulk_in_bytes,
            sram_out_bytes - a.sram_out_bytes,
            sram_in_bytes - a.sram_in_bytes};
  }
};

class Bridge {
 public:
  explicit Bridge(BridgeTransport &transport, unsigned timeout_ms = 1000);

  // Reads INFO and checks it is our firmware speaking our protocol major.
  BridgeStatus open();
  const BridgeInfo &info() const { return info_; }
  const BridgeCounters &counters() const { return counters_; }
  BridgeStatus read_info(BridgeInfo *out);

  BridgeStatus reg_read(uint16_t addr, uint8_t *out, size_t n, uint8_t bank = 0);
  BridgeStatus reg_write(uint16_t addr, const uint8_t *data, size_t n, uint8_t bank = 0);

  // One TLP. Fails only when the request could not be carried out; a PCIe
  // error completion (e.g. UR) is reported in result->completion. flags:
  // BRIDGE_TLP_FLAG_POSTED (MWr only, protocol >= 1.2) sends without waiting.
  BridgeStatus tlp(uint8_t fmt_type, uint64_t addr, uint32_t data, uint8_t byte_en,
                   TlpResult *result, uint8_t flags = 0);
  // Config space of bus/dev/fn: type 0 on bus 0 (the function on the link),
  // type 1 beyond it (forwarded by the bridges; the GPU behind the ASM2464's
  // switch and its own ports is at bus 4). A UR completion reads 0xFFFFFFFF
  // and is an error, as a missing function is.
  BridgeStatus config_read32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t *value);
  BridgeStatus config_write32(uint8_t bus, uint8_t dev, uint8_t fn, uint16_t reg, uint32_t value);
  BridgeStatus mem_read32(uint64_t addr, uint32_t *value);
  BridgeStatus mem_write32(uint64_t addr, uint32_t value);

  // Memory writes (mem_write32, mem_write_block) are posted: by default the
  // firmware sends them without waiting for the TLP engine's COMPLETE bit
  // (BRIDGE_TLP_FLAG_POSTED), because whether the real engine ever sets it
  // for a posted write is not known; a write then only fails when the
  // engine refuses to send it (link down). true: wait for COMPLETE (10 ms
  // per dword), which reports a hung device but times out on every write if
  // the engine never flags posted writes; the hardware test `posted` tells
  // which. Firmware older than protocol 1.2 always waits.
  void set_posted_writes_wait(bool wait) { posted_wait_ = wait; }
  bool posted_writes_wait() const { return posted_wait_ || !has_posted_flag(); }

  // Many dwords at addr, addr+4, ... (BAR/MMIO access). Uses streamed TLPs
  // (BRIDGE_REQ_MEM_STREAM, up to BRIDGE_STREAM_MAX_DWORDS per request;
  // split at 4 GiB boundaries) when the firmware speaks protocol >= 1.1,
  // else one TLP per dword. On failure the message names the dword that
  // failed (index and address) and how many before it completed; *done gets
  // that count. A read fills out[*done..n) with 0xFFFFFFFF; a write never
  // touched the dwords from *done on (writes are posted: a dword before it
  // that nobody claimed was dropped by the link, as on any PCIe write).
  BridgeStatus mem_read_block(uint64_t addr, uint32_t *out, size_t n, size_t *done = nullptr);
  BridgeStatus mem_write_block(uint64_t addr, const uint32_t *data, size_t n,
                               size_t *done = nullptr);

  BridgeStatus pcie_power(bool on);

  // SRAM through the DMA windows: offset a multiple of the 16 KiB slot,
  // n a multiple of 512, offset + n <= 512 KiB.
  BridgeStatus sram_write(uint32_t offset, const uint8_t *data, size_t n);
  // SRAM -> host is two steps because the hardware starts the bulk IN only
  // after a PCIe write to the CQ window (BRIDGE_CQ_TRIGGER_BUS_ADDR), which
  // the GPU does after its copy into SRAM: arm first, have the GPU write the
  // trigger, then collect exactly the armed n bytes (waits up to
  // timeout_ms, default 1 s + n/100 kB; a missing trigger is named). A
  // collect that timed out with nothing moved is tried once more, 200 ms
  // (the data lost on the cable is still at the endpoint).
  BridgeStatus sram_read_arm(uint32_t offset, size_t n);
  BridgeStatus sram_read_collect(uint8_t *out, size_t n, unsigned timeout_ms = 0);

  // Waits for the 64-bit signal at PCIe address signal_addr to reach target (wrap-safe) with the
  // host asleep: the firmware reads it between USB events (protocol >= 1.3, has_watch()) and
  // answers one bulk IN, which the transport awaits in the kernel (in_await). fault_addr: a
  // register whose non-zero value ends the watch (0: none). On timeout the watch is stopped and
  // the status says so (transfer == timeout). Two transfers when it completes, three on timeout.
  BridgeStatus watch(uint64_t signal_addr, uint64_t target, uint64_t fault_addr,
                     unsigned timeout_ms, WatchResult *out);
  bool has_watch() const;

  // SPI flash (self-update). Erase works on 4 KiB sectors; program splits
  // at 256-byte pages and waits for each page to finish.
  BridgeStatus spi_read(uint32_t addr, uint8_t *out, size_t n);
  BridgeStatus spi_erase_sector(uint32_t addr);
  BridgeStatus spi_program(uint32_t addr, const uint8_t *data, size_t n);

 private:
  BridgeTransport &t_;
  unsigned timeout_ms_;
  BridgeInfo info_;
  BridgeCounters counters_;
  TransferStatus transfer_control(const ControlRequest &r, uint8_t *data, uint16_t length,
                                  size_t *actual, unsigned timeout_ms);
  TransferStatus transfer_bulk(uint8_t endpoint, uint8_t *data, size_t length, size_t *actual,
                               unsigned timeout_ms);
  BridgeStatus control_in(uint8_t req, uint16_t value, uint16_t index, uint8_t *data, uint16_t n,
                          size_t *actual, const char *what, unsigned timeout_ms = 0);
  BridgeStatus control_out(uint8_t req, uint16_t value, uint16_t index, const uint8_t *data,
                           uint16_t n, const char *what, unsigned timeout_ms = 0);
  BridgeStatus fail(TransferStatus s, const char *what);
  BridgeStatus sram_dma_arm(uint32_t offset, size_t n, bool to_sram);
  size_t sram_read_armed_ = 0;  // bytes armed by sram_read_arm, not yet collected
  bool posted_wait_ = false;
  bool has_posted_flag() const;
  BridgeStatus spi_program_page(uint32_t addr, const uint8_t *data, size_t n);
  bool has_streams() const;
  BridgeStatus stream_chunk(bool write, uint64_t addr, uint32_t *words, uint16_t n, size_t *done);
  bool proto_at_least(uint8_t minor) const;
  uint16_t stream_tag_ = 0;
};

}  // namespace capgraph::usb
