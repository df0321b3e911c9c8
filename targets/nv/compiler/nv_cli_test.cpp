// NVIDIA captures through the real command line: `capgraph compile --target nv-sm*` on generated
// models, `inspect` (text and --json) showing every kernel's NvKernel facts, checked against the
// facts the code generator itself read from the cubins (compile_schedule + nvptx_codegen on the
// same model), and `run` refusing the capture by name on the devices of other families (fake-nv
// replays it: nv_e2e.sh). Without ptxas the compile
// must fail naming ptxas, and the checks that need cubins say so and skip.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "cli_harness.h"
#include "compile.h"
#include "npy.h"
#include "nvptx_codegen.h"

using namespace capgraph;
using namespace capgraph::cli_test;

namespace {

// The unsigned number after `"key": ` at or after `from` in `json`, before `end`; -1 if absent.
long long json_number(const std::string &json, const std::string &key, size_t from, size_t end) {
  const size_t at = json.find("\"" + key + "\": ", from);
  if (at == std::string::npos || at >= end) return -1;
  return std::strtoll(json.c_str() + at + key.size() + 4, nullptr, 10);
}

// One nv_kernels object of inspect --json: [begin, end) of the entry named `entry`.
std::pair<size_t, size_t> json_kernel(const std::string &json, const std::string &entry) {
  const size_t list = json.find("\"nv_kernels\": [");
  if (list == std::string::npos) return {std::string::npos, std::string::npos};
  const size_t at = json.find("\"entry\": \"" + entry + "\"", list);
  if (at == std::string::npos) return {std::string::npos, std::string::npos};
  return {at, json.find('}', at)};
}

// Compiles `model` for `target` through the CLI and checks inspect's facts against the code
// generator's own for the same model.
void nv_capture_check(const std::string &model, const std::string &target, unsigned sm,
                      unsigned qmd, unsigned param_offset) {
  CAPTURE(model);
  CAPTURE(target);
  const std::string cap =
      scratch_path(target + "_" + std::to_string(std::hash<std::string>{}(model)) + ".cap");
  check_success(cli_run({"compile", model, "--target", target, "-o", cap}, 120000));

  CompileOptions opt;
  opt.target = target;
  Program p = compile_schedule(model, opt, nullptr);
  const NvTarget t = nv_target_named(target);
  const NvCodegenResult gen = nvptx_codegen(p, t, 2);
  std::map<std::string, const NvKernelFacts *> by_entry;
  for (size_t i = 0; i < gen.facts.size(); i++)
    by_entry[gen.code.kernels[i].symbol] = &gen.facts[i];
  REQUIRE(!by_entry.empty());

  const cli_result js = cli_run({"inspect", cap, "--json"});
  check_success(js);
  CHECK(js.output.find("\"version\": \"2.2\"") != std::string::npos);
  CHECK(js.output.find("\"target\": \"" + target + "\"") != std::string::npos);
  CHECK(js.output.find("\"amd_kernels\"") == std::string::npos);
  size_t objects = 0;
  for (size_t at = js.output.find("\"nv_kernels\": ["); at != std::string::npos;
       at = js.output.find("\"sm\": ", at + 1))
    objects++;
  CHECK(objects - 1 == by_entry.size());  // one object per distinct kernel
  for (const auto &[entry, f] : by_entry) {
    CAPTURE(entry);
    const auto [b, e] = json_kernel(js.output, entry);
    REQUIRE(b != std::string::npos);
    CHECK(json_number(js.output, "sm", b, e) == sm);
    CHECK(json_number(js.output, "qmd_version", b, e) == qmd);
    CHECK(json_number(js.output, "registers", b, e) == f->registers);
    CHECK(json_number(js.output, "shared_bytes", b, e) == f->shared_bytes);
    CHECK(json_number(js.output, "frame_bytes", b, e) == f->frame_bytes);
    CHECK(json_number(js.output, "cbank0_bytes", b, e) == f->cbank0_bytes);
    CHECK(json_number(js.output, "param_offset", b, e) == param_offset);
    CHECK(json_number(js.output, "param_bytes", b, e) == f->param_bytes);
    CHECK(json_number(js.output, "text_offset", b, e) == (long long)f->text_offset);
    CHECK(json_number(js.output, "text_size", b, e) == (long long)f->text_size);
    CHECK(f->text_size > 0);
    const std::string block = "\"block\": [" + std::to_string(t.block_size) + ", 1, 1]";
    CHECK(js.output.substr(b, e - b).find(block) != std::string::npos);
    CHECK(js.output.substr(b, e - b).find("\"ptxas_version\": \"" + gen.ptxas_version + "\"") !=
          std::string::npos);
    CHECK(js.output.substr(b, e - b).find("\"twin_entry\": null") ==
          std::string::npos);                                // every kernel has a host twin
    CHECK(json_number(js.output, "ptx_bytes", b, e) > 100);  // the PTX module, by default
  }

  const cli_result text = cli_run({"inspect", cap});
  check_success(text);
  CHECK(text.output.find("capture v2.2 for " + target + " (nvptx64-nvidia-cuda " + t.cpu + ")") !=
        std::string::npos);
  CHECK(text.output.find("NVIDIA kernels:") != std::string::npos);
  CHECK(text.output.find("cubins by ptxas " + gen.ptxas_version) != std::string::npos);
  CHECK(text.output.find("PTX carried for " + std::to_string(objects - 1) + " of " +
                         std::to_string(objects - 1) + " kernels (fake-nv executes it)") !=
        std::string::npos);

  // No device of another family replays it: each refuses it naming the target.
  for (const std::vector<std::string> &device : {std::vector<std::string>{},
                                                 {"--device", "cpu"},
                                                 {"--device", "null"},
                                                 {"--device", "fake-amd"}}) {
    std::vector<std::string> args = {"run", cap};
    args.insert(args.end(), device.begin(), device.end());
    check_clean_failure(cli_run(args), {cap, "compiled for", target});
  }
}

}  // namespace

