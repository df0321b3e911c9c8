// The GPU schedule for product kernels (convolutions, matrix products): a workgroup computes a
// tile of the output held in registers, and the reduction is staged through workgroup-shared
// memory (AMD LDS, NVIDIA shared memory) in chunks, so each global value loaded feeds many
// multiply-adds. Kernels it does not cover keep one work item per output element
// (gpu_work_item.h).
//
// The kernel's parallel axes split three ways by the body's two loads `a * b`:
//   batch axes: both loads move with them (a batched product); one per workgroup;
//   m axes: only `a` moves with them (a convolution's batch and pixels: its body is x * w; a
//     product's rows);
//   n axes: only `b` moves with them (a convolution's output channels, a product's columns).
// Flattened, m and n make an M x N output per batch point, tiled by TM x TN per workgroup: lane
// (lm, ln) of the lanes_m x lanes_n lane grid owns the micro tile rows [lm*tm, lm*tm+tm) and
// columns [ln*tn, ln*tn+tn), tm*tn accumulators in registers. The reduction walks its `outer`
// axes one point at a time (uniform across the workgroup) and its `chunk` axis kc at a time:
// each chunk the workgroup stages a [kc][TM] slab of `a` and a [kc][TN] slab of `b` in shared
// memory (zero where the point is outside the tile, the reduction, or a padded border), waits
// at a barrier, and every lane does kc * tm * tn fused multiply-adds from it. The epilogue
// (bias, activations, residual adds: the kernel's `result`) runs per accumulator as elsewhere.
//
// Global bytes loaded per multiply-add: 4 * (TM + TN) / (TM * TN), 0.125 for 64 x 64 tiles
// against the 8 of one work item per output (two floats per multiply-add).
//
// The plan is plain data without LLVM types, decided from the kernel and the target's facts only,
// so every GPU code generator can follow it: LLVM's (AMDGPU, NVPTX: gpu_tile_emit in
// gpu_work_item.h) and Adreno's NIR (adreno_nir_emit.cpp: tile_emit).
#pragma once
#include <cstdint>
#include <vector>

#include "schedule/kernel.h"

namespace capgraph {

// What a GPU target tells the schedule (amd_target.h, nv_target.h hold the values and sources).
// Adreno's come from its AdrenoTarget (adreno_codegen.h).
struct GpuFacts {
  unsigned group_size = 256;      // work items per workgroup / thread block (1-D)
  unsigned wave_size = 32;        // lanes that execute together
  unsigned shared_bytes = 65536;  // LDS / shared memory one workgroup may use
  unsigned registers = 256;       // 32-bit vector registers one work item may use
  // Whether an operand may be a float16 load widened to float32 (cast(load f16)): the emitter
  // converts as it stages (Adreno's NIR emitter; the LLVM ones stage float32 only).
  bool half_operands = false;
  // Whether operand `a` may be an elementwise expression of loads rather than one load: a producer
  // folded into the product (program_fuse_operand_producers: a camera frame's cast and scale, a
  // squeeze-excitation's channel scale), evaluated as it is staged (Adreno's NIR emitter; the
  // LLVM ones stage loads only).
  bool expr_operands = false;
  // Accumulators per work item along m and n (the micro tile). 4 x 4 for every target by
  // default; Adreno's emitter also takes 8 (tm, tn in {4, 8}), and its code generator picks
  // among shapes per kernel (adreno_tile_choice.h).
  unsigned micro_m = 4, micro_n = 4;
  // Staging elements per work item whose global loads are issued together before they are
  // stored to shared memory (Adreno's emitter; the LLVM ones leave this to LLVM's scheduler).
  unsigned stage_batch = 1;
  // Two sets of slabs, alternate chunks in each: one barrier per chunk instead of two, for twice
  // the shared memory (Adreno's emitter; the LLVM ones stage into one set).
  bool double_buffer = false;
};

struct GpuTilePlan {
  bool ok = false;
  int a = -1, b = -1;  // the body's loads (indices into Kernel::loads)
  // Where a is an expression (GpuFacts::expr_operands): the expression staged (its value, rounded
  // to float16 where elem_a is 2), and `a` its load that moves with the most axes (its skip bounds
  // are the operand's padding). -1 where a is the plain load `a`.
  int a_expr = -1;
  std::vector<int> batch, m, n;        // parallel axes of extent > 1, outermost first
  int chunk = -1;                      // the reduction axis staged kc at a time
  std::vector<int> outer;              // the other reduction axes of extent > 1
  int64_t batches = 1, M = 1, N = 1;   // flattened extents
  int64_t lanes_m = 16, lanes_n = 16;  // lane grid, lanes_m * lanes_n == group_size
  int64_t tm = 4, tn = 4;              // accumulators per lane along m and n
  int64_t kc = 16;                     // reduction points per chunk
  // Bytes per staged element of a and b: 4, or 2 where the operand is float16 and the target
  // stages it as it is (GpuFacts::half_operands; widened when read from shared memory).
  int64_t elem_a = 4, elem_b = 4;
  int64_t buffers = 1;  // sets of slabs (GpuFacts::double_buffer: 2)
  int64_t tiles_m = 1, tiles_n = 1;
  // Where a lane's accumulators are neighbours in the output, in groups of 4: 'n' when each 4
  // consecutive accumulators of a row (tn a multiple of 4) are consecutive elements of the
  // stored buffer (the innermost n axis has stride 1 and a multiple of 4 points, the store has no
  // bounds), 'm' likewise for the tm of a column, 0 when neither. An emitter may then store each
  // 4 as one vector (Adreno: one vec4 stg).
  char store_vector = 0;
  int64_t TM() const { return lanes_m * tm; }
  int64_t TN() const { return lanes_n * tn; }
  int64_t groups() const { return batches * tiles_m * tiles_n; }
  int64_t shared_bytes() const { return buffers * kc * (elem_a * TM() + elem_b * TN()); }
};

// The plan for kernel k on a target with facts f, or one with ok == false (the kernel keeps one
// work item per output element). CAPGRAPH_GPU_NO_TILE=1 disables it (the naive lowering, for
// comparisons).
GpuTilePlan gpu_tile_plan(const Kernel &k, const Program &p, const GpuFacts &f);

}  // namespace capgraph
