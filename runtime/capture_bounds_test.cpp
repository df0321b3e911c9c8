// Issue 16: a verified capture is safe to replay whatever the file says outside its code. Each
// launch asks for no more than its kernel's code was compiled for (KernelBounds, bound to the code
// by a checksum), index tables used unchecked by the code are checked entry by entry at load,
// 8-byte vectors must be aligned, load ceilings hold, and a replay thread that never reaches its
// barrier becomes a timeout instead of a hang.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "capgraph_runtime.h"
#include "capture_fixture.h"

using namespace capgraph;
using test::capture_spec;

namespace {

struct load_result {
  capgraph_status status;
  std::string message;
};

load_result load(const std::vector<uint8_t> &bytes) {
  capgraph_model *m = nullptr;
  char err[1024] = "";
  const capgraph_status st =
      capgraph_load_memory(bytes.data(), bytes.size(), nullptr, &m, err, sizeof err);
  CHECK((st == CAPGRAPH_OK) == (m != nullptr));
  capgraph_free(m);
  return {st, err};
}

void expect_refused(const capture_spec &s, capgraph_status status, const std::string &text) {
  const load_result r = load(test::capture_build(s));
  INFO("message: " << r.message);
  CHECK(r.status == status);
  CHECK(r.message.find(text) != std::string::npos);
}

// The reference capture with each kernel's bounds what its code really touches: work n and 4n
// bytes per binding (copy_rows: work n/4 and 4n bytes).
capture_spec tight_spec(uint32_t threads) {
  capture_spec s = test::reference_spec(threads);
  const uint64_t n = test::k_reference_n, bytes = n * 4;
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    s.kernels[k].bounds_work_size = k == 3 ? n / 4 : n;
    s.kernels[k].bounds_sizes.assign(s.kernels[k].num_buffers, bytes);
  }
  for (test::step_spec &st : s.steps)
    if (st.with_launch) st.launch.buffer_sizes.assign(st.launch.buffers.size(), bytes);
  return s;
}

// An environment variable set for one scope.
struct env_set {
  std::string name;
  env_set(const char *n, const char *v) : name(n) { setenv(n, v, 1); }
  ~env_set() { unsetenv(name.c_str()); }
};

// x[8] input, weight idx int32[n], y[n] output: y[i] = x[idx[i]] (c_gather), idx in [0, 8).
capture_spec gather_spec(std::vector<int32_t> idx) {
  capture_spec s;
  const uint64_t n = idx.size();
  s.arena_size = 64 + (n * 4 + 63) / 64 * 64;
  s.inputs = {{"x", fb::DType::f32, {8}, 0, 32}};
  s.outputs = {{"y", fb::DType::f32, {int64_t(n)}, 64, n * 4}};
  test::weight_spec w{"idx", std::vector<uint8_t>(n * 4)};
  memcpy(w.data.data(), idx.data(), n * 4);
  s.weights = {w};
  s.programs = {{test::kernel_object("kernels_c.o"), {}}};
  test::kernel_spec k{"gather", 0, "c_gather", 3, 0};
  k.bounds_work_size = n;
  k.bounds_sizes = {32, n * 4, n * 4};
  k.index_tables = {{1, fb::DType::i32, 0, 8}};
  s.kernels = {k};
  s.steps = {
      test::launch_step(0, {test::arena_ref(0), test::weight_ref(0), test::arena_ref(64)}, n, 1)};
  s.steps[0].launch.buffer_sizes = {32, n * 4, n * 4};
  return s;
}

}  // namespace

TEST_CASE("the reference capture with tight bounds loads") {
  const load_result r = load(test::capture_build(tight_spec(2)));
  INFO(r.message);
  CHECK(r.status == CAPGRAPH_OK);
}

TEST_CASE("a launch asking for more than its kernel's code was compiled for is refused") {
  capture_spec s = tight_spec(1);
  s.steps[0].launch.work_size = 2 * test::k_reference_n;
  s.steps[0].launch.partition = test::partition_even(2 * test::k_reference_n, 1);
  expect_refused(s, CAPGRAPH_ERR_FORMAT,
                 "step 0 (launch of kernel 'add_table', ONNX nodes node_0): work_size 2000 is "
                 "more than the 1000 its kernel was compiled for");

  s = tight_spec(1);
  s.steps[1].launch.buffer_sizes[1] = 16;  // the output reaches 4000 bytes
  expect_refused(s, CAPGRAPH_ERR_FORMAT,
                 "buffer 1 is given 16 bytes, but its kernel's code touches 4000");

  s = tight_spec(1);
  s.kernels[3].bounds_scalars = std::vector<int64_t>{4};  // copy_rows: rows of 4 floats
  s.steps[4].launch.scalars = {8};
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "scalar 0 is 8, but its kernel's code was compiled for 4");
}

