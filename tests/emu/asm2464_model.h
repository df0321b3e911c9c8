// asm2464_model — the ASM2464PD around the 8051 core, as far as our firmware
// and the stock bootloader's flashing commands need it: USB control and bulk
// engine, PCIe TLP engine and link, SRAM and its DMA engine, SPI flash with
// OTP, timer 0, UART, and a boot ROM that loads the image from flash.
//
// The model is host-visible behaviour only (transfers complete, stall or
// time out); USB packets, PHYs and link training are not simulated. Every
// register address is the one named in firmware/src/regs.h (which cites its
// sources); what each model does with a register is our reading of those
// sources, written down next to the code.
//
// Time: the core runs 10 000 machine cycles per emulated millisecond (a
// model choice; the real core's clock is not documented publicly). Host
// timeouts are converted with the same rate, so a "1000 ms" transfer lets
// the firmware run 10 M cycles.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu8051.h"
#include "pcie_endpoint.h"
#include "pcie_fabric.h"

namespace capgraph::emu {

constexpr uint64_t kCyclesPerMs = 10000;

// SPI NOR flash (Macronix MX25-style command set) with a 512-byte OTP area.
class SpiFlash {
 public:
  explicit SpiFlash(size_t size = 1u << 20);
  std::vector<uint8_t> data;
  std::array<uint8_t, 512> otp{};
  bool otp_mode = false;
  bool wel = false;
  uint64_t busy_until = 0;  // cycle at which the write-in-progress bit clears
  uint64_t erase_4k_cycles = 30 * kCyclesPerMs;
  uint64_t program_cycles = kCyclesPerMs / 2;
  uint32_t erases = 0, programs = 0;

  // Fault injection: called before each erase/program with the count of
  // such operations so far; returning true cuts power in the middle of it
  // (an erase leaves the sector half erased, a program half written).
  std::function<bool(uint32_t op_index)> power_cut_before;
  bool power_was_cut = false;

  // One controller transaction; `buf` is the 4 KiB controller buffer.
  void transact(uint8_t cmd, uint32_t addr, uint32_t len, uint8_t *buf, uint64_t now);
  void set_otp_serial(uint32_t serial);  // 4 bytes + XOR checksum
};

// overflow: the device sent more than the host asked for (babble).
enum class UsbResult { ok, stall, timeout, no_device, overflow };
const char *usb_result_name(UsbResult r);

struct UsbSetup {
  uint8_t bmRequestType = 0, bRequest = 0;
  uint16_t wValue = 0, wIndex = 0, wLength = 0;
};

// Protocol cost, counted on the emulated wire.
struct WireStats {
  uint64_t control_transfers = 0, control_transactions = 0, control_bytes = 0;
  uint64_t bulk_out_transfers = 0, bulk_out_packets = 0, bulk_out_bytes = 0;
  uint64_t bulk_in_transfers = 0, bulk_in_packets = 0, bulk_in_bytes = 0;
};

class Asm2464 : public Cpu8051::Bus {
 public:
  enum class Mode { off, firmware, bootloader };
  struct Options {
    bool usb3 = true;
    bool endpoint_present = true;
    // Type 1 bridges between the root port and the endpoint (pcie_fabric.h):
    // 4 as in front of an RX 7900 XTX (GPU at bus 4); 0 puts it at bus 0.
    int pcie_bridges = 4;
    // Whether the TLP engine sets COMPLETE (0xB296 bit 1) after a MWr. A
    // posted write gets no completion on the link and the sources do not say
    // whether the engine flags it anyway (research R1; tinygrad's handmade
    // firmware never waits for writes), so the model assumes the worse case:
    // a firmware that waits for it times out.
    bool posted_write_completes = false;
  };

  Asm2464();
  explicit Asm2464(Options o);

  // Boot ROM: load the image at BRIDGE_FLASH_IMAGE_ADDR if its length,
  // magic, sum and CRC check out, else stay in the stock bootloader (our
  // model of the recovery path). force_bootloader models the strap.
  Mode power_on(bool force_bootloader = false);
  void power_off();
  Mode mode() const { return mode_; }
  // Boot straight from a body (no flash), for tests of the core path.
  void boot_body(const std::vector<uint8_t> &body);

  void run_ms(uint64_t ms) { run_cycles(ms * kCyclesPerMs); }
  void run_cycles(uint64_t n);

  // Host side of the wire. Timeouts are in emulated milliseconds.
  UsbResult control(const UsbSetup &s, uint8_t *data, size_t *actual, unsigned timeout_ms);
  UsbResult bulk_out(uint8_t ep, const uint8_t *data, size_t n, size_t *actual,
                     unsigned timeout_ms);
  UsbResult bulk_in(uint8_t ep, uint8_t *data, size_t n, size_t *actual, unsigned timeout_ms);

  // Fault injection: the device vanishes (cable pulled) now, or after this
  // many more bulk bytes have moved.
  void unplug() { attached_ = false; }
  void unplug_after_bulk_bytes(uint64_t n) { unplug_after_ = n; }
  bool attached() const { return attached_; }
  // Fault injection for the stock bootloader: the byte it stores at this
  // flash address is wrong (bit 0 flipped), as a bad write would leave it.
  uint32_t boot_corrupt_flash_at = UINT32_MAX;
  // The real bootloader's E0/E2 layout is an assumption: this switch makes
  // the model refuse them (CSW status 1), as a bootloader that differs would.
  bool boot_refuses_reads = false;
  uint32_t boot_commits = 0;  // E8 0x51 commands accepted

