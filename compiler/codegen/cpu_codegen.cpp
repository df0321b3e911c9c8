#include "codegen/cpu_codegen.h"

#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>

#include <map>
#include <mutex>
#include <thread>

#include "codegen/math_ir.h"
#include "error.h"

namespace capgraph {

using llvm::Value;

std::vector<int> kernel_slots(const Kernel &k) {
  std::vector<int> slots = {k.store.buffer};
  for (const Access &a : k.loads)
    if (std::find(slots.begin(), slots.end(), a.buffer) == slots.end()) slots.push_back(a.buffer);
  return slots;
}

int64_t kernel_work_size(const Kernel &k) {
  int64_t w = 1;
  for (int i = 0; i + 1 < k.n_parallel; i++) w *= k.axes[i];
  return w;
}

namespace {

// The register-blocked layout for products of two operands (convolutions, matrix products):
// body = X * W where X walks memory contiguously along the innermost parallel axis and does not
// depend on axis `o`, and W depends on `o` but not on the innermost axis. A tile of `block`
// values of o times `lanes * 2` positions accumulates in vector registers across all reduction
// loops; X is read once per tile row and shared by the whole block of o.
struct TilePlan {
  bool ok = false;
  int x = -1, w = -1;       // load indices
  int x_dim = -1;           // X's dimension that moves with the innermost axis
  int o = -1;               // the blocked parallel axis
  int64_t block = 1;        // values of o per tile
};

bool depends_on(const Access &a, int axis) {
  for (const DimIndex &d : a.dims)
    for (const AxisTerm &t : d.terms)
      if (t.axis == axis && t.coef != 0) return true;
  return false;
}

TilePlan tile_plan(const Kernel &k, const Program &p) {
  TilePlan tp;
  if (k.reduce != Reduce::sum || k.acc_dtype != DType::f32 || k.n_parallel < 2 || getenv("CAPGRAPH_NO_TILE")) return tp;
  const Expr &body = k.exprs[k.body];
  if (body.op != Op::mul) return tp;
  const Expr &ea = k.exprs[body.a], &eb = k.exprs[body.b];
  if (ea.op != Op::load || eb.op != Op::load || ea.dtype != DType::f32 || eb.dtype != DType::f32) return tp;
  int inner = k.n_parallel - 1;
  if (k.axes[inner] < 8) return tp;
  int la = ea.access, lb = eb.access;
  if (p.buffers[k.loads[la].buffer].dtype != DType::f32 || p.buffers[k.loads[lb].buffer].dtype != DType::f32) return tp;
  bool a_in = depends_on(k.loads[la], inner), b_in = depends_on(k.loads[lb], inner);
  if (a_in == b_in) return tp;
  tp.x = a_in ? la : lb;
  tp.w = a_in ? lb : la;
  const Access &X = k.loads[tp.x], &W = k.loads[tp.w];
  for (size_t di = 0; di < X.dims.size(); di++) {
    const DimIndex &d = X.dims[di];
    if (d.expr >= 0 || d.divisor != 1 || (d.bound != Bound::none && d.bound != Bound::skip)) return tp;
    int64_t c = 0;
    for (const AxisTerm &t : d.terms)
      if (t.axis == inner) c += t.coef;
    if (c == 0) continue;
    if (tp.x_dim >= 0 || c != 1 || d.stride != 1) return tp;  // contiguous along the inner axis only
    tp.x_dim = (int)di;
  }
  if (tp.x_dim < 0) return tp;
  for (const DimIndex &d : W.dims)
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return tp;
  for (int a = inner - 1; a >= 0 && tp.o < 0; a--)
    if (k.axes[a] > 1 && depends_on(W, a) && !depends_on(X, a)) tp.o = a;
  if (tp.o >= 0)
    for (int64_t bsz : {6, 4, 3, 2})
      if (k.axes[tp.o] % bsz == 0) {
        tp.block = bsz;
        break;
      }
  tp.ok = true;
  return tp;
}

int vector_lanes(const CpuTarget &t) {
  return t.features.find("+avx2") != std::string::npos || t.features.find("+avx,") != std::string::npos ? 8 : 4;
}

// How a reduction kernel is laid out in loops.
enum class Strategy {
  map,  // no reduction: a loop over the innermost parallel axis
  row,  // per tile of the innermost parallel axis: accumulators in an array, reduction loops
        // outside, the tile loop innermost (contiguous along output rows: convolutions, pooling)
  dot,  // per output point: a scalar accumulator, reduction loops innermost (dot products)
  tile, // register-blocked products (see TilePlan)
};

struct KernelEmitter {
  llvm::LLVMContext &ctx;
  llvm::Module &mod;
  llvm::IRBuilder<> b;
  const Kernel &k;
  const Program &p;
  llvm::Function *fn = nullptr;
  std::vector<int> slots;
  std::map<int, Value *> slot_ptr;      // buffer -> pointer argument
  std::vector<Value *> iv;              // current index of each axis (i64)
  Value *acc_value = nullptr;           // Op::acc inside the result
  std::map<int, Value *> cache;         // expression values of the current evaluation
  Value *valid = nullptr;               // AND of per-element skip checks in the current body
  std::vector<std::vector<char>> checked;  // [load][dim]: validity already ensured by the loops

