// capgraph view MODEL.cap -o VIEW.html [--profile] [--runs N] [--threads T] [--device FAKE-DEVICE]
// Writes one self-contained page (view_page.cpp) showing the kernel timeline, the memory plan and
// the kernel table. Without --profile each step's time is a roofline estimate; with it, the median
// of timed replays on this machine (the same measurement as `capgraph profile`). With --device, a
// fake that emulates the machine code replays it once and each step's time is that device's
// ESTIMATE for its hardware, drawn with what the emulator counted per kernel
// (`capgraph profile --device`).
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "cli/commands.h"
#include "cli/step_times.h"
#include "cli/view_page.h"
#include "error.h"
#include "hcq/device_profile.h"

namespace capgraph {

namespace {

// Assumed machine for the estimate, per thread: about one desktop core (NOTES.md measures
// 101.6 GFLOP/s FP32 peak on this project's 2-core machine) and a share of DRAM bandwidth. Only
// the relative widths of the timeline matter; the page labels them "estimated".
constexpr double kEstimateGflops = 100.0;
constexpr double kEstimateGBps = 20.0;
constexpr double kEstimateLaunchUs = 1.0;  // so steps with no FLOPs and few bytes still show

std::vector<double> step_estimate_ms(const fb::Capture *c) {
  const double threads = std::max(1u, c->threads());
  std::vector<double> ms;
  for (const auto *s : *c->steps()) {
    double flops = 0, bytes = 0;
    if (s->kind() == fb::StepKind::launch && s->launch()) {
      flops = double(s->launch()->flops());
      bytes = double(s->launch()->bytes_read() + s->launch()->bytes_written());
    } else if (s->copy()) {
      bytes = 2.0 * double(s->copy()->size());
    }
    const double compute_ms = flops / (kEstimateGflops * 1e6 * threads),
                 memory_ms = bytes / (kEstimateGBps * 1e6 * threads);
    ms.push_back(std::max(compute_ms, memory_ms) + kEstimateLaunchUs / 1000);
  }
  return ms;
}

// Each step's time from a device profile: a launch takes the next dispatch the device ran (which
// must be its kernel), a copy the next copy; without a timeline, a launch takes its kernel's
// estimate shared among its dispatches. Also "device" for the page: the profile's kernels and,
// per step, which of them it launched.
std::vector<double> step_device_ms(const fb::Capture *c, const hcq::device_profile &p,
                                   std::string *device_json) {
  std::vector<double> ms;
  std::vector<int> step_kernel;
  size_t next_launch = 0, next_copy = 0;
  auto next = [&](size_t &at, bool copy) -> const hcq::profile_dispatch * {
    while (at < p.dispatches.size() &&
           (p.dispatches[at].kernel == hcq::profile_dispatch::kCopy) != copy)
      at++;
    return at < p.dispatches.size() ? &p.dispatches[at++] : nullptr;
  };
  for (const auto *s : *c->steps()) {
    if (s->kind() != fb::StepKind::launch || !s->launch()) {
      const hcq::profile_dispatch *d = next(next_copy, true);
      ms.push_back(d ? d->estimated_us / 1000 : 0);
      step_kernel.push_back(-1);
      continue;
    }
    const uint32_t k = s->launch()->kernel();
    int at = -1;
    for (size_t i = 0; i < p.kernels.size(); i++)
      if (p.kernels[i].kernel == k) at = int(i);
    step_kernel.push_back(at);
    if (p.dispatches.empty()) {
      ms.push_back(at < 0 ? 0
                          : p.kernels[at].estimated_us / 1000 /
                                double(std::max<uint64_t>(1, p.kernels[at].dispatches)));
      continue;
    }
    const hcq::profile_dispatch *d = next(next_launch, false);
    if (!d || d->kernel != k)
      throw Error("view --device " + p.device + ": step " + std::to_string(ms.size()) +
                  " launches kernel " + std::to_string(k) + " but the device ran " +
                  (d ? "kernel " + std::to_string(d->kernel) : std::string("no more dispatches")));
    ms.push_back(d->estimated_us / 1000);
  }
  std::string steps = "[";
  for (size_t i = 0; i < step_kernel.size(); i++)
    steps += (i ? ", " : "") + std::to_string(step_kernel[i]);
  char total[40];
  std::snprintf(total, sizeof total, "%.6g", p.estimated_total_us);
  *device_json =
      "{\"device\": " + json_quote(p.device) + ", \"hardware\": " + json_quote(p.hardware) +
      ", \"estimate\": " + json_quote(p.model) + ", \"estimated_total_us\": " + total +
      ",\n\"kernels\": " + device_profile_kernels_json(p) + ",\n\"step_kernel\": " + steps + "]}";
  return ms;
}

}  // namespace

int cmd_view(int argc, char **argv) {
  std::string path, out, device;
  bool profile = false;
  int runs = 20, threads = 0;
  for (int i = 2; i < argc; i++) {
    std::string a = argv[i];
    if (a == "-o" || a == "--output")
      out = arg_value(i, argc, argv);
    else if (a == "--profile")
      profile = true;
    else if (a == "--device")
      device = arg_value(i, argc, argv);
    else if (a == "--runs")
      runs = int_arg(a, arg_value(i, argc, argv), 1, 100000);
    else if (a == "--threads")
      threads = int_arg(a, arg_value(i, argc, argv), 1, 256);
    else if (!a.empty() && a[0] == '-')
      throw Error("view: unknown option " + a);
    else if (path.empty())
      path = a;
    else
      throw Error("view: unexpected argument " + a);
  }
  if (path.empty() || out.empty())
    throw Error(
        "usage: capgraph view MODEL.cap -o VIEW.html [--profile] [--runs N] [--threads T] "
        "[--device FAKE-DEVICE]" +
        std::string(path.empty() ? "" : " (the output file -o is missing)"));
  if (device == "cpu") device.clear();
  if (profile && !device.empty())
    throw Error("view: --profile measures on this CPU, --device " + device +
                " estimates from an emulator's counts: choose one");
  std::vector<uint8_t> bytes = capture_read_verified(path);
  const fb::Capture *c = fb::GetCapture(bytes.data());

  std::vector<double> ms;
  std::string kind, note, device_json;
  if (!device.empty()) {
    const hcq::device_profile p = device_profile_run(path, device);
    ms = step_device_ms(c, p, &device_json);
    kind = "estimated";
    // The device's model line starts with its own "ESTIMATE, not a measurement:" label.
    const size_t colon = p.model.rfind("ESTIMATE", 0) == 0 ? p.model.find(": ") : std::string::npos;
    note = "ESTIMATED " + p.hardware + " time from " + p.device +
           "'s emulator counts, not a measurement: " +
           (colon == std::string::npos ? p.model : p.model.substr(colon + 2));
  } else if (profile) {
    ms = step_median_ms(bytes, path, runs, threads);
    kind = "measured";
    note = "median of " + std::to_string(runs) + " timed replays per step on this machine, " +
           std::to_string(threads ? threads : 1) + " thread(s)";
  } else {
    ms = step_estimate_ms(c);
    kind = "estimated";
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "roofline estimate: max(FLOPs / %.0f GFLOP/s, bytes / %.0f GB/s) per thread + "
                  "%.0f µs; view --profile measures",
                  kEstimateGflops, kEstimateGBps, kEstimateLaunchUs);
    note = buf;
  }
  std::string times = "[";
  for (size_t i = 0; i < ms.size(); i++) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.6f", i ? ", " : "", ms[i]);
    times += buf;
  }
  times += "]";
  const std::string model =
      c->model_name() && c->model_name()->size() ? c->model_name()->str() : path;
  const std::string data = "{\"model\": " + json_quote(model) + ",\n\"times\": {\"kind\": \"" +
                           kind + "\", \"note\": " + json_quote(note) + ", \"ms\": " + times +
                           "},\n" +
                           (device_json.empty() ? "" : "\"device\": " + device_json + ",\n") +
                           "\"capture\": " + inspect_json(path, c) + "}";
  const std::string page = view_page_html(data);
  file_write_atomic(out, std::vector<uint8_t>(page.begin(), page.end()));
  std::printf("%s: %u steps, %u planned buffers, times %s -> %s\n", path.c_str(),
              c->steps()->size(), c->buffers() ? c->buffers()->size() : 0, kind.c_str(),
              out.c_str());
  return 0;
}

}  // namespace capgraph
