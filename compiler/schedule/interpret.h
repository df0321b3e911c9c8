// Runs kernels on the host, one element at a time: the reference semantics of the kernel IR.
// Used for constant folding (an op on constants is lowered like any other op, then interpreted),
// and by tests as the oracle that generated code is compared with.
#pragma once
#include <cstdint>
#include <vector>

#include "schedule/kernel.h"

namespace capgraph {

// buffers[i] points at Program::buffers[i]'s storage (numel * dtype size bytes). Throws Error if
// the kernel reads outside a buffer where its bounds claim that cannot happen.
void kernel_interpret(const Kernel &k, const Program &p, const std::vector<uint8_t *> &buffers);

// Element conversions shared with the folder: value of element i of a buffer of dtype t.
double element_load(DType t, const uint8_t *base, int64_t i);
void element_store(DType t, uint8_t *base, int64_t i, double v);
// The value `v` rounded the way a result of dtype t is (float32 rounding, integer truncation).
double value_as(DType t, double v);

}  // namespace capgraph
