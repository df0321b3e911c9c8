// Kernel fusion: an elementwise kernel that is the only reader of its producer's output is merged
// into the producer, so activations, bias adds, residual adds and BatchNorm scale/shift become
// the epilogue of the convolution or matrix product before them and their intermediate buffers
// disappear.
#pragma once
#include "schedule/kernel.h"

namespace capgraph {

// Fuses in place; returns how many kernels were merged away.
int program_fuse(Program &p);

// Removes buffers no kernel reads or writes (renumbering the rest).
void program_prune_buffers(Program &p);

}  // namespace capgraph
