/*
 * deadline.c — timer-0 deadlines and sleeps. Every poll in the firmware
 * pairs one of these with an iteration cap, so a silent timer cannot hang it.
 *
 * Sources: tinygrad/asm2464pd-firmware handmade/src/main.c (timer 0 at
 * 0xCC10-0xCC13: CC10[2:0] = 4 gives 0.5 ms ticks, CC11 bit 0 enable, bit 1
 * expired, bit 2 clear; threshold big-endian in CC12/CC13).
 */
#include "deadline.h"

#include "regs.h"

#define TIMER0_MODE_HALF_MS 0x04

void deadline_start(uint16_t half_ms) {
  REG_TIMER0_CSR = TIMER_CSR_CLEAR;
  REG_TIMER0_CSR = TIMER_CSR_EXPIRED;
  REG_TIMER0_DIV = (REG_TIMER0_DIV & 0xF8) | TIMER0_MODE_HALF_MS;
  REG_TIMER0_THRESHOLD_HI = (uint8_t)(half_ms >> 8);
  REG_TIMER0_THRESHOLD_LO = (uint8_t)half_ms;
  REG_TIMER0_CSR = TIMER_CSR_ENABLE;
}

uint8_t deadline_passed(void) { return (REG_TIMER0_CSR & TIMER_CSR_EXPIRED) != 0; }

void sleep_ms(uint16_t ms) {
  uint16_t cap = 0;
  deadline_start(ms * 2);
  /* Cap: if the timer never fires we still return (about 64k reads). */
  while (!deadline_passed() && --cap) {
  }
}
