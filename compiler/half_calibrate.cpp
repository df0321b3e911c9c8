#include "half_calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "codegen/host_run.h"
#include "error.h"
#include "half_calibrate_inputs.h"
#include "knobs.h"
#include "schedule/interpret.h"

namespace capgraph {

namespace {

// A value float16 storage can hold with room to spare: within a factor 2 of its largest finite
// value (IEEE 754 binary16: 65504), since the real input is not the calibration input.
constexpr double kHalfSafeMax = 65504 / 2.0;
// The search (half_calibrate.h): groups of the first cut, how much finer each later cut is, and
// the runs one search may make before it leaves the groups still in question float32 whole.
constexpr size_t kGroups = 16, kRefine = 4;
constexpr int kMaxSearchRuns = 48;

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

// Rounds a float32 buffer's values to float16 and back (what a float16 store does).
void round_half(std::vector<uint8_t> &bytes) {
  float *f = reinterpret_cast<float *>(bytes.data());
  for (size_t i = 0, n = bytes.size() / 4; i < n; i++) f[i] = float_round_half(f[i]);
}

double finite_max_abs(const std::vector<uint8_t> &bytes) {
  const float *f = reinterpret_cast<const float *>(bytes.data());
  double m = 0;
  for (size_t i = 0, n = bytes.size() / 4; i < n; i++)
    if (std::isfinite(f[i])) m = std::max(m, (double)std::fabs(f[i]));
  return m;
}

// One calibration input: its values per input port and the float32 outputs on it.
struct Draw {
  std::string name;  // "own" or a generated kind
  std::vector<std::vector<uint8_t>> inputs;
  std::vector<std::vector<uint8_t>> ref_out;
  std::vector<double> ref_max;  // per output: largest finite |value|
};

// What a run found: the worst output's relative difference from the reference, and which.
struct RunError {
  double err = 0;
  size_t output = 0;
};

struct Calibrator {
  const Program &p;
  HalfPlan &plan;
  const HalfCalibration &c;
  HostProgram host;
  int threads;
  std::vector<Draw> draws;
  int runs = 0;
  // Where float16 in a buffer first changes a run: the first kernel that stores it (an
  // activation) or loads it (a weight).
  std::vector<size_t> start;
  // Runs may start past kernel 0 from a saved state when every buffer is stored (all of it, by
  // one or more kernels) before any kernel loads it and no kernel loads what it stores: then the
  // state after a whole run holds, for each buffer, the value the later kernels read.
  bool resumable = true;
  std::vector<std::vector<uint8_t>> saved;  // non-constant buffers after a run of saved_half
  std::vector<char> saved_half;
  size_t saved_draw = SIZE_MAX;

  Calibrator(const Program &p_, HalfPlan &plan_, const HalfCalibration &c_)
      : p(p_), plan(plan_), c(c_), host(p_, c_.jobs), threads(std::max(1, c_.jobs)) {
    const size_t nb = p.buffers.size(), nk = p.kernels.size();
    start.assign(nb, nk);
    std::vector<size_t> last_store(nb, 0), first_load(nb, nk);
    std::vector<char> stored(nb, 0);
    for (size_t k = 0; k < nk; k++) {
      const Kernel &kern = p.kernels[k];
      const size_t s = (size_t)kern.store.buffer;
      for (const Access &a : kern.loads) {
        const size_t b = (size_t)a.buffer;
        first_load[b] = std::min(first_load[b], k);
        if (b == s) resumable = false;
        if (p.buffers[b].kind == Buffer::Kind::constant) start[b] = std::min(start[b], k);
      }
      start[s] = std::min(start[s], k);
      last_store[s] = k;
      stored[s] = 1;
    }
    for (size_t b = 0; b < nb; b++)
      if (stored[b] && first_load[b] <= last_store[b]) resumable = false;
  }

  void inputs_set(size_t d) {
    auto &bufs = host.buffers();
    for (size_t i = 0; i < p.inputs.size(); i++) {
      std::vector<uint8_t> &dst = bufs[(size_t)p.inputs[i].buffer];
      std::memcpy(dst.data(), draws[d].inputs[i].data(), dst.size());
    }
  }

  void save(const std::vector<char> &half, size_t d) {
    if (!resumable) return;
    const auto &bufs = host.buffers();
    saved.resize(bufs.size());
    for (size_t b = 0; b < bufs.size(); b++)
      if (p.buffers[b].kind != Buffer::Kind::constant) saved[b] = bufs[b];
    saved_half = half;
    saved_draw = d;
  }

