// Kernel IR -> NIR (Mesa's shader IR), built in-process with nir_builder: the Adreno code
// generator's front half. Internal to codegen/adreno_*.cpp, which are the only files that include
// Mesa headers (compiled only when CAPGRAPH_ADRENO is on).
//
// The shader is an OpenCL-style compute kernel (MESA_SHADER_KERNEL): its parameters are read with
// load_kernel_input, which ir3 places in the constant file at a fixed allocation
// (IR3_CONST_ALLOC_KERNEL_PARAMS) instead of going through a UBO that ir3 may or may not push;
// adreno_codegen.cpp checks where they landed. Parameter i is the 64-bit GPU address of slot i
// (kernel_slots(): the stored buffer first, then the loaded ones), 8 bytes each, nothing else.
//
// Work items: like the AMD path, one work item per output element (global id = workgroup_id.x *
// workgroup size + local_id.x is the flat index of a point of the parallel space, innermost axis
// fastest), the reduction serial inside the work item. This is the simple correct lowering, not
// yet the GPU-shaped schedule (vec4 accesses, reductions across lanes) issue 12 asks for.
#pragma once
#include <cstdint>

#include "schedule/kernel.h"

struct nir_shader;
struct nir_shader_compiler_options;

namespace capgraph {

struct AdrenoNirKernel {
  nir_shader *shader = nullptr;  // ralloc'ed; the caller owns it
  uint32_t param_bytes = 0;      // bytes of kernel parameters (8 per slot)
  int64_t work_items = 0;        // points of the parallel space
};

// Builds the NIR of kernel `k` with the compiler's NIR options, `workgroup_size` work items per
// workgroup along x. Throws Error naming the kernel for what this lowering does not support
// (64-bit floats, buffers of 2^31 bytes or more).
AdrenoNirKernel adreno_nir_build(const Kernel &k, const Program &p, const nir_shader_compiler_options *options,
                                 int workgroup_size);

}  // namespace capgraph
