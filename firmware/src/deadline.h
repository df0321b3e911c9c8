/* deadline.h — bounded waits: deadlines and sleeps on hardware timer 0
 * (0.5 ms ticks). Depends on regs.h only. */
#ifndef FW_DEADLINE_H
#define FW_DEADLINE_H

#include <stdint.h>

void deadline_start(uint16_t half_ms);
uint8_t deadline_passed(void);
void sleep_ms(uint16_t ms);

#endif
