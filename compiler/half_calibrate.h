// The per-tensor float32 fallback of float16 storage (`--precision fp16`; issue 28): which of
// the tensors the rules (schedule/half_storage.h) would store as float16 actually spoil the
// model's result, found by running it. The program runs on this CPU (codegen/host_run.h) on a
// calibration input twice: as it is, in float32 (the reference), and with every float16 candidate
// rounded to float16 where it is stored (weights once, each activation after the kernel that
// writes it: exactly what the device does, whose kernels widen on load and compute in float32).
// Then:
//   - a candidate whose reference values come within a factor 2 of float16's largest (65504) stays
//     float32 ("reaches 41200 on the calibration input, near or past float16's largest value");
//   - when an output then differs from its reference by more than the budget (a third of the
//     stated float16 tolerance, 3e-2 x max |reference|, on a generated input; half of it on the
//     model's own), a bisection over the candidates in the
//     order the model makes them (an activation where it is stored, a weight where it is first
//     read) finds the longest run from the start whose float16 storage stays within the budget;
//     the tensor T after it tips it over. If every candidate but T in float16 is within the budget
//     (one more run), T alone stays float32 ("float16 here puts output 'y' 0.25 x ..."); else T
//     and everything after it do (a network's float16 error is spread over all its tensors, and
//     a trained CNN's is: PP-OCRv4 det on its own page is 0.04 from float32 with only its first
//     convolution's weights in float16).
// Each kept tensor is named with what float16 did to it. The result is only as good as the
// calibration input: a generated one (no --calibrate) is a normalised-image guess, and it
// under-predicts det's sensitivity (0.028 there with every tensor float16, 0.0865 on det's own
// page): give the model's own input where its values matter. An error still above the budget
// after the fallback refuses the compile naming the output, rather than writing a capture that is
// silently wrong on that input. Elements whose float32 reference is not finite are not compared;
// a finite reference whose float16 value is not counts as an infinite error.
#pragma once
#include <map>
#include <string>

#include "graph/tensor.h"
#include "schedule/half_storage.h"

namespace capgraph {

struct HalfCalibration {
  // The model's own input values by input name (`compile --calibrate NAME=FILE.npy`); inputs not
  // named here get generated values: float inputs a fixed pseudo-random normal (mean 0, deviation
  // 1: a normalised image), uint8 the whole 0..255 range, other types 0.
  std::map<std::string, Tensor> inputs;
  // max |float16 - float32| / max |float32| allowed per output: a third of the tolerance the
  // float16 captures are tested at (3e-2) on a generated input, half of it on the model's own
  // (every input given: its error is the one measured, up to the device's summation order).
  double budget_generated = 1e-2, budget_own = 1.5e-2;
  int jobs = 1;  // compile threads for the host run
};

struct HalfCalibrationReport {
  int runs = 0;               // host runs made (the reference included)
  double error = 0;           // the worst output's relative difference after the fallback
  double error_all_half = 0;  // the same with every candidate float16 (before the fallback)
  double ms = 0;              // time taken
};

// Runs p (float32, after fusion) and keeps float32 in `plan` what spoils it, with the reason.
// Throws Error naming the output when no choice of float32 tensors gives a finite result.
HalfCalibrationReport half_calibrate(const Program &p, HalfPlan &plan, const HalfCalibration &c);

}  // namespace capgraph
