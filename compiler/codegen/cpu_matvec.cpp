#include "codegen/cpu_matvec.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>

#include <algorithm>
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
  if (!mp.ok) return mp;
  // The rows: the innermost outer axis that X moves with and W does not.
  for (int a = n - 1; a >= 0 && mp.m < 0; a--)
    if (k.axes[a] > 1 && access_uses(k.loads[mp.x], a) && !access_uses(k.loads[mp.w], a)) mp.m = a;
  for (const Expr &e : k.exprs)
    if (e.op == Op::iota && e.access == mp.m) mp.m = -1;
  if (mp.m >= 0) {
    // Blocks of at most 8 rows, as even as they come (11 rows: 6 + 5, not 8 + 3).
    const int64_t M = k.axes[mp.m], blocks = (M + 7) / 8;
    mp.rows = (M + blocks - 1) / blocks;
    // Accumulators rows x R within 8 (the dot layout) or 8 plus R weight vectors (along n), so
    // that they, the weight and the broadcast X stay in 16 vector registers.
    mp.R = mp.along_n ? std::min<int64_t>(4, std::max<int64_t>(1, 8 / mp.rows))
                      : std::max<int64_t>(1, 8 / mp.rows);
  }
  return mp;
}

int64_t matvec_work_size(const Kernel &k, const MatvecPlan &mp) {
  int64_t w = 1;
  for (int a = 0; a < mp.n; a++) w *= a == mp.m ? (k.axes[a] + mp.rows - 1) / mp.rows : k.axes[a];
  const int64_t chunk = mp.along_n ? mp.R * mp.lanes : mp.R;
  return w * ((k.axes[mp.n] + chunk - 1) / chunk);
}

namespace {

// Work item w -> its output group (returned) and the outer parallel indices; the rows' axis gets
// the first row of the item's block (row() gives each).
Value *item_decompose(KernelEmitter &e, const MatvecPlan &mp, Value *w, int64_t groups) {
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  Value *g = b.CreateURem(w, e.i64(groups));
  Value *rem = b.CreateUDiv(w, e.i64(groups));
  for (int a = mp.n - 1; a >= 0; a--) {
    const int64_t extent = a == mp.m ? (k.axes[a] + mp.rows - 1) / mp.rows : k.axes[a];
    if (extent == 1) {
      e.iv[a] = e.i64(0);
      continue;
    }
    e.iv[a] = b.CreateURem(rem, e.i64(extent));
    if (a == mp.m) e.iv[a] = b.CreateMul(e.iv[a], e.i64(mp.rows));
    rem = b.CreateUDiv(rem, e.i64(extent));
  }
  return g;
}

// Row i of the item's block: the block's first row + i, clamped to the last row (a short last
// block recomputes it: same value, same item).
Value *row(KernelEmitter &e, const MatvecPlan &mp, Value *first_row, int64_t i) {
  if (mp.m < 0) return nullptr;
  const int64_t M = e.k.axes[mp.m];
  Value *r = e.b.CreateAdd(first_row, e.i64(i));
  if (M % mp.rows == 0) return r;
  return e.b.CreateSelect(e.b.CreateICmpSLT(r, e.i64(M)), r, e.i64(M - 1));
}

}  // namespace