  // Runs draw d with the buffers in `half` stored as float16; the worst output's relative
  // difference from d's reference. From the saved state when it is d's and `half` adds to it.
  RunError run(const std::vector<char> &half, size_t d) {
    runs++;
    auto &bufs = host.buffers();
    size_t from = 0;
    if (resumable && saved_draw == d) {
      from = p.kernels.size();
      for (size_t b = 0; b < half.size() && from > 0; b++) {
        if (saved_half[b] && !half[b]) from = 0;
        if (half[b] && !saved_half[b]) from = std::min(from, start[b]);
      }
    }
    // What kernels before `from` stored, as the saved run left it (the same float16 choice).
    if (from > 0)
      for (size_t b = 0; b < bufs.size(); b++)
        if (p.buffers[b].kind != Buffer::Kind::constant && start[b] < from)
          std::memcpy(bufs[b].data(), saved[b].data(), bufs[b].size());
    inputs_set(d);
    host.constants_reset();
    for (size_t b = 0; b < half.size(); b++)
      if (half[b] && p.buffers[b].kind == Buffer::Kind::constant) round_half(bufs[b]);
    host.run(
        [&](size_t k) {
          const size_t b = (size_t)p.kernels[k].store.buffer;
          if (half[b]) round_half(bufs[b]);
        },
        threads, std::min(from, p.kernels.size()));
    RunError r;
    const Draw &dr = draws[d];
    for (size_t o = 0; o < p.outputs.size(); o++) {
      const Program::Port &port = p.outputs[o];
      const DType t = p.buffers[(size_t)port.buffer].dtype;
      const std::vector<uint8_t> &now = bufs[(size_t)port.buffer];
      double m = 0;
      for (int64_t i = 0, n = p.buffers[(size_t)port.buffer].numel; i < n; i++) {
        const double x = element_load(t, dr.ref_out[o].data(), i),
                     v = element_load(t, now.data(), i);
        if (!std::isfinite(x)) continue;  // the float32 result itself is not a number here
        m = std::max(m, std::isfinite(v) ? std::fabs(v - x) : INFINITY);
      }
      const double rel = m / std::max(dr.ref_max[o], 1e-30);
      if (rel > r.err || (o == 0 && rel >= r.err)) r = {rel, o};
    }
    return r;
  }

  // The float32 run of draw d: its outputs, and the largest value each candidate reaches.
  void reference(size_t d, std::vector<double> &reached) {
    runs++;
    auto &bufs = host.buffers();
    inputs_set(d);
    host.constants_reset();
    host.run(
        [&](size_t k) {
          const size_t b = (size_t)p.kernels[k].store.buffer;
          if (plan.half[b]) reached[b] = std::max(reached[b], finite_max_abs(bufs[b]));
        },
        threads);
    Draw &dr = draws[d];
    for (const Program::Port &o : p.outputs) {
      dr.ref_out.push_back(bufs[(size_t)o.buffer]);
      const DType t = p.buffers[(size_t)o.buffer].dtype;
      double m = 0;
      for (int64_t i = 0, n = p.buffers[(size_t)o.buffer].numel; i < n; i++) {
        const double v = element_load(t, dr.ref_out.back().data(), i);
        if (std::isfinite(v)) m = std::max(m, std::fabs(v));
      }
      dr.ref_max.push_back(m);
    }
  }