TEST_CASE("kernel bounds must be present, consistent and match their checksum") {
  capture_spec s = tight_spec(1);
  s.kernels[1].bounds = false;
  s.version_minor = 1;
  expect_refused(s, CAPGRAPH_ERR_FORMAT,
                 "kernel 1 'scale' has no bounds (KernelBounds, capture format 1.2)");
  s = tight_spec(1);
  s.kernels[2].bounds_hash_wrong = true;
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "kernel 2 'exp': its bounds do not match their checksum");
  s = tight_spec(1);
  s.kernels[0].bounds_sizes = {4000, 4000};
  expect_refused(s, CAPGRAPH_ERR_FORMAT,
                 "kernel 0 'add_table': its bounds give 2 buffer sizes for 3");
  s = tight_spec(1);
  s.kernels[0].index_tables = {{5, fb::DType::i32, 0, 8}};
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "index table 0 is binding 5, the kernel takes 3");
  s = tight_spec(1);
  s.kernels[0].index_tables = {{1, fb::DType::f32, 0, 8}};
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "index table 0 has dtype 0, not i32 or i64");
}

TEST_CASE("a work size beyond what the buffers hold is refused even with a recomputed checksum") {
  // The fixture recomputes the bounds' checksum as an attacker would: work 2^32 over 3 x 4000
  // bytes.
  capture_spec s = tight_spec(1);
  const uint64_t work = uint64_t(1) << 32;
  s.kernels[1].bounds_work_size = work;
  s.steps[1].launch.work_size = work;
  s.steps[1].launch.partition = test::partition_even(work, 1);
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "work_size 4294967296 is more than the");
}

TEST_CASE("index tables: in-range tables run, any entry out of range is refused at load") {
  const std::vector<int32_t> good = {7, 0, 3, 3, 1, 6, 2, 5, 4, 0, 7, 1, 2, 2, 6, 5};
  capgraph_model *m = nullptr;
  char err[512] = "";
  const std::vector<uint8_t> bytes = test::capture_build(gather_spec(good));
  REQUIRE_MESSAGE(
      capgraph_load_memory(bytes.data(), bytes.size(), nullptr, &m, err, sizeof err) == CAPGRAPH_OK,
      err);
  capgraph_tensor x, y;
  REQUIRE(capgraph_input(m, 0, &x) == CAPGRAPH_OK);
  REQUIRE(capgraph_output(m, 0, &y) == CAPGRAPH_OK);
  for (int i = 0; i < 8; ++i) static_cast<float *>(x.data)[i] = float(i) * 10 + 1;
  REQUIRE(capgraph_run(m) == CAPGRAPH_OK);
  for (size_t i = 0; i < good.size(); ++i)
    CHECK(static_cast<const float *>(y.data)[i] == float(good[i]) * 10 + 1);
  capgraph_free(m);

  for (int32_t bad : {8, -1, 1 << 30, INT32_MIN}) {
    std::vector<int32_t> idx = good;
    idx[11] = bad;
    INFO("entry " << bad);
    expect_refused(gather_spec(idx), CAPGRAPH_ERR_FORMAT,
                   "index table in buffer 1 (weight 0) holds " + std::to_string(bad) +
                       " at element 11; its kernel reads out of bounds outside [0, 8)");
  }
  // The output bound to a weight: the code would store into read-only memory.
  capture_spec w = gather_spec(good);
  w.kernels[0].written = {2};
  CHECK(load(test::capture_build(w)).status == CAPGRAPH_OK);
  w.weights.push_back({"out", std::vector<uint8_t>(good.size() * 4)});
  w.steps[0].launch.buffers[2] = test::weight_ref(1);
  expect_refused(w, CAPGRAPH_ERR_FORMAT,
                 "buffer 2 is written by its kernel but is a weight, not in the arena");
  w.kernels[0].written = {3};
  expect_refused(w, CAPGRAPH_ERR_FORMAT, "its bounds say it writes binding 3, the kernel takes 3");
  // A table the code reads from the arena cannot be checked at load.
  capture_spec s = gather_spec(good);
  s.arena_size += 64;
  s.steps[0].launch.buffers[1] = test::arena_ref(s.arena_size - 64);
  s.steps[0].launch.buffer_sizes[1] = 64;
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "buffer 1 holds an index table but is not a weight");
}

