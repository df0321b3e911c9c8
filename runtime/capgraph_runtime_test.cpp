// The C API end to end: real captures with real kernels are loaded, fed, replayed and read back,
// on one thread and several, from a file and from memory.
#include "capgraph_runtime.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "capture_fixture.h"
#include "capture_model.h"

using namespace capgraph;
using test::capture_spec;

namespace {

struct model {
  capgraph_model *m = nullptr;
  model(const capture_spec &spec, int32_t threads, bool from_file = true) {
    const std::vector<uint8_t> bytes = test::capture_build(spec);
    char err[1024] = "";
    const capgraph_options opts{threads};
    capgraph_status st;
    if (from_file) {
      const std::string path = test::temp_path("model.cap");
      test::file_write(path, bytes);
      st = capgraph_load(path.c_str(), &opts, &m, err, sizeof err);
    } else {
      st = capgraph_load_memory(bytes.data(), bytes.size(), &opts, &m, err, sizeof err);
    }
    INFO(err);
    REQUIRE(st == CAPGRAPH_OK);
  }
  ~model() { capgraph_free(m); }

  void input_set(const char *name, const std::vector<float> &v) {
    capgraph_tensor t;
    REQUIRE(capgraph_input(m, capgraph_input_index(m, name), &t) == CAPGRAPH_OK);
    REQUIRE(t.size_bytes == v.size() * 4);
    memcpy(t.data, v.data(), t.size_bytes);
  }
  std::vector<float> output(const char *name) {
    capgraph_tensor t;
    REQUIRE(capgraph_output(m, capgraph_output_index(m, name), &t) == CAPGRAPH_OK);
    std::vector<float> v(t.size_bytes / 4);
    memcpy(v.data(), t.data, t.size_bytes);
    return v;
  }
  void run() { REQUIRE(capgraph_run(m) == CAPGRAPH_OK); }
};

test::reference_outputs reference_run(model &mdl) {
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  mdl.input_set("a", a);
  mdl.input_set("b", b);
  mdl.run();
  return {mdl.output("y:0"), mdl.output("z"), mdl.output("rows/r")};
}

void reference_check(const test::reference_outputs &got) {
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  const test::reference_outputs want =
      test::reference_expected(a, b, test::reference_weight(test::k_reference_n));
  REQUIRE(got.y.size() == want.y.size());
  for (size_t i = 0; i < want.y.size(); ++i) {
    CAPTURE(i);
    CHECK(got.y[i] == doctest::Approx(want.y[i]).epsilon(1e-5));
    CHECK(got.z[i] == want.z[i]);
    CHECK(got.rows[i] == doctest::Approx(want.rows[i]).epsilon(1e-6));  // may be fused
  }
}

}  // namespace

