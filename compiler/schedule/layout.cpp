#include "schedule/layout.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "knobs.h"
#include "schedule/fuse.h"

namespace capgraph {

namespace {

struct Use {
  int kernel;
  Access *access;
};

// The one axis (of extent > 1) that indexes dimension `d` of `a` with coefficient 1, usable for
// a split into (outer, inner CB); -1 if there is none or the index is anything else.
int channel_axis(const Kernel &k, const Access &a, size_t d, int64_t CB) {
  const DimIndex &di = a.dims[d];
  if (di.expr >= 0 || di.divisor != 1 || (di.bound != Bound::none && di.bound != Bound::skip))
    return -1;
  if (di.shift % CB != 0) return -1;
  // Other terms may add whole blocks (a grouped convolution's group: c = g * 8 + ci with 8 channels
  // per group and blocks of 8): the block index is then (theirs / CB) + the axis' outer part.
  int axis = -1;
  for (const AxisTerm &t : di.terms) {
    if (k.axes[t.axis] == 1 || t.coef == 0) continue;
    if (t.coef % CB == 0 && t.coef > 0) continue;
    if (axis >= 0 || t.coef != 1) return -1;
    axis = t.axis;
  }
  if (axis < 0 || k.axes[axis] % CB != 0) return -1;
  for (size_t e = 0; e < a.dims.size(); e++)
    if (e != d && dim_uses(a.dims[e], axis)) return -1;
  for (const Expr &x : k.exprs)
    if (x.op == Op::iota && x.access == axis) return -1;
  return axis;
}

// The axes adding whole blocks to dimension d's index besides its channel axis (a group axis).
std::vector<int> block_step_axes(const Kernel &k, const Access &a, size_t d, int axis) {
  std::vector<int> out;
  for (const AxisTerm &t : a.dims[d].terms)
    if (t.axis != axis && k.axes[t.axis] > 1 && t.coef != 0) out.push_back(t.axis);
  return out;
}

// The buffer as a contiguous [N, C, H, W] (C = its elements / (N H W)), taken from the first of
// its 4-D views whose dimensions are in that order (a transposed view, as an NHWC model's
// Transpose gives, has them in another); empty where none is.
Shape canonical_shape(const Program &p, int buf, const std::vector<Use> &uses) {
  const int64_t numel = p.buffers[buf].numel;
  for (const Use &u : uses) {
    const Access &a = *u.access;
    if (a.dims.size() != 4) continue;
    const int64_t N = a.dims[0].extent, H = a.dims[2].extent, W = a.dims[3].extent;
    if (N * H * W == 0 || numel % (N * H * W) != 0) continue;
    const Shape st = {numel / N, H * W, W, 1};
    bool ordered = true;
    for (int d = 0; d < 4; d++) ordered &= a.dims[d].extent == 1 || a.dims[d].stride == st[d];
    if (ordered) return {N, numel / (N * H * W), H, W};
  }
  return {};
}

// The dimension of a 4-D view that indexes channels: the one of extent > 1 that steps one channel
// plane (H * W elements); 1 where none does.
int channel_dim(const Access &a, int64_t plane) {
  for (size_t d = 0; d < a.dims.size(); d++)
    if (a.dims[d].extent > 1 && a.dims[d].stride == plane) return (int)d;
  return 1;
}

// A transposed view of the whole [N, C, H, W] buffer: each dimension of extent > 1 is one of
// the buffer's own (its extent and stride), each of those at most once.
bool permuted_whole_view(const Access &a, const Shape &nchw) {
  if (a.offset != 0) return false;
  const Shape st = shape_strides(nchw);
  std::vector<char> taken(4, 0);
  for (const DimIndex &d : a.dims) {
    if (d.extent == 1) continue;
    bool found = false;
    for (int e = 0; e < 4 && !found; e++)
      if (!taken[e] && nchw[e] == d.extent && st[e] == d.stride) taken[e] = 1, found = true;
    if (!found) return false;
  }
  return true;
}

// A buffer can be blocked when every access views it as the same contiguous [N, C, H, W] with
// C % CB == 0 and some spatial extent, or as a slice of it along C starting and ending on a
// multiple of CB (Concat's parts), or as a transposed view of the whole of it (an NHWC model's
// Transpose: the blocked layout serves any order of the dimensions, each keeping its own stride
// times CB), and indexes C through one splittable axis. Such a slice's element offset c0 * H * W
// is the same number in the blocked layout.
const char *why_not_blockable(const Program &p, int buf, const std::vector<Use> &uses, int64_t CB) {
  const Buffer &B = p.buffers[buf];
  if (B.kind != Buffer::Kind::intermediate || B.dtype != DType::f32 || uses.empty())
    return "not an f32 intermediate";
  for (const Use &u : uses)
    if (u.access->dims.size() != 4) return "not viewed as 4-D";
  // Strides of size-1 dims do not matter (their index is 0 wherever an element is read).
  const Shape nchw = canonical_shape(p, buf, uses);
  if (nchw.empty()) return "not a contiguous 4-D view";
  const int64_t C = nchw[1], H = nchw[2], W = nchw[3];
  const Shape st = shape_strides(nchw);
  if (C % CB != 0)
    return CB == 8 ? "channels not a multiple of 8" : "channels not a multiple of the block";
  if (H * W < 2) return "no spatial extent";
  for (const Use &u : uses) {
    const Access &a = *u.access;
    bool ordered = true;
    for (int d = 0; d < 4; d++)
      ordered &= (a.dims[d].extent == 1 || a.dims[d].stride == st[d]) &&
                 (d == 1 || a.dims[d].extent == nchw[d]);
    if (!ordered) {
      if (!permuted_whole_view(a, nchw)) return "views with different strides or extents";
    } else {
      if (a.offset % st[1] != 0) return "a view that is not 4-D or starts inside a channel";
      const int64_t c0 = a.offset / st[1];
      if (c0 % CB != 0 || a.dims[1].extent % CB != 0 || c0 + a.dims[1].extent > C)
        return "a channel slice not on block boundaries";
    }
    if (channel_axis(p.kernels[u.kernel], a, channel_dim(a, H * W), CB) < 0)
      return "channels not indexed by one splittable axis";
  }
  return nullptr;
}

// Splits the axes in `split` of kernel k into (outer, inner block) (each axis its own block) and
// rewrites the accesses of the blocked buffers (block[buffer] > 0) into [N, C/CB, H, W, CB].
// Parallel inner axes go innermost among the parallel axes; reduction axes are reordered (unsplit
// ones first, then split outers, then inners) so a convolution reduces over its window outside
// and over channels inside.
void kernel_split(Kernel &k, const std::map<int, int64_t> &split, const std::vector<int64_t> &block,
                  const std::vector<int64_t> &planes) {
  int na = (int)k.axes.size(), np = k.n_parallel;
  std::vector<int> outer(na, -1), inner(na, -1);
  Shape axes;
  int par_split = -1;
  for (int a = 0; a < np; a++) {
    outer[a] = (int)axes.size();
    axes.push_back(split.count(a) ? k.axes[a] / split.at(a) : k.axes[a]);
    if (split.count(a)) par_split = a;
  }
  if (par_split >= 0) {
    inner[par_split] = (int)axes.size();
    axes.push_back(split.at(par_split));
  }
  int new_np = (int)axes.size();
  for (int a = np; a < na; a++)
    if (!split.count(a)) outer[a] = (int)axes.size(), axes.push_back(k.axes[a]);
  for (int a = np; a < na; a++)
    if (split.count(a)) outer[a] = (int)axes.size(), axes.push_back(k.axes[a] / split.at(a));
  for (int a = np; a < na; a++)
    if (split.count(a)) inner[a] = (int)axes.size(), axes.push_back(split.at(a));
  std::vector<char> is_inner(axes.size(), 0);
  for (int a = 0; a < na; a++)
    if (inner[a] >= 0) is_inner[inner[a]] = 1;

  auto rewrite = [&](Access &acc) {
    for (DimIndex &d : acc.dims) {
      std::vector<AxisTerm> terms;
      for (const AxisTerm &t : d.terms) {
        if (inner[t.axis] >= 0) {
          terms.push_back({outer[t.axis], t.coef * split.at(t.axis)});
          terms.push_back({inner[t.axis], t.coef});
        } else {
          terms.push_back({outer[t.axis], t.coef});
        }
      }
      d.terms = terms;
    }
    const int64_t CB = block[acc.buffer], plane = planes[acc.buffer];
    if (!CB) return;
    // The channel index is (outer axis) * CB + (inner axis): the outer indexes blocks. The
    // other dims keep their order: the spatial ones (strides below a plane) step CB times as
    // far, the batch (a whole image) as before.
    const int cd = channel_dim(acc, plane);
    DimIndex c = acc.dims[cd], cb, ci;
    for (const AxisTerm &t : c.terms) {
      if (axes[t.axis] == 1) continue;
      if (is_inner[t.axis])
        ci.terms.push_back({t.axis, 1});
      else
        cb.terms.push_back({t.axis, t.coef / CB});  // the split outer (CB) or whole blocks
    }
    cb.shift = c.shift / CB;
    cb.extent = c.extent / CB;
    cb.bound = c.bound;
    cb.stride = plane * CB;
    ci.extent = CB;
    ci.stride = 1;
    for (int d = 0; d < (int)acc.dims.size(); d++)
      if (d != cd && acc.dims[d].stride < plane) acc.dims[d].stride *= CB;
    acc.dims[cd] = cb;
    acc.dims.push_back(ci);
  };
  rewrite(k.store);
  for (Access &a : k.loads) rewrite(a);
  for (Expr &e : k.exprs)
    if (e.op == Op::iota) e.access = outer[e.access];
  k.axes = axes;
  k.n_parallel = new_np;
}

std::vector<std::vector<Use>> program_uses(Program &p) {
  std::vector<std::vector<Use>> uses(p.buffers.size());
  for (size_t ki = 0; ki < p.kernels.size(); ki++) {
    Kernel &k = p.kernels[ki];
    uses[k.store.buffer].push_back({(int)ki, &k.store});
    for (Access &a : k.loads) uses[a.buffer].push_back({(int)ki, &a});
  }
  return uses;
}

// Each buffer's block: the widest that fits it (its channels, its slices), else the narrow one;
// 0 for the buffers in `rows` (kept in the row layout on purpose).
std::vector<int64_t> blocks_choose(const Program &p, const std::vector<std::vector<Use>> &uses,
                                   int64_t widest, const std::set<int> &rows) {
  std::vector<int64_t> block(p.buffers.size(), 0);
  for (size_t b = 0; b < p.buffers.size(); b++)
    for (int64_t cb : {widest, kChannelBlock})
      if (!block[b] && !rows.count((int)b) && cb >= kChannelBlock &&
          !why_not_blockable(p, (int)b, uses[b], cb))
        block[b] = cb;
  return block;
}

// Each buffer's channel plane (H * W elements of its [N, C, H, W]; 0 where it has none).
std::vector<int64_t> planes_of(const Program &p, const std::vector<std::vector<Use>> &uses) {
  std::vector<int64_t> planes(p.buffers.size(), 0);
  for (size_t b = 0; b < p.buffers.size(); b++) {
    const Shape nchw = canonical_shape(p, (int)b, uses[b]);
    if (!nchw.empty()) planes[b] = nchw[2] * nchw[3];
  }
  return planes;
}

// A copy kernel of buffer `from` into buffer `to`, both viewed as the row-layout [N, C, H, W]
// `shape`, element for element; named "reorder" (reorder_tile walks it in position tiles).
Kernel reorder_kernel(const Kernel &k, int from_buffer, int to_buffer, const Shape &shape) {
  const Shape st = shape_strides(shape);
  Kernel r;
  r.name = "reorder";
  r.source_nodes = k.source_nodes.empty() ? std::vector<std::string>{}
                                          : std::vector<std::string>{k.source_nodes[0]};
  r.axes = shape;
  r.n_parallel = 4;
  Access from, to;
  from.buffer = from_buffer;
  to.buffer = to_buffer;
  for (int d = 0; d < 4; d++) {
    DimIndex di;
    di.terms = {{d, 1}};
    di.extent = shape[d];
    di.stride = st[d];
    from.dims.push_back(di);
    to.dims.push_back(di);
  }
  r.result = r.expr_load(from, DType::f32);
  r.store = to;
  return r;
}

// The other direction: a window reduction (depthwise convolution, pooling) that writes the blocked
// layout but reads a buffer no block fits (ShuffleNet's channel shuffle writes its output through
// a 5-D view) gathers its input one element per lane, a map's height apart, in every multiply-add:
// shufflenet_like's 3x3 stride-2 depthwise on 232 channels ran at 4.7 GFLOP/s (0.043 ms, its
// blocked twin 0.004 ms; NOTES issue 17). Such an input gets a copy in the row layout [N, C, H, W]
// that the blocking then blocks (one "reorder" kernel right before the reduction, reading rows and
// writing blocks), when the reduction reads each input element at least twice (a gathered
// multiply-add, ~0.4 ns there, costs about what copying one element does). Appends the copies to
// `kernels` and points k's loads at them.
void reorder_to_blocks(Program &p, Kernel &k, const std::vector<int64_t> &block,
                       const std::vector<int64_t> &planes, std::vector<Kernel> &kernels) {
  const int64_t CB = block[k.store.buffer];
  if (k.reduce == Reduce::none || !CB) return;
  const int sc = channel_axis(k, k.store, channel_dim(k.store, planes[k.store.buffer]), CB);
  if (sc < 0 || sc >= k.n_parallel) return;
  int64_t points = 1;
  for (int64_t e : k.axes) points *= e;
  std::map<int, int> copy_of;
  for (Access &a : k.loads) {
    const int b = a.buffer;
    if (copy_of.count(b)) {
      a.buffer = copy_of[b];
      continue;
    }
    const Buffer &B = p.buffers[b];
    if (block[b] || B.kind != Buffer::Kind::intermediate || B.dtype != DType::f32 ||
        a.dims.size() != 4)
      continue;
    if (channel_axis(k, a, 1, CB) != sc || points < 2 * B.numel) continue;
    // A contiguous [N, C, H, W] view of the whole buffer, or a channel slice of it on block
    // boundaries (the same element offsets in both layouts).
    const int64_t N = a.dims[0].extent, H = a.dims[2].extent, W = a.dims[3].extent;
    if (N * H * W == 0 || B.numel % (N * H * W) != 0) continue;
    const Shape shape = {N, B.numel / (N * H * W), H, W}, st = shape_strides(shape);
    bool ok = shape[1] % CB == 0 && H * W > 1 && a.offset % st[1] == 0 &&
              (a.offset / st[1]) % CB == 0 && a.dims[1].extent % CB == 0;
    for (int d = 0; d < 4 && ok; d++) ok = a.dims[d].extent == 1 || a.dims[d].stride == st[d];
    if (!ok) continue;
    if (getenv("CAPGRAPH_DEBUG_LAYOUT"))
      fprintf(stderr, "layout: reorder %s to the blocked layout\n", B.name.c_str());
    Buffer copy = B;  // B dangles after the push
    copy.name = B.name + "_blocks";
    p.buffers.push_back(copy);
    const int c = (int)p.buffers.size() - 1;
    kernels.push_back(reorder_kernel(k, b, c, shape));
    copy_of[b] = c;
    a.buffer = c;
  }
}

// Reorders at layout boundaries (as oneDNN's): a product (convolution, matrix product) whose
// output stays in the row layout (its channels do not divide by 8, or it is a model output) but
// which reduces over the channels of a blockable input would read that input with a stride of
// one block along its output positions: neither register tile applies and it runs at scalar
// speed (a ShuffleNet 1x1 conv 24 -> 58 channels: 8 GFLOP/s). Such an input gets a row-layout
// copy made by one copy kernel right before the product, which then runs as a row-layout tile;
// the producer and the other readers keep the blocked layout. Only where the product does at
// least 8 multiply-adds per copied element: a copy moves 8 bytes per element (~0.3 ns in cache),
// about what 8 multiply-adds take in a row tile, while the strided read it replaces ran at 2-3
// GFLOP/s (PP-OCRv4 det's 1x1 convs 48 -> 12 and 48 -> 18 channels, 12 and 18 multiply-adds per
// element: 15 and 7 ms with the bar at 32, NOTES issue 17). Returns the copies (the buffers to
// keep in the row layout).
std::set<int> program_reorder_boundaries(Program &p, int64_t widest) {
  std::set<int> rows;
  std::vector<std::vector<Use>> uses = program_uses(p);
  const std::vector<int64_t> block = blocks_choose(p, uses, widest, rows);
  const std::vector<int64_t> planes = planes_of(p, uses);
  std::vector<Kernel> kernels;
  for (size_t ki = 0; ki < p.kernels.size(); ki++) {
    Kernel &k = p.kernels[ki];
    reorder_to_blocks(p, k, block, planes, kernels);
    bool product = k.reduce == Reduce::sum && k.body >= 0 && k.exprs[k.body].op == Op::mul &&
                   !block[k.store.buffer];
    for (size_t li = 0; product && li < k.loads.size(); li++) {
      Access &a = k.loads[li];
      const int b = a.buffer;
      if (!block[b] || rows.count(b)) continue;
      const int ax = channel_axis(k, a, channel_dim(a, planes[b]), block[b]);
      if (ax < k.n_parallel || k.flops < 16 * p.buffers[b].numel) continue;
      // The copy: [N, C, H, W] element for element.
      const Shape shape = canonical_shape(p, b, uses[b]);
      Buffer copy = p.buffers[b];
      copy.name = p.buffers[b].name + "_rows";
      p.buffers.push_back(copy);
      const int c = (int)p.buffers.size() - 1;
      kernels.push_back(reorder_kernel(k, b, c, shape));
      // Every load of k from that buffer reads the copy (same offsets: same row layout).
      for (Access &o : k.loads)
        if (o.buffer == b) o.buffer = c;
      rows.insert(c);
    }
    kernels.push_back(k);
  }
  p.kernels = std::move(kernels);
  if (getenv("CAPGRAPH_DEBUG_LAYOUT"))
    for (int c : rows)
      fprintf(stderr, "layout: reorder %s to the row layout\n", p.buffers[c].name.c_str());
  return rows;
}

// The [N, C, H, W] of a whole-buffer view in that order (offset 0, row-major strides), or empty.
Shape whole_nchw(const Program &p, const Access &a) {
  if (a.dims.size() != 4 || a.offset != 0) return {};
  const Shape shape = {a.dims[0].extent, a.dims[1].extent, a.dims[2].extent, a.dims[3].extent};
  const Shape st = shape_strides(shape);
  if (shape_numel(shape) != p.buffers[a.buffer].numel) return {};
  for (int d = 0; d < 4; d++)
    if (a.dims[d].extent > 1 && a.dims[d].stride != st[d]) return {};
  return shape;
}

// Model inputs and outputs keep the ONNX layout. A product reducing over many channels of a
// model input ([N, C, H, W] rows, C >= 16) reads one line per channel plane per position tile:
// with hundreds of planes neither the prefetchers nor the TLB keep up (issue 27's sweep: a 1x1
// conv 320 -> 24 on 63x63 ran at 1 GFLOP/s as a row tile, 4.8 as a channel tile on the planes).
// Such an input gets a copy, one reorder kernel right before the product, that the blocking then
// blocks, and the product's model output (when it is one) is written through an intermediate
// and a reorder after it, as ONNX Runtime's NCHWc reorders do; only where the product does at
// least 8 multiply-adds per copied element (the bar of program_reorder_boundaries) and every
// channel count divides by the narrow block. Returns how many copies were added.
int program_reorder_model_io(Program &p) {
  std::vector<Kernel> kernels;
  int added = 0;
  for (Kernel &k : p.kernels) {
    const bool product = k.reduce == Reduce::sum && k.body >= 0 && k.exprs[k.body].op == Op::mul &&
                         k.acc_dtype == DType::f32 && p.buffers[k.store.buffer].dtype == DType::f32;
    const Shape out = product ? whole_nchw(p, k.store) : Shape{};
    const Buffer::Kind out_kind = p.buffers[k.store.buffer].kind;
    if (out.empty() || out[1] % kChannelBlock != 0 || out[2] * out[3] < 2 ||
        (out_kind != Buffer::Kind::output && out_kind != Buffer::Kind::intermediate) ||
        (out_kind == Buffer::Kind::output && k.flops < 16 * p.buffers[k.store.buffer].numel)) {
      kernels.push_back(std::move(k));
      continue;
    }
    int copied = -1;
    for (Access &a : k.loads) {
      const Buffer &B = p.buffers[a.buffer];
      const Shape in = whole_nchw(p, a);
      if (B.kind != Buffer::Kind::input || B.dtype != DType::f32 || in.empty() ||
          in[1] < 2 * kChannelBlock || in[1] % kChannelBlock != 0 || in[2] * in[3] < 2 ||
          k.flops < 16 * B.numel || channel_axis(k, a, 1, kChannelBlock) < k.n_parallel)
        continue;
      Buffer copy = B;  // B dangles after the push
      copy.kind = Buffer::Kind::intermediate;
      copy.name = B.name + "_blocks";
      p.buffers.push_back(copy);
      copied = (int)p.buffers.size() - 1;
      kernels.push_back(reorder_kernel(k, a.buffer, copied, in));
      a.buffer = copied;
      added++;
      break;
    }
    const int o = k.store.buffer;
    if (copied >= 0 && out_kind == Buffer::Kind::output) {
      Buffer rows = p.buffers[o];
      rows.kind = Buffer::Kind::intermediate;
      rows.name = p.buffers[o].name + "_blocks";
      p.buffers.push_back(rows);
      k.store.buffer = (int)p.buffers.size() - 1;
      Kernel after = reorder_kernel(k, k.store.buffer, o, out);
      kernels.push_back(std::move(k));
      kernels.push_back(std::move(after));
      added++;
      continue;
    }
    kernels.push_back(std::move(k));
  }
  p.kernels = std::move(kernels);
  return added;
}

// A reorder (blocked -> rows) after the blocking: [.., P, CB] reads contiguously and writes CB
// streams P elements apart. Where P * 4 bytes is a multiple of 4 KiB (PP-OCRv4 det: 160 x 160
// positions) those CB lines share one L1 set and 4K-aliasing stalls every store: its 48-channel
// reorder took ~25 ms (0.4 GB/s) on a busy machine. Walking T positions at a time, [.., P/T, CB,
// T], reads CB lines of T * CB elements (in L1) and writes whole lines of T. Returns whether it
// did.
bool reorder_tile(Kernel &k) {
  const int n = k.n_parallel;
  if (k.name != "reorder" || k.reduce != Reduce::none || n < 2 || n != (int)k.axes.size())
    return false;
  for (const Expr &x : k.exprs)
    if (x.op == Op::iota) return false;
  const int P = n - 2, C = n - 1;
  int64_t T = 0;
  for (int64_t t : {16, 8})
    if (!T && k.axes[P] % t == 0 && k.axes[P] > t) T = t;
  if (!T || k.axes[C] < 2) return false;
  auto rewrite = [&](Access &a) {
    for (DimIndex &d : a.dims) {
      std::vector<AxisTerm> terms;
      for (const AxisTerm &t : d.terms) {
        if (t.axis == P)
          terms.push_back({P, t.coef * T}), terms.push_back({n, t.coef});
        else
          terms.push_back(t);  // the block axis keeps its index C, now second to last
      }
      d.terms = terms;
    }
  };
  rewrite(k.store);
  for (Access &a : k.loads) rewrite(a);
  k.axes[P] /= T;
  k.axes.push_back(T);
  k.n_parallel = n + 1;
  return true;
}

}  // namespace

int program_block_channels(Program &p, int64_t widest) {
  if (!knob_get("CAPGRAPH_NO_REORDER")) program_reorder_model_io(p);
  const std::set<int> rows =
      knob_get("CAPGRAPH_NO_REORDER") ? std::set<int>{} : program_reorder_boundaries(p, widest);
  std::vector<std::vector<Use>> uses = program_uses(p);
  std::vector<int64_t> block = blocks_choose(p, uses, widest, rows);
  const std::vector<int64_t> planes = planes_of(p, uses);
  if (getenv("CAPGRAPH_DEBUG_LAYOUT"))
    for (size_t b = 0; b < p.buffers.size(); b++)
      if (p.buffers[b].kind == Buffer::Kind::intermediate && !uses[b].empty())
        for (const Use &u : uses[b]) {
          std::string dims;
          for (const DimIndex &d : u.access->dims)
            dims += " " + std::to_string(d.extent) + "/" + std::to_string(d.stride);
          fprintf(stderr, "layout: %s %s (%lld elements, block %lld) in %s:%s: %s\n",
                  block[b] ? "blocked" : "not blocked", p.buffers[b].name.c_str(),
                  (long long)p.buffers[b].numel, (long long)block[b],
                  p.kernels[u.kernel].name.c_str(), dims.c_str(),
                  block[b]             ? ""
                  : rows.count((int)b) ? "a reorder's row-layout copy"
                                       : why_not_blockable(p, (int)b, uses[b], kChannelBlock));
        }

  // A kernel can move only one parallel axis innermost: where blocked buffers would need two,
  // unblock those and look again. An axis indexing buffers of different blocks is split once:
  // the wide ones fall back to the narrow block (every wide block is a multiple of it).
  std::vector<std::map<int, int64_t>> split(p.kernels.size());
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t ki = 0; ki < p.kernels.size() && !changed; ki++) {
      Kernel &k = p.kernels[ki];
      std::map<int, std::vector<int>> par;    // parallel channel axis -> buffers
      std::map<int, std::vector<int>> on;     // channel axis -> buffers
      std::map<int, std::vector<int>> steps;  // axis adding whole blocks -> buffers
      split[ki].clear();
      auto note = [&](const Access &a) {
        if (!block[a.buffer]) return;
        const int cd = channel_dim(a, planes[a.buffer]);
        int ax = channel_axis(k, a, cd, block[a.buffer]);
        on[ax].push_back(a.buffer);
        if (ax < k.n_parallel) par[ax].push_back(a.buffer);
        for (int s : block_step_axes(k, a, cd, ax)) steps[s].push_back(a.buffer);
      };
      note(k.store);
      for (const Access &a : k.loads) note(a);
      // An axis that steps whole blocks of one buffer must not be split for another.
      for (auto &[ax, bufs] : steps)
        if (on.count(ax)) {
          for (int b : bufs) block[b] = 0;
          changed = true;
        }
      if (changed) continue;
      if (par.size() > 1) {
        for (auto &[ax, bufs] : par)
          for (int b : bufs) block[b] = 0;
        changed = true;
        continue;
      }
      for (auto &[ax, bufs] : on) {
        int64_t lo = block[bufs[0]], hi = lo;
        for (int b : bufs) lo = std::min(lo, block[b]), hi = std::max(hi, block[b]);
        if (lo != hi) {
          for (int b : bufs)
            if (block[b] != lo) block[b] = why_not_blockable(p, b, uses[b], lo) ? 0 : lo;
          changed = true;
        }
        split[ki][ax] = lo;
      }
    }
  }
  int n = 0;
  for (int64_t c : block) n += c != 0;
  if (!n) return 0;
  for (size_t ki = 0; ki < p.kernels.size(); ki++) {
    if (split[ki].empty()) continue;
    Kernel &k = p.kernels[ki];
    bool par = split[ki].begin()->first < k.n_parallel;
    kernel_split(k, split[ki], block, planes);
    // Positions walked contiguously by every access (a 1x1 convolution's (h, w)) become one axis.
    for (bool merged = par; merged;) {
      merged = false;
      for (int a = k.n_parallel - 3; a >= 0 && !merged; a--)
        if (k.axes[a] > 1 && k.axes[a + 1] > 1 && axes_mergeable(k, a)) {
          axes_merge(k, a);
          merged = true;
        }
    }
    if (!knob_get("CAPGRAPH_NO_REORDER_TILE")) reorder_tile(k);
  }
  return n;
}

