// The HCQ core on the fake AMD GPU: replays match the CPU, what a replay writes does not grow with
// the number of kernels, waits are bounded, timelines wrap, and the command streams of a small
// capture match their golden text.
#include "fake_amd.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "amd_fixture.h"
#include "amd_hcq.h"
#include "capgraph_runtime.h"
#include "capture_model.h"
#include "capture_verify.h"
#include "hcq/graph.h"
#include "hcq/signal.h"

using namespace capgraph;
using test::capture_spec;

namespace {

struct registered {
  registered() { amd::fake_amd_register(); }
} g_registered;

// A graph on its own fake GPU, built from a spec (bytes kept alive and verified for AMD).
struct fake_run {
  std::vector<uint8_t> bytes;
  amd::fake_gpu gpu{*amd::chip_find("gfx1100"), amd::fake_mode::twin};
  std::unique_ptr<hcq::graph> g;
  const fb::Capture *c = nullptr;

  capgraph_status build(const capture_spec &spec, hcq::graph_options opt, std::string *err) {
    bytes = test::capture_build(spec);
    capgraph_status st =
        capture_verify(bytes.data(), bytes.size(), "test.cap", &c, err, &hcq::amd_target);
    if (st != CAPGRAPH_OK) return st;
    return hcq::graph::build(&gpu, &hcq::amd_target, c, "test.cap",
                             amd::graph_options_for(gpu, opt), &g, err);
  }
  float *tensor(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *list,
                const char *name) {
    for (const fb::TensorInfo *t : *list)
      if (t->name()->str() == name) return reinterpret_cast<float *>(g->arena() + t->offset());
    return nullptr;
  }
};

std::vector<float> scale_expected(const std::vector<float> &x, uint32_t kernels) {
  std::vector<float> y = x;
  for (uint32_t k = 0; k < kernels; ++k)
    for (float &v : y) v = v * 1.7f + 0.3f;
  return y;
}

struct api_model {
  capgraph_model *m = nullptr;
  capgraph_status st;
  std::string err;
  api_model(const capture_spec &spec, const char *device) {
    const std::string path = test::temp_path("m.cap");
    test::file_write(path, test::capture_build(spec));
    char buf[1024] = "";
    st = capgraph_load_device(path.c_str(), device, nullptr, &m, buf, sizeof buf);
    err = buf;
  }
  ~api_model() { capgraph_free(m); }
  void input_set(const char *name, const std::vector<float> &v) {
    capgraph_tensor t;
    REQUIRE(capgraph_input(m, capgraph_input_index(m, name), &t) == CAPGRAPH_OK);
    REQUIRE(t.size_bytes == v.size() * 4);
    memcpy(t.data, v.data(), t.size_bytes);
  }
  std::vector<uint8_t> output(int i) {
    capgraph_tensor t;
    REQUIRE(capgraph_output(m, i, &t) == CAPGRAPH_OK);
    const uint8_t *p = static_cast<const uint8_t *>(t.data);
    return std::vector<uint8_t>(p, p + t.size_bytes);
  }
};

}  // namespace

TEST_CASE("a PM4 dispatch's RSRC2 carries the kernel's LDS in 512-byte blocks") {
  // The descriptor's RSRC2 has LDS_SIZE 0 (HSA takes LDS from the AQL packet); without the
  // group segment in it, a tiled kernel's first ds_store faults in the emulator.
  const uint32_t desc = 0x9e;  // user SGPRs, workgroup id X: what LLVM writes for our kernels
  const amd::chip &gfx1100 = *amd::chip_find("gfx1100");
  uint32_t r = 0;
  REQUIRE(hcq::amd_rsrc2_with_lds(gfx1100, desc, 0, &r));
  CHECK(r == desc);
  REQUIRE(hcq::amd_rsrc2_with_lds(gfx1100, desc, 8192, &r));
  CHECK(r == (desc | 16u << 15));
  REQUIRE(hcq::amd_rsrc2_with_lds(gfx1100, desc, 5121, &r));  // rounded up to whole blocks
  CHECK(((r >> 15) & 0x1ff) == 11);
  CHECK((r & ~(0x1ffu << 15)) == desc);
  REQUIRE(hcq::amd_rsrc2_with_lds(gfx1100, desc, 65536, &r));
  CHECK(((r >> 15) & 0x1ff) == 128);
  CHECK_FALSE(hcq::amd_rsrc2_with_lds(gfx1100, desc, 65537, &r));
}