  // PCIe RX PHY tuning (firmware/src/regs.h PCIE_RXPHY_*): the model lets
  // the link train only after the whole sequence was written to bank 1, in
  // order, with no other write to those PHY slices in between.
  static const std::vector<std::pair<uint16_t, uint8_t>> &phy_tuning_sequence();
  bool phy_tuning_applied() const {
    return !phy_tuning_broken_ && phy_tuning_pos_ == phy_tuning_sequence().size();
  }
  bool phy_tuning_broken() const { return phy_tuning_broken_; }

  // What a PCIe device reaches by bus mastering into the bridge: the 512 KiB
  // SRAM at 0x200000 and the XDATA windows at 0x820000 / 0x822000 /
  // 0x800000 (bridge_protocol.h BRIDGE_*_WINDOW_*, sources there). Needs the
  // link up and Bus Master Enable on the whole path (pcie_fabric.h). A write
  // into the CQ window releases an armed SRAM->host DMA (the real gate).
  bool bus_master_read(uint64_t addr, uint8_t *dst, size_t n);
  bool bus_master_write(uint64_t addr, const uint8_t *src, size_t n);
  uint32_t cq_triggers = 0;  // bus-master writes into the CQ window

  Cpu8051 cpu;
  SpiFlash flash;
  PcieEndpoint endpoint;
  PcieFabric fabric;
  std::vector<uint8_t> sram;  // 512 KiB, bus address 0x200000
  WireStats stats;
  std::string uart;
  uint32_t protocol_violations = 0;    // firmware misuse of the USB engine
  uint32_t ignored_buffer_writes = 0;  // CPU writes to the 0x7000 buffer

  // Cpu8051::Bus
  uint8_t xdata_read(uint16_t addr, uint8_t bank) override;
  void xdata_write(uint16_t addr, uint8_t bank, uint8_t v) override;
  bool int0_asserted() override;

 private:
  Options opt_;
  Mode mode_ = Mode::off;
  bool attached_ = false;
  uint64_t unplug_after_ = UINT64_MAX;
  std::vector<uint8_t> x_;                 // XDATA bank 0 backing store
  std::vector<uint8_t> x1_;                // XDATA bank 1 (PHY) backing store
  std::array<uint8_t, 4096> flash_buf_{};  // 0x7000 buffer

  // USB engine
  uint8_t ctrl_phase_ = 0, ep_cfg1_ = 0, bus_reset_ = 0, link_bits_ = 0;
  bool out_armed_ = false;
  bool in_armed_ = false;  // bulk IN armed from the 0x8000 buffer
  uint16_t in_len_ = 0;
  size_t phy_tuning_pos_ = 0;
  bool phy_tuning_broken_ = false;
  void phy_write(uint16_t addr, uint8_t v);
  struct Ctrl {
    bool active = false, done = false, data_taken = false;
    UsbSetup setup;
    std::vector<uint8_t> out;  // host OUT data
    uint8_t *in = nullptr;     // host IN buffer
    size_t in_len = 0, actual = 0;
    UsbResult result = UsbResult::ok;
  } ctrl_;
  uint16_t max_packet0() const { return opt_.usb3 ? 512 : 64; }
  uint16_t max_packet_bulk() const { return opt_.usb3 ? 1024 : 512; }
  void dma_trigger(uint8_t v);
  void usb_attach_events();

  // SRAM DMA engine (0xC412...)
  struct Dma {
    bool armed = false, to_sram = false;
    bool gated = false;  // SRAM->host waits for a write into the CQ window
    uint32_t offset = 0, remaining = 0;
  } dma_;
  void dma_start(uint8_t ctrl);
  uint8_t *bus_window(uint64_t addr, size_t n);

  // PCIe TLP engine and link
  uint8_t pcie_status_ = 0;
  uint64_t tlp_done_at_ = 0;
  bool tlp_pending_ = false;
  TlpCompletion tlp_cpl_;
  uint64_t link_up_at_ = UINT64_MAX;
  bool link_up() const;
  void pcie_rails_changed();
  void tlp_start();
  void tlp_poll();

  // timer 0
  uint64_t timer_start_ = 0, timer_len_ = 0;
  bool timer_on_ = false, timer_expired_ = false;
  void timer_poll();

  void flash_transact();
  uint64_t now() const { return cpu.cycles; }
  bool run_until(const std::function<bool()> &done, unsigned timeout_ms);

  // Stock bootloader (mass-storage Bulk-Only Transport + E1/E3/E8).
  UsbResult boot_control(const UsbSetup &s, uint8_t *data, size_t *actual);
  UsbResult boot_bulk_out(const uint8_t *data, size_t n, size_t *actual);
  UsbResult boot_bulk_in(uint8_t *data, size_t n, size_t *actual);
  struct Bot {
    enum class Stage { cbw, data_out, data_in, csw } stage = Stage::cbw;
    uint32_t tag = 0, expected = 0, residue = 0;
    uint8_t cdb[16] = {};
    std::vector<uint8_t> data;
    uint8_t status = 0;
  } bot_;
  void boot_execute();
  void boot_execute_read();
  bool boot_flash_write(uint32_t addr, const uint8_t *p, size_t n);
};

}  // namespace capgraph::emu