int program_block_products(Program &p, int64_t widest) {
  int n = 0;
  std::vector<int64_t> none(p.buffers.size(), 0);
  for (Kernel &k : p.kernels) {
    int v = k.n_parallel - 1;
    if (v < 0) continue;
    // A row of at most `widest` is one block already (a channel-blocked kernel's inner axis).
    const int64_t CB = k.axes[v] % widest == 0 ? widest : kChannelBlock;
    if (k.reduce != Reduce::sum || k.body < 0 || k.axes[v] <= widest || k.axes[v] % CB != 0)
      continue;
    const Expr &body = k.exprs[k.body];
    if (body.op != Op::mul || k.exprs[body.a].op != Op::load || k.exprs[body.b].op != Op::load)
      continue;
    // The store walks the row contiguously; one operand is a weight strided along it, the other
    // does not move with it.
    std::map<int, int64_t> coef;
    int64_t base;
    if (!access_linear(k.store, k.axes, coef, base) || coef[v] != 1) continue;
    auto weight = [&](const Access &a) {
      return p.buffers[a.buffer].kind == Buffer::Kind::constant &&
             p.buffers[a.buffer].dtype == DType::f32 && access_linear(a, k.axes, coef, base) &&
             coef[v] > 1;
    };
    const Access &la = k.loads[k.exprs[body.a].access], &lb = k.loads[k.exprs[body.b].access];
    if (!((weight(la) && !access_uses(lb, v)) || (weight(lb) && !access_uses(la, v)))) continue;
    bool iota = false;
    for (const Expr &e : k.exprs) iota |= e.op == Op::iota && e.access == v;
    if (iota) continue;
    kernel_split(k, {{v, CB}}, none, none);
    n++;
  }
  return n;
}

