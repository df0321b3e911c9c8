#include "codegen/cpu_channel_tile.h"

#include <llvm/IR/InlineAsm.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "codegen/kernel_emit.h"
#include "knobs.h"
#include "schedule/fuse.h"
#include "schedule/layout.h"

namespace capgraph {

using llvm::Value;

namespace {

// sum(coef * stride) of `axis` over the access's dims; *plain: every dim using it is unbounded.
int64_t mem_coef(const Access &a, int axis, bool *plain) {
  int64_t c = 0;
  *plain = true;
  for (const DimIndex &d : a.dims)
    for (const AxisTerm &t : d.terms)
      if (t.axis == axis && t.coef != 0) {
        c += t.coef * d.stride;
        if (d.bound != Bound::none) *plain = false;
      }
  return c;
}

// Flat tiles (positions over two axes) for maps of at most this many positions, and at most this
// many copies of the innermost loop for the tiles whose positions are fixed at compile time.
constexpr int64_t kFlatPositions = 64, kFixedCopies = 128;
// Past this many multiply-adds written out in those copies (copies x positions x accumulator
// columns x unrolled lanes), each must run at least kFixedRuns times per replay (the reduction
// trips left as loops x the work items sharing the code). Each is a few instructions LLVM
// optimizes one by one; written out for one run each, the code is the work itself: a 3x3 s2 conv
// 8 -> 16 on 16x16 (a flat 8x8 map, 11 fixed tiles x 9 window offsets x 96) wrote 9504, 48k lines
// of IR, 2.6 s of code generation, and ran 2x slower than tiles along one axis (0.0031 against
// 0.0016 ms, Zen 3). resnet18's 7x7 maps write 7776 that run 2048 times each (64 channel
// blocks x 32 o tiles): 12-18% faster than tiles along one axis there.
constexpr int64_t kFixedFmasFree = 1024, kFixedRuns = 16;
// And at most this many in all, per kernel: past it the fixed tiles keep the innermost reduction
// lanes a loop (as 16-lane blocks always do), which divides what they write out by the lanes,
// and a shape still past it is not taken. resnet18's 512-channel 3x3 convs on 7x7 (flat, 9 fixed
// tiles x 9 window offsets x 6 positions x 2 columns) wrote 7776 out: 72k lines of IR and ~1.9 s
// of LLVM's optimizer each, two thirds of the model's code generation (issue 27); with the lanes
// looped, 972.
constexpr int64_t kFixedFmasMax = 2048;
// Innermost reduction axes this short (the lanes of an 8-blocked input) are unrolled by the
// emitter; 16 lanes stay a loop (unrolled, the 7x7 maps of resnet18 took 4x the compile time).
constexpr int64_t kUnrolledLanes = 8;
// Elements between an unblocked byte input's channels from which the window loops go inside.
constexpr int64_t kPlaneStride = 1024;

// The most rows (channels) an X chain's byte table may have: 64 x 256 floats, 64 KiB of stack.
constexpr int64_t kTableRows = 64;

// Dims of X whose skip bound the window checks make (they must not use the inner axes).
bool skip_dim(const DimIndex &d) { return d.bound == Bound::skip; }

// channel_tile_plan's steps, in the order it runs them; each `bool` step returns false where the
// kernel takes no tile (the plan then stays !ok).
class TilePlanner {
 public:
  TilePlanner(const Kernel &k, const Program &p, const CpuTarget &t)
      : k(k), p(p), t(t), unrolled(k.axes.size(), 0), unrolled_flat(k.axes.size(), 0) {}

  ChannelTilePlan plan() {
    if (!product_find() || !operands_find() || !chain_table_axis_find() || !loads_plain() ||
        !weight_and_input_pick() || !tile_axes_pick())
      return cp;
    interior_find();
    if (!shape_choose()) return cp;  // CAPGRAPH_TILE forced a shape that does not fit: no tile
    if (!best_flat) cp.pos2 = -1;
    if (cp.pair > 1) cp.regs = cpu_target_block_registers(t, cp.L * cp.pair);
    cp.ok = true;
    if (getenv("CAPGRAPH_DEBUG_TILE")) plan_print();
    return cp;
  }

 private:
  const Kernel &k;
  const Program &p;
  const CpuTarget &t;
  ChannelTilePlan cp;
  int v = -1;                                 // the block axis
  int la = -1, lb = -1, chain_load = -1;      // the product's loads; X's byte load in a chain
  bool fixed_ok = true;                       // the position dims hold only pos, window axes and
                                              // unit axes
  bool flat_ok = false;                       // flat tiles apply
  std::vector<char> unrolled, unrolled_flat;  // window axes a fixed (flat) tile unrolls
  bool best_flat = false;                     // the chosen shape is a flat tile