  KernelEmitter(llvm::Module &m, const Kernel &kk, const Program &pp)
      : ctx(m.getContext()), mod(m), b(m.getContext()), k(kk), p(pp) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true);
    b.setFastMathFlags(fmf);
    checked.resize(k.loads.size());
    for (size_t i = 0; i < k.loads.size(); i++) checked[i].assign(k.loads[i].dims.size(), 0);
  }

  llvm::Type *ir_type(DType t) {
    switch (t) {
      case DType::f32: case DType::f16: return b.getFloatTy();
      case DType::f64: return b.getDoubleTy();
      case DType::boolean: return b.getInt1Ty();
      default: return b.getInt64Ty();
    }
  }
  llvm::Type *mem_type(DType t) {
    switch (t) {
      case DType::f32: return b.getFloatTy();
      case DType::f16: return b.getHalfTy();
      case DType::f64: return b.getDoubleTy();
      case DType::i8: case DType::u8: case DType::boolean: return b.getInt8Ty();
      case DType::i16: return b.getInt16Ty();
      case DType::i32: return b.getInt32Ty();
      case DType::i64: return b.getInt64Ty();
    }
    return nullptr;
  }
  Value *i64(int64_t v) { return b.getInt64(v); }

  // ---- loops -------------------------------------------------------------------------------
  // for (i = lo; i < hi; i++) body(i)
  void loop(Value *lo, Value *hi, const std::function<void(Value *)> &body) {
    llvm::BasicBlock *pre = b.GetInsertBlock();
    llvm::BasicBlock *head = llvm::BasicBlock::Create(ctx, "loop", fn), *bodyb = llvm::BasicBlock::Create(ctx, "body", fn),
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
    b.CreateBr(head);
    b.SetInsertPoint(exit);
  }
  void loop(int64_t n, const std::function<void(Value *)> &body) { loop(i64(0), i64(n), body); }
  // Runs body only if cond holds.
  void guarded(Value *cond, const std::function<void()> &body) {
    llvm::BasicBlock *then = llvm::BasicBlock::Create(ctx, "then", fn), *done = llvm::BasicBlock::Create(ctx, "done", fn);
    b.CreateCondBr(cond, then, done);
    b.SetInsertPoint(then);
    body();
    b.CreateBr(done);
    b.SetInsertPoint(done);
  }

  // ---- indexing ----------------------------------------------------------------------------
  // sum(coef * iv) + shift, skipping the terms of axis `except` (when >= 0).
  Value *affine(const DimIndex &d, int except = -1) {
    Value *r = i64(d.shift);
    for (const AxisTerm &t : d.terms) {
      if (t.axis == except) continue;
      r = b.CreateAdd(r, b.CreateMul(iv[t.axis], i64(t.coef), "", false, true), "", false, true);
    }
    return r;
  }
  int64_t coef_of(const DimIndex &d, int axis) {
    int64_t c = 0;
    for (const AxisTerm &t : d.terms)
      if (t.axis == axis) c += t.coef;
    return c;
  }