// The along_n layout: outputs [n0, n0 + R L) of `rows` rows as rows x R vector accumulators.
static void matvec_rows_emit(KernelEmitter &e, const MatvecPlan &mp, Value *w) {
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  const int64_t N = k.axes[mp.n], K = k.axes[mp.r], L = mp.lanes, chunk = mp.R * L,
                groups = (N + chunk - 1) / chunk, rows = mp.rows;
  auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), (unsigned)L);
  Value *g = item_decompose(e, mp, w, groups);
  Value *first_row = mp.m >= 0 ? e.iv[mp.m] : nullptr;
  Value *n0 = b.CreateMul(g, e.i64(chunk));
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  std::vector<llvm::AllocaInst *> accs;  // [row][R]
  llvm::AllocaInst *spill;
  {
    llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    for (int64_t i = 0; i < rows * mp.R; i++) accs.push_back(entry.CreateAlloca(vt));
    spill = entry.CreateAlloca(llvm::ArrayType::get(b.getFloatTy(), rows * chunk));
  }
  for (auto *a : accs) b.CreateStore(llvm::Constant::getNullValue(vt), a);
  std::vector<Value *> row_iv(rows);
  for (int64_t m = 0; m < rows; m++) row_iv[m] = row(e, mp, first_row, m);
  std::vector<llvm::Constant *> lane_ids;
  for (int64_t l = 0; l < L; l++) lane_ids.push_back(b.getInt64(l));
  Value *lane_vec = llvm::ConstantVector::get(lane_ids);
  auto accumulate = [&](bool masked) {
    e.loop(K, [&](Value *j) {
      e.iv[mp.r] = j;
      e.iv[mp.n] = n0;
      Value *ok = nullptr;
      std::vector<Value *> xv(rows);
      for (int64_t m = 0; m < rows; m++) {
        if (mp.m >= 0) e.iv[mp.m] = row_iv[m];
        Value *xs = b.CreateLoad(
            b.getFloatTy(),
            e.element_ptr(k.loads[mp.x].buffer, e.access_offset(k.loads[mp.x], -1, &ok)));
        xv[m] = b.CreateVectorSplat((unsigned)L, xs);
      }
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
        for (int64_t m = 0; m < rows; m++) {
          llvm::AllocaInst *a = accs[m * mp.R + i];
          Value *acc = b.CreateLoad(vt, a);
          b.CreateStore(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {xv[m], wv, acc}), a);
        }
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
  // Epilogue: each output of each row through the result expression.
  auto *row_ty = llvm::ArrayType::get(b.getFloatTy(), rows * chunk);
  for (int64_t i = 0; i < rows * mp.R; i++)
    b.CreateAlignedStore(b.CreateLoad(vt, accs[i]),
                         b.CreateInBoundsGEP(row_ty, spill, {e.i64(0), e.i64(i * L)}),
                         llvm::Align(4));
  Value *end = b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(n0, e.i64(chunk)), e.i64(N)),
                              b.CreateAdd(n0, e.i64(chunk)), e.i64(N));
  e.iv[mp.r] = nullptr;
  for (int64_t m = 0; m < rows; m++) {
    if (mp.m >= 0) e.iv[mp.m] = row_iv[m];
    e.loop(n0, end, [&](Value *j) {
      e.iv[mp.n] = j;
      Value *at = b.CreateAdd(b.CreateSub(j, n0), e.i64(m * chunk));
      e.acc_value =
          b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(row_ty, spill, {e.i64(0), at}));
      e.store_result(e.evaluate(k.result, false));
    });
  }
}