TEST_CASE(
    "nv: generated models compile for nv-sm90 and nv-sm86; inspect shows the cubins' facts; run "
    "refuses by name") {
  if (ptxas_find().empty()) {
    MESSAGE(
        "no ptxas here (CAPGRAPH_PTXAS=none or no CUDA toolkit): NVIDIA captures cannot be made, "
        "checks skipped");
    return;
  }
  // Sources for the parameter offsets: nv_cubin.h (EIATTR_PARAM_CBANK; 0x210 on sm_90,
  // 0x160 on sm_86/89, as schema/nv_kernel.fbs records them).
  for (const std::string &model : {model_conv_relu(), model_mul_add()}) {
    nv_capture_check(model, "nv-sm90", 90, 4, 0x210);
    nv_capture_check(model, "nv-sm86", 86, 3, 0x160);
  }
}

TEST_CASE(
    "nv: without ptxas, compile --target nv-sm90 fails naming ptxas and where it looked, leaving "
    "no file") {
  const char *old = std::getenv("CAPGRAPH_PTXAS");
  const std::string saved = old ? old : "";
  setenv("CAPGRAPH_PTXAS", "none", 1);
  const std::string out = scratch_path("no_ptxas.cap");
  const cli_result r = cli_run({"compile", model_conv_relu(), "--target", "nv-sm90", "-o", out});
  if (old)
    setenv("CAPGRAPH_PTXAS", saved.c_str(), 1);
  else
    unsetenv("CAPGRAPH_PTXAS");
  check_clean_failure(r, {"nv-sm90", "ptxas", "$PATH", "/usr/local/cuda/bin"});
  CHECK(!file_exists(out));
}

TEST_CASE("nv: CAPGRAPH_NV_NO_PTX=1 leaves the PTX out, and inspect says so") {
  if (ptxas_find().empty()) {
    MESSAGE("no ptxas here: NVIDIA captures cannot be made, check skipped");
    return;
  }
  const std::string with = scratch_path("ptx_with.cap"), without = scratch_path("ptx_without.cap");
  check_success(cli_run({"compile", model_conv_relu(), "--target", "nv-sm90", "-o", with}, 120000));
  setenv("CAPGRAPH_NV_NO_PTX", "1", 1);
  const cli_result r =
      cli_run({"compile", model_conv_relu(), "--target", "nv-sm90", "-o", without}, 120000);
  unsetenv("CAPGRAPH_NV_NO_PTX");
  check_success(r);
  const cli_result text = cli_run({"inspect", without});
  check_success(text);
  CHECK(text.output.find("CAPGRAPH_NV_NO_PTX=1") != std::string::npos);  // "compiled with"
  CHECK(text.output.find("PTX carried for 0 of") != std::string::npos);
  const cli_result js = cli_run({"inspect", without, "--json"});
  CHECK(js.output.find("\"ptx_bytes\": 0") != std::string::npos);
  CHECK(std::filesystem::file_size(without) + 1000 <
        std::filesystem::file_size(with));  // the text is really gone
}

