// capgraph: the command line. compile (ONNX -> capture), run, bench, inspect, profile, view,
// devices. See ../shared/DESIGN.md "Command line" for the contract; every failure prints one
// message that names the file, input, node or device, and exits non-zero.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "capgraph_runtime.h"
#include "cli/commands.h"
#include "compile.h"
#include "error.h"
#include "hcq/target.h"
#include "npy.h"
#include "run_files.h"
#include "target/target_table.h"
#ifdef CAPGRAPH_HAVE_FLASH
#include "flash.h"
#endif

namespace capgraph {

// targets/CMakeLists.txt generates it: registers the fakes (and library-backed devices such as
// `usb`) of the device families this build carries.
void target_devices_register();

// Writes bytes to path through a temporary file and a rename, so a failure never leaves a
// half-written file behind.
void file_write_atomic(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::string tmp = path + ".tmp" + std::to_string(getpid());
  FILE *f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error(path + ": cannot write: " + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(path + ": cannot write: " + std::strerror(errno));
  }
}

int int_arg(const std::string &flag, const std::string &v, int lo, int hi) {
  char *end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n < lo || n > hi)
    throw Error(flag + " must be a number from " + std::to_string(lo) + " to " +
                std::to_string(hi) + ", got '" + v + "'");
  return (int)n;
}

std::string arg_value(int &i, int argc, char **argv) {
  if (i + 1 >= argc) throw Error(std::string(argv[i]) + " needs a value");
  return argv[++i];
}

namespace {

// "a|b|c" of the --target values the compiler's table knows ("cpu (this machine), cpu-x86_64"
// gives "cpu|cpu-x86_64").
std::string target_choices() {
  std::string out;
  for (const TargetEntry *t : target_entries()) {
    const std::string names = t->names();
    for (size_t at = 0; at < names.size();) {
      size_t end = names.find(", ", at);
      if (end == std::string::npos) end = names.size();
      std::string name = names.substr(at, end - at);
      name = name.substr(0, name.find(' '));
      out += (out.empty() ? "" : "|") + name;
      at = end + 2;
    }
  }
  return out;
}

// "cpu|amd|fake-amd|..." of the --device names this build registers.
std::string device_choices() {
  std::string out = "cpu";
  for (const std::string &d : hcq::device_names()) out += "|" + d;
  return out;
}

int usage() {
  const std::string targets = target_choices(), devices = device_choices();
  std::fprintf(
      stderr,
      "usage:\n"
      "  capgraph compile MODEL.onnx -o MODEL.cap [--target %s]\n"
      "                   [--input-shape NAME=1x3x640x640]... [--threads T] [--fold-limit-mb MB]\n"
      "                   [--bind NAME=FILE.npy]... [--precision fp16|fp32]\n"
      "                   [--calibrate NAME=FILE.npy]...\n"
      "  capgraph run MODEL.cap [--input NAME=FILE.npy]... [--output-dir DIR] [--random-inputs "
      "SEED] [--threads T]\n"
      "               [--device DEVICE] [--check]\n"
      "      --device: %s\n"
      "               (after a colon: a unit number or the device's options; `capgraph devices` "
      "says which)\n"
      "      --check: on a GPU device, replay kernel by kernel against the host twins the capture\n"
      "               carries and name the first kernel whose result differs\n"
      "  capgraph bench MODEL.cap [--runs N] [--threads T] [--device DEVICE]\n"
      "  capgraph inspect MODEL.cap [--json]\n"
      "  capgraph profile MODEL.cap [--runs N] [--threads T] [--trace FILE.json] [--best-of K] "
      "[--peak GFLOPS --bandwidth GBPS] [--json] | MODEL.cap --device DEVICE\n"
      "  capgraph view MODEL.cap -o VIEW.html [--profile] [--runs N] [--threads T]\n"
      "  capgraph devices\n"
      "  capgraph flash IMAGE [--dry-run] [--device SEL] [--backup FILE] [--config-restore "
      "FILE]\n",
      targets.c_str(), devices.c_str());
  return 2;
}

std::string human_bytes(double b) {
  char buf[64];
  if (b >= 1 << 20)
    std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1 << 20));
  else if (b >= 1 << 10)
    std::snprintf(buf, sizeof buf, "%.1f KiB", b / (1 << 10));
  else
    std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

