// End to end: what the real firmware image and the host library must get
// right about the PCIe side of the bridge (issue 14, "fix first"): config
// requests through the switch chain (type 1 beyond bus 0), the gate on
// SRAM -> host reads (the GPU's write to the CQ window), GPU bus-master
// writes into the SRAM and the 0x820000 / 0x822000 / 0x800000 windows, and
// posted memory writes that the engine may never flag as complete.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "bridge_rig.h"

using namespace capgraph;
using namespace capgraph::emu_test;
using TS = usb::TransferStatus;

namespace {

uint32_t cfg_addr(uint8_t bus, uint8_t dev, uint16_t reg) {
  return uint32_t(bus) << 24 | uint32_t(dev) << 19 | reg;
}

uint32_t endpoint_word(Rig &r, uint64_t addr) {
  bool claimed = false;
  uint32_t v = r.dev.endpoint.mem_read32(addr, &claimed);
  REQUIRE(claimed);
  return v;
}

}  // namespace

TEST_CASE("PCIe: the switch chain is programmed with type 1 config; the GPU answers at bus 4") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  REQUIRE(r.bridge.pcie_power(true).ok());
  // What Bridge::config_read32 used to send for bus 4: type 0. It cannot
  // reach a device behind a bridge: UR, never the GPU's id.
  usb::TlpResult t;
  REQUIRE(r.bridge.tlp(BRIDGE_TLP_CFGRD0, cfg_addr(4, 0, 0), 0, 0x0F, &t).ok());
  CHECK(t.completion == BRIDGE_CPL_UR);
  // Type 1 before the bridges have bus numbers: nobody forwards it.
  uint32_t v = 0;
  auto st = r.bridge.config_read32(4, 0, 0, 0x00, &v);
  CHECK_FALSE(st.ok());
  CHECK(st.message.find("Unsupported Request") != std::string::npos);
  CHECK(v == 0xFFFFFFFFu);

  usb::PciChain chain;
  st = usb::pci_chain_setup(r.bridge, &chain);
  REQUIRE_MESSAGE(st.ok(), st.message);
  CHECK(chain.endpoint_bus == 4);
  CHECK(chain.vendor == 0x1002);
  CHECK(chain.device == 0x744C);
  CHECK(chain.bridge_ids == std::vector<uint16_t>{0x1B21, 0x1B21, 0x1002, 0x1002});
  REQUIRE(r.bridge.config_read32(4, 0, 0, 0x00, &v).ok());
  CHECK(v == 0x744C1002u);
  REQUIRE(r.bridge.config_read32(2, 0, 0, 0x18, &v).ok());
  CHECK(v == 0x00040302u);  // primary 2, secondary 3, subordinate 4
  REQUIRE(r.bridge.config_read32(0, 0, 0, 0x0C, &v).ok());
  CHECK(((v >> 16) & 0x7F) == 1);  // a bridge, not the GPU
  // Still nothing behind the GPU, nor a second device on its link.
  CHECK_FALSE(r.bridge.config_read32(5, 0, 0, 0x00, &v).ok());
  CHECK_FALSE(r.bridge.config_read32(4, 1, 0, 0x00, &v).ok());
  // The type 0 request to bus 4 still does not get there.
  REQUIRE(r.bridge.tlp(BRIDGE_TLP_CFGRD0, cfg_addr(4, 0, 0), 0, 0x0F, &t).ok());
  CHECK(t.completion == BRIDGE_CPL_UR);

  st = usb::pci_bars_assign(r.bridge, &chain);
  REQUIRE_MESSAGE(st.ok(), st.message);
  REQUIRE(chain.bars.size() == 3);
  CHECK(chain.rebar_bytes == 0);  // no ReBAR capability offered: BAR0 keeps its 256 MiB
  CHECK(chain.bars[0].index == 0);
  CHECK(chain.bars[0].base == 0x800000000ull);
  CHECK(chain.bars[0].size == 256ull << 20);
  CHECK(chain.bars[1].index == 2);
  CHECK(chain.bars[1].base == 0x10000000u);
  CHECK(chain.bars[2].index == 5);
  CHECK(chain.bars[2].base == 0x10200000u);
  CHECK(chain.bars[2].size == 512u << 10);
  CHECK(r.dev.endpoint.bar_base(0) == 0x800000000ull);
  // Memory TLPs through all four bridges' windows, 64- and 32-bit.
  REQUIRE(r.bridge.mem_write32(0x800000100ull, 0x12345678u).ok());
  REQUIRE(r.bridge.mem_read32(0x800000100ull, &v).ok());
  CHECK(v == 0x12345678u);
  REQUIRE(r.bridge.mem_write32(0x10200040u, 0xCAFEF00Du).ok());
  REQUIRE(r.bridge.mem_read32(0x10200040u, &v).ok());
  CHECK(v == 0xCAFEF00Du);
  // Below the bridges' windows: no bridge forwards it.
  st = r.bridge.mem_read32(0x08000000u, &v);
  CHECK(st.message.find("Unsupported Request") != std::string::npos);
  // Inside the windows but no BAR there: the GPU refuses it.
  st = r.bridge.mem_read32(0xC0000000u, &v);
  CHECK(st.message.find("Unsupported Request") != std::string::npos);
  // A bridge with memory decoding off cuts the GPU off.
  REQUIRE(r.bridge.config_write32(2, 0, 0, 0x04, 0x0004).ok());
  CHECK_FALSE(r.bridge.mem_read32(0x800000100ull, &v).ok());
  REQUIRE(r.bridge.config_write32(2, 0, 0, 0x04, 0x0006).ok());
  REQUIRE(r.bridge.mem_read32(0x800000100ull, &v).ok());
  CHECK(v == 0x12345678u);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE(
    "PCIe: ReBAR offered: BAR0 grows to the largest offered size within the window, and decodes "
    "there") {
  if (!have_image()) return;
  for (uint64_t offered : {1ull << 30, 64ull << 30}) {
    CAPTURE(offered);
    Rig r;
    REQUIRE(r.boot());
    r.dev.endpoint.rebar_offer(offered);
    auto chain = pcie_bring_up(r);
    const uint64_t want =
        std::min<uint64_t>(offered, usb::kPciRebarMaxBytes);  // 64 GiB offered: 32 GiB taken
    CHECK(chain.rebar_bytes == want);
    REQUIRE(chain.bars.size() == 3);
    CHECK(chain.bars[0].size == want);
    CHECK(r.dev.endpoint.bar_size(0) == want);
    CHECK(chain.bars[0].base % want == 0);
    uint32_t v = 0;
    REQUIRE(r.bridge.config_read32(4, 0, 0, emu::PcieEndpoint::kRebarCap + 8, &v).ok());
    CHECK((1ull << (20 + ((v >> 8) & 0x3F))) == want);
    // A word past the old 256 MiB reaches the GPU through every bridge's window.
    const uint64_t far = chain.bars[0].base + want - 0x1000;
    REQUIRE(r.bridge.mem_write32(far, 0x5EBA5EBAu).ok());
    REQUIRE(r.bridge.mem_read32(far, &v).ok());
    CHECK(v == 0x5EBA5EBAu);
    // The other BARs still sit after it, in their windows.
    CHECK(chain.bars[1].base == 0x10000000u);
    CHECK(r.dev.protocol_violations == 0);
  }
}

