#include "codegen/kernel_emit.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "codegen/cpu_codegen.h"
#include "codegen/expr_vector.h"
#include "codegen/math_ir.h"
#include "error.h"

namespace capgraph {

using llvm::Value;

KernelEmitter::KernelEmitter(llvm::Module &m, const Kernel &kk, const Program &pp)
    : ctx(m.getContext()), mod(m), b(m.getContext()), k(kk), p(pp) {
  llvm::FastMathFlags fmf;
  fmf.setAllowContract(true);
  b.setFastMathFlags(fmf);
  checked.resize(k.loads.size());
  for (size_t i = 0; i < k.loads.size(); i++) checked[i].assign(k.loads[i].dims.size(), 0);
}

llvm::Type *KernelEmitter::ir_type(DType t) {
  switch (t) {
    case DType::f32:
    case DType::f16:
    case DType::bf16: return b.getFloatTy();
    case DType::f64: return b.getDoubleTy();
    case DType::boolean: return b.getInt1Ty();
    default: return b.getInt64Ty();  // every integer type, uint64 included (its ops are unsigned)
  }
}
llvm::Type *KernelEmitter::mem_type(DType t) {
  switch (t) {
    case DType::f32: return b.getFloatTy();
    case DType::f16: return b.getHalfTy();
    case DType::f64: return b.getDoubleTy();
    case DType::i8:
    case DType::u8:
    case DType::boolean: return b.getInt8Ty();
    case DType::i16:
    case DType::u16:
    case DType::bf16: return b.getInt16Ty();
    case DType::i32:
    case DType::u32: return b.getInt32Ty();
    case DType::i64:
    case DType::u64: return b.getInt64Ty();
  }
  return nullptr;
}

// ---- loops -------------------------------------------------------------------------------
// for (i = lo; i < hi; i++) body(i)
llvm::BranchInst *KernelEmitter::loop(Value *lo, Value *hi,
                                      const std::function<void(Value *)> &body) {
  llvm::BasicBlock *pre = b.GetInsertBlock();
  llvm::BasicBlock *head = llvm::BasicBlock::Create(ctx, "loop", fn),
                   *bodyb = llvm::BasicBlock::Create(ctx, "body", fn),
                   *exit = llvm::BasicBlock::Create(ctx, "exit", fn);
  b.CreateBr(head);
  b.SetInsertPoint(head);
  llvm::PHINode *i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(lo, pre);
  b.CreateCondBr(b.CreateICmpSLT(i, hi), bodyb, exit);
  b.SetInsertPoint(bodyb);
  body(i);
  Value *next = b.CreateAdd(i, i64(1), "", false, true);
  i->addIncoming(next, b.GetInsertBlock());
  llvm::BranchInst *latch = b.CreateBr(head);
  b.SetInsertPoint(exit);
  // Short loops stay LLVM's to unroll (squeezenet's 2 input blocks, a stem's 3 window offsets).
  auto *first = llvm::dyn_cast<llvm::ConstantInt>(lo), *end = llvm::dyn_cast<llvm::ConstantInt>(hi);
  if (keep_loops && !(first && end && end->getSExtValue() - first->getSExtValue() < 4))
    loop_keep(latch);
  return latch;
}
void KernelEmitter::loop_keep(llvm::BranchInst *latch) {
  if (!latch) return;
  // A loop ID is a distinct node whose first operand is itself (LLVM LangRef, "llvm.loop").
  llvm::Metadata *disable =
      llvm::MDNode::get(ctx, llvm::MDString::get(ctx, "llvm.loop.unroll.disable"));
  llvm::TempMDTuple self = llvm::MDNode::getTemporary(ctx, {});
  llvm::MDNode *id = llvm::MDNode::getDistinct(ctx, {self.get(), disable});
  id->replaceOperandWith(0, id);
  latch->setMetadata(llvm::LLVMContext::MD_loop, id);
}
// Runs body only if cond holds.
void KernelEmitter::guarded(Value *cond, const std::function<void()> &body) {
  llvm::BasicBlock *then = llvm::BasicBlock::Create(ctx, "then", fn),
                   *done = llvm::BasicBlock::Create(ctx, "done", fn);
  b.CreateCondBr(cond, then, done);
  b.SetInsertPoint(then);
  body();
  b.CreateBr(done);
  b.SetInsertPoint(done);
}

// ---- indexing ----------------------------------------------------------------------------
// a + b and x * c for index arithmetic, without the instructions that add 0 or multiply by 1
// (IRBuilder folds only constants with constants). The optimizer would remove them, but the
// channel tiles compute an offset per access, position and window offset: in a 3x3 conv's
// 12k lines of IR, 4.7k adds and 3.2k multiplies, most of them by 0 and 1, each walked by the
// passes before the first InstCombine (issue 27, compile time).
static Value *index_add(llvm::IRBuilder<> &b, Value *x, Value *y) {
  if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(x); c && c->isZero()) return y;
  if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(y); c && c->isZero()) return x;
  return b.CreateAdd(x, y, "", false, true);
}
static Value *index_mul(llvm::IRBuilder<> &b, Value *x, int64_t c) {
  if (c == 1) return x;
  if (c == 0) return b.getInt64(0);
  return b.CreateMul(x, b.getInt64(c), "", false, true);
}
// sum(coef * iv) + shift, skipping the terms of axis `except` (when >= 0).
Value *KernelEmitter::affine(const DimIndex &d, int except) {
  Value *r = i64(d.shift);
  for (const AxisTerm &t : d.terms) {
    if (t.axis == except) continue;
    r = index_add(b, r, index_mul(b, iv[t.axis], t.coef));
  }
  return r;
}
int64_t KernelEmitter::coef_of(const DimIndex &d, int axis) {
  int64_t c = 0;
  for (const AxisTerm &t : d.terms)
    if (t.axis == axis) c += t.coef;
  return c;
}