TEST_CASE(
    "nv: fake-nv executes the kernels' PTX, matching the CPU; --check and fake-nv:check pass; a "
    "planted miscompile in the PTX is named by both") {
  if (ptxas_find().empty()) {
    MESSAGE("no ptxas here: NVIDIA captures cannot be made, check skipped");
    return;
  }
  const std::string cpu = scratch_path("exec_cpu.cap"), gpu = scratch_path("exec_sm90.cap"),
                    bad = scratch_path("exec_bad.cap");
  check_success(cli_run({"compile", model_conv_relu(), "-o", cpu}, 120000));
  check_success(cli_run({"compile", model_conv_relu(), "--target", "nv-sm90", "-o", gpu}, 120000));
  const std::string dir_cpu = scratch_path("exec_out_cpu"), dir_ptx = scratch_path("exec_out_ptx"),
                    dir_twin = scratch_path("exec_out_twin");
  check_success(cli_run({"run", cpu, "--random-inputs", "7", "--output-dir", dir_cpu}));
  check_success(cli_run(
      {"run", gpu, "--device", "fake-nv", "--random-inputs", "7", "--output-dir", dir_ptx}));
  check_success(cli_run(
      {"run", gpu, "--device", "fake-nv:twin", "--random-inputs", "7", "--output-dir", dir_twin}));
  // Every output file: the PTX's and the twins' against the CPU's (the same rule as the e2e).
  size_t compared = 0;
  for (const auto &f : std::filesystem::directory_iterator(dir_cpu)) {
    const std::string name = f.path().filename();
    for (const std::string &other : {dir_ptx, dir_twin}) {
      npy_array x, y;
      std::string err;
      REQUIRE_MESSAGE(npy_read(f.path().string(), &x, &err), err);
      REQUIRE_MESSAGE(npy_read(other + "/" + name, &y, &err), err);
      REQUIRE(x.dtype == CAPGRAPH_F32);
      REQUIRE(x.data.size() == y.data.size());
      double max_ref = 0, max_diff = 0;
      for (size_t o = 0; o + 4 <= x.data.size(); o += 4) {
        float u, v;
        memcpy(&u, x.data.data() + o, 4);
        memcpy(&v, y.data.data() + o, 4);
        max_ref = std::max(max_ref, double(std::fabs(u)));
        max_diff = std::max(max_diff, double(std::fabs(u - v)));
      }
      CHECK(max_diff <= 1e-3 * max_ref + 1e-5);
      compared++;
    }
  }
  CHECK(compared >= 2);
  // --check on the fake GPU (it failed with "bound to caller memory" when the patch sites missed
  // NVIDIA's parameter offset) and the fake's own check mode.
  const cli_result check =
      cli_run({"run", gpu, "--device", "fake-nv", "--check", "--random-inputs", "7"});
  check_success(check);
  CHECK(check.output.find("launches match their host twins") != std::string::npos);
  check_success(cli_run({"run", gpu, "--device", "fake-nv:check", "--random-inputs", "7"}));

  // The interpreter's counts and the H100 estimate, labelled as one.
  const cli_result prof = cli_run({"profile", gpu, "--device", "fake-nv"});
  check_success(prof);
  CHECK(prof.output.find("ESTIMATED H100 time") != std::string::npos);
  CHECK(prof.output.find("(not measured)") != std::string::npos);
  const cli_result pj = cli_run({"profile", gpu, "--device", "fake-nv", "--json"});
  check_success(pj);
  CHECK(pj.output.find("\"measured\": false") != std::string::npos);
  // The convolution's multiply-adds are FMA lanes.
  const size_t conv = pj.output.find("\"name\": \"conv");
  REQUIRE(conv != std::string::npos);
  const size_t conv_end = pj.output.find('}', conv);
  CHECK(json_number(pj.output, "fma_lanes", conv, conv_end) > 0);
  CHECK(json_number(pj.output, "warp_instructions", conv, conv_end) > 0);

  // The miscompile: the first ReLU comparison of the PTX inverted (the cubin is untouched, the
  // PTX is what the fake executes). Same length, so the flatbuffer stays valid.
  std::ifstream in(gpu, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  size_t at = bytes.find("setp.le.f32");
  const bool le = at != std::string::npos;
  if (!le) at = bytes.find("setp.gt.f32");
  REQUIRE(at != std::string::npos);
  bytes.replace(at, 11, le ? "setp.ge.f32" : "setp.lt.f32");
  std::ofstream(bad, std::ios::binary) << bytes;
  const cli_result named =
      cli_run({"run", bad, "--device", "fake-nv:check", "--random-inputs", "7"});
  check_clean_failure(named, {"check: kernel '", "differs from its host twin", "PTX - twin"});
  const cli_result named2 =
      cli_run({"run", bad, "--device", "fake-nv", "--check", "--random-inputs", "7"});
  check_clean_failure(named2, {"check: kernel '", "differs from its host twin", "ONNX nodes"});
}

TEST_CASE("nv: an unknown NVIDIA target is refused naming the known ones") {
  const std::string out = scratch_path("sm75.cap");
  check_clean_failure(cli_run({"compile", model_conv_relu(), "--target", "nv-sm75", "-o", out}),
                      {"nv-sm75", "nv-sm86", "nv-sm90"});
  CHECK(!file_exists(out));
}