TEST_CASE("a capture replayed on the fake AMD GPU gives the CPU's outputs") {
  const capture_spec cpu = test::reference_spec(1);
  api_model on_cpu(cpu, "cpu"), on_fake(test::amd_spec(cpu), "fake-amd:twin");
  INFO(on_fake.err);
  REQUIRE(on_cpu.st == CAPGRAPH_OK);
  REQUIRE(on_fake.st == CAPGRAPH_OK);
  CHECK(capgraph_num_steps(on_fake.m) == 5);
  for (int round = 0; round < 3; ++round) {
    std::vector<float> a, b;
    test::reference_inputs(test::k_reference_n, &a, &b);
    for (float &v : a) v += float(round);  // each replay sees new inputs
    for (api_model *m : {&on_cpu, &on_fake}) {
      m->input_set("a", a);
      m->input_set("b", b);
      REQUIRE(capgraph_run(m->m) == CAPGRAPH_OK);
    }
    REQUIRE(capgraph_num_outputs(on_fake.m) == 3);
    for (int i = 0; i < 3; ++i) {
      CAPTURE(i);
      const std::vector<uint8_t> want = on_cpu.output(i), got = on_fake.output(i);
      CHECK(want == got);  // the same host code ran: bit for bit
    }
  }
  // And the outputs are right, not just equal.
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  for (float &v : a) v += 2.0f;
  const auto want = test::reference_expected(a, b, test::reference_weight(test::k_reference_n));
  const std::vector<uint8_t> y = on_fake.output(0);
  for (size_t i = 0; i < want.y.size(); i += 97) {
    float v;
    memcpy(&v, y.data() + 4 * i, 4);
    CHECK(v == doctest::Approx(want.y[i]).epsilon(1e-5));
  }
}

TEST_CASE("per-step times come from the engines' timestamps") {
  api_model m(test::amd_spec(test::reference_spec(1)), "fake-amd:twin");
  REQUIRE(m.st == CAPGRAPH_OK);
  uint64_t ns[5] = {};
  CHECK(capgraph_run_timed(m.m, ns, 4) == CAPGRAPH_ERR_ARGUMENT);  // room for 5 is needed
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(capgraph_run_timed(m.m, ns, 5) == CAPGRAPH_OK);
  const uint64_t wall = uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  uint64_t sum = 0;
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(ns[i] > 0);  // every step, launches and the SDMA copy, wrote its timestamp
    sum += ns[i];
  }
  CHECK(sum <= wall);
}

TEST_CASE("every chip replays the capture with its own packet flavours") {
  const capture_spec cpu = test::reference_spec(1);
  api_model on_cpu(cpu, "cpu");
  REQUIRE(on_cpu.st == CAPGRAPH_OK);
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  on_cpu.input_set("a", a);
  on_cpu.input_set("b", b);
  REQUIRE(capgraph_run(on_cpu.m) == CAPGRAPH_OK);
  for (const char *chip : {"gfx1100", "gfx1200", "gfx1201", "gfx942"}) {
    CAPTURE(chip);
    api_model m(test::amd_spec(cpu, chip), ("fake-amd:twin:" + std::string(chip)).c_str());
    REQUIRE_MESSAGE(m.st == CAPGRAPH_OK, m.err);
    m.input_set("a", a);
    m.input_set("b", b);
    REQUIRE_MESSAGE(capgraph_run(m.m) == CAPGRAPH_OK, capgraph_error(m.m));
    for (int i = 0; i < 3; ++i) CHECK(m.output(i) == on_cpu.output(i));
    // The fake refuses the other chip family's ACQUIRE_MEM layout, so a pass means the encoder
    // chose the chip's own (gfx9: CP_COHER_CNTL; gfx10+: GCR_CNTL).
    const auto &w = m.m->graph->compute_commands();
    const std::string text = amd::stream_text(amd::engine::pm4, w.data(), w.size(), nullptr);
    const bool gfx9 = std::string(chip) == "gfx942";
    CHECK((text.find("gcr_cntl=0xc3f1") != std::string::npos) == !gfx9);
    CHECK((text.find("coher_cntl=0x28c40000") != std::string::npos) == gfx9);
  }
  // CDNA runs wave64 only: a wave32 kernel is refused, naming it.
  capture_spec wave32 = test::amd_spec(cpu, "gfx942");
  wave32.target = "amd-gfx942";
  wave32.programs.back().binary = test::amd_code_object(wave32.kernels, 32);
  for (auto &k : wave32.amd) {
    k.kernel_code_properties |= 1u << 10;
    k.wavefront_size = 32;
  }
  api_model refused(wave32, "fake-amd:twin:gfx942");
  CHECK(refused.st == CAPGRAPH_ERR_FORMAT);
  CHECK(refused.err.find("kernel 0 'add_table' is wave32, which gfx942 does not run") !=
        std::string::npos);
}

