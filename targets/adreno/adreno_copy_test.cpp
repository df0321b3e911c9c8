// Copy steps on Adreno: one KGSL context runs one command stream in order, so a copy queue
// waiting on the compute queue would deadlock behind it. The Adreno target records copies into
// the compute stream instead (hcq::target::copies_in_compute): the same signal/wait handshake as
// with a copy queue, in order, and CP_MEMCPY for the bytes. A capture of copies only (arena to
// arena, chained, and weight to arena) replays on the fake KGSL through the real transport.
#include <doctest/doctest.h>

#include <cstring>

#include "adreno_hcq.h"
#include "adreno_pm4.h"
#include "capture_fixture.h"
#include "capture_verify.h"
#include "fake_kgsl.h"
#include "hcq/graph.h"
#include "kgsl_transport.h"

using namespace capgraph;
using namespace capgraph::test;

namespace {

constexpr int64_t n = 100;
constexpr uint64_t bytes = n * 4, slot = 448;

// x -> y -> z in the arena, weight w -> ww; `size` bytes per copy.
capture_spec copies_spec(uint64_t size = bytes) {
  capture_spec s;
  s.version_major = 2;
  s.target = "adreno-a630";
  s.arena_size = 4 * slot;
  s.inputs = {{"x", fb::DType::f32, {n}, 0, bytes}};
  s.outputs = {{"y", fb::DType::f32, {n}, slot, bytes},
               {"z", fb::DType::f32, {n}, 2 * slot, bytes},
               {"ww", fb::DType::f32, {n}, 3 * slot, bytes}};
  std::vector<uint8_t> w(bytes);
  for (int64_t i = 0; i < n; ++i) {
    const float v = 0.5f * float(i) - 7;
    memcpy(w.data() + 4 * i, &v, 4);
  }
  s.weights = {{"w", w}};
  s.steps = {copy_step(arena_ref(0), arena_ref(slot), size),
             copy_step(arena_ref(slot), arena_ref(2 * slot), size),
             copy_step(weight_ref(0), arena_ref(3 * slot), size)};
  return s;
}

struct loaded {
  std::vector<uint8_t> bytes;
  const fb::Capture *c = nullptr;
  std::shared_ptr<adreno::fake_kgsl> fake = std::make_shared<adreno::fake_kgsl>();
  std::unique_ptr<hcq::transport> t;
  std::unique_ptr<hcq::graph> g;
  std::string err;
  capgraph_status st = CAPGRAPH_OK;
  explicit loaded(const capture_spec &s) : bytes(capture_build(s)) {
    REQUIRE(capture_verify(bytes.data(), bytes.size(), "copies.cap", &c, &err,
                           &adreno::adreno_target) == CAPGRAPH_OK);
    REQUIRE(kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, &err) == CAPGRAPH_OK);
    st = hcq::graph::build(t.get(), &adreno::adreno_target, c, "copies.cap",
                           adreno::graph_options_for(fake), &g, &err);
  }
};

bool is_pkt7(uint32_t w, uint32_t opcode) { return (w >> 28) == 7 && ((w >> 16) & 0x7f) == opcode; }

}  // namespace

TEST_CASE("adreno: copy steps replay in the compute stream on the fake KGSL") {
  loaded l(copies_spec());
  REQUIRE_MESSAGE(l.st == CAPGRAPH_OK, l.err);
  // One stream: nothing recorded for a copy queue, the copies and the handshake in compute.
  CHECK(l.g->copy_commands().empty());
  int memcpys = 0, waits = 0;
  for (uint32_t w : l.g->compute_commands()) {
    memcpys += is_pkt7(w, adreno::CP_MEMCPY);
    waits += is_pkt7(w, adreno::CP_WAIT_REG_MEM);
  }
  CHECK(memcpys == 3);
  CHECK(waits == 2);  // before the run of copies (the caches flushed) and after it
  for (int run = 0; run < 3; ++run) {
    float x[n];
    for (int64_t i = 0; i < n; ++i) x[i] = float(run * 1000 + i) * 0.25f;
    memcpy(l.g->arena(), x, bytes);
    memset(l.g->arena() + slot, 0xff, 3 * slot);  // the previous run's outputs gone
    REQUIRE_MESSAGE(l.g->replay(&l.err) == CAPGRAPH_OK, l.err, " / fake: ", l.fake->fault());
    CHECK(memcmp(l.g->arena() + slot, x, bytes) == 0);
    CHECK(memcmp(l.g->arena() + 2 * slot, x, bytes) == 0);  // after the first copy, not before
    float ww[n];
    memcpy(ww, l.g->arena() + 3 * slot, bytes);
    CHECK(ww[0] == -7.0f);
    CHECK(ww[n - 1] == 0.5f * float(n - 1) - 7);
  }
}

TEST_CASE("adreno: a copy CP_MEMCPY cannot do is refused at load, naming the size") {
  loaded l(copies_spec(bytes - 2));  // not whole dwords
  CHECK(l.st != CAPGRAPH_OK);
  CHECK(l.err.find("CP_MEMCPY") != std::string::npos);
  CHECK(l.err.find(std::to_string(bytes - 2) + " bytes") != std::string::npos);
}
