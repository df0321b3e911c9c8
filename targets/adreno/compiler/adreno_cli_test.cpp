// `capgraph compile --target adreno-a630` and `capgraph inspect` on its capture, through the real
// command line (issue 12's capture side). A generated model is compiled for the a630; the
// capture's AdrenoKernel facts are read from the file itself and must be what `inspect --json`
// and `inspect` show, and must hold together (parameters = 8 bytes per launch buffer, the
// instructions inside their program, the grid covering the launch's work). On the CPU and on
// the null device running the capture must fail naming the target (targets/adreno runs it on
// fake-adreno, its adreno_e2e.sh). Built without Mesa's ir3,
// the compile itself must fail saying so and how to get it. Under the models label
// (targets_adreno_cli_models) every zoo model is compiled for the a630 and inspected the same way.
#include <doctest/doctest.h>
#include <flatbuffers/flatbuffers.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "cli_harness.h"

using namespace capgraph;
using namespace capgraph::cli_test;

namespace {

// The unsigned number after `"key": ` inside `object` (a JSON object's text), or -1.
long long json_number(const std::string &object, const std::string &key) {
  const std::string k = "\"" + key + "\": ";
  const size_t at = object.find(k);
  if (at == std::string::npos) return -1;
  return std::strtoll(object.c_str() + at + k.size(), nullptr, 10);
}

// The text of the adreno_kernels entry whose entry point is `entry` (unique, unlike kernel names,
// which repeat in real models), from there up to its closing brace, or "".
std::string json_kernel(const std::string &json, const std::string &entry) {
  const size_t list = json.find("\"adreno_kernels\": [");
  if (list == std::string::npos) return "";
  const size_t at = json.find("\"entry\": \"" + entry + "\"", list);
  if (at == std::string::npos) return "";
  return json.substr(at, json.find('}', at) - at);
}

}  // namespace

TEST_CASE("adreno: a generated model compiles for adreno-a630 and inspect shows its kernel facts") {
  const std::string cap = scratch_path("conv_relu_adreno.cap");
  const cli_result compiled =
      cli_run({"compile", model_conv_relu(), "-o", cap, "--target", "adreno-a630"}, 120000);
#if !CAPGRAPH_TEST_HAVE_ADRENO
  check_clean_failure(compiled, {"adreno-a630", "without Mesa's ir3", "scripts/mesa_ir3.sh"});
  CHECK_FALSE(file_exists(cap));
  return;
#endif
  check_success(compiled);
  INFO(compiled.output);
  const std::vector<uint8_t> bytes = file_read(cap);
  flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 1u << 24);
  REQUIRE(fb::VerifyCaptureBuffer(v));
  const fb::Capture *c = fb::GetCapture(bytes.data());
  CHECK(c->target()->name()->str() == "adreno-a630");
  CHECK(c->version_major() == 2);
  CHECK(c->version_minor() == 2);  // AdrenoKernel joined the KernelFacts union in 2.2
  REQUIRE(c->kernels());
  REQUIRE(c->kernels()->size() > 0);

  const cli_result json = cli_run({"inspect", "--json", cap});
  check_success(json);
  CHECK(json.output.find("\"version\": \"2.2\"") != std::string::npos);
  const cli_result text = cli_run({"inspect", cap});
  check_success(text);
  CHECK(text.output.find("Adreno kernels:") != std::string::npos);
  // The default precision is float16 storage, calibrated on the generated inputs (compile says
  // what it ran and found) and recorded in the capture, which inspect shows.
  CHECK(compiled.output.find("precision fp16:") != std::string::npos);
  CHECK(compiled.output.find("float16 calibration: ") != std::string::npos);
  CHECK(compiled.output.find(" on 4 generated inputs (worst: ") != std::string::npos);
  CHECK(text.output.find("compiled with precision fp16") != std::string::npos);
  CHECK(text.output.find("float16 storage (math in float32): ") != std::string::npos);

  for (uint32_t i = 0; i < c->kernels()->size(); i++) {
    const fb::Kernel *k = c->kernels()->Get(i);
    INFO("kernel " << k->name()->str());
    const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel();
    REQUIRE(a);
    REQUIRE(k->program() < c->programs()->size());
    const fb::Program *p = c->programs()->Get(k->program());
    CHECK(p->format() == fb::ProgramFormat::adreno_ir3);
    CHECK(a->gpu_id() == 630);
    CHECK(a->chip_id() == 0x06030001ull);
    CHECK(a->instr_dwords() > 0);
    CHECK(uint64_t(a->instr_dwords()) * 4 <= p->binary()->size());
    CHECK(a->full_regs() > 0);
    CHECK(a->params_offset_vec4() * 16 + a->params_bytes() <= a->constlen_vec4() * 16);
    // The host twin runs on the CPU fakes and --check: every GPU kernel has one.
    CHECK(k->twin_program() >= 0);
    CHECK(c->programs()->Get(uint32_t(k->twin_program()))->format() ==
          fb::ProgramFormat::elf_relocatable);

    // inspect --json shows exactly the file's facts.
    const std::string o = json_kernel(json.output, k->entry()->str());
    REQUIRE_MESSAGE(!o.empty(), json.output);
    CHECK(json_number(o, "gpu_id") == a->gpu_id());
    CHECK(json_number(o, "chip_id") == (long long)a->chip_id());
    CHECK(json_number(o, "instr_dwords") == a->instr_dwords());
    CHECK(json_number(o, "instr_count") == a->instr_count());
    CHECK(json_number(o, "full_regs") == a->full_regs());
    CHECK(json_number(o, "half_regs") == a->half_regs());
    CHECK(json_number(o, "constlen_vec4") == a->constlen_vec4());
    CHECK(json_number(o, "params_offset_vec4") == a->params_offset_vec4());
    CHECK(json_number(o, "params_bytes") == a->params_bytes());
    CHECK(json_number(o, "shared_memory_bytes") == a->shared_memory_bytes());
    CHECK(json_number(o, "private_memory_bytes") == a->private_memory_bytes());
    CHECK(json_number(o, "lanes") == a->lanes());
    CHECK(o.find("\"grid\": [" + std::to_string(a->grid_x()) + ", ") != std::string::npos);
    CHECK(o.find("\"workgroup_size\": [" + std::to_string(a->workgroup_size_x()) + ", ") !=
          std::string::npos);
    // The text table has a row for it.
    CHECK(text.output.find(k->name()->str().substr(0, 40)) != std::string::npos);
  }

  // Every launch: one 8-byte parameter per buffer, and the grid covers its work.
  int launches = 0;
  for (const fb::Step *s : *c->steps()) {
    if (s->kind() != fb::StepKind::launch) continue;
    const fb::Launch *l = s->launch();
    const fb::Kernel *k = c->kernels()->Get(l->kernel());
    const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel();
    INFO("launch of " << k->name()->str());
    CHECK(a->params_bytes() == 8 * l->buffers()->size());
    const uint64_t items = uint64_t(a->grid_x()) * a->grid_y() * a->grid_z() *
                           a->workgroup_size_x() * a->workgroup_size_y() * a->workgroup_size_z();
    CHECK(items * a->lanes() >= l->work_size());
    launches++;
  }
  CHECK(launches > 0);

  // Not an Adreno device: a run is refused naming the target, never attempted.
  check_clean_failure(
      cli_run({"run", cap, "--random-inputs", "1", "--output-dir", scratch_path("adreno_out_cpu")}),
      {"adreno-a630"});
  check_clean_failure(cli_run({"run", cap, "--device", "null", "--random-inputs", "1",
                               "--output-dir", scratch_path("adreno_out_null")}),
                      {"adreno-a630"});
}

