#include "amdgpu_codegen.h"

#include <llvm/IR/CallingConv.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>

#include <algorithm>

#include "codegen/gpu_work_item.h"
#include "codegen/kernel_emit.h"
#include "codegen/llvm_gpu.h"
#include "error.h"

namespace capgraph {

namespace {

using llvm::Value;

// Attributes that keep the kernel free of hidden arguments and unused inputs: the capture's ABI
// is the slots alone (schema/capture.fbs, AmdKernel). amdgpu_code_object_read() checks the
// resulting kernarg size. Source: LLVM AMDGPUUsage "Kernel Argument Layout" and the
// "amdgpu-no-*" function attributes of the AMDGPU backend.
void kernel_attrs(llvm::Function *f, const AmdTarget &t) {
  for (const char *a :
       {"amdgpu-no-implicitarg-ptr", "amdgpu-no-dispatch-ptr", "amdgpu-no-queue-ptr",
        "amdgpu-no-dispatch-id", "amdgpu-no-hostcall-ptr", "amdgpu-no-heap-ptr",
        "amdgpu-no-multigrid-sync-arg", "amdgpu-no-default-queue", "amdgpu-no-completion-action",
        "amdgpu-no-lds-kernel-id", "amdgpu-no-workitem-id-y", "amdgpu-no-workitem-id-z",
        "amdgpu-no-workgroup-id-y", "amdgpu-no-workgroup-id-z"})
    f->addFnAttr(a);
  std::string wg = std::to_string(t.workgroup_size);
  f->addFnAttr("amdgpu-flat-work-group-size", wg + "," + wg);
  f->addFnAttr("target-cpu", t.cpu);
  if (!t.features.empty()) f->addFnAttr("target-features", t.features);
  f->addFnAttr("no-builtins");  // no libcalls: the code object links nothing in
  f->addFnAttr(llvm::Attribute::NoUnwind);
  auto &ctx = f->getContext();
  auto *i32 = llvm::Type::getInt32Ty(ctx);
  f->setMetadata(
      "reqd_work_group_size",
      llvm::MDNode::get(
          ctx, {llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, t.workgroup_size)),
                llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, 1)),
                llvm::ConstantAsMetadata::get(llvm::ConstantInt::get(i32, 1))}));
}

// `tile` false: the facts of a chip without LDS, so no kernel is tiled (gpu_tile_plan).
GpuFacts amd_gpu_facts(const AmdTarget &t, bool tile = true) {
  return {t.workgroup_size, t.wavefront_size, tile ? t.lds_bytes : 0, t.vgprs};
}

void amd_kernel_emit(KernelEmitter &e, const std::string &symbol, const AmdTarget &t, bool tile) {
  gpu_kernel_emit(
      e, symbol,
      [&](llvm::Function *fn) {
        fn->setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
        kernel_attrs(fn, t);
      },
      // s_barrier waits for the waves but orders no memory: HIP's __syncthreads fences LDS around
      // it the same way. Source: LLVM AMDGPUUsage "Memory Model GFX10-GFX11" (fence workgroup).
      {llvm::Intrinsic::amdgcn_workgroup_id_x, llvm::Intrinsic::amdgcn_workitem_id_x,
       llvm::Intrinsic::amdgcn_s_barrier, true},
      amd_gpu_facts(t, tile));
}

// The same work items behind the CPU kernel ABI: for (gid = begin; gid < end; gid++).
void host_kernel_emit(KernelEmitter &e, const std::string &symbol, const CpuTarget &t) {
  llvm::IRBuilder<> &b = e.b;
  e.slots = kernel_slots(e.k);
  llvm::Type *ptr = b.getPtrTy();
  auto *fty =
      llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, b.getInt64Ty(), b.getInt64Ty()}, false);
  e.fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, symbol, e.mod);
  e.fn->addFnAttr("target-cpu", t.cpu);
  if (!t.features.empty()) e.fn->addFnAttr("target-features", t.features);
  e.fn->addFnAttr("no-builtins");
  e.fn->addFnAttr(llvm::Attribute::NoUnwind);
  b.SetInsertPoint(llvm::BasicBlock::Create(e.ctx, "entry", e.fn));
  for (size_t i = 0; i < e.slots.size(); i++)
    e.slot_ptr[e.slots[i]] =
        b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, e.fn->getArg(0), i));
  Value *acc = gpu_acc_alloca(e);
  e.loop(e.fn->getArg(2), e.fn->getArg(3), [&](Value *gid) { gpu_work_item_emit(e, gid, acc); });
  b.CreateRetVoid();
}

}  // namespace

