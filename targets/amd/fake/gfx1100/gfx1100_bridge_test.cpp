// The AM boot through the whole USB path: drivers/am over pci_function_usb
// over the host library, the emulated ASM2464PD running our real firmware
// image, its PCIe switch chain, and the register-model gfx1100 at bus 4.
// The boot's trace must equal the direct one (the golden file), and the
// USB traffic of a cold and a partial boot is counted from the emulated
// wire and printed (the cost figures of issue 14).
#include <doctest/doctest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "am_device.h"
#include "am_firmware_synthetic.h"
#include "amd_fixture.h"
#include "amd_hcq.h"
#include "bridge_rig.h"
#include "capture_verify.h"
#include "fake_amd.h"
#include "gfx1100_firmware_dir.h"
#include "gfx1100_hcq.h"
#include "gfx1100_model.h"
#include "hcq/graph.h"

using namespace capgraph;
using namespace capgraph::emu_test;
using capgraph::emu::gfx1100_model;
using capgraph::emu::WireStats;
namespace fs = std::filesystem;

namespace {

am::device_options opts(unsigned timeout_ms = 2000) {
  am::device_options o;
  o.firmware_dir = emu::synthetic_fw_dir();
  o.timeout_ms = timeout_ms;
  return o;
}

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &l : v) s += l + "\n";
  return s;
}

WireStats wire_delta(const WireStats &a, const WireStats &b) {
  WireStats d;
  d.control_transfers = b.control_transfers - a.control_transfers;
  d.control_bytes = b.control_bytes - a.control_bytes;
  d.bulk_out_transfers = b.bulk_out_transfers - a.bulk_out_transfers;
  d.bulk_out_bytes = b.bulk_out_bytes - a.bulk_out_bytes;
  d.bulk_in_transfers = b.bulk_in_transfers - a.bulk_in_transfers;
  d.bulk_in_bytes = b.bulk_in_bytes - a.bulk_in_bytes;
  return d;
}

std::string wire_text(const WireStats &w) {
  std::ostringstream s;
  s << w.control_transfers << " control transfers (" << w.control_bytes << " B), "
    << w.bulk_out_transfers << " bulk OUT (" << w.bulk_out_bytes << " B), " << w.bulk_in_transfers
    << " bulk IN (" << w.bulk_in_bytes << " B)";
  return s.str();
}

}  // namespace

TEST_CASE(
    "1 GiB of VRAM behind a 256 MiB BAR: booted after ReBAR, refused with a clear message without "
    "it") {
  if (!have_image()) return;
  for (bool rebar : {true, false}) {
    CAPTURE(rebar);
    Rig r;
    gfx1100_model::options o;
    o.vram_bytes = 1ull << 30;
    gfx1100_model gpu(o);
    gpu.attach(r.dev.endpoint);
    if (rebar) r.dev.endpoint.rebar_offer(o.vram_bytes);
    REQUIRE(r.boot());
    usb::PciChain chain = pcie_bring_up(r);
    usb::pci_function_usb pci(r.bridge, chain);
    am::device d(pci, opts());
    std::string err;
    if (rebar) {
      CHECK(chain.rebar_bytes == o.vram_bytes);
      REQUIRE_MESSAGE(d.boot(&err), err);
      CHECK(d.vram_bytes() == o.vram_bytes);
      CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
      CHECK(gpu.hqd_active(1, 0, 0));
    } else {
      CHECK(chain.rebar_bytes == 0);
      CHECK(!d.boot(&err));
      CHECK_MESSAGE(
          err.find("BAR0 is 0x10000000 bytes, smaller than VRAM (0x40000000)") != std::string::npos,
          err);
      CHECK_MESSAGE(err.find("resizable BAR") != std::string::npos, err);
    }
  }
}

