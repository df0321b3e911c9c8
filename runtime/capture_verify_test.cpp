// capture_verify: every load-time check fires, with a message naming the file and the thing that
// is wrong, and with the status the C API documents.
#include "capture_verify.h"

#include <doctest/doctest.h>
#include <elf.h>

#include <cstring>
#include <functional>

#include "capgraph_runtime.h"
#include "capture_fixture.h"
#include "cpu_target.h"
#include "hcq/target.h"

using namespace capgraph;
using test::capture_spec;

namespace {

struct load_result {
  capgraph_status status;
  std::string message;
};

load_result load(const std::vector<uint8_t> &bytes, int32_t threads = 0) {
  capgraph_model *m = nullptr;
  char err[1024] = "";
  const capgraph_options opts{threads};
  const capgraph_status st =
      capgraph_load_memory(bytes.data(), bytes.size(), &opts, &m, err, sizeof err);
  if (st == CAPGRAPH_OK)
    CHECK(m != nullptr);
  else
    CHECK(m == nullptr);
  capgraph_free(m);
  return {st, err};
}

// Loads the reference capture after `change`; expects `status` and a message containing `text`.
void expect_refused(const std::function<void(capture_spec &)> &change, capgraph_status status,
                    const std::string &text) {
  capture_spec s = test::reference_spec(2);
  change(s);
  const load_result r = load(test::capture_build(s));
  INFO("message: " << r.message);
  CHECK(r.status == status);
  CHECK(r.message.rfind("<memory>: ", 0) == 0);
  CHECK(r.message.find(text) != std::string::npos);
}

}  // namespace

TEST_CASE("the reference capture passes") {
  const load_result r = load(test::capture_build(test::reference_spec(2)));
  INFO(r.message);
  CHECK(r.status == CAPGRAPH_OK);
}

TEST_CASE("file identity and version") {
  CHECK(load({}).status == CAPGRAPH_ERR_FORMAT);
  std::vector<uint8_t> bytes = test::capture_build(test::reference_spec(1));
  bytes[4] = 'X';  // the file identifier lives at bytes 4..7
  load_result r = load(bytes);
  CHECK(r.status == CAPGRAPH_ERR_FORMAT);
  CHECK(r.message == "<memory>: not a capture file (no 'CAPG' file identifier)");

  expect_refused([](capture_spec &s) { s.version_major = 3, s.version_minor = 3; },
                 CAPGRAPH_ERR_VERSION, "capture format version 3.3 cannot be read by this runtime");
  expect_refused([](capture_spec &s) { s.version_major = 0; }, CAPGRAPH_ERR_VERSION, "version 0.2");
  // A newer minor version is fine.
  capture_spec s = test::reference_spec(1);
  s.version_minor = 7;
  CHECK(load(test::capture_build(s)).status == CAPGRAPH_OK);
}

TEST_CASE("the preamble the runtime and the CLI share reads the version before the layout") {
  CHECK(capture_versions_text() == "versions 1.x and 2.x");
  capture_spec s = test::reference_spec(1);
  s.version_major = 3, s.version_minor = 1;
  std::vector<uint8_t> bytes = test::capture_build(s);
  capture_preamble p = capture_preamble_check(bytes.data(), bytes.size());
  CHECK(p.status == capture_preamble_status::bad_version);
  CHECK(p.major == 3);
  CHECK(p.minor == 1);
  bytes = test::capture_build(test::reference_spec(1));
  CHECK(capture_preamble_check(bytes.data(), bytes.size()).status == capture_preamble_status::ok);
  CHECK(capture_preamble_check(bytes.data(), 7).status == capture_preamble_status::no_identifier);
  // Cut short: the version is still readable, the layout is not.
  CHECK(capture_preamble_check(bytes.data(), bytes.size() / 2).status ==
        capture_preamble_status::bad_layout);
}