// Element offset of an access at the current point. Sets *ok to the validity of skip bounds not
// already ensured by the loop structure (nullptr if always valid).
Value *KernelEmitter::access_offset(const Access &a, int load, Value **ok) {
  Value *off = i64(a.offset);
  *ok = nullptr;
  for (size_t di = 0; di < a.dims.size(); di++) {
    const DimIndex &d = a.dims[di];
    Value *idx = affine(d);
    if (d.expr >= 0) idx = b.CreateAdd(idx, to_i64(eval(d.expr)));
    Value *good = nullptr;
    if (d.divisor != 1) {
      good = b.CreateICmpEQ(b.CreateSRem(idx, i64(d.divisor)), i64(0));
      idx = b.CreateSDiv(idx, i64(d.divisor));
    }
    bool pre = load >= 0 && checked[load][di];
    switch (d.bound) {
      case Bound::none: break;
      case Bound::skip:
        if (!pre || d.divisor != 1) {
          Value *in = b.CreateICmpULT(idx, i64(d.extent));
          good = good ? b.CreateAnd(good, in) : in;
        }
        break;
      case Bound::clamp:
        idx = b.CreateSelect(b.CreateICmpSLT(idx, i64(0)), i64(0), idx);
        idx = b.CreateSelect(b.CreateICmpSGT(idx, i64(d.extent - 1)), i64(d.extent - 1), idx);
        break;
      case Bound::reflect:
        if (d.extent == 1) {
          idx = i64(0);
        } else {
          int64_t period = 2 * (d.extent - 1);
          Value *m = b.CreateSRem(idx, i64(period));
          m = b.CreateSelect(b.CreateICmpSLT(m, i64(0)), b.CreateAdd(m, i64(period)), m);
          idx = b.CreateSelect(b.CreateICmpSGE(m, i64(d.extent)), b.CreateSub(i64(period), m), m);
        }
        break;
      case Bound::wrap: {
        Value *m = b.CreateSRem(idx, i64(d.extent));
        idx = b.CreateSelect(b.CreateICmpSLT(m, i64(0)), b.CreateAdd(m, i64(d.extent)), m);
        break;
      }
    }
    if (good) {
      idx = b.CreateSelect(good, idx, i64(0));  // never address outside, even when skipped
      *ok = *ok ? b.CreateAnd(*ok, good) : good;
    }
    off = index_add(b, off, index_mul(b, idx, d.stride));
  }
  return off;
}

