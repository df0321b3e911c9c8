// capgraph-run: the smallest complete user of the runtime. Loads a capture, feeds inputs from
// .npy files, replays it N times, writes every output as a .npy file and prints the timing.
//
//   capgraph-run MODEL.cap [--input NAME=FILE.npy]... [--output-dir DIR] [--threads T] [--runs N]
//                          [--device DEV]   (cpu, or a GPU device this runtime carries: adreno,
//                                            amd, nv, null)
//
// Exit status: 0 on success, 1 on any error (the message names the file, input or option),
// 2 for a usage error.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "capgraph_runtime.h"
#include "npy.h"
#include "run_files.h"

#if CAPGRAPH_RUN_FAKE_ADRENO
#include "fake_kgsl.h"
#endif

namespace {

int usage(const char *why) {
  fprintf(stderr,
          "capgraph-run: %s\n"
          "usage: capgraph-run MODEL.cap [--input NAME=FILE.npy]... [--output-dir DIR] "
          "[--threads T] [--runs N] [--device DEV]\n",
          why);
  return 2;
}

bool int_parse(const char *s, long lo, long hi, int *out) {
  char *end = nullptr;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno || !*s || *end || v < lo || v > hi) return false;
  *out = int(v);
  return true;
}

}  // namespace

int main(int argc, char **argv) {
#if CAPGRAPH_RUN_FAKE_ADRENO
  capgraph::adreno::fake_adreno_register();  // capgraph-run-fake-adreno: --device fake-adreno
#endif
  const char *model_path = nullptr;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string output_dir = ".";
  int threads = 0, runs = 1;
  std::string device = "cpu";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--input" && has_value) {
      const std::string v = argv[++i];
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0)
        return usage(("--input needs NAME=FILE.npy, got '" + v + "'").c_str());
      inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--output-dir" && has_value) {
      output_dir = argv[++i];
    } else if (a == "--threads" && has_value) {
      if (!int_parse(argv[++i], 1, 1024, &threads)) return usage("--threads needs 1 to 1024");
    } else if (a == "--device" && has_value) {
      device = argv[++i];
    } else if (a == "--runs" && has_value) {
      if (!int_parse(argv[++i], 1, 1000000, &runs)) return usage("--runs needs a positive count");
    } else if (a == "-h" || a == "--help") {
      return usage("replays a capture file");
    } else if (a.size() > 1 && a[0] == '-') {
      return usage(("unknown or incomplete option '" + a + "'").c_str());
    } else if (!model_path) {
      model_path = argv[i];
    } else {
      return usage(("unexpected argument '" + a + "'").c_str());
    }
  }
  if (!model_path) return usage("no model given");

  char err[1024] = "";
  capgraph_options opts{threads};
  capgraph_model *m = nullptr;
  const auto load_start = std::chrono::steady_clock::now();
  capgraph_status st = capgraph_load_device(model_path, device.c_str(), &opts, &m, err, sizeof err);
  const double load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - load_start)
          .count();
  if (st != CAPGRAPH_OK) {
    fprintf(stderr, "capgraph-run: %s: %s\n", capgraph_status_name(st), err);
    return 1;
  }
  auto fail = [&](const std::string &msg) {
    fprintf(stderr, "capgraph-run: %s\n", msg.c_str());
    capgraph_free(m);
    return 1;
  };

  std::string why;
  if (!capgraph::inputs_bind(m, model_path, inputs, false, &why)) return fail(why);
  if (!capgraph::output_dir_create(output_dir, &why)) return fail(why);

  std::vector<double> times;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    st = capgraph_run(m);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
    if (st != CAPGRAPH_OK)
      return fail(std::string(capgraph_status_name(st)) + ": " + capgraph_error(m));
  }

  for (int32_t i = 0; i < capgraph_num_outputs(m); ++i) {
    capgraph_tensor t;
    capgraph_output(m, i, &t);
    const std::string path = output_dir + "/" + capgraph::output_file_name(t.name);
    if (!capgraph::npy_write(path, t.dtype, t.shape, t.rank, t.data, t.size_bytes, &why))
      return fail(why);
    printf("output %s -> %s\n", t.name, path.c_str());
  }
  std::sort(times.begin(), times.end());
  printf("load %.3f ms, %d run%s: median %.3f ms, min %.3f ms, max %.3f ms\n", load_ms, runs,
         runs == 1 ? "" : "s", times[times.size() / 2], times.front(), times.back());
  capgraph_free(m);
  return 0;
}
