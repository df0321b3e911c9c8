#include "codegen/cpu_codegen.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "codegen/cpu_channel_tile.h"
#include "codegen/cpu_matvec.h"
#include "codegen/expr_vector.h"
#include "codegen/kernel_emit.h"
#include "error.h"
#include "knobs.h"

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
  int x = -1, w = -1;  // load indices
  int x_dim = -1;      // X's dimension that moves with the innermost axis
  int64_t x_step = 1;  // ... by this many elements per step (1, or 2: stride-2 convolutions)
  int o = -1;          // the blocked parallel axis
  int64_t block = 1;   // values of o per tile
};

TilePlan tile_plan(const Kernel &k, const Program &p) {
  TilePlan tp;
  if (k.reduce != Reduce::sum || k.acc_dtype != DType::f32 || k.n_parallel < 2 ||
      knob_get("CAPGRAPH_NO_TILE"))
    return tp;
  const Expr &body = k.exprs[k.body];
  if (body.op != Op::mul) return tp;
  const Expr &ea = k.exprs[body.a], &eb = k.exprs[body.b];
  if (ea.op != Op::load || eb.op != Op::load || ea.dtype != DType::f32 || eb.dtype != DType::f32)
    return tp;
  int inner = k.n_parallel - 1;
  if (k.axes[inner] < 8) return tp;
  int la = ea.access, lb = eb.access;
  if (p.buffers[k.loads[la].buffer].dtype != DType::f32 ||
      p.buffers[k.loads[lb].buffer].dtype != DType::f32)
    return tp;
  bool a_in = access_uses(k.loads[la], inner), b_in = access_uses(k.loads[lb], inner);
  if (a_in == b_in) return tp;
  tp.x = a_in ? la : lb;
  tp.w = a_in ? lb : la;
  const Access &X = k.loads[tp.x], &W = k.loads[tp.w];
  for (size_t di = 0; di < X.dims.size(); di++) {
    const DimIndex &d = X.dims[di];
    if (d.expr >= 0 || d.divisor != 1 || (d.bound != Bound::none && d.bound != Bound::skip))
      return tp;
    int64_t c = 0;
    for (const AxisTerm &t : d.terms)
      if (t.axis == inner) c += t.coef;
    if (c == 0) continue;
    // Contiguous along the inner axis, or every other element (stride-2 convolutions on maps no
    // channel block fits: a row strategy there ran at ~2.5 GFLOP/s, NOTES issue 17).
    if (tp.x_dim >= 0 || (c != 1 && c != 2) || d.stride != 1) return tp;
    tp.x_dim = (int)di;
    tp.x_step = c;
  }
  if (tp.x_dim < 0) return tp;
  for (const DimIndex &d : W.dims)
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return tp;
  for (int a = inner - 1; a >= 0 && tp.o < 0; a--)
    if (k.axes[a] > 1 && access_uses(W, a) && !access_uses(X, a)) tp.o = a;
  if (tp.o >= 0)
    for (int64_t bsz : {6, 4, 3, 2})
      if (k.axes[tp.o] % bsz == 0) {
        tp.block = bsz;
        break;
      }
  tp.ok = true;
  return tp;
}

int vector_lanes(const CpuTarget &t) { return t.f32_lanes; }

// How a reduction kernel is laid out in loops.
enum class Strategy {
  map,     // no reduction: a loop over the innermost parallel axis
  row,     // per tile of the innermost parallel axis: accumulators in an array, reduction loops
           // outside, the tile loop innermost (contiguous along output rows: convolutions, pooling)
  dot,     // per output point: a scalar accumulator, reduction loops innermost (dot products)
  tile,    // register-blocked products (see TilePlan)
  ctile,   // register-blocked channel-blocked products (cpu_channel_tile.h)
  matvec,  // products against row-major weights, R outputs per item (cpu_matvec.h)
};