Value *KernelEmitter::element_ptr(int buffer, Value *off) {
  return b.CreateInBoundsGEP(mem_type(p.buffers[buffer].dtype), slot_ptr[buffer], off);
}

// ---- values ------------------------------------------------------------------------------
Value *KernelEmitter::to_i64(Value *v) {
  if (v->getType()->isIntegerTy(64)) return v;
  if (v->getType()->isIntegerTy()) return b.CreateZExt(v, b.getInt64Ty());
  return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt64Ty(), v->getType()}, {v});
}

Value *KernelEmitter::convert(Value *v, DType from, DType to) {
  llvm::Type *t = ir_type(to);
  if (v->getType() == t) return v;
  bool ff = v->getType()->isFloatingPointTy(), tf = t->isFloatingPointTy();
  if (ff && tf) return b.CreateFPCast(v, t);
  if (to == DType::boolean)
    return ff ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0))
              : b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  if (ff)
    return b.CreateIntrinsic(
        to == DType::u64 ? llvm::Intrinsic::fptoui_sat : llvm::Intrinsic::fptosi_sat,
        {t, v->getType()}, {v});
  if (tf)
    return from == DType::boolean || from == DType::u64 ? b.CreateUIToFP(v, t)
                                                        : b.CreateSIToFP(v, t);
  return b.CreateZExt(v, t);
}

Value *KernelEmitter::load_value(const Expr &e) {
  const Access &a = k.loads[e.access];
  DType bt = p.buffers[a.buffer].dtype;
  Value *ok;
  Value *off = access_offset(a, e.access, &ok);
  if (lanes) {  // vector_evaluable checked: f32, unbounded, contiguous along lane_axis or not
                // moving
    int64_t c = 0;
    for (const DimIndex &d : a.dims) c += coef_of(d, lane_axis) * d.stride;
    Value *ptr = element_ptr(a.buffer, off);
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    return c ? (Value *)b.CreateAlignedLoad(vt, ptr, llvm::Align(4))
             : b.CreateVectorSplat(lanes, b.CreateLoad(b.getFloatTy(), ptr));
  }
  Value *raw = b.CreateLoad(mem_type(bt), element_ptr(a.buffer, off));
  Value *v;
  switch (bt) {
    case DType::f16: v = b.CreateFPExt(raw, b.getFloatTy()); break;
    // bfloat16 is the upper half of a float32.
    case DType::bf16:
      v = b.CreateBitCast(b.CreateShl(b.CreateZExt(raw, b.getInt32Ty()), 16), b.getFloatTy());
      break;
    case DType::boolean: v = b.CreateICmpNE(raw, b.getInt8(0)); break;
    case DType::u8:
    case DType::u16:
    case DType::u32: v = b.CreateZExt(raw, b.getInt64Ty()); break;
    case DType::i8:
    case DType::i16:
    case DType::i32: v = b.CreateSExt(raw, b.getInt64Ty()); break;
    default: v = raw;
  }
  v = convert(v, bt, e.dtype);
  if (ok) {
    if (in_body) {
      valid = valid ? b.CreateAnd(valid, ok) : ok;
    } else {
      v = b.CreateSelect(ok, v, constant(a.fill, e.dtype));
    }
  }
  return v;
}

Value *KernelEmitter::constant(double v, DType t) {
  llvm::Type *ty = ir_type(t);
  if (ty->isFloatingPointTy())
    return llvm::ConstantFP::get(lanes ? llvm::FixedVectorType::get(ty, lanes) : ty, v);
  if (ty->isIntegerTy(1)) return b.getInt1(v != 0);
  return llvm::ConstantInt::get(ty, (uint64_t)int_constant_saturate(v, t), true);
}

