// The CPU layout for matrix-vector products against row-major weights (issue 17): Gemm/MatMul
// whose output row cannot be channel-blocked (a 512 -> 4955 fully connected head: 4955 is no
// multiple of 8), so neither register tile applies. At batch 1 such a product reads every weight
// once and does one multiply-add per weight: it is bound by memory bandwidth, and the layout's
// only job is to stream the weights at full vector width.
//
// body = W * X with one reduction axis r, W contiguous along r and moving with the output axis n
// (the innermost parallel one), X contiguous along r and independent of n. One work item
// computes R consecutive outputs n: R vector accumulators walk the R weight rows and X together,
// L lanes per step (a masked step for the remainder of r), then each is summed across its lanes
// and goes through the kernel's result expression. The rows of one item are R sequential streams,
// which the hardware prefetchers follow; X stays in L1.
//
// A few rows of X (a batch of 2-8, two frames, a short sequence: issue 27's products with small
// M) share one pass over W: each item computes its outputs for up to 8 rows m of X at once, so W
// is streamed ceil(M / 8) times instead of M times (it was 3.5-4.5x slower than ONNX Runtime at
// 2 and 8 rows by a 512 x 4955 weight).
#pragma once
#include <cstdint>

#include "codegen/cpu_target.h"
#include "schedule/kernel.h"

namespace llvm {
class Value;
}

namespace capgraph {

struct KernelEmitter;  // codegen/kernel_emit.h (LLVM): the plan is usable without LLVM headers

struct MatvecPlan {
  bool ok = false;
  int w = -1, x = -1;  // loads: W moves with n, X does not
  int n = -1, r = -1;  // the output axis (innermost parallel) and the reduction axis
  int64_t R = 8;       // outputs per work item (along_n: vectors of outputs)
  // The rows: a parallel axis X moves with and W does not (-1: none), and how many of its points
  // one item computes (the last block clamps to the last row, recomputing it).
  int m = -1;
  int64_t rows = 1;
  // W contiguous along n instead (W [K, N] row-major: a MatMul by a weight, an attention
  // product): R vectors of L consecutive outputs per work item, X broadcast per reduction step,
  // masked loads for the last outputs, the result expression per output at the end.
  bool along_n = false;
  int lanes = 8;  // f32 lanes per vector (the target's)
};

// The plan for kernel k on target t, or one with ok == false. CAPGRAPH_NO_TILE=1 disables it.
MatvecPlan matvec_plan(const Kernel &k, const Program &p, const CpuTarget &t);
// Work items: the outer parallel points times ceil(N / R) (ceil(N / (R L)) along n).
int64_t matvec_work_size(const Kernel &k, const MatvecPlan &mp);
// Emits one work item `w` (the caller loops over its range).
void matvec_emit(KernelEmitter &e, const MatvecPlan &mp, llvm::Value *w);

}  // namespace capgraph
