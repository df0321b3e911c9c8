// `capgraph run`, `inspect` and `bench` on damaged captures: truncated, bytes flipped, another file
// type, another format version, another CPU architecture, nothing at all. Each must load and work
// or fail with a message naming the file, never crash.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstring>
#include <random>

#include "capgraph/capture_generated.h"
#include "cli_harness.h"

using namespace capgraph;
using namespace capgraph::cli_test;

namespace {

std::vector<std::string> run_args(const std::string &cap) {
  return {"run", cap, "--input", "x=" + npy_f32("x_1x3x8x8.npy", {1, 3, 8, 8})};
}

std::string write_variant(const std::string &name, const std::vector<uint8_t> &bytes) {
  const std::string path = scratch_path(name);
  file_write(path, bytes);
  return path;
}

// The byte ranges of the capture's kernel machine code.
std::vector<std::pair<size_t, size_t>> code_ranges(const std::vector<uint8_t> &cap) {
  std::vector<std::pair<size_t, size_t>> r;
  const fb::Capture *c = fb::GetCapture(cap.data());
  if (c->programs())
    for (const fb::Program *p : *c->programs()) {
      const size_t begin = size_t(p->binary()->data() - cap.data());
      r.push_back({begin, begin + p->binary()->size()});
    }
  return r;
}

// A minimal capture in the flatbuffers form this build reads, but with another major version.
std::vector<uint8_t> capture_with_version(uint16_t major, uint16_t minor) {
  flatbuffers::FlatBufferBuilder fbb;
  auto target = fb::CreateTargetDirect(fbb, "cpu-x86_64");
  std::vector<flatbuffers::Offset<fb::TensorInfo>> none;
  std::vector<flatbuffers::Offset<fb::Step>> steps;
  auto cap =
      fb::CreateCaptureDirect(fbb, major, minor, "capgraph test", "future.onnx", target, &none,
                              &none, nullptr, 0, 0, nullptr, nullptr, nullptr, &steps);
  fb::FinishCaptureBuffer(fbb, cap);
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

}  // namespace

TEST_CASE("capture: the good capture runs, inspects and benches (the baseline)") {
  const std::string cap = capture_conv_relu();
  check_success(cli_run(run_args(cap)));
  check_success(cli_run({"inspect", cap}));
  check_success(cli_run({"inspect", cap, "--json"}));
  check_success(cli_run({"bench", cap, "--runs", "3"}));
}

TEST_CASE("capture: truncated at many lengths, run and inspect refuse it naming the file") {
  const std::vector<uint8_t> good = file_read(capture_conv_relu());
  std::vector<size_t> lengths = {0, 1, 3, 4, 7, 8, 9, 12, 16, 24, 32, 64, 100, 256};
  for (int i = 1; i < 24; i++) lengths.push_back(good.size() * i / 24);
  // The file ends with the zero padding that aligns the first weight; nothing refers to it, so
  // a file missing only (part of) that padding is still whole. One byte into the data is not.
  size_t padding = 0;
  while (padding < good.size() && good[good.size() - 1 - padding] == 0) padding++;
  lengths.push_back(good.size() - padding - 1);
  lengths.push_back(good.size() - 1);
  for (size_t len : lengths) {
    CAPTURE(len);
    const std::string path =
        write_variant("truncated_" + std::to_string(len) + ".cap",
                      std::vector<uint8_t>(good.begin(), good.begin() + long(len)));
    if (len >= good.size() - padding) {
      check_success(cli_run(run_args(path)));
      check_success(cli_run({"inspect", path}));
      continue;
    }
    check_clean_failure(cli_run(run_args(path)), {path});
    check_clean_failure(cli_run({"inspect", path}), {path});
  }
}

TEST_CASE("capture: random byte flips either load and run or fail cleanly") {
  const std::vector<uint8_t> good = file_read(capture_conv_relu());
  const auto code = code_ranges(good);
  REQUIRE(!code.empty());
  auto in_code = [&](size_t pos) {
    for (auto [b, e] : code)
      if (pos >= b && pos < e) return true;
    return false;
  };
  std::vector<size_t> outside;  // every byte that is not kernel machine code
  for (size_t i = 0; i < good.size(); i++)
    if (!in_code(i)) outside.push_back(i);
  int ran = 0, refused = 0;
  // Flips outside the kernel code: `run` must replay or refuse, and `inspect` must cope.
  for (unsigned seed = 1; seed <= 80; seed++) {
    std::mt19937 rng(seed);
    std::vector<uint8_t> bad = good;
    for (int k = 0, flips = 1 + int(rng() % 3); k < flips; k++)
      bad[outside[rng() % outside.size()]] ^= uint8_t(1u << (rng() % 8));
    const std::string path = write_variant("flipped_" + std::to_string(seed) + ".cap", bad);
    INFO("seed ", seed);
    const cli_result ins = cli_run({"inspect", path, "--json"});
    CHECK_MESSAGE(crash_sign(ins).empty(), crash_sign(ins) << "\n" << ins.output);
    const cli_result r = cli_run(run_args(path));
    INFO(r.output);
    CHECK_MESSAGE(crash_sign(r).empty(), crash_sign(r));
    if (r.exit_code == 0) {
      ran++;
    } else {
      refused++;
      CHECK(r.exit_code == 1);
      CHECK(r.output.find(path) != std::string::npos);
    }
  }
  MESSAGE(ran << " captures flipped outside kernel code ran, " << refused << " were refused");
  // Flips inside the kernel machine code: the per-program checksum refuses them at load, so
  // `run` never executes damaged code.
  for (unsigned seed = 1; seed <= 40; seed++) {
    std::mt19937 rng(1000 + seed);
    std::vector<uint8_t> bad = good;
    auto [b, e] = code[rng() % code.size()];
    bad[b + rng() % (e - b)] ^= uint8_t(1u << (rng() % 8));
    const std::string path = write_variant("flipped_code_" + std::to_string(seed) + ".cap", bad);
    INFO("seed ", seed);
    const cli_result ins = cli_run({"inspect", path});
    CHECK_MESSAGE(crash_sign(ins).empty(), crash_sign(ins) << "\n" << ins.output);
    const cli_result r = cli_run(run_args(path));
    CHECK_MESSAGE(crash_sign(r).empty(), crash_sign(r) << "\n" << r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find("damaged") != std::string::npos);
  }
}

TEST_CASE("capture: not a capture, wrong file identifier, empty, missing, a directory") {
  std::vector<uint8_t> bad = file_read(capture_conv_relu());
  std::memcpy(bad.data() + 4, "CAPX", 4);
  const std::string wrong_id = write_variant("wrong_identifier.cap", bad);
  const std::string onnx = model_conv_relu();
  const std::string empty = write_variant("empty.cap", {});
  const std::string missing = scratch_path("no_such.cap");
  const std::string dir = scratch_path("a_directory.cap");
  REQUIRE(mkdir(dir.c_str(), 0755) == 0);
  for (const std::string &path : {wrong_id, onnx, empty, missing, dir}) {
    CAPTURE(path);
    check_clean_failure(cli_run(run_args(path)), {path});
    check_clean_failure(cli_run({"inspect", path}), {path});
    check_clean_failure(cli_run({"bench", path, "--runs", "1"}), {path});
  }
  check_clean_failure(cli_run(run_args(wrong_id)), {"CAPG"});
}

TEST_CASE("capture: another major format version is refused as a version problem") {
  // 2.x is this build's (GPU captures); 3.0 is a future one.
  const std::string v3 = write_variant("version_3.cap", capture_with_version(3, 0));
  check_clean_failure(cli_run(run_args(v3)), {v3, "version 3.0"});
  check_clean_failure(cli_run({"inspect", v3}), {v3, "version 3.0"});
  check_clean_failure(cli_run({"bench", v3}), {v3, "version 3.0"});
  const std::string v0 = write_variant("version_0.cap", capture_with_version(0, 7));
  check_clean_failure(cli_run(run_args(v0)), {v0, "version 0.7"});
}

TEST_CASE(
    "capture: a capture for another CPU architecture is refused by run, described by inspect") {
#if defined(__x86_64__)
  const char *other = "cpu-aarch64";
#else
  const char *other = "cpu-x86_64";
#endif
  const std::string cap = scratch_path("other_arch.cap");
  check_success(cli_run({"compile", model_conv_relu(), "-o", cap, "--target", other}));
  check_clean_failure(cli_run(run_args(cap)), {cap, other});
  check_clean_failure(cli_run({"bench", cap}), {cap, other});
  const cli_result r = cli_run({"inspect", cap});
  check_success(r);
  CHECK(r.output.find(other) != std::string::npos);
}

TEST_CASE(
    "capture: an AVX-512 capture runs where the CPU has AVX-512 and is refused naming it "
    "elsewhere") {
#if defined(__x86_64__)
  const std::string cap = scratch_path("avx512.cap");
  check_success(
      cli_run({"compile", model_conv_relu(), "-o", cap, "--target", "cpu-x86_64-avx512"}));
  const cli_result r = cli_run({"inspect", cap});
  check_success(r);
  CHECK(r.output.find("x86-64-v4") != std::string::npos);  // AVX-512 F/BW/CD/DQ/VL
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    check_success(cli_run(run_args(cap)));
  } else {
    check_clean_failure(cli_run(run_args(cap)), {cap, "+avx512f"});
    check_clean_failure(cli_run({"bench", cap}), {cap, "+avx512f"});
  }
  // The AVX2 target's captures need no AVX-512 (they run on any AVX2 machine).
  const std::string avx2 = scratch_path("avx2.cap");
  check_success(cli_run({"compile", model_conv_relu(), "-o", avx2, "--target", "cpu-x86_64"}));
  const cli_result r2 = cli_run({"inspect", avx2});
  check_success(r2);
  CHECK(r2.output.find("x86-64-v3") != std::string::npos);  // AVX2 + FMA
#else
  MESSAGE("not an x86-64 machine: the AVX-512 target is not exercised here");
#endif
}

