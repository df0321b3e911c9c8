// Tests of the 8051 core, one group of instructions at a time, with
// hand-assembled programs (encodings from the MCS-51 user's manual).
#include "cpu8051.h"

#include <doctest/doctest.h>

#include <vector>

using capgraph::emu::Cpu8051;

namespace {

struct RamBus : Cpu8051::Bus {
  std::vector<uint8_t> x = std::vector<uint8_t>(0x10000, 0);
  std::vector<uint8_t> x1 = std::vector<uint8_t>(0x10000, 0);
  bool int0 = false;
  uint8_t xdata_read(uint16_t a, uint8_t bank) override { return bank ? x1[a] : x[a]; }
  void xdata_write(uint16_t a, uint8_t bank, uint8_t v) override { (bank ? x1 : x)[a] = v; }
  bool int0_asserted() override { return int0; }
};

struct Rig {
  RamBus bus;
  Cpu8051 cpu{&bus};
  explicit Rig(std::vector<uint8_t> prog) { cpu.load_code(prog); }
  void steps(int n) {
    for (int i = 0; i < n; ++i) cpu.step();
  }
  uint8_t psw() { return cpu.psw(); }
};

constexpr uint8_t CY = 0x80, AC = 0x40, OV = 0x04;

}  // namespace

TEST_CASE("data transfer: MOV in every addressing mode") {
  Rig r({
      0x74, 0x5A,        // MOV A,#5Ah
      0xF5, 0x30,        // MOV 30h,A
      0x78, 0x30,        // MOV R0,#30h
      0xE6,              // MOV A,@R0
      0x85, 0x30, 0x31,  // MOV 31h,30h  (src, dst)
      0x79, 0x40,        // MOV R1,#40h
      0x77, 0x99,        // MOV @R1,#99h
      0xA8, 0x31,        // MOV R0,31h
      0x88, 0x32,        // MOV 32h,R0
      0x86, 0x33,        // MOV 33h,@R0 (R0 = 5A -> iram[5A])
      0xA7, 0x31,        // MOV @R1,31h
      0x75, 0xF0, 0x07,  // MOV B,#7
      0x90, 0x12, 0x34,  // MOV DPTR,#1234h
  });
  r.cpu.iram[0x5A] = 0x77;
  r.steps(13);
  CHECK(r.cpu.a() == 0x5A);
  CHECK(r.cpu.iram[0x30] == 0x5A);
  CHECK(r.cpu.iram[0x31] == 0x5A);
  CHECK(r.cpu.iram[0x32] == 0x5A);
  CHECK(r.cpu.iram[0x33] == 0x77);
  CHECK(r.cpu.iram[0x40] == 0x5A);
  CHECK(r.cpu.sfr[Cpu8051::B - 0x80] == 7);
  CHECK(r.cpu.dptr() == 0x1234);
}

TEST_CASE("data transfer: MOVX, MOVC, PUSH/POP, XCH, XCHD, DPX bank") {
  Rig r({
      0x90, 0x20, 0x00,  // MOV DPTR,#2000h
      0x74, 0xAB,        // MOV A,#ABh
      0xF0,              // MOVX @DPTR,A
      0xA3,              // INC DPTR
      0x75, 0xA0, 0x30,  // MOV P2,#30h
      0x78, 0x10,        // MOV R0,#10h
      0xF2,              // MOVX @R0,A      -> x[3010]
      0x90, 0x20, 0x00,  // MOV DPTR,#2000h
      0xE4,              // CLR A
      0xE0,              // MOVX A,@DPTR    -> AB
      0xC0, 0xE0,        // PUSH ACC
      0x74, 0x02,        // MOV A,#2
      0x90, 0x01, 0x00,  // MOV DPTR,#0100h
      0x93,              // MOVC A,@A+DPTR  -> code[0102]
      0xD0, 0x40,        // POP 40h
      0x75, 0x41, 0x3C,  // MOV 41h,#3Ch
      0xC5, 0x41,        // XCH A,41h
      0x79, 0x41,        // MOV R1,#41h
      0x74, 0x05,        // MOV A,#05h
      0xD7,              // XCHD A,@R1
      0x75, 0x93, 0x01,  // MOV DPX,#1
      0x90, 0x00, 0x10,  // MOV DPTR,#0010h
      0xF0,              // MOVX @DPTR,A (bank 1)
  });
  r.cpu.code[0x102] = 0x66;
  r.steps(23);
  CHECK(r.bus.x[0x2000] == 0xAB);
  CHECK(r.bus.x[0x3010] == 0xAB);
  CHECK(r.cpu.iram[0x40] == 0xAB);  // pushed A, popped
  CHECK(r.cpu.iram[0x41] == 0x65);  // XCH put 66 there, XCHD swapped low nibbles with 05
  CHECK(r.cpu.a() == 0x06);
  CHECK(r.bus.x1[0x0010] == 0x06);
  CHECK(r.bus.x[0x0010] == 0x00);
  CHECK(r.cpu.sfr[Cpu8051::SP - 0x80] == 0x07);
}

