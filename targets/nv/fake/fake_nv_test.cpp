// The HCQ core on the fake NVIDIA GPU (the real RM/UVM transport over the fake driver): replays
// match the CPU on every chip, launches chain, what a replay writes does not grow with the number
// of kernels, waits are bounded, timelines wrap, the fake refuses what it does not know, and the
// push buffers and QMDs of a small capture match their golden text.
#include "fake_nv.h"

#include <doctest/doctest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "amd_fixture.h"  // scale_chain_spec: a CPU capture, whatever the device
#include "capgraph_runtime.h"
#include "capture_verify.h"
#include "hcq/graph.h"
#include "nv_fixture.h"
#include "nv_methods.h"
#include "nv_transport.h"

using namespace capgraph;
using test::capture_spec;

namespace {

struct registered {
  registered() { nv::fake_nv_register(); }
} g_registered;

// A graph on its own fake GPU, built from a spec.
struct fake_run {
  std::vector<uint8_t> bytes;
  std::shared_ptr<nv::fake_rm> sys;
  std::unique_ptr<hcq::transport> dev;
  std::unique_ptr<hcq::graph> g;
  const fb::Capture *c = nullptr;

  capgraph_status build(const capture_spec &spec, hcq::graph_options opt, std::string *err,
                        const char *chip = "sm90", bool wedged = false) {
    // The fixture's kernels have host twins and no PTX: the transport is what is tested here.
    sys = std::make_shared<nv::fake_rm>(*nv::chip_find(chip), "580.142", wedged,
                                        nv::fake_nv_mode::twin);
    capgraph_status st = nv::nv_open_with(sys, nv::nv_paths{}, "nv", &dev, err);
    if (st != CAPGRAPH_OK) return st;
    bytes = test::capture_build(spec);
    st = capture_verify(bytes.data(), bytes.size(), "test.cap", &c, err, &hcq::nv_target);
    if (st != CAPGRAPH_OK) return st;
    hcq::graph_options o = opt;
    o.capture_attach = [this](const fb::Capture *c, const std::vector<uint64_t> &at,
                              std::string *e) { return sys->capture_attach(c, at, e); };
    return hcq::graph::build(dev.get(), &hcq::nv_target, c, "test.cap", o, &g, err);
  }
  float *tensor(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *list,
                const char *name) {
    for (const fb::TensorInfo *t : *list)
      if (t->name()->str() == name) return reinterpret_cast<float *>(g->arena() + t->offset());
    return nullptr;
  }
};

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

TEST_CASE("a capture replayed on the fake NVIDIA GPU gives the CPU's outputs, on every chip") {
  const capture_spec cpu = test::reference_spec(1);
  for (const char *chip : {"sm90", "sm89", "sm86"}) {
    CAPTURE(chip);
    api_model on_cpu(cpu, "cpu"),
        on_fake(test::nv_spec(cpu, chip), (std::string("fake-nv:twin:") + chip).c_str());
    INFO(on_fake.err);
    REQUIRE(on_cpu.st == CAPGRAPH_OK);
    REQUIRE(on_fake.st == CAPGRAPH_OK);
    for (int round = 0; round < 3; ++round) {
      std::vector<float> a, b;
      test::reference_inputs(test::k_reference_n, &a, &b);
      for (float &v : a) v += float(round);
      for (api_model *m : {&on_cpu, &on_fake}) {
        m->input_set("a", a);
        m->input_set("b", b);
        REQUIRE_MESSAGE(capgraph_run(m->m) == CAPGRAPH_OK, capgraph_error(m->m));
      }
      REQUIRE(capgraph_num_outputs(on_fake.m) == 3);
      for (int i = 0; i < 3; ++i) {
        CAPTURE(i);
        CHECK(on_cpu.output(i) == on_fake.output(i));  // the same host code ran: bit for bit
      }
    }
  }
}

TEST_CASE("kernels chain, and words written per replay do not grow with the number of kernels") {
  uint64_t words[2] = {};
  for (uint32_t kernels : {1u, 9u}) {
    fake_run r;
    std::string err;
    REQUIRE_MESSAGE(
        r.build(test::nv_spec(test::scale_chain_spec(kernels)), {}, &err) == CAPGRAPH_OK, err);
    float *x = r.tensor(r.c->inputs(), "x");
    for (int i = 0; i < 64; ++i) x[i] = float(i);
    for (int round = 0; round < 3; ++round) REQUIRE_MESSAGE(r.g->replay(&err) == CAPGRAPH_OK, err);
    words[kernels > 1] = r.g->words_written();
    CHECK(r.sys->launches() == 3 * kernels);
    CHECK(r.sys->chained() ==
          3 * (kernels - 1));  // one SEND_PCAS per replay, the rest by DEPENDENT_QMD0
    float *y = r.tensor(r.c->outputs(), "y");
    for (int i = 0; i < 64; ++i) {
      float v = float(i);
      for (uint32_t k = 0; k < kernels; ++k) v = v * 1.7f + 0.3f;
      CHECK(y[i] == doctest::Approx(v).epsilon(1e-5));
    }
    std::vector<uint64_t> ns(r.g->steps());
    r.g->step_times(ns.data());  // from the QMD release reports and the copy engine's
  }
  MESSAGE("words written per replay: " << words[0]);
  CHECK(words[0] == words[1]);
  CHECK(words[0] > 0);
  CHECK(words[0] < 64);
}

TEST_CASE("a wedged GPU makes replay time out within its bound") {
  fake_run r;
  std::string err;
  hcq::graph_options opt;
  opt.timeout_ns = 200'000'000;
  REQUIRE(r.build(test::nv_spec(test::scale_chain_spec(2)), opt, &err, "sm90", true) ==
          CAPGRAPH_OK);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(r.g->replay(&err) == CAPGRAPH_ERR_TIMEOUT);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s >= 0.2);
  CHECK(s < 2.0);
  CHECK(err.find("timed out after 200 ms") != std::string::npos);
  CHECK(err.find("compute channel GPGet 0, GPPut") != std::string::npos);
}