TEST_CASE("inputs and outputs are described") {
  model mdl(test::reference_spec(1), 0);
  CHECK(capgraph_num_inputs(mdl.m) == 2);
  CHECK(capgraph_num_outputs(mdl.m) == 3);
  CHECK(capgraph_input_index(mdl.m, "b") == 1);
  CHECK(capgraph_input_index(mdl.m, "nope") == -1);
  CHECK(capgraph_output_index(mdl.m, "rows/r") == 2);
  capgraph_tensor t;
  REQUIRE(capgraph_output(mdl.m, 2, &t) == CAPGRAPH_OK);
  CHECK(std::string(t.name) == "rows/r");
  CHECK(t.dtype == CAPGRAPH_F32);
  CHECK(t.rank == 2);
  CHECK(t.shape[0] == 250);
  CHECK(t.shape[1] == 4);
  CHECK(t.size_bytes == 4000);
  CHECK(reinterpret_cast<uintptr_t>(t.data) % 64 == 0);
  // Bad indices are argument errors with a message, and do not break the model.
  CHECK(capgraph_input(mdl.m, 2, &t) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_error(mdl.m)).find(": input index 2 is out of range (2 inputs)") !=
        std::string::npos);
  CHECK(capgraph_output(mdl.m, -1, &t) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(capgraph_output(mdl.m, 0, nullptr) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(capgraph_run(mdl.m) == CAPGRAPH_OK);
}

TEST_CASE("the reference model computes the right outputs") {
  model mdl(test::reference_spec(1), 0);
  reference_check(reference_run(mdl));
  // Replaying again with new inputs gives new outputs (nothing is cached).
  std::vector<float> b(test::k_reference_n, 9.0f);
  mdl.input_set("b", b);
  mdl.run();
  CHECK(mdl.output("z") == b);
}

TEST_CASE("threads 1, 2 and 3 give identical results") {
  // Captured for 2 threads: replayed on the compiler's partition (2), and re-split evenly (1, 3).
  std::vector<test::reference_outputs> results;
  for (int32_t threads : {0, 1, 2, 3, 4}) {
    CAPTURE(threads);
    model mdl(test::reference_spec(2), threads, threads % 2 == 0);
    CHECK(mdl.m->plan.threads == (threads ? threads : 2));
    CHECK((mdl.m->pool != nullptr) == (mdl.m->plan.threads > 1));
    for (int run = 0; run < 20; ++run) results.push_back(reference_run(mdl));
  }
  reference_check(results.front());
  for (const test::reference_outputs &r : results) {
    CHECK(r.y == results.front().y);
    CHECK(r.z == results.front().z);
    CHECK(r.rows == results.front().rows);
  }
  // A capture made for one thread runs on two.
  model mdl(test::reference_spec(1), 2);
  reference_check(reference_run(mdl));
}

TEST_CASE("the compiler's partition is used, and re-split evenly for another thread count") {
  capture_spec s;
  s.threads = 2;
  s.arena_size = 4096;
  s.outputs = {{"marks", fb::DType::f32, {1000}, 0, 4000}};
  s.programs = {{test::kernel_object("kernels_c.o"), {}}};
  s.kernels = {{"mark", 0, "c_mark", 1, 0}};
  s.steps = {test::launch_step(0, {test::arena_ref(0)}, 1000, 2)};
  s.steps[0].launch.partition = {0, 300, 1000};
  auto marks = [&](int32_t threads) {
    model mdl(s, threads);
    mdl.run();
    return mdl.output("marks");
  };
  const std::vector<float> two = marks(0), three = marks(3), one = marks(1);
  CHECK(two[299] == 0.0f);
  CHECK(two[300] == 300.0f);
  CHECK(two[999] == 300.0f);
  CHECK(three[332] == 0.0f);
  CHECK(three[333] == 333.0f);
  CHECK(three[666] == 666.0f);
  CHECK(one[999] == 0.0f);
}

TEST_CASE("LLVM kernels from several programs in one capture") {
  if (!test::have_llc()) {
    MESSAGE("skipped: llc was not found when configuring");
    return;
  }
  // x -> affine4 -> tables -> switch -> dispatch -> scale, across three programs.
  const int64_t n = 96;
  const uint64_t bytes = uint64_t(n) * 4;
  capture_spec s;
  s.threads = 2;
  s.arena_size = 6 * 512;
  s.inputs = {{"x", fb::DType::f32, {n}, 0, bytes}};
  s.outputs = {{"y", fb::DType::f32, {n}, 5 * 512, bytes}};
  s.programs = {{test::kernel_object("kernels_ll_static.o"), {"expf", "memcpy"}},
                {test::kernel_object("kernels_ll_pic.o"), {"expf", "memcpy"}},
                {test::kernel_object("kernels_c.o"), {"expf", "memcpy"}}};
  s.kernels = {{"affine4", 0, "ll_affine4", 2, 0},
               {"tables", 1, "ll_tables", 2, 0},
               {"switch", 0, "ll_switch", 2, 0},
               {"dispatch", 1, "ll_dispatch", 2, 0},
               {"scale", 2, "c_scale", 2, 0}};
  auto ref = test::arena_ref;
  s.steps = {test::launch_step(0, {ref(0), ref(512)}, uint64_t(n) / 4, 2),
             test::launch_step(1, {ref(512), ref(1024)}, uint64_t(n), 2),
             test::launch_step(2, {ref(1024), ref(1536)}, uint64_t(n), 2),
             test::launch_step(3, {ref(1536), ref(2048)}, uint64_t(n), 2),
             test::launch_step(4, {ref(2048), ref(5 * 512)}, uint64_t(n), 2)};
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[size_t(i)] = float(i % 13) * 0.0625f - 0.25f;
  std::vector<std::vector<float>> results;
  for (int32_t threads : {1, 2, 3}) {
    model mdl(s, threads);
    mdl.input_set("x", x);
    mdl.run();
    results.push_back(mdl.output("y"));
  }
  CHECK(results[0] == results[1]);
  CHECK(results[0] == results[2]);
  const float mul[4] = {0.5f, 1.5f, -2.0f, 3.25f};
  for (int64_t i = 0; i < n; ++i) {
    float v = x[size_t(i)] * mul[i % 4] + 0.1f;
    v = v + float((i & 7) + 1) + float(10 * ((i & 3) + 1));
    const float sw[6] = {v + 1.0f, v * 3.0f, v - 7.0f, -v, v * v, v + 0.25f};
    v = sw[i % 6];
    v = i % 2 ? v + 100.0f : v * 2.0f;
    CAPTURE(i);
    CHECK(results[0][size_t(i)] == doctest::Approx(v * 1.7f + 0.3f).epsilon(1e-5));
  }
}

TEST_CASE("weights are used in place when aligned and copied once when not") {
  {
    model mdl(test::reference_spec(1), 0, /*from_file=*/true);
    CHECK(mdl.m->weight_copies.empty());
    const uint8_t *w = mdl.m->weights[0];
    CHECK(w >= mdl.m->file.data());
    CHECK(w < mdl.m->file.data() + mdl.m->file.size());
    reference_check(reference_run(mdl));
  }
  capture_spec s = test::reference_spec(1);
  s.weights[0].misaligned = true;
  model mdl(s, 0, /*from_file=*/true);
  CHECK(mdl.m->weight_copies.size() == 1);
  CHECK(reinterpret_cast<uintptr_t>(mdl.m->weights[0]) % 64 == 0);
  reference_check(reference_run(mdl));
}

TEST_CASE("a capture loaded from memory does not need the caller's bytes afterwards") {
  capgraph_model *m = nullptr;
  {
    std::vector<uint8_t> bytes = test::capture_build(test::reference_spec(2));
    char err[512] = "";
    REQUIRE(capgraph_load_memory(bytes.data(), bytes.size(), nullptr, &m, err, sizeof err) ==
            CAPGRAPH_OK);
    std::fill(bytes.begin(), bytes.end(), 0xAB);
  }
  model mdl(test::reference_spec(1), 0);  // borrow the helpers for I/O
  std::swap(mdl.m, m);
  capgraph_free(m);
  reference_check(reference_run(mdl));
}

TEST_CASE("the arena starts zeroed") {
  capture_spec s = test::reference_spec(1);
  s.outputs.push_back({"never_written", fb::DType::i32, {3}, s.arena_size - 12, 12});
  model mdl(s, 0);
  const std::vector<float> v = mdl.output("never_written");
  CHECK(v == std::vector<float>(3, 0.0f));
}

TEST_CASE("a model that hit an error keeps returning it from capgraph_run") {
  model mdl(test::reference_spec(2), 0);
  mdl.run();
  mdl.m->sticky = CAPGRAPH_ERR_DEVICE;  // what a device backend sets when the device is lost
  CHECK(capgraph_run(mdl.m) == CAPGRAPH_ERR_DEVICE);
  CHECK(capgraph_run(mdl.m) == CAPGRAPH_ERR_DEVICE);
}

TEST_CASE("--check is refused on the CPU, naming why") {
  model mdl(test::reference_spec(1), 0);
  char report[64] = "untouched";
  CHECK(capgraph_run_check(mdl.m, report, sizeof report) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_error(mdl.m)).find("host twins") != std::string::npos);
  CHECK(std::string(report) == "untouched");
}

