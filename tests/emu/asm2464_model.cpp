#include "asm2464_model.h"

#include <algorithm>
#include <cstring>

#include "bridge_protocol.h"
#include "bridge_regs.h"

namespace capgraph::emu {

namespace {
// The SuperSpeed link bits of BUF_CFG_9300 the model owns (the firmware writes 1 to clear them).
constexpr uint8_t kLinkBits = BUF_CFG_9300_SS_OK | BUF_CFG_9300_SS_FAIL;
}  // namespace

const char *usb_result_name(UsbResult r) {
  switch (r) {
    case UsbResult::ok: return "ok";
    case UsbResult::stall: return "stall";
    case UsbResult::timeout: return "timeout";
    case UsbResult::no_device: return "no device";
    case UsbResult::overflow: return "overflow";
  }
  return "?";
}

// ---------------------------------------------------------------- SPI flash

SpiFlash::SpiFlash(size_t size) : data(size, 0xFF) { otp.fill(0xFF); }

void SpiFlash::set_otp_serial(uint32_t serial) {
  uint8_t x = 0;
  for (int i = 0; i < 4; ++i) {
    otp[i] = uint8_t(serial >> (24 - 8 * i));
    x ^= otp[i];
  }
  otp[4] = x;
}

void SpiFlash::transact(uint8_t cmd, uint32_t addr, uint32_t len, uint8_t *buf, uint64_t now) {
  bool busy = now < busy_until;
  const size_t n = data.size();
  switch (cmd) {
    case 0x03:  // READ
      for (uint32_t i = 0; i < len; ++i)
        buf[i] = otp_mode ? otp[(addr + i) % otp.size()] : data[(addr + i) % n];
      break;
    case 0x05:  // RDSR: bit 0 WIP, bit 1 WEL
      buf[0] = uint8_t((busy ? 1 : 0) | (wel ? 2 : 0));
      break;
    case 0x06:
      if (!busy) wel = true;
      break;
    case 0x04:
      if (!busy) wel = false;
      break;
    case 0x9F:
      buf[0] = 0xC2;
      buf[1] = 0x20;
      buf[2] = 0x14;
      break;  // MX25L80-class id
    case 0xB1: otp_mode = true; break;
    case 0xC1: otp_mode = false; break;
    case 0x20:
    case 0xD8: {  // sector / block erase
      if (!wel || busy || otp_mode) break;
      uint32_t size = cmd == 0x20 ? 0x1000 : 0x10000;
      uint32_t base = (addr % n) & ~(size - 1);
      uint32_t todo = size;
      if (power_cut_before && power_cut_before(erases + programs)) {
        todo = size / 2;
        power_was_cut = true;
      }
      std::fill(data.begin() + base, data.begin() + base + todo, 0xFF);
      ++erases;
      wel = false;
      busy_until = now + (cmd == 0x20 ? erase_4k_cycles : 8 * erase_4k_cycles);
      break;
    }
    case 0x02: {  // PAGE PROGRAM: bits only go 1 -> 0; the address wraps in its page
      if (!wel || busy || otp_mode) break;
      uint32_t page = (addr % n) & ~0xFFu;
      uint32_t todo = std::min<uint32_t>(len, 256);
      if (power_cut_before && power_cut_before(erases + programs)) {
        todo /= 2;
        power_was_cut = true;
      }
      for (uint32_t i = 0; i < todo; ++i) data[page + ((addr + i) & 0xFF)] &= buf[i];
      ++programs;
      wel = false;
      busy_until = now + program_cycles;
      break;
    }
    default: break;
  }
}

// ------------------------------------------------------------------ device

Asm2464::Asm2464() : Asm2464(Options{}) {}

Asm2464::Asm2464(Options o)
    : cpu(this),
      fabric(endpoint, o.pcie_bridges),
      sram(BRIDGE_SRAM_SIZE, 0),
      opt_(o),
      x_(0x10000, 0),
      x1_(0x10000, 0) {
  endpoint.dma_read = [this](uint64_t a, uint8_t *dst, size_t n) {
    return bus_master_read(a, dst, n);
  };
  endpoint.dma_write = [this](uint64_t a, const uint8_t *src, size_t n) {
    return bus_master_write(a, src, n);
  };
}

// Bridge memory behind a bus address, or null when [a, a+n) is not inside
// one region (the SRAM, or one XDATA window; bridge_protocol.h).
uint8_t *Asm2464::bus_window(uint64_t a, size_t n) {
  struct Region {
    uint64_t bus;
    size_t size;
    uint8_t *mem;
  };
  const Region regions[] = {
      {BRIDGE_SRAM_BUS_ADDR, sram.size(), sram.data()},
      {BRIDGE_SYS_WINDOW_BUS_ADDR, BRIDGE_SYS_WINDOW_SIZE, x_.data() + BRIDGE_SYS_WINDOW_XDATA},
      {BRIDGE_CQ_WINDOW_BUS_ADDR, BRIDGE_CQ_WINDOW_SIZE, x_.data() + BRIDGE_CQ_WINDOW_XDATA},
      {BRIDGE_ADMIN_WINDOW_BUS_ADDR, BRIDGE_ADMIN_WINDOW_SIZE,
       x_.data() + BRIDGE_ADMIN_WINDOW_XDATA},
  };
  for (const Region &r : regions)
    if (a >= r.bus && n <= r.size && a - r.bus <= r.size - n) return r.mem + (a - r.bus);
  return nullptr;
}

bool Asm2464::bus_master_read(uint64_t a, uint8_t *dst, size_t n) {
  if (!link_up() || !fabric.upstream_reaches_root(a)) return false;
  uint8_t *p = bus_window(a, n);
  if (!p) return false;
  std::memcpy(dst, p, n);
  return true;
}

bool Asm2464::bus_master_write(uint64_t a, const uint8_t *src, size_t n) {
  if (!link_up() || !fabric.upstream_reaches_root(a)) return false;
  uint8_t *p = bus_window(a, n);
  if (!p) return false;
  std::memcpy(p, src, n);
  if (a >= BRIDGE_CQ_WINDOW_BUS_ADDR && a < BRIDGE_CQ_WINDOW_BUS_ADDR + BRIDGE_CQ_WINDOW_SIZE) {
    // Any write into the CQ window counts: tinygrad writes one dword at +12,
    // test_sram_verify.py a 16-byte entry at +0 (model choice: no finer rule
    // is known). Only a write after the arm releases it.
    ++cq_triggers;
    if (dma_.armed && !dma_.to_sram) dma_.gated = false;
  }
  return true;
}

void Asm2464::power_off() {
  mode_ = Mode::off;
  attached_ = false;
}

static uint32_t le32(const uint8_t *p) {
  return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24);
}

