// The real KGSL transport (drivers/kgsl) against the fake KGSL at its ioctl seam: what it says
// without a device, memory with GPU address = CPU address, imports of caller memory at the
// driver's address, a submission raising a 64-bit signal, faults the fake finds in a command
// stream (parity, unknown registers, a wait that can never be met) as device errors, the chip
// check naming both chips, and a wedged GPU giving a timeout within its bound.
#include "fake_kgsl.h"

#include <doctest/doctest.h>
#include <sys/mman.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "adreno_hcq.h"
#include "adreno_pm4.h"
#include "hcq/signal.h"
#include "hcq/word_compare.h"
#include "kgsl_transport.h"

using namespace capgraph;
using namespace capgraph::adreno;

namespace {

struct opened {
  std::shared_ptr<fake_kgsl> fake = std::make_shared<fake_kgsl>();
  std::unique_ptr<hcq::transport> t;
  std::string err;
  capgraph_status st;
  explicit opened(uint32_t chip = adreno::chip_find("a630")->chip_id) {
    fake = std::make_shared<fake_kgsl>(chip);
    st = kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, &err);
  }
};

// A queue, a signal page and the words of one signal(value) in the Adreno encoder's packets.
struct submission {
  hcq::queue q;
  hcq::memory sig;
  std::vector<uint32_t> words;
};

void submission_make(hcq::transport &t, submission *s, uint64_t value) {
  std::string err;
  REQUIRE(t.queue_create(hcq::queue_kind::compute, 4096, &s->q, &err) == CAPGRAPH_OK);
  REQUIRE(t.alloc(4096, hcq::memory_kind::host, &s->sig, &err) == CAPGRAPH_OK);
  memset(s->sig.cpu, 0, 4096);
  auto enc = adreno_target.encoder_create(nullptr, hcq::queue_kind::compute, &s->words);
  enc->signal(s->sig.gpu, value);
  REQUIRE(enc->error().empty());
}

}  // namespace

