// Replay's plan: how launches are split when the runtime splits them (replay_plan_build), which
// steps are followed by a barrier (replay_plan_barriers), and that a replay on several threads,
// with the barriers it skips, computes what the steps computed one by one.
#include "replay.h"

#include <doctest/doctest.h>

#include <cstring>
#include <vector>

using namespace capgraph;

namespace {

struct launch_cost {
  uint64_t work, flops, bytes;
};

// A capture made for `threads` threads holding just the steps (enough for replay_plan_build):
// launches of kernel 0 without buffers, each partitioned evenly by its writer.
std::vector<uint8_t> capture_with(const std::vector<launch_cost> &launches, uint32_t threads) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  const std::vector<fb::BufferRef> no_buffers;
  const std::vector<uint64_t> no_sizes;
  for (const launch_cost &l : launches) {
    std::vector<uint64_t> partition;
    for (uint32_t t = 0; t <= threads; ++t) partition.push_back(l.work * t / threads);
    const auto launch = fb::CreateLaunchDirect(fbb, 0, &no_buffers, nullptr, l.work, &partition,
                                               nullptr, l.flops, l.bytes, 0, &no_sizes);
    steps.push_back(fb::CreateStep(fbb, fb::StepKind::launch, launch, 0));
  }
  const auto target = fb::CreateTargetDirect(fbb, "cpu-x86_64");
  const std::vector<flatbuffers::Offset<fb::TensorInfo>> none;
  fb::CaptureBuilder c(fbb);
  c.add_target(target);
  c.add_inputs(fbb.CreateVector(none));
  c.add_outputs(fbb.CreateVector(none));
  c.add_steps(fbb.CreateVector(steps));
  c.add_threads(threads);
  fbb.Finish(c.Finish());
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

replay_plan plan_of(const std::vector<uint8_t> &capture, int threads) {
  void (*const kernel)(void *const *, const int64_t *, int64_t,
                       int64_t) = [](void *const *, const int64_t *, int64_t, int64_t) {};
  replay_plan p;
  replay_plan_build(fb::GetCapture(capture.data()), nullptr, {}, {kernel}, threads, &p);
  return p;
}

std::vector<int64_t> bounds_of(const replay_plan &p, size_t step) {
  return {p.steps[step].bounds, p.steps[step].bounds + p.threads + 1};
}

// A plan of launches over `threads` threads; bounds are given per step, copies by size.
struct plan_maker {
  replay_plan plan;
  std::vector<std::vector<int64_t>> bounds;
  std::vector<std::vector<void *>> buffers;
  std::vector<std::vector<int64_t>> scalars;

  explicit plan_maker(int threads) { plan.threads = threads; }

  void launch(kernel_entry entry, std::vector<int64_t> b, std::vector<void *> bufs = {},
              std::vector<int64_t> sc = {}) {
    REQUIRE(b.size() == size_t(plan.threads + 1));
    bounds.push_back(std::move(b));
    buffers.push_back(std::move(bufs));
    scalars.push_back(std::move(sc));
    replay_step s{};
    s.entry = entry;
    plan.steps.push_back(s);
  }
  void copy(void *dst, const void *src, size_t size) {
    bounds.emplace_back();
    buffers.emplace_back();
    scalars.emplace_back();
    replay_step s{};
    s.dst = dst;
    s.src = src;
    s.size = size;
    plan.steps.push_back(s);
  }
  // Points the steps at their storage (which no longer moves) and decides the barriers.
  replay_plan &done() {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      replay_step &s = plan.steps[i];
      if (!s.entry) continue;
      s.bounds = bounds[i].data();
      s.buffers = buffers[i].data();
      s.scalars = scalars[i].empty() ? nullptr : scalars[i].data();
    }
    replay_plan_barriers(&plan);
    return plan;
  }
};

void nothing(void *const *, const int64_t *, int64_t, int64_t) {}

std::vector<bool> barriers(const replay_plan &p) {
  std::vector<bool> v;
  for (const replay_step &s : p.steps) v.push_back(s.barrier_after);
  return v;
}

