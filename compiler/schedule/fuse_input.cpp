// Folding a camera frame's cast + scale into the products that read it (fuse.h,
// program_fuse_input_casts): the float copy of a uint8 frame is as large as the frame times four
// and is read once, by the first convolution, so computing it there saves its write and read.
#include <map>

#include "schedule/fuse.h"

namespace capgraph {

bool expr_input_affine(const Kernel &k, const Program &p, int i, int *x, int *x_expr) {
  const Expr &e = k.exprs[i];
  switch (e.op) {
    case Op::constant: return true;
    case Op::load: {
      const Access &a = k.loads[e.access];
      const Buffer &B = p.buffers[a.buffer];
      if (B.kind != Buffer::Kind::constant || e.dtype != DType::f32 || B.dtype != DType::f32)
        return false;
      for (const DimIndex &d : a.dims)
        if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return false;
      return true;
    }
    case Op::cast: {
      const Expr &l = k.exprs[e.a];
      if (e.dtype != DType::f32 || l.op != Op::load || *x >= 0) return false;
      const Buffer &B = p.buffers[k.loads[l.access].buffer];
      if (B.kind != Buffer::Kind::input || (B.dtype != DType::u8 && B.dtype != DType::i8))
        return false;
      *x = l.access, *x_expr = e.a;
      return true;
    }
    case Op::neg: return e.dtype == DType::f32 && expr_input_affine(k, p, e.a, x, x_expr);
    case Op::add:
    case Op::sub:
    case Op::mul:
    case Op::div:
      return e.dtype == DType::f32 && expr_input_affine(k, p, e.a, x, x_expr) &&
             expr_input_affine(k, p, e.b, x, x_expr);
    default: return false;
  }
}

namespace {

// The store of k writes element (i_0, ..., i_n) of its buffer at sum(i_a * stride_a): one plain dim
// per iteration axis, in order.
bool store_identity(const Kernel &k) {
  if (k.store.dims.size() != k.axes.size()) return false;
  for (size_t a = 0; a < k.axes.size(); a++) {
    const DimIndex &d = k.store.dims[a];
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none || d.shift != 0 ||
        d.extent != k.axes[a])
      return false;
    if (!(d.terms.size() == 1 && d.terms[0].axis == (int)a && d.terms[0].coef == 1) &&
        !(d.terms.empty() && d.extent == 1))
      return false;
  }
  return true;
}

// The load of `buffer` that is one operand of c's multiply-add body, or -1: a float32 load, or
// (half: float16 storage) a float16 one widened to float32.
int product_operand(const Kernel &c, int buffer, bool half = false) {
  if (c.reduce != Reduce::sum || c.body < 0 || c.exprs[c.body].op != Op::mul) return -1;
  const Expr &body = c.exprs[c.body];
  int found = -1, uses = 0;
  for (const Access &a : c.loads) uses += a.buffer == buffer;
  for (int side : {body.a, body.b}) {
    const Expr *e = &c.exprs[side];
    if (half && e->op == Op::cast && e->dtype == DType::f32 && c.exprs[e->a].op == Op::load &&
        c.exprs[e->a].dtype == DType::f16)
      e = &c.exprs[e->a];
    if (e->op == Op::load && c.loads[e->access].buffer == buffer &&
        (e->dtype == DType::f32 || (half && e->dtype == DType::f16)))
      found = e->access;
  }
  return uses == 1 ? found : -1;
}

// The type consumer c's load expressions of access bl have (its buffer's).
DType loaded_dtype(const Kernel &c, int bl) {
  for (const Expr &x : c.exprs)
    if (x.op == Op::load && x.access == bl) return x.dtype;
  return DType::f32;
}

// Consumer c with its load `bl` of e's output replaced by e's expression, evaluated where c reads:
// e's input read through c's access (so c's skip bounds still skip the padding: a padded point
// adds nothing, as the zero of the float graph would) and its constants indexed through c's dims.
// False if a constant would be indexed through a bounded dim.
bool splice_into(const Kernel &e, int xl, const Kernel &c, int bl, Kernel &out) {
  const Access &A = c.loads[bl];
  if (A.dims.size() != e.store.dims.size() || A.offset != e.store.offset) return false;
  for (size_t d = 0; d < A.dims.size(); d++) {
    const DimIndex &ad = A.dims[d];
    if (ad.extent != e.store.dims[d].extent || ad.stride != e.store.dims[d].stride ||
        ad.expr >= 0 || ad.divisor != 1)
      return false;
  }
  out = c;
  out.loads[bl].buffer = e.loads[xl].buffer;
  out.loads[bl].offset = e.loads[xl].offset;
  std::vector<int> load_map(e.loads.size(), -1);
  load_map[xl] = bl;
  for (size_t l = 0; l < e.loads.size(); l++) {
    if ((int)l == xl) continue;
    Access k = e.loads[l];
    for (DimIndex &d : k.dims) {
      std::vector<AxisTerm> terms;
      for (const AxisTerm &t : d.terms) {
        if (t.coef == 0 || e.axes[t.axis] == 1) continue;
        const DimIndex &ad = A.dims[t.axis];
        if (ad.bound != Bound::none) return false;
        for (const AxisTerm &u : ad.terms) terms.push_back({u.axis, u.coef * t.coef});
        d.shift += t.coef * ad.shift;
      }
      d.terms = terms;
    }
    load_map[l] = (int)out.loads.size();
    out.loads.push_back(k);
  }
  // e's expressions first, then c's, its load of the buffer replaced by e's result.
  out.exprs.clear();
  std::vector<int> emap = out.expr_append(e, load_map);
  std::vector<int> same_loads(c.loads.size()), with(c.exprs.size(), -1);
  for (size_t l = 0; l < c.loads.size(); l++) same_loads[l] = (int)l;
  // A float16 buffer still rounds: e's float32 result is cast to float16 where c loaded it.
  int produced = emap[e.result];
  if (loaded_dtype(c, bl) == DType::f16 && out.exprs[produced].dtype != DType::f16)
    produced = out.expr_cast(produced, DType::f16);
  for (size_t i = 0; i < c.exprs.size(); i++)
    if (c.exprs[i].op == Op::load && c.exprs[i].access == bl) with[i] = produced;
  std::vector<int> cmap = out.expr_append(c, same_loads, with);
  if (out.exprs.size() > kKernelMaxExprs) return false;
  out.body = cmap[c.body];
  out.result = c.result >= 0 ? cmap[c.result] : -1;
  for (Access &a : out.loads)
    for (DimIndex &d : a.dims)
      if (d.expr >= 0) d.expr = cmap[d.expr];
  out.name = e.name + ">" + c.name;
  out.source_nodes.insert(out.source_nodes.begin(), e.source_nodes.begin(), e.source_nodes.end());
  return true;
}

}  // namespace

