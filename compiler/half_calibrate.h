// The per-tensor float32 fallback of float16 storage (`--precision fp16`, adreno-a630's default;
// issue 28): which of the tensors the rules (schedule/half_storage.h) would store as float16
// actually spoil the model's result, found by running it. The program runs on this CPU
// (codegen/host_run.h) on calibration inputs: as it is, in float32 (the reference), and with
// float16 candidates rounded to float16 where they are stored (weights once, each activation
// after the kernel that writes it: exactly what the device does, whose kernels widen on load and
// compute in float32). The inputs are the model's own (`--calibrate NAME=FILE.npy`) or, without
// them, four generated ones of different kinds (half_calibrate_inputs.h: smooth fields, a text
// page, multi-scale texture, independent noise), and every decision holds on the worst of them.
// Then:
//   - a candidate whose reference values come within a factor 2 of float16's largest (65504) on
//     any input stays float32 ("reaches 41200 on the calibration input 'page', near or past
//     float16's largest value");
//   - when an output then differs from its reference by more than the budget (a third of the
//     stated float16 tolerance, 3e-2 x max |reference|, on generated inputs; half of it on the
//     model's own), a search keeps float32 the tensors that contribute most: on the input where
//     float16 does most harm, the candidates (in the order the model makes them) are cut into at
//     most 16 groups, each group's error measured alone in float16 (one run each), and the
//     fewest most harmful groups kept float32 that bring the rest within the budget (a bisection
//     over how many, in order of harm); the kept groups are then cut 4 times finer and the same
//     done among them, with the groups found harmless in float16, down to single tensors. Then
//     the result is checked on every other input, and searched again from there on one that is
//     over the budget. A run limit bounds it (kMaxSearchRuns per search: where it is reached the
//     groups still in question stay float32 whole); runs after the first group start at the
//     first kernel they change, from a saved state.
// Each kept tensor is named with what float16 did to it. The result is only as good as the
// calibration inputs: a real input unlike all of them can still be more sensitive (give it with
// --calibrate where the values matter). An error still above the budget after the fallback
// refuses the compile naming the output, rather than writing a capture that is silently wrong on
// that input. Elements whose float32 reference is not finite are not compared; a finite
// reference whose float16 value is not counts as an infinite error.
#pragma once
#include <map>
#include <string>

#include "graph/tensor.h"
#include "schedule/half_storage.h"

namespace capgraph {

struct HalfCalibration {
  // The model's own input values by input name (`compile --calibrate NAME=FILE.npy`); inputs not
  // named here get generated values (half_calibrate_inputs.h), one draw of each kind.
  std::map<std::string, Tensor> inputs;
  // max |float16 - float32| / max |float32| allowed per output: a third of the tolerance the
  // float16 captures are tested at (3e-2) on generated inputs, half of it on the model's own
  // (every input given: its error is the one measured, up to the device's summation order).
  double budget_generated = 1e-2, budget_own = 1.5e-2;
  int jobs = 1;  // compile threads for the host run
};

struct HalfCalibrationReport {
  int runs = 0;               // host runs made (the references included)
  int inputs = 0;             // calibration inputs (draws) measured on
  std::string worst_input;    // the one float16 did most harm to: "own", or a kind's name
  double error = 0;           // the worst output's relative difference after the fallback
  double error_all_half = 0;  // the same with every candidate float16 (before the fallback)
  double ms = 0;              // time taken
};

// Runs p (float32, after fusion) and keeps float32 in `plan` what spoils it, with the reason.
// Throws Error naming the output when no choice of float32 tensors gives a finite result.
HalfCalibrationReport half_calibrate(const Program &p, HalfPlan &plan, const HalfCalibration &c);

}  // namespace capgraph
