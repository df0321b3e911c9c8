#include "half_calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "codegen/host_run.h"
#include "error.h"
#include "knobs.h"
#include "schedule/interpret.h"

namespace capgraph {

namespace {

// A value float16 storage can hold with room to spare: within a factor 2 of its largest finite
// value (IEEE 754 binary16: 65504), since the real input is not the calibration input.
constexpr double kHalfSafeMax = 65504 / 2.0;

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

// Rounds a float32 buffer's values to float16 and back (round to nearest even: what a float16
// store does; values past 65504 become infinities as there).
void round_half(std::vector<uint8_t> &bytes) {
  float *f = reinterpret_cast<float *>(bytes.data());
  for (size_t i = 0, n = bytes.size() / 4; i < n; i++) f[i] = half_to_float(half_from_double(f[i]));
}

double finite_max_abs(const std::vector<uint8_t> &bytes) {
  const float *f = reinterpret_cast<const float *>(bytes.data());
  double m = 0;
  for (size_t i = 0, n = bytes.size() / 4; i < n; i++)
    if (std::isfinite(f[i])) m = std::max(m, (double)std::fabs(f[i]));
  return m;
}

// A fixed pseudo-random sequence (splitmix64), so a compile gives the same capture every time.
struct Sequence {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double)(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double normal() {                                                // Box-Muller
    const double u = 1 - uniform(), v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
  }
};

void input_fill(const Program &p, const Program::Port &in, const HalfCalibration &c,
                std::vector<uint8_t> &bytes, uint64_t seed) {
  const DType t = p.buffers[(size_t)in.buffer].dtype;
  const int64_t n = p.buffers[(size_t)in.buffer].numel;
  auto given = c.inputs.find(in.name);
  if (given != c.inputs.end()) {
    const Tensor &v = given->second;
    if (v.dtype != t || v.shape != in.shape)
      throw Error("--calibrate " + in.name + ": the model's input is " + dtype_name(t) + " " +
                  shape_str(in.shape) + ", the file holds " + dtype_name(v.dtype) + " " +
                  shape_str(v.shape));
    std::memcpy(bytes.data(), v.data(), std::min(bytes.size(), v.bytes->size()));
    return;
  }
  Sequence s{seed};
  for (int64_t i = 0; i < n; i++) {
    double v = 0;
    if (dtype_is_float(t))
      v = s.normal();
    else if (t == DType::u8)
      v = (double)(s.next() % 256);
    element_store(t, bytes.data(), i, v);
  }
}

struct Calibrator {
  const Program &p;
  HalfPlan &plan;
  const HalfCalibration &c;
  HostProgram host;
  int threads;
  std::vector<std::vector<uint8_t>> ref_out;  // per output port
  std::vector<double> ref_max;                // per output port: largest finite |value|
  int runs = 0;

  Calibrator(const Program &p_, HalfPlan &plan_, const HalfCalibration &c_)
      : p(p_), plan(plan_), c(c_), host(p_, c_.jobs), threads(std::max(1, c_.jobs)) {}

  // Runs with the buffers in `half` stored as float16; the worst output's relative difference
  // from the reference and which output it is.
  double run(const std::vector<char> &half, size_t *worst = nullptr) {
    runs++;
    auto &bufs = host.buffers();
    host.constants_reset();
    for (size_t b = 0; b < half.size(); b++)
      if (half[b] && p.buffers[b].kind == Buffer::Kind::constant) round_half(bufs[b]);
    host.run(
        [&](size_t k) {
          const size_t b = (size_t)p.kernels[k].store.buffer;
          if (half[b]) round_half(bufs[b]);
        },
        threads);
    double err = 0;
    for (size_t o = 0; o < p.outputs.size(); o++) {
      const Program::Port &port = p.outputs[o];
      const DType t = p.buffers[(size_t)port.buffer].dtype;
      const std::vector<uint8_t> &now = bufs[(size_t)port.buffer];
      double d = 0;
      for (int64_t i = 0, n = p.buffers[(size_t)port.buffer].numel; i < n; i++) {
        const double r = element_load(t, ref_out[o].data(), i), v = element_load(t, now.data(), i);
        if (!std::isfinite(r)) continue;  // the float32 result itself is not a number here
        d = std::max(d, std::isfinite(v) ? std::fabs(v - r) : INFINITY);
      }
      const double rel = d / std::max(ref_max[o], 1e-30);
      if (rel > err || (o == 0 && rel >= err)) {
        err = rel;
        if (worst) *worst = o;
      }
    }
    return err;
  }