// The CPU loop layouts around the shared emitter: work items are rows, [begin, end) per call.
struct CpuKernelEmitter : KernelEmitter {
  using KernelEmitter::KernelEmitter;

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
    if (const char *f = knob_get("CAPGRAPH_STRATEGY"))
      return std::string(f) == "dot" ? Strategy::dot : Strategy::row;
    int last_red = (int)k.axes.size() - 1;
    if (k.axes[inner_axis()] == 1) return Strategy::dot;
    // Vectorise along whichever innermost loop gives more contiguous work: unit-stride loads
    // weighted by how long the loop is (a 3-wide kernel window gives little to vectorise). The
    // row layout also stores contiguously, and needs no horizontal sum at the end.
    int64_t dot = unit_stride_loads(last_red) * std::min<int64_t>(k.axes[last_red], 64);
    int64_t row =
        (unit_stride_loads(inner_axis()) + 1) * std::min<int64_t>(k.axes[inner_axis()], 64);
    return dot > row ? Strategy::dot : Strategy::row;
  }

  // Whether a map's result, or a row-layout tile's epilogue, is evaluated `width` elements at once
  // along the inner axis: a float32 store, plain and contiguous along it, an expression
  // expr_vector_evaluable accepts, and only where that expression casts to an integer type and
  // back, which LLVM's loop vectorizer leaves scalar (the fake quantization of a QDQ activation
  // that no channel tile took ran at ~1.5 GB/s element by element). Other results keep the scalar
  // loop that LLVM vectorizes, so float models' code is unchanged.
  bool result_vector(int width) const {
    int in = inner_axis();
    if (width <= 1 || k.axes[in] < width || k.store_dtype != DType::f32 ||
        p.buffers[k.store.buffer].dtype != DType::f32)
      return false;
    int64_t c = 0;
    for (const DimIndex &d : k.store.dims) {
      if (d.bound != Bound::none || d.expr >= 0 || d.divisor != 1) return false;
      for (const AxisTerm &t : d.terms)
        if (t.axis == in) c += t.coef * d.stride;
    }
    return c == 1 && expr_holds_integer_round_trip(k, k.result) &&
           expr_vector_evaluable(k, p, k.result, in);
  }

  // Evaluates the result `width` elements at once from inner index j (acc_value already set) and
  // stores it.
  void result_vector_store(int width, Value *j) {
    iv[inner_axis()] = j;
    lanes = (unsigned)width, lane_axis = inner_axis();
    Value *v = evaluate(k.result, false);
    lanes = 0, lane_axis = -1;
    Value *ok;
    Value *off = access_offset(k.store, -1, &ok);
    b.CreateAlignedStore(v, element_ptr(k.store.buffer, off), llvm::Align(4));
  }

  void emit_map(int width) {
    int in = inner_axis();
    int64_t n = k.axes[in], body = 0;
    if (result_vector(width)) {
      body = n / width * width;
      loop(body / width, [&](Value *j) { result_vector_store(width, b.CreateMul(j, i64(width))); });
    }
    loop(i64(body), i64(n), [&](Value *j) {
      iv[in] = j;
      store_result(evaluate(k.result, false));
    });
  }

  void emit_dot(llvm::AllocaInst *acc) {
    int in = inner_axis();
    loop(k.axes[in], [&](Value *j) {
      iv[in] = j;
      emit_point(acc);
    });
  }

  // The loads an expression reads, directly or through the index expressions of its loads.
  std::vector<char> loads_reached(int root) const {
    std::vector<char> hit(k.loads.size(), 0);
    if (root < 0) return hit;
    std::vector<char> need(k.exprs.size(), 0);
    need[root] = 1;
    for (int i = root; i >= 0; i--) {
      if (!need[i]) continue;
      const Expr &e = k.exprs[i];
      int n = op_arity(e.op);
      if (n > 0 && e.a >= 0) need[e.a] = 1;
      if (n > 1 && e.b >= 0) need[e.b] = 1;
      if (n > 2 && e.c >= 0) need[e.c] = 1;
      if (e.op == Op::load) {
        hit[e.access] = 1;
        for (const DimIndex &d : k.loads[e.access].dims)
          if (d.expr >= 0) need[d.expr] = 1;
      }
    }
    return hit;
  }

  // Which body loads/dims the row loops make valid by construction: skip bounds on dims that
  // do not involve the tile axis are checked once before the tile loop; dims moving with the
  // tile axis with unit-free affine index restrict the tile loop's range.
  void emit_row(llvm::AllocaInst *accs, int64_t tile) {
    int in = inner_axis(), na = (int)k.axes.size();
    int64_t L = k.axes[in];
    llvm::Type *at = ir_type(k.acc_dtype);
    llvm::Type *arr = llvm::ArrayType::get(at, tile);
    // Body loads: mark what the loop structure ensures. Loads the result reads too must keep
    // their own checks. (Reached from each root: counting every expression up to the result's
    // index took the body's own load for one of the result's, so no window was ever hoisted and
    // each pooling read kept a per-element check that LLVM could not vectorize.)
    std::vector<char> body_load = loads_reached(k.body), result_load = loads_reached(k.result);
    for (size_t li = 0; li < k.loads.size(); li++) {
      if (!body_load[li] || result_load[li]) continue;
      for (size_t di = 0; di < k.loads[li].dims.size(); di++) {
        const DimIndex &d = k.loads[li].dims[di];
        if (d.bound == Bound::skip && d.expr < 0 && d.divisor == 1) checked[li][di] = 1;
      }
    }
    loop(i64(0), i64((L + tile - 1) / tile), [&](Value *t) {
      Value *t0 = b.CreateMul(t, i64(tile));
      Value *t1 = b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(t0, i64(tile)), i64(L)),
                                 b.CreateAdd(t0, i64(tile)), i64(L));
      loop(tile, [&](Value *j) {
        b.CreateStore(constant(reduce_identity(k.reduce), k.acc_dtype),
                      b.CreateInBoundsGEP(arr, accs, {i64(0), j}));
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
        if (outer_ok)
          guarded(outer_ok, inner);
        else
          inner();
      });
      loop(t0, t1, [&](Value *j) {
        iv[in] = j;
        acc_value = b.CreateLoad(at, b.CreateInBoundsGEP(arr, accs, {i64(0), b.CreateSub(j, t0)}));
        store_result(evaluate(k.result, false));
      });
    });
  }

  // X for a tile whose lanes read every S-th element (S * lanes consecutive floats per vector of
  // lanes, the wanted ones picked by a shuffle: one vpermt2ps per vector on AVX-512, uzp1 on
  // NEON). Plain loads, when the whole S * T range lies inside X's row (checked by the caller).
  void strided_loads(std::vector<Value *> &xf, Value *base_ptr, Value *off, int lanes, int64_t S) {
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    for (size_t u = 0; u < xf.size(); u++) {
      std::vector<Value *> parts;
      for (int64_t h = 0; h < S; h++)
        parts.push_back(
            b.CreateAlignedLoad(vt,
                                b.CreateGEP(b.getFloatTy(), base_ptr,
                                            b.CreateAdd(off, i64((int64_t(u) * S + h) * lanes))),
                                llvm::Align(4)));
      xf[u] = strided_pick(parts, lanes, S);
    }
  }

  // The same at borders and the tail: masked loads of the S * lanes range enabling only the
  // elements a live lane reads (in [0, extent) of X's row when it is bounds-checked), so no
  // disabled address is ever touched.
  void strided_edge_loads(std::vector<Value *> &xs, Value *base_ptr, Value *off, Value *raw,
                          Value *j0, int64_t L, const DimIndex &xd, int lanes, int64_t S) {
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    for (size_t u = 0; u < xs.size(); u++) {
      std::vector<Value *> parts;
      for (int64_t h = 0; h < S; h++) {
        const int64_t first = (int64_t(u) * S + h) *
                              lanes;  // element of the tile's S * T range at lane 0 of this load
        std::vector<llvm::Constant *> elem, keep;
        for (int l = 0; l < lanes; l++) {
          elem.push_back(b.getInt64(first + l));
          keep.push_back(b.getInt1((first + l) % S == 0));
        }
        Value *e = llvm::ConstantVector::get(elem);
        // Output position of element e: j0 + e / S.
        Value *pos = b.CreateAdd(b.CreateVectorSplat(lanes, j0),
                                 b.CreateUDiv(e, b.CreateVectorSplat(lanes, i64(S))));
        Value *mask = b.CreateAnd(llvm::ConstantVector::get(keep),
                                  b.CreateICmpSLT(pos, b.CreateVectorSplat(lanes, i64(L))));
        if (xd.bound == Bound::skip) {
          Value *xi = b.CreateAdd(b.CreateVectorSplat(lanes, raw), e);
          mask = b.CreateAnd(mask, b.CreateICmpULT(xi, b.CreateVectorSplat(lanes, i64(xd.extent))));
        }
        parts.push_back(b.CreateMaskedLoad(
            vt, b.CreateGEP(b.getFloatTy(), base_ptr, b.CreateAdd(off, i64(first))), llvm::Align(4),
            mask, llvm::Constant::getNullValue(vt)));
      }
      xs[u] = strided_pick(parts, lanes, S);
    }
  }

  // Lanes 0, S, 2S, ... of the concatenated parts (S vectors of `lanes`).
  Value *strided_pick(const std::vector<Value *> &parts, int lanes, int64_t S) {
    std::vector<int> idx;
    if (S == 2) {
      for (int l = 0; l < lanes; l++) idx.push_back(2 * l);
      return b.CreateShuffleVector(parts[0], parts[1], idx);
    }
    throw Error("internal: strided tile with step " + std::to_string(S));
  }

  // One tile of emit_tile: T = lanes x U elements of the inner axis from j0, for B values of o
  // from obase.
  struct TileSpan {
    const TilePlan &tp;
    const std::vector<llvm::AllocaInst *> &accs;  // B x U vectors of `lanes`
    int lanes, U, T;
    int64_t L, B, S;  // the inner axis's extent, the block, X's step along the inner axis
    llvm::FixedVectorType *vt;
    Value *obase, *lane_vec, *j0;
  };

  // The tile layout. Work items cover the outer parallel axes with axis o in blocks.
  void emit_tile(const TilePlan &tp, int lanes, const std::vector<llvm::AllocaInst *> &accs,
                 llvm::AllocaInst *spill) {
    const int in = inner_axis();
    const int U = 2, T = lanes * U;
    const int64_t L = k.axes[in];
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), lanes);
    Value *obase = tp.o >= 0 ? iv[tp.o] : nullptr;
    std::vector<llvm::Constant *> lane_ids;
    for (int l = 0; l < lanes; l++) lane_ids.push_back(b.getInt64(l));
    Value *lane_vec = llvm::ConstantVector::get(lane_ids);
    loop(i64(0), i64((L + T - 1) / T), [&](Value *t) {
      Value *j0 = b.CreateMul(t, i64(T));
      for (auto *a : accs) b.CreateStore(llvm::Constant::getNullValue(vt), a);
      const TileSpan ts{tp, accs, lanes, U, T, L, tp.block, tp.x_step, vt, obase, lane_vec, j0};
      nest_order(tile_reduction_order(tp), 0, [&] { tile_point(ts); });
      tile_epilogue(ts, spill);
    });
  }

  // Reduction axes that move a bounds-checked index of X (the kernel window) outermost, the
  // others (input channels) innermost: the border checks then stay out of the hottest loop.
  std::vector<int> tile_reduction_order(const TilePlan &tp) const {
    const Access &X = k.loads[tp.x];
    std::vector<int> order, plain;
    for (int a = k.n_parallel; a < (int)k.axes.size(); a++) {
      bool checked_axis = false;
      for (const DimIndex &d : X.dims)
        for (const AxisTerm &t2 : d.terms)
          if (t2.axis == a && d.bound != Bound::none) checked_axis = true;
      (checked_axis ? order : plain).push_back(a);
    }
    order.insert(order.end(), plain.begin(), plain.end());
    return order;
  }

  // One reduction point of the tile: X's offset at lane 0 of the tile, and the checks on its
  // other dimensions, around the tile's multiply-adds.
  void tile_point(const TileSpan &ts) {
    const Access &X = k.loads[ts.tp.x];
    Value *off = i64(X.offset), *ok = nullptr, *raw = nullptr;
    for (size_t di = 0; di < X.dims.size(); di++) {
      const DimIndex &d = X.dims[di];
      if ((int)di == ts.tp.x_dim) {
        raw =
            b.CreateAdd(affine(d, inner_axis()), ts.S == 1 ? ts.j0 : b.CreateMul(ts.j0, i64(ts.S)));
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
    auto body = [&] { tile_fma(ts, off, raw); };
    if (ok)
      guarded(ok, body);
    else
      body();
  }

  // The block of W values (one per o, broadcast), the U vectors of X, and their products added
  // into the accumulators.
  void tile_fma(const TileSpan &ts, Value *off, Value *raw) {
    const TilePlan &tp = ts.tp;
    std::vector<Value *> wv;
    for (int64_t bo = 0; bo < ts.B; bo++) {
      if (ts.obase) iv[tp.o] = b.CreateAdd(ts.obase, i64(bo));
      Value *wok;
      Value *woff = access_offset(k.loads[tp.w], -1, &wok);
      Value *wf = b.CreateLoad(b.getFloatTy(), element_ptr(k.loads[tp.w].buffer, woff));
      wv.push_back(b.CreateVectorSplat(ts.lanes, wf));
    }
    if (ts.obase) iv[tp.o] = ts.obase;
    const std::vector<llvm::PHINode *> xv = tile_input_loads(ts, off, raw);
    for (int u = 0; u < ts.U; u++) {
      Value *x = xv[u];
      for (int64_t bo = 0; bo < ts.B; bo++) {
        llvm::AllocaInst *a = ts.accs[bo * ts.U + u];
        Value *acc = b.CreateLoad(ts.vt, a);
        b.CreateStore(b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {ts.vt}, {x, wv[bo], acc}), a);
      }
    }
  }

  // X's U vectors at offset `off` (raw: its index along the inner dimension). All lanes in range:
  // plain loads; at borders and the tail: masked loads.
  std::vector<llvm::PHINode *> tile_input_loads(const TileSpan &ts, Value *off, Value *raw) {
    const Access &X = k.loads[ts.tp.x];
    const DimIndex &xd = X.dims[ts.tp.x_dim];
    const int lanes = ts.lanes, U = ts.U, T = ts.T;
    const int64_t S = ts.S;
    llvm::FixedVectorType *vt = ts.vt;
    Value *j0 = ts.j0;
    Value *full = b.CreateICmpSLE(b.CreateAdd(j0, i64(T)), i64(ts.L));
    if (xd.bound == Bound::skip)
      full =
          b.CreateAnd(full, b.CreateAnd(b.CreateICmpSGE(raw, i64(0)),
                                        b.CreateICmpSLE(b.CreateAdd(raw, i64(T)), i64(xd.extent))));
    // Strided: the plain loads read S * T elements, the last S - 1 of them past the last lane.
    if (S > 1)
      full = b.CreateAnd(full, b.CreateICmpSLE(b.CreateAdd(raw, i64(S * T)), i64(xd.extent)));
    llvm::BasicBlock *fast = llvm::BasicBlock::Create(ctx, "tile_full", fn),
                     *slow = llvm::BasicBlock::Create(ctx, "tile_edge", fn),
                     *join = llvm::BasicBlock::Create(ctx, "tile_join", fn);
    b.CreateCondBr(full, fast, slow);
    Value *base_ptr = slot_ptr[X.buffer];
    std::vector<Value *> xf(U), xs(U);
    b.SetInsertPoint(fast);
    if (S > 1) {
      strided_loads(xf, base_ptr, off, lanes, S);
    } else {
      for (int u = 0; u < U; u++)
        xf[u] = b.CreateAlignedLoad(
            vt, b.CreateGEP(b.getFloatTy(), base_ptr, b.CreateAdd(off, i64(u * lanes))),
            llvm::Align(4));
    }
    llvm::BasicBlock *fast_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(slow);
    for (int u = 0; u < U && S == 1; u++) {
      Value *pos =
          b.CreateAdd(b.CreateVectorSplat(lanes, b.CreateAdd(j0, i64(u * lanes))), ts.lane_vec);
      Value *mask = b.CreateICmpSLT(pos, b.CreateVectorSplat(lanes, i64(ts.L)));
      if (xd.bound == Bound::skip) {
        Value *xi =
            b.CreateAdd(b.CreateVectorSplat(lanes, b.CreateAdd(raw, i64(u * lanes))), ts.lane_vec);
        mask = b.CreateAnd(mask, b.CreateICmpULT(xi, b.CreateVectorSplat(lanes, i64(xd.extent))));
      }
      // Disabled lanes are never read (their addresses may lie outside the buffer).
      xs[u] = b.CreateMaskedLoad(
          vt, b.CreateGEP(b.getFloatTy(), base_ptr, b.CreateAdd(off, i64(u * lanes))),
          llvm::Align(4), mask, llvm::Constant::getNullValue(vt));
    }
    if (S > 1) strided_edge_loads(xs, base_ptr, off, raw, j0, ts.L, xd, lanes, S);
    llvm::BasicBlock *slow_end = b.GetInsertBlock();
    b.CreateBr(join);
    b.SetInsertPoint(join);
    std::vector<llvm::PHINode *> xv(U);
    for (int u = 0; u < U; u++) {  // PHIs head the block
      xv[u] = b.CreatePHI(vt, 2);
      xv[u]->addIncoming(xf[u], fast_end);
      xv[u]->addIncoming(xs[u], slow_end);
    }
    return xv;
  }

  // Epilogue: the accumulators through the result expression, element by element.
  void tile_epilogue(const TileSpan &ts, llvm::AllocaInst *spill) {
    const TilePlan &tp = ts.tp;
    const int in = inner_axis(), lanes = ts.lanes, U = ts.U, T = ts.T;
    const int64_t B = ts.B, L = ts.L;
    Value *j0 = ts.j0, *obase = ts.obase;
    auto *row_ty = llvm::ArrayType::get(b.getFloatTy(), T);
    for (int64_t bo = 0; bo < B; bo++)
      for (int u = 0; u < U; u++)
        b.CreateAlignedStore(b.CreateLoad(ts.vt, ts.accs[bo * U + u]),
                             b.CreateInBoundsGEP(row_ty, spill, {i64(bo), i64(u * lanes)}),
                             llvm::Align(4));
    Value *jend = b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(j0, i64(T)), i64(L)),
                                 b.CreateAdd(j0, i64(T)), i64(L));
    // A fake-quantizing result (result_vector) of a whole tile in vectors; a partial tile (and
    // every other result) element by element.
    Value *jstart = j0;
    if (result_vector(T)) {
      Value *whole = b.CreateICmpSLE(b.CreateAdd(j0, i64(T)), i64(L));
      guarded(whole, [&] {
        for (int64_t bo = 0; bo < B; bo++) {
          if (obase) iv[tp.o] = b.CreateAdd(obase, i64(bo));
          for (int u = 0; u < U; u++) {
            acc_value = b.CreateLoad(ts.vt, ts.accs[bo * U + u]);
            result_vector_store(lanes, b.CreateAdd(j0, i64(u * lanes)));
          }
        }
      });
      jstart = b.CreateSelect(whole, jend, j0);
    }
    loop(i64(0), i64(B), [&](Value *bo) {
      if (obase) iv[tp.o] = b.CreateAdd(obase, bo);
      loop(jstart, jend, [&](Value *j) {
        iv[in] = j;
        acc_value = b.CreateLoad(b.getFloatTy(),
                                 b.CreateInBoundsGEP(row_ty, spill, {bo, b.CreateSub(j, j0)}));
        store_result(evaluate(k.result, false));
      });
    });
    if (obase) iv[tp.o] = obase;
  }

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
    ChannelTilePlan cp = channel_tile_plan(k, p, t);
    TilePlan tp = cp.ok ? TilePlan{} : tile_plan(k, p);
    MatvecPlan mp = cp.ok || tp.ok ? MatvecPlan{} : matvec_plan(k, p, t);
    Strategy s = cp.ok   ? Strategy::ctile
                 : tp.ok ? Strategy::tile
                 : mp.ok ? Strategy::matvec
                         : choose();
    if (getenv("CAPGRAPH_DEBUG_TILE")) {
      static const char *names[] = {"map", "row", "dot", "tile", "ctile", "matvec"};
      std::string axes;
      for (size_t a = 0; a < k.axes.size(); a++)
        axes += (a == (size_t)k.n_parallel ? " | " : " ") + std::to_string(k.axes[a]);
      fprintf(stderr, "strategy %s: %s [%s ]%s\n", names[(int)s], k.name.c_str(), axes.c_str(),
              s == Strategy::tile
                  ? (" o=" + std::to_string(tp.o) + " block=" + std::to_string(tp.block)).c_str()
                  : "");
    }
    int64_t tile = std::min<int64_t>(k.axes[inner_axis()], 256);
    int lanes = vector_lanes(t);
    llvm::AllocaInst *acc = nullptr;
    std::vector<llvm::AllocaInst *> accs;
    if (s == Strategy::row) acc = b.CreateAlloca(llvm::ArrayType::get(ir_type(k.acc_dtype), tile));
    if (s == Strategy::dot) acc = b.CreateAlloca(ir_type(k.acc_dtype));
    if (s == Strategy::tile) {
      for (int64_t i = 0; i < tp.block * 2; i++)
        accs.push_back(b.CreateAlloca(llvm::FixedVectorType::get(b.getFloatTy(), lanes)));
      acc = b.CreateAlloca(
          llvm::ArrayType::get(llvm::ArrayType::get(b.getFloatTy(), lanes * 2), tp.block));
    }
    Value *begin = fn->getArg(slots.size()), *end = fn->getArg(slots.size() + 1);
    if (s == Strategy::ctile) {
      Value *table = channel_tile_table(*this, cp);
      loop(begin, end, [&](Value *w) { channel_tile_emit(*this, cp, w, table); });
      b.CreateRetVoid();
      emit_entry(symbol, t);
      return;
    }
    if (s == Strategy::matvec) {
      loop(begin, end, [&](Value *w) { matvec_emit(*this, mp, w); });
      b.CreateRetVoid();
      emit_entry(symbol, t);
      return;
    }
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
      if (s == Strategy::map)
        emit_map(lanes);
      else if (s == Strategy::dot)
        emit_dot(acc);
      else if (s == Strategy::tile)
        emit_tile(tp, lanes, accs, acc);
      else
        emit_row(acc, tile);
    });
    b.CreateRetVoid();
    emit_entry(symbol, t);
  }

  // The exported entry: unpack the buffer table, call the implementation.
  void emit_entry(const std::string &symbol, const CpuTarget &t) {
    llvm::Type *ptr = b.getPtrTy();
    auto *entry_ty =
        llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr, b.getInt64Ty(), b.getInt64Ty()}, false);
    llvm::Function *ef =
        llvm::Function::Create(entry_ty, llvm::GlobalValue::ExternalLinkage, symbol, mod);
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
    // LLVM splits 512-bit vectors into 256-bit halves unless told the function wants them (its
    // default for server cores, to avoid the AVX-512 frequency drop); the channel tiles are built
    // around whole registers.
    if (t.f32_lanes >= 16) {
      f->addFnAttr("prefer-vector-width", "512");
      f->addFnAttr("min-legal-vector-width", "512");
    }
  }
};

}  // namespace