TEST_CASE("a GPU capture from before the KernelFacts union is refused with a clear error") {
  // Version 1.1 kept the AMD facts in Kernel.amd; this runtime reads them from Kernel.facts.
  capture_spec old = test::amd_spec(test::scale_chain_spec(2));
  old.version_major = 1;
  old.version_minor = 1;
  api_model m(old, "fake-amd");
  CHECK(m.st == CAPGRAPH_ERR_VERSION);
  CHECK(m.err.find("version 1.1 is a GPU capture from an older capgraph") != std::string::npos);
  CHECK(m.err.find("compile the model again") != std::string::npos);
  // The same capture on the CPU names the devices that run it (the registry's, not a vendor list).
  api_model cpu(test::amd_spec(test::scale_chain_spec(2)), "cpu");
  CHECK(cpu.st == CAPGRAPH_ERR_TARGET);
  CHECK(cpu.err.find("compiled for amd-gfx1100; run it with --device amd") != std::string::npos);
  CHECK(cpu.err.find("fake-amd") != std::string::npos);
}

TEST_CASE("words written per replay do not grow with the number of kernels") {
  uint64_t words[3] = {};
  const uint32_t counts[3] = {1, 10, 100};
  for (int i = 0; i < 3; ++i) {
    fake_run r;
    std::string err;
    REQUIRE_MESSAGE(
        r.build(test::amd_spec(test::scale_chain_spec(counts[i])), {}, &err) == CAPGRAPH_OK, err);
    std::vector<float> x(64);
    for (size_t j = 0; j < x.size(); ++j) x[j] = float(j) * 0.01f - 0.3f;
    memcpy(r.tensor(r.c->inputs(), "x"), x.data(), x.size() * 4);
    for (int rep = 0; rep < 3; ++rep) REQUIRE_MESSAGE(r.g->replay(&err) == CAPGRAPH_OK, err);
    words[i] = r.g->words_written();
    CHECK(r.gpu.dispatches() == 3ull * counts[i]);
    const std::vector<float> want = scale_expected(x, counts[i]);
    const float *y = r.tensor(r.c->outputs(), "y"), *xc = r.tensor(r.c->outputs(), "x_copy");
    for (size_t j = 0; j < x.size(); ++j) {
      CHECK(y[j] == doctest::Approx(want[j]).epsilon(1e-5));
      CHECK(xc[j] == x[j]);
    }
    MESSAGE(counts[i] << " kernels: " << words[i] << " words written per replay, "
                      << r.g->compute_commands().size() << " recorded once");
  }
  CHECK(words[0] > 0);
  CHECK(words[0] < 100);
  CHECK(words[0] == words[1]);
  CHECK(words[1] == words[2]);
}

