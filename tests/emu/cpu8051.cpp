#include "cpu8051.h"

namespace capgraph::emu {

// Machine cycles per opcode (MCS-51 user's manual instruction table).
static const uint8_t kCycles[256] = {
    // 0 1 2 3 4 5 6 7 8 9 A B C D E F
    1, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 0x
    2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 1x
    2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 2x
    2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 3x
    2, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 4x
    2, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 5x
    2, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 6x
    2, 2, 2, 2, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 7x
    2, 2, 2, 2, 4, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,  // 8x
    2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // 9x
    2, 2, 1, 2, 4, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,  // Ax
    2, 2, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,  // Bx
    2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // Cx
    2, 2, 1, 1, 1, 2, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,  // Dx
    2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // Ex
    2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,  // Fx
};

Cpu8051::Cpu8051(Bus *bus) : bus_(bus) { reset(); }

void Cpu8051::load_code(const std::vector<uint8_t> &bytes, uint16_t at) {
  for (std::size_t i = 0; i < bytes.size() && at + i < code.size(); ++i) code[at + i] = bytes[i];
}

void Cpu8051::reset() {
  pc = 0;
  sfr.fill(0);
  s(SP) = 0x07;
  s(P0) = s(P1) = s(P2) = s(P3) = 0xFF;
  in_service_ = 0;
  isr_depth_ = 0;
  int0_prev_ = int1_prev_ = false;
  halted_on_invalid = false;
}

uint8_t Cpu8051::psw() const {
  uint8_t a = sfr[ACC - 0x80], p = 0;
  for (int i = 0; i < 8; ++i) p ^= (a >> i) & 1;
  return uint8_t((sfr[PSW - 0x80] & 0xFE) | p);
}

uint8_t Cpu8051::direct_read(uint8_t addr) {
  if (addr < 0x80) return iram[addr];
  if (addr == PSW) return psw();
  return s(addr);
}

void Cpu8051::direct_write(uint8_t addr, uint8_t v) {
  if (addr < 0x80)
    iram[addr] = v;
  else
    s(addr) = v;
}

bool Cpu8051::bit_read(uint8_t bit) {
  uint8_t addr = bit < 0x80 ? uint8_t(0x20 + (bit >> 3)) : uint8_t(bit & 0xF8);
  return (direct_read(addr) >> (bit & 7)) & 1;
}

void Cpu8051::bit_write(uint8_t bit, bool v) {
  uint8_t addr = bit < 0x80 ? uint8_t(0x20 + (bit >> 3)) : uint8_t(bit & 0xF8);
  uint8_t m = uint8_t(1 << (bit & 7));
  uint8_t cur = addr < 0x80 ? iram[addr] : s(addr);
  direct_write(addr, v ? uint8_t(cur | m) : uint8_t(cur & ~m));
}

void Cpu8051::push(uint8_t v) {
  s(SP) = uint8_t(s(SP) + 1);
  iram[s(SP)] = v;
}

uint8_t Cpu8051::pop() {
  uint8_t v = iram[s(SP)];
  s(SP) = uint8_t(s(SP) - 1);
  return v;
}

void Cpu8051::add(uint8_t v, bool with_carry) {
  uint8_t a = this->a(), c = with_carry && carry() ? 1 : 0;
  unsigned r = unsigned(a) + v + c;
  bool ac = ((a & 0x0F) + (v & 0x0F) + c) > 0x0F;
  bool c6 = ((a & 0x7F) + (v & 0x7F) + c) > 0x7F;
  bool cy = r > 0xFF;
  uint8_t &p = s(PSW);
  p = uint8_t((p & ~(CY | AC | OV)) | (cy ? CY : 0) | (ac ? AC : 0) | ((cy != c6) ? OV : 0));
  set_a(uint8_t(r));
}

void Cpu8051::subb(uint8_t v) {
  uint8_t a = this->a(), c = carry() ? 1 : 0;
  int r = int(a) - v - c;
  bool cy = r < 0;
  bool ac = (int(a & 0x0F) - (v & 0x0F) - c) < 0;
  bool b6 = (int(a & 0x7F) - (v & 0x7F) - c) < 0;
  uint8_t &p = s(PSW);
  p = uint8_t((p & ~(CY | AC | OV)) | (cy ? CY : 0) | (ac ? AC : 0) | ((cy != b6) ? OV : 0));
  set_a(uint8_t(r));
}

// Timers 0 and 1, modes 0-3, counting machine cycles (C/T = 0 only).
void Cpu8051::timers_tick(int n) {
  uint8_t tmod = s(TMOD), tcon = s(TCON);
  for (int t = 0; t < 2; ++t) {
    bool run = tcon & (t ? 0x40 : 0x10);
    if (!run) continue;
    int mode = (tmod >> (t * 4)) & 3;
    uint8_t &tl = s(t ? TL1 : TL0);
    uint8_t &th = s(t ? TH1 : TH0);
    uint8_t tf = t ? 0x80 : 0x20;
    for (int i = 0; i < n; ++i) {
      bool overflow = false;
      if (mode == 0) {  // 13-bit: TL 5 bits
        unsigned v = (unsigned(th) << 5 | (tl & 0x1F)) + 1;
        overflow = v > 0x1FFF;
        th = uint8_t(v >> 5);
        tl = uint8_t((tl & 0xE0) | (v & 0x1F));
      } else if (mode == 1) {
        unsigned v = (unsigned(th) << 8 | tl) + 1;
        overflow = v > 0xFFFF;
        th = uint8_t(v >> 8);
        tl = uint8_t(v);
      } else if (mode == 2) {
        tl = uint8_t(tl + 1);
        if (tl == 0) {
          overflow = true;
          tl = th;
        }
      } else {  // mode 3: timer 0 splits; timer 1 stops
        if (t == 1) break;
        tl = uint8_t(tl + 1);
        if (tl == 0) s(TCON) |= 0x20;
        if (tcon & 0x40) {
          th = uint8_t(th + 1);
          if (th == 0) s(TCON) |= 0x80;
        }
        continue;
      }
      if (overflow) s(TCON) |= tf;
    }
  }
}

// Interrupt sources in natural priority order: INT0, T0, INT1, T1, serial.
bool Cpu8051::take_interrupt() {
  // External interrupt flags: level mode follows the pin, edge mode latches.
  bool i0 = bus_->int0_asserted(), i1 = bus_->int1_asserted();
  uint8_t &tcon = s(TCON);
  if (tcon & 0x01) {
    if (i0 && !int0_prev_) tcon |= 0x02;
  } else {
    tcon = uint8_t(i0 ? (tcon | 0x02) : (tcon & ~0x02));
  }
  if (tcon & 0x04) {
    if (i1 && !int1_prev_) tcon |= 0x08;
  } else {
    tcon = uint8_t(i1 ? (tcon | 0x08) : (tcon & ~0x08));
  }
  int0_prev_ = i0;
  int1_prev_ = i1;

  uint8_t ie = s(IE), ip = s(IP);
  if (!(ie & 0x80)) return false;
  struct Src {
    uint8_t enable;
    bool pending;
    uint16_t vector;
  };
  const Src src[5] = {{0x01, bool(tcon & 0x02), 0x03},
                      {0x02, bool(tcon & 0x20), 0x0B},
                      {0x04, bool(tcon & 0x08), 0x13},
                      {0x08, bool(tcon & 0x80), 0x1B},
                      {0x10, bool(s(SCON) & 0x03), 0x23}};
  for (int level = 1; level >= 0; --level) {
    // A request is served only if nothing of equal or higher level runs.
    if (in_service_ >> level) continue;
    for (int i = 0; i < 5; ++i) {
      if (!(ie & src[i].enable) || !src[i].pending) continue;
      if (bool(ip & src[i].enable) != bool(level)) continue;
      // Hardware clears edge-triggered external and timer flags on entry.
      if (i == 0 && (tcon & 0x01)) tcon &= ~0x02;
      if (i == 2 && (tcon & 0x04)) tcon &= ~0x08;
      if (i == 1) tcon &= ~0x20;
      if (i == 3) tcon &= ~0x80;
      push(uint8_t(pc));
      push(uint8_t(pc >> 8));
      pc = src[i].vector;
      isr_stack_[isr_depth_ < 2 ? isr_depth_ : 1] = uint8_t(level);
      ++isr_depth_;
      in_service_ |= 1 << level;
      return true;
    }
  }
  return false;
}

void Cpu8051::run(uint64_t n) {
  uint64_t end = cycles + n;
  while (cycles < end) step();
}

int Cpu8051::step() {
  if (take_interrupt()) {
    cycles += 2;
    timers_tick(2);
    return 2;
  }
  uint8_t op = fetch();
  int cyc = kCycles[op];
  uint8_t low = op & 0x0F;
  // Operand helpers for the regular ALU columns (4..F).
  auto src_operand = [&](uint8_t o) -> uint8_t {
    switch (o & 0x0F) {
      case 4: return fetch();               // #data
      case 5: return direct_read(fetch());  // direct
      case 6:
      case 7: return iram[rn(o & 1)];  // @Ri
      default: return rn(o & 7);       // Rn
    }
  };
  switch (op) {
    case 0x00: break;  // NOP
    case 0x01:
    case 0x21:
    case 0x41:
    case 0x61:
    case 0x81:
    case 0xA1:
    case 0xC1:
    case 0xE1: {
      uint8_t lo = fetch();
      pc = uint16_t((pc & 0xF800) | ((op & 0xE0) << 3) | lo);
      break;
    }
    case 0x11:
    case 0x31:
    case 0x51:
    case 0x71:
    case 0x91:
    case 0xB1:
    case 0xD1:
    case 0xF1: {
      uint8_t lo = fetch();
      push(uint8_t(pc));
      push(uint8_t(pc >> 8));
      pc = uint16_t((pc & 0xF800) | ((op & 0xE0) << 3) | lo);
      break;
    }
    case 0x02: {
      uint8_t h = fetch(), l = fetch();
      pc = uint16_t(h << 8 | l);
      break;
    }
    case 0x12: {
      uint8_t h = fetch(), l = fetch();
      push(uint8_t(pc));
      push(uint8_t(pc >> 8));
      pc = uint16_t(h << 8 | l);
      break;
    }
    case 0x22:
    case 0x32: {
      uint8_t h = pop(), l = pop();
      pc = uint16_t(h << 8 | l);
      if (op == 0x32 && isr_depth_ > 0) {  // RETI
        --isr_depth_;
        in_service_ = 0;
        for (int i = 0; i < isr_depth_ && i < 2; ++i) in_service_ |= 1 << isr_stack_[i];
      }
      break;
    }
    case 0x03: {  // RR
      uint8_t a = this->a();
      set_a(uint8_t(a >> 1 | a << 7));
      break;
    }
    case 0x13: {  // RRC
      uint8_t a = this->a();
      bool c = carry();
      set_carry(a & 1);
      set_a(uint8_t(a >> 1 | (c ? 0x80 : 0)));
      break;
    }
    case 0x23: {  // RL
      uint8_t a = this->a();
      set_a(uint8_t(a << 1 | a >> 7));
      break;
    }
    case 0x33: {  // RLC
      uint8_t a = this->a();
      bool c = carry();
      set_carry(a & 0x80);
      set_a(uint8_t(a << 1 | (c ? 1 : 0)));
      break;
    }
    case 0x04: set_a(uint8_t(a() + 1)); break;
    case 0x05: {
      uint8_t d = fetch();
      direct_write(d, uint8_t(direct_read(d) + 1));
      break;
    }
    case 0x06:
    case 0x07: {
      uint8_t &m = iram[rn(op & 1)];
      m = uint8_t(m + 1);
      break;
    }
    case 0x14: set_a(uint8_t(a() - 1)); break;
    case 0x15: {
      uint8_t d = fetch();
      direct_write(d, uint8_t(direct_read(d) - 1));
      break;
    }
    case 0x16:
    case 0x17: {
      uint8_t &m = iram[rn(op & 1)];
      m = uint8_t(m - 1);
      break;
    }
    case 0x10: {  // JBC bit, rel
      uint8_t b = fetch(), r = fetch();
      if (bit_read(b)) {
        bit_write(b, false);
        jump_rel(r);
      }
      break;
    }
    case 0x20: {
      uint8_t b = fetch(), r = fetch();
      if (bit_read(b)) jump_rel(r);
      break;
    }
    case 0x30: {
      uint8_t b = fetch(), r = fetch();
      if (!bit_read(b)) jump_rel(r);
      break;
    }
    case 0x40: {
      uint8_t r = fetch();
      if (carry()) jump_rel(r);
      break;
    }
    case 0x50: {
      uint8_t r = fetch();
      if (!carry()) jump_rel(r);
      break;
    }
    case 0x60: {
      uint8_t r = fetch();
      if (a() == 0) jump_rel(r);
      break;
    }
    case 0x70: {
      uint8_t r = fetch();
      if (a() != 0) jump_rel(r);
      break;
    }
    case 0x80: {
      uint8_t r = fetch();
      jump_rel(r);
      break;
    }
    case 0x24:
    case 0x25:
    case 0x26:
    case 0x27: add(src_operand(op), false); break;
    case 0x34:
    case 0x35:
    case 0x36:
    case 0x37: add(src_operand(op), true); break;
    case 0x94:
    case 0x95:
    case 0x96:
    case 0x97: subb(src_operand(op)); break;
    case 0x42: {
      uint8_t d = fetch();
      direct_write(d, uint8_t(direct_read(d) | a()));
      break;
    }
    case 0x43: {
      uint8_t d = fetch(), v = fetch();
      direct_write(d, uint8_t(direct_read(d) | v));
      break;
    }
    case 0x44:
    case 0x45:
    case 0x46:
    case 0x47: set_a(uint8_t(a() | src_operand(op))); break;
    case 0x52: {
      uint8_t d = fetch();
      direct_write(d, uint8_t(direct_read(d) & a()));
      break;
    }
    case 0x53: {
      uint8_t d = fetch(), v = fetch();
      direct_write(d, uint8_t(direct_read(d) & v));
      break;
    }
    case 0x54:
    case 0x55:
    case 0x56:
    case 0x57: set_a(uint8_t(a() & src_operand(op))); break;
    case 0x62: {
      uint8_t d = fetch();
      direct_write(d, uint8_t(direct_read(d) ^ a()));
      break;
    }
    case 0x63: {
      uint8_t d = fetch(), v = fetch();
      direct_write(d, uint8_t(direct_read(d) ^ v));
      break;
    }
    case 0x64:
    case 0x65:
    case 0x66:
    case 0x67: set_a(uint8_t(a() ^ src_operand(op))); break;
    case 0x72: {
      uint8_t b = fetch();
      set_carry(carry() || bit_read(b));
      break;
    }
    case 0x82: {
      uint8_t b = fetch();
      set_carry(carry() && bit_read(b));
      break;
    }
    case 0xA0: {
      uint8_t b = fetch();
      set_carry(carry() || !bit_read(b));
      break;
    }
    case 0xB0: {
      uint8_t b = fetch();
      set_carry(carry() && !bit_read(b));
      break;
    }
    case 0x73: pc = uint16_t(a() + dptr()); break;  // JMP @A+DPTR
    case 0x74: set_a(fetch()); break;
    case 0x75: {
      uint8_t d = fetch(), v = fetch();
      direct_write(d, v);
      break;
    }
    case 0x76:
    case 0x77: {
      uint8_t v = fetch();
      iram[rn(op & 1)] = v;
      break;
    }
    case 0x83: {  // MOVC A,@A+PC
      uint16_t addr = uint16_t(pc + a());
      set_a(code[addr]);
      break;
    }
    case 0x93: set_a(code[uint16_t(a() + dptr())]); break;  // MOVC A,@A+DPTR
    case 0x84: {                                            // DIV AB
      uint8_t a = this->a(), b = s(B);
      uint8_t &p = s(PSW);
      p &= uint8_t(~(CY | OV));
      if (b == 0)
        p |= OV;
      else {
        set_a(uint8_t(a / b));
        s(B) = uint8_t(a % b);
      }
      break;
    }
    case 0xA4: {  // MUL AB
      unsigned r = unsigned(a()) * s(B);
      set_a(uint8_t(r));
      s(B) = uint8_t(r >> 8);
      uint8_t &p = s(PSW);
      p = uint8_t((p & ~(CY | OV)) | (r > 0xFF ? OV : 0));
      break;
    }
    case 0x85: {
      uint8_t src = fetch(), dst = fetch();
      direct_write(dst, direct_read(src));
      break;
    }
    case 0x86:
    case 0x87: {
      uint8_t d = fetch();
      direct_write(d, iram[rn(op & 1)]);
      break;
    }
    case 0x90: {
      uint8_t h = fetch(), l = fetch();
      s(DPH) = h;
      s(DPL) = l;
      break;
    }
    case 0x92: {
      uint8_t b = fetch();
      bit_write(b, carry());
      break;
    }
    case 0xA2: {
      uint8_t b = fetch();
      set_carry(bit_read(b));
      break;
    }
    case 0xA3: {
      uint16_t d = uint16_t(dptr() + 1);
      s(DPH) = uint8_t(d >> 8);
      s(DPL) = uint8_t(d);
      break;
    }
    case 0xA5: halted_on_invalid = true; break;  // undefined opcode: treat as NOP, flag it
    case 0xA6:
    case 0xA7: {
      uint8_t d = fetch();
      iram[rn(op & 1)] = direct_read(d);
      break;
    }
    case 0xB2: {
      uint8_t b = fetch();
      bit_write(b, !bit_read(b));
      break;
    }
    case 0xB3: set_carry(!carry()); break;
    case 0xB4:
    case 0xB5:
    case 0xB6:
    case 0xB7:
    case 0xB8:
    case 0xB9:
    case 0xBA:
    case 0xBB:
    case 0xBC:
    case 0xBD:
    case 0xBE:
    case 0xBF: {  // CJNE
      uint8_t lhs, rhs;
      if (op == 0xB4) {
        lhs = a();
        rhs = fetch();
      } else if (op == 0xB5) {
        lhs = a();
        rhs = direct_read(fetch());
      } else if (op < 0xB8) {
        lhs = iram[rn(op & 1)];
        rhs = fetch();
      } else {
        lhs = rn(op & 7);
        rhs = fetch();
      }
      uint8_t r = fetch();
      set_carry(lhs < rhs);
      if (lhs != rhs) jump_rel(r);
      break;
    }
    case 0xC0: {
      uint8_t d = fetch();
      push(direct_read(d));
      break;
    }
    case 0xD0: {
      uint8_t d = fetch();
      direct_write(d, pop());
      break;
    }
    case 0xC2: bit_write(fetch(), false); break;
    case 0xC3: set_carry(false); break;
    case 0xD2: bit_write(fetch(), true); break;
    case 0xD3: set_carry(true); break;
    case 0xC4: {
      uint8_t a = this->a();
      set_a(uint8_t(a << 4 | a >> 4));
      break;
    }
    case 0xC5: {
      uint8_t d = fetch();
      uint8_t t = direct_read(d);
      direct_write(d, a());
      set_a(t);
      break;
    }
    case 0xC6:
    case 0xC7: {
      uint8_t &m = iram[rn(op & 1)];
      uint8_t t = m;
      m = a();
      set_a(t);
      break;
    }
    case 0xD4: {  // DA A
      unsigned a = this->a();
      bool cy = carry();
      if ((a & 0x0F) > 9 || (s(PSW) & AC)) {
        a += 6;
        if (a > 0xFF) cy = true;
      }
      if (((a >> 4) & 0x0F) > 9 || cy) {
        a += 0x60;
        if (a > 0xFF) cy = true;
      }
      set_a(uint8_t(a));
      set_carry(cy);
      break;
    }
    case 0xD5: {  // DJNZ direct, rel
      uint8_t d = fetch(), r = fetch();
      uint8_t v = uint8_t(direct_read(d) - 1);
      direct_write(d, v);
      if (v) jump_rel(r);
      break;
    }
    case 0xD6:
    case 0xD7: {  // XCHD
      uint8_t &m = iram[rn(op & 1)];
      uint8_t a = this->a();
      set_a(uint8_t((a & 0xF0) | (m & 0x0F)));
      m = uint8_t((m & 0xF0) | (a & 0x0F));
      break;
    }
    case 0xE0: set_a(xread(dptr())); break;
    case 0xE2:
    case 0xE3: set_a(xread(uint16_t(s(P2) << 8 | rn(op & 1)))); break;
    case 0xF0: xwrite(dptr(), a()); break;
    case 0xF2:
    case 0xF3: xwrite(uint16_t(s(P2) << 8 | rn(op & 1)), a()); break;
    case 0xE4: set_a(0); break;
    case 0xE5: set_a(direct_read(fetch())); break;
    case 0xE6:
    case 0xE7: set_a(iram[rn(op & 1)]); break;
    case 0xF4: set_a(uint8_t(~a())); break;
    case 0xF5: direct_write(fetch(), a()); break;
    case 0xF6:
    case 0xF7: iram[rn(op & 1)] = a(); break;
    default:
      if (low >= 8) {
        uint8_t n = op & 7;
        switch (op & 0xF0) {
          case 0x00: rn(n) = uint8_t(rn(n) + 1); break;
          case 0x10: rn(n) = uint8_t(rn(n) - 1); break;
          case 0x20: add(rn(n), false); break;
          case 0x30: add(rn(n), true); break;
          case 0x40: set_a(uint8_t(a() | rn(n))); break;
          case 0x50: set_a(uint8_t(a() & rn(n))); break;
          case 0x60: set_a(uint8_t(a() ^ rn(n))); break;
          case 0x70: rn(n) = fetch(); break;
          case 0x80: direct_write(fetch(), rn(n)); break;
          case 0x90: subb(rn(n)); break;
          case 0xA0: rn(n) = direct_read(fetch()); break;
          case 0xC0: {
            uint8_t t = rn(n);
            rn(n) = a();
            set_a(t);
            break;
          }
          case 0xD0: {
            uint8_t r = fetch();
            rn(n) = uint8_t(rn(n) - 1);
            if (rn(n)) jump_rel(r);
            break;
          }
          case 0xE0: set_a(rn(n)); break;
          case 0xF0: rn(n) = a(); break;
          default: halted_on_invalid = true; break;
        }
      } else {
        halted_on_invalid = true;
      }
      break;
  }
  cycles += uint64_t(cyc);
  ++instructions;
  timers_tick(cyc);
  return cyc;
}

}  // namespace capgraph::emu
