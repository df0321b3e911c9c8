// Unit tests of the device models on their own (no firmware).
#include <doctest/doctest.h>

#include <map>

#include "asm2464_model.h"
#include "pcie_endpoint.h"
#include "pcie_fabric.h"

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
  CHECK(ep.config_read(0) == 0x744C1002u);
  ep.config_write(0x10, 0xFFFFFFFFu, 0xF);
  ep.config_write(0x14, 0xFFFFFFFFu, 0xF);
  CHECK(ep.config_read(0x10) == 0xF000000Cu);  // 256 MiB, 64-bit, prefetchable
  CHECK(ep.config_read(0x14) == 0xFFFFFFFFu);
  ep.config_write(0x10, 0x00000000u, 0xF);
  ep.config_write(0x14, 0x00000001u, 0xF);  // 0x1_0000_0000
  bool claimed = true;
  ep.mem_read32(0x100000000ull, &claimed);
  CHECK_FALSE(claimed);  // memory space not enabled yet
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

// PCIe RX PHY tuning: the sequence the model expects, checked against facts
// read off the source independently of how regs.h encodes them
// (tinygrad/asm2464pd-firmware handmade/src/pcie_tuning.h), and the model
// gating link-up on it.
namespace {
void apply_tuning(Asm2464 &dev, size_t skip = SIZE_MAX, size_t swap = SIZE_MAX) {
  auto seq = Asm2464::phy_tuning_sequence();
  if (swap < seq.size() - 1) std::swap(seq[swap], seq[swap + 1]);
  for (size_t i = 0; i < seq.size(); ++i)
    if (i != skip) dev.xdata_write(seq[i].first, 1, seq[i].second);
}
// Rails on, PERST# released, training started; true if L0 after 5 ms.
bool link_trains(Asm2464 &dev) {
  dev.xdata_write(0xC656, 0, 0x20);
  dev.xdata_write(0xC659, 0, 0x01);
  dev.xdata_write(0xB480, 0, 0x00);
  dev.xdata_write(0xE764, 0, 0x1C);
  dev.cpu.cycles += 5 * kCyclesPerMs;
  return dev.xdata_read(0xB450, 0) == 0x78;
}
}  // namespace

TEST_CASE("PHY tuning sequence: what pcie_tuning.h writes, in its order") {
  const auto &seq = Asm2464::phy_tuning_sequence();
  CHECK(seq.size() == 340);  // 4 slices x (11 + 4 + 5 + 27 + 23 + 1 + 14)
  CHECK(seq.front() == std::make_pair(uint16_t(0x789B), uint8_t(0x10)));
  CHECK(seq[2] == std::make_pair(uint16_t(0x6000), uint8_t(0xC0)));   // companion after lane 0's 9B
  CHECK(seq[11] == std::make_pair(uint16_t(0x799B), uint8_t(0x10)));  // then slice 1
  CHECK(seq.back() == std::make_pair(uint16_t(0x7B3D), uint8_t(0x5A)));
  std::map<uint16_t, uint8_t> last;
  for (const auto &[a, v] : seq) last[a] = v;
  CHECK(last[0x780B] == 0x56);  // tail_0b: lanes 0/1 0x56, lanes 2/3 0x5C
  CHECK(last[0x790B] == 0x56);
  CHECK(last[0x7A0B] == 0x5C);
  CHECK(last[0x7B0B] == 0x5C);
  CHECK(last[0x7885] == 0xA6);
  CHECK(last[0x7846] == 0x04);  // 0x74, 0x64, 0x44, 0x04 in that order
  CHECK(last[0x6026] == 0xD1);  // the tail overrides the profile's 0xDF
  CHECK(last[0x7B37] == 0x4F);
  CHECK(last[0x6C2B] == 0xC9);
  CHECK(last[0x6025] == 0x41);  // leaves TLP routing (bit 7) off
}