TEST_CASE("caller memory bound on the CPU is read and written in place, and unbound again") {
  for (int32_t threads : {1, 2}) {
    CAPTURE(threads);
    model mdl(test::reference_spec(2), threads);
    const size_t bytes = test::k_reference_n * 4, room = (bytes + 4095) / 4096 * 4096;
    float *a = static_cast<float *>(aligned_alloc(4096, room));
    float *b = static_cast<float *>(aligned_alloc(4096, room));  // read by the copy step
    float *y = static_cast<float *>(aligned_alloc(4096, room));
    float *z = static_cast<float *>(aligned_alloc(4096, room));  // written by the copy step
    std::vector<float> va, vb;
    test::reference_inputs(test::k_reference_n, &va, &vb);
    memcpy(a, va.data(), bytes);
    memcpy(b, vb.data(), bytes);
    memset(y, 0, room);
    REQUIRE(capgraph_bind_input(mdl.m, 0, a, room) == CAPGRAPH_OK);
    REQUIRE(capgraph_bind_input(mdl.m, 1, b, room) == CAPGRAPH_OK);
    REQUIRE(capgraph_bind_output(mdl.m, 0, y, room) == CAPGRAPH_OK);
    REQUIRE(capgraph_bind_output(mdl.m, 1, z, room) == CAPGRAPH_OK);
    capgraph_tensor t;
    REQUIRE(capgraph_input(mdl.m, 0, &t) == CAPGRAPH_OK);
    CHECK(t.data == a);
    // The arena's own input slots hold nothing: only the caller's buffers can give the result.
    mdl.run();
    const std::vector<float> rows = mdl.output("rows/r");
    const std::vector<float> y_got(y, y + test::k_reference_n), z_got(z, z + test::k_reference_n);
    reference_check({y_got, z_got, rows});
    REQUIRE(capgraph_output(mdl.m, 0, &t) == CAPGRAPH_OK);
    CHECK(t.data == y);
    // Unbound: the arena again (inputs written there, outputs read there), the buffers untouched.
    for (int32_t i : {0, 1}) {
      REQUIRE(capgraph_bind_input(mdl.m, i, nullptr, 0) == CAPGRAPH_OK);
      REQUIRE(capgraph_bind_output(mdl.m, i, nullptr, 0) == CAPGRAPH_OK);
    }
    memset(y, 0, room);
    reference_check(reference_run(mdl));
    CHECK(y[0] == 0.0f);
    free(a), free(b), free(y), free(z);
  }
}