TEST_CASE("AM cold boot, teardown and partial boot through the emulated bridge and our firmware") {
  if (!have_image()) return;
  Rig r;
  gfx1100_model gpu;
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.boot());
  usb::PciChain chain = pcie_bring_up(r);
  REQUIRE(chain.endpoint_bus == 4);
  usb::pci_function_usb pci(r.bridge, chain);
  std::string err;

  WireStats before = r.dev.stats;
  WireStats cold_wire, teardown_wire;
  am::boot_stats cold;
  {
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    cold = d.stats();
    CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
    CHECK(gpu.hqd_active(1, 0, 0));
    CHECK(gpu.sdma_active());
    // The same register/PSP trace as the direct boot: the bridge changes how
    // bytes travel, never what the GPU sees.
    std::ifstream in(CAPGRAPH_GFX1100_GOLDEN);
    std::stringstream want;
    want << in.rdbuf();
    CHECK_MESSAGE(joined(gpu.trace) == want.str(),
                  "bridge boot trace differs from " CAPGRAPH_GFX1100_GOLDEN);
    cold_wire = wire_delta(before, r.dev.stats);

    // One compute submission (a signal) and its wait, through the bridge:
    // the queue runs on the packet engine, the host polls VRAM.
    const WireStats q0 = r.dev.stats;
    std::vector<uint32_t> words;
    auto enc = hcq::amd_compute_encoder(*amd::chip_find("gfx1100"), &words);
    enc->signal(am::device::vram_va(am::device_layout::free_start), 5);
    REQUIRE_MESSAGE(d.queue_submit(false, words.data(), words.size(), &err), err);
    REQUIRE_MESSAGE(d.wait_vram64(am::device_layout::free_start, 5, 2000, &err), err);
    CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
    MESSAGE("one compute submission ("
            << words.size() << " words) + its wait: " << wire_text(wire_delta(q0, r.dev.stats)));
    const WireStats t0 = r.dev.stats;
    REQUIRE_MESSAGE(d.teardown(&err), err);
    teardown_wire = wire_delta(t0, r.dev.stats);
  }
  before = r.dev.stats;
  {
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    CHECK(d.stats().partial);
    CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
    REQUIRE_MESSAGE(d.teardown(&err), err);
  }
  const WireStats partial_wire = wire_delta(before, r.dev.stats);
  // The firmware crossed as SRAM DMA (bulk OUT, 512-byte sectors).
  CHECK(cold_wire.bulk_out_bytes >= cold.staged_bytes);
  CHECK(partial_wire.bulk_out_bytes < 16384);
  CHECK(partial_wire.control_transfers < cold_wire.control_transfers);
  MESSAGE("teardown: " << wire_text(teardown_wire));
  MESSAGE("cold boot: " << wire_text(cold_wire) << "; " << cold.reg_reads << " register reads, "
                        << cold.reg_writes << " writes, " << cold.vram_bytes_written
                        << " VRAM bytes written, " << cold.staged_bytes
                        << " firmware bytes staged");
  MESSAGE("partial boot + teardown: " << wire_text(partial_wire));
}

TEST_CASE("the bridge unplugged mid-boot: a clear error, and a clean cold boot once it is back") {
  if (!have_image()) return;
  Rig r;
  gfx1100_model gpu;
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.boot());
  usb::PciChain chain = pcie_bring_up(r);
  std::string err;
  {
    usb::pci_function_usb pci(r.bridge, chain);
    r.dev.unplug_after_bulk_bytes(r.dev.stats.bulk_out_bytes +
                                  300000);  // inside the PSP firmware loads
    am::device d(pci, opts(200));
    CHECK(!d.boot(&err));
    CHECK_MESSAGE(err.find("PSP") != std::string::npos, err);
    CHECK(!d.teardown(&err));
    CHECK_MESSAGE(err.find("teardown") != std::string::npos, err);
  }
  CHECK(!gpu.sdma_active());
  // Plugged back in: the bridge boots again, the GPU (powered on its own)
  // still has the half-done boot; the driver resets it and starts over.
  Rig r2;
  gpu.attach(r2.dev.endpoint);
  REQUIRE(r2.boot());
  chain = pcie_bring_up(r2);
  usb::pci_function_usb pci2(r2.bridge, chain);
  gpu.faults.clear();
  am::device d(pci2, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK(!d.stats().partial);
  CHECK(d.stats().mode1_resets == 1);
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
  CHECK(gpu.sdma_active());
}