TEST_CASE("PCIe model: no link without the PHY tuning, in order and complete") {
  {
    Asm2464 dev;
    CHECK_FALSE(link_trains(dev));
    apply_tuning(dev);
    CHECK(dev.phy_tuning_applied());
    CHECK(link_trains(dev));
  }
  {
    Asm2464 dev;
    apply_tuning(dev, 100);  // one write missing
    CHECK_FALSE(dev.phy_tuning_applied());
    CHECK_FALSE(link_trains(dev));
  }
  {
    Asm2464 dev;
    apply_tuning(dev, SIZE_MAX, 200);  // two writes swapped
    CHECK(dev.phy_tuning_broken());
    CHECK_FALSE(link_trains(dev));
  }
  {
    Asm2464 dev;
    dev.xdata_write(0x7900, 1, 0x12);  // a stray PHY write first
    apply_tuning(dev);
    CHECK_FALSE(dev.phy_tuning_applied());
  }
}

TEST_CASE("PCIe model: TLPs reach the device only with bank-1 0x6025 bit 7 set") {
  Asm2464 dev;
  apply_tuning(dev);
  REQUIRE(link_trains(dev));
  auto config_read = [&] {
    dev.xdata_write(0xB210, 0, 0x04);  // CfgRd0 of 0:0.0 reg 0
    dev.xdata_write(0xB217, 0, 0x0F);
    for (int i = 0; i < 8; ++i) dev.xdata_write(uint16_t(0xB218 + i), 0, 0);
    dev.xdata_write(0xB296, 0, 0x03);
    dev.xdata_write(0xB254, 0, 0x0F);
    dev.cpu.cycles += kCyclesPerMs;
    return dev.xdata_read(0xB296, 0) & 0x03;
  };
  CHECK(config_read() == 0x00);  // lost: no completion ever
  dev.xdata_write(0x6025, 1, 0x41 | 0x80);
  CHECK(config_read() == 0x02);  // completes
}

TEST_CASE(
    "PCIe fabric: type 0 reaches only bus 0; type 1 follows the bus numbers; windows gate memory") {
  PcieEndpoint ep;
  PcieFabric f(ep, 4);
  auto cfg = [&](uint8_t fmt, uint8_t bus, uint16_t reg, uint32_t data = 0) {
    TlpRequest r;
    r.fmt_type = fmt;
    r.addr = uint32_t(bus) << 24 | reg;
    r.data = data;
    return f.handle(r);
  };
  CHECK(cfg(0x04, 4, 0).status == 1);          // type 0 to bus 4: UR
  CHECK(cfg(0x05, 4, 0).status == 1);          // type 1 before any bus numbers: UR
  CHECK(cfg(0x04, 0, 0).data == 0x01001B21u);  // the first bridge
  for (uint8_t b = 0; b < 4; ++b) {
    const uint8_t fmt = b ? 0x45 : 0x44;
    CHECK(cfg(fmt, b, 0x18, uint32_t(b) | uint32_t(b + 1) << 8 | 4u << 16).status == 0);
  }
  CHECK(cfg(0x05, 4, 0).data == 0x744C1002u);  // the GPU, reached as type 0
  CHECK(cfg(0x05, 5, 0).status == 1);          // past the subordinate bus
  CHECK(f.bridges[2].secondary() == 3);
  // Memory: open the windows and enable decoding on every bridge, place BAR5.
  for (uint8_t b = 0; b < 4; ++b) {
    cfg(b ? 0x45 : 0x44, b, 0x20, 0xFFF01000u);
    cfg(b ? 0x45 : 0x44, b, 0x04, 0x6);
  }
  cfg(0x45, 4, 0x24, 0x10200000u);
  cfg(0x45, 4, 0x04, 0x6);
  TlpRequest w;
  w.fmt_type = 0x40;
  w.addr = 0x10200010u;
  w.data = 0xABCD1234u;
  f.handle(w);
  TlpRequest rd;
  rd.addr = 0x10200010u;
  CHECK(f.handle(rd).data == 0xABCD1234u);
  rd.addr = 0x0FF00000u;  // below the windows
  CHECK(f.handle(rd).status == 1);
  CHECK(f.upstream_reaches_root(0x200000));
  CHECK_FALSE(f.upstream_reaches_root(0x10200000u));  // inside a window: stays downstream
}
