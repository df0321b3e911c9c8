// capgraph profile MODEL.cap [--runs N] [--threads T] [--trace FILE.json]
// Per-kernel times from timed replays (the median of N runs per step), printed as a table with
// each step's share and GFLOP/s, and optionally written as a Chrome trace (opens in Perfetto or
// chrome://tracing). Inputs are seeded random values: kernel time does not depend on them.
//
// capgraph profile MODEL.cap --device fake-amd[:CHIP]
// One replay on the fake AMD GPU, whose RDNA3 emulator counts what each kernel's machine code
// executed (VALU, FMA share, SALU, waits, VMEM and LDS bytes) and prints them with a roofline
// estimate for a 7900 XTX (targets/amd/fake_amd.cpp, profile_text): objective counts, and an
// estimate labelled as one; no time is measured.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "cli/commands.h"
#include "cli/step_times.h"
#include "error.h"

namespace capgraph {

namespace {

struct StepInfo {
  std::string name, source;
  uint64_t flops = 0;
};

std::vector<StepInfo> steps_describe(const fb::Capture *c) {
  std::vector<StepInfo> v;
  for (const auto *s : *c->steps()) {
    StepInfo i;
    if (s->kind() == fb::StepKind::launch && s->launch()) {
      const auto *l = s->launch();
      i.name = c->kernels() && l->kernel() < c->kernels()->size() ? c->kernels()->Get(l->kernel())->name()->str() : "?";
      if (l->source_nodes() && l->source_nodes()->size()) {
        i.source = l->source_nodes()->Get(0)->str();
        if (l->source_nodes()->size() > 1) i.source += " +" + std::to_string(l->source_nodes()->size() - 1);
      }
      i.flops = l->flops();
    } else {
      i.name = "copy";
    }
    v.push_back(i);
  }
  return v;
}

// The emulator's counts: the fake prints them (on stderr) when the model is freed.
int device_profile(const std::string &path, const std::string &device) {
  if (device.rfind("fake-amd", 0) != 0)
    throw Error("profile --device " + device + ": only fake-amd[:CHIP] counts instructions; timed profiles run on the CPU "
                "(no --device)");
  std::string dev = device;
  if (dev.find(":profile") == std::string::npos) dev += ":profile";
  capgraph_options o{1};
  capgraph_model *m = nullptr;
  char err[1024] = {0};
  if (capgraph_load_device(path.c_str(), dev.c_str(), &o, &m, err, sizeof err) != CAPGRAPH_OK) throw Error(err);
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
  std::printf("%s on %s: one replay, counted by the emulator\n", path.c_str(), dev.c_str());
  std::fflush(stdout);
  const capgraph_status st = capgraph_run(m);
  const std::string why = st == CAPGRAPH_OK ? "" : capgraph_error(m);
  capgraph_free(m);  // prints the counts
  if (st != CAPGRAPH_OK) throw Error("replay failed: " + why);
  return 0;
}

}  // namespace

int cmd_profile(int argc, char **argv) {
  std::string path, trace, device;
  int runs = 20, threads = 0;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--runs") runs = int_arg(a, arg_value(i, argc, argv), 1, 100000);
    else if (a == "--threads") threads = int_arg(a, arg_value(i, argc, argv), 1, 256);
    else if (a == "--trace") trace = arg_value(i, argc, argv);
    else if (a == "--device") device = arg_value(i, argc, argv);
    else if (!a.empty() && a[0] == '-') throw Error("profile: unknown option " + a);
    else if (path.empty()) path = a;
    else throw Error("profile: unexpected argument " + a);
  }
  if (path.empty())
    throw Error("usage: capgraph profile MODEL.cap [--runs N] [--threads T] [--trace FILE.json] | MODEL.cap --device fake-amd[:CHIP]");
  if (!device.empty() && device != "cpu") return device_profile(path, device);
  std::vector<uint8_t> bytes = capture_read_verified(path);
  std::vector<StepInfo> info = steps_describe(fb::GetCapture(bytes.data()));

  std::vector<double> median_ms = step_median_ms(bytes, path, runs, threads);
  const size_t n = median_ms.size();
  double total = 0;
  for (double ms : median_ms) total += ms;
  std::printf("%s: %zu steps, %d timed runs, %d thread(s); sum of per-step medians %.3f ms\n", path.c_str(), n, runs,
              threads ? threads : 1, total);
  std::printf("  %-4s %-36s %-28s %10s %7s %9s\n", "step", "kernel", "first ONNX node", "ms", "share", "GFLOP/s");
  for (size_t s = 0; s < n; s++)
    std::printf("  %-4zu %-36.36s %-28.28s %10.4f %6.1f%% %9.2f\n", s, info[s].name.c_str(), info[s].source.c_str(), median_ms[s],
                total > 0 ? 100 * median_ms[s] / total : 0.0, median_ms[s] > 0 ? info[s].flops / (median_ms[s] * 1e6) : 0.0);
  std::vector<size_t> order(n);
  for (size_t s = 0; s < n; s++) order[s] = s;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return median_ms[a] > median_ms[b]; });
  std::printf("  slowest:");
  for (size_t i = 0; i < std::min<size_t>(5, n); i++) std::printf(" %zu (%.1f%%)", order[i], total > 0 ? 100 * median_ms[order[i]] / total : 0.0);
  std::printf("\n");

  if (!trace.empty()) {
    // One replay laid out with each step's median time, as complete ("X") events in microseconds.
    std::string out = "{\"traceEvents\": [\n";
    double at_us = 0;
    for (size_t s = 0; s < n; s++) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "\"ph\": \"X\", \"pid\": 1, \"tid\": 1, \"ts\": %.3f, \"dur\": %.3f", at_us, median_ms[s] * 1000);
      out += "  {\"name\": " + json_quote(info[s].name) + ", \"cat\": \"kernel\", " + buf +
             ", \"args\": {\"step\": " + std::to_string(s) + ", \"onnx\": " + json_quote(info[s].source) +
             ", \"flops\": " + std::to_string(info[s].flops) + "}}" + (s + 1 < n ? ",\n" : "\n");
      at_us += median_ms[s] * 1000;
    }
    out += "], \"displayTimeUnit\": \"ms\"}\n";
    file_write_atomic(trace, std::vector<uint8_t>(out.begin(), out.end()));
    std::printf("  trace: %s (open in https://ui.perfetto.dev or chrome://tracing)\n", trace.c_str());
  }
  return 0;
}

}  // namespace capgraph