// An integer constant of dtype t from a double: truncated toward zero, saturated at t's limits, NaN
// gives 0. The max/min reduction identities are -inf/+inf (reduce_identity), which must become t's
// minimum/maximum. A plain (int64_t) cast of an infinity is undefined behaviour (UBSan flags it);
// on x86 it gives INT64_MIN for both signs, so an int32 max started from 0 (wrong on all-negative
// data) and every integer min started from the type's minimum or 0.
int64_t int_constant_saturate(double v, DType t) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (t) {
    case DType::i8: lo = INT8_MIN, hi = INT8_MAX; break;
    case DType::u8: lo = 0, hi = UINT8_MAX; break;
    case DType::i16: lo = INT16_MIN, hi = INT16_MAX; break;
    case DType::i32: lo = INT32_MIN, hi = INT32_MAX; break;
    case DType::u16: lo = 0, hi = UINT16_MAX; break;
    case DType::u32: lo = 0, hi = UINT32_MAX; break;
    case DType::u64:           // the bits of the unsigned value (min's identity +inf: all ones)
      if (!(v > 0)) return 0;  // NaN too
      if (v >= 18446744073709551616.0) return -1;
      return (int64_t)(uint64_t)v;
    default: break;
  }
  return std::clamp(int64_saturate(v), lo, hi);
}

bool KernelEmitter::vector_evaluable(int root, int axis) const {
  return expr_vector_evaluable(k, p, root, axis);
}

// A cast to float32 in vector form (expr_vector_evaluable says which): the same values the scalar
// form gives.
Value *KernelEmitter::vector_cast(const Expr &e) {
  const Expr &o = k.exprs[e.a];
  auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
  if (o.dtype == DType::f32) return eval(e.a);
  if (o.op == Op::load) {
    const Access &a = k.loads[o.access];
    DType bt = p.buffers[a.buffer].dtype;
    Value *ok;
    Value *ptr = element_ptr(a.buffer, access_offset(a, o.access, &ok));
    int64_t c = 0;
    for (const DimIndex &d : a.dims) c += coef_of(d, lane_axis) * d.stride;
    llvm::Type *mt = mem_type(bt);
    Value *raw =
        c ? (Value *)b.CreateAlignedLoad(llvm::FixedVectorType::get(mt, lanes), ptr, llvm::Align(1))
          : b.CreateVectorSplat(lanes, b.CreateLoad(mt, ptr));
    return bt == DType::u8 || bt == DType::u16 ? b.CreateUIToFP(raw, vt) : b.CreateSIToFP(raw, vt);
  }
  // float32 -> float16 -> float32: rounded to half in whole registers (F16C, AVX-512, NEON).
  if (o.op == Op::cast && o.dtype == DType::f16)
    return b.CreateFPExt(
        b.CreateFPTrunc(eval(o.a), llvm::FixedVectorType::get(b.getHalfTy(), lanes)), vt);
  // float -> integer -> float with the value inside the integer type: truncation, NaN gives 0
  // (as llvm.fptosi.sat does); nothing to truncate where the value is already an integer.
  Value *v = eval(o.a);
  Value *t = expr_range(k, p, o.a).integral ? v : b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, v);
  return b.CreateSelect(b.CreateFCmpUNO(v, v), llvm::ConstantFP::get(vt, 0), t);
}