static uint32_t crc32(const uint8_t *d, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= d[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

Asm2464::Mode Asm2464::power_on(bool force_bootloader) {
  // Volatile state is lost; flash, OTP and the endpoint's wiring stay.
  std::fill(x_.begin(), x_.end(), 0);
  std::fill(x1_.begin(), x1_.end(), 0);
  flash_buf_.fill(0);
  ctrl_ = Ctrl{};
  dma_ = Dma{};
  bot_ = Bot{};
  ctrl_phase_ = ep_cfg1_ = bus_reset_ = link_bits_ = pcie_status_ = 0;
  out_armed_ = in_armed_ = tlp_pending_ = timer_on_ = timer_expired_ = false;
  in_len_ = 0;
  phy_tuning_pos_ = 0;
  phy_tuning_broken_ = false;
  link_up_at_ = UINT64_MAX;
  flash.power_was_cut = false;
  flash.otp_mode = false;
  flash.wel = false;
  unplug_after_ = UINT64_MAX;
  cpu.code.fill(0xFF);
  cpu.reset();
  cpu.cycles = 0;
  flash.busy_until = 0;

  // Boot ROM model: the wrapped image at BRIDGE_FLASH_IMAGE_ADDR.
  const auto &f = flash.data;
  const uint32_t at = BRIDGE_FLASH_IMAGE_ADDR;
  uint32_t len = le32(&f[at]);
  bool valid = len > 0 && len <= BRIDGE_IMAGE_MAX_BODY &&
               at + BRIDGE_IMAGE_HEADER + len + BRIDGE_IMAGE_FOOTER <= f.size();
  if (valid) {
    const uint8_t *body = &f[at + BRIDGE_IMAGE_HEADER];
    const uint8_t *foot = body + len;
    uint8_t sum = 0;
    for (uint32_t i = 0; i < len; ++i) sum = uint8_t(sum + body[i]);
    valid = foot[0] == BRIDGE_IMAGE_MAGIC && foot[1] == sum && le32(foot + 2) == crc32(body, len);
  }
  attached_ = true;
  if (!valid || force_bootloader) {
    mode_ = Mode::bootloader;
    return mode_;
  }
  boot_body(std::vector<uint8_t>(f.begin() + at + BRIDGE_IMAGE_HEADER,
                                 f.begin() + at + BRIDGE_IMAGE_HEADER + len));
  return mode_;
}

void Asm2464::boot_body(const std::vector<uint8_t> &body) {
  cpu.code.fill(0xFF);
  cpu.load_code(body);
  cpu.reset();
  mode_ = Mode::firmware;
  attached_ = true;
  run_ms(5);  // firmware start-up: OTP read, PCIe rails off, USB controller
  usb_attach_events();
}

void Asm2464::usb_attach_events() {
  // Link comes up (SuperSpeed or its failure -> USB 2), then a bus reset.
  link_bits_ = opt_.usb3 ? BUF_CFG_9300_SS_OK : BUF_CFG_9300_SS_FAIL;
  bus_reset_ = 0x01;
  run_ms(1);
}

void Asm2464::run_cycles(uint64_t n) {
  uint64_t end = now() + n;
  while (now() < end && mode_ == Mode::firmware) cpu.step();
}

bool Asm2464::run_until(const std::function<bool()> &done, unsigned timeout_ms) {
  uint64_t end = now() + uint64_t(timeout_ms) * kCyclesPerMs;
  while (now() < end) {
    if (done()) return true;
    if (mode_ != Mode::firmware) return done();
    cpu.step();
  }
  return done();
}

// ---------------------------------------------------------- XDATA access

bool Asm2464::int0_asserted() {
  return mode_ == Mode::firmware && xdata_read(REG_USB_PERIPH_STATUS, 0) != 0;
}

uint8_t Asm2464::xdata_read(uint16_t a, uint8_t bank) {
  if (bank & 1) return x1_[a];
  if (a >= 0x7000 && a < 0x8000) return flash_buf_[a - 0x7000];
  if (a >= 0xF000) return sram[a - 0xF000];  // SRAM window (bus 0x200000)
  switch (a) {
    case REG_USB_CTRL_PHASE: return ctrl_phase_;
    case REG_USB_EP_CFG1: return ep_cfg1_;
    case REG_USB_PERIPH_STATUS:
      return uint8_t(
          (bus_reset_ ? USB_PERIPH_BUS_RESET : 0) | (ctrl_phase_ ? USB_PERIPH_CONTROL : 0) |
          (ep_cfg1_ ? USB_PERIPH_BULK_DATA : 0) | (link_bits_ ? USB_PERIPH_LINK_EVENT : 0));
    case REG_INT_USB_STATUS: return xdata_read(REG_USB_PERIPH_STATUS, 0) ? INT_USB_GATE : 0x00;
    case REG_USB_PHY_CTRL_91D1: return bus_reset_;
    case REG_BUF_CFG_9300: return uint8_t((x_[a] & ~kLinkBits) | link_bits_);
    case REG_PCIE_STATUS: tlp_poll(); return pcie_status_;
    case REG_PCIE_LTSSM_STATE: return link_up() ? PCIE_LTSSM_L0 : 0x00;
    case REG_SYS_CTRL_E765:
      return uint8_t((x_[a] & ~SYS_CTRL_E765_PCIE_LINK_UP) |
                     (link_up() ? SYS_CTRL_E765_PCIE_LINK_UP : 0));
    case REG_FLASH_CSR:
      // Without CA81 bit 0 the controller never finishes (e4_flash.py).
      return (x_[REG_CPU_CTRL_CA81] & 1) ? uint8_t(x_[a] & ~FLASH_CSR_BUSY)
                                         : uint8_t(x_[a] | FLASH_CSR_BUSY);
    case REG_TIMER0_CSR:
      timer_poll();
      return uint8_t((timer_expired_ ? TIMER_CSR_EXPIRED : 0) | (timer_on_ ? TIMER_CSR_ENABLE : 0));
    default: return x_[a];
  }
}

// Bank-1 writes to the PHY slices the tuning touches (regs.h PCIE_RXPHY_*):
// lanes 0x78xx-0x7Bxx, companions 0x60xx/0x64xx/0x68xx/0x6Cxx. Until the
// sequence is complete every such write must be its next entry.
void Asm2464::phy_write(uint16_t a, uint8_t v) {
  uint8_t hi = uint8_t(a >> 8);
  bool phy = (hi >= 0x78 && hi <= 0x7B) || hi == 0x60 || hi == 0x64 || hi == 0x68 || hi == 0x6C;
  const auto &seq = phy_tuning_sequence();
  if (!phy || phy_tuning_broken_ || phy_tuning_pos_ == seq.size()) return;
  if (seq[phy_tuning_pos_] == std::make_pair(a, v))
    ++phy_tuning_pos_;
  else
    phy_tuning_broken_ = true;
}

void Asm2464::xdata_write(uint16_t a, uint8_t bank, uint8_t v) {
  if (bank & 1) {
    phy_write(a, v);
    x1_[a] = v;
    return;
  }
  if (a >= 0x7000 && a < 0x8000) {
    ++ignored_buffer_writes;  // read-only to the CPU (registers.h)
    return;
  }
  if (a >= 0xF000) {
    sram[a - 0xF000] = v;
    return;
  }
  switch (a) {
    case REG_USB_CTRL_PHASE: ctrl_phase_ &= uint8_t(~v); return;  // write 1 to clear
    case REG_USB_EP_CFG1: ep_cfg1_ &= uint8_t(~v); return;
    case REG_USB_DMA_TRIGGER: dma_trigger(v); return;
    case REG_USB_EP_CFG2:
      if (v & USB_EP_CFG2_ARM_OUT) out_armed_ = true;
      if (v & USB_EP_CFG2_CLEAR_OUT) out_armed_ = false;
      if (v & USB_EP_CFG2_CLEAR_IN) in_armed_ = false;
      if (v & USB_EP_CFG2_ARM_IN) {  // send BULK_IN_LEN bytes of the bulk-IN buffer
        in_armed_ = true;
        in_len_ = uint16_t(x_[REG_USB_BULK_IN_LEN_H] << 8 | x_[REG_USB_BULK_IN_LEN_L]);
        if (in_len_ > USB_BULK_IN_BUF_SIZE) {
          ++protocol_violations;
          in_len_ = USB_BULK_IN_BUF_SIZE;
        }
      }
      x_[a] = v;
      return;
    case REG_USB_PHY_CTRL_91D1: bus_reset_ &= uint8_t(~v); return;
    case REG_BUF_CFG_9300:
      link_bits_ &= uint8_t(~v);
      x_[a] = uint8_t(v & ~kLinkBits);
      return;
    case REG_PCIE_TRIGGER:
      x_[a] = v;
      if (v == PCIE_TRIGGER_EXEC) tlp_start();
      return;
    case REG_PCIE_STATUS:
      pcie_status_ &= uint8_t(~(v & (PCIE_STATUS_ERROR | PCIE_STATUS_COMPLETE)));
      return;
    case REG_PCIE_PERST_CTRL:
    case REG_PCIE_LANE_CTRL_C659:
    case REG_HDDPC_CTRL:
    case REG_PHY_TIMER_CTRL_E764:
      x_[a] = v;
      pcie_rails_changed();
      return;
    case REG_NVME_CTRL_STATUS:
      x_[a] = v;
      if (v & NVME_CTRL_DMA_START) dma_start(v);
      return;
    case REG_UART_THR: uart.push_back(char(v)); return;
    case REG_FLASH_CSR:
      x_[a] = v;
      if (v & FLASH_CSR_BUSY) flash_transact();  // write 1 to start
      return;
    case REG_TIMER0_CSR:
      if (v & TIMER_CSR_CLEAR) {
        timer_on_ = false;
        timer_expired_ = false;
      }
      if (v & TIMER_CSR_EXPIRED) timer_expired_ = false;
      if (v & TIMER_CSR_ENABLE) {
        // Only the 0.5 ms tick (CC10[2:0] = 4, handmade main.c) is known;
        // other settings are modelled with the same tick.
        uint64_t ticks = uint64_t(x_[REG_TIMER0_THRESHOLD_HI]) << 8 | x_[REG_TIMER0_THRESHOLD_LO];
        timer_on_ = true;
        timer_expired_ = false;
        timer_start_ = now();
        timer_len_ = ticks * kCyclesPerMs / 2;
      }
      return;
    default: x_[a] = v; return;
  }
}

void Asm2464::timer_poll() {
  if (timer_on_ && now() >= timer_start_ + timer_len_) {
    timer_on_ = false;
    timer_expired_ = true;
  }
}

// ------------------------------------------------------------- SPI flash

void Asm2464::flash_transact() {
  if (!(x_[REG_CPU_CTRL_CA81] & 1)) return;  // stays busy forever
  uint8_t cmd = x_[REG_FLASH_CMD];
  bool has_addr = (x_[REG_FLASH_ADDR_LEN] & 0x03) != 0;
  uint32_t addr = has_addr ? uint32_t(x_[REG_FLASH_ADDR_LO] | x_[REG_FLASH_ADDR_MD] << 8 |
                                      x_[REG_FLASH_ADDR_HI] << 16)
                           : 0;
  uint32_t len = uint32_t(x_[REG_FLASH_DATA_LEN_HI] << 8 | x_[REG_FLASH_DATA_LEN_LO]);
  uint32_t ofs = uint32_t(x_[REG_FLASH_BUF_OFFSET_LO] | x_[REG_FLASH_BUF_OFFSET_HI] << 8) & 0xFFF;
  len = std::min<uint32_t>(len, uint32_t(flash_buf_.size()) - ofs);
  flash.transact(cmd, addr, len, flash_buf_.data() + ofs, now());
  x_[REG_FLASH_CSR] = 0;
  if (flash.power_was_cut) power_off();
}

// ----------------------------------------------------------------- PCIe

bool Asm2464::link_up() const { return link_up_at_ != UINT64_MAX && now() >= link_up_at_; }

void Asm2464::pcie_rails_changed() {
  // Training needs the rails, PERST# released, E764 = 0x1C and (our model
  // of why the stock firmware tunes the RX PHY first) the tuning sequence.
  bool on = opt_.endpoint_present && (x_[REG_HDDPC_CTRL] & 0x20) &&
            (x_[REG_PCIE_LANE_CTRL_C659] & 0x01) && x_[REG_PCIE_PERST_CTRL] == 0 &&
            x_[REG_PHY_TIMER_CTRL_E764] == 0x1C && phy_tuning_applied();
  if (!on)
    link_up_at_ = UINT64_MAX;
  else if (link_up_at_ == UINT64_MAX)
    link_up_at_ = now() + 2 * kCyclesPerMs;
}

void Asm2464::tlp_start() {
  TlpRequest t;
  t.fmt_type = x_[REG_PCIE_FMT_TYPE];
  t.byte_en = x_[REG_PCIE_BYTE_EN];
  uint32_t lo = 0, hi = 0, d = 0;
  for (int i = 0; i < 4; ++i) {
    lo = lo << 8 | x_[REG_PCIE_ADDR(i)];
    hi = hi << 8 | x_[REG_PCIE_ADDR(4 + i)];
    d = d << 8 | x_[REG_PCIE_DATA(i)];
  }
  t.addr = uint64_t(hi) << 32 | lo;
  t.data = d;
  tlp_pending_ = false;
  if (!link_up()) {
    pcie_status_ |= PCIE_STATUS_ERROR;  // the engine cannot send
    return;
  }
  // Without the routing bit the TLP never reaches the device (registers.h);
  // the model loses it, so the firmware sees no completion.
  if (!(x1_[REG_PHY_TLP_ROUTING] & PHY_TLP_ROUTING_ENABLE)) return;
  tlp_cpl_ = fabric.handle(t);
  if (!tlp_cpl_.completes) return;  // lost: no completion, ever
  // A posted write: sent; whether the engine reports it done is an option.
  if ((t.fmt_type & 0xDF) == 0x40 && !opt_.posted_write_completes) return;
  tlp_pending_ = true;
  tlp_done_at_ = now() + 40;  // ~4 us round trip
}

void Asm2464::tlp_poll() {
  if (!tlp_pending_ || now() < tlp_done_at_) return;
  tlp_pending_ = false;
  const TlpCompletion &c = tlp_cpl_;
  if (c.has_data)
    for (int i = 0; i < 4; ++i) x_[REG_PCIE_DATA(i)] = uint8_t(c.data >> (24 - 8 * i));
  uint16_t bytes = c.has_data ? 4 : 0;
  x_[REG_PCIE_CPL_HDR_HI] = uint8_t(c.status << 5 | ((bytes >> 8) & 0x0F));
  x_[REG_PCIE_CPL_HDR_LO] = uint8_t(bytes);
  x_[REG_PCIE_COMPL_STATUS] = c.has_data ? PCIE_COMPL_HAS_DATA : 0;
  pcie_status_ |= PCIE_STATUS_COMPLETE;
}

// ------------------------------------------------------------ SRAM DMA

void Asm2464::dma_start(uint8_t ctrl) {
  uint8_t start = x_[REG_NVME_SLOT_START], end = x_[REG_NVME_SLOT_END];
  uint32_t sector = uint32_t(x_[REG_NVME_SECTOR_SIZE_HI] << 8 | x_[REG_NVME_SECTOR_SIZE_LO]);
  uint32_t count = uint32_t(x_[REG_NVME_SECTOR_COUNT_HI] << 8 | x_[REG_NVME_SECTOR_COUNT_LO]);
  uint32_t first = start & 0x7F;
  uint32_t bytes = sector * count;
  if (!(start & NVME_SLOT_ENABLE) || end <= first || end > BRIDGE_SRAM_SLOTS || bytes == 0 ||
      bytes > (end - first) * BRIDGE_SLOT_SIZE) {
    ++protocol_violations;
    dma_ = Dma{};
    return;
  }
  dma_.armed = true;
  dma_.to_sram = ctrl & NVME_CTRL_WRITE_DIR;
  dma_.gated = !dma_.to_sram;  // released by a bus-master write into the CQ window
  dma_.offset = first * BRIDGE_SLOT_SIZE;
  dma_.remaining = bytes;
}

// ------------------------------------------------------------ USB engine

void Asm2464::dma_trigger(uint8_t v) {
  if (!ctrl_.active) {
    ++protocol_violations;
    return;
  }
  const UsbSetup &s = ctrl_.setup;
  bool in = s.bmRequestType & 0x80;
  if (v & USB_DMA_STALL) {
    ctrl_.result = UsbResult::stall;
  } else if (v & USB_DMA_RECV) {  // take the OUT data phase into the EP0 buffer
    if (in || s.wLength == 0 || ctrl_.data_taken || s.wLength > 0x200) {
      ++protocol_violations;
      return;
    }
    std::copy(ctrl_.out.begin(), ctrl_.out.end(), x_.begin() + USB_CTRL_BUF);
    ctrl_.data_taken = true;
    ctrl_phase_ |= USB_CTRL_PHASE_DATA_OUT;
    return;
  } else if (v & USB_DMA_SEND) {  // IN data, or the status stage of an OUT
    uint16_t len = uint16_t(x_[REG_USB_EP0_LEN_H] << 8 | x_[REG_USB_EP0_LEN_L]);
    if (in) {
      if (len > max_packet0()) ++protocol_violations;
      size_t n = std::min<size_t>(len, ctrl_.in_len);
      std::copy(x_.begin() + USB_CTRL_BUF, x_.begin() + USB_CTRL_BUF + n, ctrl_.in);
      ctrl_.actual = n;
      ctrl_.result = UsbResult::ok;
    } else if (s.wLength > 0 && !ctrl_.data_taken) {
      ++protocol_violations;  // status before the data stage
      ctrl_.result = UsbResult::stall;
    } else {
      ctrl_.actual = s.wLength;
      ctrl_.result = UsbResult::ok;
    }
  } else {
    return;
  }
  ctrl_.done = true;
  ctrl_.active = false;
  ctrl_phase_ = 0;
}

UsbResult Asm2464::control(const UsbSetup &s, uint8_t *data, size_t *actual, unsigned timeout_ms) {
  *actual = 0;
  if (!attached_) return UsbResult::no_device;
  ++stats.control_transfers;
  stats.control_bytes += 8;
  if (mode_ == Mode::bootloader) {
    UsbResult r = boot_control(s, data, actual);
    stats.control_transactions += 2 + (*actual + max_packet0() - 1) / max_packet0();
    stats.control_bytes += *actual;
    return r;
  }
  ctrl_ = Ctrl{};
  ctrl_.active = true;
  ctrl_.setup = s;
  if (s.bmRequestType & 0x80) {
    ctrl_.in = data;
    ctrl_.in_len = s.wLength;
  } else {
    ctrl_.out.assign(data, data + s.wLength);
  }
  const uint8_t pkt[8] = {s.bmRequestType,    s.bRequest,
                          uint8_t(s.wValue),  uint8_t(s.wValue >> 8),
                          uint8_t(s.wIndex),  uint8_t(s.wIndex >> 8),
                          uint8_t(s.wLength), uint8_t(s.wLength >> 8)};
  std::copy(pkt, pkt + 8, x_.begin() + REG_USB_SETUP_BMREQ);
  ctrl_phase_ = USB_CTRL_PHASE_SETUP;  // a new SETUP aborts whatever EP0 was doing
  bool done = run_until([this] { return ctrl_.done || !attached_; }, timeout_ms);
  if (!attached_) return UsbResult::no_device;
  if (!done) {
    ctrl_.active = false;
    ctrl_phase_ = 0;
    stats.control_transactions += 1;
    return UsbResult::timeout;
  }
  *actual = ctrl_.actual;
  stats.control_transactions += 2 + (ctrl_.actual + max_packet0() - 1) / max_packet0();
  stats.control_bytes += ctrl_.actual;
  return ctrl_.result;
}

UsbResult Asm2464::bulk_out(uint8_t ep, const uint8_t *data, size_t n, size_t *actual,
                            unsigned timeout_ms) {
  *actual = 0;
  if (!attached_) return UsbResult::no_device;
  if (ep != BRIDGE_EP_BULK_OUT) return UsbResult::stall;
  ++stats.bulk_out_transfers;
  if (mode_ == Mode::bootloader) return boot_bulk_out(data, n, actual);
  auto account = [&](size_t moved) {
    stats.bulk_out_bytes += moved;
    stats.bulk_out_packets += (moved + max_packet_bulk() - 1) / max_packet_bulk();
  };
  if (dma_.armed && dma_.to_sram) {
    size_t take = std::min<size_t>(n, dma_.remaining);
    bool vanish = unplug_after_ < take;
    if (vanish) take = size_t(unplug_after_);
    std::memcpy(sram.data() + dma_.offset, data, take);
    dma_.offset += uint32_t(take);
    dma_.remaining -= uint32_t(take);
    if (unplug_after_ != UINT64_MAX) unplug_after_ -= take;
    account(take);
    *actual = take;
    if (vanish) {
      attached_ = false;
      return UsbResult::no_device;
    }
    if (dma_.remaining == 0) {
      dma_.armed = false;
      x_[REG_NVME_CTRL_STATUS] &= uint8_t(~0x02);
    }
    if (take < n) {  // the engine NAKs what it was not armed for
      run_ms(timeout_ms);
      return UsbResult::timeout;
    }
    return UsbResult::ok;
  }
  // Otherwise the packet goes to the 0x7000 buffer once firmware arms EP 0x02.
  if (!run_until([this] { return out_armed_ || !attached_; }, timeout_ms))
    return UsbResult::timeout;
  if (!attached_) return UsbResult::no_device;
  size_t take = std::min<size_t>(n, flash_buf_.size());
  std::memcpy(flash_buf_.data(), data, take);
  x_[REG_USB_BULK_OUT_BC_H] = uint8_t(take >> 8);
  x_[REG_USB_BULK_OUT_BC_L] = uint8_t(take);
  ep_cfg1_ |= USB_EP_CFG1_BULK_OUT_COMPLETE;
  out_armed_ = false;
  account(take);
  *actual = take;
  return take < n ? UsbResult::timeout : UsbResult::ok;
}

UsbResult Asm2464::bulk_in(uint8_t ep, uint8_t *data, size_t n, size_t *actual,
                           unsigned timeout_ms) {
  *actual = 0;
  if (!attached_) return UsbResult::no_device;
  if (ep != BRIDGE_EP_BULK_IN) return UsbResult::stall;
  ++stats.bulk_in_transfers;
  if (mode_ == Mode::bootloader) return boot_bulk_in(data, n, actual);
  if (!run_until(
          [this] {
            return in_armed_ || (dma_.armed && !dma_.to_sram && !dma_.gated) || !attached_;
          },
          timeout_ms))
    return UsbResult::timeout;
  if (!attached_) return UsbResult::no_device;
  // Hands up to `take` bytes from `src` to the host, cut short by a planned unplug; false when
  // the device vanished during the transfer.
  auto deliver = [&](const uint8_t *src, size_t take) {
    bool vanish = unplug_after_ < take;
    if (vanish) take = size_t(unplug_after_);
    std::memcpy(data, src, take);
    if (unplug_after_ != UINT64_MAX) unplug_after_ -= take;
    stats.bulk_in_bytes += take;
    stats.bulk_in_packets += (take + max_packet_bulk() - 1) / max_packet_bulk();
    *actual = take;
    if (vanish) attached_ = false;
    return !vanish;
  };
  if (in_armed_) {  // firmware-filled buffer at 0x8000 (MEM_STREAM results)
    if (!deliver(x_.data() + USB_BULK_IN_BUF, std::min<size_t>(n, in_len_)))
      return UsbResult::no_device;
    in_armed_ = false;
    ep_cfg1_ |= USB_EP_CFG1_BULK_IN_COMPLETE;
    return in_len_ > n ? UsbResult::overflow : UsbResult::ok;
  }
  const bool stays = deliver(sram.data() + dma_.offset, std::min<size_t>(n, dma_.remaining));
  dma_.offset += uint32_t(*actual);
  dma_.remaining -= uint32_t(*actual);
  if (!stays) return UsbResult::no_device;
  if (dma_.remaining == 0) {
    dma_.armed = false;
    x_[REG_NVME_CTRL_STATUS] &= uint8_t(~0x02);
  }
  return UsbResult::ok;
}

// ------------------------------------------------------- stock bootloader
// A model of ASMedia's ROM/bootloader as the flashing tools see it: a
// mass-storage device (174C:2464, interface 08/06/50) that takes SCSI
// vendor CDBs over Bulk-Only Transport. Sources: flash.py (CDB layouts:
// E1 50 idx + 128 bytes -> config block idx; E3 50 len32be + data -> image
// bytes from flash 0x100; E3 D0 -> the bytes after the first 0xFF00; E8 51
// -> commit/reset), USB Mass Storage Class Bulk-Only Transport 1.0 (CBW
// "USBC" 31 bytes, CSW "USBS" 13 bytes). How the real bootloader erases is
// not public: the model replaces exactly the bytes it is given.
// Read-back: vendor.c in the same repository names E0 "config read (128-byte
// blocks)" and E2 "flash read", but not their CDB layouts. The model (and the
// flasher) assume they mirror the writes: E0 50 idx -> config block idx
// (128 bytes in); E2 50 len32be -> the first len image bytes from 0x100;
// E2 D0 len32be -> the bytes after the first 0xFF00. Unconfirmed on a board.

UsbResult Asm2464::boot_control(const UsbSetup &s, uint8_t *data, size_t *actual) {
  static const uint8_t dev[18] = {18,   1,    0x10, 0x02, 0,    0, 0, 64, 0x4C,
                                  0x17, 0x64, 0x24, 0x00, 0x01, 1, 2, 3,  1};
  static const uint8_t cfg[32] = {9, 2, 32, 0,    1,    1,    0, 0x80, 0xFA, 9,    4,
                                  0, 0, 2,  0x08, 0x06, 0x50, 0, 7,    5,    0x81, 2,
                                  0, 2, 0,  7,    5,    0x02, 2, 0,    2,    0};
  auto reply = [&](const uint8_t *p, size_t n) {
    n = std::min<size_t>(n, s.wLength);
    std::memcpy(data, p, n);
    *actual = n;
    return UsbResult::ok;
  };
  if (s.bmRequestType == 0x80 && s.bRequest == 6) {
    if ((s.wValue >> 8) == 1) return reply(dev, sizeof dev);
    if ((s.wValue >> 8) == 2) return reply(cfg, sizeof cfg);
    return UsbResult::stall;
  }
  if (s.bmRequestType == 0x00 && (s.bRequest == 5 || s.bRequest == 9)) return UsbResult::ok;
  if (s.bmRequestType == 0xA1 && s.bRequest == 0xFE) {  // GET MAX LUN
    static const uint8_t zero = 0;
    return reply(&zero, 1);
  }
  return UsbResult::stall;
}

bool Asm2464::boot_flash_write(uint32_t addr, const uint8_t *p, size_t n) {
  if (addr + n > flash.data.size()) return false;
  size_t todo = n;
  if (flash.power_cut_before && flash.power_cut_before(flash.erases + flash.programs)) {
    todo = n / 2;
    flash.power_was_cut = true;
  }
  std::memcpy(flash.data.data() + addr, p, todo);
  if (boot_corrupt_flash_at >= addr && boot_corrupt_flash_at < addr + todo)
    flash.data[boot_corrupt_flash_at] ^= 0x01;
  ++flash.programs;
  if (flash.power_was_cut) power_off();
  return !flash.power_was_cut;
}

void Asm2464::boot_execute() {
  const uint8_t *c = bot_.cdb;
  bot_.status = 1;
  bot_.residue = 0;
  if (c[0] == 0xE1 && c[1] == 0x50 && c[2] < 2 && bot_.data.size() == 128) {
    if (boot_flash_write(BRIDGE_FLASH_CONFIG_ADDR + c[2] * 0x80u, bot_.data.data(), 128))
      bot_.status = 0;
  } else if (c[0] == 0xE3 && (c[1] == 0x50 || c[1] == 0xD0)) {
    uint32_t len = uint32_t(c[2] << 24 | c[3] << 16 | c[4] << 8 | c[5]);
    uint32_t at = BRIDGE_FLASH_IMAGE_ADDR + (c[1] == 0xD0 ? BRIDGE_FLASH_PART1 : 0);
    if (len == bot_.data.size() && boot_flash_write(at, bot_.data.data(), len)) bot_.status = 0;
  } else if (c[0] == 0xE8 && c[1] == 0x51) {
    ++boot_commits;
    bot_.status = 0;
  } else if (c[0] == 0x00) {  // TEST UNIT READY
    bot_.status = 0;
  }
  bot_.data.clear();
}

void Asm2464::boot_execute_read() {
  const uint8_t *c = bot_.cdb;
  bot_.status = 1;
  bot_.residue = 0;
  bot_.data.clear();
  uint32_t at = UINT32_MAX, len = bot_.expected;
  if (c[0] == 0xE0 && c[1] == 0x50 && c[2] < 2 && len == 128) {
    at = BRIDGE_FLASH_CONFIG_ADDR + c[2] * 0x80u;
  } else if (c[0] == 0xE2 && (c[1] == 0x50 || c[1] == 0xD0) &&
             uint32_t(c[2] << 24 | c[3] << 16 | c[4] << 8 | c[5]) == len) {
    at = BRIDGE_FLASH_IMAGE_ADDR + (c[1] == 0xD0 ? BRIDGE_FLASH_PART1 : 0);
  }
  if (at != UINT32_MAX && at + len <= flash.data.size() && !boot_refuses_reads) {
    bot_.data.assign(flash.data.begin() + at, flash.data.begin() + at + len);
    bot_.status = 0;
  } else {
    bot_.data.assign(len, 0);  // BOT: pad the data stage, fail in the CSW
    bot_.residue = len;
  }
}

UsbResult Asm2464::boot_bulk_out(const uint8_t *data, size_t n, size_t *actual) {
  *actual = n;
  stats.bulk_out_bytes += n;
  stats.bulk_out_packets += (n + max_packet_bulk() - 1) / max_packet_bulk();
  if (bot_.stage == Bot::Stage::cbw) {
    if (n != 31 || le32(data) != 0x43425355u) return UsbResult::stall;
    bot_.tag = le32(data + 4);
    bot_.expected = le32(data + 8);
    std::memcpy(bot_.cdb, data + 15, 16);
    bot_.data.clear();
    bool dir_in = data[12] & 0x80;
    if (bot_.expected && !dir_in) {
      bot_.stage = Bot::Stage::data_out;
    } else if (bot_.expected) {
      boot_execute_read();
      bot_.stage = Bot::Stage::data_in;
    } else {
      boot_execute();
      bot_.stage = Bot::Stage::csw;
    }
    return UsbResult::ok;
  }
  if (bot_.stage == Bot::Stage::data_out) {
    bot_.data.insert(bot_.data.end(), data, data + n);
    if (bot_.data.size() >= bot_.expected) {
      boot_execute();
      if (mode_ == Mode::off) return UsbResult::no_device;
      bot_.stage = Bot::Stage::csw;
    }
    return UsbResult::ok;
  }
  *actual = 0;
  return UsbResult::stall;
}

UsbResult Asm2464::boot_bulk_in(uint8_t *data, size_t n, size_t *actual) {
  if (bot_.stage == Bot::Stage::data_in) {
    size_t take = std::min(n, bot_.data.size());
    std::memcpy(data, bot_.data.data(), take);
    *actual = take;
    stats.bulk_in_bytes += take;
    stats.bulk_in_packets += (take + max_packet_bulk() - 1) / max_packet_bulk();
    bot_.data.erase(bot_.data.begin(), bot_.data.begin() + long(take));
    if (bot_.data.empty()) bot_.stage = Bot::Stage::csw;
    return UsbResult::ok;
  }
  if (bot_.stage != Bot::Stage::csw || n < 13) return UsbResult::stall;
  uint8_t csw[13] = {'U', 'S', 'B', 'S'};
  for (int i = 0; i < 4; ++i) {
    csw[4 + i] = uint8_t(bot_.tag >> (8 * i));
    csw[8 + i] = uint8_t(bot_.residue >> (8 * i));
  }
  csw[12] = bot_.status;
  std::memcpy(data, csw, 13);
  *actual = 13;
  stats.bulk_in_bytes += 13;
  stats.bulk_in_packets += 1;
  bot_.stage = Bot::Stage::cbw;
  return UsbResult::ok;
}

}  // namespace capgraph::emu