  // A float sum of products over the innermost parallel axis as a block of L channels.
  bool product_find() {
    if (knob_get("CAPGRAPH_NO_TILE") || k.reduce != Reduce::sum || k.acc_dtype != DType::f32 ||
        k.n_parallel < 2)
      return false;
    v = k.n_parallel - 1;
    if ((k.axes[v] != kChannelBlock && k.axes[v] != t.channel_block) || k.body < 0) return false;
    cp.L = k.axes[v];
    cp.keep_window_loops = t.f32_lanes == 8;
    cp.keep_fixed_window_loops = t.f32_lanes >= 16 && !knob_get("CAPGRAPH_UNROLL_FIXED");
    cp.regs = cpu_target_block_registers(t, cp.L);
    // Sources: Intel Optimization Reference Manual (FMA latency 4 cycles on Skylake-SP and later,
    // 2 ports) and Cortex-A75 Software Optimization Guide (FMLA latency 4-5, 2 pipes): about 4 x
    // units independent accumulators keep the FMA units busy.
    cp.chains = 4 * t.fma_units;
    return k.exprs[k.body].op == Op::mul;
  }
  // Each operand a plain f32 load, or (at most one, which is then X) an affine chain of one
  // integer input load whose constants move with reduction axes only.
  bool operands_find() {
    const Expr &body = k.exprs[k.body];
    for (int side : {body.a, body.b}) {
      const Expr &ex = k.exprs[side];
      int l = -1;
      if (ex.op == Op::load && ex.dtype == DType::f32 &&
          p.buffers[k.loads[ex.access].buffer].dtype == DType::f32)
        l = ex.access;
      else if (cp.x_expr < 0 && expr_input_affine(k, p, side, &chain_load, &cp.x_load_expr) &&
               chain_load >= 0)
        l = chain_load, cp.x_expr = side;
      else
        return false;
      (la < 0 ? la : lb) = l;
    }
    return true;
  }
  // The table's axis: the one reduction axis the chain's constants move with (per-channel means
  // and scales), so the chain is one value per byte and table row.
  bool chain_table_axis_find() {
    if (cp.x_expr < 0) return true;
    std::vector<int> loads_of(1, cp.x_expr);
    for (size_t i = 0; i < loads_of.size(); i++) {
      const Expr &ex = k.exprs[loads_of[i]];
      if (ex.op == Op::load && ex.access != chain_load) {
        for (const DimIndex &d : k.loads[ex.access].dims)
          for (const AxisTerm &t : d.terms) {
            if (t.coef == 0 || k.axes[t.axis] == 1 || t.axis == cp.x_table_axis) continue;
            if (cp.x_table_axis >= 0 || t.axis < k.n_parallel) return false;
            cp.x_table_axis = t.axis;
          }
      }
      for (int o : {ex.a, ex.b})
        if (o >= 0 && ex.op != Op::cast) loads_of.push_back(o);
    }
    return !(cp.x_table_axis >= 0 && k.axes[cp.x_table_axis] > kTableRows);
  }
  // Both loads affine, unchecked or skip-bounded.
  bool loads_plain() const {
    for (int l : {la, lb}) {
      const Access &a = k.loads[l];
      for (const DimIndex &d : a.dims)
        if (d.expr >= 0 || d.divisor != 1 || (d.bound != Bound::none && d.bound != Bound::skip))
          return false;
    }
    return true;
  }
  bool all_plain(int l) const {
    for (const DimIndex &d : k.loads[l].dims)
      if (d.bound != Bound::none) return false;
    return true;
  }
  // W: contiguous along the block and unchecked; X: not moving with the block, or (depthwise)
  // contiguous along it too.
  bool weight_and_input_pick() {
    for (auto [wl, xl] : {std::pair{la, lb}, std::pair{lb, la}}) {
      bool wplain, xplain;
      if (cp.x_expr >= 0 && xl != chain_load) continue;
      if (mem_coef(k.loads[wl], v, &wplain) != 1 || !wplain || !all_plain(wl)) continue;
      int64_t xc = mem_coef(k.loads[xl], v, &xplain);
      if (xc != 0 && (xc != 1 || !xplain || cp.x_expr >= 0)) continue;
      cp.w = wl, cp.x = xl, cp.x_vector = xc == 1;
      break;
    }
    return cp.w >= 0;
  }
  // The position axis (X's, not W's), the o axis (W's, not X's) and for flat tiles the next
  // position axis.
  bool tile_axes_pick() {
    const Access &X = k.loads[cp.x], &W = k.loads[cp.w];
    for (int a = v - 1; a >= 0 && cp.pos < 0; a--)
      if (k.axes[a] > 1 && access_uses(X, a) && !access_uses(W, a)) cp.pos = a;
    for (int a = v - 1; a >= 0 && cp.o < 0; a--)
      if (a != cp.pos && k.axes[a] > 1 && access_uses(W, a) && !access_uses(X, a)) cp.o = a;
    if (cp.pos < 0 && cp.o < 0) return false;
    cp.v = v;
    if (cp.pos >= 0)
      for (int a = cp.pos - 1; a >= 0 && cp.pos2 < 0; a--)
        if (a != cp.o && k.axes[a] > 1 && access_uses(X, a) && !access_uses(W, a)) cp.pos2 = a;
    return true;
  }
  // Positions whose window stays inside X along the position's own dims for every window offset:
  // [lo, hi). Tiles there never check; a border tile either checks per tile (split: its single
  // position makes each window offset inside or outside for the whole tile) or knows its
  // positions (fixed), so the check is made by the compiler, per position and window offset.
  void interior_find() {
    const Access &X = k.loads[cp.x];
    const int64_t P1 = cp.pos >= 0 ? k.axes[cp.pos] : 1;
    cp.W = P1, cp.lo = 0, cp.hi = P1;
    flat_ok = cp.pos2 >= 0;
    for (const DimIndex &d : X.dims) {
      if (cp.pos < 0 || d.bound != Bound::skip) continue;
      bool uses_pos = dim_uses(d, cp.pos), uses_pos2 = cp.pos2 >= 0 && dim_uses(d, cp.pos2);
      if (uses_pos || uses_pos2)
        for (const AxisTerm &t : d.terms) {
          if (t.coef == 0 || t.axis == cp.pos || t.axis == cp.pos2 || k.axes[t.axis] == 1) continue;
          if (t.axis >= k.n_parallel)
            unrolled_flat[t.axis] = 1;
          else
            flat_ok = false;
        }
      if (!uses_pos) continue;
      int64_t c = 0, wmin = d.shift, wmax = d.shift;
      for (const AxisTerm &t : d.terms) {
        if (t.axis == cp.pos)
          c += t.coef;
        else if (t.axis >= k.n_parallel) {
          wmin += std::min<int64_t>(0, t.coef * (k.axes[t.axis] - 1)),
              wmax += std::max<int64_t>(0, t.coef * (k.axes[t.axis] - 1));
          if (t.coef != 0) unrolled[t.axis] = 1;
        } else if (k.axes[t.axis] > 1 && t.coef != 0)
          c = 0, wmin = 1, wmax = -1, fixed_ok = false;  // another output axis moves it
      }
      if (c <= 0 || wmin > wmax) {
        cp.lo = 0, cp.hi = 0;
        continue;
      }
      // c*p + wmin >= 0 and c*p + wmax <= extent - 1
      int64_t lo = wmin >= 0 ? 0 : (-wmin + c - 1) / c,
              hi = d.extent - 1 - wmax < 0 ? 0 : (d.extent - 1 - wmax) / c + 1;
      cp.lo = std::max(cp.lo, lo), cp.hi = std::min(cp.hi, hi);
    }
    if (cp.hi <= cp.lo) cp.lo = cp.hi = 0;  // no interior
    const int64_t P2 = cp.pos2 >= 0 ? k.axes[cp.pos2] : 1;
    flat_ok = flat_ok && P1 * P2 <= kFlatPositions && combos(unrolled_flat) <= 64;
  }
  // The innermost reduction loop's trips the emitter unrolls (TileEmitter::rest_loops: the last
  // reduction axis that moves no checked dim of X, if that short).
  int64_t lanes_unrolled() const {
    for (int a = (int)k.axes.size() - 1; a >= k.n_parallel; a--) {
      bool checked = false;
      for (const DimIndex &d : k.loads[cp.x].dims) checked |= skip_dim(d) && dim_uses(d, a);
      if (!checked) return k.axes[a] <= kUnrolledLanes ? k.axes[a] : 1;
    }
    return 1;
  }
  // How often each statement of a fixed tile runs per replay: the reduction's trips that stay
  // loops, times the work items running the same tile (every parallel axis but the positions).
  int64_t fixed_runs(int mode, int64_t VB, bool lanes_looped) const {
    int64_t n = 1;
    for (int a = 0; a < (int)k.axes.size(); a++) {
      const bool window_axis = mode == 2 ? unrolled_flat[a] : unrolled[a];
      if (a == cp.pos || a == v || window_axis || (mode == 2 && a == cp.pos2)) continue;
      n *= a == cp.o ? (k.axes[a] + VB - 1) / VB : k.axes[a];
    }
    return lanes_looped ? n : n / lanes_unrolled();
  }
  // The copies of the innermost loop a fixed tile makes: the product of the unrolled extents.
  int64_t combos(const std::vector<char> &u) const {
    int64_t n = 1;
    for (size_t a = 0; a < u.size(); a++)
      if (u[a]) n *= k.axes[a];
    return n;
  }
  // The tile with the most multiply-adds per loaded vector (the weight vectors and one broadcast
  // per position: FMA-bound from about 1.4 on) that fits the target's vector registers
  // (accumulators, weight vectors, one broadcast): 16 on AVX2, 32 on AVX-512 and NEON (16 of 8
  // lanes there).
  // Paired blocks (see ChannelTilePlan::pair) where the target's register holds two blocks and
  // the tile has an o axis to pair along: they compete with the single-block tiles by the same
  // measure, counted per lane (each paired FMA does two blocks' work). Sources: Intel
  // Optimization Reference Manual (Sapphire Rapids: 512-bit FMAs on ports 0 and 5, the 256-bit
  // insert joining two weight rows on port 5: one per accumulator column per reduction point).
  bool shape_choose() {
    const bool pairable =
        cp.L * 2 == t.f32_lanes && cp.o >= 0 && !cp.x_vector && !knob_get("CAPGRAPH_NO_PAIR");
    double best = -1;
    for (int mode = 0; mode < 3; mode++) {  // split, fixed along pos, flat
      if ((mode == 1 && !fixed_ok) || (mode == 2 && !flat_ok)) continue;
      for (int64_t pair = 1; pair <= (pairable ? 2 : 1); pair++)
        for (int64_t cols = 1; cols <= 4; cols++) shapes_score(mode, pair, cols, &best);
    }
    return best >= 0;
  }
  // Scores the tiles of `cols` accumulator columns of `pair` blocks in `mode`, for every R that
  // fits, keeping the best in cp (and *best).
  void shapes_score(int mode, int64_t pair, int64_t cols, double *best) {
    const int64_t P1 = cp.W, P2 = cp.pos2 >= 0 ? k.axes[cp.pos2] : 1;
    const int64_t P = mode == 2 ? P1 * P2 : P1;
    // VB blocks in `cols` accumulator columns; a paired tile's last block may lie past E (its
    // loads read the last real block, it is never stored).
    const int64_t VB = cols * pair;
    if (VB > 1 && (cp.o < 0 || k.axes[cp.o] <= VB - pair || cp.x_vector)) return;
    const int regs = pair == 1 ? cp.regs : cpu_target_block_registers(t, cp.L * pair);
    int64_t E = cp.o >= 0 ? k.axes[cp.o] : 1;
    // A last o tile may be partial (its missing blocks recompute the last real one, never
    // stored). Ragged tiles measured slower than exact ones (squeezenet's 32-block 3x3: 46 vs
    // 78 GFLOP/s with 3 blocks against 2): only where no tile of 2-4 blocks divides E (of 2
    // blocks, paired).
    double o_used = double(E) / double((E + VB - 1) / VB * VB);
    if (E % VB && (E % 2 == 0 || (pair == 1 && E % 3 == 0))) o_used = 0;
    for (int64_t R = 1; R <= P && R * cols + cols + 1 <= regs; R++) {
      double fmas = 0, loads = 0;
      int64_t tiles = 0, t_lo = 0, t_hi = 0, fixed_fmas = 0;
      bool lanes_looped = false;
      if (mode == 0) {
        int64_t mid = (cp.hi - cp.lo + R - 1) / R;
        tiles = cp.lo + mid + (P - cp.hi);
        fmas = double(P * cols), loads = double((P - (cp.hi - cp.lo)) * (1 + VB) + mid * (R + VB));
      } else {
        tiles = (P + R - 1) / R;
        if (mode == 1) t_lo = (cp.lo + R - 1) / R, t_hi = std::max(t_lo, cp.hi / R);
        for (int64_t t = 0; t < tiles; t++) loads += double(std::min(R, P - t * R) + VB);
        fmas = double(P * cols);
        int64_t fixed_tiles = tiles - (t_hi - t_lo);
        const int64_t copies = fixed_tiles * combos(mode == 2 ? unrolled_flat : unrolled);
        fixed_fmas = copies * R * cols * lanes_unrolled();
        if (fixed_fmas > kFixedFmasMax && lanes_unrolled() > 1)
          lanes_looped = true, fixed_fmas /= lanes_unrolled();
        if (copies > kFixedCopies || fixed_fmas > kFixedFmasMax ||
            (fixed_fmas > kFixedFmasFree && fixed_runs(mode, VB, lanes_looped) < kFixedRuns))
          continue;
      }
      double score = fmas / loads * o_used * double(pair);
      if (const char *force = knob_get("CAPGRAPH_TILE")) {  // "R,VB": experiments only
        long fr = 0, fv = 0;
        if (sscanf(force, "%ld,%ld", &fr, &fv) == 2 && (fr != R || fv != VB)) continue;
      }
      if (score > *best + 1e-9) {
        *best = score, cp.R = R, cp.VB = VB, cp.pair = pair, cp.P = P, cp.tiles = tiles,
        cp.t_lo = t_lo, cp.t_hi = t_hi, cp.fixed_fmas = fixed_fmas, cp.lanes_looped = lanes_looped;
        cp.mode = mode == 0 ? ChannelTilePlan::Mode::split : ChannelTilePlan::Mode::fixed;
        best_flat = mode == 2;
      }
    }
  }
  void plan_print() const {
    fprintf(stderr,
            "tile %s: %s L=%lld P=%lld [%lld,%lld) tiles=%lld runtime [%lld,%lld) R=%lld VB=%lld "
            "pair=%lld o=%lld x_vector=%d fixed_fmas=%lld%s\n",
            k.name.c_str(),
            cp.mode == ChannelTilePlan::Mode::split ? "split"
            : cp.pos2 >= 0                          ? "flat"
                                                    : "fixed",
            (long long)cp.L, (long long)cp.P, (long long)cp.lo, (long long)cp.hi,
            (long long)cp.tiles, (long long)cp.t_lo, (long long)cp.t_hi, (long long)cp.R,
            (long long)cp.VB, (long long)cp.pair, (long long)(cp.o >= 0 ? k.axes[cp.o] : 0),
            cp.x_vector, (long long)cp.fixed_fmas, cp.lanes_looped ? " lanes looped" : "");
  }
};

}  // namespace

ChannelTilePlan channel_tile_plan(const Kernel &k, const Program &p, const CpuTarget &t) {
  return TilePlanner(k, p, t).plan();
}

// How many work-item indices axis a (< v) counts: tiles along the position axis (pos2 folded into
// it for flat tiles), VB-block tiles along o, the axis's own extent elsewhere.
static int64_t tile_axis_extent(const Kernel &k, const ChannelTilePlan &cp, int a) {
  return a == cp.pos    ? cp.tiles
         : a == cp.pos2 ? 1
         : a == cp.o    ? (k.axes[a] + cp.VB - 1) / cp.VB
                        : k.axes[a];
}

int64_t channel_tile_work_size(const Kernel &k, const ChannelTilePlan &cp) {
  int64_t n = 1;
  for (int a = 0; a < cp.v; a++) n *= tile_axis_extent(k, cp, a);
  return n;
}

int64_t channel_tile_window(const Kernel &k, const ChannelTilePlan &cp) {
  int64_t n = 1;
  for (int a = k.n_parallel; a < (int)k.axes.size(); a++) {
    bool window = false;  // as TileEmitter splits window and rest
    for (const DimIndex &d : k.loads[cp.x].dims) window |= skip_dim(d) && dim_uses(d, a);
    if (window) n *= k.axes[a];
  }
  return n;
}

int64_t channel_tile_rest_trips(const Kernel &k, const ChannelTilePlan &cp) {
  int64_t n = 1;
  bool innermost = true;
  for (int a = (int)k.axes.size() - 1; a >= k.n_parallel; a--) {
    bool window = false;
    for (const DimIndex &d : k.loads[cp.x].dims) window |= skip_dim(d) && dim_uses(d, a);
    if (window) continue;
    if (!(innermost && k.axes[a] <= kUnrolledLanes)) n *= k.axes[a];  // lanes: written out
    innermost = false;
  }
  return n;
}

namespace {

// One tile: Rt positions from p0 x VB blocks, accumulated in registers over all reduction loops,
// then stored through the result expression. A runtime tile (p0 known when it runs) has positions
// clamped below `end` (end < 0: all real) and each window offset inside X for all its positions or
// for none (the plan's promise). A fixed tile (p0 a constant) knows its positions: for each value
// of the window axes that move its positions' dims, the compiler keeps the positions inside X.
struct TileEmitter {
  KernelEmitter &e;
  const ChannelTilePlan &cp;
  llvm::IRBuilder<> &b;
  const Kernel &k;
  const Access &X, &W;
  int pa;                            // the position axis (or the block axis when there is none)
  std::vector<int> window, rest;     // reduction axes moving X's checked dims, and the others
  std::vector<size_t> checked_dims;  // X's dims with skip bounds
  llvm::FixedVectorType *vt;         // one block: L lanes
  llvm::FixedVectorType *at;         // one accumulator: L x pair lanes
  bool vector_epilogue = false;      // the result can be evaluated and stored L channels at once
  bool window_inside = false;        // window loops inside the rest (see emit)
  Value *table = nullptr;            // the X chain's byte table (channel_tile_table)

