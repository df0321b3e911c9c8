// AMD GPU code generation: kernel IR -> LLVM IR (amdgpu_kernel functions) -> linked HSA code
// objects, with every kernel's launch facts read back from its descriptor and metadata note.
//
// One GPU work item computes one output element: global id i (workgroup_id.x * workgroup_size +
// local_id.x) is the flat index of a point of the kernel's parallel space, innermost axis
// fastest; the kernel returns at once for i >= the element count (the grid is rounded up to whole
// workgroups). Kernel arguments are the kernel's slots (kernel_slots(): the stored buffer first,
// then the loaded ones) as 64-bit global pointers, nothing else: no hidden arguments, no scalars.
// The body comes from the same KernelEmitter as the CPU code (codegen/kernel_emit.h), so a GPU
// kernel and its host twin compute the same kernel IR.
#pragma once
#include <vector>

#include "amd_target.h"
#include "amdgpu_code_object.h"
#include "codegen/cpu_codegen.h"

namespace capgraph {

struct AmdCodegenResult {
  // objects: linked code objects; kernels: per Program kernel, work_size = GPU work items.
  CodegenResult code;
  std::vector<AmdKernelFacts> facts;  // per Program kernel
};

// Compiles every kernel; `jobs` code objects are built in parallel threads. Throws an Error
// naming the kernel and target when LLVM or the code-object checks fail.
AmdCodegenResult amdgpu_codegen(const Program &p, const AmdTarget &t, int jobs);

// For tests on machines without an AMD GPU: the very same work items (index decomposition, bounds
// guard, body) behind the CPU kernel ABI, compiled for the host CPU `t`; work range = GPU work
// items. Built into an ordinary CPU capture, it runs on the CPU runtime, so what the GPU kernels
// compute can be compared with the host twins.
CodegenResult amdgpu_codegen_on_host(const Program &p, const CpuTarget &t);

}  // namespace capgraph
