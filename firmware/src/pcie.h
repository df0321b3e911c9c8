/* pcie.h — PCIe power and link, single and streamed TLPs through the chip's
 * TLP engine. Depends on deadline.h. */
#ifndef FW_PCIE_H
#define FW_PCIE_H

#include <stdint.h>

#include "bridge_protocol.h"

extern __xdata uint8_t pcie_link_up; /* 1 after a power-on that trained */

void pcie_init(void);
void pcie_power_on(void);
void pcie_power_off(void);

/* Runs the TLP in tlp_req (BRIDGE_TLP layout, flags already checked);
 * fills tlp_result. */
void pcie_tlp_run(__xdata uint8_t *tlp_req);
extern __xdata uint8_t tlp_result[BRIDGE_TLP_RESULT_SIZE];

/* Streamed memory TLPs: count dwords at addr, addr+4, ... (inside one 4 GiB
 * window), data as LE dwords at buf (written from it, or read into it).
 * Returns how many completed; stream_err/stream_cpl say why it stopped. */
uint16_t pcie_stream_run(uint8_t write, uint8_t flags, uint32_t addr_lo, uint32_t addr_hi,
                         uint16_t count, __xdata uint8_t *buf);
extern __xdata uint8_t stream_err, stream_cpl;

#endif