  TileEmitter(KernelEmitter &ee, const ChannelTilePlan &c, Value *t)
      : e(ee),
        cp(c),
        b(ee.b),
        k(ee.k),
        X(k.loads[c.x]),
        W(k.loads[c.w]),
        pa(c.pos >= 0 ? c.pos : c.v),
        vt(llvm::FixedVectorType::get(b.getFloatTy(), (unsigned)c.L)),
        at(llvm::FixedVectorType::get(b.getFloatTy(), (unsigned)(c.L * c.pair))),
        table(t) {
    for (size_t di = 0; di < X.dims.size(); di++)
      if (skip_dim(X.dims[di])) checked_dims.push_back(di);
    for (int a = k.n_parallel; a < (int)k.axes.size(); a++) {
      bool in_check = false;
      for (size_t di : checked_dims) in_check |= dim_uses(X.dims[di], a);
      (in_check ? window : rest).push_back(a);
    }
    int64_t sc = 0;
    bool plain = true;
    for (const DimIndex &d : k.store.dims) {
      plain = plain && d.bound == Bound::none && d.expr < 0 && d.divisor == 1;
      sc += e.coef_of(d, c.v) * d.stride;
    }
    if (!c.x_vector && !window.empty() && !rest.empty()) {
      bool plain_x;
      window_inside = c.x_expr >= 0 && std::abs(mem_coef(X, rest.back(), &plain_x)) >= kPlaneStride;
    }
    vector_epilogue = plain && sc == 1 && k.store_dtype == DType::f32 &&
                      e.p.buffers[k.store.buffer].dtype == DType::f32 &&
                      !knob_get("CAPGRAPH_SCALAR_EPILOGUE") && e.vector_evaluable(k.result, c.v);
  }
  Value *i64(int64_t x) { return e.i64(x); }
  // p, as a value the optimizer cannot see through: loads through copies with different ids are
  // never merged. An empty asm statement (no instruction; the id only keeps the copies distinct).
  Value *opaque_copy(Value *p, int64_t id) {
    auto *ft = llvm::FunctionType::get(p->getType(), {p->getType(), b.getInt64Ty()}, false);
    llvm::CallInst *c =
        b.CreateCall(ft, llvm::InlineAsm::get(ft, "", "=r,0,i", false), {p, i64(id)});
    c->setDoesNotAccessMemory();
    c->setDoesNotThrow();
    return c;
  }
  // The last o tile may hold fewer than VB real blocks: their loads read the last real block.
  bool o_ragged() const { return cp.o >= 0 && k.axes[cp.o] % cp.VB != 0; }
  Value *o_block(Value *o0, int64_t vb) {
    Value *o = b.CreateAdd(o0, i64(vb));
    if (vb == 0 || !o_ragged()) return o;
    return b.CreateSelect(b.CreateICmpSLT(o, i64(k.axes[cp.o])), o, i64(k.axes[cp.o] - 1));
  }
  // Block vb's L lanes of accumulator value v (lanes [h L, h L + L) of a paired one).
  Value *block_of(Value *v, int64_t vb) {
    if (cp.pair == 1) return v;
    llvm::SmallVector<int, 16> half;
    for (int64_t j = 0; j < cp.L; j++) half.push_back((int)((vb % cp.pair) * cp.L + j));
    return b.CreateShuffleVector(v, half);
  }
  // Points the position axes at position q (flat: q = pos2 index * W + pos index).
  void set_pos(Value *q) {
    if (cp.pos2 < 0) {
      e.iv[pa] = q;
      return;
    }
    e.iv[cp.pos2] = b.CreateUDiv(q, i64(cp.W));
    e.iv[cp.pos] = b.CreateURem(q, i64(cp.W));
  }
  // A dim of X at a fixed position q and fixed window values (other axes: unit extent).
  int64_t fixed_index(const DimIndex &d, int64_t q, const std::vector<int64_t> &wval) const {
    int64_t x = d.shift;
    for (const AxisTerm &t : d.terms) {
      if (t.axis == cp.pos)
        x += t.coef * (cp.pos2 >= 0 ? q % cp.W : q);
      else if (t.axis == cp.pos2)
        x += t.coef * (q / cp.W);
      else if (t.axis >= k.n_parallel)
        x += t.coef * wval[t.axis];
    }
    return x;
  }
  bool moves_position(const DimIndex &d) const {
    return (cp.pos >= 0 && dim_uses(d, cp.pos)) || (cp.pos2 >= 0 && dim_uses(d, cp.pos2));
  }