TEST_CASE("PCIe: a GPU directly on the link (no switch) is found at bus 0") {
  if (!have_image()) return;
  Asm2464::Options o;
  o.pcie_bridges = 0;
  Rig r(o);
  REQUIRE(r.boot());
  auto chain = pcie_bring_up(r);
  CHECK(chain.endpoint_bus == 0);
  CHECK(chain.bridge_ids.empty());
  uint32_t v = 0;
  REQUIRE(r.bridge.config_read32(0, 0, 0, 0x00, &v).ok());
  CHECK(v == 0x744C1002u);
  CHECK_FALSE(r.bridge.config_read32(1, 0, 0, 0x00, &v).ok());  // type 1: nobody forwards it
}

TEST_CASE("SRAM -> host starts only after the GPU writes the CQ window, after the arm") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  pcie_bring_up(r);
  std::vector<uint8_t> src(32 * 1024), back(src.size());
  std::mt19937 rng(7);
  for (auto &b : src) b = uint8_t(rng());
  REQUIRE(r.bridge.sram_write(0, src.data(), src.size()).ok());
  const uint8_t zero[4] = {};

  // The old sram_read: arm and read at once. Hardware never sends; nor does the model.
  REQUIRE(r.bridge.sram_read_arm(0, src.size()).ok());
  auto st = r.bridge.sram_read_collect(back.data(), back.size(), 50);
  CHECK_FALSE(st.ok());
  CHECK(st.transfer == TS::timeout);
  CHECK(st.message.find("did the GPU write the trigger") != std::string::npos);
  // A trigger written before the arm is not a completion for it.
  REQUIRE(r.dev.endpoint.dma_write(BRIDGE_CQ_TRIGGER_BUS_ADDR, zero, 4));
  REQUIRE(r.bridge.sram_read_arm(0, src.size()).ok());
  CHECK(r.bridge.sram_read_collect(back.data(), back.size(), 50).transfer == TS::timeout);
  // Arm, the GPU writes a zero dword at 0x82200C (tinygrad's trigger), read.
  REQUIRE(r.bridge.sram_read_arm(0, src.size()).ok());
  const uint32_t triggers = r.dev.cq_triggers;
  REQUIRE(r.dev.endpoint.dma_write(BRIDGE_CQ_TRIGGER_BUS_ADDR, zero, 4));
  CHECK(r.dev.cq_triggers == triggers + 1);
  st = r.bridge.sram_read_collect(back.data(), back.size());
  REQUIRE_MESSAGE(st.ok(), st.message);
  CHECK(back == src);
  // Host-side misuse is refused before anything moves.
  CHECK_FALSE(r.bridge.sram_read_collect(back.data(), back.size()).ok());  // nothing armed
  REQUIRE(r.bridge.sram_read_arm(0, 512).ok());
  CHECK_FALSE(r.bridge.sram_read_collect(back.data(), 1024).ok());  // not what was armed
  // With bus mastering off at the GPU its trigger never leaves it.
  REQUIRE(r.bridge.config_write32(4, 0, 0, 0x04, 0x0002).ok());
  REQUIRE(r.bridge.sram_read_arm(0, 512).ok());
  CHECK_FALSE(r.dev.endpoint.dma_write(BRIDGE_CQ_TRIGGER_BUS_ADDR, zero, 4));
  CHECK(r.bridge.sram_read_collect(back.data(), 512, 50).transfer == TS::timeout);
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE(
    "GPU bus-master reads and writes reach the SRAM and the 0x820000/0x822000/0x800000 windows") {
  if (!have_image()) return;
  Rig r;
  REQUIRE(r.boot());
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t got[8] = {};
  // No link yet: nothing reaches the bridge.
  CHECK_FALSE(r.dev.endpoint.dma_write(BRIDGE_SRAM_BUS_ADDR, data, 8));
  pcie_bring_up(r);
  // size: what XDATA shows; bus_size: what the GPU reaches (the SRAM's
  // XDATA view is its first 4 KiB).
  struct Window {
    uint64_t bus;
    uint16_t xdata;
    uint32_t size, bus_size;
    const char *name;
  };
  const Window windows[] = {
      {BRIDGE_SRAM_BUS_ADDR, 0xF000, 0x1000, BRIDGE_SRAM_SIZE, "SRAM"},
      {BRIDGE_SYS_WINDOW_BUS_ADDR, BRIDGE_SYS_WINDOW_XDATA, BRIDGE_SYS_WINDOW_SIZE,
       BRIDGE_SYS_WINDOW_SIZE, "0x820000"},
      {BRIDGE_CQ_WINDOW_BUS_ADDR, BRIDGE_CQ_WINDOW_XDATA, BRIDGE_CQ_WINDOW_SIZE,
       BRIDGE_CQ_WINDOW_SIZE, "0x822000"},
      {BRIDGE_ADMIN_WINDOW_BUS_ADDR, BRIDGE_ADMIN_WINDOW_XDATA, BRIDGE_ADMIN_WINDOW_SIZE,
       BRIDGE_ADMIN_WINDOW_SIZE, "0x800000"},
  };
  for (const Window &w : windows) {
    CAPTURE(w.name);
    // GPU writes, the host reads the XDATA window (tinygrad's fence read at 0xA800).
    const uint32_t off = w.size - 8;
    REQUIRE(r.dev.endpoint.dma_write(w.bus + off, data, 8));
    REQUIRE(r.bridge.reg_read(uint16_t(w.xdata + off), got, 8).ok());
    CHECK(std::equal(data, data + 8, got));
    // The host writes, the GPU reads.
    const uint8_t host[4] = {0xA5, 0x5A, 0xC3, 0x3C};
    REQUIRE(r.bridge.reg_write(w.xdata, host, 4).ok());
    REQUIRE(r.dev.endpoint.dma_read(w.bus, got, 4));
    CHECK(std::equal(host, host + 4, got));
    // A dword running one byte past the end is refused; the last dword is not.
    CHECK_FALSE(r.dev.endpoint.dma_write(w.bus + w.bus_size - 3, data, 4));
    CHECK(r.dev.endpoint.dma_write(w.bus + w.bus_size - 4, data, 4));
  }
  // The SRAM's last dword is the model's SRAM; nothing decoded around it.
  CHECK(r.dev.sram[BRIDGE_SRAM_SIZE - 4] == 1);
  CHECK_FALSE(r.dev.endpoint.dma_write(BRIDGE_SRAM_BUS_ADDR + BRIDGE_SRAM_SIZE, data, 4));
  CHECK_FALSE(r.dev.endpoint.dma_write(0x100000, data, 4));
  CHECK_FALSE(r.dev.endpoint.dma_write(BRIDGE_SYS_WINDOW_BUS_ADDR + 0x1000, data, 4));
  // A bridge without bus mastering stops the GPU's requests going up.
  REQUIRE(r.bridge.config_write32(1, 0, 0, 0x04, 0x0002).ok());
  CHECK_FALSE(r.dev.endpoint.dma_read(BRIDGE_SYS_WINDOW_BUS_ADDR, got, 4));
  REQUIRE(r.bridge.config_write32(1, 0, 0, 0x04, 0x0006).ok());
  CHECK(r.dev.endpoint.dma_read(BRIDGE_SYS_WINDOW_BUS_ADDR, got, 4));
  // Link down: nothing.
  REQUIRE(r.bridge.pcie_power(false).ok());
  CHECK_FALSE(r.dev.endpoint.dma_read(BRIDGE_SYS_WINDOW_BUS_ADDR, got, 4));
  CHECK(r.dev.protocol_violations == 0);
}

