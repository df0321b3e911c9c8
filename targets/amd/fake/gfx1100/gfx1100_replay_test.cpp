// Captures replayed through the HCQ core on the AM driver (targets/amd/amd_am_transport: device
// memory the CPU cannot map, shadows uploaded and downloaded explicitly) over the register-model
// gfx1100 directly (unit; gfx1100_direct.h), the queues running on fake-amd's packet interpreter.
// Checks: outputs equal fake-amd's bit for bit over several replays with new inputs; what crosses
// per replay is the inputs, the ring packets and the outputs, not the kernel count; a second
// session partial-boots and replays; a GPU page fault and the device unplugged mid-replay each
// give a clear error and a clean cold boot after.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "am_device.h"
#include "am_firmware_synthetic.h"
#include "amd_fixture.h"
#include "amd_hcq.h"
#include "capture_verify.h"
#include "fake_amd.h"
#include "gfx1100_direct.h"
#include "gfx1100_firmware_dir.h"
#include "gfx1100_hcq.h"
#include "gfx1100_model.h"
#include "hcq/graph.h"

using namespace capgraph;
using capgraph::emu::gfx1100_direct;
using capgraph::emu::gfx1100_model;
using capgraph::emu::gfx1100_transport;
namespace fs = std::filesystem;

namespace {

am::device_options opts() {
  am::device_options o;
  o.firmware_dir = emu::synthetic_fw_dir();
  o.timeout_ms = 500;
  return o;
}

gfx1100_model::options twins() {
  gfx1100_model::options o;
  o.engine_twins = true;  // the fixture's code objects hold no real code
  return o;
}

struct replay {
  std::vector<uint8_t> bytes;
  const fb::Capture *c = nullptr;
  std::unique_ptr<hcq::graph> g;
  // `o` hands the capture to the fake behind `dev` (graph_options_for / gfx1100_transport).
  capgraph_status build(hcq::transport *dev, hcq::graph_options o, std::string *err) {
    bytes = test::capture_build(test::amd_spec(test::reference_spec(1)));
    capgraph_status st =
        capture_verify(bytes.data(), bytes.size(), "ref.cap", &c, err, &hcq::amd_target);
    if (st != CAPGRAPH_OK) return st;
    o.timeout_ns = 500'000'000;
    return hcq::graph::build(dev, &hcq::amd_target, c, "ref.cap", o, &g, err);
  }
  void inputs_set(int round) {
    std::vector<float> a, b;
    test::reference_inputs(test::k_reference_n, &a, &b);
    for (float &v : a) v += float(round);
    for (const fb::TensorInfo *t : *c->inputs()) {
      const std::vector<float> &v = t->name()->str() == "a" ? a : b;
      REQUIRE(t->size() == v.size() * 4);
      memcpy(g->arena() + t->offset(), v.data(), t->size());
    }
  }
  std::vector<uint8_t> outputs() const {
    std::vector<uint8_t> all;
    for (const fb::TensorInfo *t : *c->outputs())
      all.insert(all.end(), g->arena() + t->offset(), g->arena() + t->offset() + t->size());
    return all;
  }
};

std::string joined(const std::vector<std::string> &v) {
  std::string s;
  for (const auto &l : v) s += l + "\n";
  return s;
}

// The replay's outputs next to fake-amd's for the same inputs.
void replays_match(replay &on_am, int rounds) {
  amd::fake_gpu ref_gpu(*amd::chip_find("gfx1100"), amd::fake_mode::twin);
  replay ref;
  std::string err;
  REQUIRE_MESSAGE(ref.build(&ref_gpu, amd::graph_options_for(ref_gpu), &err) == CAPGRAPH_OK, err);
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    on_am.inputs_set(round);
    ref.inputs_set(round);
    REQUIRE_MESSAGE(on_am.g->replay(&err) == CAPGRAPH_OK, err);
    REQUIRE_MESSAGE(ref.g->replay(&err) == CAPGRAPH_OK, err);
    CHECK(on_am.outputs() == ref.outputs());
  }
}

// The kernel-argument block among the transport's allocations: the one whose first word is an
// arena address (the first launch's first buffer). The arena is the graph's first allocation.
uint64_t kernargs_pa(const amd::am_transport &t, gfx1100_model &gpu) {
  const auto all = t.allocations();
  REQUIRE(all.size() > 2);
  const uint64_t arena = am::device::vram_va(all[0].first), arena_end = arena + all[0].second;
  for (size_t i = 1; i < all.size(); ++i) {
    uint64_t w = 0;
    gpu.vram_read(all[i].first, &w, 8);
    if (w >= arena && w < arena_end) return all[i].first;
  }
  FAIL("no kernel-argument block found");
  return 0;
}

}  // namespace

