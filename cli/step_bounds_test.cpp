#include "cli/step_bounds.h"

#include <doctest/doctest.h>

using namespace capgraph;

namespace {

// A capture step as the compiler writes it: a launch with its bindings' sizes and partition.
std::vector<uint8_t> launch_step_build(uint64_t flops, uint64_t written,
                                       std::vector<uint64_t> sizes, std::vector<uint64_t> partition,
                                       uint64_t work) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<fb::BufferRef> refs(sizes.size(), fb::BufferRef(fb::Space::arena, 0, 0));
  auto launch =
      fb::CreateLaunch(fbb, 0, fbb.CreateVectorOfStructs(refs), 0, work,
                       fbb.CreateVector(partition), 0, flops, 0, written, fbb.CreateVector(sizes));
  fbb.Finish(fb::CreateStep(fbb, fb::StepKind::launch, launch, 0));
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

}  // namespace

TEST_CASE("step_work counts the output's stored bytes and every other binding once") {
  // Output binding sized 4096 (a concat buffer) of which the launch stores 1024; reads 2000 + 300.
  auto bytes = launch_step_build(5000, 1024, {4096, 2000, 300}, {0, 8, 16}, 16);
  const fb::Step *s = flatbuffers::GetRoot<fb::Step>(bytes.data());
  StepWork w = step_work(s, 2, 2);
  CHECK(w.flops == 5000);
  CHECK(w.bytes == 1024 + 2000 + 300);
  CHECK(w.active_threads == 2);
  CHECK(step_work(s, 2, 4).active_threads == 4);  // re-split by the runtime
}

TEST_CASE("step_work: a launch left whole on thread 0 runs on one thread at any count") {
  auto bytes = launch_step_build(100, 64, {64, 64}, {0, 16, 16}, 16);
  const fb::Step *s = flatbuffers::GetRoot<fb::Step>(bytes.data());
  CHECK(step_work(s, 2, 2).active_threads == 1);
  CHECK(step_work(s, 2, 8).active_threads == 1);
}

TEST_CASE("step_verdict: a streaming kernel is memory-bound, a large product compute-bound") {
  // Machine: 100 GFLOP/s, 10 GB/s: balance 10 FLOP/B.
  StepWork add;  // c = a + b on 16 Mi floats: 1 FLOP per 12 bytes
  add.flops = 16u << 20;
  add.bytes = 12ull * (16u << 20);
  // 201 MB at 10 GB/s = 20 ms ideal; measured 30 ms: 67% of the bandwidth, meets the 50% bar.
  StepVerdict v = step_verdict(add, 30.0, 1, 100, 10);
  CHECK(v.bound == StepBound::memory);
  CHECK(v.bandwidth_share == doctest::Approx(0.6711).epsilon(1e-3));  // 6.71 GB/s
  CHECK(v.meets);
  CHECK_FALSE(step_verdict(add, 50.0, 1, 100, 10).meets);  // 40%

  // A memory-bound step near the balance (9 FLOP/B) at 36% of peak and 40% of the bandwidth is not
  // "below 30% of peak": it meets the acceptance's words although it misses the 50% bandwidth bar.
  StepWork dw;
  dw.flops = 900u << 20;
  dw.bytes = 100u << 20;
  v = step_verdict(dw, 26.2144, 1, 100, 10);
  CHECK(v.bound == StepBound::memory);
  CHECK(v.peak_share == doctest::Approx(0.36).epsilon(1e-3));
  CHECK(v.bandwidth_share == doctest::Approx(0.40).epsilon(1e-3));
  CHECK(v.meets);
  CHECK_FALSE(step_verdict(dw, 40.0, 1, 100, 10).meets);  // 23.6% of peak, 26% of the bandwidth

  StepWork mm;  // 512^3 matrix product: 268 MFLOP over 3 MiB, ~85 FLOP/B
  mm.flops = 2ull * 512 * 512 * 512;
  mm.bytes = 3ull * 512 * 512 * 4;
  v = step_verdict(mm, 5.36870912, 1, 100, 10);  // 50 GFLOP/s
  CHECK(v.bound == StepBound::compute);
  CHECK(v.peak_share == doctest::Approx(0.5));
  CHECK(v.meets);
  CHECK_FALSE(step_verdict(mm, 10.0, 1, 100, 10).meets);  // 27 GFLOP/s: 27%
  // On 2 threads with the whole-run peak 200, a launch on one thread is held to 100.
  mm.active_threads = 1;
  CHECK(step_verdict(mm, 5.36870912, 2, 200, 20).peak_share == doctest::Approx(0.5));
}

TEST_CASE(
    "step_verdict: a step too small to be timed beside its launch cost is small, never a miss") {
  StepWork tiny;
  tiny.flops = 1000;
  tiny.bytes = 4096;  // 0.4 us at 10 GB/s
  StepVerdict v = step_verdict(tiny, 0.01, 1, 100, 10);
  CHECK(v.bound == StepBound::small);
  CHECK(v.meets);
  CHECK(std::string(step_bound_name(v.bound)) == "small");
}