  void reference() {
    auto &bufs = host.buffers();
    for (size_t i = 0; i < p.inputs.size(); i++)
      input_fill(p, p.inputs[i], c, bufs[(size_t)p.inputs[i].buffer], 0x63617067 + i);
    std::vector<double> reached(p.buffers.size(), 0);
    runs++;
    host.run(
        [&](size_t k) {
          const size_t b = (size_t)p.kernels[k].store.buffer;
          if (plan.half[b]) reached[b] = std::max(reached[b], finite_max_abs(bufs[b]));
        },
        threads);
    for (const Program::Port &o : p.outputs) {
      ref_out.push_back(bufs[(size_t)o.buffer]);
      const DType t = p.buffers[(size_t)o.buffer].dtype;
      double m = 0;
      for (int64_t i = 0, n = p.buffers[(size_t)o.buffer].numel; i < n; i++) {
        const double v = element_load(t, ref_out.back().data(), i);
        if (std::isfinite(v)) m = std::max(m, std::fabs(v));
      }
      ref_max.push_back(m);
    }
    for (size_t b = 0; b < reached.size(); b++)
      if (plan.half[b] && reached[b] > kHalfSafeMax)
        plan.keep(b, "reaches " + number(reached[b]) +
                         " on the calibration input, near or past float16's largest value 65504");
  }
};

}  // namespace

HalfCalibrationReport half_calibrate(const Program &p, HalfPlan &plan, const HalfCalibration &c) {
  const auto t0 = std::chrono::steady_clock::now();
  HalfCalibrationReport r;
  Calibrator cal(p, plan, c);
  bool own = !p.inputs.empty();
  for (const Program::Port &in : p.inputs) own &= c.inputs.count(in.name) > 0;
  const double budget = own ? c.budget_own : c.budget_generated;
  cal.reference();
  // The candidates in the order the model makes them: an activation where it is first stored,
  // a weight where it is first read.
  std::vector<size_t> pos(p.buffers.size(), p.kernels.size());
  for (size_t k = 0; k < p.kernels.size(); k++) {
    const Kernel &kern = p.kernels[k];
    pos[(size_t)kern.store.buffer] = std::min(pos[(size_t)kern.store.buffer], k);
    for (const Access &a : kern.loads)
      if (p.buffers[(size_t)a.buffer].kind == Buffer::Kind::constant)
        pos[(size_t)a.buffer] = std::min(pos[(size_t)a.buffer], k);
  }
  const bool trace = knob_get("CAPGRAPH_DEBUG_HALF") != nullptr;
  size_t worst = 0;
  if (trace) {  // every stored buffer's relative difference, reference vs all float16
    std::vector<std::vector<uint8_t>> ref = cal.host.buffers();
    cal.run(plan.half);
    std::vector<char> seen(p.buffers.size(), 0);
    for (size_t k = 0; k < p.kernels.size(); k++) {
      const size_t b = (size_t)p.kernels[k].store.buffer;
      if (seen[b] || p.buffers[b].dtype != DType::f32) continue;
      seen[b] = 1;
      const float *x = reinterpret_cast<const float *>(ref[b].data());
      const float *y = reinterpret_cast<const float *>(cal.host.buffers()[b].data());
      double m = 0, d = 0;
      for (int64_t i = 0; i < p.buffers[b].numel; i++) {
        m = std::max(m, (double)std::fabs(x[i]));
        d = std::max(d, (double)std::fabs(x[i] - y[i]));
      }
      std::fprintf(stderr, "half_calibrate: %3zu %-40s %s max %10.4g diff %10.4g rel %.4g\n", k,
                   buffer_label(p, b).c_str(), plan.half[b] ? "f16" : "f32", m, d, d / m);
    }
  }
  double err = cal.run(plan.half, &worst);
  r.error_all_half = err;
  if (err > budget) {
    // The float16 error of a trained network is spread over every stored tensor (each rounding
    // adds ~2^-12 of the tensor's size, and the network carries it on), so no single tensor is
    // to blame: the float16 part is the longest run of candidates, in the order the model makes
    // them, that keeps the outputs within the budget, and everything after it stays float32.
    std::vector<size_t> order;
    for (size_t b = 0; b < plan.half.size(); b++)
      if (plan.half[b]) order.push_back(b);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return pos[x] < pos[y]; });
    auto prefix = [&](size_t n) {
      std::vector<char> h(plan.half.size(), 0);
      for (size_t i = 0; i < n; i++) h[order[i]] = 1;
      return h;
    };
    // Largest n such that float16 for order[0..n) stays within the budget: true at 0 (nothing
    // rounded is the reference), false at order.size().
    size_t lo = 0, hi = order.size(), hi_worst = worst;
    double lo_err = 0, hi_err = err;
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      size_t w = 0;
      const double e = cal.run(prefix(mid), &w);
      if (e <= budget) {
        lo = mid;
        lo_err = e;
      } else {
        hi = mid;
        hi_err = e;
        hi_worst = w;
      }
    }
    // order[lo] tips the prefix over. When it alone is to blame (every other candidate float16
    // stays within the budget: one more run), only it stays float32; else it and all after it.
    std::vector<char> others = plan.half;
    others[order[lo]] = 0;
    size_t others_worst = 0;
    const double others_err = cal.run(others, &others_worst);
    const std::string first = buffer_label(p, order[lo]);
    if (others_err <= budget) {
      plan.keep(order[lo],
                "float16 here puts output '" + p.outputs[hi_worst].name + "' " + number(hi_err) +
                    " x its largest value from float32 on the "
                    "calibration input (budget " +
                    number(budget) + "; every other tensor float16: " + number(others_err) + ")");
      err = others_err;
      worst = others_worst;
    } else {
      for (size_t i = lo; i < order.size(); i++)
        plan.keep(order[i], i == lo
                                ? "float16 from here on puts output '" + p.outputs[hi_worst].name +
                                      "' " + number(hi_err) +
                                      " x its largest value from float32 on "
                                      "the calibration input (budget " +
                                      number(budget) + "; " + std::to_string(lo) +
                                      " float16 tensors before it: " + number(lo_err) + ")"
                                : "after " + first + ", where float16's error reaches the budget");
      err = lo_err;
    }
    if (trace)
      std::fprintf(stderr, "half_calibrate: %zu of %zu float16; kept from %s on; error %.4g\n", lo,
                   order.size(), first.c_str(), err);
  }
  if (err > budget)
    throw Error("float16 storage: output '" + p.outputs[worst].name + "' is " + number(err) +
                " x its largest value from float32 on the calibration input (budget " +
                number(budget) + ") whatever is kept float32; compile with --precision fp32");
  r.error = err;
  r.runs = cal.runs;
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace capgraph
