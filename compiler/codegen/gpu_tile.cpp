#include "codegen/gpu_tile.h"

#include <llvm/IR/GlobalVariable.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "codegen/gpu_work_item.h"
#include "knobs.h"

namespace capgraph {

using llvm::Value;

namespace {

// The load an expression is, if it is a plain f32 load without a gathered index (or, where the
// target stages float16, a float16 one widened to f32).
int plain_load(const Kernel &k, const Program &p, int expr, bool half) {
  const Expr *e = &k.exprs[expr];
  if (half && e->op == Op::cast && e->dtype == DType::f32 && k.exprs[e->a].op == Op::load &&
      k.exprs[e->a].dtype == DType::f16)
    e = &k.exprs[e->a];
  if (e->op != Op::load || (e->dtype != DType::f32 && e->dtype != DType::f16)) return -1;
  const Access &a = k.loads[e->access];
  if (p.buffers[a.buffer].dtype != e->dtype) return -1;
  for (const DimIndex &d : a.dims)
    if (d.expr >= 0) return -1;
  return e->access;
}

// A load an operand expression may stage (GpuFacts::expr_operands): any but a gathered one.
bool load_ungathered(const Access &a) {
  for (const DimIndex &d : a.dims)
    if (d.expr >= 0) return false;
  return true;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Whether `count` consecutive points of `axis` (a multiple of `count` apart from 0) are
// consecutive elements of the store: a plain view (no bounds, gathers or divisors) with stride 1
// along the axis, whose extent `count` divides.
bool store_contiguous(const Kernel &k, int axis, int64_t count) {
  if (k.axes[axis] % count != 0) return false;
  int64_t step = 0;
  for (const DimIndex &d : k.store.dims) {
    if (d.bound != Bound::none || d.expr >= 0 || d.divisor != 1) return false;
    for (const AxisTerm &t : d.terms)
      if (t.axis == axis) step += t.coef * d.stride;
  }
  return step == 1;
}

// for (i = 0; i < n; i++) body(i), kept rolled: unrolled, the reduction loops around a chunk
// repeat its staging code per point, and LLVM hoists and keeps the repeated index arithmetic
// live until the registers spill to scratch (seen for 3x3 convolutions of 8 channels).
void loop_rolled(KernelEmitter &e, int64_t n, const std::function<void(Value *)> &body) {
  llvm::IRBuilder<> &b = e.b;
  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *head = llvm::BasicBlock::Create(e.ctx, "tile_loop", e.fn),
                   *bodyb = llvm::BasicBlock::Create(e.ctx, "tile_body", e.fn),
                   *exit = llvm::BasicBlock::Create(e.ctx, "tile_exit", e.fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode *i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(e.i64(0), pre);
  b.CreateCondBr(b.CreateICmpSLT(i, e.i64(n)), bodyb, exit);
  b.SetInsertPoint(bodyb);
  body(i);
  i->addIncoming(b.CreateAdd(i, e.i64(1), "", true, true), b.GetInsertBlock());
  llvm::BranchInst *latch = b.CreateBr(head);
  llvm::MDNode *off =
      llvm::MDNode::get(e.ctx, {llvm::MDString::get(e.ctx, "llvm.loop.unroll.disable")});
  llvm::MDNode *id = llvm::MDNode::getDistinct(e.ctx, {nullptr, off});
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
  b.SetInsertPoint(exit);
}

void nest_rolled(KernelEmitter &e, const std::vector<int> &axes, size_t at,
                 const std::function<void()> &body) {
  if (at == axes.size()) return body();
  loop_rolled(e, e.k.axes[axes[at]], [&](Value *i) {
    e.iv[axes[at]] = i;
    nest_rolled(e, axes, at + 1, body);
  });
}

}  // namespace

GpuTilePlan gpu_tile_plan(const Kernel &k, const Program &p, const GpuFacts &f) {
  GpuTilePlan pl;
  if (knob_get("CAPGRAPH_GPU_NO_TILE")) return pl;
  if (k.reduce != Reduce::sum || k.acc_dtype != DType::f32 || k.body < 0 || k.result < 0) return pl;
  const Expr &body = k.exprs[k.body];
  if (body.op != Op::mul || body.dtype != DType::f32) return pl;
  pl.a = plain_load(k, p, body.a, f.half_operands);
  pl.b = plain_load(k, p, body.b, f.half_operands);
  std::vector<int> a_loads{pl.a};  // every load operand a reads
  if (pl.a < 0 && pl.b >= 0 && f.expr_operands) {
    // a float16 value widened (a folded producer whose buffer was float16: staged as float16),
    // or a float32 one.
    const Expr &ea = k.exprs[body.a];
    const bool half = f.half_operands && ea.op == Op::cast && ea.dtype == DType::f32 &&
                      k.exprs[ea.a].dtype == DType::f16;
    pl.a_expr = half ? ea.a : body.a;
    a_loads.clear();
    if (!expr_elementwise(k, pl.a_expr, load_ungathered, &a_loads) || a_loads.empty() ||
        std::find(a_loads.begin(), a_loads.end(), pl.b) != a_loads.end())
      return pl;
    pl.elem_a = half ? 2 : 4;
    auto moves = [&](int l) {
      int n = 0;
      for (int x = 0; x < (int)k.axes.size(); x++) n += k.axes[x] > 1 && access_uses(k.loads[l], x);
      return n;
    };
    pl.a = a_loads[0];
    for (int l : a_loads)
      if (moves(l) > moves(pl.a)) pl.a = l;
  } else if (pl.a >= 0) {
    pl.elem_a = dtype_size(p.buffers[k.loads[pl.a].buffer].dtype);
  }
  if (pl.a < 0 || pl.b < 0 || pl.a == pl.b) return pl;
  const Access &lb = k.loads[pl.b];
  pl.elem_b = dtype_size(p.buffers[lb.buffer].dtype);
  for (int x = 0; x < k.n_parallel; x++) {
    if (k.axes[x] == 1) continue;
    bool ua = false, ub = access_uses(lb, x);
    for (int l : a_loads) ua |= access_uses(k.loads[l], x);
    if (ua && ub)
      pl.batch.push_back(x), pl.batches *= k.axes[x];
    else if (ua)
      pl.m.push_back(x), pl.M *= k.axes[x];
    else if (ub)
      pl.n.push_back(x), pl.N *= k.axes[x];
    else
      return pl;  // an output axis neither operand moves with: not a product
  }
  // Tiles pay off from a few lanes' worth of rows and columns on; below that the staging and
  // barriers cost more than the reuse gives.
  if (pl.M < 16 || pl.N < 16 || pl.M > INT32_MAX || pl.N > INT32_MAX || pl.batches > INT32_MAX)
    return pl;
  for (int x = k.n_parallel; x < (int)k.axes.size(); x++) {
    if (k.axes[x] == 1) continue;
    if (pl.chunk < 0 || k.axes[x] > k.axes[pl.chunk]) pl.chunk = x;
  }
  if (pl.chunk < 0) return pl;
  for (int x = k.n_parallel; x < (int)k.axes.size(); x++)
    if (k.axes[x] > 1 && x != pl.chunk) pl.outer.push_back(x);
  // The lane grid: tm x tn accumulators per lane (4 x 4 unless the target asks for another
  // micro tile: 16 of the target's registers, with 8 more for the operands), lanes arranged so
  // the padded output is smallest (square on ties: fewest bytes per multiply-add).
  pl.tm = f.micro_m, pl.tn = f.micro_n;
  if (pl.tm < 1 || pl.tn < 1) return pl;
  if ((int64_t)f.registers < 2 * (pl.tm * pl.tn + pl.tm + pl.tn)) return pl;
  std::vector<int64_t> grids;  // lanes along m, squarest first
  for (int64_t lm = 4; lm * 4 <= (int64_t)f.group_size; lm *= 2)
    if (f.group_size % lm == 0) grids.push_back(lm);
  auto skew = [&](int64_t lm) {
    return std::max(lm * lm, (int64_t)f.group_size) / std::min(lm * lm, (int64_t)f.group_size);
  };
  std::stable_sort(grids.begin(), grids.end(),
                   [&](int64_t x, int64_t y) { return skew(x) < skew(y); });
  int64_t best = -1;
  for (int64_t lm : grids) {
    int64_t ln = f.group_size / lm;
    int64_t cost =
        ceil_div(pl.M, lm * pl.tm) * lm * pl.tm * ceil_div(pl.N, ln * pl.tn) * ln * pl.tn;
    if (best < 0 || cost < best) best = cost, pl.lanes_m = lm, pl.lanes_n = ln;
  }
  if (best < 0) return pl;
  pl.tiles_m = ceil_div(pl.M, pl.TM());
  pl.tiles_n = ceil_div(pl.N, pl.TN());
  // Chunk: the largest divisor of the chunk axis up to 16 (no ragged last chunk), unless that is
  // small against a long axis.
  int64_t E = k.axes[pl.chunk];
  pl.kc = 1;
  for (int64_t d = std::min<int64_t>(16, E); d >= 1; d--)
    if (E % d == 0) {
      pl.kc = d;
      break;
    }
  if (pl.kc < 8 && E > 16) pl.kc = 16;
  pl.buffers = f.double_buffer ? 2 : 1;
  // Half the shared memory at most: two workgroups can share a compute unit.
  while (pl.kc > 1 && pl.shared_bytes() > f.shared_bytes / 2) pl.kc /= 2;
  if (pl.shared_bytes() > f.shared_bytes / 2) return pl;
  if (pl.tn % 4 == 0 && store_contiguous(k, pl.n.back(), 4))
    pl.store_vector = 'n';
  else if (pl.tm % 4 == 0 && store_contiguous(k, pl.m.back(), 4))
    pl.store_vector = 'm';
  pl.ok = true;
  return pl;
}

void gpu_tile_emit(KernelEmitter &e, const GpuTilePlan &pl, const GpuFacts &f,
                   const GpuIntrinsics &ids) {
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  llvm::Type *f32 = b.getFloatTy(), *i32 = b.getInt32Ty();
  const int64_t TM = pl.TM(), TN = pl.TN(), GS = f.group_size;
  auto c32 = [&](int64_t v) { return b.getInt32((uint32_t)v); };
  auto to64 = [&](Value *v) { return b.CreateZExt(v, b.getInt64Ty()); };

  // The chunk's slabs in workgroup-shared memory: address space 3 in both backends. Sources:
  // LLVM AMDGPUUsage "Address Spaces" (3: local / LDS), NVPTXUsage "Address Spaces" (3: shared).
  auto slab = [&](int64_t n, const char *name) {
    auto *ty = llvm::ArrayType::get(f32, n);
    auto *g = new llvm::GlobalVariable(e.mod, ty, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(ty), e.fn->getName() + name, nullptr,
                                       llvm::GlobalValue::NotThreadLocal, 3);
    g->setAlignment(llvm::Align(16));
    return g;
  };
  llvm::GlobalVariable *slab_a = slab(pl.kc * TM, "_lds_a"), *slab_b = slab(pl.kc * TN, "_lds_b");

  std::vector<llvm::AllocaInst *> acc(pl.tm * pl.tn);
  for (auto &x : acc) {
    x = b.CreateAlloca(f32);
    b.CreateStore(llvm::ConstantFP::get(f32, 0), x);
  }
  Value *group = b.CreateIntrinsic(ids.group_id, {}, {});
  Value *local = b.CreateIntrinsic(ids.local_id, {}, {});
  Value *ln = b.CreateURem(local, c32(pl.lanes_n)), *lm = b.CreateUDiv(local, c32(pl.lanes_n));
  Value *tile_n = b.CreateURem(group, c32(pl.tiles_n)),
        *rest = b.CreateUDiv(group, c32(pl.tiles_n));
  Value *tile_m = b.CreateURem(rest, c32(pl.tiles_m)), *batch = b.CreateUDiv(rest, c32(pl.tiles_m));
  Value *m0 = b.CreateMul(tile_m, c32(TM)), *n0 = b.CreateMul(tile_n, c32(TN));

  // Flat index -> the indices of `axes` (innermost fastest).
  auto decompose = [&](Value *flat, const std::vector<int> &axes) {
    for (int i = (int)axes.size() - 1; i >= 0; i--) {
      int64_t ext = k.axes[axes[i]];
      e.iv[axes[i]] = to64(i ? b.CreateURem(flat, c32(ext)) : flat);
      if (i) flat = b.CreateUDiv(flat, c32(ext));
    }
  };
  e.iv.assign(k.axes.size(), e.i64(0));
  decompose(batch, pl.batch);

  auto barrier = [&] {
    llvm::SyncScope::ID wg = e.ctx.getOrInsertSyncScopeID("workgroup");
    if (ids.barrier_fences) b.CreateFence(llvm::AtomicOrdering::Release, wg);
    b.CreateIntrinsic(ids.barrier, {}, {});
    if (ids.barrier_fences) b.CreateFence(llvm::AtomicOrdering::Acquire, wg);
  };

  const int64_t E = k.axes[pl.chunk];
  // Stages slab[kk][t] = load(pos = base + t, reduction point c0 + kk), or 0 outside.
  auto stage = [&](llvm::GlobalVariable *dst, int load, int64_t T, Value *base, int64_t ext,
                   const std::vector<int> &axes, Value *c0) {
    for (int64_t s = 0; s < ceil_div(pl.kc * T, GS); s++) {
      Value *idx = b.CreateAdd(c32(s * GS), local);
      auto one = [&] {
        Value *kk = b.CreateUDiv(idx, c32(T)), *t = b.CreateURem(idx, c32(T));
        Value *pos = b.CreateAdd(base, t), *r = b.CreateAdd(c0, to64(kk));
        Value *in = b.CreateAnd(b.CreateICmpULT(pos, c32(ext)), b.CreateICmpULT(r, e.i64(E)));
        decompose(b.CreateSelect(in, pos, c32(0)), axes);  // never address outside
        e.iv[pl.chunk] = b.CreateSelect(in, r, e.i64(0));
        Value *ok;
        Value *off = e.access_offset(k.loads[load], load, &ok);
        if (ok) in = b.CreateAnd(in, ok);
        llvm::BasicBlock *pre = b.GetInsertBlock();
        llvm::BasicBlock *then = llvm::BasicBlock::Create(e.ctx, "stage", e.fn),
                         *done = llvm::BasicBlock::Create(e.ctx, "staged", e.fn);
        b.CreateCondBr(in, then, done);
        b.SetInsertPoint(then);
        Value *v = b.CreateLoad(f32, e.element_ptr(k.loads[load].buffer, off));
        b.CreateBr(done);
        b.SetInsertPoint(done);
        llvm::PHINode *phi = b.CreatePHI(f32, 2);
        phi->addIncoming(llvm::ConstantFP::get(f32, 0), pre);
        phi->addIncoming(v, then);
        b.CreateStore(phi, b.CreateInBoundsGEP(f32, dst, idx));
      };
      if ((s + 1) * GS > pl.kc * T)
        e.guarded(b.CreateICmpULT(idx, c32(pl.kc * T)), one);
      else
        one();
    }
  };

  nest_rolled(e, pl.outer, 0, [&] {
    loop_rolled(e, ceil_div(E, pl.kc), [&](Value *chunk) {
      Value *c0 = b.CreateMul(chunk, e.i64(pl.kc));
      stage(slab_a, pl.a, TM, m0, pl.M, pl.m, c0);
      stage(slab_b, pl.b, TN, n0, pl.N, pl.n, c0);
      barrier();
      e.loop(pl.kc, [&](Value *kk) {
        Value *k32 = b.CreateTrunc(kk, i32);
        auto row = [&](llvm::GlobalVariable *s, int64_t T, Value *lane, int64_t t) {
          Value *at = b.CreateAdd(b.CreateMul(k32, c32(T)), b.CreateMul(lane, c32(t)));
          return b.CreateAlignedLoad(llvm::FixedVectorType::get(f32, t),
                                     b.CreateInBoundsGEP(f32, s, at), llvm::Align(16));
        };
        Value *av = row(slab_a, TM, lm, pl.tm), *bv = row(slab_b, TN, ln, pl.tn);
        for (int64_t i = 0; i < pl.tm; i++)
          for (int64_t j = 0; j < pl.tn; j++) {
            llvm::AllocaInst *x = acc[i * pl.tn + j];
            Value *s = b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {f32},
                                         {b.CreateExtractElement(av, i),
                                          b.CreateExtractElement(bv, j), b.CreateLoad(f32, x)});
            b.CreateStore(s, x);
          }
      });
      barrier();  // the next chunk overwrites the slabs
    });
  });

  // Epilogue: each accumulator is one output element, finished and stored as in the naive form.
  for (int64_t i = 0; i < pl.tm; i++)
    for (int64_t j = 0; j < pl.tn; j++) {
      Value *m = b.CreateAdd(m0, b.CreateAdd(b.CreateMul(lm, c32(pl.tm)), c32(i)));
      Value *n = b.CreateAdd(n0, b.CreateAdd(b.CreateMul(ln, c32(pl.tn)), c32(j)));
      e.guarded(b.CreateAnd(b.CreateICmpULT(m, c32(pl.M)), b.CreateICmpULT(n, c32(pl.N))), [&] {
        decompose(m, pl.m);
        decompose(n, pl.n);
        e.acc_value = b.CreateLoad(f32, acc[i * pl.tn + j]);
        e.store_result(e.evaluate(k.result, false));
      });
    }
}

}  // namespace capgraph
