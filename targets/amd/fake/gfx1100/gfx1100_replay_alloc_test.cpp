// The runtime promises a replay does no heap allocation; this holds it to that on the AM path (the
// graph, amd::am_transport and am::device: everything `--device usb` runs per replay) over the
// register-model gfx1100 on the direct seam. Global operator new is replaced here to count; the
// seam below stops counting while the call is inside the fake GPU (the model and its packet
// interpreter are test machinery and allocate freely), so what is counted is the host code alone.
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>

#include "am_device.h"
#include "am_firmware_synthetic.h"
#include "amd_fixture.h"
#include "amd_hcq.h"
#include "capture_verify.h"
#include "gfx1100_direct.h"
#include "gfx1100_firmware_dir.h"
#include "gfx1100_hcq.h"
#include "gfx1100_model.h"
#include "hcq/graph.h"

namespace {
std::atomic<bool> counting{false};
std::atomic<uint64_t> allocations{0};
thread_local int in_fake = 0;  // >0 while a seam call runs the fake GPU
bool trap = false;             // CAPGRAPH_ALLOC_TRAP=1: stop at the first counted allocation
}  // namespace

void *operator new(std::size_t n) {
  if (counting.load(std::memory_order_relaxed) && in_fake == 0) {
    allocations.fetch_add(1);
    if (trap) __builtin_trap();
  }
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t n) { return operator new(n); }
void *operator new(std::size_t n, const std::nothrow_t &) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void *operator new[](std::size_t n, const std::nothrow_t &t) noexcept { return operator new(n, t); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

using namespace capgraph;
using capgraph::emu::gfx1100_direct;
using capgraph::emu::gfx1100_model;
using capgraph::emu::gfx1100_transport;
namespace fs = std::filesystem;

namespace {

// The direct seam with counting paused inside the fake GPU.
class fake_excluded final : public am::pci_function {
 public:
  explicit fake_excluded(am::pci_function &inner) : in_(inner) {}
  std::string name() const override { return in_.name(); }
  uint64_t bar_size(int bar) const override { return in_.bar_size(bar); }
  bool bar_read(int bar, uint64_t off, uint32_t *dw, size_t n, std::string *err) override {
    const pause p;
    return in_.bar_read(bar, off, dw, n, err);
  }
  bool bar_write(int bar, uint64_t off, const uint32_t *dw, size_t n, std::string *err) override {
    const pause p;
    return in_.bar_write(bar, off, dw, n, err);
  }
  uint64_t staging_bus_addr() const override { return in_.staging_bus_addr(); }
  uint64_t staging_bytes() const override { return in_.staging_bytes(); }
  bool staging_write(uint64_t off, const uint8_t *p, size_t n, std::string *err) override {
    const pause q;
    return in_.staging_write(off, p, n, err);
  }
  bool bar_write_without_bulk(int bar, uint64_t off, const uint32_t *dw, size_t n,
                              std::string *err) override {
    const pause p;
    return in_.bar_write_without_bulk(bar, off, dw, n, err);
  }
  uint64_t staging_trigger_bus_addr() const override { return in_.staging_trigger_bus_addr(); }
  bool staging_read_arm(uint64_t off, size_t n, std::string *err) override {
    const pause p;
    return in_.staging_read_arm(off, n, err);
  }
  bool staging_read_collect(uint8_t *p, size_t n, std::string *err) override {
    const pause q;
    return in_.staging_read_collect(p, n, err);
  }

 private:
  struct pause {
    pause() { ++in_fake; }
    ~pause() { --in_fake; }
  };
  am::pci_function &in_;
};

}  // namespace

TEST_CASE("a replay on the AM transport does no heap allocation in the host code") {
  gfx1100_model::options mo;
  mo.engine_twins = true;  // the fixture's code objects hold no real code
  gfx1100_model gpu(mo);
  gfx1100_direct direct(gpu);
  fake_excluded pci(direct);
  am::device_options o;
  o.firmware_dir = emu::synthetic_fw_dir();
  o.timeout_ms = 500;
  am::device d(pci, o);
  std::string err;
  REQUIRE_MESSAGE(d.boot(&err), err);
  gfx1100_transport t(d, gpu, "direct gfx1100 model");
  const std::vector<uint8_t> bytes = test::capture_build(test::amd_spec(test::reference_spec(1)));
  const fb::Capture *c = nullptr;
  REQUIRE_MESSAGE(capture_verify(bytes.data(), bytes.size(), "ref.cap", &c, &err,
                                 &hcq::amd_target) == CAPGRAPH_OK,
                  err);
  hcq::graph_options go = t.graph_options();
  go.timeout_ns = 500'000'000;
  std::unique_ptr<hcq::graph> g;
  REQUIRE_MESSAGE(
      hcq::graph::build(&t, &hcq::amd_target, c, "ref.cap", go, &g, &err) == CAPGRAPH_OK, err);
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  for (const fb::TensorInfo *ti : *c->inputs())
    memcpy(g->arena() + ti->offset(), (ti->name()->str() == "a" ? a : b).data(), ti->size());
  REQUIRE_MESSAGE(g->replay(&err) == CAPGRAPH_OK, err);  // the first replay may settle lazily

  // The mechanism counts: one allocation outside the fake is seen.
  counting = true;
  {
    std::vector<int> v(3);  // a heap allocation the compiler may not elide
    void *volatile keep = v.data();
    (void)keep;
  }
  counting = false;
  REQUIRE(allocations.load() == 1);

  allocations = 0;
  const uint64_t uploads = t.stats().upload_bytes, downloads = t.stats().download_bytes;
  capgraph_status st[3];
  counting = true;
  for (capgraph_status &s : st) s = g->replay(&err);
  counting = false;
  for (capgraph_status s : st) REQUIRE_MESSAGE(s == CAPGRAPH_OK, err);
  if (allocations.load() != 0 && std::getenv("CAPGRAPH_ALLOC_TRAP")) {  // find them under gdb
    counting = true;
    trap = true;
    (void)g->replay(&err);
  }
  // The replays moved data through vram_write/vram_read (the calls that used to allocate).
  CHECK(t.stats().upload_bytes > uploads);
  CHECK(t.stats().download_bytes > downloads);
  CHECK_MESSAGE(allocations.load() == 0, allocations.load(), " heap allocations during 3 replays");

  // Inputs and outputs larger than the SRAM cross through it and SDMA in chunks: that path
  // allocates nothing either.
  hcq::memory big;
  REQUIRE(t.alloc(600 * 1024, hcq::memory_kind::device, &big, &err) == CAPGRAPH_OK);
  for (size_t i = 0; i < big.size; ++i) big.cpu[i] = uint8_t(i * 3);
  const uint64_t chunks_in = t.stats().sdma_chunks_in, chunks_out = t.stats().sdma_chunks_out;
  allocations = 0;
  capgraph_status io[2];
  counting = true;
  io[0] = t.upload(big, 0, big.size, &err);
  io[1] = t.download(big, 0, big.size, &err);
  // Enough 4 KiB copies (44 bytes of SDMA packets each) to wrap the 64 KiB SDMA ring: its tail
  // is filled with NOPs on the way, which must not allocate either.
  for (int i = 0; i < 1600 && io[0] == CAPGRAPH_OK; ++i)
    io[0] = t.upload(big, 4096 * uint64_t(i % 100), 4096, &err);
  counting = false;
  for (capgraph_status s : io) REQUIRE_MESSAGE(s == CAPGRAPH_OK, err);
  CHECK(t.stats().sdma_chunks_in == chunks_in + 2 + 1600);
  CHECK(t.stats().sdma_chunks_out == chunks_out + 2);
  CHECK(big.cpu[12345] == uint8_t(12345 * 3));
  CHECK_MESSAGE(allocations.load() == 0, allocations.load(),
                " heap allocations in a 600 KiB SDMA upload + download and 1600 4 KiB uploads");
  t.free(big);
  g.reset();
  REQUIRE_MESSAGE(d.teardown(&err), err);
}