Value *KernelEmitter::eval(int i) {
  auto it = cache.find(i);
  if (it != cache.end()) return it->second;
  const Expr &e = k.exprs[i];
  if (lanes && e.op == Op::cast) return cache[i] = vector_cast(e);
  bool fl = dtype_is_float(e.dtype);
  Value *a = nullptr, *bb = nullptr, *c = nullptr;
  int n = op_arity(e.op);
  if (n > 0) a = eval(e.a);
  if (n > 1) bb = eval(e.b);
  if (n > 2) c = eval(e.c);
  // Binary/compare operands share the type of the first (the scheduler casts explicitly).
  bool afl = a && a->getType()->isFPOrFPVectorTy();
  // uint64 beyond 2^63 is negative as int64: its compares, division and remainder are unsigned.
  bool uns = !afl && n > 0 && k.exprs[e.a].dtype == DType::u64;
  Value *r = nullptr;
  switch (e.op) {
    case Op::constant: r = constant(e.value, e.dtype); break;
    case Op::load: r = load_value(e); break;
    case Op::acc: r = acc_value; break;
    case Op::iota: r = convert(iv[e.access], DType::i64, e.dtype); break;
    case Op::cast: {
      DType from = k.exprs[e.a].dtype;
      r = convert(a, from, e.dtype);
      // bfloat16 and float16 are computed in float32: a cast to them rounds here, so a value that
      // a fused kernel no longer stores is still the one the narrow type holds (vector_cast does
      // the same for float16 in vectors).
      if (e.dtype == DType::bf16 && !lanes)
        r = b.CreateBitCast(b.CreateShl(b.CreateZExt(bf16_round(r), b.getInt32Ty()), 16),
                            b.getFloatTy());
      if (e.dtype == DType::f16 && !lanes)
        r = b.CreateFPExt(b.CreateFPTrunc(r, b.getHalfTy()), b.getFloatTy());
      break;
    }
    case Op::neg: r = fl ? b.CreateFNeg(a) : b.CreateNeg(a); break;
    case Op::abs:
      r = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a)
             : b.CreateSelect(b.CreateICmpSLT(a, i64(0)), b.CreateNeg(a), a);
      break;
    case Op::sqrt: r = b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, a); break;
    case Op::exp: r = ir_exp(b, a); break;
    case Op::log: r = ir_log(b, a); break;
    case Op::tanh: r = ir_tanh(b, a); break;
    case Op::sigmoid: r = ir_sigmoid(b, a); break;
    case Op::erf: r = ir_erf(b, a); break;
    case Op::floor: r = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, a) : a; break;
    case Op::ceil: r = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::ceil, a) : a; break;
    case Op::round: r = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, a) : a; break;
    case Op::trunc: r = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::trunc, a) : a; break;
    case Op::recip: r = b.CreateFDiv(llvm::ConstantFP::get(a->getType(), 1), a); break;
    case Op::logical_not: r = b.CreateNot(a); break;
    case Op::add: r = fl ? b.CreateFAdd(a, bb) : b.CreateAdd(a, bb); break;
    case Op::sub: r = fl ? b.CreateFSub(a, bb) : b.CreateSub(a, bb); break;
    case Op::mul: r = fl ? b.CreateFMul(a, bb) : b.CreateMul(a, bb); break;
    case Op::div:
      if (fl) {
        r = b.CreateFDiv(a, bb);
      } else {  // integer division by zero gives 0 instead of trapping
        Value *zero = b.CreateICmpEQ(bb, i64(0));
        Value *safe = b.CreateSelect(zero, i64(1), bb);
        r = b.CreateSelect(zero, i64(0), uns ? b.CreateUDiv(a, safe) : b.CreateSDiv(a, safe));
      }
      break;
    case Op::mod:
      if (fl) {  // a - floor(a/b)*b
        r = b.CreateFSub(
            a,
            b.CreateFMul(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b.CreateFDiv(a, bb)), bb));
      } else if (uns) {
        Value *zero = b.CreateICmpEQ(bb, i64(0));
        r = b.CreateSelect(zero, i64(0), b.CreateURem(a, b.CreateSelect(zero, i64(1), bb)));
      } else {
        Value *zero = b.CreateICmpEQ(bb, i64(0));
        Value *safe = b.CreateSelect(zero, i64(1), bb);
        Value *m = b.CreateSRem(a, safe);
        Value *fix =
            b.CreateAnd(b.CreateICmpNE(m, i64(0)),
                        b.CreateICmpNE(b.CreateICmpSLT(m, i64(0)), b.CreateICmpSLT(safe, i64(0))));
        r = b.CreateSelect(zero, i64(0), b.CreateSelect(fix, b.CreateAdd(m, safe), m));
      }
      break;
    case Op::pow:
      if (fl) {
        r = ir_pow(b, a, bb);
      } else {
        Value *fa = uns ? b.CreateUIToFP(a, b.getDoubleTy()) : b.CreateSIToFP(a, b.getDoubleTy());
        Value *fb = k.exprs[e.b].dtype == DType::u64 ? b.CreateUIToFP(bb, b.getDoubleTy())
                                                     : b.CreateSIToFP(bb, b.getDoubleTy());
        r = to_i64(b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, ir_pow(b, fa, fb)));
      }
      break;
    case Op::max:
      r = afl ? b.CreateSelect(b.CreateFCmpUGT(a, bb), a, bb)
              : b.CreateSelect(uns ? b.CreateICmpUGT(a, bb) : b.CreateICmpSGT(a, bb), a, bb);
      if (afl) r = b.CreateSelect(b.CreateFCmpUNO(bb, bb), bb, r);
      break;
    case Op::min:
      r = afl ? b.CreateSelect(b.CreateFCmpULT(a, bb), a, bb)
              : b.CreateSelect(uns ? b.CreateICmpULT(a, bb) : b.CreateICmpSLT(a, bb), a, bb);
      if (afl) r = b.CreateSelect(b.CreateFCmpUNO(bb, bb), bb, r);
      break;
    case Op::lt:
      r = afl ? b.CreateFCmpOLT(a, bb) : uns ? b.CreateICmpULT(a, bb) : b.CreateICmpSLT(a, bb);
      break;
    case Op::le:
      r = afl ? b.CreateFCmpOLE(a, bb) : uns ? b.CreateICmpULE(a, bb) : b.CreateICmpSLE(a, bb);
      break;
    case Op::gt:
      r = afl ? b.CreateFCmpOGT(a, bb) : uns ? b.CreateICmpUGT(a, bb) : b.CreateICmpSGT(a, bb);
      break;
    case Op::ge:
      r = afl ? b.CreateFCmpOGE(a, bb) : uns ? b.CreateICmpUGE(a, bb) : b.CreateICmpSGE(a, bb);
      break;
    case Op::eq: r = afl ? b.CreateFCmpOEQ(a, bb) : b.CreateICmpEQ(a, bb); break;
    case Op::ne: r = afl ? b.CreateFCmpUNE(a, bb) : b.CreateICmpNE(a, bb); break;
    case Op::logical_and: r = b.CreateAnd(a, bb); break;
    case Op::logical_or: r = b.CreateOr(a, bb); break;
    case Op::select: r = b.CreateSelect(a, bb, c); break;
  }
  // No default above, so -Wswitch names an op without a case; op_emitters_test runs them all.
  if (!r)
    throw Error(
        std::string("internal: the LLVM emitter (codegen/kernel_emit.cpp) gives no value for op ") +
        op_name(e.op));
  if (!lanes && r->getType() != ir_type(e.dtype)) r = convert(r, e.dtype, e.dtype);
  cache[i] = r;
  return r;
}

