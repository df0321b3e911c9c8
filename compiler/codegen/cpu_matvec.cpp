#include "codegen/cpu_matvec.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <cstdlib>

#include "codegen/kernel_emit.h"
#include "knobs.h"

namespace capgraph {

using llvm::Value;

namespace {

// Whether access a reads contiguously along axis r (one dimension moves with it, coefficient 1,
// stride 1) with no bounds, gathers or divisors anywhere.
bool contiguous_along(const Access &a, int r) {
  int moving = 0;
  for (const DimIndex &d : a.dims) {
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return false;
    int64_t c = 0;
    for (const AxisTerm &t : d.terms)
      if (t.axis == r) c += t.coef;
    if (c == 0) continue;
    if (c != 1 || d.stride != 1) return false;
    moving++;
  }
  return moving == 1;
}

// No bounds, gathers or divisors: every index in range by construction.
bool plain(const Access &a) {
  for (const DimIndex &d : a.dims)
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return false;
  return true;
}

}  // namespace

MatvecPlan matvec_plan(const Kernel &k, const Program &p, const CpuTarget &t) {
  MatvecPlan mp;
  if (knob_get("CAPGRAPH_NO_TILE") || k.reduce != Reduce::sum || k.acc_dtype != DType::f32 ||
      k.body < 0)
    return mp;
  if (k.n_parallel < 1 || (int)k.axes.size() != k.n_parallel + 1) return mp;  // one reduction axis
  const int n = k.n_parallel - 1, r = k.n_parallel;
  if (k.axes[n] < 2) return mp;
  const Expr &body = k.exprs[k.body];
  if (body.op != Op::mul) return mp;
  const Expr &ea = k.exprs[body.a], &eb = k.exprs[body.b];
  if (ea.op != Op::load || eb.op != Op::load || ea.dtype != DType::f32 || eb.dtype != DType::f32)
    return mp;
  const Access &A = k.loads[ea.access], &B = k.loads[eb.access];
  if (p.buffers[A.buffer].dtype != DType::f32 || p.buffers[B.buffer].dtype != DType::f32) return mp;
  const bool a_n = access_uses(A, n), b_n = access_uses(B, n);
  if (a_n == b_n) return mp;
  mp.w = a_n ? ea.access : eb.access;
  mp.x = a_n ? eb.access : ea.access;
  for (const Expr &e : k.exprs)
    if (e.op == Op::iota && (e.access == n || e.access == r)) return mp;
  mp.n = n;
  mp.r = r;
  mp.lanes = t.f32_lanes;
  if (contiguous_along(k.loads[mp.w], r) && contiguous_along(k.loads[mp.x], r) &&
      k.axes[r] >= t.f32_lanes) {
    // R rows + X + one weight vector in registers: 8 fits 16-register targets and keeps 8 FMA
    // chains in flight (the FMA latency of 4 cycles x 2 units).
    mp.R = 8;
    mp.ok = true;
  } else if (contiguous_along(k.loads[mp.w], n) && plain(k.loads[mp.x]) &&
             k.axes[n] >= t.f32_lanes) {
    // W [K, N] walked along its rows (a MatMul by a weight, an attention product): R vectors of
    // outputs per item, X broadcast per reduction step.
    mp.along_n = true;
    mp.R = 4;
    mp.ok = true;
  }
  return mp;
}

int64_t matvec_work_size(const Kernel &k, const MatvecPlan &mp) {
  int64_t w = 1;
  for (int a = 0; a < mp.n; a++) w *= k.axes[a];
  const int64_t chunk = mp.along_n ? mp.R * mp.lanes : mp.R;
  return w * ((k.axes[mp.n] + chunk - 1) / chunk);
}

// The along_n layout: outputs [n0, n0 + R L) of one outer point as R vector accumulators.
static void matvec_rows_emit(KernelEmitter &e, const MatvecPlan &mp, Value *w) {
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  const int64_t N = k.axes[mp.n], K = k.axes[mp.r], L = mp.lanes, chunk = mp.R * L,
                groups = (N + chunk - 1) / chunk;
  auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), (unsigned)L);
  Value *rem = w;
  Value *g = b.CreateURem(rem, e.i64(groups));
  rem = b.CreateUDiv(rem, e.i64(groups));
  for (int a = mp.n - 1; a >= 0; a--) {
    if (k.axes[a] == 1) {
      e.iv[a] = e.i64(0);
      continue;
    }
    e.iv[a] = b.CreateURem(rem, e.i64(k.axes[a]));
    rem = b.CreateUDiv(rem, e.i64(k.axes[a]));
  }
  Value *n0 = b.CreateMul(g, e.i64(chunk));
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  std::vector<llvm::AllocaInst *> accs;
  llvm::AllocaInst *spill;
  {
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    for (int64_t i = 0; i < mp.R; i++) accs.push_back(entry.CreateAlloca(vt));
    spill = entry.CreateAlloca(llvm::ArrayType::get(b.getFloatTy(), chunk));
  }
  for (auto *a : accs) b.CreateStore(llvm::Constant::getNullValue(vt), a);
  std::vector<llvm::Constant *> lane_ids;
  for (int64_t l = 0; l < L; l++) lane_ids.push_back(b.getInt64(l));
  Value *lane_vec = llvm::ConstantVector::get(lane_ids);
  auto accumulate = [&](bool masked) {
    e.loop(K, [&](Value *j) {
      e.iv[mp.r] = j;
      e.iv[mp.n] = n0;
      Value *ok = nullptr;
      Value *xs = b.CreateLoad(
          b.getFloatTy(),
          e.element_ptr(k.loads[mp.x].buffer, e.access_offset(k.loads[mp.x], -1, &ok)));
      Value *xv = b.CreateVectorSplat((unsigned)L, xs);
      for (int64_t i = 0; i < mp.R; i++) {
        Value *first = b.CreateAdd(n0, e.i64(i * L));
        e.iv[mp.n] = first;
        Value *ptr = e.element_ptr(k.loads[mp.w].buffer, e.access_offset(k.loads[mp.w], -1, &ok));
        Value *wv;
        if (masked) {
          // Lanes past the last output are never read (their addresses may lie outside W).
          Value *mask =
              b.CreateICmpSLT(b.CreateAdd(b.CreateVectorSplat((unsigned)L, first), lane_vec),
                              b.CreateVectorSplat((unsigned)L, e.i64(N)));
          wv = b.CreateMaskedLoad(vt, ptr, llvm::Align(4), mask, llvm::Constant::getNullValue(vt));
        } else {
          wv = b.CreateAlignedLoad(vt, ptr, llvm::Align(4));
        }
        Value *acc = b.CreateLoad(vt, accs[i]);
        b.CreateStore(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {xv, wv, acc}), accs[i]);
      }
    });
  };
  llvm::BasicBlock *whole = llvm::BasicBlock::Create(e.ctx, "rows_whole", fn),
                   *part = llvm::BasicBlock::Create(e.ctx, "rows_tail", fn),
                   *join = llvm::BasicBlock::Create(e.ctx, "rows_join", fn);
  b.CreateCondBr(b.CreateICmpSLE(b.CreateAdd(n0, e.i64(chunk)), e.i64(N)), whole, part);
  b.SetInsertPoint(whole);
  accumulate(false);
  b.CreateBr(join);
  b.SetInsertPoint(part);
  accumulate(true);
  b.CreateBr(join);
  b.SetInsertPoint(join);
  // Epilogue: each output through the result expression.
  auto *row_ty = llvm::ArrayType::get(b.getFloatTy(), chunk);
  for (int64_t i = 0; i < mp.R; i++)
    b.CreateAlignedStore(b.CreateLoad(vt, accs[i]),
                         b.CreateInBoundsGEP(row_ty, spill, {e.i64(0), e.i64(i * L)}),
                         llvm::Align(4));
  Value *end = b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(n0, e.i64(chunk)), e.i64(N)),
                              b.CreateAdd(n0, e.i64(chunk)), e.i64(N));
  e.iv[mp.r] = nullptr;
  e.loop(n0, end, [&](Value *j) {
    e.iv[mp.n] = j;
    e.acc_value = b.CreateLoad(b.getFloatTy(),
                               b.CreateInBoundsGEP(row_ty, spill, {e.i64(0), b.CreateSub(j, n0)}));
    e.store_result(e.evaluate(k.result, false));
  });
}