int cmd_compile(int argc, char **argv) {
  std::string in, out;
  CompileOptions opt;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-o" || a == "--output")
      out = arg_value(i, argc, argv);
    else if (a == "--target")
      opt.target = arg_value(i, argc, argv);
    else if (a == "--threads")
      opt.threads = int_arg(a, arg_value(i, argc, argv), 1, 256);
    else if (a == "--precision")
      opt.precision = arg_value(i, argc, argv);
    else if (a == "--fold-limit-mb")
      opt.fold_limit_bytes = (int64_t)int_arg(a, arg_value(i, argc, argv), 1, 1 << 20) << 20;
    else if (a == "--input-shape") {
      std::string v = arg_value(i, argc, argv);
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw Error("--input-shape expects NAME=DxDx..., got '" + v + "'");
      opt.input_shapes[v.substr(0, eq)] = shape_parse(v.substr(eq + 1));
    } else if (a == "--bind" || a == "--calibrate") {
      // --bind: a graph input made a compile-time constant (shapes, scales, axes given as
      // inputs); --calibrate: the model's own input for float16's per-tensor fallback.
      std::string v = arg_value(i, argc, argv);
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
        throw Error(a + " expects NAME=FILE.npy, got '" + v + "'");
      std::string name = v.substr(0, eq);
      auto &to = a == "--bind" ? opt.bound_inputs : opt.calibration_inputs;
      if (to.count(name)) throw Error(a + " names '" + name + "' twice");
      npy_array arr;
      std::string err;
      if (!npy_read(v.substr(eq + 1), &arr, &err)) throw Error(a + " " + name + ": " + err);
      // capgraph_dtype and DType share their numbering (both are the capture schema's DType).
      static_assert((int)CAPGRAPH_BOOL == (int)DType::boolean &&
                    (int)CAPGRAPH_F16 == (int)DType::f16);
      to.emplace(name, Tensor::from_bytes((DType)arr.dtype, arr.shape, std::move(arr.data)));
    } else if (!a.empty() && a[0] == '-')
      throw Error("compile: unknown option " + a);
    else if (in.empty())
      in = a;
    else
      throw Error("compile: unexpected argument " + a);
  }
  if (in.empty() || out.empty()) return usage();
  auto t0 = std::chrono::steady_clock::now();
  CompileReport r;
  std::vector<uint8_t> bytes = compile_model(in, opt, &r);
  file_write_atomic(out, bytes);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("compiled %s -> %s in %.0f ms\n", in.c_str(), out.c_str(), ms);
  std::printf("  %d ONNX nodes -> %d kernels (%d distinct, %d fused away, %d BatchNorms folded)\n",
              r.onnx_nodes, r.kernels, r.unique_kernels, r.fused, r.folded_batchnorms);
  std::printf("  arena %s (without reuse %s), weights %s, capture %s\n",
              human_bytes(r.arena_bytes).c_str(), human_bytes(r.arena_naive_bytes).c_str(),
              human_bytes(r.weight_bytes).c_str(), human_bytes(r.capture_bytes).c_str());
  std::printf(
      "  time: read %.0f ms, graph %.0f ms, schedule %.0f ms, codegen %.0f ms, write %.0f ms\n",
      r.ms_read, r.ms_graph, r.ms_schedule, r.ms_codegen, r.ms_write);
  if (r.precision == "fp16") {
    std::printf("  precision fp16: %d weights and activations stored as float16, math in float32\n",
                r.half_buffers);
    const std::string on = r.calibration_worst_input == "own"
                               ? "the calibration input"
                               : std::to_string(r.calibration_inputs) +
                                     " generated inputs (worst: " + r.calibration_worst_input + ")";
    if (r.calibration_runs == 0)
      std::printf("  float16 calibration: none (CAPGRAPH_HALF_RULES_ONLY: the rules alone)\n");
    else
      std::printf(
          "  float16 calibration: %d host runs on %s in %.0f ms; worst output %.3g x its largest "
          "value from float32 with every candidate float16, %.3g as compiled\n",
          r.calibration_runs, on.c_str(), r.ms_calibrate, r.calibration_error_all_half,
          r.calibration_error);
    for (const std::string &k : r.kept_fp32) std::printf("  kept float32: %s\n", k.c_str());
  }
  return 0;
}