AmdCodegenResult amdgpu_codegen(const Program &p, const AmdTarget &t, int jobs) {
  std::vector<std::map<std::string, AmdKernelFacts>> facts(kLlvmGpuObjects);  // per object
  LlvmGpuFamily family{
      .target = t.name,
      .triple = t.triple,
      .cpu = t.cpu,
      .features = t.features,
      .module_prefix = "capgraph_amd_",
      .item_name = "work items",
      .launch_name = "dispatch",
      // The dispatch packet's grid size is 32 bits. Source: HSA Platform System Architecture
      // Specification, hsa_kernel_dispatch_packet_t.grid_size_x.
      .max_work_size = (int64_t)UINT32_MAX - t.workgroup_size,
      .gpu_facts = [&](bool tile) { return amd_gpu_facts(t, tile); },
      .kernel_emit = [&](KernelEmitter &e, const std::string &symbol,
                         bool tile) { amd_kernel_emit(e, symbol, t, tile); },
      // A kernel whose registers spill needs scratch, which the runtime does not set up.
      .object_build =
          [&](int o, llvm::Module &m, llvm::TargetMachine &tm) {
            LlvmGpuObject obj;
            obj.bytes = amdgpu_link(module_compile(m, tm));
            facts[o] = amdgpu_code_object_read(obj.bytes, t);
            for (const auto &[symbol, kf] : facts[o])
              if (kf.private_segment_size > 0) obj.spilled.insert(symbol);
            return obj;
          },
  };
  AmdCodegenResult r;
  r.code = llvm_gpu_codegen(p, family, jobs);
  r.facts.resize(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); i++) {
    const CodegenKernel &ck = r.code.kernels[i];
    auto it = facts[ck.object].find(ck.symbol);
    if (it == facts[ck.object].end())
      throw Error("internal: kernel " + p.kernels[i].name + " is missing from its " + t.name +
                  " code object");
    // The capture's AMD kernel ABI: 8 bytes per slot and nothing else.
    if (it->second.kernarg_size != 8 * ck.slots.size() || it->second.kernarg_align > 8)
      throw Error("kernel " + p.kernels[i].name + " for " + t.name + ": kernel arguments take " +
                  std::to_string(it->second.kernarg_size) + " bytes, the capture's ABI has " +
                  std::to_string(8 * ck.slots.size()) + " (hidden arguments?)");
    r.facts[i] = it->second;
  }
  return r;
}

CodegenResult amdgpu_codegen_on_host(const Program &p, const CpuTarget &t) {
  CodegenResult r;
  KernelDedupe d = kernels_dedupe(p);
  for (size_t i = 0; i < p.kernels.size(); i++)
    r.kernels.push_back({0, kernel_symbol(p.kernels[d.reps[d.unique_of[i]]], d.unique_of[i]),
                         kernel_slots(p.kernels[i]), gpu_work_size(p.kernels[i])});
  r.unique_kernels = (int)d.reps.size();
  std::unique_ptr<llvm::TargetMachine> tm = target_machine_create(t.triple, t.cpu, t.features);
  llvm::LLVMContext ctx;
  llvm::Module m("capgraph_amd_on_host", ctx);
  for (size_t u = 0; u < d.reps.size(); u++) {
    KernelEmitter e(m, p.kernels[d.reps[u]], p);
    host_kernel_emit(e, kernel_symbol(p.kernels[d.reps[u]], (int)u), t);
  }
  r.objects.push_back(module_compile(m, *tm));
  return r;
}

}  // namespace capgraph