void matvec_emit(KernelEmitter &e, const MatvecPlan &mp, Value *w) {
  if (mp.along_n) return matvec_rows_emit(e, mp, w);
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  const int64_t N = k.axes[mp.n], K = k.axes[mp.r], L = mp.lanes, groups = (N + mp.R - 1) / mp.R,
                rows = mp.rows;
  auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), (unsigned)L);
  Value *g = item_decompose(e, mp, w, groups);
  Value *first_row = mp.m >= 0 ? e.iv[mp.m] : nullptr;
  std::vector<Value *> row_iv(rows);
  for (int64_t m = 0; m < rows; m++) row_iv[m] = row(e, mp, first_row, m);
  Value *n0 = b.CreateMul(g, e.i64(mp.R));
  // Vector pointer of a load at output n, row m and reduction index j.
  auto vec_ptr = [&](int load, Value *n, int64_t m, Value *j) {
    e.iv[mp.n] = n;
    e.iv[mp.r] = j;
    if (mp.m >= 0) e.iv[mp.m] = row_iv[m];
    Value *ok = nullptr;
    Value *off = e.access_offset(k.loads[load], -1, &ok);  // no bounds: ok stays null
    return e.element_ptr(k.loads[load].buffer, off);
  };
  const int64_t full = K / L, tail = K % L;
  std::vector<llvm::Constant *> mask_bits;
  for (int64_t l = 0; l < L; l++) mask_bits.push_back(b.getInt1(l < tail));
  Value *tail_mask = llvm::ConstantVector::get(mask_bits);
  llvm::Function *fn = b.GetInsertBlock()->getParent();
  // `outs` outputs from `first`, for every row: accumulate, reduce across lanes, result, store.
  auto outputs_emit = [&](int64_t outs, Value *first) {
    std::vector<llvm::AllocaInst *> accs;  // [row][outs]
    {
      llvm::IRBuilder<> entry(&fn->getEntryBlock(), fn->getEntryBlock().begin());
      for (int64_t i = 0; i < rows * outs; i++) accs.push_back(entry.CreateAlloca(vt));
    }
    for (auto *a : accs) b.CreateStore(llvm::Constant::getNullValue(vt), a);
    auto step = [&](Value *j, Value *mask) {
      auto load = [&](Value *ptr) {
        if (mask)
          return (Value *)b.CreateMaskedLoad(vt, ptr, llvm::Align(4), mask,
                                             llvm::Constant::getNullValue(vt));
        return (Value *)b.CreateAlignedLoad(vt, ptr, llvm::Align(4));
      };
      std::vector<Value *> xv(rows);
      for (int64_t m = 0; m < rows; m++) xv[m] = load(vec_ptr(mp.x, first, m, j));
      for (int64_t i = 0; i < outs; i++) {
        Value *wv = load(vec_ptr(mp.w, b.CreateAdd(first, e.i64(i)), 0, j));
        for (int64_t m = 0; m < rows; m++) {
          llvm::AllocaInst *a = accs[m * outs + i];
          Value *acc = b.CreateLoad(vt, a);
          b.CreateStore(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {wv, xv[m], acc}), a);
        }
      }
    };
    e.loop(full, [&](Value *s) { step(b.CreateMul(s, e.i64(L)), nullptr); });
    if (tail) step(e.i64(full * L), tail_mask);
    for (int64_t m = 0; m < rows; m++)
      for (int64_t i = 0; i < outs; i++) {
        // The lanes summed in any order (the reduction is reassociated, as every vector kernel's).
        llvm::FastMathFlags fm;
        fm.setAllowReassoc();
        llvm::CallInst *sum = b.CreateFAddReduce(llvm::ConstantFP::get(b.getFloatTy(), 0.0),
                                                 b.CreateLoad(vt, accs[m * outs + i]));
        sum->setFastMathFlags(fm);
        e.iv[mp.n] = b.CreateAdd(first, e.i64(i));
        e.iv[mp.r] = nullptr;
        if (mp.m >= 0) e.iv[mp.m] = row_iv[m];
        e.acc_value = sum;
        e.store_result(e.evaluate(k.result, false));
      }
  };
  // All R outputs in range (every item but the last when R does not divide N): the R-output code;
  // otherwise the outputs left, one at a time.
  llvm::BasicBlock *whole = llvm::BasicBlock::Create(e.ctx, "matvec_rows", fn),
                   *part = llvm::BasicBlock::Create(e.ctx, "matvec_tail", fn),
                   *join = llvm::BasicBlock::Create(e.ctx, "matvec_join", fn);
  b.CreateCondBr(b.CreateICmpSLE(b.CreateAdd(n0, e.i64(mp.R)), e.i64(N)), whole, part);
  b.SetInsertPoint(whole);
  outputs_emit(mp.R, n0);
  b.CreateBr(join);
  b.SetInsertPoint(part);
  e.loop(n0, e.i64(N), [&](Value *n) { outputs_emit(1, n); });
  b.CreateBr(join);
  b.SetInsertPoint(join);
}

}  // namespace capgraph