// Evaluates root fresh at the current point (LICM hoists what does not change).
Value *KernelEmitter::evaluate(int root, bool body) {
  cache.clear();
  in_body = body;
  valid = nullptr;
  Value *v = eval(root);
  in_body = false;
  return v;
}

void KernelEmitter::store_result(Value *v) {
  const Access &s = k.store;
  Value *ok;
  Value *off = access_offset(s, -1, &ok);
  DType bt = p.buffers[s.buffer].dtype;
  Value *m = v;
  if (bt == DType::boolean)
    m = b.CreateZExt(v, b.getInt8Ty());
  else if (bt == DType::f16)
    m = b.CreateFPTrunc(v, b.getHalfTy());
  else if (bt == DType::bf16)
    m = bf16_round(v);
  else if (!dtype_is_float(bt))
    m = b.CreateTrunc(v, mem_type(bt));
  auto emit = [&] { b.CreateStore(m, element_ptr(s.buffer, off)); };
  if (ok)
    guarded(ok, emit);
  else
    emit();
}

// A float32 to bfloat16's bits, rounded to nearest even; NaN stays a quiet NaN (its top bits kept,
// the quiet bit set). Sources: Intel BF16 whitepaper (rev 1.0, 2018) section 2; the same rule as
// bf16_from_float in graph/tensor.cpp, which folding uses.
Value *KernelEmitter::bf16_round(Value *v) {
  Value *bits = b.CreateBitCast(v, b.getInt32Ty());
  Value *lsb = b.CreateAnd(b.CreateLShr(bits, 16), b.getInt32(1));
  Value *rounded = b.CreateLShr(b.CreateAdd(bits, b.CreateAdd(b.getInt32(0x7FFF), lsb)), 16);
  Value *quiet = b.CreateOr(b.CreateLShr(bits, 16), b.getInt32(0x40));
  return b.CreateTrunc(b.CreateSelect(b.CreateFCmpUNO(v, v), quiet, rounded), b.getInt16Ty());
}

