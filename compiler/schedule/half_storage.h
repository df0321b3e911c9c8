// Half-precision storage (`--precision fp16`, the default of targets whose entry says so: Adreno).
// Every float32 weight and intermediate activation is stored as float16 and every kernel still
// computes in float32: loads widen, stores round to nearest even, accumulators stay float32 — what
// tinygrad's FLOAT16=1 does for comma's models on the a630 (x.cast(half) stored, math in float;
// ../shared/research/adreno_perf.md §3). Halving the bytes is what an a630 kernel bound by
// memory, shared memory or the texture cache needs (the cost model's bounds, a630_estimate.h).
//
// Model inputs and outputs keep their ONNX types: the kernels at the edges convert as they load
// and store, so a bound uint8 camera frame is still read in place. A tensor whose float16 value
// could be wrong stays float32 and is named in the report:
//   - a weight with a finite value past float16's largest, 65504 (it would become infinity);
//   - an activation the compiler cannot bound and whose size grows with the data rather than
//     being renormalised by the model: written by a sum or product reduction that is not a product
//     of two tensors (ReduceSum, softmax's denominator, a norm's sums, average pooling: the sum
//     grows with the reduction's length), or whose value ends in exp or pow (exp overflows float16
//     from 11.1 on). Everything else (convolution and matrix product outputs, activations,
//     elementwise chains) is float16, as in tinygrad's and comma's runs: a trained CNN's
//     activations are normalised by its BatchNorms. What the rules cannot see (a tensor whose
//     float16 rounding an output amplifies, values past 65504 on real data) the calibration run
//     finds and keeps float32 too (half_calibrate.h: half_plan, then half_calibrate, then
//     program_store_half with the plan).
#pragma once
#include <string>
#include <vector>

#include "schedule/kernel.h"

namespace capgraph {

// Which buffers become float16: per Program buffer, whether it does and, for a float32 buffer the
// rules (or the calibration, half_calibrate.h) leave float32, why ("" otherwise).
struct HalfPlan {
  std::vector<char> half;
  std::vector<std::string> why;
  // Keeps buffer b float32 for `reason` (the report names it).
  void keep(size_t b, std::string reason) {
    half[b] = 0;
    why[b] = std::move(reason);
  }
};

struct HalfStorageReport {
  int buffers = 0;                // float32 buffers now float16 (weights and intermediates)
  int64_t bytes_saved = 0;        // their bytes halved
  std::vector<std::string> kept;  // "NAME (reason)" for each one left float32
};

// The rules above, on p after fusion (only buffers that are stored are converted).
HalfPlan half_plan(const Program &p);
// Rewrites p in place as `plan` says.
HalfStorageReport program_store_half(Program &p, const HalfPlan &plan);
// Both: the rules alone, no calibration.
HalfStorageReport program_store_half(Program &p);

// Whether any buffer of the program is float16: a compile with float16 storage, whose GPU kernels
// may take paths float32 captures do not (those stay as they were).
bool program_has_half(const Program &p);

// A buffer's name for messages: its ONNX value, or "buffer N".
std::string buffer_label(const Program &p, size_t b);

}  // namespace capgraph