TEST_CASE("the timeline runs through 2^64") {
  fake_run r;
  std::string err;
  hcq::graph_options opt;
  opt.timeline_start = ~0ull - 2;
  REQUIRE(r.build(test::nv_spec(test::scale_chain_spec(2)), opt, &err) == CAPGRAPH_OK);
  for (int i = 0; i < 5; ++i) REQUIRE_MESSAGE(r.g->replay(&err) == CAPGRAPH_OK, err);
  CHECK(r.g->timeline() == 2);
}

TEST_CASE("the fake refuses methods and QMDs it does not know, naming them") {
  fake_run r;
  std::string err;
  REQUIRE(r.build(test::nv_spec(test::scale_chain_spec(1)), {}, &err) == CAPGRAPH_OK);
  REQUIRE(r.g->replay(&err) == CAPGRAPH_OK);
  hcq::queue q;
  // The graph holds the compute channel; a second transport on the same fake driver is refused, so
  // the copy channel of a fresh graph-less transport takes the bad words.
  auto sys = std::make_shared<nv::fake_rm>(*nv::chip_find("sm90"), "580.142", false);
  std::unique_ptr<hcq::transport> dev;
  REQUIRE(nv::nv_open_with(sys, nv::nv_paths{}, "nv", &dev, &err) == CAPGRAPH_OK);
  REQUIRE(dev->queue_create(hcq::queue_kind::compute, 4096, &q, &err) == CAPGRAPH_OK);
  SUBCASE("an unknown compute method") {
    const uint32_t w[] = {nv::method_header(1, 0, 1), 0xCBC0, nv::method_header(1, 0x1234, 1), 7};
    dev->submit(q, w, 4);
    CHECK(sys->fault().find(
              "compute (0xcbc0) method 0x1234 on subchannel 1 is not one the fake knows") !=
          std::string::npos);
  }
  SUBCASE("the wrong class on a subchannel") {
    const uint32_t w[] = {nv::method_header(1, 0, 1), 0xC7C0};
    dev->submit(q, w, 2);
    CHECK(sys->fault().find("SET_OBJECT 0xc7c0 on subchannel 1") != std::string::npos);
  }
  SUBCASE("a QMD of the wrong version") {
    hcq::memory m;
    REQUIRE(dev->alloc(4096, hcq::memory_kind::host, &m, &err) == CAPGRAPH_OK);
    memset(m.cpu, 0, 4096);
    m.cpu[72] = 0x30;  // QMD_MAJOR_VERSION (bits 583:580) = 3 on a Hopper
    const uint32_t w[] = {nv::method_header(1, 0, 1),     0xCBC0,
                          nv::method_header(1, 0x2b4, 1), uint32_t(m.gpu >> 8),
                          nv::method_header(1, 0x2c0, 1), 9};
    dev->submit(q, w, 6);
    CHECK(sys->fault().find("QMD_MAJOR_VERSION 3, sm90 takes 4") != std::string::npos);
  }
  // The transport reports the fault on its next wait.
  uint64_t never = 0;
  CHECK(dev->wait(&never, 1, 1'000'000'000, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("device error") != std::string::npos);
}

TEST_CASE(
    "captures for other devices, and kernels the runtime cannot launch, are refused at load") {
  const capture_spec cpu = test::reference_spec(1);
  SUBCASE("a Hopper capture on an Ampere fake") {
    api_model m(test::nv_spec(cpu, "sm90"), "fake-nv:sm86:twin");
    CHECK(m.st == CAPGRAPH_ERR_TARGET);
    CHECK(m.err.find("compiled for nv-sm90, but the device nv:0 (Ampere GA10x, sm86") !=
          std::string::npos);
  }
  SUBCASE("a kernel with local memory") {
    capture_spec s = test::nv_spec(cpu);
    s.nv[1].frame_bytes = 64;
    api_model m(s, "fake-nv:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("needs 64 bytes of local memory") != std::string::npos);
  }
  SUBCASE("parameters outside constant bank 0") {
    capture_spec s = test::nv_spec(cpu);
    s.nv[0].cbank0_bytes = s.nv[0].param_offset + 8;
    api_model m(s, "fake-nv:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("do not fit constant bank 0") != std::string::npos);
  }
  SUBCASE("a QMD version that is not the chip's") {
    capture_spec s = test::nv_spec(cpu, "sm86");
    s.nv[0].qmd_version = 4;
    api_model m(s, "fake-nv:sm86:twin");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("qmd_version 4 is not sm86's") != std::string::npos);
  }
  SUBCASE("a capture without PTX on the default (interpreting) fake") {
    api_model m(test::nv_spec(cpu), "fake-nv");
    CHECK(m.st == CAPGRAPH_ERR_FORMAT);
    CHECK(m.err.find("kernel 0 '" + cpu.kernels[0].name + "' carries no PTX") != std::string::npos);
    CHECK(m.err.find("fake-nv:twin runs its host twin instead") != std::string::npos);
  }
  SUBCASE("an unknown fake word") {
    api_model m(test::nv_spec(cpu), "fake-nv:sm75");
    CHECK(m.st == CAPGRAPH_ERR_ARGUMENT);
    CHECK(m.err.find("'sm75' is neither a chip") != std::string::npos);
  }
  SUBCASE("the fake's driver version is refused like a real one") {
    api_model m(test::nv_spec(cpu), "fake-nv:twin:driver=610.43.03");
    CHECK(m.st == CAPGRAPH_ERR_DEVICE);
    CHECK(m.err.find("NVIDIA driver 610.43.03: its RM/UVM ABI is not one this runtime knows") !=
          std::string::npos);
  }
}

TEST_CASE("the push buffers and QMDs of a small capture match their golden text") {
  for (const char *chip : {"sm90", "sm86"}) {
    CAPTURE(chip);
    fake_run r;
    std::string err;
    REQUIRE(r.build(test::nv_spec(test::scale_chain_spec(2, 300), chip), {}, &err, chip) ==
            CAPGRAPH_OK);
    REQUIRE(r.g->replay(&err) == CAPGRAPH_OK);
    const nv::chip &c = *nv::chip_find(chip);
    const auto dump = [&](const std::vector<uint32_t> &w) {
      return nv::push_text(c, w.data(), w.size());
    };
    const std::string text = "# compute channel, recorded once\n" + dump(r.g->compute_commands()) +
                             "# compute channel, written per replay\n" +
                             dump(r.g->compute_ring_commands()) +
                             "# copy channel, written per replay\n" + dump(r.g->copy_commands()) +
                             "# QMDs as the fake read them\n" + r.sys->qmd_log();
    CHECK(text.find("ERROR") == std::string::npos);
    const std::string path = std::string("testdata/small_capture_") + chip + ".golden";
    if (getenv("CAPGRAPH_UPDATE_GOLDEN")) {
      std::ofstream(path) << text;
      MESSAGE("wrote " << path);
    }
    std::ifstream f(path);
    REQUIRE_MESSAGE(f.good(), path << " is missing (CAPGRAPH_UPDATE_GOLDEN=1 writes it)");
    std::stringstream golden;
    golden << f.rdbuf();
    // The golden addresses are those of the transport's first 128 GiB range (64 GiB up). Under
    // AddressSanitizer that range is in the shadow gap and the transport takes a low one, so every
    // address differs: there the text is only checked for errors (the release suite compares it).
    if (r.g->arena() < reinterpret_cast<uint8_t *>(0x1000000000ull)) {
      MESSAGE(
          "the GPU address range is the low fallback (a sanitizer build): golden addresses not "
          "compared");
      continue;
    }
    CHECK(text == golden.str());
  }
}

TEST_CASE(
    "GPFIFO submission: method runs go to the push ring, calls become GP entries, bad streams "
    "submit nothing") {
  std::vector<uint32_t> entries(16, 0), push(64, 0);
  uint32_t gp_put = 0;
  nv::gpfifo f;
  f.entries = entries.data();
  f.count = 8;
  f.gp_put = &gp_put;
  f.push = push.data();
  f.push_gpu = 0x10000000;
  f.push_dwords = push.size();
  std::string err;
  const uint32_t call[3] = {nv::kCallToken, 0x20000000, 0x10 | 1u << 9 | 100u << 10};
  std::vector<uint32_t> words = {nv::method_header(0, 0x78, 1), 0};  // WFI
  words.insert(words.end(), call, call + 3);
  words.insert(words.end(), {nv::method_header(0, 0x5c, 2), 0x1000, 0});
  CHECK(nv::nv_gpfifo_submit(f, words.data(), words.size(), &err) == 2 + 2 + 2 + 3 + 2 + 1);
  CHECK(err == "");
  CHECK(gp_put == 3);
  // Entry 0: the WFI run, at the push ring's start, 2 words, subroutine level.
  CHECK(entries[0] == 0x10000000);
  CHECK(entries[1] == (1u << 9 | 2u << 10));
  CHECK(entries[2] == 0x20000000);  // the call, as written
  CHECK(entries[3] == call[2]);
  CHECK(entries[4] == 0x10000000 + 8);  // the next run follows in the push ring
  CHECK(entries[5] == (1u << 9 | 3u << 10));
  CHECK(push[2] == nv::method_header(0, 0x5c, 2));
  // A word that is no method header this runtime writes, or a stream longer than the push ring.
  const uint32_t bad[] = {0x12345678};
  CHECK(nv::nv_gpfifo_submit(f, bad, 1, &err) == 0);
  CHECK(err.find("0x12345678) is not a method header") != std::string::npos);
  std::vector<uint32_t> big(65, 0);
  err.clear();
  CHECK(nv::nv_gpfifo_submit(f, big.data(), big.size(), &err) == 0);
  CHECK(err.find("does not fit the 64-word push ring") != std::string::npos);
  CHECK(gp_put == 3);
}