  std::string input_label(size_t d) const {
    return draws[d].name == "own" ? "the calibration input"
                                  : "the generated input '" + draws[d].name + "'";
  }
};

// The input values of each draw: the model's own where given, else a generated kind.
void draws_make(Calibrator &cal, const Program &p, const HalfCalibration &c) {
  bool own = !p.inputs.empty();
  for (const Program::Port &in : p.inputs) own &= c.inputs.count(in.name) > 0;
  std::vector<std::string> names;
  if (own) names.push_back("own");
  std::vector<CalibrationKind> kinds;
  // CAPGRAPH_HALF_KINDS=smooth,noise: only those kinds (to study which input decides).
  const char *only = knob_get("CAPGRAPH_HALF_KINDS");
  for (CalibrationKind k : kCalibrationKinds)
    if (!only ||
        (std::string(",") + only + ",").find("," + std::string(calibration_kind_name(k)) + ",") !=
            std::string::npos)
      kinds.push_back(k);
  if (!own)
    for (CalibrationKind k : kinds) names.push_back(calibration_kind_name(k));
  for (size_t d = 0; d < names.size(); d++) {
    Draw dr;
    dr.name = names[d];
    for (size_t i = 0; i < p.inputs.size(); i++) {
      const Program::Port &in = p.inputs[i];
      const DType t = p.buffers[(size_t)in.buffer].dtype;
      std::vector<uint8_t> bytes(
          (size_t)(p.buffers[(size_t)in.buffer].numel * (int64_t)dtype_size(t)), 0);
      auto given = c.inputs.find(in.name);
      if (given != c.inputs.end()) {
        const Tensor &v = given->second;
        if (v.dtype != t || v.shape != in.shape)
          throw Error("--calibrate " + in.name + ": the model's input is " + dtype_name(t) + " " +
                      shape_str(in.shape) + ", the file holds " + dtype_name(v.dtype) + " " +
                      shape_str(v.shape));
        std::memcpy(bytes.data(), v.data(), std::min(bytes.size(), v.bytes->size()));
      } else {
        calibration_input_fill(kinds[d], t, in.shape, 0x63617067 + i, bytes);
      }
      dr.inputs.push_back(std::move(bytes));
    }
    cal.draws.push_back(std::move(dr));
  }
}

// One search on draw d (half_calibrate.h): `half` holds the float16 tensors, within the budget
// on d except for `cand` (in model order), which are float16 too when it starts. Leaves in
// `half` the float16 choice it found and writes each kept tensor's reason into `why`; returns
// the error on d as chosen.
double search(Calibrator &cal, size_t d, std::vector<size_t> cand, std::vector<char> &half,
              double budget, std::vector<std::string> &why, bool trace) {
  const Program &p = cal.p;
  for (size_t b : cand) half[b] = 0;
  // The saved state is the run of `half` without the candidates (error within the budget).
  RunError base = cal.run(half, d);
  cal.save(half, d);
  const int runs0 = cal.runs;
  size_t size = (cand.size() + kGroups - 1) / kGroups;
  while (!cand.empty()) {
    std::vector<std::vector<size_t>> groups;
    for (size_t i = 0; i < cand.size(); i += size)
      groups.emplace_back(cand.begin() + (long)i,
                          cand.begin() + (long)std::min(cand.size(), i + size));
    const size_t m = groups.size();
    size_t bisect = 0;
    while ((size_t(1) << bisect) < m + 1) bisect++;
    if (cal.runs - runs0 + (int)(m + bisect) > kMaxSearchRuns) {
      // What the last cut said stands, for its groups as a whole.
      for (size_t b : cand)
        why[b] = why[b].empty() ? "one of " + std::to_string(cand.size()) +
                                      " tensors left float32 whole: the float16 search's run "
                                      "limit (" +
                                      std::to_string(kMaxSearchRuns) + ") on " + cal.input_label(d)
                                : why[b] + "; not cut finer (the search's run limit, " +
                                      std::to_string(kMaxSearchRuns) + ")";
      break;
    }
    // Each group's harm: its float16 storage alone, beside what is float16 already.
    std::vector<RunError> alone(m);
    for (size_t g = 0; g < m; g++) {
      std::vector<char> h = half;
      for (size_t b : groups[g]) h[b] = 1;
      alone[g] = cal.run(h, d);
    }
    std::vector<size_t> worst(m);
    std::iota(worst.begin(), worst.end(), 0);
    std::stable_sort(worst.begin(), worst.end(),
                     [&](size_t x, size_t y) { return alone[x].err > alone[y].err; });
    auto rest = [&](size_t k) {  // float16 for every group but the k most harmful
      std::vector<char> h = half;
      for (size_t i = k; i < m; i++)
        for (size_t b : groups[worst[i]]) h[b] = 1;
      return h;
    };
    // The fewest most harmful groups kept float32 that leave the rest within the budget: more
    // than those over it alone, at most all (the saved state: within).
    size_t lo = 0, hi = m;
    for (size_t g = 0; g < m; g++) lo += alone[g].err > budget;
    RunError at_hi = base;
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      const std::vector<char> h = rest(mid);
      const RunError e = cal.run(h, d);
      if (e.err <= budget) {
        hi = mid;
        at_hi = e;
        cal.save(h, d);
      } else {
        lo = mid + 1;
      }
    }
    half = rest(hi);
    base = at_hi;
    if (trace)
      std::fprintf(stderr,
                   "half_calibrate: %s: %zu groups of up to %zu, %zu kept float32, error %.4g\n",
                   cal.draws[d].name.c_str(), m, size, hi, base.err);
    std::vector<size_t> next;
    for (size_t i = 0; i < hi; i++) {
      const size_t g = worst[i];
      const std::vector<size_t> &grp = groups[g];
      const std::string where = grp.size() == 1
                                    ? std::string("float16 here")
                                    : "float16 in its group of " + std::to_string(grp.size()) +
                                          " (" + buffer_label(p, grp.front()) + " .. " +
                                          buffer_label(p, grp.back()) + ")";
      const std::string verdict =
          alone[g].err > budget ? "over it with only the tensors already chosen float16 beside it"
                                : "one of the " + std::to_string(hi) + " most harmful of " +
                                      std::to_string(m) + ", kept to bring the rest within it";
      for (size_t b : grp) {
        next.push_back(b);
        why[b] = where + " puts output '" + p.outputs[alone[g].output].name + "' " +
                 number(alone[g].err) + " x its largest value from float32 on " +
                 cal.input_label(d) + " (budget " + number(budget) + "): " + verdict;
      }
    }
    std::sort(next.begin(), next.end(),
              [&](size_t x, size_t y) { return cal.start[x] < cal.start[y]; });
    cand = std::move(next);
    if (size == 1) break;
    size = (size + kRefine - 1) / kRefine;
  }
  return base.err;
}

}  // namespace

