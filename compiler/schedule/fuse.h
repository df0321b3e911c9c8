// Kernel fusion: an elementwise kernel that is the only reader of its producer's output is merged
// into the producer, so activations, bias adds, residual adds and BatchNorm scale/shift become
// the epilogue of the convolution or matrix product before them and their intermediate buffers
// disappear.
#pragma once
#include <map>

#include "schedule/kernel.h"

namespace capgraph {

// Fuses in place; returns how many kernels were merged away.
int program_fuse(Program &p);

// Merges adjacent parallel axes that every access walks as one contiguous range (a 1x1
// convolution's or an elementwise op's (h, w) becomes one axis of h*w), so short rows become long
// ones the code generator can vectorise. Returns how many axes were merged away.
int program_merge_axes(Program &p);

// An access's element offset as base + sum(coef[axis] * i[axis]) over the axes of extent > 1
// (zero coefficients left out); false if it is not linear (bounds, gathers, divisions).
bool access_linear(const Access &a, const Shape &axes, std::map<int, int64_t> &coef, int64_t &base);

// Axes a and a + 1 of k walk every access as one range (coef(a) == coef(a+1) * extent(a+1)).
bool axes_mergeable(const Kernel &k, int a);
// Replaces axes a and a+1 with one axis a of their product; later axes shift down by one.
void axes_merge(Kernel &k, int a);

// Removes buffers no kernel reads or writes (renumbering the rest).
void program_prune_buffers(Program &p);

}  // namespace capgraph
