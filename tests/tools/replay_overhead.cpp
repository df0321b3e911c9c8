// replay_overhead MODEL.cap [--threads T] [--runs N] [--rounds R] [--input NAME=FILE.npy]...
//                 [--output-dir DIR]
// How much a replay costs beyond its kernels' own time (issue 3: "a capture of 200 tiny kernels
// replays in under 20 µs beyond its kernels' time"). Prints one JSON line.
//
// Method, per round (R rounds, default 5; the figures printed are medians over rounds):
//   replay:  N (default 1000) capgraph_run calls after 10 warm-up ones, each timed alone; the
//            median.
//   kernels: the same kernels called directly, with no runtime in between: for each step of the
//            command list (runtime/replay.h), each thread's slice [bounds[t], bounds[t+1]) is
//            called N times in a tight loop on this thread, in 5 batches; a slice's time is the
//            median batch's time per call, a step's time the slowest of its slices (with T threads
//            they run side by side), a copy's time its memcpy's. Their sum is the kernels' time.
//   overhead = replay - kernels.
// The tight loop is the kernels' best case (warm caches and branch predictors, no clock read per
// call), so the overhead figure errs on the high side, never hides runtime cost. Steps' inputs are
// whatever the arena holds; kernels' times do not depend on the values.
//
// --output-dir writes the outputs of one replay on fresh inputs (the loop above overwrites the
// arena), named as `capgraph run` names them, so a test can check that the replay is right.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capture_model.h"
#include "model_inputs.h"
#include "npy.h"

using namespace capgraph;

namespace {

using clock_type = std::chrono::steady_clock;

double ns_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::nano>(clock_type::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int int_arg(const char *flag, const char *s, int lo, int hi) {
  char *end = nullptr;
  const long v = s ? std::strtol(s, &end, 10) : 0;
  if (!s || !*s || *end || v < lo || v > hi) {
    std::fprintf(stderr, "replay_overhead: %s must be %d to %d, not '%s'\n", flag, lo, hi,
                 s ? s : "");
    std::exit(2);
  }
  return int(v);
}

double replay_median_ns(capgraph_model *m, int runs) {
  for (int i = 0; i < 10; ++i) capgraph_run(m);
  std::vector<double> ts(static_cast<size_t>(runs));
  for (double &t : ts) {
    const auto t0 = clock_type::now();
    capgraph_run(m);
    t = ns_since(t0);
  }
  return median(ts);
}

// One slice (or copy) called `calls` times in 5 batches: the median batch's time per call.
template <class Call>
double call_ns(int calls, Call call) {
  const int per_batch = std::max(1, calls / 5);
  std::vector<double> batches(5);
  call();  // warm
  for (double &b : batches) {
    const auto t0 = clock_type::now();
    for (int i = 0; i < per_batch; ++i) call();
    b = ns_since(t0) / per_batch;
  }
  return median(batches);
}

double kernels_ns(const replay_plan &plan, int calls) {
  double sum = 0;
  for (const replay_step &s : plan.steps) {
    double step = 0;
    if (s.entry) {
      for (int t = 0; t < plan.threads; ++t) {
        const int64_t begin = s.bounds[t], end = s.bounds[t + 1];
        if (begin < end)
          step = std::max(step, call_ns(calls, [&] {
                            kernel_call(s.entry, s.buffers, s.scalars, begin, end);
                          }));
      }
    } else if (s.size) {
      step = call_ns(calls, [&] { std::memcpy(s.dst, s.src, s.size); });
    }
    sum += step;
  }
  return sum;
}

bool outputs_write(capgraph_model *m, const std::string &dir) {
  for (int32_t i = 0; i < capgraph_num_outputs(m); ++i) {
    capgraph_tensor t;
    capgraph_output(m, i, &t);
    std::string file = t.name;
    for (char &c : file)
      if (!(std::isalnum((unsigned char)c) || c == '.' || c == '_' || c == '-')) c = '_';
    std::string err;
    if (!npy_write(dir + "/" + file + ".npy", t.dtype, t.shape, t.rank, t.data, t.size_bytes,
                   &err)) {
      std::fprintf(stderr, "replay_overhead: %s\n", err.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  std::string path, output_dir;
  int threads = 1, runs = 1000, rounds = 5;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--threads")
      threads = int_arg("--threads", value, 1, 256), ++i;
    else if (a == "--runs")
      runs = int_arg("--runs", value, 5, 10000000), ++i;
    else if (a == "--rounds")
      rounds = int_arg("--rounds", value, 1, 1000), ++i;
    else if (a == "--input" && value)
      inputs.push_back(value), ++i;
    else if (a == "--output-dir" && value)
      output_dir = value, ++i;
    else if (path.empty() && !a.empty() && a[0] != '-')
      path = a;
    else {
      std::fprintf(stderr,
                   "usage: replay_overhead MODEL.cap [--threads T] [--runs N] [--rounds R] "
                   "[--input NAME=FILE.npy]... [--output-dir DIR]\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "replay_overhead: no capture given\n");
    return 2;
  }
  capgraph_options opts{threads};
  capgraph_model *m = nullptr;
  char err[1024];
  if (capgraph_load(path.c_str(), &opts, &m, err, sizeof err) != CAPGRAPH_OK) {
    std::fprintf(stderr, "replay_overhead: %s\n", err);
    return 1;
  }
  std::string why;
  if (!model_inputs_fill(m, inputs, &why)) {
    std::fprintf(stderr, "replay_overhead: %s: %s\n", path.c_str(), why.c_str());
    capgraph_free(m);
    return 1;
  }
  // The inputs as written: the baseline loop below may overwrite them (the arena is reused).
  std::vector<std::vector<uint8_t>> input_bytes;
  for (int32_t i = 0; i < capgraph_num_inputs(m); ++i) {
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    const uint8_t *p = static_cast<const uint8_t *>(t.data);
    input_bytes.emplace_back(p, p + t.size_bytes);
  }

  const replay_plan &plan = m->plan;
  size_t launches = 0;
  for (const replay_step &s : plan.steps) launches += s.entry != nullptr;
  const size_t n_rounds = static_cast<size_t>(rounds);
  std::vector<double> replay(n_rounds), kernels(n_rounds), overhead(n_rounds);
  for (int r = 0; r < rounds; ++r) {
    replay[size_t(r)] = replay_median_ns(m, runs);
    kernels[size_t(r)] = kernels_ns(plan, runs);
    overhead[size_t(r)] = replay[size_t(r)] - kernels[size_t(r)];
  }

  int rc = 0;
  if (!output_dir.empty()) {
    for (int32_t i = 0; i < capgraph_num_inputs(m); ++i) {
      capgraph_tensor t;
      capgraph_input(m, i, &t);
      std::memcpy(t.data, input_bytes[size_t(i)].data(), t.size_bytes);
    }
    if (capgraph_run(m) != CAPGRAPH_OK || !outputs_write(m, output_dir)) rc = 1;
  }
  const double ov = median(overhead);
  std::printf(
      "{\"model\": \"%s\", \"threads\": %d, \"steps\": %zu, \"launches\": %zu, \"runs\": %d, "
      "\"rounds\": %d, \"replay_us\": %.3f, \"kernels_us\": %.3f, \"overhead_us\": %.3f, "
      "\"overhead_per_step_ns\": %.1f}\n",
      path.c_str(), threads, plan.steps.size(), launches, runs, rounds, median(replay) / 1e3,
      median(kernels) / 1e3, ov / 1e3, plan.steps.empty() ? 0.0 : ov / double(plan.steps.size()));
  capgraph_free(m);
  return rc;
}
