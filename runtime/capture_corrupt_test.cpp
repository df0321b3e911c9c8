// Truncated and corrupted capture files are refused (or, when the damage happens to leave a valid
// capture, loaded) and never crash the loader. Run under ASan+UBSan with -DCAPGRAPH_SANITIZE=ON.
// Loading only: a flipped byte inside kernel code or a scalar still loads, and replay trusts
// what was verified, so damaged captures are never run here.
#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "capgraph_runtime.h"
#include "capture_fixture.h"

namespace {

capgraph_status load(const std::vector<uint8_t> &bytes) {
  capgraph_model *m = nullptr;
  char err[512] = "";
  const capgraph_status st =
      capgraph_load_memory(bytes.data(), bytes.size(), nullptr, &m, err, sizeof err);
  if (st != CAPGRAPH_OK) {
    CHECK(m == nullptr);
    CHECK(err[0] != '\0');
  }
  capgraph_free(m);
  return st;
}

}  // namespace

TEST_CASE("every truncation of a capture is refused (but trailing padding)") {
  const std::vector<uint8_t> good =
      capgraph::test::capture_build(capgraph::test::reference_spec(1, 64));
  REQUIRE(load(good) == CAPGRAPH_OK);
  for (size_t len = 0; len < good.size(); ++len) {
    CAPTURE(len);
    if (load(std::vector<uint8_t>(good.begin(), good.begin() + long(len))) != CAPGRAPH_OK) continue;
    // Only alignment padding after the last string may go unnoticed: fewer than 4 zero bytes.
    CHECK(good.size() - len < 4);
    for (size_t i = len; i < good.size(); ++i) CHECK(good[i] == 0);
  }
}

TEST_CASE("every single-byte corruption of a capture loads or is refused, never crashes") {
  const std::vector<uint8_t> good =
      capgraph::test::capture_build(capgraph::test::reference_spec(1, 64));
  size_t refused = 0;
  for (size_t pos = 0; pos < good.size(); ++pos)
    for (const uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::vector<uint8_t> bad = good;
      bad[pos] ^= mask;
      refused += load(bad) != CAPGRAPH_OK;
    }
  MESSAGE(refused << " of " << 3 * good.size() << " corruptions refused");
  CHECK(refused > good.size() / 4);
}

TEST_CASE("random multi-byte corruptions and garbage never crash") {
  const std::vector<uint8_t> good =
      capgraph::test::capture_build(capgraph::test::reference_spec(2, 64));
  std::mt19937 rng(20240601);
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = good;
    const int flips = 1 + int(rng() % 16);
    for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] = uint8_t(rng());
    if (rng() % 4 == 0) bad.resize(rng() % bad.size());
    load(bad);
  }
  for (int round = 0; round < 500; ++round) {
    std::vector<uint8_t> garbage(rng() % 4096);
    for (uint8_t &b : garbage) b = uint8_t(rng());
    if (garbage.size() >= 8 && round % 2) memcpy(garbage.data() + 4, "CAPG", 4);
    CHECK(load(garbage) != CAPGRAPH_OK);
  }
}
