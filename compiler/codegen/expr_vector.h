// Which kernel expressions the CPU code generator may evaluate in vector form
// (KernelEmitter::lanes: a channel tile's epilogue L channels at once, a fake-quantizing map
// `width` elements at once), and the value ranges that decide when a cast through an integer type
// keeps its value. No LLVM here: the tests ask these questions of scheduled programs directly.
#pragma once

#include <cmath>

#include "schedule/kernel.h"

namespace capgraph {

// The values a kernel expression can take as far as its ops tell (NaN aside): [lo, hi], and
// whether every value is an integer. A float32 expression from float inputs is unbounded.
struct ValueRange {
  double lo = -INFINITY, hi = INFINITY;
  bool integral = false;
};
ValueRange expr_range(const Kernel &k, const Program &p, int i);
// Whether expression `root` can be evaluated in vector form along `axis` (KernelEmitter::lanes):
// float32 arithmetic, rounding and clamps on plain loads (contiguous along the axis or independent
// of it), integer loads widened to float, and casts through an integer type that keep the value.
bool expr_vector_evaluable(const Kernel &k, const Program &p, int root, int axis);
// Whether expression `root` holds a float -> integer -> float cast pair (a fused QuantizeLinear +
// DequantizeLinear: the saturating conversion keeps LLVM's loop vectorizer out).
bool expr_holds_integer_round_trip(const Kernel &k, int root);

}  // namespace capgraph