TEST_CASE("kgsl: no /dev/kgsl-3d0 is a clear error, and devices says so") {
  auto fake = std::make_shared<fake_kgsl>();
  fake->absent(true);
  std::unique_ptr<hcq::transport> t;
  std::string err;
  CHECK(kgsl::kgsl_open_with(fake, "fake-adreno", "fake-adreno", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("no Adreno GPU: /dev/kgsl-3d0 is absent") != std::string::npos);
  CHECK(kgsl::kgsl_devices_describe(*fake).find("no Adreno GPU") != std::string::npos);
  // A device number other than 0 is refused by name.
  auto other = std::make_shared<fake_kgsl>();
  CHECK(kgsl::kgsl_open_with(other, "adreno", "adreno:1", &t, &err) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(err.find("adreno:1") != std::string::npos);
}

TEST_CASE("kgsl: the chip is read from the device and checked against the capture's") {
  opened a;
  REQUIRE(a.st == CAPGRAPH_OK);
  CHECK(a.t->chip_name() == "a630");
  CHECK(a.t->name().find("chip 0x6030001") != std::string::npos);
  fake_kgsl probe;
  CHECK(kgsl::kgsl_devices_describe(probe, "adreno")
            .find("adreno:0: fake Adreno a630 (chip 0x6030001, gpu_id 630), runs adreno-a630 "
                  "captures") != std::string::npos);
  std::string why;
  CHECK(adreno_chip_matches("adreno-a630", a.t->chip_name(), a.t->name(), &why));

  opened b(0x06040001);
  REQUIRE(b.st == CAPGRAPH_OK);
  CHECK(b.t->chip_name() == "a640");
  CHECK_FALSE(adreno_chip_matches("adreno-a630", b.t->chip_name(), b.t->name(), &why));
  CHECK(why.find("adreno-a630") != std::string::npos);
  CHECK(why.find("a640") != std::string::npos);
  fake_kgsl a640(0x06040001);
  CHECK(kgsl::kgsl_devices_describe(a640).find("capgraph compiles for adreno-a630 only") !=
        std::string::npos);
}

TEST_CASE(
    "kgsl: memory has its CPU address as GPU address; caller memory is imported at the driver's "
    "address") {
  opened a;
  REQUIRE(a.st == CAPGRAPH_OK);
  hcq::memory m;
  std::string err;
  REQUIRE(a.t->alloc(5000, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
  CHECK(m.size == 8192);
  CHECK(m.gpu == uint64_t(uintptr_t(m.cpu)));
  m.cpu[8191] = 7;  // mapped for the CPU
  a.t->free(m);
  CHECK(m.size == 0);

  void *buf = aligned_alloc(4096, 3 * 4096);
  REQUIRE(buf);
  hcq::memory u;
  REQUIRE(a.t->import(buf, 3 * 4096, &u, &err) == CAPGRAPH_OK);
  CHECK(u.cpu == buf);
  CHECK(u.gpu != uint64_t(uintptr_t(buf)));  // the fake's own GPU address: the runtime must use it
  CHECK(a.fake->imports() == 1);
  CHECK(a.fake->address_text(u.gpu + 8) == "user0+0x8");
  a.t->free(u);
  CHECK(a.t->import(static_cast<uint8_t *>(buf) + 64, 4096, &u, &err) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(err.find("page-aligned") != std::string::npos);
  free(buf);
}

TEST_CASE("kgsl: one submission raises a 64-bit signal through GPU_COMMAND") {
  opened a;
  REQUIRE(a.st == CAPGRAPH_OK);
  submission s;
  const uint64_t value = 0x100000005ull;  // the high word matters
  submission_make(*a.t, &s, value);
  CHECK(a.t->submit(s.q, s.words.data(), s.words.size()) == s.words.size());
  auto *sig = reinterpret_cast<hcq::signal *>(s.sig.cpu);
  std::string err;
  CHECK(a.t->wait(&sig->value, value, 1000000000ull, &err) == CAPGRAPH_OK);
  CHECK(sig->value == value);
  CHECK(sig->timestamp != 0);
  CHECK(a.fake->commands() == 1);
  CHECK(a.fake->fault().empty());
  // Again, wrapping to the start of the ring when the words no longer fit before its end.
  for (int i = 0; i < 100; ++i) a.t->submit(s.q, s.words.data(), s.words.size());
  CHECK(a.fake->commands() == 101);
  CHECK(a.fake->fault().empty());
  a.t->free(s.sig);
  a.t->queue_destroy(s.q);
}

TEST_CASE("kgsl: a wedged GPU gives a timeout within its bound, not a hang") {
  opened a;
  REQUIRE(a.st == CAPGRAPH_OK);
  a.fake->wedge(true);
  submission s;
  submission_make(*a.t, &s, 1);
  a.t->submit(s.q, s.words.data(), s.words.size());
  auto *sig = reinterpret_cast<hcq::signal *>(s.sig.cpu);
  std::string err;
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(a.t->wait(&sig->value, 1, 200000000ull, &err) == CAPGRAPH_ERR_TIMEOUT);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(ms >= 199);
  CHECK(ms < 1000);
  CHECK(err.find("timed out after 200 ms") != std::string::npos);
}

TEST_CASE("kgsl: the fake faults on a damaged header, an unknown register and a wait never met") {
  struct bad {
    std::vector<uint32_t> words;
    const char *fault;
  };
  const bad cases[] = {
      {{pkt7(CP_WAIT_FOR_IDLE, 0) ^ (1u << 15)}, "wrong count parity"},
      {{pkt4(0xa9be, 1), 0}, "unknown register 0xa9be"},
      {{pkt7(0x55, 0)}, "unknown opcode 0x55"},
      {{pkt7(CP_EXEC_CS, 4), 0, 1, 1, 1}, "CP_EXEC_CS"},
  };
  for (const bad &b : cases) {
    INFO(b.fault);
    opened a;
    REQUIRE(a.st == CAPGRAPH_OK);
    submission s;
    submission_make(*a.t, &s, 1);
    std::vector<uint32_t> words = b.words;
    words.insert(words.end(), s.words.begin(), s.words.end());
    a.t->submit(s.q, words.data(), words.size());
    auto *sig = reinterpret_cast<hcq::signal *>(s.sig.cpu);
    std::string err;
    CHECK(a.t->wait(&sig->value, 1, 1000000000ull, &err) == CAPGRAPH_ERR_DEVICE);
    CHECK(err.find("faulted") != std::string::npos);
    CHECK(a.fake->fault().find(b.fault) != std::string::npos);
    CHECK(sig->value == 0);  // the command stopped at the fault
  }
  // A wait on a value nothing will write (execution is serial) is a deadlock, reported.
  opened a;
  REQUIRE(a.st == CAPGRAPH_OK);
  submission s;
  submission_make(*a.t, &s, 1);
  std::vector<uint32_t> words;
  auto enc = adreno_target.encoder_create(nullptr, hcq::queue_kind::compute, &words);
  enc->wait(s.sig.gpu + 64, 3);
  a.t->submit(s.q, words.data(), words.size());
  std::string err;
  auto *sig = reinterpret_cast<hcq::signal *>(s.sig.cpu);
  CHECK(a.t->wait(&sig->value, 1, 1000000000ull, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(a.fake->fault().find("deadlock") != std::string::npos);
}

// float16 storage: the check compares a word's two halves as values (fake-adreno:check and
// capgraph run --check share the rule, runtime/hcq/word_compare.h).
TEST_CASE("check rule: float16 words compare as two halves") {
  using hcq::word_difference;
  // 1.0 and 1.0 + 1 ulp (0x3c00, 0x3c01) in the low half, 2.0 (0x4000) in the high half: as
  // float32 a different low half is a tiny difference too, but a high half of 0x0001 (a float16
  // subnormal) makes the float32 word a denormal, which the float32 rule wants bit for bit.
  CHECK(word_difference(0x40003c00u, 0x40003c01u, true) == doctest::Approx(1.0 / 1024));
  CHECK(word_difference(0x00013c00u, 0x00023c00u, false) == INFINITY);
  CHECK(word_difference(0x00013c00u, 0x00023c00u, true) == doctest::Approx(std::ldexp(1.0, -24)));
  // Infinities and NaNs stay exact; two NaNs match.
  CHECK(word_difference(0x7c00u, 0x7bffu, true) == INFINITY);
  CHECK(word_difference(0x7e00u, 0x7c01u, true) == 0);
  CHECK(word_difference(0xc0003c00u, 0x40003c00u, true) == doctest::Approx(4.0));
  CHECK(hcq::word_max_abs(0xc4003c00u, true) == 4.0);  // -4.0 in the high half
  CHECK(hcq::word_max_abs(0x7c003c00u, true) == 1.0);  // infinity left out
}

TEST_CASE("float16 to float32, exact (runtime/hcq/half_float.h)") {
  using hcq::half_to_float;
  CHECK(half_to_float(0x3c00) == 1.0f);
  CHECK(half_to_float(0xfbff) == -65504.0f);
  CHECK(half_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(half_to_float(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(half_to_float(0x0400) == std::ldexp(1.0f, -14));  // smallest normal
  CHECK(std::signbit(half_to_float(0x8000)));
  CHECK(half_to_float(0x8000) == 0.0f);
  CHECK(half_to_float(0x7c00) == INFINITY);
  CHECK(std::isnan(half_to_float(0x7e00)));
}

TEST_CASE("check tally: tolerance from the twin's words, the worst word and its address") {
  // The three fakes' :check share this tally (runtime/hcq/word_compare.h).
  const float twin[4] = {100.0f, 2.0f, 3.0f, 4.0f}, before[4] = {100.0f, 0, 0, 0};
  float device[4] = {100.0f, 2.05f, 3.0f, 4.0f};
  auto bytes = [](const float *f) { return reinterpret_cast<const uint8_t *>(f); };
  hcq::word_tally all;
  all.reference(bytes(twin), sizeof twin);  // every word: tolerance 1e-3 * 100 + 1e-5
  all.compare(bytes(device), bytes(twin), sizeof twin, 0x1000);
  CHECK(all.differ == 1);
  CHECK(all.worst_at == 0x1004);
  CHECK(all.match());
  hcq::word_tally changed;
  changed.reference(bytes(twin), sizeof twin, bytes(before));  // 100 unchanged: tolerance ~4e-3
  changed.compare(bytes(device), bytes(twin), sizeof twin, 0x1000);
  CHECK(changed.max_diff == doctest::Approx(0.05).epsilon(1e-4));
  CHECK_FALSE(changed.match());
  // An infinity where the twin has a number is never within tolerance.
  device[1] = INFINITY;
  hcq::word_tally inf;
  inf.reference(bytes(twin), sizeof twin);
  inf.compare(bytes(device), bytes(twin), sizeof twin, 0);
  CHECK(inf.exact_mismatch);
  CHECK(inf.worst_at == 4);
  CHECK_FALSE(inf.match());
}