TEST_CASE("binding refuses unaligned buffers, short buffers, straddling copies and bad indices") {
  model mdl(test::reference_spec(1), 0);
  uint8_t *buf = static_cast<uint8_t *>(aligned_alloc(4096, 8192));
  CHECK(capgraph_bind_input(mdl.m, 0, buf + 64, 4096) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_error(mdl.m)).find("page-aligned") != std::string::npos);
  CHECK(capgraph_bind_input(mdl.m, 0, buf, 100) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(capgraph_bind_output(mdl.m, 99, buf, 4096) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_error(mdl.m)).find("index 99 is out of range") != std::string::npos);
  CHECK(capgraph_bind_input(nullptr, 0, buf, 4096) == CAPGRAPH_ERR_ARGUMENT);
  // The model still runs from its arena.
  reference_check(reference_run(mdl));
  free(buf);
  // A copy of 8 bytes from the middle of `b` into `z`: fine. One from the end of `b` into the next
  // slot reads past `b`, and binding `b` is refused naming why.
  capture_spec s = test::reference_spec(1);
  const uint64_t b_at = s.inputs[1].offset, b_end = b_at + s.inputs[1].size;
  s.steps.push_back(test::copy_step(test::arena_ref(b_end - 8), test::arena_ref(b_end + 64), 16));
  model straddle(s, 0);
  uint8_t *room = static_cast<uint8_t *>(aligned_alloc(4096, 4096));
  CHECK(capgraph_bind_input(straddle.m, 0, room, 4096) == CAPGRAPH_OK);
  CHECK(capgraph_bind_input(straddle.m, 1, room, 4096) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_error(straddle.m)).find("a copy step (step 5)") != std::string::npos);
  // A kernel writing a larger buffer of which the output `y:0` is the second half (its binding
  // starts 64 bytes before it): binding `y:0` is refused, naming the kernel's step; `z` is fine.
  capture_spec slice = test::reference_spec(1);
  test::launch_spec &exp = slice.steps[2].launch;
  exp.buffers[1] = test::arena_ref(slice.outputs[0].offset - 64);
  exp.buffer_sizes[1] = slice.outputs[0].size + 64;
  model sliced(slice, 0);
  CHECK(capgraph_bind_output(sliced.m, 0, room, 4096) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_error(sliced.m)).find("'y:0': a kernel (step 2)") !=
        std::string::npos);
  CHECK(capgraph_bind_output(sliced.m, 1, room, 4096) == CAPGRAPH_OK);
  free(room);
}