  // Element offset of an access at the current point. Sets *ok to the validity of skip bounds not
  // already ensured by the loop structure (nullptr if always valid).
  Value *access_offset(const Access &a, int load, Value **ok) {
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
      off = b.CreateAdd(off, b.CreateMul(idx, i64(d.stride), "", false, true), "", false, true);
    }
    return off;
  }

  Value *element_ptr(int buffer, Value *off) {
    return b.CreateInBoundsGEP(mem_type(p.buffers[buffer].dtype), slot_ptr[buffer], off);
  }

  // ---- values ------------------------------------------------------------------------------
  Value *to_i64(Value *v) {
    if (v->getType()->isIntegerTy(64)) return v;
    if (v->getType()->isIntegerTy()) return b.CreateZExt(v, b.getInt64Ty());
    return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {b.getInt64Ty(), v->getType()}, {v});
  }

  Value *convert(Value *v, DType from, DType to) {
    llvm::Type *t = ir_type(to);
    if (v->getType() == t) return v;
    bool ff = v->getType()->isFloatingPointTy(), tf = t->isFloatingPointTy();
    if (ff && tf) return b.CreateFPCast(v, t);
    if (to == DType::boolean) return ff ? b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0)) : b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
    if (ff) return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {t, v->getType()}, {v});
    if (tf) return from == DType::boolean ? b.CreateUIToFP(v, t) : b.CreateSIToFP(v, t);
    return b.CreateZExt(v, t);
  }

  Value *load_value(const Expr &e) {
    const Access &a = k.loads[e.access];
    DType bt = p.buffers[a.buffer].dtype;
    Value *ok;
    Value *off = access_offset(a, e.access, &ok);
    Value *raw = b.CreateLoad(mem_type(bt), element_ptr(a.buffer, off));
    Value *v;
    switch (bt) {
      case DType::f16: v = b.CreateFPExt(raw, b.getFloatTy()); break;
      case DType::boolean: v = b.CreateICmpNE(raw, b.getInt8(0)); break;
      case DType::u8: v = b.CreateZExt(raw, b.getInt64Ty()); break;
      case DType::i8: case DType::i16: case DType::i32: v = b.CreateSExt(raw, b.getInt64Ty()); break;
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
  bool in_body = false;

  Value *constant(double v, DType t) {
    llvm::Type *ty = ir_type(t);
    if (ty->isFloatingPointTy()) return llvm::ConstantFP::get(ty, v);
    if (ty->isIntegerTy(1)) return b.getInt1(v != 0);
    return llvm::ConstantInt::get(ty, (uint64_t)(int64_t)v, true);
  }

  Value *eval(int i) {
    auto it = cache.find(i);
    if (it != cache.end()) return it->second;
    const Expr &e = k.exprs[i];
    bool fl = dtype_is_float(e.dtype);
    Value *a = nullptr, *bb = nullptr, *c = nullptr;
    int n = op_arity(e.op);
    if (n > 0) a = eval(e.a);
    if (n > 1) bb = eval(e.b);
    if (n > 2) c = eval(e.c);
    // Binary/compare operands share the type of the first (the scheduler casts explicitly).
    bool afl = a && a->getType()->isFloatingPointTy();
    Value *r = nullptr;
    switch (e.op) {
      case Op::constant: r = constant(e.value, e.dtype); break;
      case Op::load: r = load_value(e); break;
      case Op::acc: r = acc_value; break;
      case Op::iota: r = convert(iv[e.access], DType::i64, e.dtype); break;
      case Op::cast: {
        DType from = k.exprs[e.a].dtype;
        r = convert(a, from, e.dtype);
        break;
      }
      case Op::neg: r = fl ? b.CreateFNeg(a) : b.CreateNeg(a); break;
      case Op::abs: r = fl ? b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, a) : b.CreateSelect(b.CreateICmpSLT(a, i64(0)), b.CreateNeg(a), a); break;
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
          r = b.CreateSelect(zero, i64(0), b.CreateSDiv(a, b.CreateSelect(zero, i64(1), bb)));
        }
        break;
      case Op::mod:
        if (fl) {  // a - floor(a/b)*b
          r = b.CreateFSub(a, b.CreateFMul(b.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b.CreateFDiv(a, bb)), bb));
        } else {
          Value *zero = b.CreateICmpEQ(bb, i64(0));
          Value *safe = b.CreateSelect(zero, i64(1), bb);
          Value *m = b.CreateSRem(a, safe);
          Value *fix = b.CreateAnd(b.CreateICmpNE(m, i64(0)), b.CreateICmpNE(b.CreateICmpSLT(m, i64(0)), b.CreateICmpSLT(safe, i64(0))));
          r = b.CreateSelect(zero, i64(0), b.CreateSelect(fix, b.CreateAdd(m, safe), m));
        }
        break;
      case Op::pow:
        if (fl) {
          r = ir_pow(b, a, bb);
        } else {
          Value *fa = b.CreateSIToFP(a, b.getDoubleTy()), *fb = b.CreateSIToFP(bb, b.getDoubleTy());
          r = to_i64(b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, ir_pow(b, fa, fb)));
        }
        break;
      case Op::max:
        r = afl ? b.CreateSelect(b.CreateFCmpUGT(a, bb), a, bb) : b.CreateSelect(b.CreateICmpSGT(a, bb), a, bb);
        if (afl) r = b.CreateSelect(b.CreateFCmpUNO(bb, bb), bb, r);
        break;
      case Op::min:
        r = afl ? b.CreateSelect(b.CreateFCmpULT(a, bb), a, bb) : b.CreateSelect(b.CreateICmpSLT(a, bb), a, bb);
        if (afl) r = b.CreateSelect(b.CreateFCmpUNO(bb, bb), bb, r);
        break;
      case Op::lt: r = afl ? b.CreateFCmpOLT(a, bb) : b.CreateICmpSLT(a, bb); break;
      case Op::le: r = afl ? b.CreateFCmpOLE(a, bb) : b.CreateICmpSLE(a, bb); break;
      case Op::gt: r = afl ? b.CreateFCmpOGT(a, bb) : b.CreateICmpSGT(a, bb); break;
      case Op::ge: r = afl ? b.CreateFCmpOGE(a, bb) : b.CreateICmpSGE(a, bb); break;
      case Op::eq: r = afl ? b.CreateFCmpOEQ(a, bb) : b.CreateICmpEQ(a, bb); break;
      case Op::ne: r = afl ? b.CreateFCmpUNE(a, bb) : b.CreateICmpNE(a, bb); break;
      case Op::logical_and: r = b.CreateAnd(a, bb); break;
      case Op::logical_or: r = b.CreateOr(a, bb); break;
      case Op::select: r = b.CreateSelect(a, bb, c); break;
    }
    if (r->getType() != ir_type(e.dtype)) r = convert(r, e.dtype, e.dtype);
    cache[i] = r;
    return r;
  }

  // Evaluates root fresh at the current point (LICM hoists what does not change).
  Value *evaluate(int root, bool body) {
    cache.clear();
    in_body = body;
    valid = nullptr;
    Value *v = eval(root);
    in_body = false;
    return v;
  }

  void store_result(Value *v) {
    const Access &s = k.store;
    Value *ok;
    Value *off = access_offset(s, -1, &ok);
    DType bt = p.buffers[s.buffer].dtype;
    Value *m = v;
    if (bt == DType::boolean) m = b.CreateZExt(v, b.getInt8Ty());
    else if (bt == DType::f16) m = b.CreateFPTrunc(v, b.getHalfTy());
    else if (!dtype_is_float(bt)) m = b.CreateTrunc(v, mem_type(bt));
    auto emit = [&] { b.CreateStore(m, element_ptr(s.buffer, off)); };
    if (ok) guarded(ok, emit);
    else emit();
  }

  Value *combine(Value *acc, Value *v) {
    bool fl = acc->getType()->isFloatingPointTy();
    switch (k.reduce) {
      case Reduce::sum: return fl ? b.CreateFAdd(acc, v) : b.CreateAdd(acc, v);
      case Reduce::prod: return fl ? b.CreateFMul(acc, v) : b.CreateMul(acc, v);
      // NaN propagates as in the interpreter: a NaN value replaces the accumulator, and a NaN
      // accumulator stays (an unordered compare alone would let the next number replace it).
      case Reduce::max:
        return fl ? b.CreateSelect(b.CreateOr(b.CreateFCmpOGT(v, acc), b.CreateFCmpUNO(v, v)), v, acc)
                  : b.CreateSelect(b.CreateICmpSGT(v, acc), v, acc);
      case Reduce::min:
        return fl ? b.CreateSelect(b.CreateOr(b.CreateFCmpOLT(v, acc), b.CreateFCmpUNO(v, v)), v, acc)
                  : b.CreateSelect(b.CreateICmpSLT(v, acc), v, acc);
      case Reduce::none: break;
    }
    return v;
  }

  // ---- strategies --------------------------------------------------------------------------
  int inner_axis() const { return k.n_parallel - 1; }

  // Counts the body's loads that walk memory with unit stride along `axis`.
  int unit_stride_loads(int axis) {
    int n = 0;
    for (const Access &a : k.loads) {
      int64_t c = 0;
      for (const DimIndex &d : a.dims) c += coef_of(d, axis) * d.stride;
      n += c == 1;
    }
    return n;
  }

  Strategy choose() {
    if (k.reduce == Reduce::none) return Strategy::map;
    if (const char *f = getenv("CAPGRAPH_STRATEGY")) return std::string(f) == "dot" ? Strategy::dot : Strategy::row;
    int last_red = (int)k.axes.size() - 1;
    if (k.axes[inner_axis()] == 1) return Strategy::dot;
    // Vectorise along whichever innermost loop gives more contiguous work: unit-stride loads
    // weighted by how long the loop is (a 3-wide kernel window gives little to vectorise). The
    // row layout also stores contiguously, and needs no horizontal sum at the end.
    int64_t dot = unit_stride_loads(last_red) * std::min<int64_t>(k.axes[last_red], 64);
    int64_t row = (unit_stride_loads(inner_axis()) + 1) * std::min<int64_t>(k.axes[inner_axis()], 64);
    return dot > row ? Strategy::dot : Strategy::row;
  }

  // The loops over all axes in [first, last) with iv bound; body runs at the innermost point.
  // Loops over the given axes, outermost first.
  void nest_order(const std::vector<int> &axes, size_t at, const std::function<void()> &body) {
    if (at == axes.size()) return body();
    loop(k.axes[axes[at]], [&](Value *i) {
      iv[axes[at]] = i;
      nest_order(axes, at + 1, body);
    });
  }

  void nest(int first, int last, const std::function<void()> &body) {
    if (first == last) return body();
    loop(k.axes[first], [&](Value *i) {
      iv[first] = i;
      nest(first + 1, last, body);
    });
  }

  void emit_map() {
    int in = inner_axis();
    loop(k.axes[in], [&](Value *j) {
      iv[in] = j;
      store_result(evaluate(k.result, false));
    });
  }

  void emit_dot(llvm::AllocaInst *acc) {
    int in = inner_axis(), na = (int)k.axes.size();
    llvm::Type *at = ir_type(k.acc_dtype);
    loop(k.axes[in], [&](Value *j) {
      iv[in] = j;
      b.CreateStore(constant(reduce_identity(k.reduce), k.acc_dtype), acc);
      nest(k.n_parallel, na, [&] {
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
      store_result(evaluate(k.result, false));
    });
  }

  // Which body loads/dims the row loops make valid by construction: skip bounds on dims that
  // do not involve the tile axis are checked once before the tile loop; dims moving with the
  // tile axis with unit-free affine index restrict the tile loop's range.
  void emit_row(llvm::AllocaInst *accs, int64_t tile) {
    int in = inner_axis(), na = (int)k.axes.size();
    int64_t L = k.axes[in];
    llvm::Type *at = ir_type(k.acc_dtype);
    llvm::Type *arr = llvm::ArrayType::get(at, tile);
    // Body loads: mark what the loop structure ensures.
    std::vector<char> body_load(k.loads.size(), 0);
    {
      std::vector<char> need(k.exprs.size(), 0);
      need[k.body] = 1;
      for (int i = k.body; i >= 0; i--) {
        if (!need[i]) continue;
        const Expr &e = k.exprs[i];
        int n = op_arity(e.op);
        if (n > 0) need[e.a] = 1;
        if (n > 1) need[e.b] = 1;
        if (n > 2) need[e.c] = 1;
        if (e.op == Op::load) {
          body_load[e.access] = 1;
          for (const DimIndex &d : k.loads[e.access].dims)
            if (d.expr >= 0) need[d.expr] = 1;
        }
      }
    }
    // Loads the result reads too must keep their own checks.
    std::vector<char> result_load(k.loads.size(), 0);
    for (int i = 0; i <= k.result; i++)
      if (k.exprs[i].op == Op::load) result_load[k.exprs[i].access] = 1;
    for (size_t li = 0; li < k.loads.size(); li++) {
      if (!body_load[li] || result_load[li]) continue;
      for (size_t di = 0; di < k.loads[li].dims.size(); di++) {
        const DimIndex &d = k.loads[li].dims[di];
        if (d.bound == Bound::skip && d.expr < 0 && d.divisor == 1) checked[li][di] = 1;
      }
    }
    loop(i64(0), i64((L + tile - 1) / tile), [&](Value *t) {
      Value *t0 = b.CreateMul(t, i64(tile));
      Value *t1 = b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(t0, i64(tile)), i64(L)), b.CreateAdd(t0, i64(tile)), i64(L));
      loop(tile, [&](Value *j) {
        b.CreateStore(constant(reduce_identity(k.reduce), k.acc_dtype), b.CreateInBoundsGEP(arr, accs, {i64(0), j}));
      });
      nest(k.n_parallel, na, [&] {
        // Range of the tile axis where every checked dim is in range, and the checks that do
        // not depend on it.
        Value *lo = t0, *hi = t1, *outer_ok = nullptr;
        for (size_t li = 0; li < k.loads.size(); li++)
          for (size_t di = 0; di < k.loads[li].dims.size(); di++) {
            if (!checked[li][di]) continue;
            const DimIndex &d = k.loads[li].dims[di];
            int64_t c = coef_of(d, in);
            Value *rest = affine(d, in);
            if (c == 0) {
              Value *ok = b.CreateICmpULT(rest, i64(d.extent));
              outer_ok = outer_ok ? b.CreateAnd(outer_ok, ok) : ok;
              continue;
            }
            // 0 <= c*j + rest < extent
            Value *a_lo, *a_hi;
            if (c > 0) {
              a_lo = ceil_div(b.CreateNeg(rest), c);
              a_hi = b.CreateAdd(floor_div(b.CreateSub(i64(d.extent - 1), rest), c), i64(1));
            } else {
              a_lo = ceil_div(b.CreateSub(rest, i64(d.extent - 1)), -c);
              a_hi = b.CreateAdd(floor_div(rest, -c), i64(1));
            }
            lo = b.CreateSelect(b.CreateICmpSGT(a_lo, lo), a_lo, lo);
            hi = b.CreateSelect(b.CreateICmpSLT(a_hi, hi), a_hi, hi);
          }
        auto inner = [&] {
          loop(lo, hi, [&](Value *j) {
            iv[in] = j;
            Value *v = convert(evaluate(k.body, true), k.exprs[k.body].dtype, k.acc_dtype);
            Value *slot = b.CreateInBoundsGEP(arr, accs, {i64(0), b.CreateSub(j, t0)});
            Value *old = b.CreateLoad(at, slot);
            Value *nv = combine(old, v);
            if (valid) nv = b.CreateSelect(valid, nv, old);
            b.CreateStore(nv, slot);
          });
        };
        if (outer_ok) guarded(outer_ok, inner);
        else inner();
      });
      loop(t0, t1, [&](Value *j) {
        iv[in] = j;
        acc_value = b.CreateLoad(at, b.CreateInBoundsGEP(arr, accs, {i64(0), b.CreateSub(j, t0)}));
        store_result(evaluate(k.result, false));
      });
    });
  }

  // The tile layout. Work items cover the outer parallel axes with axis o in blocks.
  void emit_tile(const TilePlan &tp, int lanes, const std::vector<llvm::AllocaInst *> &accs, llvm::AllocaInst *spill) {
    int in = inner_axis(), na = (int)k.axes.size();
    const int U = 2, T = lanes * U;
    int64_t L = k.axes[in], B = tp.block;
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    const Access &X = k.loads[tp.x];
    const DimIndex &xd = X.dims[tp.x_dim];
    Value *obase = tp.o >= 0 ? iv[tp.o] : nullptr;
    std::vector<llvm::Constant *> lane_ids;
    for (int l = 0; l < lanes; l++) lane_ids.push_back(b.getInt64(l));
    Value *lane_vec = llvm::ConstantVector::get(lane_ids);
    loop(i64(0), i64((L + T - 1) / T), [&](Value *t) {
      Value *j0 = b.CreateMul(t, i64(T));
      for (auto *a : accs) b.CreateStore(llvm::Constant::getNullValue(vt), a);
      // Reduction axes that move a bounds-checked index of X (the kernel window) outermost, the
      // others (input channels) innermost: the border checks then stay out of the hottest loop.
      std::vector<int> order, plain;
      for (int a = k.n_parallel; a < na; a++) {
        bool checked_axis = false;
        for (const DimIndex &d : X.dims)
          for (const AxisTerm &t2 : d.terms)
            if (t2.axis == a && d.bound != Bound::none) checked_axis = true;
        (checked_axis ? order : plain).push_back(a);
      }
      order.insert(order.end(), plain.begin(), plain.end());
      nest_order(order, 0, [&] {
        // X's offset at lane 0 of the tile, and the checks on its other dimensions.
        Value *off = i64(X.offset), *ok = nullptr, *raw = nullptr;
        for (size_t di = 0; di < X.dims.size(); di++) {
          const DimIndex &d = X.dims[di];
          if ((int)di == tp.x_dim) {
            raw = b.CreateAdd(affine(d, in), j0);
            off = b.CreateAdd(off, raw);
            continue;
          }
          Value *idx = affine(d);
          if (d.bound == Bound::skip) {
            Value *in_range = b.CreateICmpULT(idx, i64(d.extent));
            ok = ok ? b.CreateAnd(ok, in_range) : in_range;
          }
          off = b.CreateAdd(off, b.CreateMul(idx, i64(d.stride)));
        }
        auto body = [&] {
          // The block of W values, one per o.
          std::vector<Value *> wv;
          for (int64_t bo = 0; bo < B; bo++) {
            if (obase) iv[tp.o] = b.CreateAdd(obase, i64(bo));
            Value *wok;
            Value *woff = access_offset(k.loads[tp.w], -1, &wok);
            Value *wf = b.CreateLoad(b.getFloatTy(), element_ptr(k.loads[tp.w].buffer, woff));
            wv.push_back(b.CreateVectorSplat(lanes, wf));
          }
          if (obase) iv[tp.o] = obase;
          // All lanes in range: plain loads; at borders and the tail: masked loads.
          Value *full = b.CreateICmpSLE(b.CreateAdd(j0, i64(T)), i64(L));
          if (xd.bound == Bound::skip)
            full = b.CreateAnd(full, b.CreateAnd(b.CreateICmpSGE(raw, i64(0)), b.CreateICmpSLE(b.CreateAdd(raw, i64(T)), i64(xd.extent))));
          llvm::BasicBlock *fast = llvm::BasicBlock::Create(ctx, "tile_full", fn), *slow = llvm::BasicBlock::Create(ctx, "tile_edge", fn),
                           *join = llvm::BasicBlock::Create(ctx, "tile_join", fn);
          b.CreateCondBr(full, fast, slow);
          Value *base_ptr = slot_ptr[X.buffer];
          std::vector<Value *> xf(U), xs(U);
          b.SetInsertPoint(fast);
          for (int u = 0; u < U; u++)
            xf[u] = b.CreateAlignedLoad(vt, b.CreateGEP(b.getFloatTy(), base_ptr, b.CreateAdd(off, i64(u * lanes))), llvm::Align(4));
          llvm::BasicBlock *fast_end = b.GetInsertBlock();
          b.CreateBr(join);
          b.SetInsertPoint(slow);
          for (int u = 0; u < U; u++) {
            Value *pos = b.CreateAdd(b.CreateVectorSplat(lanes, b.CreateAdd(j0, i64(u * lanes))), lane_vec);
            Value *mask = b.CreateICmpSLT(pos, b.CreateVectorSplat(lanes, i64(L)));
            if (xd.bound == Bound::skip) {
              Value *xi = b.CreateAdd(b.CreateVectorSplat(lanes, b.CreateAdd(raw, i64(u * lanes))), lane_vec);
              mask = b.CreateAnd(mask, b.CreateICmpULT(xi, b.CreateVectorSplat(lanes, i64(xd.extent))));
            }
            // Disabled lanes are never read (their addresses may lie outside the buffer).
            xs[u] = b.CreateMaskedLoad(vt, b.CreateGEP(b.getFloatTy(), base_ptr, b.CreateAdd(off, i64(u * lanes))), llvm::Align(4), mask,
                                       llvm::Constant::getNullValue(vt));
          }
          llvm::BasicBlock *slow_end = b.GetInsertBlock();
          b.CreateBr(join);
          b.SetInsertPoint(join);
          std::vector<llvm::PHINode *> xv(U);
          for (int u = 0; u < U; u++) {  // PHIs head the block
            xv[u] = b.CreatePHI(vt, 2);
            xv[u]->addIncoming(xf[u], fast_end);
            xv[u]->addIncoming(xs[u], slow_end);
          }
          for (int u = 0; u < U; u++) {
            Value *x = xv[u];
            for (int64_t bo = 0; bo < B; bo++) {
              llvm::AllocaInst *a = accs[bo * U + u];
              Value *acc = b.CreateLoad(vt, a);
              b.CreateStore(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {vt}, {x, wv[bo], acc}), a);
            }
          }
        };
        if (ok) guarded(ok, body);
        else body();
      });
      // Epilogue: the accumulators through the result expression, element by element.
      auto *row_ty = llvm::ArrayType::get(b.getFloatTy(), T);
      for (int64_t bo = 0; bo < B; bo++)
        for (int u = 0; u < U; u++)
          b.CreateAlignedStore(b.CreateLoad(vt, accs[bo * U + u]), b.CreateInBoundsGEP(row_ty, spill, {i64(bo), i64(u * lanes)}), llvm::Align(4));
      Value *jend = b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(j0, i64(T)), i64(L)), b.CreateAdd(j0, i64(T)), i64(L));
      loop(i64(0), i64(B), [&](Value *bo) {
        if (obase) iv[tp.o] = b.CreateAdd(obase, bo);
        loop(j0, jend, [&](Value *j) {
          iv[in] = j;
          acc_value = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(row_ty, spill, {bo, b.CreateSub(j, j0)}));
          store_result(evaluate(k.result, false));
        });
      });
      if (obase) iv[tp.o] = obase;
    });
  }

  Value *floor_div(Value *a, int64_t d) {  // d > 0
    Value *q = b.CreateSDiv(a, i64(d));
    Value *fix = b.CreateAnd(b.CreateICmpNE(b.CreateSRem(a, i64(d)), i64(0)), b.CreateICmpSLT(a, i64(0)));
    return b.CreateSub(q, b.CreateZExt(fix, b.getInt64Ty()));
  }
  Value *ceil_div(Value *a, int64_t d) { return b.CreateNeg(floor_div(b.CreateNeg(a), d)); }

  // ---- the function ------------------------------------------------------------------------
  void emit(const std::string &symbol, const CpuTarget &t) {
    slots = kernel_slots(k);
    llvm::Type *ptr = b.getPtrTy();
    std::vector<llvm::Type *> params(slots.size(), ptr);
    params.push_back(b.getInt64Ty());
    params.push_back(b.getInt64Ty());
    auto *impl_ty = llvm::FunctionType::get(b.getVoidTy(), params, false);
    fn = llvm::Function::Create(impl_ty, llvm::GlobalValue::InternalLinkage, symbol + ".impl", mod);
    for (size_t i = 0; i < slots.size(); i++) {
      fn->addParamAttr(i, llvm::Attribute::NoAlias);
      slot_ptr[slots[i]] = fn->getArg(i);
    }
    function_attrs(fn, t);
    fn->addFnAttr(llvm::Attribute::NoInline);
    llvm::BasicBlock *entry = llvm::BasicBlock::Create(ctx, "entry", fn);
    b.SetInsertPoint(entry);
    iv.assign(k.axes.size(), nullptr);
    TilePlan tp = tile_plan(k, p);
    Strategy s = tp.ok ? Strategy::tile : choose();
    int64_t tile = std::min<int64_t>(k.axes[inner_axis()], 256);
    int lanes = vector_lanes(t);
    llvm::AllocaInst *acc = nullptr;
    std::vector<llvm::AllocaInst *> accs;
    if (s == Strategy::row) acc = b.CreateAlloca(llvm::ArrayType::get(ir_type(k.acc_dtype), tile));
    if (s == Strategy::dot) acc = b.CreateAlloca(ir_type(k.acc_dtype));
    if (s == Strategy::tile) {
      for (int64_t i = 0; i < tp.block * 2; i++) accs.push_back(b.CreateAlloca(llvm::FixedVectorType::get(b.getFloatTy(), lanes)));
      acc = b.CreateAlloca(llvm::ArrayType::get(llvm::ArrayType::get(b.getFloatTy(), lanes * 2), tp.block));
    }
    Value *begin = fn->getArg(slots.size()), *end = fn->getArg(slots.size() + 1);
    loop(begin, end, [&](Value *w) {
      // work item -> outer parallel indices (the blocked axis counts blocks)
      Value *rem = w;
      for (int a = k.n_parallel - 2; a >= 0; a--) {
        int64_t n = s == Strategy::tile && a == tp.o ? k.axes[a] / tp.block : k.axes[a];
        if (n == 1) {
          iv[a] = i64(0);
          continue;
        }
        iv[a] = b.CreateURem(rem, i64(n));
        rem = b.CreateUDiv(rem, i64(n));
        if (s == Strategy::tile && a == tp.o) iv[a] = b.CreateMul(iv[a], i64(tp.block));
      }
      if (s == Strategy::map) emit_map();
      else if (s == Strategy::dot) emit_dot(acc);
      else if (s == Strategy::tile) emit_tile(tp, lanes, accs, acc);
      else emit_row(acc, tile);
    });
    b.CreateRetVoid();

    // The exported entry: unpack the buffer table, call the implementation.
    auto *entry_ty = llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, b.getInt64Ty(), b.getInt64Ty()}, false);
    llvm::Function *ef = llvm::Function::Create(entry_ty, llvm::GlobalValue::ExternalLinkage, symbol, mod);
    ef->setDSOLocal(true);
    function_attrs(ef, t);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", ef));
    std::vector<Value *> args;
    for (size_t i = 0; i < slots.size(); i++)
      args.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, ef->getArg(0), i)));
    args.push_back(ef->getArg(2));
    args.push_back(ef->getArg(3));
    b.CreateCall(fn, args);
    b.CreateRetVoid();
  }

  static void function_attrs(llvm::Function *f, const CpuTarget &t) {
    f->addFnAttr("target-cpu", t.cpu);
    if (!t.features.empty()) f->addFnAttr("target-features", t.features);
    // No libcalls: kernels import nothing (no memset for accumulator init, no libm).
    f->addFnAttr("no-builtins");
    f->addFnAttr(llvm::Attribute::NoUnwind);
    f->addFnAttr("frame-pointer", "none");
  }
};

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
      for (const AxisTerm &t : d.terms) { put(t.axis); put(t.coef); }
      s += "|";
      put(d.shift); put(d.expr); put(d.extent); put(d.stride); put((int)d.bound); put(d.divisor);
    }
    s += "/";
  };
  for (const Access &a : k.loads) access(a);
  access(k.store);
  for (const Expr &e : k.exprs) {
    put((int)e.op); put((int)e.dtype); put(e.a); put(e.b); put(e.c); put(e.access);
    s += std::to_string(e.value) + ";";
  }
  put(k.body); put((int)k.reduce); put((int)k.acc_dtype); put(k.result); put((int)k.store_dtype);
  return s;
}