Value *KernelEmitter::combine(Value *acc, Value *v) {
  bool fl = acc->getType()->isFloatingPointTy();
  switch (k.reduce) {
    case Reduce::sum: return fl ? b.CreateFAdd(acc, v) : b.CreateAdd(acc, v);
    case Reduce::prod: return fl ? b.CreateFMul(acc, v) : b.CreateMul(acc, v);
    // NaN propagates as in the interpreter: a NaN value replaces the accumulator, and a NaN
    // accumulator stays (an unordered compare alone would let the next number replace it).
    case Reduce::max:
      return fl ? b.CreateSelect(b.CreateOr(b.CreateFCmpOGT(v, acc), b.CreateFCmpUNO(v, v)), v, acc)
                : b.CreateSelect(
                      k.acc_dtype == DType::u64 ? b.CreateICmpUGT(v, acc) : b.CreateICmpSGT(v, acc),
                      v, acc);
    case Reduce::min:
      return fl ? b.CreateSelect(b.CreateOr(b.CreateFCmpOLT(v, acc), b.CreateFCmpUNO(v, v)), v, acc)
                : b.CreateSelect(
                      k.acc_dtype == DType::u64 ? b.CreateICmpULT(v, acc) : b.CreateICmpSLT(v, acc),
                      v, acc);
    case Reduce::none: break;
  }
  return v;
}

// The loops over all axes in [first, last) with iv bound; body runs at the innermost point.
// Loops over the given axes, outermost first.
void KernelEmitter::nest_order(const std::vector<int> &axes, size_t at,
                               const std::function<void()> &body) {
  if (at == axes.size()) return body();
  loop(k.axes[axes[at]], [&](Value *i) {
    iv[axes[at]] = i;
    nest_order(axes, at + 1, body);
  });
}

void KernelEmitter::nest(int first, int last, const std::function<void()> &body) {
  if (first == last) return body();
  loop(k.axes[first], [&](Value *i) {
    iv[first] = i;
    nest(first + 1, last, body);
  });
}

Value *KernelEmitter::floor_div(Value *a, int64_t d) {  // d > 0
  Value *q = b.CreateSDiv(a, i64(d));
  Value *fix =
      b.CreateAnd(b.CreateICmpNE(b.CreateSRem(a, i64(d)), i64(0)), b.CreateICmpSLT(a, i64(0)));
  return b.CreateSub(q, b.CreateZExt(fix, b.getInt64Ty()));
}

void KernelEmitter::emit_point(Value *acc) {
  if (k.reduce != Reduce::none) {
    llvm::Type *at = ir_type(k.acc_dtype);
    b.CreateStore(constant(reduce_identity(k.reduce), k.acc_dtype), acc);
    nest(k.n_parallel, (int)k.axes.size(), [&] {
      Value *v = convert(evaluate(k.body, true), k.exprs[k.body].dtype, k.acc_dtype);
      Value *old = b.CreateLoad(at, acc);
      llvm::FastMathFlags saved = b.getFastMathFlags(), fmf = saved;
      fmf.setAllowReassoc(true);  // lets the vectorizer split the sum into lanes
      b.setFastMathFlags(fmf);
      Value *nv = combine(old, v);
      b.setFastMathFlags(saved);
      if (valid) nv = b.CreateSelect(valid, nv, old);
      b.CreateStore(nv, acc);
    });
    acc_value = b.CreateLoad(at, acc);
  }
  store_result(evaluate(k.result, false));
}

// A structural key: kernels with equal keys compile to identical code.
std::string kernel_key(const Kernel &k, const Program &p) {
  std::vector<int> slots = kernel_slots(k);
  auto slot = [&](int buf) { return std::find(slots.begin(), slots.end(), buf) - slots.begin(); };
  std::string s;
  auto put = [&](int64_t v) { s += std::to_string(v) + ","; };
  for (int64_t a : k.axes) put(a);
  put(k.n_parallel);
  auto access = [&](const Access &a) {
    put(slot(a.buffer));
    put((int)p.buffers[a.buffer].dtype);
    put(a.offset);
    s += std::to_string(a.fill) + ";";
    for (const DimIndex &d : a.dims) {
      for (const AxisTerm &t : d.terms) {
        put(t.axis);
        put(t.coef);
      }
      s += "|";
      put(d.shift);
      put(d.expr);
      put(d.extent);
      put(d.stride);
      put((int)d.bound);
      put(d.divisor);
    }
    s += "/";
  };
  for (const Access &a : k.loads) access(a);
  access(k.store);
  for (const Expr &e : k.exprs) {
    put((int)e.op);
    put((int)e.dtype);
    put(e.a);
    put(e.b);
    put(e.c);
    put(e.access);
    s += std::to_string(e.value) + ";";
  }
  put(k.body);
  put((int)k.reduce);
  put((int)k.acc_dtype);
  put(k.result);
  put((int)k.store_dtype);
  return s;
}