  // The tile being emitted: set by emit, read by its steps.
  int64_t Rt = 0;            // positions
  Value *p0 = nullptr;       // the first position
  Value *o0 = nullptr;       // the first o block, or nullptr (no o axis)
  int64_t end = -1;          // positions from `end` on are not real (-1: all are)
  bool fixed = false;        // a fixed tile: its positions are known here
  int64_t q0 = 0;            // a fixed tile's first position
  std::vector<Value *> pos;  // each position, clamped below `end`
  int64_t S = 1;             // accumulator sets (see sets_count)
  std::vector<std::vector<llvm::AllocaInst *>> sets;  // S sets of cols x Rt accumulators
  llvm::IRBuilder<> *entry = nullptr;                 // allocas, at the function's entry

  int64_t cols() const { return cp.VB / cp.pair; }  // accumulator columns

  // fixed_at >= 0: a fixed tile whose first position is fixed_at (p0 is that constant).
  void emit(int64_t positions, Value *first, Value *o_first, int64_t real_end,
            int64_t fixed_at = -1) {
    Rt = positions, p0 = first, o0 = o_first, end = real_end;
    fixed = fixed_at >= 0;
    q0 = fixed ? fixed_at : 0;
    positions_clamp();
    sets_count();
    llvm::IRBuilder<> entry_builder(&e.fn->getEntryBlock(), e.fn->getEntryBlock().begin());
    entry = &entry_builder;
    accumulators_alloc();
    reduction_emit();
    sets_sum();
    if (vector_epilogue)
      epilogue_vector();
    else
      epilogue_scalar();
    entry = nullptr;
  }

