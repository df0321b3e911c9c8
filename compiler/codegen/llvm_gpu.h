// The LLVM driver every GPU family with an LLVM backend shares (AMDGPU: amdgpu_codegen, NVPTX:
// nvptx_codegen): structurally equal kernels compiled once (kernels_dedupe), the unique kernels
// dealt round-robin to `jobs` objects built on parallel threads, one LLVM module per object with
// the target's triple and data layout, and one more pass over the objects holding a tiled kernel
// whose registers spilled (the runtimes set up no scratch / local memory, so such a kernel is
// compiled again untiled). A family gives its target machine, its kernel function (the body is
// gpu_kernel_emit's), how an object is built and read back, and its launch limit; it keeps its
// kernel ABI checks.
#pragma once
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "codegen/cpu_codegen.h"
#include "codegen/gpu_tile.h"
#include "codegen/kernel_emit.h"

namespace capgraph {

// What one object of a family comes to.
struct LlvmGpuObject {
  std::vector<uint8_t> bytes;     // what the capture carries: a linked code object, a cubin
  std::set<std::string> spilled;  // kernel symbols given scratch / local memory by the backend
};

// What a GPU family tells the driver.
struct LlvmGpuFamily {
  std::string target;  // the target's name, for errors ("amd-gfx1100")
  std::string triple, cpu, features;
  std::string module_prefix;  // object o's LLVM module is module_prefix + o
  const char *item_name;      // what computes one output element ("work items", "threads")
  const char *launch_name;    // one kernel run ("dispatch", "launch")
  int64_t max_work_size;      // the most work items one launch may have
  // The chip's facts as tiling sees them; `tile` false: those of a chip without workgroup
  // memory, so no kernel is tiled (gpu_tile_plan).
  std::function<GpuFacts(bool tile)> gpu_facts;
  // The kernel function `symbol` (gpu_kernel_emit with the family's attributes and intrinsics).
  std::function<void(KernelEmitter &e, const std::string &symbol, bool tile)> kernel_emit;
  // Builds object `o` from its module (which it may keep, say as assembly text) and reads its
  // kernels' facts back. Runs on the object's thread; `o` < kLlvmGpuObjects, so a family may
  // size its per-object storage by that.
  std::function<LlvmGpuObject(int o, llvm::Module &m, llvm::TargetMachine &tm)> object_build;
};

// The most objects llvm_gpu_codegen writes: a fixed number (fewer only with fewer unique kernels),
// built by `jobs` threads, so that the capture does not depend on the thread count.
constexpr int kLlvmGpuObjects = 8;

// Compiles every kernel of `p`: objects, and per Program kernel its slots, symbol, object and
// work size (work items, tiled kernels in whole workgroups). Throws an Error naming the kernel and
// target when LLVM or the family's object_build fails, or when a kernel stores one element from
// several work items or needs more than max_work_size of them.
CodegenResult llvm_gpu_codegen(const Program &p, const LlvmGpuFamily &f, int jobs);

}  // namespace capgraph
