// Kernel fusion: an elementwise kernel that is the only reader of its producer's output is merged
// into the producer, so activations, bias adds, residual adds and BatchNorm scale/shift become
// the epilogue of the convolution or matrix product before them and their intermediate buffers
// disappear.
#pragma once
#include <functional>
#include <map>

#include "schedule/kernel.h"

namespace capgraph {

// Fuses in place; returns how many kernels were merged away.
int program_fuse(Program &p);

// Folds the cast and scale of an integer camera frame into the products reading it: a kernel
// computing an affine chain of one uint8 / int8 graph input (Cast to float, then Add / Sub / Mul /
// Div by constants or constant tensors such as per-channel means) whose every reader is a product
// (convolution, matrix product) taking it as one operand is evaluated inside those products' input
// loads instead, so they read the 1-byte input and its float copy disappears. The products keep
// their skip bounds on the input: a padded point adds nothing, as the float graph's zero padding
// does (not the chain applied to a zero byte). Constants indexed through a bounded dim refuse.
// `accept` sees each rewritten product and may refuse it (the CPU takes only products its channel
// tile runs); one refusal keeps the chain's kernel as it is. Returns how many chains were folded.
int program_fuse_input_casts(Program &p, const std::function<bool(const Kernel &)> &accept);
// The same for any elementwise kernel (arithmetic, casts and sigmoid of loads and constants:
// a camera frame's cast and scale, a squeeze-excitation's channel scale, a ReLU) one of whose
// loads reads the element it writes: its float32 or float16 output becomes an expression of the
// products' operand, evaluated as they stage it (a float16 one keeps its rounding), and its
// buffer disappears. For GPU targets whose tile schedule stages expressions (GpuFacts::
// expr_operands); `accept` as above. Returns how many kernels were folded.
int program_fuse_operand_producers(Program &p, const std::function<bool(const Kernel &)> &accept);
// Whether expression i of k is such a chain: Cast to f32 of one uint8 / int8 graph-input load (*x
// gets the load, *x_expr its expression; it must appear once), then Add / Sub / Mul / Div / Neg
// with constants and plainly indexed constant buffers.
bool expr_input_affine(const Kernel &k, const Program &p, int i, int *x, int *x_expr);

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