  void positions_clamp() {
    pos.assign(Rt, nullptr);
    for (int64_t r = 0; r < Rt; r++) {
      Value *q = b.CreateAdd(p0, i64(r));
      pos[r] =
          r == 0 || end < 0 ? q : b.CreateSelect(b.CreateICmpSLT(q, i64(end)), q, i64(end - 1));
    }
  }
  // Small tiles (border positions, matrix-vector products) have too few accumulators to hide the
  // FMA latency (cp.chains are needed): the innermost reduction loop then cycles through S sets
  // of accumulators, summed at the end.
  void sets_count() {
    S = 1;
    if (!rest.empty())
      for (int64_t d = 2; d <= k.axes[rest.back()]; d++)
        if (k.axes[rest.back()] % d == 0 && d * Rt * cols() <= cp.chains &&
            d * Rt * cols() + cols() + 1 <= cp.regs)
          S = d;
  }
  void accumulators_alloc() {
    sets.assign(S, std::vector<llvm::AllocaInst *>(cols() * Rt));
    for (auto &set : sets)
      for (auto &a : set) {
        a = entry->CreateAlloca(at);
        b.CreateStore(llvm::Constant::getNullValue(at), a);
      }
  }

  // One reduction point for the positions `live` (those inside X at this window offset).
  void reduction_point(const std::vector<llvm::AllocaInst *> &into,
                       const std::vector<int64_t> &live) {
    const int64_t VB = cp.VB, L = cp.L, cols = this->cols();
    std::vector<Value *> wv(VB), cv(cols);
    for (int64_t vb = 0; vb < VB; vb++) {
      if (o0) e.iv[cp.o] = o_block(o0, vb);
      Value *ok;
      wv[vb] = b.CreateAlignedLoad(vt, e.element_ptr(W.buffer, e.access_offset(W, cp.w, &ok)),
                                   llvm::Align(4));
    }
    if (o0) e.iv[cp.o] = o0;
    // A paired column joins its two blocks' weight rows (one 256-bit insert on AVX-512).
    llvm::SmallVector<int, 32> join;
    for (int64_t j = 0; j < L * cp.pair; j++) join.push_back((int)j);
    for (int64_t c = 0; c < cols; c++)
      cv[c] = cp.pair == 1 ? wv[c] : b.CreateShuffleVector(wv[2 * c], wv[2 * c + 1], join);
    for (int64_t r : live) {
      set_pos(pos[r]);
      Value *xv = input_value();
      for (int64_t c = 0; c < cols; c++) {
        llvm::AllocaInst *a = into[c * Rt + r];
        b.CreateStore(
            b.CreateIntrinsic(llvm::Intrinsic::fmuladd, {at}, {xv, cv[c], b.CreateLoad(at, a)}), a);
      }
    }
    set_pos(p0);
  }
  // X at the current position, as an accumulator-wide vector: its own vector (depthwise), or one
  // value broadcast.
  Value *input_value() {
    const int64_t L = cp.L;
    if (cp.x_expr >= 0) {
      // The byte, then its table entry (X's checked dims are marked: the load reads without a
      // check, this point runs only where X is inside).
      Value *ok;
      Value *byte =
          b.CreateLoad(b.getInt8Ty(), e.element_ptr(X.buffer, e.access_offset(X, cp.x, &ok)));
      Value *row = e.p.buffers[X.buffer].dtype == DType::i8
                       ? b.CreateAdd(b.CreateSExt(byte, b.getInt64Ty()), i64(128))
                       : b.CreateZExt(byte, b.getInt64Ty());
      if (cp.x_table_axis >= 0)
        row = b.CreateAdd(row, b.CreateMul(e.iv[cp.x_table_axis], i64(256)));
      Value *xs = b.CreateLoad(b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), table, row));
      return b.CreateVectorSplat((unsigned)(L * cp.pair), xs);
    }
    Value *ok;
    Value *ptr = e.element_ptr(X.buffer, e.access_offset(X, cp.x, &ok));
    return cp.x_vector
               ? (Value *)b.CreateAlignedLoad(vt, ptr, llvm::Align(4))
               : b.CreateVectorSplat((unsigned)(L * cp.pair), b.CreateLoad(b.getFloatTy(), ptr));
  }

  using LiveFn = std::function<void(const std::vector<int64_t> &)>;
  using SetFn = std::function<void(const std::vector<llvm::AllocaInst *> &)>;