namespace {

// The unique kernels `members` of the program in one module (its own LLVM context), compiled,
// with LLVM's loop strength reduction or without (cpu_kernel_strength_reduce).
std::vector<uint8_t> compile_unique(const Program &p, const CpuTarget &t, const KernelDedupe &d,
                                    const std::vector<int> &members, int o,
                                    llvm::CodeGenFileType type, bool strength_reduce) {
  std::unique_ptr<llvm::TargetMachine> tm = target_machine_create(t.triple, t.cpu, t.features);
  if (type == llvm::CodeGenFileType::AssemblyFile)
    tm->Options.MCOptions.AsmVerbose = true;  // with the allocator's spill comments
  llvm::LLVMContext ctx;
  llvm::Module m("capgraph_" + std::to_string(o), ctx);
  for (int u : members) {
    CpuKernelEmitter e(m, p.kernels[d.reps[u]], p);
    e.emit(kernel_symbol(p.kernels[d.reps[u]], u), t);
  }
  return module_compile(m, *tm, type, strength_reduce);
}

}  // namespace

// Which kernels LLVM's loop strength reduction (LSR) runs on (issue 27, compile time). LSR is
// LLVM's process-wide choice per code generation pipeline, so it is made per object, and the
// kernels are grouped by it (objects_assign). Off for the window tiles of 8-lane targets (AVX2)
// that keep their reduction loops (4 or more input channel blocks: kernel_emit.cpp keep_loops):
// there LSR cost 25-35% of the compile (densenet_like 5.6 -> 4.1 CPU s, inception_like 4.3 ->
// 3.3, resnet18 4.0 -> 3.4, det 3.6 -> 3.0 for --target cpu-x86_64) and the kernels ran the same
// without it (capgraph profile, 1 thread, old/new 0.99-1.02 per kernel; docs/performance.md).
// Kept where it was worth speed when off: 1x1 convs and products (PP-OCR cls's 1.21x slower),
// depthwise tiles (det's 3x3 s2 depthwise 1.33x), short reductions that LLVM unrolls (stems,
// regnet_like's grouped convs of 1-2 blocks: 1.07-1.21x), the byte-table stems (x_expr:
// comma_like's uint8 camera convs 1.05-1.07x), and every tile on 16-lane vectors (AVX-512, whose
// window loops are LLVM's to unroll: det's 3x3 convs 1.3-1.56x slower without). CAPGRAPH_LSR=all
// runs it on every kernel (as before), CAPGRAPH_LSR=none (or the older CAPGRAPH_NO_LSR=1) on none:
// experiments.
bool cpu_kernel_strength_reduce(const Kernel &k, const Program &p, const CpuTarget &t) {
  const char *knob = knob_get("CAPGRAPH_LSR");
  if (knob_get("CAPGRAPH_NO_LSR") || (knob && std::string(knob) == "none")) return false;
  if (knob && std::string(knob) == "all") return true;
  const ChannelTilePlan cp = channel_tile_plan(k, p, t);
  return !(cp.ok && cp.keep_window_loops && !cp.x_vector && cp.x_expr < 0 &&
           channel_tile_window(k, cp) > 1 && channel_tile_rest_trips(k, cp) >= 4);
}

