#include "memory/arena_plan.h"

#include <doctest/doctest.h>

#include <random>

using namespace capgraph;

TEST_CASE("buffers with disjoint lifetimes share space") {
  std::vector<ArenaRequest> r = {{1000, 0, 1}, {1000, 2, 3}, {1000, 4, 5}};
  ArenaPlan p = arena_plan(r);
  CHECK(p.size == 1024);
  CHECK(p.naive_size == 3 * 1024);
  CHECK(arena_plan_valid(r, p));
}

TEST_CASE("overlapping lifetimes never overlap in memory") {
  std::vector<ArenaRequest> r = {{100, 0, 2}, {200, 1, 3}, {300, 2, 4}};
  ArenaPlan p = arena_plan(r);
  CHECK(arena_plan_valid(r, p));
  CHECK(p.size == 64 * 2 + 256 + 320);
}

TEST_CASE("pinned buffers conflict with everything") {
  std::vector<ArenaRequest> r = {{64, 0, 0, true}, {64, 5, 6}, {64, 7, 8, true}};
  ArenaPlan p = arena_plan(r);
  CHECK(arena_plan_valid(r, p));
  CHECK(p.offsets[0] != p.offsets[2]);
  CHECK(p.offsets[1] != p.offsets[0]);
}

TEST_CASE("offsets are aligned") {
  std::vector<ArenaRequest> r = {{3, 0, 5}, {5, 0, 5}, {7, 0, 5}};
  ArenaPlan p = arena_plan(r, 64);
  for (uint64_t o : p.offsets) CHECK(o % 64 == 0);
}

TEST_CASE("random plans are valid and never worse than no reuse") {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; trial++) {
    std::vector<ArenaRequest> r;
    int n = 1 + rng() % 40;
    for (int i = 0; i < n; i++) {
      int a = rng() % 50, b = a + rng() % 10;
      r.push_back({(uint64_t)(1 + rng() % 100000), a, b, rng() % 10 == 0});
    }
    ArenaPlan p = arena_plan(r);
    REQUIRE(arena_plan_valid(r, p));
    CHECK(p.size <= p.naive_size);
  }
}

TEST_CASE("the validity check catches a bad plan") {
  std::vector<ArenaRequest> r = {{100, 0, 2}, {100, 1, 3}};
  ArenaPlan p;
  p.offsets = {0, 0};
  p.size = 128;
  CHECK_FALSE(arena_plan_valid(r, p));
}