TEST_CASE("arithmetic: ADD/ADDC/SUBB flags") {
  Rig r({
      0x74, 0x7F, 0x24, 0x01,        // MOV A,#7F; ADD A,#1 -> 80, OV, AC
      0xF5, 0x30,                    // MOV 30h,A
      0x74, 0xFF, 0x24, 0x01,        // MOV A,#FF; ADD A,#1 -> 00, CY, AC
      0x34, 0x10,                    // ADDC A,#10 -> 11
      0xD3,                          // SETB C
      0x74, 0x10, 0x94, 0x01,        // MOV A,#10; SUBB A,#1 -> 0E (borrow from nibble)
      0xC3, 0x74, 0x00, 0x94, 0x01,  // CLR C; MOV A,#0; SUBB A,#1 -> FF, CY
      0xC3, 0x74, 0x80, 0x94, 0x01,  // CLR C; A=80; SUBB 1 -> 7F, OV
  });
  r.steps(2);
  CHECK(r.cpu.a() == 0x80);
  CHECK((r.psw() & (CY | AC | OV)) == (AC | OV));
  r.steps(3);
  CHECK(r.cpu.a() == 0x00);
  CHECK((r.psw() & (CY | AC | OV)) == (CY | AC));
  r.steps(1);
  CHECK(r.cpu.a() == 0x11);
  CHECK((r.psw() & CY) == 0);
  r.steps(3);
  CHECK(r.cpu.a() == 0x0E);
  CHECK((r.psw() & (CY | AC)) == AC);
  r.steps(3);
  CHECK(r.cpu.a() == 0xFF);
  CHECK((r.psw() & CY) == CY);
  r.steps(3);
  CHECK(r.cpu.a() == 0x7F);
  CHECK((r.psw() & (CY | OV)) == OV);
}

TEST_CASE("arithmetic: INC/DEC, MUL, DIV, DA, INC DPTR, parity") {
  Rig r({
      0x74, 0xFF, 0x04,                    // A=FF; INC A -> 00
      0x78, 0x00, 0x18,                    // R0=0; DEC R0 -> FF
      0x74, 0x10, 0x75, 0xF0, 0x20, 0xA4,  // A=10,B=20; MUL AB -> 0200: A=00 B=02 OV
      0x74, 0xFB, 0x75, 0xF0, 0x10, 0x84,  // A=FB,B=10; DIV AB -> A=0F B=0B
      0x74, 0x19, 0x24, 0x28, 0xD4,        // 19+28 = 41 (BCD) -> DA -> 47
      0x90, 0x12, 0xFF, 0xA3,              // DPTR=12FF; INC DPTR -> 1300
      0x74, 0x07,                          // A=07 -> odd parity
      0x75, 0xF0, 0x00, 0x84,              // B=0; DIV -> OV
  });
  r.steps(2);
  CHECK(r.cpu.a() == 0);
  r.steps(2);
  CHECK(r.cpu.reg(0) == 0xFF);
  r.steps(3);
  CHECK(r.cpu.a() == 0x00);
  CHECK(r.cpu.sfr[Cpu8051::B - 0x80] == 0x02);
  CHECK((r.psw() & OV) == OV);
  r.steps(3);
  CHECK(r.cpu.a() == 0x0F);
  CHECK(r.cpu.sfr[Cpu8051::B - 0x80] == 0x0B);
  CHECK((r.psw() & OV) == 0);
  r.steps(3);
  CHECK(r.cpu.a() == 0x47);
  r.steps(2);
  CHECK(r.cpu.dptr() == 0x1300);
  r.steps(1);
  CHECK((r.psw() & 1) == 1);
  r.steps(2);
  CHECK((r.psw() & OV) == OV);
}