// out[i] = in[i] + in[(i + 1) % n] (n = scalars[0]): each element reads its neighbour, which
// another thread may have written in the step before.
void neighbour_sum(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end) {
  const int64_t *in = static_cast<const int64_t *>(buffers[0]);
  int64_t *out = static_cast<int64_t *>(buffers[1]);
  for (int64_t i = begin; i < end; ++i) out[i] = in[i] + in[(i + 1) % scalars[0]] % 1000003;
}

// acc[0] = acc[0] * 3 + in[0] + ... + in[n - 1], modulo a prime (work is one unit).
void all_sum(void *const *buffers, const int64_t *scalars, int64_t, int64_t) {
  const int64_t *in = static_cast<const int64_t *>(buffers[0]);
  int64_t *acc = static_cast<int64_t *>(buffers[1]);
  int64_t s = acc[0] * 3;
  for (int64_t i = 0; i < scalars[0]; ++i) s += in[i];
  acc[0] = s % 1000003;
}

// What the plan computes, step by step, every slice in order on this thread.
void replay_serial(const replay_plan &p) {
  for (const replay_step &s : p.steps) {
    if (!s.entry) {
      std::memcpy(s.dst, s.src, s.size);
      continue;
    }
    for (int t = 0; t < p.threads; ++t)
      if (s.bounds[t] < s.bounds[t + 1])
        kernel_call(s.entry, s.buffers, s.scalars, s.bounds[t], s.bounds[t + 1]);
  }
}

}  // namespace

TEST_CASE("split evenly, except launches of one unit or too small to be worth a barrier") {
  const std::vector<uint8_t> cap = capture_with({{1000, 1000000, 4096},  // big: split
                                                 {1000, 100, 4000},      // tiny: thread 0
                                                 {1, 1000000000, 0},     // one unit: thread 0
                                                 {1000, 0, 0},           // no cost given: split
                                                 {3, 60000, 6000}},      // 2^16 or more: split
                                                1);
  const replay_plan p = plan_of(cap, 2);
  CHECK(bounds_of(p, 0) == std::vector<int64_t>{0, 500, 1000});
  CHECK(bounds_of(p, 1) == std::vector<int64_t>{0, 1000, 1000});
  CHECK(bounds_of(p, 2) == std::vector<int64_t>{0, 1, 1});
  CHECK(bounds_of(p, 3) == std::vector<int64_t>{0, 500, 1000});
  CHECK(bounds_of(p, 4) == std::vector<int64_t>{0, 1, 3});
  CHECK_FALSE(p.workers_idle);
  const replay_plan three = plan_of(cap, 3);
  CHECK(bounds_of(three, 1) == std::vector<int64_t>{0, 1000, 1000, 1000});
  CHECK(bounds_of(three, 4) == std::vector<int64_t>{0, 1, 2, 3});
  // The thread count the capture was made for: its writer's partitions, whatever the cost.
  const replay_plan own = plan_of(capture_with({{1000, 100, 0}, {1, 100, 0}}, 2), 2);
  CHECK(bounds_of(own, 0) == std::vector<int64_t>{0, 500, 1000});
  CHECK(bounds_of(own, 1) == std::vector<int64_t>{0, 0, 1});
}

TEST_CASE("a capture of tiny launches replays on the caller alone") {
  const std::vector<uint8_t> cap = capture_with({{1, 10, 10}, {8, 4096, 1500}, {2, 64, 64}}, 1);
  const replay_plan p = plan_of(cap, 2);
  CHECK(p.workers_idle);
  CHECK(barriers(p) == std::vector<bool>(3, false));
  // Made for 2 threads, its one-unit launches are on thread 1: no barriers, but workers work.
  const replay_plan own = plan_of(capture_with({{1, 10, 10}, {1, 10, 10}}, 2), 2);
  CHECK_FALSE(own.workers_idle);
  CHECK(barriers(own) == std::vector<bool>(2, false));
}

TEST_CASE("steps that one thread runs back to back need no barrier between them") {
  plan_maker m(2);
  for (int i = 0; i < 5; ++i) m.launch(&nothing, {0, 0, 1});  // thread 1 only
  CHECK(barriers(m.done()) == std::vector<bool>(5, false));
}