namespace {

// The fixture's reference capture (amd_fixture.h) on a transport, its inputs set for `round`.
struct ref_replay {
  std::vector<uint8_t> bytes;
  const fb::Capture *c = nullptr;
  std::unique_ptr<hcq::graph> g;
  // `o` hands the capture to the fake behind `dev` (graph_options_for / gfx1100_transport).
  capgraph_status build(hcq::transport *dev, hcq::graph_options o, std::string *err) {
    bytes = test::capture_build(test::amd_spec(test::reference_spec(1)));
    capgraph_status st =
        capture_verify(bytes.data(), bytes.size(), "ref.cap", &c, err, &hcq::amd_target);
    if (st != CAPGRAPH_OK) return st;
    o.timeout_ns = 2'000'000'000;
    return hcq::graph::build(dev, &hcq::amd_target, c, "ref.cap", o, &g, err);
  }
  void inputs_set(int round) {
    std::vector<float> a, b;
    test::reference_inputs(test::k_reference_n, &a, &b);
    for (float &v : a) v += float(round);
    for (const fb::TensorInfo *t : *c->inputs())
      memcpy(g->arena() + t->offset(), (t->name()->str() == "a" ? a : b).data(), t->size());
  }
  std::vector<uint8_t> outputs() const {
    std::vector<uint8_t> all;
    for (const fb::TensorInfo *t : *c->outputs())
      all.insert(all.end(), g->arena() + t->offset(), g->arena() + t->offset() + t->size());
    return all;
  }
};

gfx1100_model::options engine_twins() {
  gfx1100_model::options o;
  o.engine_twins = true;
  return o;
}

}  // namespace

TEST_CASE(
    "a capture replays through the emulated bridge on the AM driver; per-replay USB cost; "
    "unplugged mid-replay") {
  if (!have_image()) return;
  Rig r;
  gfx1100_model gpu(engine_twins());
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.boot());
  usb::PciChain chain = pcie_bring_up(r);
  usb::pci_function_usb pci(r.bridge, chain);
  std::string err;
  am::device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  emu::gfx1100_transport t(d, gpu, pci.name());
  amd::fake_gpu ref_gpu(*amd::chip_find("gfx1100"), amd::fake_mode::twin);  // outlives its graph
  ref_replay on_usb, ref;
  REQUIRE_MESSAGE(on_usb.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
  REQUIRE_MESSAGE(ref.build(&ref_gpu, amd::graph_options_for(ref_gpu), &err) == CAPGRAPH_OK, err);
  for (int round = 0; round < 2; ++round) {
    on_usb.inputs_set(round);
    ref.inputs_set(round);
    const WireStats w0 = r.dev.stats;
    REQUIRE_MESSAGE(on_usb.g->replay(&err) == CAPGRAPH_OK, err);
    REQUIRE_MESSAGE(ref.g->replay(&err) == CAPGRAPH_OK, err);
    CHECK(on_usb.outputs() == ref.outputs());
    MESSAGE("one replay of the reference capture ("
            << on_usb.g->steps()
            << " steps, 8 KB in, 12 KB out): " << wire_text(wire_delta(w0, r.dev.stats)));
  }
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));

  // What one resnet18 replay moves (the graph's replay on this transport does exactly this:
  // the input up, the ring packets and doorbell, the polls, the output down; the kernel count
  // does not enter): a 1x3x224x224 f32 input (602,112 B) and 1000 f32 logits.
  {
    hcq::memory in, out, sig;
    REQUIRE(t.alloc(602112, hcq::memory_kind::device, &in, &err) == CAPGRAPH_OK);
    REQUIRE(t.alloc(4000, hcq::memory_kind::device, &out, &err) == CAPGRAPH_OK);
    REQUIRE(t.alloc(4096, hcq::memory_kind::host, &sig, &err) == CAPGRAPH_OK);
    std::vector<uint32_t> words;
    auto enc = hcq::amd_compute_encoder(*amd::chip_find("gfx1100"), &words);
    // The replay's ring also calls the recorded indirect buffer: a few more words in the same
    // transfer. Only the signal here, so nothing else runs.
    enc->signal(sig.gpu, 1);
    const WireStats w0 = r.dev.stats;
    const auto t0 = std::chrono::steady_clock::now();
    REQUIRE_MESSAGE(t.upload(in, 0, 602112, &err) == CAPGRAPH_OK, err);
    // The graph holds the transport's one compute queue: its submit path, directly.
    REQUIRE_MESSAGE(d.queue_submit(false, words.data(), words.size(), &err), err);
    REQUIRE_MESSAGE(t.wait(reinterpret_cast<volatile uint64_t *>(sig.cpu), 1, 2'000'000'000,
                           &err) == CAPGRAPH_OK,
                    err);
    REQUIRE_MESSAGE(t.download(out, 0, 4000, &err) == CAPGRAPH_OK, err);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    MESSAGE("resnet18-shaped replay I/O (602112 B in, 4000 B out, one submit + wait): "
            << wire_text(wire_delta(w0, r.dev.stats)) << "; " << s << " s in the emulator");
    t.free(in);
    t.free(out);
    t.free(sig);
  }

  // Unplugged in the middle of a replay's input upload: a clear error, no hang.
  on_usb.inputs_set(5);
  r.dev.unplug_after_bulk_bytes(2000);  // counts down from now
  CHECK(on_usb.g->replay(&err) != CAPGRAPH_OK);
  MESSAGE("unplugged mid-replay: " << err);
  CHECK_MESSAGE(err.find(pci.name()) != std::string::npos, err);
  on_usb.g.reset();
  CHECK(!d.teardown(&err));
}

