// cpu8051 — an Intel MCS-51 (8051/8052) instruction-set emulator: all 255
// defined opcodes, 256 bytes of internal RAM, SFRs, two-level interrupts
// (INT0, timer 0, INT1, timer 1, serial) and the standard timers 0/1.
// XDATA goes to a Bus (the chip's peripheral models); CODE is 64 KiB.
//
// Sources: Intel "MCS-51 Microcontroller Family User's Manual" (opcode map,
// flags, machine-cycle counts, interrupt vectors and priorities); the
// ASM2464PD's DPX register at SFR 0x93 selecting a second XDATA bank
// (tinygrad/asm2464pd-firmware handmade/src/main.c).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace capgraph::emu {

class Cpu8051 {
 public:
  // What the core needs from the chip around it.
  struct Bus {
    virtual ~Bus() = default;
    virtual uint8_t xdata_read(uint16_t addr, uint8_t bank) = 0;
    virtual void xdata_write(uint16_t addr, uint8_t bank, uint8_t value) = 0;
    // Level of the external interrupt pins (true = asserted). INT0/INT1 are
    // active-low pins on a real 8051; "asserted" hides that here.
    virtual bool int0_asserted() { return false; }
    virtual bool int1_asserted() { return false; }
  };

  // SFR addresses.
  enum : uint8_t {
    P0 = 0x80,
    SP = 0x81,
    DPL = 0x82,
    DPH = 0x83,
    DPX = 0x93,
    PCON = 0x87,
    TCON = 0x88,
    TMOD = 0x89,
    TL0 = 0x8A,
    TL1 = 0x8B,
    TH0 = 0x8C,
    TH1 = 0x8D,
    P1 = 0x90,
    SCON = 0x98,
    SBUF = 0x99,
    P2 = 0xA0,
    IE = 0xA8,
    P3 = 0xB0,
    IP = 0xB8,
    PSW = 0xD0,
    ACC = 0xE0,
    B = 0xF0
  };
  enum : uint8_t { CY = 0x80, AC = 0x40, F0 = 0x20, RS1 = 0x10, RS0 = 0x08, OV = 0x04 };

  explicit Cpu8051(Bus *bus);

  void load_code(const std::vector<uint8_t> &code, uint16_t at = 0);
  void reset();
  // Executes one instruction (or takes one interrupt); returns machine cycles.
  int step();
  // Runs until at least `cycles` machine cycles have passed.
  void run(uint64_t cycles);

  // State, public for tests and device models.
  std::array<uint8_t, 65536> code{};
  std::array<uint8_t, 256> iram{};
  std::array<uint8_t, 128> sfr{};
  uint16_t pc = 0;
  uint64_t cycles = 0;
  uint64_t instructions = 0;
  bool halted_on_invalid = false;  // executed opcode 0xA5 (undefined)

  uint8_t a() const { return sfr[ACC - 0x80]; }
  void set_a(uint8_t v) { sfr[ACC - 0x80] = v; }
  uint8_t psw() const;  // with the parity bit computed from A
  uint16_t dptr() const { return uint16_t(sfr[DPH - 0x80] << 8 | sfr[DPL - 0x80]); }
  uint8_t reg(int n) const { return iram[(sfr[PSW - 0x80] & 0x18) + n]; }
  uint8_t direct_read(uint8_t addr);
  void direct_write(uint8_t addr, uint8_t v);
  bool bit_read(uint8_t bit);
  void bit_write(uint8_t bit, bool v);

 private:
  Bus *bus_;
  int in_service_ = 0;  // bit 0: a low-priority ISR runs, bit 1: a high one
  uint8_t isr_stack_[2] = {0, 0};
  int isr_depth_ = 0;
  bool int0_prev_ = false, int1_prev_ = false;

  uint8_t fetch() { return code[pc++]; }
  uint8_t &rn(int n) { return iram[(sfr[PSW - 0x80] & 0x18) + n]; }
  uint8_t &s(uint8_t addr) { return sfr[addr - 0x80]; }
  bool carry() const { return sfr[PSW - 0x80] & CY; }
  void set_carry(bool c) { sfr[PSW - 0x80] = uint8_t((sfr[PSW - 0x80] & ~CY) | (c ? CY : 0)); }
  void push(uint8_t v);
  uint8_t pop();
  void add(uint8_t v, bool with_carry);
  void subb(uint8_t v);
  void jump_rel(uint8_t rel) { pc = uint16_t(pc + int8_t(rel)); }
  void timers_tick(int cycles);
  bool take_interrupt();
  uint8_t xread(uint16_t addr) { return bus_->xdata_read(addr, s(DPX)); }
  void xwrite(uint16_t addr, uint8_t v) { bus_->xdata_write(addr, s(DPX), v); }
};

}  // namespace capgraph::emu
