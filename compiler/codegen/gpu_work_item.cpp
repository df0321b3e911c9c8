#include "codegen/gpu_work_item.h"

namespace capgraph {

using llvm::Value;

int64_t gpu_work_size(const Kernel &k) {
  int64_t n = 1;
  for (int a = 0; a < k.n_parallel; a++) n *= k.axes[a];
  return n;
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
    for (int a = k.n_parallel - 1; a >= 0; a--) {  // innermost fastest: neighbouring lanes store neighbours
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

Value *gpu_acc_alloca(KernelEmitter &e) { return e.k.reduce != Reduce::none ? e.b.CreateAlloca(e.ir_type(e.k.acc_dtype)) : nullptr; }

}  // namespace capgraph