namespace {

// A load fusion may move into a product: plainly indexed (no bounds, gathers or divisors).
bool load_plain(const Access &a) {
  for (const DimIndex &d : a.dims)
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return false;
  return true;
}

// Folds each elementwise kernel `producer` picks (returning its load whose element is the one
// it writes, or -1) into every product reading its output, when `accept` takes each rewritten
// product (one refusal keeps the kernel). `half`: float16 operands count as the products'
// operands too.
int fuse_into_products(Program &p, const std::function<int(const Kernel &)> &producer,
                       const std::function<bool(const Kernel &)> &accept, bool half) {
  std::vector<int> writers(p.buffers.size(), 0);
  for (const Kernel &k : p.kernels) writers[k.store.buffer]++;
  std::vector<char> gone(p.kernels.size(), 0);
  int fused = 0;
  for (size_t ei = 0; ei < p.kernels.size(); ei++) {
    const Kernel &e = p.kernels[ei];
    const DType st = e.store_dtype;
    if (e.reduce != Reduce::none || e.body >= 0 || e.result < 0 ||
        !(st == DType::f32 || (half && st == DType::f16)))
      continue;
    const int buf = e.store.buffer;
    const Buffer &B = p.buffers[buf];
    if (B.kind != Buffer::Kind::intermediate || B.dtype != st || writers[buf] != 1 ||
        !store_identity(e))
      continue;
    const int xl = producer(e);
    if (xl < 0) continue;
    // The element each point reads is the one it writes (same offsets, same shape), so a
    // consumer's access of the buffer reads x's element at the same place.
    std::map<int, int64_t> cx, cs;
    int64_t bx = 0, bs = 0;
    if (!access_linear(e.loads[xl], e.axes, cx, bx) || !access_linear(e.store, e.axes, cs, bs) ||
        cx != cs || bx != bs || p.buffers[e.loads[xl].buffer].numel != B.numel)
      continue;
    // Every reader a product taking the buffer as one operand, each accepted once fused; what e
    // reads is written by no kernel after it (its values are still there when they read them).
    std::vector<std::pair<size_t, Kernel>> rewritten;
    bool ok = true;
    for (size_t ci = ei + 1; ci < p.kernels.size() && ok; ci++) {
      const Kernel &c = p.kernels[ci];
      for (const Access &a : e.loads) ok &= c.store.buffer != a.buffer;
      bool reads = false;
      for (const Access &a : c.loads) reads |= a.buffer == buf;
      if (!reads || !ok) continue;
      int bl = product_operand(c, buf, half);
      Kernel f;
      ok = bl >= 0 && splice_into(e, xl, c, bl, f) && accept(f);
      if (ok) rewritten.emplace_back(ci, std::move(f));
    }
    bool output = false;
    for (const auto &port : p.outputs) output |= port.buffer == buf;
    if (!ok || rewritten.empty() || output) continue;
    for (auto &[ci, f] : rewritten) p.kernels[ci] = std::move(f);
    gone[ei] = 1;
    fused++;
  }
  size_t kept = 0;
  for (size_t j = 0; j < p.kernels.size(); j++)
    if (!gone[j]) {
      if (kept != j) p.kernels[kept] = std::move(p.kernels[j]);
      kept++;
    }
  p.kernels.resize(kept);
  return fused;
}

}  // namespace

int program_fuse_input_casts(Program &p, const std::function<bool(const Kernel &)> &accept) {
  auto producer = [&](const Kernel &e) {
    int xl = -1, xe = -1;
    if (e.store_dtype != DType::f32 || !expr_input_affine(e, p, e.result, &xl, &xe)) return -1;
    return xl;
  };
  return fuse_into_products(p, producer, accept, false);
}

int program_fuse_operand_producers(Program &p, const std::function<bool(const Kernel &)> &accept) {
  auto producer = [&](const Kernel &e) {
    if (!expr_elementwise(e, e.result, load_plain)) return -1;
    // x: the load that walks the whole output, the same element per point.
    std::map<int, int64_t> cs;
    int64_t bs = 0;
    if (!access_linear(e.store, e.axes, cs, bs)) return -1;
    for (size_t l = 0; l < e.loads.size(); l++) {
      std::map<int, int64_t> cx;
      int64_t bx = 0;
      if (access_linear(e.loads[l], e.axes, cx, bx) && cx == cs && bx == bs &&
          p.buffers[e.loads[l].buffer].numel == p.buffers[e.store.buffer].numel)
        return (int)l;
    }
    return -1;
  };
  return fuse_into_products(p, producer, accept, true);
}

}  // namespace capgraph
