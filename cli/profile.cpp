// capgraph profile MODEL.cap [--runs N] [--threads T] [--trace FILE.json] [--best-of K]
//                  [--peak GFLOPS --bandwidth GBPS] [--json]
// Per-kernel times from timed replays (the median of N runs per step; with --best-of K the least
// of K such medians, each from its own load of the capture), printed as a table with
// each step's share, GFLOP/s, bytes moved and GB/s (cli/step_bounds.h says how bytes are
// counted), and optionally written as a Chrome trace (opens in Perfetto or chrome://tracing).
// Inputs are seeded random values: kernel time does not depend on them.
// With the machine's peak and bandwidth at that thread count (tests/tools/fma_peak x threads and
// tests/tools/mem_bw's read_gbps, as scripts/bench_kernels.sh passes them) each step is also
// classified compute-, memory-bound or small and checked against its bar (issue 17: >= 30% of
// peak, >= 50% of bandwidth). --json prints the same as one JSON document.
//
// capgraph profile MODEL.cap --device FAKE-DEVICE [--json]
// One replay on a fake device that runs the machine code in an emulator (it takes ":profile"):
// what the emulator counted per kernel and the device's ESTIMATE of the hardware's time from
// those counts (runtime/hcq/device_profile.h; the counters and cost model are the family's, e.g.
// targets/adreno/fake/a630_estimate.h), labelled as an estimate; no time is measured. --json:
// per kernel its counts, estimated_us and bound, each dispatch's estimated_us in order, and
// estimated_total_us.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "cli/commands.h"
#include "cli/step_bounds.h"
#include "cli/step_times.h"
#include "error.h"
#include "hcq/device_profile.h"