TEST_CASE("logic: ANL/ORL/XRL, CLR/CPL, rotates, SWAP") {
  Rig r({
      0x74, 0xF0, 0x44, 0x0C,        // A=F0; ORL A,#0C -> FC
      0x54, 0x3F,                    // ANL A,#3F -> 3C
      0x64, 0xFF,                    // XRL A,#FF -> C3
      0xF5, 0x30, 0x53, 0x30, 0x0F,  // 30h=C3; ANL 30h,#0F -> 03
      0x43, 0x30, 0x80,              // ORL 30h,#80 -> 83
      0x62, 0x30,                    // XRL 30h,A -> 83^C3 = 40
      0xF4,                          // CPL A -> 3C
      0x23,                          // RL A -> 78
      0x03,                          // RR A -> 3C
      0xC3, 0x33,                    // CLR C; RLC A -> 78, C=0
      0xD3, 0x13,                    // SETB C; RRC A -> BC, C=0
      0xC4,                          // SWAP A -> CB
      0xE4,                          // CLR A
  });
  r.steps(2);
  CHECK(r.cpu.a() == 0xFC);
  r.steps(1);
  CHECK(r.cpu.a() == 0x3C);
  r.steps(1);
  CHECK(r.cpu.a() == 0xC3);
  r.steps(2);
  CHECK(r.cpu.iram[0x30] == 0x03);
  r.steps(1);
  CHECK(r.cpu.iram[0x30] == 0x83);
  r.steps(1);
  CHECK(r.cpu.iram[0x30] == 0x40);
  r.steps(1);
  CHECK(r.cpu.a() == 0x3C);
  r.steps(1);
  CHECK(r.cpu.a() == 0x78);
  r.steps(1);
  CHECK(r.cpu.a() == 0x3C);
  r.steps(2);
  CHECK(r.cpu.a() == 0x78);
  CHECK((r.psw() & CY) == 0);
  r.steps(2);
  CHECK(r.cpu.a() == 0xBC);
  CHECK((r.psw() & CY) == 0);
  r.steps(1);
  CHECK(r.cpu.a() == 0xCB);
  r.steps(1);
  CHECK(r.cpu.a() == 0x00);
}

TEST_CASE("boolean: bit ops on RAM and SFR bits, C logic") {
  Rig r({
      0xD2, 0x00,  // SETB 00h  (20h.0)
      0xD2, 0x0F,  // SETB 0Fh  (21h.7)
      0xB2, 0x00,  // CPL 00h -> 0
      0xA2, 0x0F,  // MOV C,0Fh -> 1
      0x92, 0xE7,  // MOV ACC.7,C
      0x82, 0x00,  // ANL C,00h -> 0
      0xA0, 0x00,  // ORL C,/00h -> 1
      0xB0, 0x0F,  // ANL C,/0Fh -> 0
      0x72, 0x0F,  // ORL C,0Fh -> 1
      0xB3,        // CPL C -> 0
      0xC2, 0x0F,  // CLR 0Fh
  });
  r.steps(3);
  CHECK(r.cpu.iram[0x20] == 0x00);
  CHECK(r.cpu.iram[0x21] == 0x80);
  r.steps(2);
  CHECK(r.cpu.a() == 0x80);
  r.steps(1);
  CHECK((r.psw() & CY) == 0);
  r.steps(1);
  CHECK((r.psw() & CY) == CY);
  r.steps(1);
  CHECK((r.psw() & CY) == 0);
  r.steps(1);
  CHECK((r.psw() & CY) == CY);
  r.steps(1);
  CHECK((r.psw() & CY) == 0);
  r.steps(1);
  CHECK(r.cpu.iram[0x21] == 0x00);
}