TEST_CASE("a misaligned 8-byte vector is refused, never read (UBSan finding)") {
  // An empty vector (a scalar's shape) is never read and may sit anywhere: the op conformance
  // suite's scalar outputs were refused before this was said.
  for (int pad = 0; pad < 4; ++pad) {
    capture_spec s = tight_spec(1);
    s.outputs.push_back({"scalar", fb::DType::f32, {}, 0, 4});
    for (int i = 0; i < pad; ++i)
      s.outputs.push_back({"s" + std::to_string(i), fb::DType::u8, {}, 0, 1});
    const load_result r = load(test::capture_build(s));
    INFO(r.message);
    CHECK(r.status == CAPGRAPH_OK);
  }
  capture_spec s = tight_spec(2);
  s.steps[1].launch.partition_misaligned = true;
  expect_refused(s, CAPGRAPH_ERR_FORMAT, "the partition of step 1 is not 8-byte aligned");
}

TEST_CASE("load ceilings: arena and work size, set from the environment") {
  const std::vector<uint8_t> bytes = test::capture_build(tight_spec(1));
  {
    env_set e("CAPGRAPH_MAX_ARENA_BYTES", "4096");
    const load_result r = load(bytes);
    CHECK(r.status == CAPGRAPH_ERR_FORMAT);
    CHECK(r.message.find("the arena is 28224 bytes, more than the 4096 this runtime allows "
                         "(CAPGRAPH_MAX_ARENA_BYTES)") != std::string::npos);
  }
  {
    env_set e("CAPGRAPH_MAX_WORK_SIZE", "999");
    const load_result r = load(bytes);
    CHECK(r.status == CAPGRAPH_ERR_FORMAT);
    CHECK(r.message.find("work_size 1000 is more than the 999 this runtime allows") !=
          std::string::npos);
  }
  for (const char *bad : {"", "abc", "-5", "0", "99999999999999999999999"}) {
    env_set e("CAPGRAPH_MAX_WORK_SIZE", bad);
    const load_result r = load(bytes);
    CHECK(r.status == CAPGRAPH_ERR_ARGUMENT);
    CHECK(r.message.find("CAPGRAPH_MAX_WORK_SIZE must be a positive whole number") !=
          std::string::npos);
  }
  env_set e("CAPGRAPH_MAX_ARENA_BYTES", "28224");
  CHECK(load(bytes).status == CAPGRAPH_OK);
}

TEST_CASE("a replay thread that never reaches its barrier is a timeout, not a hang") {
  // Two steps on 2 threads: c_spin (thread 1 runs item 1 and waits for the flag), then c_mark.
  capture_spec s;
  s.threads = 2;
  s.arena_size = 128;
  s.inputs = {{"flag", fb::DType::i32, {1}, 0, 4}};
  s.outputs = {{"y", fb::DType::f32, {2}, 64, 8}};
  s.programs = {{test::kernel_object("kernels_c.o"), {}}};
  s.kernels = {{"spin", 0, "c_spin", 1, 0}, {"mark", 0, "c_mark", 1, 0}};
  s.steps = {test::launch_step(0, {test::arena_ref(0)}, 2, 2),
             test::launch_step(1, {test::arena_ref(64)}, 2, 2)};
  s.steps[0].launch.buffer_sizes = {4};
  s.steps[1].launch.buffer_sizes = {8};
  const std::vector<uint8_t> bytes = test::capture_build(s);
  env_set e("CAPGRAPH_TIMEOUT_MS", "300");
  capgraph_model *m = nullptr;
  char err[512] = "";
  REQUIRE_MESSAGE(
      capgraph_load_memory(bytes.data(), bytes.size(), nullptr, &m, err, sizeof err) == CAPGRAPH_OK,
      err);
  capgraph_tensor flag;
  REQUIRE(capgraph_input(m, 0, &flag) == CAPGRAPH_OK);
  volatile int32_t *f = static_cast<int32_t *>(flag.data);
  *f = 1;
  CHECK(capgraph_run(m) == CAPGRAPH_OK);  // the flag set: both threads arrive
  *f = 0;
  const auto start = std::chrono::steady_clock::now();
  CHECK(capgraph_run(m) == CAPGRAPH_ERR_TIMEOUT);
  const double s_waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(s_waited >= 0.29);
  CHECK(s_waited < 10);
  CHECK(std::string(capgraph_error(m)).find("did not finish its step within 300 ms") !=
        std::string::npos);
  // The failure sticks: the pool is broken, nothing runs again.
  CHECK(capgraph_run(m) == CAPGRAPH_ERR_TIMEOUT);
  uint64_t times[2];
  CHECK(capgraph_run_timed(m, times, 2) == CAPGRAPH_ERR_TIMEOUT);
  // Release the stuck thread; free then finds every worker stopped and frees everything.
  *f = 1;
  capgraph_free(m);

  env_set bad("CAPGRAPH_TIMEOUT_MS", "0");
  const load_result r = load(bytes);
  CHECK(r.status == CAPGRAPH_ERR_ARGUMENT);
  CHECK(r.message.find("CAPGRAPH_TIMEOUT_MS must be 1 to 3600000 milliseconds") !=
        std::string::npos);
}
