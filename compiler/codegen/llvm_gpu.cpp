#include "codegen/llvm_gpu.h"

#include <llvm/IR/LLVMContext.h>

#include <algorithm>

#include "codegen/gpu_work_item.h"
#include "error.h"

namespace capgraph {

CodegenResult llvm_gpu_codegen(const Program &p, const LlvmGpuFamily &f, int jobs) {
  CodegenResult c;
  c.kernels.resize(p.kernels.size());
  KernelDedupe d = kernels_dedupe(p);
  // A fixed number of objects, dealt round-robin, built by `jobs` threads: the capture is the same
  // whatever the thread count (issue 27, as cpu_codegen).
  const int n_obj = std::min<int>(kLlvmGpuObjects, std::max<int>((int)d.reps.size(), 1));
  for (size_t i = 0; i < p.kernels.size(); i++) {
    int u = d.unique_of[i];
    c.kernels[i].slots = kernel_slots(p.kernels[i]);
    c.kernels[i].symbol = kernel_symbol(p.kernels[d.reps[u]], u);
    c.kernels[i].object = u % n_obj;
    if (!store_moves_with_every_item(p.kernels[i]))
      throw Error("internal: kernel " + p.kernels[i].name + " stores one element from several " +
                  f.item_name);
  }
  c.unique_kernels = (int)d.reps.size();
  c.objects.resize(n_obj);
  std::vector<std::set<std::string>> spilled(n_obj);
  std::vector<char> untiled(d.reps.size(), 0), redo(n_obj, 1);
  for (int pass = 0; pass < 2; pass++) {
    parallel_pull(n_obj, jobs, [&](int o) {
      if (!redo[o]) return;
      std::unique_ptr<llvm::TargetMachine> tm = target_machine_create(f.triple, f.cpu, f.features);
      llvm::LLVMContext ctx;
      llvm::Module m(f.module_prefix + std::to_string(o), ctx);
      // Before emission: allocas live in the private address space the data layout names.
      m.setTargetTriple(f.triple);
      m.setDataLayout(tm->createDataLayout());
      for (size_t u = 0; u < d.reps.size(); u++) {
        if ((int)(u % n_obj) != o) continue;
        KernelEmitter e(m, p.kernels[d.reps[u]], p);
        f.kernel_emit(e, kernel_symbol(p.kernels[d.reps[u]], (int)u), !untiled[u]);
      }
      try {
        LlvmGpuObject built = f.object_build(o, m, *tm);
        c.objects[o] = std::move(built.bytes);
        spilled[o] = std::move(built.spilled);
      } catch (const Error &e) {
        throw Error(std::string(e.what()) + " (target " + f.target + ")");
      }
    });
    std::fill(redo.begin(), redo.end(), 0);
    for (size_t u = 0; u < d.reps.size(); u++)
      if (spilled[u % n_obj].count(kernel_symbol(p.kernels[d.reps[u]], (int)u)) && !untiled[u] &&
          gpu_tile_plan(p.kernels[d.reps[u]], p, f.gpu_facts(true)).ok)
        untiled[u] = 1, redo[u % n_obj] = 1;
  }
  for (size_t i = 0; i < p.kernels.size(); i++) {
    c.kernels[i].work_size =
        gpu_launch_size(p.kernels[i], p, f.gpu_facts(!untiled[d.unique_of[i]]));
    if (c.kernels[i].work_size > f.max_work_size)
      throw Error("kernel " + p.kernels[i].name + ": " + std::to_string(c.kernels[i].work_size) +
                  " output elements are too many for one " + f.target + " " + f.launch_name);
  }
  return c;
}

}  // namespace capgraph