TEST_CASE("branches: jumps, calls, conditional and compare-jumps") {
  // 0000: LJMP 0010
  // 0010: ACALL 0030 ; 0012: LCALL 0040 ; 0015: SJMP +2 ; 0017: NOP NOP ; 0019: ...
  std::vector<uint8_t> p(0x100, 0x00);
  auto at = [&](size_t a, std::vector<uint8_t> b) { std::copy(b.begin(), b.end(), p.begin() + a); };
  at(0x00, {0x02, 0x00, 0x10});
  at(0x10, {0x11, 0x30, 0x12, 0x00, 0x40, 0x80, 0x02, 0x05, 0x05,  // SJMP skips two INC 05h
            0x74, 0x00, 0x60, 0x02, 0x05, 0x06,                    // A=0; JZ +2 skips INC 06
            0xB4, 0x01, 0x02, 0x05, 0x07,                          // CJNE A,#1 jumps: skip INC 07
            0x7A, 0x03, 0x05, 0x08, 0xDA, 0xFC,                    // R2=3; loop: INC 08; DJNZ R2
            0x74, 0x04, 0x90, 0x00, 0x60, 0x73});                  // A=4; DPTR=0060; JMP @A+DPTR
  at(0x30, {0x05, 0x09, 0x22});                                    // INC 09h; RET
  at(0x40, {0x05, 0x0A, 0x22});                                    // INC 0Ah; RET
  at(0x64, {0x20, 0x00, 0x02, 0x05, 0x0B,              // JB 00h (clear): no jump, INC 0B
            0xD2, 0x00, 0x10, 0x00, 0x02, 0x05, 0x0C,  // SETB 00; JBC 00 jumps, clears
            0x80, 0xFE});                              // SJMP $
  Rig r(p);
  r.cpu.sfr[Cpu8051::SP - 0x80] = 0x60;  // keep the stack off the counters at 05h-0Ch
  r.steps(40);
  CHECK(r.cpu.iram[0x05] == 0);
  CHECK(r.cpu.iram[0x06] == 0);
  CHECK(r.cpu.iram[0x07] == 0);
  CHECK(r.cpu.iram[0x08] == 3);
  CHECK(r.cpu.iram[0x09] == 1);
  CHECK(r.cpu.iram[0x0A] == 1);
  CHECK(r.cpu.iram[0x0B] == 1);
  CHECK(r.cpu.iram[0x0C] == 0);
  CHECK(r.cpu.iram[0x20] == 0);  // JBC cleared the bit
  CHECK(r.cpu.pc == 0x70);
  CHECK(r.cpu.sfr[Cpu8051::SP - 0x80] == 0x60);
  CHECK((r.psw() & CY) == CY);  // CJNE A(0) < 1 sets C
}

TEST_CASE("register banks follow PSW.RS") {
  Rig r({0x78, 0x11,        // R0 = 11 (bank 0)
         0x75, 0xD0, 0x18,  // PSW = bank 3
         0x78, 0x33,        // R0 = 33 (bank 3 -> iram[18h])
         0xE8});            // MOV A,R0
  r.steps(4);
  CHECK(r.cpu.iram[0x00] == 0x11);
  CHECK(r.cpu.iram[0x18] == 0x33);
  CHECK(r.cpu.a() == 0x33);
}

TEST_CASE("interrupts: level INT0, RETI, priority, timer 0") {
  std::vector<uint8_t> p(0x100, 0x00);
  auto at = [&](size_t a, std::vector<uint8_t> b) { std::copy(b.begin(), b.end(), p.begin() + a); };
  at(0x00, {0x02, 0x00, 0x40});
  at(0x03, {0x05, 0x30, 0x32});                  // INT0: INC 30h; RETI
  at(0x0B, {0x05, 0x31, 0x32});                  // T0:   INC 31h; RETI
  at(0x40, {0x75, 0x89, 0x01,                    // TMOD = timer 0 mode 1
            0x75, 0x8C, 0xFF, 0x75, 0x8A, 0xF0,  // TH0:TL0 = FFF0
            0x75, 0xA8, 0x83,                    // IE = EA | ET0 | EX0
            0xD2, 0x8C,                          // SETB TR0
            0x80, 0xFE});                        // SJMP $
  Rig r(p);
  r.steps(6);
  CHECK(r.cpu.iram[0x30] == 0);
  r.bus.int0 = true;
  r.steps(3);  // vector + INC + RETI
  CHECK(r.cpu.iram[0x30] == 1);
  r.bus.int0 = false;
  r.cpu.run(64);
  CHECK(r.cpu.iram[0x31] == 1);  // timer 0 overflowed once, TF0 cleared on entry
  CHECK(r.cpu.iram[0x30] == 1);
  CHECK(r.cpu.sfr[Cpu8051::SP - 0x80] == 0x07);
  CHECK(r.cpu.pc >= 0x4E);
  CHECK_FALSE(r.cpu.halted_on_invalid);
}

TEST_CASE("every opcode decodes; only A5 is flagged undefined") {
  for (int op = 0; op < 256; ++op) {
    RamBus bus;
    Cpu8051 cpu(&bus);
    cpu.code[0] = uint8_t(op);
    cpu.step();
    CHECK_MESSAGE(cpu.halted_on_invalid == (op == 0xA5), "opcode " << op);
  }
}

TEST_CASE("machine cycles per instruction") {
  Rig r({0x00, 0x02, 0x00, 0x05, 0x00, 0x00, 0xA4, 0xE0});  // NOP; LJMP 5; ..; MUL; MOVX
  r.cpu.step();
  CHECK(r.cpu.cycles == 1);
  r.cpu.step();
  CHECK(r.cpu.cycles == 3);
  r.cpu.step();  // 0005: NOP
  r.cpu.step();  // MUL
  CHECK(r.cpu.cycles == 8);
  r.cpu.step();  // MOVX
  CHECK(r.cpu.cycles == 10);
}