TEST_CASE("an NVIDIA capture loaded for the CPU is refused naming the NVIDIA devices") {
  expect_refused(
      [](capture_spec &s) { s.target = "nv-sm90", s.version_major = 2, s.version_minor = 2; },
      CAPGRAPH_ERR_TARGET, "compiled for nv-sm90; run it with --device nv");
  expect_refused([](capture_spec &s) { s.target = "nv-sm86"; }, CAPGRAPH_ERR_TARGET, "nv-sm86");
}

TEST_CASE("target architecture and CPU features") {
#if defined(__x86_64__)
  const char *other = "cpu-aarch64";
  const std::vector<const char *> rare = {"avx512fp16", "avx512f", "xop", "fma4", "avx512vbmi2"};
#else
  const char *other = "cpu-x86_64";
  const std::vector<const char *> rare = {"sve2", "sve", "i8mm", "bf16"};
#endif
  expect_refused([&](capture_spec &s) { s.target = other; }, CAPGRAPH_ERR_TARGET,
                 std::string("compiled for target '") + other + "' but this runtime replays '" +
                     cpu_target_name() + "'");
  expect_refused([&](capture_spec &s) { s.target = "gpu-gfx1100"; }, CAPGRAPH_ERR_TARGET,
                 "'gpu-gfx1100'");
  // A GPU capture on the CPU names the device that runs it (Adreno's, when the runtime carries
  // targets/adreno) or says no device of this runtime does.
  expect_refused([&](capture_spec &s) { s.target = "adreno-a630"; }, CAPGRAPH_ERR_TARGET,
                 hcq::devices_for_capture("adreno-a630").empty()
                     ? "compiled for target 'adreno-a630', which no device of this runtime runs"
                     : "compiled for adreno-a630; run it with --device adreno");

  // Features this CPU lacks are named; unknown and disabled ("-x") ones are not checked.
  const char *missing = nullptr;
  for (const char *f : rare) {
    bool known = false;
    if (!cpu_feature_present(f, &known) && known) {
      missing = f;
      break;
    }
  }
  if (missing) {
    expect_refused([&](capture_spec &s) { s.features = std::string("+") + missing; },
                   CAPGRAPH_ERR_TARGET, std::string("requires CPU feature +") + missing);
  } else {
    MESSAGE("this CPU has every feature probed; the missing-feature case is not exercised");
  }
  capture_spec s = test::reference_spec(1);
  s.features = std::string("+made-up-feature,") + (missing ? std::string("-") + missing : "");
  CHECK(load(test::capture_build(s)).status == CAPGRAPH_OK);
#if defined(__x86_64__)
  bool known = false;
  CHECK(cpu_feature_present("sse2", &known));
  CHECK(known);
#endif
}

TEST_CASE("threads and partitions") {
  expect_refused([](capture_spec &s) { s.threads = 0; }, CAPGRAPH_ERR_FORMAT, "threads is 0");
  expect_refused([](capture_spec &s) { s.steps[1].launch.partition = {0, 1000}; },
                 CAPGRAPH_ERR_FORMAT,
                 "step 1 (launch of kernel 'scale', ONNX nodes node_1): partition has 2 entries; "
                 "threads is 2 so it needs 3");
  expect_refused([](capture_spec &s) { s.steps[0].launch.partition = {5, 500, 1000}; },
                 CAPGRAPH_ERR_FORMAT, "partition starts at 5, not 0");
  expect_refused([](capture_spec &s) { s.steps[0].launch.partition = {0, 600, 500}; },
                 CAPGRAPH_ERR_FORMAT, "partition decreases at thread 1");
  expect_refused([](capture_spec &s) { s.steps[2].launch.partition = {0, 500, 999}; },
                 CAPGRAPH_ERR_FORMAT,
                 "step 2 (launch of kernel 'exp', ONNX nodes node_2): "
                 "partition ends at 999, not at work_size 1000");
  expect_refused(
      [](capture_spec &s) {
        s.steps[0].launch.work_size = uint64_t(1) << 63;
        s.steps[0].launch.partition = {0, 0, uint64_t(1) << 63};
      },
      CAPGRAPH_ERR_FORMAT, "work_size 9223372036854775808 is too large");
}