namespace {

// Re-lays out constant `a` (read by no other access) in the order of `axes`, the last one
// innermost, when its linear form reads distinct elements inside the blob; the access then walks
// the new blob in that order. False (nothing changed) when it does not qualify.
bool pack_access(Program &p, const Kernel &k, Access &a, const std::vector<int> &axes) {
  Buffer &B = p.buffers[a.buffer];
  // The access as offset = base + sum(coef[axis] * i[axis]).
  std::map<int, int64_t> coef;
  int64_t base;
  if (!access_linear(a, k.axes, coef, base)) return false;
  // Distinct points must read distinct elements, all inside the blob (no duplication).
  std::vector<std::pair<int64_t, int>> by_coef;
  for (auto &[ax, c] : coef) by_coef.push_back({c, ax});
  std::sort(by_coef.begin(), by_coef.end());
  int64_t reach = 0, count = 1;
  for (auto &[c, ax] : by_coef) {
    if (c <= reach) return false;
    reach += c * (k.axes[ax] - 1);
    count *= k.axes[ax];
  }
  if (base < 0 || base + reach >= B.numel || count > B.numel) return false;
  std::vector<int> order;
  for (int ax : axes)
    if (coef.count(ax)) order.push_back(ax);
  if (order.size() != coef.size()) return false;
  std::vector<float> src = B.data.to_f32(), dst((size_t)count);
  std::vector<int64_t> idx(order.size(), 0);
  for (int64_t j = 0; j < count; j++) {
    int64_t o = base;
    for (size_t i = 0; i < order.size(); i++) o += coef[order[i]] * idx[i];
    dst[(size_t)j] = src[(size_t)o];
    for (int i = (int)order.size() - 1; i >= 0; i--) {
      if (++idx[i] < k.axes[order[i]]) break;
      idx[i] = 0;
    }
  }
  B.data = Tensor::from_f32({count}, dst);
  B.numel = count;
  a.offset = 0;
  a.dims.clear();
  int64_t stride = 1;
  for (int i = (int)order.size() - 1; i >= 0; i--) {
    DimIndex d;
    d.terms = {{order[i], 1}};
    d.extent = k.axes[order[i]];
    d.stride = stride;
    stride *= d.extent;
    a.dims.insert(a.dims.begin(), d);
  }
  return true;
}

std::vector<int> read_counts(const Program &p) {
  std::vector<int> reads(p.buffers.size(), 0);
  for (const Kernel &k : p.kernels)
    for (const Access &a : k.loads) reads[a.buffer]++;
  return reads;
}

bool packable(const Program &p, const std::vector<int> &reads, const Access &a) {
  const Buffer &B = p.buffers[a.buffer];
  return B.kind == Buffer::Kind::constant && B.dtype == DType::f32 && reads[a.buffer] == 1;
}

}  // namespace