HalfCalibrationReport half_calibrate(const Program &p, HalfPlan &plan, const HalfCalibration &c) {
  const auto t0 = std::chrono::steady_clock::now();
  HalfCalibrationReport r;
  Calibrator cal(p, plan, c);
  draws_make(cal, p, c);
  const size_t nd = cal.draws.size();
  const bool own = nd == 1 && cal.draws[0].name == "own";
  const double budget = own ? c.budget_own : c.budget_generated;
  const bool trace = knob_get("CAPGRAPH_DEBUG_HALF") != nullptr;
  std::vector<double> reached(p.buffers.size(), 0);
  std::vector<size_t> reached_on(p.buffers.size(), 0);
  for (size_t d = 0; d < nd; d++) {
    std::vector<double> now(p.buffers.size(), 0);
    cal.reference(d, now);
    for (size_t b = 0; b < now.size(); b++)
      if (now[b] > reached[b]) reached[b] = now[b], reached_on[b] = d;
  }
  for (size_t b = 0; b < reached.size(); b++)
    if (plan.half[b] && reached[b] > kHalfSafeMax)
      plan.keep(b, "reaches " + number(reached[b]) + " on " + cal.input_label(reached_on[b]) +
                       ", near or past float16's largest value 65504");
  // Every candidate float16, on each input.
  std::vector<RunError> err(nd);
  for (size_t d = 0; d < nd; d++) {
    err[d] = cal.run(plan.half, d);
    if (trace)
      std::fprintf(stderr,
                   "half_calibrate: %s: every candidate float16: %.4g (output %s, largest %.4g)\n",
                   cal.draws[d].name.c_str(), err[d].err, p.outputs[err[d].output].name.c_str(),
                   cal.draws[d].ref_max[err[d].output]);
  }
  size_t worst = 0;
  for (size_t d = 1; d < nd; d++)
    if (err[d].err > err[worst].err) worst = d;
  r.error_all_half = err[worst].err;
  r.worst_input = cal.draws[worst].name;
  // Search on the input float16 harms most, then on any other still over the budget with what
  // is float16 by then (each input searched at most once).
  std::vector<std::string> why(p.buffers.size());
  std::vector<char> half = plan.half, searched(nd, 0);
  for (;;) {
    size_t d = nd;
    for (size_t i = 0; i < nd; i++)
      if (!searched[i] && err[i].err > budget && (d == nd || err[i].err > err[d].err)) d = i;
    if (d == nd) break;
    searched[d] = 1;
    std::vector<size_t> cand;
    for (size_t b = 0; b < half.size(); b++)
      if (half[b]) cand.push_back(b);
    std::stable_sort(cand.begin(), cand.end(),
                     [&](size_t x, size_t y) { return cal.start[x] < cal.start[y]; });
    err[d].err = search(cal, d, cand, half, budget, why, trace);
    // The others, with this choice (an input within the budget with every candidate float16 is
    // taken to stay so with fewer).
    for (size_t i = 0; i < nd; i++)
      if (i != d && err[i].err > budget) err[i] = cal.run(half, i);
  }
  for (size_t b = 0; b < half.size(); b++)
    if (plan.half[b] && !half[b]) plan.keep(b, why[b]);
  worst = 0;
  for (size_t d = 1; d < nd; d++)
    if (err[d].err > err[worst].err) worst = d;
  if (err[worst].err > budget)
    throw Error("float16 storage: output '" + p.outputs[err[worst].output].name + "' is " +
                number(err[worst].err) + " x its largest value from float32 on " +
                cal.input_label(worst) + " (budget " + number(budget) +
                ") whatever is kept float32; compile with --precision fp32");
  r.error = err[worst].err;
  r.runs = cal.runs;
  r.inputs = (int)nd;
  r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (trace)
    std::fprintf(stderr, "half_calibrate: %d runs, resumable %d, %.0f ms\n", r.runs,
                 (int)cal.resumable, r.ms);
  return r;
}

}  // namespace capgraph