TEST_CASE("adreno: an Adreno chip capgraph does not know is refused naming the known ones") {
  const std::string dir = scratch_path("adreno_unknown.cap");
  const cli_result r =
      cli_run({"compile", model_conv_relu(), "-o", dir, "--target", "adreno-a999"});
  check_clean_failure(r, {"adreno-a999", "adreno-a630"});
  CHECK_FALSE(file_exists(dir));
}

namespace {

// Every number after `"key": ` in `text`, in order.
std::vector<double> json_numbers(const std::string &text, const std::string &key) {
  std::vector<double> v;
  const std::string k = "\"" + key + "\": ";
  for (size_t at = text.find(k); at != std::string::npos; at = text.find(k, at + 1))
    v.push_back(std::strtod(text.c_str() + at + k.size(), nullptr));
  return v;
}

// The text of the JSON array after `"key": [` up to its matching `]` (no brackets in strings).
std::string json_array(const std::string &text, const std::string &key) {
  const size_t at = text.find("\"" + key + "\": [");
  if (at == std::string::npos) return "";
  int depth = 0;
  for (size_t i = text.find('[', at); i < text.size(); i++) {
    if (text[i] == '[') depth++;
    if (text[i] == ']' && --depth == 0) return text.substr(at, i + 1 - at);
  }
  return "";
}

}  // namespace