TEST_CASE(
    "inputs and outputs cross through the bridge SRAM and SDMA: chunked, byte-exact, the BAR path "
    "as fallback") {
  if (!have_image()) return;
  Rig r;
  gfx1100_model gpu;
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.boot());
  usb::PciChain chain = pcie_bring_up(r);
  usb::pci_function_usb pci(r.bridge, chain);
  std::string err;
  am::device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  amd::am_transport t(d, pci.name());
  // Larger than the 512 KiB SRAM (two chunks), an odd size at an odd offset.
  const size_t n = 700001, at = 3;
  hcq::memory m;
  REQUIRE(t.alloc(n + at, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
  const uint64_t pa = t.allocations().back().first;
  for (size_t i = 0; i < n; ++i) m.cpu[at + i] = uint8_t(i * 7 + (i >> 11));
  const usb::BridgeCounters c0 = r.bridge.counters();
  const WireStats w0 = r.dev.stats;
  REQUIRE_MESSAGE(t.upload(m, at, n, &err) == CAPGRAPH_OK, err);
  CHECK(t.stats().sdma_chunks_in == 2);
  std::vector<uint8_t> seen(n + at + 1, 0xEE);
  gpu.vram_read(pa, seen.data(), seen.size());
  CHECK(std::memcmp(seen.data() + at, m.cpu + at, n) == 0);
  CHECK(seen[0] == 0);  // the bytes around the range are untouched
  CHECK(seen[n + at] == 0);
  // The host library's counter agrees with the emulated wire, and the data went as bulk.
  const usb::BridgeCounters c = r.bridge.counters().since(c0);
  const WireStats w = wire_delta(w0, r.dev.stats);
  CHECK(c.control == w.control_transfers);
  CHECK(c.bulk_out == w.bulk_out_transfers);
  CHECK(c.bulk_out_bytes == w.bulk_out_bytes);
  CHECK(c.bulk_out_bytes >= n);
  CHECK(c.transfers() < 40);  // the BAR path: ~515 transfers for these bytes
  MESSAGE("SDMA copy-in of " << n << " B: " << wire_text(w));

  // Out: the GPU's bytes (written behind the shadow's back) come back exactly.
  for (size_t i = 0; i < n; ++i) seen[at + i] = uint8_t(i * 13 + 1);
  gpu.vram_write(pa, seen.data(), n + at);
  const WireStats w1 = r.dev.stats;
  REQUIRE_MESSAGE(t.download(m, at, n, &err) == CAPGRAPH_OK, err);
  CHECK(t.stats().sdma_chunks_out == 2);
  CHECK(std::memcmp(m.cpu + at, seen.data() + at, n) == 0);
  MESSAGE("SDMA copy-out of " << n << " B: " << wire_text(wire_delta(w1, r.dev.stats)));
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));

  // Small ranges (below amd::kSdmaMinInBytes), and every range with SDMA copies off, take the
  // BAR path; same bytes.
  m.cpu[at] ^= 0xFF;
  REQUIRE_MESSAGE(t.upload(m, at, 16, &err) == CAPGRAPH_OK, err);
  t.sdma_copies(false);
  for (size_t i = 0; i < n; ++i) m.cpu[at + i] = uint8_t(i * 5 + 3);
  const WireStats w2 = r.dev.stats;
  REQUIRE_MESSAGE(t.upload(m, at, n, &err) == CAPGRAPH_OK, err);
  const WireStats bar = wire_delta(w2, r.dev.stats);
  CHECK(t.stats().sdma_chunks_in == 2);
  gpu.vram_read(pa, seen.data(), n + at);
  CHECK(std::memcmp(seen.data() + at, m.cpu + at, n) == 0);
  CHECK(bar.control_transfers + bar.bulk_out_transfers + bar.bulk_in_transfers >
        10 * c.transfers());
  MESSAGE("BAR copy-in of " << n << " B: " << wire_text(bar));
  std::memset(m.cpu, 0, n + at);
  REQUIRE_MESSAGE(t.download(m, at, n, &err) == CAPGRAPH_OK, err);
  CHECK(std::memcmp(seen.data() + at, m.cpu + at, n) == 0);
  CHECK(t.stats().sdma_chunks_out == 2);
  t.free(m);
  REQUIRE_MESSAGE(d.teardown(&err), err);
}