TEST_CASE("each replay ends with one interrupt for the transport's event") {
  fake_run r;
  std::string err;
  REQUIRE(r.build(test::amd_spec(test::scale_chain_spec(4)), {}, &err) == CAPGRAPH_OK);
  uint64_t mailbox;
  uint32_t id;
  REQUIRE(r.gpu.interrupt_target(&mailbox, &id));
  for (int i = 0; i < 3; ++i) REQUIRE(r.g->replay(&err) == CAPGRAPH_OK);
  CHECK(r.gpu.interrupts() == 3);
  CHECK(r.gpu.last_interrupt_id() == id);
  uint32_t written;
  memcpy(&written, r.gpu.host(mailbox, 4), 4);
  CHECK(written == id);
}

TEST_CASE("a wedged GPU makes replay time out within its bound") {
  fake_run r;
  std::string err;
  hcq::graph_options opt;
  opt.timeout_ns = 100'000'000;  // 100 ms
  REQUIRE(r.build(test::amd_spec(test::scale_chain_spec(3)), opt, &err) == CAPGRAPH_OK);
  REQUIRE(r.g->replay(&err) == CAPGRAPH_OK);
  r.gpu.wedge(true);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(r.g->replay(&err) == CAPGRAPH_ERR_TIMEOUT);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  INFO(err);
  CHECK(ms >= 100);
  CHECK(ms < 600);
  CHECK(err.find("timed out after 100 ms") != std::string::npos);
  CHECK(err.find("stuck at") != std::string::npos);
}

TEST_CASE("through the C API a timeout is reported and sticks") {
  // A device whose waits are never satisfied, and a 100 ms bound from the environment.
  hcq::target_register(
      "fake-amd-wedged",
      [](const char *, std::unique_ptr<hcq::transport> *out, std::string *) {
        auto g = std::make_unique<amd::fake_gpu>(*amd::chip_find("gfx1100"), amd::fake_mode::twin);
        g->wedge(true);
        *out = std::move(g);
        return CAPGRAPH_OK;
      },
      &hcq::amd_target, nullptr, &amd::fake_amd_attach);
  setenv("CAPGRAPH_TIMEOUT_MS", "100", 1);
  api_model m(test::amd_spec(test::scale_chain_spec(2)), "fake-amd-wedged");
  unsetenv("CAPGRAPH_TIMEOUT_MS");
  REQUIRE_MESSAGE(m.st == CAPGRAPH_OK, m.err);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(capgraph_run(m.m) == CAPGRAPH_ERR_TIMEOUT);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms < 600);
  const std::string msg = capgraph_error(m.m);
  CHECK(msg.find("m.cap: fake-amd: timed out after 100 ms") != std::string::npos);
  CHECK(capgraph_run(m.m) == CAPGRAPH_ERR_TIMEOUT);  // sticky: the device state is unknown
  setenv("CAPGRAPH_TIMEOUT_MS", "0", 1);
  api_model bad(test::amd_spec(test::scale_chain_spec(2)), "fake-amd:twin");
  unsetenv("CAPGRAPH_TIMEOUT_MS");
  CHECK(bad.st == CAPGRAPH_ERR_ARGUMENT);
  CHECK(bad.err.find("CAPGRAPH_TIMEOUT_MS must be") != std::string::npos);
}

TEST_CASE("the timeline runs through 2^64") {
  fake_run r;
  std::string err;
  hcq::graph_options opt;
  opt.timeline_start = UINT64_MAX - 2;
  REQUIRE(r.build(test::amd_spec(test::scale_chain_spec(2)), opt, &err) == CAPGRAPH_OK);
  for (int i = 0; i < 5; ++i) REQUIRE_MESSAGE(r.g->replay(&err) == CAPGRAPH_OK, err);
  CHECK(r.g->timeline() == 2);  // UINT64_MAX - 2 + 5, wrapped
  CHECK(r.gpu.dispatches() == 10);
  CHECK(hcq::timeline_reached(1, UINT64_MAX));
  CHECK_FALSE(hcq::timeline_reached(UINT64_MAX, 1));
}