int program_pack_weights(Program &p, int64_t widest) {
  const std::vector<int> reads = read_counts(p);
  int packed = 0;
  for (Kernel &k : p.kernels) {
    int np = k.n_parallel;
    if (np < 2 || (k.axes[np - 1] != kChannelBlock && k.axes[np - 1] != widest) ||
        k.reduce == Reduce::none)
      continue;
    const int v = np - 1;
    // New order: kernel order, the channel block last.
    std::vector<int> order;
    for (int ax = 0; ax < (int)k.axes.size(); ax++)
      if (ax != v) order.push_back(ax);
    order.push_back(v);
    for (Access &a : k.loads)
      if (packable(p, reads, a) && access_uses(a, v)) packed += pack_access(p, k, a, order);
  }
  return packed;
}

int program_pack_row_weights(Program &p, int64_t widest) {
  const std::vector<int> reads = read_counts(p);
  int packed = 0;
  for (Kernel &k : p.kernels) {
    const int np = k.n_parallel, v = np - 1, r = np;
    if (np < 1 || (int)k.axes.size() != np + 1 || k.reduce != Reduce::sum || k.body < 0 ||
        k.axes[v] == kChannelBlock || k.axes[v] == widest)
      continue;
    const Expr &body = k.exprs[k.body];
    if (body.op != Op::mul || k.exprs[body.a].op != Op::load || k.exprs[body.b].op != Op::load)
      continue;
    Access &la = k.loads[k.exprs[body.a].access], &lb = k.loads[k.exprs[body.b].access];
    std::map<int, int64_t> coef;
    int64_t base;
    // The weight walks the row contiguously and the reduction by whole rows; the other operand
    // does not move with the row and walks the reduction contiguously.
    auto row_major = [&](const Access &w, const Access &x) {
      if (!packable(p, reads, w) || access_uses(x, v)) return false;
      if (!access_linear(w, k.axes, coef, base) || coef[v] != 1 || coef[r] <= 1) return false;
      return access_linear(x, k.axes, coef, base) && coef[r] == 1;
    };
    Access *w = row_major(la, lb) ? &la : row_major(lb, la) ? &lb : nullptr;
    if (!w) continue;
    std::vector<int> order;  // kernel order: the parallel axes, the reduction innermost
    for (int ax = 0; ax < (int)k.axes.size(); ax++) order.push_back(ax);
    packed += pack_access(p, k, *w, order);
  }
  return packed;
}

}  // namespace capgraph
