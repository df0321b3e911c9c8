// Unit tests of the device models on their own (no firmware).
#include <doctest/doctest.h>

#include "asm2464_model.h"
#include "pcie_endpoint.h"

using namespace capgraph::emu;

TEST_CASE("SPI flash: erase, program only clears bits, WEL gating, busy, OTP") {
  SpiFlash f(64 * 1024);
  uint8_t buf[4096] = {};
  buf[0] = 0x0F;
  f.transact(0x02, 0x100, 1, buf, 0);  // no WREN: ignored
  CHECK(f.data[0x100] == 0xFF);
  f.transact(0x06, 0, 0, buf, 0);
  f.transact(0x02, 0x100, 1, buf, 0);
  CHECK(f.data[0x100] == 0x0F);
  f.transact(0x05, 0, 1, buf, 1);
  CHECK((buf[0] & 1) == 1);  // still programming
  f.transact(0x05, 0, 1, buf, f.busy_until);
  CHECK(buf[0] == 0);
  buf[0] = 0xF0;
  f.transact(0x06, 0, 0, buf, f.busy_until);
  f.transact(0x02, 0x100, 1, buf, f.busy_until);
  CHECK(f.data[0x100] == 0x00);  // 0x0F & 0xF0
  f.transact(0x06, 0, 0, buf, f.busy_until);
  f.transact(0x20, 0x123, 0, buf, f.busy_until);
  CHECK(f.data[0x100] == 0xFF);
  f.set_otp_serial(0x0BADCAFE);
  f.transact(0xB1, 0, 0, buf, f.busy_until);
  f.transact(0x03, 0, 5, buf, f.busy_until);
  CHECK(buf[0] == 0x0B);
  CHECK(buf[3] == 0xFE);
  CHECK(buf[4] == uint8_t(0x0B ^ 0xAD ^ 0xCA ^ 0xFE));
  f.transact(0xC1, 0, 0, buf, f.busy_until);
  f.transact(0x03, 0, 1, buf, f.busy_until);
  CHECK(buf[0] == 0xFF);
}

TEST_CASE("SPI flash: page program wraps inside its page") {
  SpiFlash f(64 * 1024);
  uint8_t buf[4] = {1, 2, 3, 4};
  f.transact(0x06, 0, 0, buf, 0);
  f.transact(0x02, 0x1FE, 4, buf, 0);
  CHECK(f.data[0x1FE] == 1);
  CHECK(f.data[0x1FF] == 2);
  CHECK(f.data[0x100] == 3);
  CHECK(f.data[0x200] == 0xFF);
}

TEST_CASE("PCIe endpoint: config space, BAR sizing and decode, UR") {
  PcieEndpoint ep;
  CHECK(ep.config_read(0) == 0x74801002u);
  ep.config_write(0x10, 0xFFFFFFFFu, 0xF);
  ep.config_write(0x14, 0xFFFFFFFFu, 0xF);
  CHECK(ep.config_read(0x10) == 0xF000000Cu);  // 256 MiB, 64-bit, prefetchable
  CHECK(ep.config_read(0x14) == 0xFFFFFFFFu);
  ep.config_write(0x10, 0x00000000u, 0xF);
  ep.config_write(0x14, 0x00000001u, 0xF);     // 0x1_0000_0000
  bool claimed = true;
  ep.mem_read32(0x100000000ull, &claimed);
  CHECK_FALSE(claimed);                        // memory space not enabled yet
  ep.config_write(0x04, 0x6, 0xF);
  ep.mem_write32(0x100000010ull, 0xDEADBEEF, 0xF);
  CHECK(ep.mem_read32(0x100000010ull, &claimed) == 0xDEADBEEF);
  CHECK(claimed);
  TlpRequest r;
  r.fmt_type = 0x04;
  r.addr = 1u << 19;  // device 1
  CHECK(ep.handle(r).status == 1);
  ep.hang = true;
  CHECK_FALSE(ep.handle(r).completes);
}