TEST_CASE("launch bindings") {
  expect_refused([](capture_spec &s) { s.steps[0].launch.kernel = 9; }, CAPGRAPH_ERR_FORMAT,
                 "step 0 (launch of kernel 9, ONNX nodes node_0): kernel 9 does not exist "
                 "(the capture has 4)");
  expect_refused([](capture_spec &s) { s.steps[0].launch.buffers.pop_back(); }, CAPGRAPH_ERR_FORMAT,
                 "2 buffers bound, the kernel takes 3");
  expect_refused([](capture_spec &s) { s.steps[4].launch.scalars.clear(); }, CAPGRAPH_ERR_FORMAT,
                 "step 4 (launch of kernel 'copy_rows', ONNX nodes node_3): 0 scalars bound, the "
                 "kernel takes 1");
  expect_refused(
      [](capture_spec &s) { s.steps[1].launch.buffers[1] = test::arena_ref(s.arena_size); },
      CAPGRAPH_ERR_FORMAT,
      "buffer 1 (arena offset 28224, 4000 bytes) is outside the arena (28224 bytes)");
  expect_refused([](capture_spec &s) { s.steps[0].launch.buffers[1] = test::weight_ref(3); },
                 CAPGRAPH_ERR_FORMAT, "buffer 1: weight 3 does not exist (the capture has 1)");
  expect_refused([](capture_spec &s) { s.steps[0].launch.buffers[1] = test::weight_ref(0, 4000); },
                 CAPGRAPH_ERR_FORMAT,
                 "buffer 1 (weight 0 offset 4000, 4000 bytes) is outside the weight (4000 bytes)");
  expect_refused(
      [](capture_spec &s) { s.steps[0].launch.buffers[1] = fb::BufferRef(fb::Space(7), 0, 0); },
      CAPGRAPH_ERR_FORMAT, "buffer 1: unknown buffer space 7");
}

TEST_CASE("copies") {
  expect_refused([](capture_spec &s) { s.steps[3].copy.size = 1u << 20; }, CAPGRAPH_ERR_FORMAT,
                 "step 3 (copy): source (arena offset 4032, 1048576 bytes) is outside its region");
  expect_refused([](capture_spec &s) { s.steps[3].copy.dst = test::arena_ref(s.arena_size - 8); },
                 CAPGRAPH_ERR_FORMAT,
                 "step 3 (copy): destination (arena offset 28216, 4000 bytes) "
                 "is outside the arena");
  expect_refused([](capture_spec &s) { s.steps[3].copy.dst = test::weight_ref(0); },
                 CAPGRAPH_ERR_FORMAT, "destination is not in the arena (weights are read-only)");
  expect_refused(
      [](capture_spec &s) {
        s.steps[3].copy.dst = test::arena_ref(s.steps[3].copy.src.offset() + 8);
      },
      CAPGRAPH_ERR_FORMAT, "step 3 (copy): source and destination overlap");
  expect_refused([](capture_spec &s) { s.steps[3].copy.src = test::weight_ref(2); },
                 CAPGRAPH_ERR_FORMAT, "step 3 (copy): source: weight 2 does not exist");
  // A copy from a weight is fine (a constant output).
  capture_spec s = test::reference_spec(1);
  s.steps[3].copy.src = test::weight_ref(0);
  CHECK(load(test::capture_build(s)).status == CAPGRAPH_OK);
}

TEST_CASE("steps agree with their kind") {
  expect_refused([](capture_spec &s) { s.steps[0].with_launch = false; }, CAPGRAPH_ERR_FORMAT,
                 "step 0: kind is launch but it holds no launch");
  expect_refused([](capture_spec &s) { s.steps[0].with_copy = true; }, CAPGRAPH_ERR_FORMAT,
                 "step 0: kind is launch but it also holds a copy");
  expect_refused([](capture_spec &s) { s.steps[3].with_copy = false; }, CAPGRAPH_ERR_FORMAT,
                 "step 3: kind is copy but it holds no copy");
  expect_refused(
      [](capture_spec &s) {
        s.steps[3].with_launch = true;
        s.steps[3].launch = s.steps[0].launch;
      },
      CAPGRAPH_ERR_FORMAT, "step 3: kind is copy but it also holds a launch");
  expect_refused([](capture_spec &s) { s.steps[2].kind = fb::StepKind(9); }, CAPGRAPH_ERR_FORMAT,
                 "step 2: unknown kind 9");
}