void matvec_emit(KernelEmitter &e, const MatvecPlan &mp, Value *w) {
  if (mp.along_n) return matvec_rows_emit(e, mp, w);
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  const int64_t N = k.axes[mp.n], K = k.axes[mp.r], L = mp.lanes, groups = (N + mp.R - 1) / mp.R;
  auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), (unsigned)L);
  // Work item -> outer parallel indices and the first output of this item.
  Value *rem = w;
  Value *g = b.CreateURem(rem, e.i64(groups));
  rem = b.CreateUDiv(rem, e.i64(groups));
  for (int a = mp.n - 1; a >= 0; a--) {
    if (k.axes[a] == 1) {
      e.iv[a] = e.i64(0);
      continue;
    }
    e.iv[a] = b.CreateURem(rem, e.i64(k.axes[a]));
    rem = b.CreateUDiv(rem, e.i64(k.axes[a]));
  }
  Value *n0 = b.CreateMul(g, e.i64(mp.R));
  // Vector pointer of a load at output n and reduction index j.
  auto vec_ptr = [&](int load, Value *n, Value *j) {
    e.iv[mp.n] = n;
    e.iv[mp.r] = j;
    Value *ok = nullptr;
    Value *off = e.access_offset(k.loads[load], -1, &ok);  // no bounds: ok stays null
    return e.element_ptr(k.loads[load].buffer, off);
  };
  const int64_t full = K / L, tail = K % L;
  std::vector<llvm::Constant *> mask_bits;
  for (int64_t l = 0; l < L; l++) mask_bits.push_back(b.getInt1(l < tail));
  Value *tail_mask = llvm::ConstantVector::get(mask_bits);
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  // `rows` outputs from n0 + first: accumulate, reduce across lanes, result, store.
  auto rows_emit = [&](int64_t rows, Value *first) {
    std::vector<llvm::AllocaInst *> accs;
    {
      llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
      for (int64_t i = 0; i < rows; i++) accs.push_back(entry.CreateAlloca(vt));
    }
    for (auto *a : accs) b.CreateStore(llvm::Constant::getNullValue(vt), a);
    auto step = [&](Value *j, Value *mask) {
      auto load = [&](Value *ptr) {
        if (mask)
          return (Value *)b.CreateMaskedLoad(vt, ptr, llvm::Align(4), mask,
                                             llvm::Constant::getNullValue(vt));
        return (Value *)b.CreateAlignedLoad(vt, ptr, llvm::Align(4));
      };
      Value *xv = load(vec_ptr(mp.x, first, j));
      for (int64_t i = 0; i < rows; i++) {
        Value *wv = load(vec_ptr(mp.w, b.CreateAdd(first, e.i64(i)), j));
        Value *acc = b.CreateLoad(vt, accs[i]);
        b.CreateStore(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {wv, xv, acc}), accs[i]);
      }
    };
    e.loop(full, [&](Value *s) { step(b.CreateMul(s, e.i64(L)), nullptr); });
    if (tail) step(e.i64(full * L), tail_mask);
    for (int64_t i = 0; i < rows; i++) {
      // The lanes summed in any order (the reduction is reassociated, as every vector kernel's).
      llvm::FastMathFlags fm;
      fm.setAllowReassoc();
      llvm::CallInst *sum =
          b.CreateFAddReduce(llvm::ConstantFP::get(b.getFloatTy(), 0.0), b.CreateLoad(vt, accs[i]));
      sum->setFastMathFlags(fm);
      e.iv[mp.n] = b.CreateAdd(first, e.i64(i));
      e.iv[mp.r] = nullptr;
      e.acc_value = sum;
      e.store_result(e.evaluate(k.result, false));
    }
  };
  // All R outputs in range (every item but the last when R does not divide N): the R-row code;
  // otherwise the outputs left, one row at a time.
  llvm::BasicBlock *whole = llvm::BasicBlock::Create(e.ctx, "matvec_rows", fn),
                   *part = llvm::BasicBlock::Create(e.ctx, "matvec_tail", fn),
                   *join = llvm::BasicBlock::Create(e.ctx, "matvec_join", fn);
  b.CreateCondBr(b.CreateICmpSLE(b.CreateAdd(n0, e.i64(mp.R)), e.i64(N)), whole, part);
  b.SetInsertPoint(whole);
  rows_emit(mp.R, n0);
  b.CreateBr(join);
  b.SetInsertPoint(part);
  e.loop(n0, e.i64(N), [&](Value *n) { rows_emit(1, n); });
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

}  // namespace capgraph
