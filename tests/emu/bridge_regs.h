// The bridge's registers for the emulator: firmware/src/regs.h, the one definition (its sources
// are cited there), with each register standing for its XDATA address (the firmware reads and
// writes the byte at it) and each buffer for its first address.
#pragma once
#include <cstdint>

#define XREG(addr) uint16_t(addr)
#define XBUF(addr) uint16_t(addr)
#include "regs.h"