namespace {

// This thread's CPU time: an object's cost apart from the load of the machine (the debug print).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Objects the unique kernels are partitioned into: a fixed number, so that the capture is the
// same whatever the number of threads that build them (issue 27). More objects than cores lets
// the threads balance; each costs an LLVM context and pipeline setup (a few ms).
constexpr int kCodegenObjects = 8;

// Each unique kernel's object: kernels with LSR and without go to separate objects (each class
// gets objects in proportion to its cost, at least one); within a class, the costliest kernels
// first, each into the object with the least cost so far (ties to the lower index). From the
// plans alone: deterministic. `lsr_of` receives each object's class.
std::vector<int> objects_assign(const std::vector<int64_t> &cost, const std::vector<char> &lsr,
                                int n_obj, std::vector<char> *lsr_of) {
  int64_t total = 0, with = 0;
  for (size_t u = 0; u < cost.size(); u++) total += cost[u], with += lsr[u] ? cost[u] : 0;
  int n_with = with == 0 ? 0 : with == total ? n_obj : (int)((n_obj * with + total / 2) / total);
  if (with > 0 && with < total) n_with = std::min(std::max(n_with, 1), n_obj - 1);
  lsr_of->assign(n_obj, 0);
  for (int o = 0; o < n_with; o++) (*lsr_of)[o] = 1;
  std::vector<int> order(cost.size()), object(cost.size(), 0);
  for (size_t u = 0; u < cost.size(); u++) order[u] = (int)u;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost[a] > cost[b]; });
  std::vector<int64_t> load(n_obj, 0);
  for (int u : order) {
    int o = -1;
    for (int c = 0; c < n_obj; c++)
      if ((*lsr_of)[c] == lsr[u] && (o < 0 || load[c] < load[o])) o = c;
    object[u] = o, load[o] += cost[u];
  }
  return object;
}

}  // namespace