std::string kernel_symbol(const Kernel &k, int index) {
  std::string s = "cg_" + std::to_string(index) + "_";
  for (char c : k.name) s += std::isalnum((unsigned char)c) ? c : '_';
  return s.substr(0, 80);
}

KernelDedupe kernels_dedupe(const Program &p) {
  KernelDedupe d;
  std::map<std::string, int> unique;
  for (size_t i = 0; i < p.kernels.size(); i++) {
    kernel_check(p.kernels[i], p);
    auto [it, fresh] = unique.emplace(kernel_key(p.kernels[i], p), (int)d.reps.size());
    if (fresh) d.reps.push_back((int)i);
    d.unique_of.push_back(it->second);
  }
  return d;
}

void llvm_init_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

std::unique_ptr<llvm::TargetMachine> target_machine_create(const std::string &triple,
                                                           const std::string &cpu,
                                                           const std::string &features) {
  llvm_init_once();
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw Error("LLVM has no backend for " + triple + ": " + err);
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(triple, cpu, features, opts, llvm::Reloc::PIC_,
                                  llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
  if (!tm) throw Error("LLVM cannot create a target machine for " + triple + " " + cpu);
  return tm;
}

std::vector<uint8_t> module_compile(llvm::Module &m, llvm::TargetMachine &tm,
                                    llvm::CodeGenFileType type, bool strength_reduce) {
  const std::string triple = tm.getTargetTriple().str();
  m.setTargetTriple(triple);
  m.setDataLayout(tm.createDataLayout());
  std::string verr;
  llvm::raw_string_ostream vs(verr);
  if (llvm::verifyModule(m, &vs))
    throw Error("internal: generated LLVM IR is invalid: " + vs.str().substr(0, 2000));
  if (getenv("CAPGRAPH_DUMP_IR")) {  // modules compile in parallel: one at a time on stderr
    static std::mutex dump_mutex;
    std::lock_guard<std::mutex> lock(dump_mutex);
    m.print(llvm::errs(), nullptr);
  }
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(m, mam);

  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager cg;
  {
    // Loop strength reduction is in the code generator's pipeline unless LLVM's process-wide
    // option `disable-lsr` is set when the pipeline is built: set it for this pipeline only, under
    // a lock (modules of different targets may build their pipelines on parallel threads).
    static std::mutex lsr_mutex;
    std::lock_guard<std::mutex> lock(lsr_mutex);
    static auto *disable_lsr =
        static_cast<llvm::cl::opt<bool> *>(llvm::cl::getRegisteredOptions().lookup("disable-lsr"));
    if (disable_lsr) disable_lsr->setValue(!strength_reduce);
    if (tm.addPassesToEmitFile(cg, os, nullptr, type))
      throw Error("internal: LLVM cannot emit objects for " + triple);
  }
  cg.run(m);
  return std::vector<uint8_t>(buf.begin(), buf.end());
}

void parallel_run(int n, const std::function<void(int)> &build) { parallel_pull(n, n, build); }

void parallel_pull(int n, int workers, const std::function<void(int)> &build) {
  if (workers <= 0) workers = (int)std::max(1u, std::thread::hardware_concurrency());
  workers = std::min(workers, n);
  std::vector<std::string> errors(n);
  std::atomic<int> next{0};
  auto work = [&] {
    for (int o = next++; o < n; o = next++) {
      try {
        build(o);
      } catch (const std::exception &ex) {
        errors[o] = ex.what();
      }
    }
  };
  std::vector<std::thread> threads;
  for (int w = 1; w < workers; w++) threads.emplace_back(work);
  if (n > 0) work();
  for (auto &th : threads) th.join();
  for (const std::string &e : errors)
    if (!e.empty()) throw Error(e);
}

}  // namespace capgraph