// Issue 26: `capgraph profile --device fake-adreno` on a small model whose one kernel's counts
// are known (y = Relu(x * 2 + bias), x 2x3 float32: one workgroup, one wave, 6 x 4 bytes stored),
// the same as --json with an estimate per kernel and per dispatch that add up to the total, each
// labelled an estimate, and `capgraph view --device fake-adreno` drawing them.
TEST_CASE(
    "adreno: profile and view --device fake-adreno count a known kernel and estimate a630 time") {
#if !CAPGRAPH_TEST_HAVE_ADRENO
  MESSAGE("SKIPPED: capgraph was built without Mesa's ir3");
  return;
#endif
  const std::string cap = scratch_path("mul_add_adreno.cap");
  check_success(
      cli_run({"compile", model_mul_add(), "-o", cap, "--target", "adreno-a630"}, 120000));
  const std::vector<uint8_t> bytes = file_read(cap);
  const fb::Capture *c = fb::GetCapture(bytes.data());
  uint32_t launches = 0, copies = 0;
  for (const fb::Step *s : *c->steps()) (s->kind() == fb::StepKind::launch ? launches : copies)++;
  REQUIRE(launches == 1);

  const cli_result text = cli_run({"profile", cap, "--device", "fake-adreno"}, 120000);
  check_success(text);
  INFO(text.output);
  CHECK(text.output.find("ESTIMATED a630 time") != std::string::npos);
  CHECK(text.output.find("not a measurement") != std::string::npos);
  CHECK(text.output.find(c->kernels()->Get(0)->name()->str().substr(0, 30)) != std::string::npos);

  const cli_result json = cli_run({"profile", cap, "--device", "fake-adreno", "--json"}, 120000);
  check_success(json);
  INFO(json.output);
  const std::string &j = json.output;
  CHECK(j.find("\"device\": \"fake-adreno\"") != std::string::npos);
  CHECK(j.find("\"measured\": false") != std::string::npos);
  CHECK(j.find("\"estimate\": \"ESTIMATE, not a measurement") != std::string::npos);
  CHECK(j.find("\"hardware\": \"Adreno 630 at 675 MHz\"") != std::string::npos);
  const std::string kernels = json_array(j, "kernels"), dispatches = json_array(j, "dispatches");
  REQUIRE(!kernels.empty());
  REQUIRE(!dispatches.empty());
  // The known kernel: one wave of one workgroup, the 6 outputs stored once, instructions of each
  // class counted, no shared memory, textures or barriers.
  CHECK(json_numbers(kernels, "waves") == std::vector<double>{1});
  CHECK(json_numbers(kernels, "workgroups") == std::vector<double>{1});
  CHECK(json_numbers(kernels, "dispatches") == std::vector<double>{1});
  CHECK(json_numbers(kernels, "global_store_bytes") == std::vector<double>{24});
  CHECK(json_numbers(kernels, "global_load_bytes")[0] >= 24 + 12);  // x, and bias at least once
  CHECK(json_numbers(kernels, "alu")[0] > 0);
  CHECK(json_numbers(kernels, "memory")[0] >= 2);    // a load and a store at least
  CHECK(json_numbers(kernels, "flow")[0] >= 1);      // end
  CHECK(json_numbers(kernels, "sy_waits")[0] >= 1);  // the loaded values are waited for
  CHECK(json_numbers(kernels, "shared_load_bytes") == std::vector<double>{0});
  CHECK(json_numbers(kernels, "texels") == std::vector<double>{0});
  CHECK(json_numbers(kernels, "barriers") == std::vector<double>{0});
  CHECK(json_numbers(kernels, "issue_slots")[0] >= json_numbers(kernels, "instructions")[0]);
  // Estimates: per kernel, per dispatch (and copy), and the total, consistent; a tiny kernel costs
  // about the launch (5 us), far below a millisecond.
  const std::vector<double> kernel_us = json_numbers(kernels, "estimated_us"),
                            dispatch_us = json_numbers(dispatches, "estimated_us"),
                            total = json_numbers(j, "estimated_total_us");
  REQUIRE(kernel_us.size() == 1);
  REQUIRE(total.size() == 1);
  CHECK(dispatch_us.size() == launches + copies);
  double sum = 0;
  for (double us : dispatch_us) sum += us;
  CHECK(sum == doctest::Approx(total[0]).epsilon(1e-4));
  CHECK(kernel_us[0] <= total[0] + 1e-3);
  CHECK(kernel_us[0] >= 5);
  CHECK(kernel_us[0] < 100);
  // Its roofline: no FLOPs or texels, so the DRAM limit: 60-odd bytes at 26 GB/s, a few ns,
  // under the estimate; the text shows the share.
  const std::vector<double> roof = json_numbers(kernels, "roofline_us");
  REQUIRE(roof.size() == 1);
  CHECK(roof[0] > 0);
  CHECK(roof[0] < 0.01);
  CHECK(j.find("\"roofline_limit\": \"dram\"") != std::string::npos);
  CHECK(text.output.find("%roof") != std::string::npos);

  // The twins run no machine code: nothing to count.
  check_clean_failure(cli_run({"profile", cap, "--device", "fake-adreno:twin"}, 60000),
                      {"fake-adreno:twin", "nothing to count"});

  const std::string html = scratch_path("mul_add_adreno.html");
  const cli_result view = cli_run({"view", cap, "--device", "fake-adreno", "-o", html}, 120000);
  check_success(view);
  const std::vector<uint8_t> page_bytes = file_read(html);
  const std::string page(page_bytes.begin(), page_bytes.end());
  CHECK(page.find("\"device\": {\"device\": \"fake-adreno\"") != std::string::npos);
  CHECK(page.find("ESTIMATED Adreno 630 at 675 MHz time") != std::string::npos);
  CHECK(page.find("\"kind\": \"estimated\"") != std::string::npos);
  CHECK(page.find("\"step_kernel\": [") != std::string::npos);
  CHECK(page.find("\"global_store_bytes\": 24") != std::string::npos);
  check_clean_failure(
      cli_run({"view", cap, "--device", "fake-adreno", "--profile", "-o", html}, 60000),
      {"choose one"});
}

