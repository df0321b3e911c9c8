// NVIDIA GPU code generation: kernel IR -> LLVM IR (NVPTX kernels) -> PTX (LLVM's NVPTX backend)
// -> cubins (ptxas, run as a subprocess), with every kernel's launch facts read back from its
// cubin (nv_cubin.h). The runtime never compiles: the capture carries the cubins.
//
// One GPU thread computes one output element, exactly as on AMD (codegen/gpu_work_item.h): global
// id i = ctaid.x * block_size + tid.x. Blocks are 1-D of NvTarget::block_size threads, required by
// `.reqntid` (so ptxas may rely on it and the cubin says so). Kernel parameters are the kernel's
// slots (kernel_slots(): the stored buffer first, then the loaded ones) as 64-bit global pointers,
// nothing else; the cubin says where in constant bank 0 they go (EIATTR_PARAM_CBANK).
#pragma once
#include <string>
#include <vector>

#include "codegen/cpu_codegen.h"
#include "nv_cubin.h"
#include "nv_target.h"

namespace capgraph {

struct NvCodegenResult {
  // objects: cubins; kernels: per Program kernel, work_size = GPU threads.
  CodegenResult code;
  std::vector<std::string> ptx;      // per object: the PTX ptxas assembled
  std::vector<NvKernelFacts> facts;  // per Program kernel
  std::string ptxas, ptxas_version;  // which ptxas made the cubins ("release 13.0, V13.0.88")
};

// The ptxas to use: $CAPGRAPH_PTXAS if set (an error if it is not an executable file; "none" means
// no ptxas, as on a machine without the toolkit), else the
// first executable of: every directory of $PATH, $CUDA_PATH/bin, /usr/local/cuda/bin, /usr/bin.
// Empty when there is none.
std::string ptxas_find();
// `ptxas --version`'s release line, e.g. "Cuda compilation tools, release 13.0, V13.0.88".
std::string ptxas_version(const std::string &ptxas);

// Compiles every kernel; `jobs` cubins are built in parallel threads. Throws an Error naming the
// kernel and target when LLVM, ptxas or the cubin checks fail, and one saying how to get ptxas
// when there is none.
NvCodegenResult nvptx_codegen(const Program &p, const NvTarget &t, int jobs);

}  // namespace capgraph