TEST_CASE(
    "a capture replays on the AM driver over the gfx1100 model and matches fake-amd; a second "
    "session partial-boots") {
  gfx1100_model gpu(twins());
  gfx1100_direct pci(gpu);
  std::string err;
  {
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    CHECK(!d.stats().partial);
    gfx1100_transport t(d, gpu, "direct gfx1100 model");
    replay r;
    REQUIRE_MESSAGE(r.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
    replays_match(r, 3);
    CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
    // Per replay: each input up, the sync word (a copy queue), both rings, the outputs down.
    const amd::am_transport_stats before = t.stats();
    r.inputs_set(7);
    REQUIRE_MESSAGE(r.g->replay(&err) == CAPGRAPH_OK, err);
    const amd::am_transport_stats &after = t.stats();
    const bool copies = !r.g->copy_commands().empty();
    CHECK(after.uploads - before.uploads == r.c->inputs()->size() + (copies ? 1 : 0));
    CHECK(after.downloads - before.downloads == r.c->outputs()->size());
    CHECK(after.submits - before.submits == (copies ? 2 : 1));
    uint64_t in_bytes = 0, out_bytes = 0;
    for (const fb::TensorInfo *ti : *r.c->inputs()) in_bytes += ti->size();
    for (const fb::TensorInfo *ti : *r.c->outputs()) out_bytes += ti->size();
    CHECK(after.upload_bytes - before.upload_bytes <= in_bytes + 8 + 8 * r.c->inputs()->size());
    CHECK(after.download_bytes - before.download_bytes <= out_bytes + 8 * r.c->outputs()->size());
    r.g.reset();
    REQUIRE_MESSAGE(d.teardown(&err), err);
  }
  {
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    CHECK(d.stats().partial);
    gfx1100_transport t(d, gpu, "direct gfx1100 model");
    replay r;
    REQUIRE_MESSAGE(r.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
    replays_match(r, 2);
    CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
    r.g.reset();
    REQUIRE_MESSAGE(d.teardown(&err), err);
  }
}

TEST_CASE("a GPU page fault during a replay: the fault named, and a clean cold boot after") {
  gfx1100_model gpu(twins());
  gfx1100_direct pci(gpu);
  std::string err;
  {
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    gfx1100_transport t(d, gpu, "direct gfx1100 model");
    replay r;
    REQUIRE_MESSAGE(r.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
    // The first launch's first buffer pointer now points where nothing is mapped.
    const uint64_t bad = am::device::vram_va(gpu.vram_bytes()) + (1ull << 30);
    gpu.vram_write(kernargs_pa(t, gpu), &bad, 8);
    r.inputs_set(0);
    CHECK(r.g->replay(&err) != CAPGRAPH_OK);
    CHECK_MESSAGE(err.find("page fault") != std::string::npos, err);
    CHECK_MESSAGE(err.find("GCVM_L2_PROTECTION_FAULT_STATUS") != std::string::npos, err);
    CHECK(!gpu.faults.empty());
    r.g.reset();  // bounded: the graph's last wait ends on the same fault
    d.teardown(&err);
  }
  gpu.faults.clear();
  am::device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK(!d.stats().partial);  // a fault was pending: no reuse
  gfx1100_transport t(d, gpu, "direct gfx1100 model");
  replay r;
  REQUIRE_MESSAGE(r.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
  replays_match(r, 1);
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
}

TEST_CASE("the device unplugged mid-replay: a clear error, and a clean cold boot once it is back") {
  gfx1100_model gpu(twins());
  std::string err;
  {
    gfx1100_direct pci(gpu);
    am::device d(pci, opts());
    REQUIRE_MESSAGE(d.boot(&err), err);
    gfx1100_transport t(d, gpu, "direct gfx1100 model");
    replay r;
    REQUIRE_MESSAGE(r.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
    r.inputs_set(0);
    pci.unplug_after = pci.accesses + 4;  // inside the uploads before the doorbell
    CHECK(r.g->replay(&err) != CAPGRAPH_OK);
    CHECK_MESSAGE(err.find("unplugged") != std::string::npos, err);
    r.g.reset();  // no hang on a device that is gone
    CHECK(!d.teardown(&err));
  }
  gfx1100_direct pci(gpu);  // plugged back in; the GPU kept its half-used state
  am::device d(pci, opts());
  REQUIRE_MESSAGE(d.boot(&err), err);
  CHECK(!d.stats().partial);
  gfx1100_transport t(d, gpu, "direct gfx1100 model");
  replay r;
  REQUIRE_MESSAGE(r.build(&t, t.graph_options(), &err) == CAPGRAPH_OK, err);
  replays_match(r, 1);
  CHECK_MESSAGE(gpu.faults.empty(), joined(gpu.faults));
}