TEST_CASE("inspect: garbage with a CAPG identifier, and usage mistakes") {
  std::mt19937 rng(3);
  for (int i = 0; i < 8; i++) {
    std::vector<uint8_t> g(8 + rng() % 2048);
    for (uint8_t &b : g) b = uint8_t(rng());
    std::memcpy(g.data() + 4, "CAPG", 4);
    const std::string path = write_variant("garbage_" + std::to_string(i) + ".cap", g);
    check_clean_failure(cli_run({"inspect", path}), {path});
    check_clean_failure(cli_run({"inspect", path, "--json"}), {path});
  }
  check_clean_failure(cli_run({"inspect"}), {"inspect"});
  check_clean_failure(cli_run({"inspect", capture_conv_relu(), "--yaml"}), {"--yaml"});
}

TEST_CASE("bench: bad --runs and --threads values name the flag") {
  const std::string cap = capture_conv_relu();
  for (const char *runs : {"0", "-1", "abc", "", "1e3", "10000000", "99999999999999999999"}) {
    CAPTURE(runs);
    check_clean_failure(cli_run({"bench", cap, "--runs", runs}), {"--runs"});
  }
  check_clean_failure(cli_run({"bench", cap, "--runs"}), {"--runs", "needs a value"});
  check_clean_failure(cli_run({"bench", cap, "--threads", "0"}), {"--threads"});
  check_clean_failure(cli_run({"bench", cap, "--warmup", "3"}), {"--warmup"});
}
