#include "schedule/fuse.h"

#include <map>

namespace capgraph {

// An access's element offset as a linear function of the iteration axes; false if it is not one
// (bounds, gathers, divisions).
bool access_linear(const Access &a, const Shape &axes, std::map<int, int64_t> &coef,
                   int64_t &base) {
  coef.clear();
  base = a.offset;
  for (const DimIndex &d : a.dims) {
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return false;
    base += d.shift * d.stride;
    for (const AxisTerm &t : d.terms)
      if (axes[t.axis] > 1) coef[t.axis] += t.coef * d.stride;
  }
  for (auto it = coef.begin(); it != coef.end();)
    it = it->second == 0 ? coef.erase(it) : std::next(it);
  return true;
}

namespace {

bool same_linear(const Access &a, const Shape &aaxes, const Access &b, const Shape &baxes) {
  std::map<int, int64_t> ca, cb;
  int64_t ba, bb;
  return access_linear(a, aaxes, ca, ba) && access_linear(b, baxes, cb, bb) && ca == cb && ba == bb;
}

// Pairs the axes of two parallel spaces that are equal once size-1 axes are dropped (a
// convolution's (n, group, channel, h, w) against an activation's (n, c, h, w)): axis_map[i] is
// the producer axis matching consumer axis i, or -1 for a size-1 consumer axis.
bool axes_pair(const Shape &producer, const Shape &consumer, std::vector<int> &axis_map) {
  std::vector<int> p_axes, c_axes;
  for (size_t i = 0; i < producer.size(); i++)
    if (producer[i] != 1) p_axes.push_back((int)i);
  for (size_t i = 0; i < consumer.size(); i++)
    if (consumer[i] != 1) c_axes.push_back((int)i);
  if (p_axes.size() != c_axes.size()) return false;
  axis_map.assign(consumer.size(), -1);
  for (size_t i = 0; i < c_axes.size(); i++) {
    if (producer[p_axes[i]] != consumer[c_axes[i]]) return false;
    axis_map[c_axes[i]] = p_axes[i];
  }
  return true;
}

// Rewrites an access of the consumer's space into the producer's (terms on size-1 axes vanish).
Access access_remap(Access a, const std::vector<int> &axis_map) {
  for (DimIndex &d : a.dims) {
    std::vector<AxisTerm> terms;
    for (const AxisTerm &t : d.terms)
      if (axis_map[t.axis] >= 0) terms.push_back({axis_map[t.axis], t.coef});
    d.terms = terms;
  }
  return a;
}

// Appends consumer c's expressions to producer p, with c's loads of `buffer` replaced by p's
// result. Returns the index of c's result inside p.
// A bfloat16 or float16 buffer that fusion removes still rounds: the producer's float32 result is
// cast to the buffer's type (the code generators round there) before the consumer reads it.
int expr_splice(Kernel &p, const Kernel &c, int buffer, DType buffer_dtype,
                const std::vector<int> &axis_map) {
  std::vector<int> load_map(c.loads.size(), -1);
  for (size_t i = 0; i < c.loads.size(); i++) {
    if (c.loads[i].buffer == buffer) continue;
    load_map[i] = (int)p.loads.size();
    p.loads.push_back(access_remap(c.loads[i], axis_map));
  }
  int produced = p.result;
  if (buffer_dtype == DType::bf16 || buffer_dtype == DType::f16)
    produced = p.expr_cast(p.result, buffer_dtype);
  std::vector<int> with(c.exprs.size(), -1);
  for (size_t i = 0; i < c.exprs.size(); i++) {
    const Expr &e = c.exprs[i];
    if (e.op == Op::load && c.loads[e.access].buffer == buffer)
      with[i] = produced == p.result ? produced : p.expr_cast(produced, e.dtype);
  }
  const size_t first = p.exprs.size();
  std::vector<int> map = p.expr_append(c, load_map, with);
  for (size_t i = first; i < p.exprs.size(); i++) {
    Expr &e = p.exprs[i];
    if (e.op != Op::iota) continue;
    if (axis_map[e.access] < 0) {  // a size-1 axis: its index is always 0
      e.op = Op::constant;
      e.value = 0;
    } else {
      e.access = axis_map[e.access];
    }
  }
  for (size_t i = 0; i < c.loads.size(); i++)
    if (load_map[i] >= 0)
      for (DimIndex &d : p.loads[load_map[i]].dims)
        if (d.expr >= 0) d.expr = map[d.expr];
  return map[c.result];
}

}  // namespace

int program_fuse(Program &p) {
  // One forward pass. Fusing w into c never makes an earlier kernel fusable (w's loads move into
  // c's slot, every other buffer keeps its writers and readers), so this merges exactly what
  // restarting from the first kernel after every merge would, in linear time: writers and
  // readers are counted once and kept up to date, and a merged-away producer is moved, not
  // copied (a 100k-node chain used to take minutes here).
  const size_t K = p.kernels.size();
  std::vector<int> writers(p.buffers.size(), 0), writer_at(p.buffers.size(), -1),
      reads(p.buffers.size(), 0);
  for (size_t j = 0; j < K; j++) {
    writers[p.kernels[j].store.buffer]++;
    writer_at[p.kernels[j].store.buffer] = (int)j;
    for (const Access &a : p.kernels[j].loads) reads[a.buffer]++;
  }
  std::vector<char> gone(K, 0);
  int merged = 0;
  for (size_t ci = 0; ci < K; ci++) {
    bool changed = true;
    while (changed && p.kernels[ci].reduce == Reduce::none) {
      changed = false;
      Kernel &c = p.kernels[ci];
      for (const Access &la : c.loads) {
        int buf = la.buffer;
        if (p.buffers[buf].kind != Buffer::Kind::intermediate) continue;
        // exactly one writer, before c; no reader other than c
        int own = 0;
        for (const Access &a : c.loads) own += a.buffer == buf;
        if (writers[buf] != 1 || reads[buf] != own || writer_at[buf] >= (int)ci) continue;
        const int writer = writer_at[buf];
        Kernel &w = p.kernels[writer];
        if (w.store_dtype != p.buffers[buf].dtype) continue;
        // A fused kernel stays small enough for the code generators' recursion (kernel.h).
        const DType bt = p.buffers[buf].dtype;
        const size_t rounding =
            bt == DType::bf16 || bt == DType::f16 ? 1 + own : 0;  // expr_splice's casts
        if (w.exprs.size() + c.exprs.size() + rounding > kKernelMaxExprs) continue;
        Shape wpar(w.axes.begin(), w.axes.begin() + w.n_parallel);
        std::vector<int> axis_map;
        if (!axes_pair(wpar, c.axes, axis_map)) continue;
        // every read of buf in c must see exactly what w wrote at the same point
        bool ok = true;
        for (const Access &a : c.loads)
          if (a.buffer == buf && !same_linear(access_remap(a, axis_map), w.axes, w.store, w.axes))
            ok = false;
        // and w must write each element once (its store covers the buffer)
        if (shape_numel(wpar) != p.buffers[buf].numel) ok = false;
        if (!ok) continue;
        Kernel fused = std::move(w);
        gone[writer] = 1;
        writers[buf]--;
        reads[buf] -= own;
        fused.result = expr_splice(fused, c, buf, p.buffers[buf].dtype, axis_map);
        fused.store = access_remap(c.store, axis_map);
        fused.store_dtype = c.store_dtype;
        fused.name += "+" + c.name;
        fused.flops += c.flops;
        for (const std::string &s : c.source_nodes) fused.source_nodes.push_back(s);
        // The fused kernel runs where the consumer ran: everything the consumer reads exists then.
        p.kernels[ci] = std::move(fused);
        merged++;
        changed = true;
        break;
      }
    }
  }
  size_t kept = 0;
  for (size_t j = 0; j < K; j++)
    if (!gone[j]) {
      if (kept != j) p.kernels[kept] = std::move(p.kernels[j]);
      kept++;
    }
  p.kernels.resize(kept);
  return merged;
}

namespace {

// Memory coefficient of `axis` in an access, or false if a dimension it indexes is not plainly
// affine (bounds, gathers, divisions make the axis unmergeable).
bool axis_coef(const Access &a, int axis, int64_t &coef) {
  coef = 0;
  for (const DimIndex &d : a.dims)
    for (const AxisTerm &t : d.terms)
      if (t.axis == axis) {
        if (d.bound != Bound::none || d.expr >= 0 || d.divisor != 1) return false;
        coef += t.coef * d.stride;
      }
  return true;
}

}  // namespace

// Axis `a` and `a + 1` walk every access as one range: coef(a) == coef(a+1) * extent(a+1).
bool axes_mergeable(const Kernel &k, int a) {
  for (const Expr &e : k.exprs)
    if (e.op == Op::iota && (e.access == a || e.access == a + 1)) return false;
  auto ok = [&](const Access &acc) {
    int64_t ca, cb;
    return axis_coef(acc, a, ca) && axis_coef(acc, a + 1, cb) && ca == cb * k.axes[a + 1];
  };
  if (!ok(k.store)) return false;
  for (const Access &acc : k.loads)
    if (!ok(acc)) return false;
  return true;
}

// Replaces axes a and a+1 with one axis a of their product; later axes shift down by one.
void axes_merge(Kernel &k, int a) {
  int64_t inner = k.axes[a + 1];
  auto rewrite = [&](Access &acc) {
    int64_t cb;
    axis_coef(acc, a + 1, cb);
    for (DimIndex &d : acc.dims) {
      std::vector<AxisTerm> terms;
      for (const AxisTerm &t : d.terms) {
        if (t.axis == a || t.axis == a + 1) continue;
        terms.push_back({t.axis > a + 1 ? t.axis - 1 : t.axis, t.coef});
      }
      d.terms = terms;
    }
    if (cb != 0) {  // the merged axis as its own unit-stride view dimension
      DimIndex m;
      m.terms = {{a, 1}};
      m.extent = k.axes[a] * inner;
      m.stride = cb;
      acc.dims.push_back(m);
    }
  };
  rewrite(k.store);
  for (Access &acc : k.loads) rewrite(acc);
  for (Expr &e : k.exprs)
    if (e.op == Op::iota && e.access > a + 1) e.access--;
  k.axes[a] *= inner;
  k.axes.erase(k.axes.begin() + a + 1);
  k.n_parallel--;
}

int program_merge_axes(Program &p) {
  int merged = 0;
  for (Kernel &k : p.kernels) {
    // Only the innermost parallel axis and the one before it: that is what makes rows longer.
    // Rows of 256 are long enough to vectorise; merging further would only take work items
    // away from the thread partition.
    while (k.n_parallel >= 2 && k.axes[k.n_parallel - 1] < 256 &&
           axes_mergeable(k, k.n_parallel - 2)) {
      axes_merge(k, k.n_parallel - 2);
      merged++;
    }
  }
  return merged;
}

void program_prune_buffers(Program &p) {
  std::vector<char> used(p.buffers.size(), 0);
  for (const Kernel &k : p.kernels) {
    used[k.store.buffer] = 1;
    for (const Access &a : k.loads) used[a.buffer] = 1;
  }
  for (const auto &port : p.inputs) used[port.buffer] = 1;
  for (const auto &port : p.outputs) used[port.buffer] = 1;
  std::vector<int> remap(p.buffers.size(), -1);
  std::vector<Buffer> kept;
  for (size_t i = 0; i < p.buffers.size(); i++)
    if (used[i]) {
      remap[i] = (int)kept.size();
      kept.push_back(std::move(p.buffers[i]));
    }
  p.buffers = std::move(kept);
  for (Kernel &k : p.kernels) {
    k.store.buffer = remap[k.store.buffer];
    for (Access &a : k.loads) a.buffer = remap[a.buffer];
  }
  for (auto &port : p.inputs) port.buffer = remap[port.buffer];
  for (auto &port : p.outputs) port.buffer = remap[port.buffer];
}

}  // namespace capgraph