  // The reduction: the window offsets (checked) and the other reduction axes (`rest`, whose
  // innermost cycles through the S accumulator sets). Window outside, as a rule: each check is
  // made once for all the rest, and a float input's channel planes are read innermost, whatever
  // their distance: a 12-channel NCHW stem (3x3, 16 outputs) ran at 16 GFLOP/s with the window
  // inside and 68 outside on 127x255 (issue 27's cliff; 24-36 against 16 on 128x256, whose
  // planes share a cache set, stride 2), Zen 3, AVX2. Window inside only where X is a byte
  // chain read through its table (a uint8 camera frame): there the table row follows the
  // channel, and inside was 1.2x faster (comma_like's stems, 0.65 against 0.80 ms).
  // A window's reduction loops are never unrolled by LLVM (what should be unrolled is, here):
  // their bodies are far past its thresholds, but deciding so took LLVM's two unroll passes 46%
  // of the optimizer's time on resnet18's 3x3 convs (opt -time-passes), for the same code. Tiles
  // without a window (1x1 convs, products) are left to LLVM: it unrolls a product's reduction
  // by 2 where that is short enough. Only on 8-lane vectors (AVX2, where the captures show LLVM
  // unrolled none of them but in comma_like's stems): on AVX-512 it does unroll some (squeezenet:
  // 4-trip loops, 16-lane loops by 2), and what keeping them does to the speed there and on NEON
  // was not measured. The looped lanes of the bound are kept everywhere. On AVX-512 the fixed
  // tiles' loops are kept too where X is broadcast (issue 27, measured on a Zen 4): LLVM's
  // unroll passes were 47% of the optimizer's time on resnet18's 512-channel 3x3 convs on 7x7
  // (all fixed tiles), and the kernels that changed ran the same kept (det, resnet18,
  // squeezenet, inception_like, regnet_like: 0.97-1.03 per kernel). The runtime tiles stay
  // LLVM's (kept, densenet_like's and det's 3x3 convs ran 1.4-1.5x slower), and so do the
  // depthwise fixed tiles (kept: not measured). CAPGRAPH_UNROLL_FIXED=1 leaves them all to LLVM.
  void reduction_emit() {
    e.keep_loops = !window.empty() &&
                   (cp.keep_window_loops ||
                    (fixed && (cp.lanes_looped || (cp.keep_fixed_window_loops && !cp.x_vector))));
    reduction_loops();
    e.keep_loops = false;
  }
  void reduction_loops() {
    if (window_inside)
      rest_loops([&](const std::vector<llvm::AllocaInst *> &set) {
        window_loops([&](const std::vector<int64_t> &live) { checked_point(set, live); });
      });
    else
      window_loops([&](const std::vector<int64_t> &live) {
        rest_loops([&](const std::vector<llvm::AllocaInst *> &set) { checked_point(set, live); });
      });
  }
  // A reduction point whose X dims the window loops have checked.
  void checked_point(const std::vector<llvm::AllocaInst *> &set, const std::vector<int64_t> &live) {
    for (size_t di : checked_dims) e.checked[cp.x][di] = 1;
    reduction_point(set, live);
    for (size_t di : checked_dims) e.checked[cp.x][di] = 0;
  }
  // Whether the innermost rest loop is written out (see rest_loops; a fixed tile keeps it a loop
  // where the plan says its written-out work would be too much code).
  bool lanes_written() const {
    return !rest.empty() && k.axes[rest.back()] <= kUnrolledLanes && !(fixed && cp.lanes_looped);
  }
  // The rest loops. An innermost axis of at most 8 (the lanes of a blocked input) is unrolled
  // here: left as a loop, LLVM may keep it as one of a few trips whose exit mispredicts every
  // time (a 576 -> 96 1x1 conv on 14x14 ran at 80 instead of 98 GFLOP/s).
  void rest_loops(const SetFn &body) {
    if (rest.empty()) return body(sets[0]);
    std::vector<int> outer(rest.begin(), rest.end() - 1);
    const int last = rest.back();
    const int64_t n = k.axes[last] / S;
    auto step = [&](Value *j) {
      for (int64_t si = 0; si < S; si++) {
        e.iv[last] = S == 1 ? j : b.CreateAdd(b.CreateMul(j, i64(S)), i64(si));
        body(sets[si]);
      }
    };
    e.nest_order(outer, 0, [&] {
      if (lanes_written())
        for (int64_t j = 0; j < n; j++) step(i64(j));
      else
        e.loop(n, step);  // kept a loop (reduction_emit): LLVM wrote resnet18's 8 lanes out again
    });
  }
  // The checks the loops make at run time: over `dims`, at the tile's first position.
  void window_check(const std::vector<size_t> &dims, const std::vector<int64_t> &live,
                    const LiveFn &body) {
    Value *in = nullptr;
    set_pos(p0);
    for (size_t di : dims) {
      Value *c = b.CreateICmpULT(e.affine(X.dims[di]), i64(X.dims[di].extent));
      in = in ? b.CreateAnd(in, c) : c;
    }
    if (in)
      e.guarded(in, [&] { body(live); });
    else
      body(live);
  }