// A loaded model that frees itself.
struct Model {
  capgraph_model *m = nullptr;
  Model(const std::string &path, int threads, const std::string &device = "cpu") {
    capgraph_options o{threads};
    char err[1024] = {0};
    if (capgraph_load_device(path.c_str(), device.c_str(), &o, &m, err, sizeof err) != CAPGRAPH_OK)
      throw Error(err);
  }
  ~Model() { capgraph_free(m); }
  capgraph_tensor input(int i) {
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    return t;
  }
  capgraph_tensor output(int i) {
    capgraph_tensor t;
    capgraph_output(m, i, &t);
    return t;
  }
  void run() {
    capgraph_status s = capgraph_run(m);
    if (s != CAPGRAPH_OK) throw Error(std::string("replay failed: ") + capgraph_error(m));
  }
  // A replay kernel by kernel against the host twins; the summary line.
  std::string run_check() {
    char report[256] = {0};
    capgraph_status s = capgraph_run_check(m, report, sizeof report);
    if (s != CAPGRAPH_OK) throw Error(capgraph_error(m));
    return report;
  }
};

std::string shape_text(const capgraph_tensor &t) { return capgraph::shape_text(t.shape, t.rank); }

void inputs_random(Model &m, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  for (int i = 0; i < capgraph_num_inputs(m.m); i++) {
    capgraph_tensor t = m.input(i);
    size_t n = t.size_bytes / npy_dtype_size(t.dtype);
    for (size_t j = 0; j < n; j++) {
      switch (t.dtype) {
        case CAPGRAPH_F32: ((float *)t.data)[j] = u(rng); break;
        case CAPGRAPH_U8: ((uint8_t *)t.data)[j] = rng() & 255; break;
        case CAPGRAPH_I64: ((int64_t *)t.data)[j] = 0; break;
        default:
          std::memset((uint8_t *)t.data + j * npy_dtype_size(t.dtype), 0, npy_dtype_size(t.dtype));
      }
    }
  }
}

int cmd_run(int argc, char **argv) {
  std::string path, outdir;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string device = "cpu";
  int threads = 0;
  long seed = -1;
  bool check = false;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--check")
      check = true;
    else if (a == "--input") {
      std::string v = arg_value(i, argc, argv);
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("--input expects NAME=FILE.npy, got '" + v + "'");
      inputs.push_back({v.substr(0, eq), v.substr(eq + 1)});
    } else if (a == "--output-dir")
      outdir = arg_value(i, argc, argv);
    else if (a == "--threads")
      threads = int_arg(a, arg_value(i, argc, argv), 1, 256);
    else if (a == "--random-inputs")
      seed = int_arg(a, arg_value(i, argc, argv), 0, 1 << 30);
    else if (a == "--device")
      device = arg_value(i, argc, argv);
    else if (!a.empty() && a[0] == '-')
      throw Error("run: unknown option " + a);
    else if (path.empty())
      path = a;
    else
      throw Error("run: unexpected argument " + a);
  }
  if (path.empty()) return usage();
  auto t0 = std::chrono::steady_clock::now();
  Model m(path, threads, device);
  double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  // Random values first, so that files given beside --random-inputs replace them.
  if (seed >= 0) inputs_random(m, (unsigned)seed);
  std::string err;
  if (!inputs_bind(m.m, path, inputs, seed >= 0, &err)) throw Error(err);
  if (!outdir.empty() && !output_dir_create(outdir, &err)) throw Error(err);
  t0 = std::chrono::steady_clock::now();
  std::string checked;
  if (check)
    checked = m.run_check();
  else
    m.run();
  double run_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: loaded in %.1f ms, replayed in %.2f ms%s\n", path.c_str(), load_ms, run_ms,
              check ? " (kernel by kernel, --check)" : "");
  if (check) std::printf("check: %s\n", checked.c_str());
  for (int i = 0; i < capgraph_num_outputs(m.m); i++) {
    capgraph_tensor t = m.output(i);
    std::string line =
        std::string("  output '") + t.name + "' " + npy_descr(t.dtype) + " " + shape_text(t);
    if (t.dtype == CAPGRAPH_F32) {
      const float *f = (const float *)t.data;
      size_t n = t.size_bytes / 4;
      double lo = INFINITY, hi = -INFINITY, sum = 0;
      for (size_t j = 0; j < n; j++) {
        lo = std::min<double>(lo, f[j]);
        hi = std::max<double>(hi, f[j]);
        sum += f[j];
      }
      char buf[160];
      std::snprintf(buf, sizeof buf, ": min %.4g max %.4g mean %.4g", lo, hi, n ? sum / n : 0.0);
      line += buf;
    }
    if (!outdir.empty()) {
      std::string file = outdir + "/" + output_file_name(t.name);
      std::vector<uint8_t> bytes = npy_format(t.dtype, t.shape, t.rank, t.data, t.size_bytes);
      file_write_atomic(file, bytes);
      line += " -> " + file;
    }
    std::printf("%s\n", line.c_str());
  }
  return 0;
}

