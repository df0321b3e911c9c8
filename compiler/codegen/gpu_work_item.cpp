#include "codegen/gpu_work_item.h"

#include "codegen/cpu_codegen.h"  // kernel_slots

namespace capgraph {

using llvm::Value;

int64_t gpu_work_size(const Kernel &k) {
  int64_t n = 1;
  for (int a = 0; a < k.n_parallel; a++) n *= k.axes[a];
  return n;
}

int64_t gpu_launch_size(const Kernel &k, const Program &p, const GpuFacts &f) {
  GpuTilePlan pl = gpu_tile_plan(k, p, f);
  return pl.ok ? pl.groups() * f.group_size : gpu_work_size(k);
}

bool store_moves_with_every_item(const Kernel &k) {
  for (int a = 0; a < k.n_parallel; a++) {
    bool moves = k.axes[a] == 1;
    for (const DimIndex &dim : k.store.dims)
      for (const AxisTerm &term : dim.terms) moves |= term.axis == a && term.coef != 0;
    if (!moves) return false;
  }
  return true;
}

void gpu_work_item_emit(KernelEmitter &e, Value *gid, Value *acc) {
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  e.iv.assign(k.axes.size(), nullptr);
  e.guarded(b.CreateICmpULT(gid, e.i64(gpu_work_size(k))), [&] {
    Value *rem = gid;
    for (int a = k.n_parallel - 1; a >= 0;
         a--) {  // innermost fastest: neighbouring lanes store neighbours
      if (k.axes[a] == 1) {
        e.iv[a] = e.i64(0);
        continue;
      }
      e.iv[a] = a == 0 ? rem : b.CreateURem(rem, e.i64(k.axes[a]));
      if (a > 0) rem = b.CreateUDiv(rem, e.i64(k.axes[a]));
    }
    e.emit_point(acc);
  });
}

Value *gpu_acc_alloca(KernelEmitter &e) {
  return e.k.reduce != Reduce::none ? e.b.CreateAlloca(e.ir_type(e.k.acc_dtype)) : nullptr;
}

void gpu_kernel_emit(KernelEmitter &e, const std::string &symbol,
                     const std::function<void(llvm::Function *)> &attrs, const GpuIntrinsics &ids,
                     const GpuFacts &f) {
  llvm::IRBuilder<> &b = e.b;
  e.slots = kernel_slots(e.k);
  std::vector<llvm::Type *> params(e.slots.size(), b.getPtrTy(1));
  // Address space 1 is global memory in both backends. Sources: LLVM AMDGPUUsage and NVPTXUsage,
  // "Address Spaces".
  auto *fty = llvm::FunctionType::get(b.getVoidTy(), params, false);
  e.fn = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, symbol, e.mod);
  attrs(e.fn);
  b.SetInsertPoint(llvm::BasicBlock::Create(e.ctx, "entry", e.fn));
  for (size_t i = 0; i < e.slots.size(); i++) {
    e.fn->addParamAttr(i, llvm::Attribute::NoAlias);
    // The shared emitter addresses generic pointers; InferAddressSpaces turns the accesses back
    // into global ones (no generic-to-global conversion left in the loop).
    e.slot_ptr[e.slots[i]] = b.CreateAddrSpaceCast(e.fn->getArg(i), b.getPtrTy(0));
  }
  GpuTilePlan plan = gpu_tile_plan(e.k, e.p, f);
  if (plan.ok) {
    gpu_tile_emit(e, plan, f, ids);
    b.CreateRetVoid();
    return;
  }
  Value *acc = gpu_acc_alloca(e);
  Value *group = b.CreateZExt(b.CreateIntrinsic(ids.group_id, {}, {}), b.getInt64Ty());
  Value *local = b.CreateZExt(b.CreateIntrinsic(ids.local_id, {}, {}), b.getInt64Ty());
  gpu_work_item_emit(e, b.CreateAdd(b.CreateMul(group, e.i64(f.group_size)), local), acc);
  b.CreateRetVoid();
}

}  // namespace capgraph