  // Window axes moving the positions' dims: in a fixed tile they are unrolled, and for each of
  // their values the positions inside X are known here. The other dims are checked at run time
  // (the same for every position of the tile).
  struct WindowAxes {
    std::vector<size_t> pos_dims, other_dims;  // checked dims moving the positions, the others
    std::vector<int> unrolled, looped;         // window axes moving pos_dims, the others
    std::vector<int64_t> wval;                 // the unrolled axes' current values
  };
  WindowAxes window_axes() const {
    WindowAxes w;
    for (size_t di : checked_dims)
      (moves_position(X.dims[di]) ? w.pos_dims : w.other_dims).push_back(di);
    for (int a : window) {
      bool u = false;
      for (size_t di : w.pos_dims) u |= dim_uses(X.dims[di], a);
      (u ? w.unrolled : w.looped).push_back(a);
    }
    w.wval.assign(k.axes.size(), 0);
    return w;
  }
  // The tile's positions inside X at the current window values (a runtime tile: all).
  std::vector<int64_t> live_positions(const WindowAxes &w) const {
    std::vector<int64_t> live;
    for (int64_t r = 0; r < Rt; r++) {
      bool in = true;
      for (size_t di : w.pos_dims) {
        int64_t x = fixed_index(X.dims[di], q0 + r, w.wval);
        in = in && (!fixed || (x >= 0 && x < X.dims[di].extent));
      }
      if (in) live.push_back(r);
    }
    return live;
  }
  // Runs f for every value of the unrolled window axes from w.unrolled[at] on.
  void window_combos(WindowAxes &w, size_t at, const std::function<void()> &f) {
    if (at == w.unrolled.size()) return f();
    for (int64_t i = 0; i < k.axes[w.unrolled[at]]; i++) {
      w.wval[w.unrolled[at]] = i, e.iv[w.unrolled[at]] = i64(i);
      window_combos(w, at + 1, f);
    }
  }
  // The window offsets, unrolled (by us or by LLVM), read many of the same elements of X
  // (position r + 1 at offset 0 is position r at offset 1). Merged, each such load stays live
  // from its first use to its last. Where those values and the accumulators far outnumber
  // the registers, each offset reads X through its own opaque copy of X's base pointer, so
  // that nothing merges and each load folds into its FMA. Merged past the registers, the
  // grouped 3x3 convs of regnet_like spilled 240 broadcasts per window row and reloaded them
  // from a 7 KB frame; their time then followed the stack's address (the spill stores
  // 4K-aliasing the tile's loads): 0.20 ms in one process, 0.40 ms in the next; apart 0.167 ms
  // in most. The 28-wide depthwise tiles of mobilenet_v2 ran 1.5-1.8x faster apart. Where
  // the merged values fit, or overflow by a few spills (16- and 22-wide depthwise tiles),
  // merged is faster (1.1-1.15x): it loads each element once.
  bool window_apart(WindowAxes &w) {
    std::map<std::vector<int64_t>, int>
        uses;  // X point (its position dims) -> window offsets reading it
    int64_t combos = 0;
    window_combos(w, 0, [&] {
      combos++;
      for (int64_t r : live_positions(w)) {
        std::vector<int64_t> at;
        for (size_t di : w.pos_dims) at.push_back(fixed_index(X.dims[di], q0 + r, w.wval));
        uses[at]++;
      }
    });
    int64_t shared = 0;
    for (const auto &u : uses) shared += u.second > 1;
    const int64_t lanes_unrolled = !window_inside && lanes_written() ? k.axes[rest.back()] : 1;
    const int64_t merged_live = S * Rt * cols() + shared * lanes_unrolled + cols();
    const bool apart = combos > 1 && !knob_get("CAPGRAPH_CSE_WINDOW") &&
                       2 * merged_live > 3 * cp.regs;  // env: experiments
    if (getenv("CAPGRAPH_DEBUG_TILE") && combos > 1)
      fprintf(stderr,
              "window %s: %s tile at %lld, %lld positions, %lld shared X points x %lld lanes, "
              "%lld merged values: %s\n",
              k.name.c_str(), fixed ? "fixed" : "runtime", (long long)q0, (long long)Rt,
              (long long)shared, (long long)lanes_unrolled, (long long)merged_live,
              apart ? "apart" : "merged");
    return apart;
  }
  // The window loops around `body`, each offset's checks made (window_check) and, in a fixed
  // tile, each unrolled offset given the positions it keeps inside X.
  void window_loops(const LiveFn &body) {
    WindowAxes w = window_axes();
    const bool apart = window_apart(w);
    std::vector<int64_t> all(Rt);
    for (int64_t r = 0; r < Rt; r++) all[r] = r;
    if (!fixed && !apart) {
      // Each window offset inside X for the tile's first position, hence for all: add it.
      return e.nest_order(window, 0, [&] { window_check(checked_dims, all, body); });
    }
    int64_t combo = 0;
    e.nest_order(w.looped, 0, [&] {
      window_combos(w, 0, [&] {
        std::vector<int64_t> live = live_positions(w);
        if (live.empty()) return;
        Value *base = e.slot_ptr[X.buffer];
        if (apart && combo > 0) e.slot_ptr[X.buffer] = opaque_copy(base, combo);
        combo++;
        window_check(fixed ? w.other_dims : checked_dims, live, body);
        e.slot_ptr[X.buffer] = base;
      });
    });
  }

  // The S accumulator sets summed into the first.
  void sets_sum() {
    std::vector<llvm::AllocaInst *> &acc = sets[0];
    for (int64_t si = 1; si < S; si++)
      for (size_t i = 0; i < acc.size(); i++)
        b.CreateStore(b.CreateFAdd(b.CreateLoad(at, acc[i]), b.CreateLoad(at, sets[si][i])),
                      acc[i]);
  }
  // Epilogue in vectors: each accumulator through the result expression, L channels at once.
  void epilogue_vector() {
    const std::vector<llvm::AllocaInst *> &acc = sets[0];
    for (int64_t vb = 0; vb < cp.VB; vb++)
      for (int64_t r = 0; r < Rt; r++) {
        auto store = [&] {
          if (o0) e.iv[cp.o] = b.CreateAdd(o0, i64(vb));
          set_pos(b.CreateAdd(p0, i64(r)));
          e.iv[cp.v] = i64(0);
          e.acc_value = block_of(b.CreateLoad(at, acc[vb / cp.pair * Rt + r]), vb);
          e.lanes = (unsigned)cp.L, e.lane_axis = cp.v;
          Value *v = e.evaluate(k.result, false);
          e.lanes = 0, e.lane_axis = -1;
          Value *ok;
          Value *off = e.access_offset(k.store, -1, &ok);
          b.CreateAlignedStore(v, e.element_ptr(k.store.buffer, off), llvm::Align(4));
        };
        Value *real =
            r == 0 || end < 0 ? nullptr : b.CreateICmpSLT(b.CreateAdd(p0, i64(r)), i64(end));
        if (vb > 0 && o_ragged()) {
          Value *o_real = b.CreateICmpSLT(b.CreateAdd(o0, i64(vb)), i64(k.axes[cp.o]));
          real = real ? b.CreateAnd(real, o_real) : o_real;
        }
        if (real)
          e.guarded(real, store);
        else
          store();
      }
    if (o0) e.iv[cp.o] = o0;
    set_pos(p0);
  }
  // Epilogue: through the result expression, element by element, for the real positions.
  void epilogue_scalar() {
    const std::vector<llvm::AllocaInst *> &acc = sets[0];
    const int64_t VB = cp.VB, L = cp.L;
    llvm::AllocaInst *spill =
        entry->CreateAlloca(llvm::ArrayType::get(b.getFloatTy(), VB * Rt * L));
    auto *row_ty = llvm::ArrayType::get(b.getFloatTy(), VB * Rt * L);
    for (int64_t vb = 0; vb < VB; vb++)
      for (int64_t r = 0; r < Rt; r++)
        b.CreateAlignedStore(block_of(b.CreateLoad(at, acc[vb / cp.pair * Rt + r]), vb),
                             b.CreateInBoundsGEP(row_ty, spill, {i64(0), i64((vb * Rt + r) * L)}),
                             llvm::Align(4));
    Value *n_pos = Rt == 1 || end < 0
                       ? i64(Rt)
                       : b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(p0, i64(Rt)), i64(end)),
                                        i64(Rt), b.CreateSub(i64(end), p0));
    Value *n_vb = o_ragged()
                      ? b.CreateSelect(b.CreateICmpSLT(b.CreateAdd(o0, i64(VB)), i64(k.axes[cp.o])),
                                       i64(VB), b.CreateSub(i64(k.axes[cp.o]), o0))
                      : i64(VB);
    e.loop(i64(0), n_vb, [&](Value *vb) {
      if (o0) e.iv[cp.o] = b.CreateAdd(o0, vb);
      e.loop(i64(0), n_pos, [&](Value *r) {
        set_pos(b.CreateAdd(p0, r));
        Value *base = b.CreateMul(b.CreateAdd(b.CreateMul(vb, i64(Rt)), r), i64(L));
        e.loop(L, [&](Value *j) {
          e.iv[cp.v] = j;
          e.acc_value = b.CreateLoad(
              b.getFloatTy(), b.CreateInBoundsGEP(row_ty, spill, {i64(0), b.CreateAdd(base, j)}));
          e.store_result(e.evaluate(k.result, false));
        });
      });
    });
    e.iv[cp.v] = i64(0);
    if (o0) e.iv[cp.o] = o0;
    set_pos(p0);
  }
};

}  // namespace