int cmd_bench(int argc, char **argv) {
  std::string path, device = "cpu";
  int runs = 20, threads = 0;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--device")
      device = arg_value(i, argc, argv);
    else if (a == "--runs")
      runs = int_arg(a, arg_value(i, argc, argv), 1, 1000000);
    else if (a == "--threads")
      threads = int_arg(a, arg_value(i, argc, argv), 1, 256);
    else if (!a.empty() && a[0] == '-')
      throw Error("bench: unknown option " + a);
    else if (path.empty())
      path = a;
    else
      throw Error("bench: unexpected argument " + a);
  }
  if (path.empty()) return usage();
  Model m(path, threads, device);
  inputs_random(m, 1);
  for (int i = 0; i < 3; i++) m.run();
  std::vector<double> ts;
  for (int i = 0; i < runs; i++) {
    auto t0 = std::chrono::steady_clock::now();
    m.run();
    ts.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  std::printf(
      "{\"model\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"p90_ms\": %.4f, \"runs\": %d, "
      "\"threads\": %d}\n",
      path.c_str(), ts[ts.size() / 2], ts[0], ts[std::min(ts.size() - 1, ts.size() * 9 / 10)], runs,
      threads ? threads : 1);
  return 0;
}

int cmd_devices() {
  unsigned cores = std::thread::hardware_concurrency();
  std::printf("cpu: %s, %u cores (the default device)\n", cpu_host_description().c_str(), cores);
  // One line per device of each target this build carries ("amd:0: gfx1100 (RDNA3), ..."), or
  // why there is none.
  std::printf("%s", hcq::devices_describe().c_str());
#ifdef CAPGRAPH_HAVE_FLASH
  std::fflush(stdout);
  bridge::devices_print_bridges(stdout);
#else
  std::printf("usb bridges: not built (libusb-1.0 was missing at build time)\n");
#endif
  return 0;
}

}  // namespace

int cli_main(int argc, char **argv) {
  target_devices_register();  // the families' extra devices: fakes, library-backed ones
  if (argc < 2) return usage();
  std::string cmd = argv[1];
  try {
    if (cmd == "compile") return cmd_compile(argc, argv);
    if (cmd == "run") return cmd_run(argc, argv);
    if (cmd == "bench") return cmd_bench(argc, argv);
    if (cmd == "inspect") return cmd_inspect(argc, argv);
    if (cmd == "profile") return cmd_profile(argc, argv);
    if (cmd == "view") return cmd_view(argc, argv);
    if (cmd == "devices") return cmd_devices();
    if (cmd == "flash") {
#ifdef CAPGRAPH_HAVE_FLASH
      return bridge::flash_main(argc - 1, argv + 1);
#else
      throw Error("this build has no flasher (libusb-1.0 was missing at build time)");
#endif
    }
    if (cmd == "-h" || cmd == "--help" || cmd == "help") {
      usage();
      return 0;
    }
    std::fprintf(stderr, "capgraph: unknown command '%s'\n", cmd.c_str());
    return usage();
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "capgraph %s: out of memory\n", cmd.c_str());
    return 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "capgraph %s: error: %s\n", cmd.c_str(), e.what());
    return 1;
  }
}

}  // namespace capgraph

int main(int argc, char **argv) { return capgraph::cli_main(argc, argv); }
