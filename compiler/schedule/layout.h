// Memory layouts chosen for the CPU's vector units, decided once at compile time.
//
// Channel blocking (NCHWc): an intermediate activation [N, C, H, W] whose C is a multiple of the
// block is stored as [N, C/CB, H, W, CB], so the CB channels of one pixel are one vector (CB = 16
// on AVX-512 targets, 8 on AVX2 and NEON: the target's CpuTarget::channel_block). Every
// kernel touching it gets its channel axis split into (outer, inner 8), the inner one moved
// innermost; a convolution then computes 8 output channels per vector at any stride, reads each
// input pixel's channels as consecutive scalars, and its weights become one contiguous stream.
// Model inputs and outputs keep the ONNX layout (the kernels next to them convert on the fly).
#pragma once
#include "schedule/kernel.h"

namespace capgraph {

// The narrow channel block: 8 f32 lanes (one AVX2 vector, two NEON vectors, half an AVX-512
// one). Every target's widest block is a multiple of it; buffers whose channels do not divide by
// the widest use it.
constexpr int64_t kChannelBlock = 8;

// Blocks every intermediate that all its kernels index by one channel axis (see above), rewrites
// those kernels, and merges the position axes of the ones that then read pixels contiguously.
// Each buffer gets the `widest` block where its channels (and Concat slices) allow, else 8; a
// kernel axis touching buffers of both makes the wide ones narrow. Returns how many buffers were
// blocked.
int program_block_channels(Program &p, int64_t widest = kChannelBlock);

// Matrix products against a constant (Gemm, MatMul by weights) whose weight is strided along the
// output row: splits the row into blocks of `widest` (or 8) outputs, so the weights can be packed
// for them.
int program_block_products(Program &p, int64_t widest = kChannelBlock);

// Re-lays out each constant read by exactly one access of a channel-blocked kernel so that the
// kernel's loop order walks it contiguously (outer parallel axes, reduction axes in order, then
// the channel block): convolution weights become one sequential stream. Returns how many.
int program_pack_weights(Program &p, int64_t widest = kChannelBlock);

// Products whose constant weight is contiguous along an output row that no block divides (a
// MatMul by a [K, N] weight, N = 4955: program_block_products leaves it): the weight is re-laid
// out with the reduction innermost ([N, K]), so each output reads one contiguous stream
// (codegen/cpu_matvec.h's dot layout) instead of one element per weight row N * 4 bytes apart:
// every reduction step a new page, which the prefetchers do not follow. Returns how many.
int program_pack_row_weights(Program &p, int64_t widest = kChannelBlock);

}  // namespace capgraph