TEST_CASE("the fake GPU fails loudly on a packet it does not know") {
  amd::fake_gpu gpu(*amd::chip_find("gfx1100"), amd::fake_mode::twin);
  hcq::queue q;
  hcq::memory sig;
  std::string err;
  REQUIRE(gpu.queue_create(hcq::queue_kind::compute, 4096, &q, &err) == CAPGRAPH_OK);
  REQUIRE(gpu.alloc(64, hcq::memory_kind::host, &sig, &err) == CAPGRAPH_OK);
  auto *ring = reinterpret_cast<uint32_t *>(q.ring.cpu);
  ring[0] = 0xC0001200u;  // CLEAR_STATE: a real packet, not one the fake runs
  ring[1] = 0;
  *q.write_ptr = 2;
  gpu.doorbell(q, 2);
  const auto *value = reinterpret_cast<volatile uint64_t *>(sig.cpu);
  CHECK(gpu.wait(value, 1, 1'000'000'000, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("unknown PM4 opcode 0x12") != std::string::npos);
}

TEST_CASE("captures for the other kind of device are refused, naming the device to use") {
  api_model amd_on_cpu(test::amd_spec(test::reference_spec(1)), "cpu");
  CHECK(amd_on_cpu.st == CAPGRAPH_ERR_TARGET);
  // The devices come from the registry (other tests here add fake-amd-wedged).
  CHECK(amd_on_cpu.err.find("compiled for amd-gfx1100; run it with --device amd") !=
        std::string::npos);
  CHECK(amd_on_cpu.err.find("fake-amd") != std::string::npos);
  api_model cpu_on_fake(test::reference_spec(1), "fake-amd:twin");
  CHECK(cpu_on_fake.st == CAPGRAPH_ERR_TARGET);
  CHECK(cpu_on_fake.err.find("run it with --device cpu") != std::string::npos);
  api_model other_chip(test::amd_spec(test::reference_spec(1), "gfx1200"), "fake-amd:twin");
  CHECK(other_chip.st == CAPGRAPH_ERR_TARGET);
  CHECK(other_chip.err.find("compiled for gfx1200, but the device fake-amd") != std::string::npos);
  api_model same_chip(test::amd_spec(test::reference_spec(1), "gfx1200"), "fake-amd:twin:gfx1200");
  CHECK_MESSAGE(same_chip.st == CAPGRAPH_OK, same_chip.err);
  api_model unknown(test::reference_spec(1), "tpu");
  CHECK(unknown.st == CAPGRAPH_ERR_ARGUMENT);
  CHECK(unknown.err.find("unknown device 'tpu' (known: cpu, amd") != std::string::npos);
}

TEST_CASE("kernels whose facts disagree with their code object are refused at load") {
  SUBCASE("RSRC1 in AmdKernel differs from the descriptor") {
    capture_spec s = test::amd_spec(test::reference_spec(1));
    s.amd[1].rsrc1 ^= 1;
    api_model m(s, "fake-amd:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("kernel 1 'scale': AmdKernel's rsrc1") != std::string::npos);
  }
  SUBCASE("a kernel asks for the dispatch packet pointer") {
    capture_spec s = test::amd_spec(test::reference_spec(1));
    const uint16_t props = s.amd[0].kernel_code_properties | 2;
    s.amd[0].kernel_code_properties = props;
    s.programs.back().binary[test::amd_descriptor_offset(0) + 56] = uint8_t(props);
    api_model m(s, "fake-amd:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("enables user SGPRs this runtime does not provide") != std::string::npos);
  }
  SUBCASE("a kernel needs scratch") {
    capture_spec s = test::amd_spec(test::reference_spec(1));
    s.amd[2].private_segment_size = 16;
    // private_segment_fixed_size, byte 4 of the descriptor: the facts agree with the code.
    s.programs.back().binary[test::amd_descriptor_offset(2) + 4] = 16;
    api_model m(s, "fake-amd:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("bytes of scratch") != std::string::npos);
  }
  SUBCASE("a kernarg block smaller than its arguments") {
    capture_spec s = test::amd_spec(test::reference_spec(1));
    s.amd[3].kernarg_size = 8;
    api_model m(s, "fake-amd:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("kernarg_size 8 is less than the 24 bytes") != std::string::npos);
  }
  SUBCASE("sizes that disagree with the kernel descriptor (fuzz_gpu_capture)") {
    capture_spec s = test::amd_spec(test::reference_spec(1));
    s.amd[3].kernarg_size = 1u << 31;  // once a 2 GiB kernel-argument allocation
    api_model big(s, "fake-amd:twin");
    CHECK(big.st == CAPGRAPH_ERR_FORMAT);
    CHECK(big.err.find("kernarg_size 2147483648, group_segment_size 0 or private_segment_size 0 "
                       "disagrees with its kernel descriptor's 24, 0, 0") != std::string::npos);
    s = test::amd_spec(test::reference_spec(1));
    s.amd[1].private_segment_size = 64;
    api_model scratch(s, "fake-amd:twin");
    CHECK(scratch.st == CAPGRAPH_ERR_FORMAT);
    CHECK(scratch.err.find("kernel 1 'scale': kernarg_size") != std::string::npos);
  }
  SUBCASE("no host twin: the fake says it cannot run the kernel") {
    capture_spec s = test::amd_spec(test::reference_spec(1));
    s.amd[0].twin_program = -1;
    api_model m(s, "fake-amd:twin");
    REQUIRE(m.st == CAPGRAPH_OK);
    CHECK(capgraph_run(m.m) == CAPGRAPH_ERR_DEVICE);
    CHECK(std::string(capgraph_error(m.m)).find("has no host twin") != std::string::npos);
    CHECK(capgraph_run(m.m) == CAPGRAPH_ERR_DEVICE);  // sticky
  }
}

TEST_CASE("the command streams of a small capture match their golden text") {
  fake_run r;
  std::string err;
  REQUIRE(r.build(test::amd_spec(test::scale_chain_spec(2, 300)), {}, &err) == CAPGRAPH_OK);
  REQUIRE(r.g->replay(&err) == CAPGRAPH_OK);
  const auto dump = [](amd::engine e, const std::vector<uint32_t> &w) {
    return amd::stream_text(e, w.data(), w.size(), &amd::register_name);
  };
  const std::string text =
      "# compute queue, recorded once (indirect buffer)\n" +
      dump(amd::engine::pm4, r.g->compute_commands()) + "# compute ring, written per replay\n" +
      dump(amd::engine::pm4, r.g->compute_ring_commands()) +
      "# copy queue (SDMA), written per replay\n" + dump(amd::engine::sdma, r.g->copy_commands());
  CHECK(text.find("ERROR") == std::string::npos);
  const std::string path = "testdata/small_capture.golden";
  if (getenv("CAPGRAPH_UPDATE_GOLDEN")) {
    std::ofstream(path) << text;
    MESSAGE("wrote " << path);
  }
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), path << " is missing (CAPGRAPH_UPDATE_GOLDEN=1 writes it)");
  std::stringstream golden;
  golden << f.rdbuf();
  CHECK(text == golden.str());
}

TEST_CASE(
    "fake-amd runs the machine code: code it cannot decode is a device error naming the kernel") {
  // The fixture's code objects hold a gfx10 s_endpgm (SOPP opcode 1), no gfx11 instruction: the
  // default mode must refuse it rather than fall back to the host twin.
  api_model m(test::amd_spec(test::scale_chain_spec(1)), "fake-amd");
  REQUIRE_MESSAGE(m.st == CAPGRAPH_OK, m.err);
  m.input_set("x", std::vector<float>(64, 1.0f));
  CHECK(capgraph_run(m.m) == CAPGRAPH_ERR_DEVICE);
  const std::string msg = capgraph_error(m.m);
  CHECK(msg.find("RDNA3 emulator: kernel '") != std::string::npos);
  CHECK(msg.find("unknown SOPP opcode 0x1") != std::string::npos);
  // Device words: a chip and a mode in any order; anything else is refused by name.
  api_model bad(test::amd_spec(test::scale_chain_spec(1)), "fake-amd:check:gfx9999");
  CHECK(bad.st == CAPGRAPH_ERR_ARGUMENT);
  CHECK(bad.err.find("'gfx9999' is neither a chip nor one of check, twin, profile") !=
        std::string::npos);
}