TEST_CASE("inputs, outputs and the memory plan") {
  expect_refused([](capture_spec &s) { s.inputs[1].size = 3996; }, CAPGRAPH_ERR_FORMAT,
                 "input 'b': size is 3996 bytes but its shape and dtype make 4000");
  expect_refused([](capture_spec &s) { s.outputs[2].shape = {250, 2}; }, CAPGRAPH_ERR_FORMAT,
                 "output 'rows/r': size is 4000 bytes but its shape and dtype make 2000");
  expect_refused([](capture_spec &s) { s.outputs[0].dtype = fb::DType::f64; }, CAPGRAPH_ERR_FORMAT,
                 "output 'y:0': size is 4000 bytes but its shape and dtype make 8000");
  expect_refused([](capture_spec &s) { s.outputs[1].offset = s.arena_size - 64; },
                 CAPGRAPH_ERR_FORMAT,
                 "output 'z' (offset 28160, 4000 bytes) is outside the arena (28224 bytes)");
  expect_refused([](capture_spec &s) { s.inputs[0].dtype = fb::DType(42); }, CAPGRAPH_ERR_FORMAT,
                 "input 'a': unknown dtype 42");
  expect_refused([](capture_spec &s) { s.inputs[0].shape = {1, 1, 1, 1, 1, 1, 1, 1, 1000}; },
                 CAPGRAPH_ERR_FORMAT, "input 'a': rank 9 is more than 8");
  expect_refused([](capture_spec &s) { s.inputs[0].shape = {-2, -500}; }, CAPGRAPH_ERR_FORMAT,
                 "input 'a': dimension -2 is negative");
  expect_refused([](capture_spec &s) { s.inputs[0].shape = {int64_t(1) << 40, int64_t(1) << 40}; },
                 CAPGRAPH_ERR_FORMAT, "input 'a': the shape's byte size overflows");
  expect_refused([](capture_spec &s) { s.inputs[1].name = s.inputs[0].name; }, CAPGRAPH_ERR_FORMAT,
                 "input 1 'a': the name is used twice");
  expect_refused([](capture_spec &s) { s.buffers[1].size = 1u << 20; }, CAPGRAPH_ERR_FORMAT,
                 "planned buffer 1 't1' (offset 12096, 1048576 bytes) is outside the arena");
}

TEST_CASE("programs and kernels") {
  expect_refused([](capture_spec &s) { s.kernels[2].program = 4; }, CAPGRAPH_ERR_FORMAT,
                 "kernel 2 'exp' uses program 4, but the capture has 1 programs");
  expect_refused([](capture_spec &s) { s.programs[0].format = fb::ProgramFormat(3); },
                 CAPGRAPH_ERR_FORMAT,
                 "program 0 has format 3; this runtime loads elf_relocatable (0)");
  expect_refused([](capture_spec &s) { s.programs[0].imports.push_back("printf"); },
                 CAPGRAPH_ERR_FORMAT,
                 "program 0 imports 'printf', which the runtime does not provide");
  expect_refused([](capture_spec &s) { s.kernels[1].entry = "c_scale_missing"; },
                 CAPGRAPH_ERR_FORMAT,
                 "kernel 1 'scale': entry symbol 'c_scale_missing' is not defined in program 0");
  expect_refused([](capture_spec &s) { s.kernels[1].entry = "c_calls"; }, CAPGRAPH_ERR_FORMAT,
                 "kernel 1 'scale': entry symbol 'c_calls' is not code in program 0");
  expect_refused([](capture_spec &s) { s.programs[0].binary = {1, 2, 3, 4, 5, 6, 7, 8}; },
                 CAPGRAPH_ERR_FORMAT,
                 "program 0: ELF object: 8 bytes is too short for an ELF header");
  expect_refused(
      [](capture_spec &s) { s.programs[0].binary.resize(s.programs[0].binary.size() / 2); },
      CAPGRAPH_ERR_FORMAT, "program 0: ELF object: ");
#if defined(__x86_64__)
  const uint16_t other = EM_AARCH64;
  const char *other_name = "aarch64";
#else
  const uint16_t other = EM_X86_64;
  const char *other_name = "x86-64";
#endif
  expect_refused([&](capture_spec &s) { memcpy(s.programs[0].binary.data() + 18, &other, 2); },
                 CAPGRAPH_ERR_TARGET, std::string("program 0: ELF object is for ") + other_name);
}