namespace capgraph {

namespace {

struct StepInfo {
  std::string name, source;
  uint64_t flops = 0;
  StepWork work;
};

std::vector<StepInfo> steps_describe(const fb::Capture *c, uint32_t threads) {
  std::vector<StepInfo> v;
  for (const auto *s : *c->steps()) {
    StepInfo i;
    i.work = step_work(s, c->threads(), threads);
    if (s->kind() == fb::StepKind::launch && s->launch()) {
      const auto *l = s->launch();
      i.name = c->kernels() && l->kernel() < c->kernels()->size()
                   ? c->kernels()->Get(l->kernel())->name()->str()
                   : "?";
      if (l->source_nodes() && l->source_nodes()->size()) {
        i.source = l->source_nodes()->Get(0)->str();
        if (l->source_nodes()->size() > 1)
          i.source += " +" + std::to_string(l->source_nodes()->size() - 1);
      }
      i.flops = l->flops();
    } else {
      i.name = "copy";
    }
    v.push_back(i);
  }
  return v;
}

}  // namespace

// An emulator's counts: a fake device that runs the machine code in an emulator takes the option
// ":profile" and hands what it counted, with its estimate of the hardware's time, to
// hcq::device_profile_deliver when the model is freed (runtime/hcq/device_profile.h). A device
// without one refuses the option when it is opened.
hcq::device_profile device_profile_run(const std::string &path, const std::string &device) {
  std::string dev = device;
  if (dev.find(":profile") == std::string::npos) dev += ":profile";
  std::vector<hcq::device_profile> got;
  hcq::device_profile_sink_set([&got](hcq::device_profile &&p) { got.push_back(std::move(p)); });
  struct sink_reset {
    ~sink_reset() { hcq::device_profile_sink_set({}); }
  } reset;
  capgraph_options o{1};
  capgraph_model *m = nullptr;
  char err[1024] = {0};
  const capgraph_status loaded =
      capgraph_load_device(path.c_str(), dev.c_str(), &o, &m, err, sizeof err);
  if (loaded == CAPGRAPH_ERR_ARGUMENT)
    throw Error("--device " + device +
                ": this device counts no instructions (a fake that emulates the machine code "
                "does: `capgraph devices`); timed profiles run on the CPU (no --device): " +
                err);
  if (loaded != CAPGRAPH_OK) throw Error(err);
  // Seeded values in [-1, 1) for float inputs, zeros otherwise (counts depend on shapes only,
  // except data-dependent gathers).
  uint32_t x = 1;
  for (int i = 0; i < capgraph_num_inputs(m); i++) {
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    std::memset(t.data, 0, t.size_bytes);
    if (t.dtype == CAPGRAPH_F32)
      for (size_t j = 0; j < t.size_bytes / 4; j++) {
        x = x * 1664525u + 1013904223u;
        ((float *)t.data)[j] = float(x >> 8) / float(1 << 23) - 1.0f;
      }
  }
  const capgraph_status st = capgraph_run(m);
  const std::string why = st == CAPGRAPH_OK ? "" : capgraph_error(m);
  capgraph_free(m);  // the device hands over its profile
  if (st != CAPGRAPH_OK) throw Error("replay failed: " + why);
  if (got.size() != 1)
    throw Error("--device " + device + ": the device handed over " + std::to_string(got.size()) +
                " profiles, not one");
  return std::move(got[0]);
}

namespace {

// A count or time: integers as integers, else 6 significant digits.
std::string json_number(double v) {
  char b[40];
  if (v == std::floor(v) && std::fabs(v) < 9e15)
    std::snprintf(b, sizeof b, "%.0f", v);
  else
    std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

}  // namespace

std::string device_profile_kernels_json(const hcq::device_profile &p) {
  std::string o = "[";
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const hcq::profile_kernel &k = p.kernels[i];
    o += std::string(i ? ",\n  " : "\n  ") + "{\"kernel\": " + std::to_string(k.kernel) +
         ", \"name\": " + json_quote(k.name) + ", \"dispatches\": " + std::to_string(k.dispatches) +
         ", \"estimated_us\": " + json_number(k.estimated_us) +
         ", \"bound\": " + json_quote(k.bound);
    if (!k.roofline_limit.empty())
      o += ", \"roofline_us\": " + json_number(k.roofline_us) +
           ", \"roofline_limit\": " + json_quote(k.roofline_limit);
    o += ", \"counts\": {";
    for (size_t c = 0; c < k.counts.size(); c++)
      o += (c ? ", " : "") + json_quote(k.counts[c].name) + ": " + json_number(k.counts[c].value);
    o += "}}";
  }
  return o + "]";
}

namespace {

void device_profile_print(const std::string &path, const std::string &device, bool json) {
  const hcq::device_profile p = device_profile_run(path, device);
  if (!json) {
    std::printf("%s on %s: one replay, counted by the emulator; times are ESTIMATES for %s\n%s",
                path.c_str(), p.device.c_str(), p.hardware.c_str(), p.text.c_str());
    return;
  }
  std::string o = "{\"capture\": " + json_quote(path) + ", \"device\": " + json_quote(p.device) +
                  ", \"hardware\": " + json_quote(p.hardware) +
                  ", \"estimate\": " + json_quote(p.model) +
                  ", \"measured\": false,\n\"kernels\": " + device_profile_kernels_json(p) +
                  ",\n\"dispatches\": [";
  for (size_t i = 0; i < p.dispatches.size(); i++) {
    const hcq::profile_dispatch &d = p.dispatches[i];
    o += i ? ", " : "";
    o += d.kernel == hcq::profile_dispatch::kCopy ? "{\"copy\": true"
                                                  : "{\"kernel\": " + std::to_string(d.kernel);
    o += ", \"estimated_us\": " + json_number(d.estimated_us) + "}";
  }
  o += "],\n\"estimated_total_us\": " + json_number(p.estimated_total_us) + "}\n";
  std::fputs(o.c_str(), stdout);
}

// A positive rate (GFLOP/s, GB/s) from the command line, or an Error naming the flag.
double rate_arg(const std::string &flag, const std::string &v) {
  char *end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !(x > 0) || !(x < 1e9))
    throw Error(flag + " must be a positive number, got '" + v + "'");
  return x;
}

void profile_json_print(const std::string &path, int runs, uint32_t threads, double peak,
                        double bandwidth, double total, const std::vector<StepInfo> &info,
                        const std::vector<double> &ms, const std::vector<StepVerdict> &verdict) {
  const bool bars = peak > 0;
  std::printf("{\"capture\": %s, \"runs\": %d, \"threads\": %u, \"total_ms\": %.6f",
              json_quote(path).c_str(), runs, threads, total);
  if (bars)
    std::printf(
        ", \"peak_gflops\": %.3f, \"bandwidth_gbps\": %.3f, \"compute_bar\": %.2f, \"memory_bar\": "
        "%.2f, \"small_us\": %.1f",
        peak, bandwidth, kComputeBar, kMemoryBar, kSmallStepUs);
  std::printf(", \"steps\": [\n");
  for (size_t s = 0; s < ms.size(); s++) {
    const StepVerdict &v = verdict[s];
    std::printf(
        "  {\"step\": %zu, \"kernel\": %s, \"onnx\": %s, \"ms\": %.6f, \"flops\": %llu, \"bytes\": "
        "%llu, \"active_threads\": %u, "
        "\"gflops\": %.3f, \"gbps\": %.3f, \"intensity\": %.4f",
        s, json_quote(info[s].name).c_str(), json_quote(info[s].source).c_str(), ms[s],
        (unsigned long long)info[s].work.flops, (unsigned long long)info[s].work.bytes,
        info[s].work.active_threads, v.gflops, v.gbps, v.intensity);
    if (bars)
      std::printf(
          ", \"bound\": \"%s\", \"peak_share\": %.4f, \"bandwidth_share\": %.4f, \"meets\": %s",
          step_bound_name(v.bound), v.peak_share, v.bandwidth_share, v.meets ? "true" : "false");
    std::printf("}%s\n", s + 1 < ms.size() ? "," : "");
  }
  std::printf("]}\n");
}

void profile_table_print(const std::string &path, int runs, uint32_t run_threads, double peak,
                         double bandwidth, double total, const std::vector<StepInfo> &info,
                         const std::vector<double> &median_ms,
                         const std::vector<StepVerdict> &verdict) {
  const bool bars = peak > 0;
  const size_t n = median_ms.size();
  std::printf("%s: %zu steps, %d timed runs, %u thread(s); sum of per-step medians %.3f ms\n",
              path.c_str(), n, runs, run_threads, total);
  if (bars)
    std::printf(
        "  bars: compute-bound >= %.0f%% of %.1f GFLOP/s, memory-bound >= %.0f%% of %.1f GB/s "
        "(balance %.1f FLOP/B); small: ideal "
        "time < %.0f us\n",
        100 * kComputeBar, peak, 100 * kMemoryBar, bandwidth, peak / bandwidth, kSmallStepUs);
  std::printf("  %-4s %-36s %-28s %10s %7s %9s %9s %8s %7s", "step", "kernel", "first ONNX node",
              "ms", "share", "GFLOP/s", "MB", "GB/s", "FLOP/B");
  if (bars) std::printf(" %6s %6s %-7s %s", "%peak", "%bw", "bound", "bar");
  std::printf("\n");
  double missed_ms = 0, small_ms = 0;
  size_t missed = 0, small = 0;
  for (size_t s = 0; s < n; s++) {
    const StepVerdict &v = verdict[s];
    std::printf("  %-4zu %-36.36s %-28.28s %10.4f %6.1f%% %9.2f %9.3f %8.2f %7.2f", s,
                info[s].name.c_str(), info[s].source.c_str(), median_ms[s],
                total > 0 ? 100 * median_ms[s] / total : 0.0, v.gflops, info[s].work.bytes / 1e6,
                v.gbps, v.intensity);
    if (bars)
      std::printf(" %5.0f%% %5.0f%% %-7s %s", 100 * v.peak_share, 100 * v.bandwidth_share,
                  step_bound_name(v.bound),
                  v.bound == StepBound::small ? "-"
                  : v.meets                   ? "ok"
                                              : "MISS");
    std::printf("\n");
    if (!v.meets) missed++, missed_ms += median_ms[s];
    if (v.bound == StepBound::small) small++, small_ms += median_ms[s];
  }
  if (bars)
    std::printf(
        "  below their bar: %zu steps, %.1f%% of the time; small: %zu steps, %.1f%% of the time\n",
        missed, total > 0 ? 100 * missed_ms / total : 0.0, small,
        total > 0 ? 100 * small_ms / total : 0.0);
  std::vector<size_t> order(n);
  for (size_t s = 0; s < n; s++) order[s] = s;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return median_ms[a] > median_ms[b]; });
  std::printf("  slowest:");
  for (size_t i = 0; i < std::min<size_t>(5, n); i++)
    std::printf(" %zu (%.1f%%)", order[i], total > 0 ? 100 * median_ms[order[i]] / total : 0.0);
  std::printf("\n");
}

}  // namespace

