// What one GPU work item computes, shared by every GPU code generator (amdgpu_codegen,
// nvptx_codegen) and their host twins: global id i is the flat index of a point of the kernel's
// parallel space, innermost axis fastest; the item returns at once for i >= the element count
// (grids are rounded up to whole workgroups / thread blocks). One definition, so the AMD and
// NVIDIA kernels and the host-run work items compute the same kernel IR the same way.
#pragma once
#include <llvm/IR/Function.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Value.h>

#include <functional>
#include <string>

#include "codegen/gpu_tile.h"
#include "codegen/kernel_emit.h"

namespace capgraph {

// How the target's LLVM kernel reaches its ids and its workgroup barrier.
struct GpuIntrinsics {
  llvm::Intrinsic::ID group_id, local_id, barrier;
  bool barrier_fences = false;  // AMDGPU: s_barrier orders no memory; fence around it
};

// Emits the body of a planned kernel at the current insertion point (entry block of e.fn, slot
// pointers bound).
void gpu_tile_emit(KernelEmitter &e, const GpuTilePlan &plan, const GpuFacts &f,
                   const GpuIntrinsics &ids);

// Work items of the GPU launch: every point of the parallel space.
int64_t gpu_work_size(const Kernel &k);
// Work items the GPU kernel is launched with: gpu_work_size, or whole workgroups of a tiled
// kernel (gpu_tile.h).
int64_t gpu_launch_size(const Kernel &k, const Program &p, const GpuFacts &f);
// Work items run concurrently, so two must never store the same element: on the CPU such a kernel
// would merely be ordered, here it would race. True if the store moves with every parallel axis of
// extent > 1 (the scheduler's stores are row-major views of their outputs).
bool store_moves_with_every_item(const Kernel &k);
// Work item `gid` (i64): the output element it owns, if any. `acc` is the reduction's accumulator
// (gpu_acc_alloca), unused without a reduction.
void gpu_work_item_emit(KernelEmitter &e, llvm::Value *gid, llvm::Value *acc);
// The reduction accumulator, allocated in the entry block; nullptr without a reduction.
llvm::Value *gpu_acc_alloca(KernelEmitter &e);
// The kernel function every GPU code generator emits: one global pointer (address space 1) per
// slot, no alias between them; a tiled workgroup (gpu_tile.h) where the plan covers the kernel,
// else one work item at global id group * group_size + local, from the target's two id
// intrinsics. `attrs` sets the target's calling convention and attributes.
void gpu_kernel_emit(KernelEmitter &e, const std::string &symbol,
                     const std::function<void(llvm::Function *)> &attrs, const GpuIntrinsics &ids,
                     const GpuFacts &f);

}  // namespace capgraph
