// capgraph-run: the smallest complete user of the runtime. Loads a capture, feeds inputs from
// .npy files, replays it N times, writes every output as a .npy file and prints the timing.
//
//   capgraph-run MODEL.cap [--input NAME=FILE.npy]... [--output-dir DIR] [--threads T] [--runs N]
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

namespace {

int usage(const char *why) {
  fprintf(stderr,
          "capgraph-run: %s\n"
          "usage: capgraph-run MODEL.cap [--input NAME=FILE.npy]... [--output-dir DIR] "
          "[--threads T] [--runs N]\n",
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

// The output's file name: every character outside [A-Za-z0-9._-] becomes '_'.
std::string file_name_for(const char *tensor) {
  std::string s = tensor;
  for (char &c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
          c == '_' || c == '-'))
      c = '_';
  return s;
}

std::string shape_text(const int64_t *shape, size_t rank) {
  std::string s = "[";
  for (size_t i = 0; i < rank; ++i) s.append(i ? "," : "").append(std::to_string(shape[i]));
  return s + "]";
}

}  // namespace

int main(int argc, char **argv) {
  const char *model_path = nullptr;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::string output_dir = ".";
  int threads = 0, runs = 1;
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
  capgraph_status st = capgraph_load(model_path, &opts, &m, err, sizeof err);
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

  std::vector<bool> given(size_t(capgraph_num_inputs(m)), false);
  for (const auto &[name, path] : inputs) {
    const int32_t index = capgraph_input_index(m, name.c_str());
    if (index < 0) return fail(std::string(model_path) + ": the model has no input '" + name + "'");
    capgraph_tensor t;
    capgraph_input(m, index, &t);
    capgraph::npy_array a;
    std::string why;
    if (!capgraph::npy_read(path, &a, &why)) return fail(why);
    if (a.dtype != t.dtype || a.shape.size() != size_t(t.rank) ||
        !std::equal(a.shape.begin(), a.shape.end(), t.shape))
      return fail(path + ": input '" + name + "' must be " + capgraph::npy_descr(t.dtype) + " " +
                  shape_text(t.shape, size_t(t.rank)) + " but the file holds " +
                  capgraph::npy_descr(a.dtype) + " " + shape_text(a.shape.data(), a.shape.size()));
    memcpy(t.data, a.data.data(), t.size_bytes);
    given[size_t(index)] = true;
  }
  for (size_t i = 0; i < given.size(); ++i) {
    capgraph_tensor t;
    capgraph_input(m, int32_t(i), &t);
    if (!given[i])
      return fail(std::string(model_path) + ": input '" + t.name + "' not given (--input " +
                  t.name + "=FILE.npy)");
  }

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
    const std::string path = output_dir + "/" + file_name_for(t.name) + ".npy";
    std::string why;
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