namespace {
// `--input-shape NAME=DxDx...` arguments for a zoo model's meta.json
// ("inputs": [{"name": ..., "dims": [...]}, ...]).
std::vector<std::string> zoo_shape_args(const std::string &meta) {
  const std::vector<uint8_t> bytes = file_read(meta);
  const std::string j(bytes.begin(), bytes.end());
  std::vector<std::string> args;
  size_t at = j.find("\"inputs\""), end = j.find("\"outputs\"");
  while ((at = j.find("\"name\"", at)) != std::string::npos && at < end) {
    const size_t q0 = j.find('"', j.find(':', at)) + 1, q1 = j.find('"', q0);
    const size_t d0 = j.find('[', j.find("\"dims\"", q1)) + 1, d1 = j.find(']', d0);
    std::string dims = j.substr(d0, d1 - d0), shape;
    for (char ch : dims)
      if (ch == ',')
        shape += 'x';
      else if ((ch >= '0' && ch <= '9') || ch == '-')
        shape += ch;  // not the JSON's whitespace
    args.push_back("--input-shape");
    args.push_back(j.substr(q0, q1 - q0) + "=" + shape);
    at = d1;
  }
  return args;
}
}  // namespace

// Issue 12's acceptance through the command line: every zoo model compiles to an Adreno capture
// whose every kernel inspect --json shows with its facts. ctest runs it as
// targets_adreno_cli_models.
TEST_CASE(
    "models: every zoo model compiles for adreno-a630 and inspect shows every kernel's facts") {
  if (!std::getenv("CAPGRAPH_ADRENO_MODELS")) {
    MESSAGE("not run here: ctest runs it as targets_adreno_cli_models (CAPGRAPH_ADRENO_MODELS=1)");
    return;
  }
#if !CAPGRAPH_TEST_HAVE_ADRENO
  MESSAGE(
      "SKIPPED: capgraph was built without Mesa's ir3 (run scripts/mesa_ir3.sh, then configure)");
  return;
#endif
  const std::string zoo = std::string(CAPGRAPH_REPO_DIR) + "/../shared/zoo";
  if (!file_exists(zoo)) {
    MESSAGE("SKIPPED: no model zoo at " << zoo << " (it is optional)");
    return;
  }
  int models = 0;
  for (const std::string &name : dir_list(zoo)) {
    const std::string dir = zoo + "/" + name;
    if (!file_exists(dir + "/model.onnx") || !file_exists(dir + "/meta.json")) continue;
    INFO(name);
    const std::string cap = scratch_path(name + ".adreno.cap");
    std::vector<std::string> args = {"compile", dir + "/model.onnx", "-o",
                                     cap,       "--target",          "adreno-a630"};
    for (const std::string &a : zoo_shape_args(dir + "/meta.json")) args.push_back(a);
    const cli_result compiled = cli_run(args, 600000);
    check_success(compiled);
    if (compiled.exit_code != 0) continue;
    const std::vector<uint8_t> bytes = file_read(cap);
    flatbuffers::Verifier v(bytes.data(), bytes.size(), 64, 1u << 24);
    REQUIRE(fb::VerifyCaptureBuffer(v));
    const fb::Capture *c = fb::GetCapture(bytes.data());
    const cli_result json = cli_run({"inspect", "--json", cap}, 120000);
    check_success(json);
    for (const fb::Kernel *k : *c->kernels()) {
      const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel();
      REQUIRE(a);
      const std::string o = json_kernel(json.output, k->entry()->str());
      CHECK_MESSAGE(!o.empty(), "inspect --json lacks kernel " << k->name()->str());
      CHECK(json_number(o, "instr_dwords") == a->instr_dwords());
      CHECK(json_number(o, "full_regs") == a->full_regs());
      CHECK(json_number(o, "constlen_vec4") == a->constlen_vec4());
    }
    MESSAGE(name << ": " << c->kernels()->size() << " Adreno kernels, " << bytes.size()
                 << " bytes");
    models++;
  }
  CHECK(models >= 1);
}