TEST_CASE("a barrier wherever another thread may read or overwrite what was written") {
  int a = 0, b = 0;
  plan_maker m(2);
  m.launch(&nothing, {0, 1, 2});  // 0: both threads
  m.launch(&nothing, {0, 0, 1});  // 1: thread 1 reads both halves -> barrier after 0
  m.launch(&nothing, {0, 0, 1});  // 2: thread 1 again -> none after 1
  m.launch(&nothing, {0, 0, 0});  // 3: nobody -> none after 2
  m.launch(&nothing, {0, 0, 1});  // 4: thread 1 -> none after 3
  m.copy(&a, &b, sizeof a);       // 5: a copy runs on thread 0 -> barrier after 4
  m.launch(&nothing, {0, 1, 1});  // 6: thread 0 -> none after 5
  m.launch(&nothing, {0, 1, 2});  // 7: both -> barrier after 6
  m.launch(&nothing, {0, 1, 2});  // 8: both -> barrier after 7
  m.copy(&a, &b, 0);              // 9: an empty copy runs nowhere; 8 ran on both threads, so
                                  //    they meet after 8 (as early as needed, never later)
  m.launch(&nothing, {0, 0, 1});  // 10: thread 1 -> none after 9
  const std::vector<bool> want = {true, false, false, false, true, false,
                                  true, true,  true,  false, false};
  CHECK(barriers(m.done()) == want);
}

TEST_CASE("one thread: no barriers") {
  plan_maker m(1);
  for (int i = 0; i < 4; ++i) m.launch(&nothing, {0, 7});
  CHECK(barriers(m.done()) == std::vector<bool>(4, false));
}

TEST_CASE("a replay that skips barriers computes what the steps compute one by one") {
  for (int threads : {2, 3, 4}) {
    constexpr int64_t n = 12;
    // Two sets of buffers: the pool's replay runs on one, the serial reference on the other.
    std::vector<int64_t> x[2], y[2], acc[2];
    plan_maker pm[2] = {plan_maker(threads), plan_maker(threads)};
    for (int k = 0; k < 2; ++k) {
      x[k].assign(n, 0);
      y[k].assign(n, 0);
      acc[k].assign(1, 0);
      for (int64_t i = 0; i < n; ++i) x[k][size_t(i)] = i + 1;
      std::vector<int64_t> even(size_t(threads) + 1), last(size_t(threads) + 1, 0);
      for (int t = 0; t <= threads; ++t) even[size_t(t)] = n * t / threads;
      last[size_t(threads)] = 1;  // one unit of work, on the last thread
      plan_maker &m = pm[k];
      for (int round = 0; round < 20; ++round) {
        m.launch(&neighbour_sum, even, {x[k].data(), y[k].data()}, {n});
        m.launch(&all_sum, last, {y[k].data(), acc[k].data()}, {n});  // reads every thread's part
        m.launch(&all_sum, last, {x[k].data(), acc[k].data()}, {n});  // same thread: no barrier
        m.launch(&neighbour_sum, even, {y[k].data(), x[k].data()}, {n});  // overwrites x read above
        m.copy(&x[k][0], &acc[k][0], sizeof(int64_t));  // thread 0 reads acc from the last thread
      }
      m.done();
    }
    int skipped = 0;
    for (const replay_step &s : pm[0].plan.steps) skipped += !s.barrier_after;
    CHECK(skipped > 20);  // the case exercises skipped barriers, not only kept ones

    replay_serial(pm[1].plan);
    thread_pool pool(threads);
    const std::vector<int64_t> x0(x[0]);
    for (int run = 0; run < 100; ++run) {
      std::copy(x0.begin(), x0.end(), x[0].begin());
      y[0].assign(n, 0);
      acc[0][0] = 0;
      replay_run(pm[0].plan, &pool);
      REQUIRE(x[0] == x[1]);
      REQUIRE(acc[0] == acc[1]);
    }
  }
}