Value *channel_tile_table(KernelEmitter &e, const ChannelTilePlan &cp) {
  if (cp.x_expr < 0) return nullptr;
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  const int64_t rows = cp.x_table_axis >= 0 ? k.axes[cp.x_table_axis] : 1;
  const bool signed_byte = e.p.buffers[k.loads[cp.x].buffer].dtype == DType::i8;
  Value *table = b.CreateAlloca(llvm::ArrayType::get(b.getFloatTy(), rows * 256));
  // The chain's other loads read at index 0 of every axis but the table's (the plan made sure
  // they move with no other).
  std::vector<Value *> saved = e.iv;
  for (Value *&v : e.iv) v = e.i64(0);
  e.loop(rows, [&](Value *r) {
    if (cp.x_table_axis >= 0) e.iv[cp.x_table_axis] = r;
    e.loop(256, [&](Value *j) {
      e.cache.clear();
      e.in_body = false, e.valid = nullptr;
      // The byte's value as the load would give it (integers are i64 in registers).
      e.cache[cp.x_load_expr] = signed_byte ? b.CreateSub(j, e.i64(128)) : j;
      Value *v = e.eval(cp.x_expr);
      e.cache.clear();
      b.CreateStore(v, b.CreateInBoundsGEP(b.getFloatTy(), table,
                                           b.CreateAdd(b.CreateMul(r, e.i64(256)), j)));
    });
  });
  e.iv = saved;
  return table;
}

void channel_tile_emit(KernelEmitter &e, const ChannelTilePlan &cp, Value *w, Value *table) {
  llvm::IRBuilder<> &b = e.b;
  const Kernel &k = e.k;
  const int64_t R = cp.R, VB = cp.VB;
  // Work item -> tile: outer indices, the o block, and the position tile t.
  Value *rem = w, *t = e.i64(0);
  for (int a = cp.v - 1; a >= 0; a--) {
    int64_t n = tile_axis_extent(k, cp, a);
    Value *idx = n == 1 ? e.i64(0) : b.CreateURem(rem, e.i64(n));
    if (n > 1) rem = b.CreateUDiv(rem, e.i64(n));
    e.iv[a] = a == cp.o ? b.CreateMul(idx, e.i64(VB)) : idx;
    if (a == cp.pos) t = idx;
  }
  e.iv[cp.v] = e.i64(0);
  Value *o0 = cp.o >= 0 ? e.iv[cp.o] : nullptr;
  TileEmitter te(e, cp, table);
  auto branch = [&](Value *cond, const std::function<void()> &then,
                    const std::function<void()> &other) {
    llvm::BasicBlock *a = llvm::BasicBlock::Create(e.ctx, "tile_a", e.fn),
                     *c = llvm::BasicBlock::Create(e.ctx, "tile_b", e.fn),
                     *join = llvm::BasicBlock::Create(e.ctx, "tile_join", e.fn);
    b.CreateCondBr(cond, a, c);
    b.SetInsertPoint(a);
    then();
    b.CreateBr(join);
    b.SetInsertPoint(c);
    other();
    b.CreateBr(join);
    b.SetInsertPoint(join);
  };
  if (cp.mode == ChannelTilePlan::Mode::split) {
    const int64_t n_mid = (cp.hi - cp.lo + R - 1) / R;
    if (cp.lo == 0 && cp.hi == cp.P) {  // no border positions
      Value *p0 = cp.pos >= 0 ? b.CreateMul(t, e.i64(R)) : e.i64(0);
      if (cp.pos >= 0) e.iv[cp.pos] = p0;
      return te.emit(R, p0, o0, cp.P);
    }
    // Tiles: [0, lo) single border positions, then n_mid interior tiles, then the rest single.
    Value *mid =
        b.CreateAnd(b.CreateICmpSGE(t, e.i64(cp.lo)), b.CreateICmpSLT(t, e.i64(cp.lo + n_mid)));
    return branch(
        mid,
        [&] {
          Value *p0 =
              b.CreateAdd(e.i64(cp.lo), b.CreateMul(b.CreateSub(t, e.i64(cp.lo)), e.i64(R)));
          e.iv[cp.pos] = p0;
          te.emit(R, p0, o0, cp.hi);
        },
        [&] {
          Value *p1 =
              b.CreateSelect(b.CreateICmpSLT(t, e.i64(cp.lo)), t,
                             b.CreateAdd(e.i64(cp.hi), b.CreateSub(t, e.i64(cp.lo + n_mid))));
          e.iv[cp.pos] = p1;
          te.emit(1, p1, o0, cp.P);
        });
  }
  // Fixed tiles: [t_lo, t_hi) at run time (whole, inside), each other one on its own.
  auto fixed_tiles = [&] {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < cp.tiles; i++)
      if (i < cp.t_lo || i >= cp.t_hi) ids.push_back(i);
    if (ids.size() == 1) {
      te.emit(std::min(R, cp.P - ids[0] * R), e.i64(ids[0] * R), o0, -1, ids[0] * R);
      return;
    }
    llvm::BasicBlock *done = llvm::BasicBlock::Create(e.ctx, "tile_done", e.fn);
    llvm::BasicBlock *none = llvm::BasicBlock::Create(e.ctx, "tile_none", e.fn);
    llvm::SwitchInst *sw = b.CreateSwitch(t, none, (unsigned)ids.size());
    for (int64_t i : ids) {
      llvm::BasicBlock *bb = llvm::BasicBlock::Create(e.ctx, "tile_fixed", e.fn);
      sw->addCase(b.getInt64(i), bb);
      b.SetInsertPoint(bb);
      te.emit(std::min(R, cp.P - i * R), e.i64(i * R), o0, -1, i * R);
      b.CreateBr(done);
    }
    b.SetInsertPoint(none);
    b.CreateUnreachable();
    b.SetInsertPoint(done);
  };
  if (cp.t_lo == cp.t_hi) return fixed_tiles();
  auto runtime_tile = [&] {
    Value *p0 = b.CreateMul(t, e.i64(R));
    if (cp.pos >= 0) e.iv[cp.pos] = p0;
    te.emit(R, p0, o0, -1);
  };
  if (cp.t_lo == 0 && cp.t_hi == cp.tiles) return runtime_tile();
  branch(b.CreateAnd(b.CreateICmpSGE(t, e.i64(cp.t_lo)), b.CreateICmpSLT(t, e.i64(cp.t_hi))),
         runtime_tile, fixed_tiles);
}

}  // namespace capgraph