TEST_CASE("a copy-out whose trigger never reaches the bridge is a clear error, not a hang") {
  if (!have_image()) return;
  Rig r;
  gfx1100_model gpu;
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.boot());
  usb::PciChain chain = pcie_bring_up(r);
  usb::pci_function_usb pci(r.bridge, chain);
  std::string err;
  am::device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  amd::am_transport t(d, pci.name());
  hcq::memory m;
  REQUIRE(t.alloc(64 * 1024, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
  // The GPU loses bus mastering (as after a PCIe error): the SDMA's trigger write never arrives.
  gpu.dma_write = [](uint64_t, const uint8_t *, size_t) { return false; };
  CHECK(t.download(m, 0, 64 * 1024, &err) != CAPGRAPH_OK);
  CHECK_MESSAGE(err.find("did the GPU write the trigger") != std::string::npos, err);
  CHECK_MESSAGE(err.find("VRAM") != std::string::npos, err);
  MESSAGE("trigger lost: " << err);
  t.free(m);
}

TEST_CASE("a copy-out whose SRAM data is lost on the cable is collected again, not failed") {
  if (!have_image()) return;
  // The bridge's bulk IN of the SRAM bytes times out having moved nothing while the bridge did
  // send them (the fault sweep's `fake-usb:fail=N` on that transfer): before the fix the copy
  // failed ("got no data"), and the bytes stayed queued at the endpoint for the next bulk IN.
  Rig r;
  LossyWire w(r.t);
  usb::Bridge bridge(w);
  gfx1100_model gpu;
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.dev.power_on() == Asm2464::Mode::firmware);
  emu::Enumeration en;
  std::string err;
  REQUIRE_MESSAGE(emu::usb_enumerate(r.dev, &en, &err), err);
  REQUIRE(bridge.open().ok());
  usb::PciChain chain;
  REQUIRE(bridge.pcie_power(true).ok());
  REQUIRE(usb::pci_chain_setup(bridge, &chain).ok());
  REQUIRE(usb::pci_bars_assign(bridge, &chain).ok());
  usb::pci_function_usb pci(bridge, chain);
  am::device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  amd::am_transport t(d, pci.name());
  const size_t n = 64 * 1024;
  hcq::memory m;
  REQUIRE(t.alloc(n, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
  std::vector<uint8_t> want(n);
  for (size_t i = 0; i < n; ++i) want[i] = uint8_t(i * 11 + 5);
  gpu.vram_write(t.allocations().back().first, want.data(), n);
  w.lose_bulk_in_of = n;
  REQUIRE_MESSAGE(t.download(m, 0, n, &err) == CAPGRAPH_OK, err);
  CHECK(w.lost == 1);
  CHECK(std::memcmp(m.cpu, want.data(), n) == 0);
  // The wire is the requests' again: a BAR read right after answers with the register's value.
  uint32_t fault = 1;
  CHECK(d.rreg(am::regGCVM_L2_PROTECTION_FAULT_STATUS, &fault));
  CHECK(fault == 0);
  t.free(m);
  REQUIRE_MESSAGE(d.teardown(&err), err);
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
}

namespace {

// Sources for the projection (drivers/am/README.md, "USB cost"): no measured per-transfer latency
// of an ASM2464PD is published (shared/research/asm2464_firmware.md §6.6: "the sources give no
// per-access number"), so a transfer is charged one USB 2.0 high-speed microframe, 125 us (USB 2.0
// spec §8.4.3, high-speed microframes), as a planning bound, not a measurement, unless
// CAPGRAPH_USB_TRANSFER_US gives the figure `bridge_hw_test latency` measured on a board. Rates
// measured on the bridge: SRAM DMA 381 MB/s (the handmade firmware's first figure; 700 MB/s
// later), F0 streamed TLPs 3.6 MB/s write and 1.8 MB/s read (handmade firmware README;
// asm2464_firmware.md, speed table).
constexpr double kTransferBoundS = 125e-6, kSramBps = 381e6, kStreamWriteBps = 3.6e6,
                 kStreamReadBps = 1.8e6;

// The per-transfer time: measured (CAPGRAPH_USB_TRANSFER_US, microseconds, from `bridge_hw_test
// latency`) or the bound. A value that is not a positive number below 1 s is ignored.
double transfer_s(bool *measured = nullptr) {
  const char *e = std::getenv("CAPGRAPH_USB_TRANSFER_US");
  char *end = nullptr;
  const double us = e ? std::strtod(e, &end) : 0;
  const bool ok = e && end != e && *end == 0 && us > 0 && us < 1e6;
  if (measured) *measured = ok;
  return ok ? us * 1e-6 : kTransferBoundS;
}

std::string cost_row(const char *what, const usb::BridgeCounters &c) {
  const double stream_out = double(c.bulk_out_bytes - c.sram_out_bytes),
               stream_in = double(c.bulk_in_bytes - c.sram_in_bytes);
  const double s = double(c.transfers()) * transfer_s() +
                   double(c.sram_out_bytes + c.sram_in_bytes) / kSramBps +
                   stream_out / kStreamWriteBps + stream_in / kStreamReadBps;
  char b[400];
  std::snprintf(b, sizeof b,
                "| %s | %llu (%llu B) | %llu (%llu B) | %llu (%llu B) | %llu | %.1f ms |", what,
                (unsigned long long)c.control, (unsigned long long)c.control_bytes,
                (unsigned long long)c.bulk_out, (unsigned long long)c.bulk_out_bytes,
                (unsigned long long)c.bulk_in, (unsigned long long)c.bulk_in_bytes,
                (unsigned long long)c.transfers(), s * 1e3);
  return b;
}

}  // namespace

TEST_CASE("the USB cost report: cold boot, partial boot, one resnet18 replay's I/O") {
  if (!have_image()) return;
  Rig r;
  gfx1100_model gpu;
  gpu.attach(r.dev.endpoint);
  REQUIRE(r.boot());
  std::vector<std::string> rows;
  usb::BridgeCounters c0 = r.bridge.counters();
  usb::PciChain chain = pcie_bring_up(r);
  rows.push_back(cost_row("open: INFO, PCIe power, switch chain, BARs", r.bridge.counters()));
  usb::pci_function_usb pci(r.bridge, chain);
  std::string err;
  {
    c0 = r.bridge.counters();
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    rows.push_back(cost_row("cold boot (AM driver)", r.bridge.counters().since(c0)));
    c0 = r.bridge.counters();
    REQUIRE_MESSAGE(d.teardown(&err), err);
    rows.push_back(cost_row("teardown", r.bridge.counters().since(c0)));
  }
  am::device d(pci, opts());
  c0 = r.bridge.counters();
  REQUIRE_MESSAGE(d.boot(&err), err);
  REQUIRE(d.stats().partial);
  rows.push_back(cost_row("partial boot", r.bridge.counters().since(c0)));

  // One resnet18 replay's I/O: a 1x3x224x224 f32 input (602,112 B) in, the ring packets and
  // doorbell, a poll, 1000 f32 logits out: the calls the graph's replay makes on this transport.
  amd::am_transport t(d, pci.name());
  hcq::memory in, out, sig;
  REQUIRE(t.alloc(602112, hcq::memory_kind::device, &in, &err) == CAPGRAPH_OK);
  REQUIRE(t.alloc(4000, hcq::memory_kind::device, &out, &err) == CAPGRAPH_OK);
  REQUIRE(t.alloc(4096, hcq::memory_kind::host, &sig, &err) == CAPGRAPH_OK);
  std::vector<uint32_t> words;
  auto enc = hcq::amd_compute_encoder(*amd::chip_find("gfx1100"), &words);
  for (int path = 0; path < 2; ++path) {
    t.sdma_copies(path == 0);
    words.clear();
    enc->signal(sig.gpu, uint64_t(path + 1));
    c0 = r.bridge.counters();
    REQUIRE_MESSAGE(t.upload(in, 0, 602112, &err) == CAPGRAPH_OK, err);
    const usb::BridgeCounters up = r.bridge.counters().since(c0);
    c0 = r.bridge.counters();
    REQUIRE_MESSAGE(d.queue_submit(false, words.data(), words.size(), &err), err);
    REQUIRE_MESSAGE(t.wait(reinterpret_cast<volatile uint64_t *>(sig.cpu), uint64_t(path + 1),
                           2'000'000'000, &err) == CAPGRAPH_OK,
                    err);
    const usb::BridgeCounters run = r.bridge.counters().since(c0);
    c0 = r.bridge.counters();
    REQUIRE_MESSAGE(t.download(out, 0, 4000, &err) == CAPGRAPH_OK, err);
    const usb::BridgeCounters down = r.bridge.counters().since(c0);
    const std::string how = path == 0 ? " (bridge SRAM + SDMA)" : " (BAR TLPs, the fallback)";
    rows.push_back(cost_row(("resnet18 input in, 602,112 B" + how).c_str(), up));
    rows.push_back(cost_row("resnet18 submit + wait (one WATCH)", run));
    rows.push_back(cost_row(("resnet18 output out, 4,000 B" + how).c_str(), down));
    usb::BridgeCounters all = up;
    for (const usb::BridgeCounters *x : {&run, &down}) {
      all.control += x->control, all.control_bytes += x->control_bytes, all.bulk_out += x->bulk_out;
      all.bulk_out_bytes += x->bulk_out_bytes, all.bulk_in += x->bulk_in,
          all.bulk_in_bytes += x->bulk_in_bytes;
      all.sram_out_bytes += x->sram_out_bytes, all.sram_in_bytes += x->sram_in_bytes;
    }
    rows.push_back(cost_row(("**resnet18 replay I/O" + how + "**").c_str(), all));
    // 64 with an HDP flush (one register write: control + bulk OUT + bulk IN) before each of the
    // four doorbells (two input chunks, the kernels, the output); the BAR path is ~7x that.
    if (path == 0)
      CHECK(all.transfers() <= 64);
    else
      CHECK(all.transfers() > 400);
  }
  CHECK(t.stats().sdma_chunks_out == 1);  // the output too (above amd::kSdmaMinOutBytes)
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
  std::string table =
      "| step | control | bulk OUT | bulk IN | transfers | projected "
      "|\n|---|---|---|---|---|---|\n";
  for (const std::string &row : rows) table += row + "\n";
  const double in_s = 602112.0 / 323e6, in_s_slow = 602112.0 / 276e6;
  char b[200];
  std::snprintf(b, sizeof b,
                "tinygrad's copy-in at 276-323 MB/s would move the input in %.2f-%.2f ms.\n",
                in_s * 1e3, in_s_slow * 1e3);
  bool measured = false;
  const double per = transfer_s(&measured) * 1e6;
  char head[200];
  std::snprintf(
      head, sizeof head, "projected at %.1f us per transfer (%s)", per,
      measured ? "measured on a board: CAPGRAPH_USB_TRANSFER_US" : "a bound, not a measurement");
  MESSAGE("USB cost (counted by drivers/usb BridgeCounters on the emulated bridge; "
          << head << ", SRAM DMA 381 MB/s, streamed TLPs 3.6 MB/s out / 1.8 MB/s in):\n"
          << table << b);
}