std::string symbol_name(const Kernel &k, int index) {
  std::string s = "cg_" + std::to_string(index) + "_";
  for (char c : k.name) s += std::isalnum((unsigned char)c) ? c : '_';
  return s.substr(0, 80);
}

std::vector<uint8_t> module_compile(llvm::Module &m, const CpuTarget &t) {
  std::string err;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t.triple, err);
  if (!target) throw Error("LLVM has no backend for " + t.triple + ": " + err);
  llvm::TargetOptions opts;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(t.triple, t.cpu, t.features, opts, llvm::Reloc::PIC_,
                                                                      llvm::CodeModel::Small, llvm::CodeGenOptLevel::Aggressive));
  m.setTargetTriple(t.triple);
  m.setDataLayout(tm->createDataLayout());
  std::string verr;
  llvm::raw_string_ostream vs(verr);
  if (llvm::verifyModule(m, &vs)) throw Error("internal: generated LLVM IR is invalid: " + vs.str().substr(0, 2000));

  if (getenv("CAPGRAPH_DUMP_IR")) m.print(llvm::errs(), nullptr);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  llvm::PassBuilder pb(tm.get(), pto);
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
  if (tm->addPassesToEmitFile(cg, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw Error("internal: LLVM cannot emit objects for " + t.triple);
  cg.run(m);
  return std::vector<uint8_t>(buf.begin(), buf.end());
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

}  // namespace

CodegenResult cpu_codegen(const Program &p, const CpuTarget &t, int jobs) {
  llvm_init_once();
  CodegenResult r;
  r.kernels.resize(p.kernels.size());
  // Deduplicate, then deal unique kernels round-robin to `jobs` modules.
  std::map<std::string, int> unique;
  std::vector<int> reps;  // representative kernel of each unique entry
  for (size_t i = 0; i < p.kernels.size(); i++) {
    kernel_check(p.kernels[i], p);
    std::string key = kernel_key(p.kernels[i], p);
    auto it = unique.find(key);
    int u;
    if (it == unique.end()) {
      u = (int)reps.size();
      unique[key] = u;
      reps.push_back((int)i);
    } else {
      u = it->second;
    }
    r.kernels[i].slots = kernel_slots(p.kernels[i]);
    r.kernels[i].work_size = kernel_work_size(p.kernels[i]);
    TilePlan tp = tile_plan(p.kernels[i], p);
    if (tp.ok && tp.o >= 0) r.kernels[i].work_size /= tp.block;
    r.kernels[i].symbol = symbol_name(p.kernels[reps[u]], u);
    r.kernels[i].object = u % std::max(jobs, 1);
  }
  r.unique_kernels = (int)reps.size();
  int n_obj = std::min<int>(std::max(jobs, 1), std::max<int>((int)reps.size(), 1));
  for (auto &k : r.kernels) k.object %= n_obj;
  r.objects.resize(n_obj);
  std::vector<std::string> errors(n_obj);
  auto build = [&](int o) {
    try {
      llvm::LLVMContext ctx;
      llvm::Module m("capgraph_" + std::to_string(o), ctx);
      for (size_t u = 0; u < reps.size(); u++) {
        if ((int)(u % n_obj) != o) continue;
        KernelEmitter e(m, p.kernels[reps[u]], p);
        e.emit(symbol_name(p.kernels[reps[u]], (int)u), t);
      }
      r.objects[o] = module_compile(m, t);
    } catch (const std::exception &ex) {
      errors[o] = ex.what();
    }
  };
  std::vector<std::thread> threads;
  for (int o = 1; o < n_obj; o++) threads.emplace_back(build, o);
  build(0);
  for (auto &th : threads) th.join();
  for (const std::string &e : errors)
    if (!e.empty()) throw Error(e);
  return r;
}

}  // namespace capgraph