TEST_CASE("load options and files") {
  const std::vector<uint8_t> bytes = test::capture_build(test::reference_spec(1));
  load_result r = load(bytes, -1);
  CHECK(r.status == CAPGRAPH_ERR_ARGUMENT);
  CHECK(r.message.find("threads -1") != std::string::npos);
  CHECK(load(bytes, 5000).status == CAPGRAPH_ERR_ARGUMENT);

  capgraph_model *m = reinterpret_cast<capgraph_model *>(1);
  char err[256] = "";
  CHECK(capgraph_load("/nonexistent/model.cap", nullptr, &m, err, sizeof err) == CAPGRAPH_ERR_IO);
  CHECK(m == nullptr);
  CHECK(std::string(err).rfind("/nonexistent/model.cap: cannot open: ", 0) == 0);

  // Messages from a file name the file.
  capture_spec s = test::reference_spec(1);
  s.steps[0].launch.kernel = 77;
  const std::string path = test::temp_path("bad_kernel.cap");
  test::file_write(path, test::capture_build(s));
  CHECK(capgraph_load(path.c_str(), nullptr, &m, err, sizeof err) == CAPGRAPH_ERR_FORMAT);
  CHECK(std::string(err).rfind(path + ": step 0 (launch of kernel 77", 0) == 0);

  // A too-small message buffer truncates, never overflows; a zero-sized one is left alone.
  char tiny[8];
  memset(tiny, 'x', sizeof tiny);
  CHECK(capgraph_load(path.c_str(), nullptr, &m, tiny, sizeof tiny) == CAPGRAPH_ERR_FORMAT);
  CHECK(strlen(tiny) == 7);
  CHECK(capgraph_load(path.c_str(), nullptr, &m, nullptr, 0) == CAPGRAPH_ERR_FORMAT);
  CHECK(capgraph_load(path.c_str(), nullptr, nullptr, err, sizeof err) == CAPGRAPH_ERR_ARGUMENT);
}

TEST_CASE("damaged kernel code is refused before it can run") {
  expect_refused([](capture_spec &s) { s.programs[0].hash_wrong = true; }, CAPGRAPH_ERR_FORMAT,
                 "program 0 is damaged: its code does not match its checksum");
  // A flipped bit inside the code itself, the stored hash left as it was.
  std::vector<uint8_t> bytes = test::capture_build(test::reference_spec(2));
  CHECK(load(bytes).status == CAPGRAPH_OK);
  const uint8_t *code = test::capture_program_code(bytes, 0);
  REQUIRE(code != nullptr);
  bytes[code - bytes.data() + 7] ^= 0x01;
  const load_result r = load(bytes);
  CHECK(r.status == CAPGRAPH_ERR_FORMAT);
  CHECK(r.message.find("program 0 is damaged") != std::string::npos);
}

TEST_CASE("a binding's whole extent must lie inside its region") {
  expect_refused(
      [](capture_spec &s) {
        s.steps[0].launch.buffer_sizes.assign(s.steps[0].launch.buffers.size(), 16);
        s.steps[0].launch.buffer_sizes[0] =
            s.arena_size - s.steps[0].launch.buffers[0].offset() + 1;
      },
      CAPGRAPH_ERR_FORMAT, "is outside the arena");
  expect_refused([](capture_spec &s) { s.steps[0].launch.buffer_sizes = {8}; }, CAPGRAPH_ERR_FORMAT,
                 "buffer sizes for");
}