TEST_CASE("step names label each step: the kernel of a launch, copy for a copy") {
  model mdl(test::reference_spec(1), 0);
  CHECK(std::string(capgraph_step_name(mdl.m, 0)) == "add_table");
  CHECK(std::string(capgraph_step_name(mdl.m, 2)) == "exp");
  CHECK(std::string(capgraph_step_name(mdl.m, 3)) == "copy");
  CHECK(std::string(capgraph_step_name(mdl.m, 4)) == "copy_rows");
  CHECK(capgraph_step_name(mdl.m, 5) == nullptr);
  CHECK(capgraph_step_name(mdl.m, -1) == nullptr);
  CHECK(capgraph_step_name(nullptr, 0) == nullptr);
}

TEST_CASE("NULL arguments and status names") {
  CHECK(capgraph_run(nullptr) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(capgraph_run_check(nullptr, nullptr, 0) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(std::string(capgraph_status_name(CAPGRAPH_ERR_MISMATCH)) == "mismatch");
  CHECK(capgraph_num_inputs(nullptr) == 0);
  CHECK(capgraph_input_index(nullptr, "a") == -1);
  CHECK(std::string(capgraph_error(nullptr)).empty());
  capgraph_free(nullptr);
  CHECK(std::string(capgraph_status_name(CAPGRAPH_OK)) == "ok");
  CHECK(std::string(capgraph_status_name(CAPGRAPH_ERR_TARGET)) == "target error");
  CHECK(std::string(capgraph_status_name(capgraph_status(99))) == "unknown status");
}

TEST_CASE("timed replay computes the same and times every step") {
  for (int32_t threads : {1, 2}) {
    CAPTURE(threads);
    model mdl(test::reference_spec(2), threads);
    const capture_spec spec = test::reference_spec(2);
    const int32_t n = capgraph_num_steps(mdl.m);
    CHECK(n == (int32_t)spec.steps.size());
    std::vector<uint64_t> ns(n, ~uint64_t(0));
    CHECK(capgraph_run_timed(mdl.m, ns.data(), ns.size() - 1) == CAPGRAPH_ERR_ARGUMENT);
    CHECK(std::string(capgraph_error(mdl.m)).find("step times") != std::string::npos);
    std::vector<float> a, b;
    test::reference_inputs(test::k_reference_n, &a, &b);
    mdl.input_set("a", a);
    mdl.input_set("b", b);
    REQUIRE(capgraph_run_timed(mdl.m, ns.data(), ns.size()) == CAPGRAPH_OK);
    reference_check({mdl.output("y:0"), mdl.output("z"), mdl.output("rows/r")});
    uint64_t total = 0;
    for (uint64_t t : ns) {
      CHECK(t < 10000000000ull);  // every slot written with a plausible duration (< 10 s)
      total += t;
    }
    CHECK(total > 0);
  }
}