CodegenResult cpu_codegen(const Program &p, const CpuTarget &t, int jobs) {
  CodegenResult r;
  r.kernels.resize(p.kernels.size());
  KernelDedupe d = kernels_dedupe(p);
  const int n_obj = std::min<int>(kCodegenObjects, std::max<int>((int)d.reps.size(), 1));
  // A unique kernel's compile cost, roughly in LLVM instructions: its expressions, and the
  // multiply-adds a channel tile writes out (its runtime tile and its fixed border tiles).
  std::vector<int64_t> cost(d.reps.size(), 0);
  std::vector<char> lsr(d.reps.size(), 1);
  for (size_t i = 0; i < p.kernels.size(); i++) {
    int u = d.unique_of[i];
    r.kernels[i].slots = kernel_slots(p.kernels[i]);
    r.kernels[i].work_size = kernel_work_size(p.kernels[i]);
    ChannelTilePlan cp = channel_tile_plan(p.kernels[i], p, t);
    TilePlan tp = cp.ok ? TilePlan{} : tile_plan(p.kernels[i], p);
    if (cp.ok) r.kernels[i].work_size = channel_tile_work_size(p.kernels[i], cp);
    if (tp.ok && tp.o >= 0) r.kernels[i].work_size /= tp.block;
    MatvecPlan mp = cp.ok || tp.ok ? MatvecPlan{} : matvec_plan(p.kernels[i], p, t);
    if (mp.ok) r.kernels[i].work_size = matvec_work_size(p.kernels[i], mp);
    r.kernels[i].symbol = kernel_symbol(p.kernels[d.reps[u]], u);
    if ((int)i == d.reps[u]) lsr[u] = cpu_kernel_strength_reduce(p.kernels[i], p, t);
    if ((int)i == d.reps[u])
      cost[u] = 100 + 10 * (int64_t)p.kernels[i].exprs.size() +
                (cp.ok ? cp.fixed_fmas + cp.R * cp.VB * 8 : 0);
  }
  std::vector<char> lsr_of;
  const std::vector<int> object = objects_assign(cost, lsr, n_obj, &lsr_of);
  std::vector<std::vector<int>> members(n_obj);
  for (size_t u = 0; u < d.reps.size(); u++) members[object[u]].push_back((int)u);
  for (size_t i = 0; i < p.kernels.size(); i++) r.kernels[i].object = object[d.unique_of[i]];
  r.unique_kernels = (int)d.reps.size();
  r.objects.resize(n_obj);
  std::vector<int64_t> object_cost(n_obj, 0);
  for (size_t u = 0; u < d.reps.size(); u++) object_cost[object[u]] += cost[u];
  // The threads pull the costliest objects first, so that a heavy one does not start last and
  // run alone (the bytes do not depend on the order).
  std::vector<int> pull(n_obj);
  for (int o = 0; o < n_obj; o++) pull[o] = o;
  std::stable_sort(pull.begin(), pull.end(),
                   [&](int a, int b) { return object_cost[a] > object_cost[b]; });
  const bool debug = getenv("CAPGRAPH_DEBUG_CODEGEN") != nullptr;
  const auto start = std::chrono::steady_clock::now();
  parallel_pull(n_obj, jobs, [&](int i) {
    const int o = pull[i];
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = thread_cpu_seconds();
    r.objects[o] =
        compile_unique(p, t, d, members[o], o, llvm::CodeGenFileType::ObjectFile, lsr_of[o]);
    if (debug) {  // each object's kernels, estimated cost and seconds (issue 27: the balance)
      const auto t1 = std::chrono::steady_clock::now();
      fprintf(stderr,
              "codegen object %d: %zu kernels, cost %lld, %s, %.3f s to %.3f s, cpu %.3f s\n", o,
              members[o].size(), (long long)object_cost[o], lsr_of[o] ? "LSR" : "no LSR",
              std::chrono::duration<double>(t0 - start).count(),
              std::chrono::duration<double>(t1 - start).count(), thread_cpu_seconds() - c0);
    }
  });
  return r;
}

std::string cpu_codegen_assembly(const Program &p, const CpuTarget &t) {
  // One module per LSR class, as the objects are compiled (with LSR first).
  KernelDedupe d = kernels_dedupe(p);
  std::vector<int> with, without;
  for (size_t u = 0; u < d.reps.size(); u++) {
    const Kernel &k = p.kernels[d.reps[u]];
    (cpu_kernel_strength_reduce(k, p, t) ? with : without).push_back((int)u);
  }
  std::string text;
  for (bool strength_reduce : {true, false}) {
    const std::vector<int> &members = strength_reduce ? with : without;
    if (members.empty() && !(strength_reduce && without.empty())) continue;
    std::vector<uint8_t> part =
        compile_unique(p, t, d, members, strength_reduce ? 0 : 1,
                       llvm::CodeGenFileType::AssemblyFile, strength_reduce);
    text.append(part.begin(), part.end());
  }
  return text;
}

}  // namespace capgraph