TEST_CASE("posted writes: sent without waiting by default; waiting for COMPLETE is switchable") {
  if (!have_image()) return;
  const uint64_t bar5 = 0x10200000u, bar0 = 0x800000000ull;
  SUBCASE("an engine that never flags posted writes (the model's default)") {
    Rig r;
    REQUIRE(r.boot());
    pcie_bring_up(r);
    CHECK_FALSE(r.bridge.posted_writes_wait());
    // The first hardware check, in the emulator: one write, one read back.
    REQUIRE(r.bridge.mem_write32(bar5 + 0x40, 0x600DF00Du).ok());
    uint32_t v = 0;
    REQUIRE(r.bridge.mem_read32(bar5 + 0x40, &v).ok());
    CHECK(v == 0x600DF00Du);
    std::vector<uint32_t> block(300);
    for (size_t i = 0; i < block.size(); ++i) block[i] = uint32_t(i * 0x01010101u);
    REQUIRE(r.bridge.mem_write_block(bar0 + 0x2000, block.data(), block.size()).ok());
    for (size_t i = 0; i < block.size(); ++i)
      CHECK(endpoint_word(r, bar0 + 0x2000 + 4 * i) == block[i]);
    // What the firmware did before: wait for COMPLETE. Every write "times
    // out" although it landed; a stream stops after its first dword.
    r.bridge.set_posted_writes_wait(true);
    auto st = r.bridge.mem_write32(bar5 + 0x44, 0x0BADBEEFu);
    CHECK_FALSE(st.ok());
    CHECK(st.transfer == TS::timeout);
    CHECK(endpoint_word(r, bar5 + 0x44) == 0x0BADBEEFu);
    size_t done = 0;
    st = r.bridge.mem_write_block(bar0 + 0x3000, block.data(), block.size(), &done);
    CHECK_FALSE(st.ok());
    CHECK(done == 0);
    CHECK(endpoint_word(r, bar0 + 0x3004) == 0);  // the stream stopped
    // Posted, with the link down: the engine refuses to send, and says so.
    r.bridge.set_posted_writes_wait(false);
    REQUIRE(r.bridge.pcie_power(false).ok());
    st = r.bridge.mem_write32(bar5 + 0x48, 1);
    CHECK_FALSE(st.ok());
    CHECK(st.device_error == BRIDGE_ERR_TLP_ENGINE);
    st = r.bridge.mem_write_block(bar0, block.data(), 4, &done);
    CHECK_FALSE(st.ok());
    CHECK(st.device_error == BRIDGE_ERR_TLP_ENGINE);
    CHECK(done == 0);
  }
  SUBCASE("an engine that does flag them: waiting works and reports a hung device") {
    Asm2464::Options o;
    o.posted_write_completes = true;
    Rig r(o);
    REQUIRE(r.boot());
    pcie_bring_up(r);
    r.bridge.set_posted_writes_wait(true);
    REQUIRE(r.bridge.mem_write32(bar5 + 0x40, 0x12345678u).ok());
    CHECK(endpoint_word(r, bar5 + 0x40) == 0x12345678u);
    r.dev.endpoint.hang = true;
    auto st = r.bridge.mem_write32(bar5 + 0x40, 1);
    CHECK(st.transfer == TS::timeout);
    // Posted: a hung device is not noticed by the write itself.
    r.bridge.set_posted_writes_wait(false);
    CHECK(r.bridge.mem_write32(bar5 + 0x40, 2).ok());
    r.dev.endpoint.hang = false;
  }
}