int cmd_profile(int argc, char **argv) {
  std::string path, trace, device;
  int runs = 20, threads = 0, best_of = 1;
  double peak = 0, bandwidth = 0;
  bool json = false;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--runs")
      runs = int_arg(a, arg_value(i, argc, argv), 1, 100000);
    else if (a == "--threads")
      threads = int_arg(a, arg_value(i, argc, argv), 1, 256);
    else if (a == "--trace")
      trace = arg_value(i, argc, argv);
    else if (a == "--device")
      device = arg_value(i, argc, argv);
    else if (a == "--peak")
      peak = rate_arg(a, arg_value(i, argc, argv));
    else if (a == "--bandwidth")
      bandwidth = rate_arg(a, arg_value(i, argc, argv));
    else if (a == "--json")
      json = true;
    else if (a == "--best-of")
      best_of = int_arg(a, arg_value(i, argc, argv), 1, 100);
    else if (!a.empty() && a[0] == '-')
      throw Error("profile: unknown option " + a);
    else if (path.empty())
      path = a;
    else
      throw Error("profile: unexpected argument " + a);
  }
  const char *usage =
      "usage: capgraph profile MODEL.cap [--runs N] [--threads T] [--trace FILE.json] [--best-of "
      "K] [--peak GFLOPS --bandwidth GBPS] [--json] | "
      "MODEL.cap --device FAKE-DEVICE [--json]";
  if (path.empty()) throw Error(usage);
  if ((peak > 0) != (bandwidth > 0))
    throw Error(
        std::string("profile: --peak and --bandwidth go together (the bound is their ratio)\n") +
        usage);
  if (!device.empty() && device != "cpu") {
    device_profile_print(path, device, json);
    return 0;
  }
  std::vector<uint8_t> bytes = capture_read_verified(path);
  const fb::Capture *capture = fb::GetCapture(bytes.data());
  const uint32_t run_threads = threads ? uint32_t(threads) : std::max(1u, capture->threads());
  std::vector<StepInfo> info = steps_describe(capture, run_threads);

  // Best of several profiles, step by step: on a shared machine a neighbour's burst inflates
  // some medians of one profile; the least disturbed of each step is the kernel's own time.
  std::vector<double> median_ms = step_median_ms(bytes, path, runs, threads);
  for (int k = 1; k < best_of; k++) {
    const std::vector<double> again = step_median_ms(bytes, path, runs, threads);
    for (size_t s = 0; s < median_ms.size(); s++) median_ms[s] = std::min(median_ms[s], again[s]);
  }
  const size_t n = median_ms.size();
  double total = 0;
  for (double ms : median_ms) total += ms;
  std::vector<StepVerdict> verdict(n);
  for (size_t s = 0; s < n; s++)
    verdict[s] = step_verdict(info[s].work, median_ms[s], run_threads, peak, bandwidth);
  if (json)
    profile_json_print(path, runs, run_threads, peak, bandwidth, total, info, median_ms, verdict);
  else
    profile_table_print(path, runs, run_threads, peak, bandwidth, total, info, median_ms, verdict);
  if (!trace.empty()) {
    // One replay laid out with each step's median time, as complete ("X") events in microseconds.
    std::string out = "{\"traceEvents\": [\n";
    double at_us = 0;
    for (size_t s = 0; s < n; s++) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f", at_us,
                    median_ms[s] * 1000);
      out += "  {\"name\": " + json_quote(info[s].name) + ", \"cat\": \"kernel\", " + buf +
             ", \"args\": {\"step\": " + std::to_string(s) +
             ", \"onnx\": " + json_quote(info[s].source) +
             ", \"flops\": " + std::to_string(info[s].flops) + "}}" + (s + 1 < n ? ",\n" : "\n");
      at_us += median_ms[s] * 1000;
    }
    out += "], \"displayTimeUnit\": \"ms\"}\n";
    file_write_atomic(trace, std::vector<uint8_t>(out.begin(), out.end()));
    std::fprintf(json ? stderr : stdout,
                 "  trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n",
                 trace.c_str());
  }
  return 0;
}

}  // namespace capgraph
