#include "schedule/lower.h"

#include <algorithm>

#include "error.h"

namespace capgraph {

bool Loc::contiguous() const { return strides == shape_strides(shape) || shape_numel(shape) <= 1; }

Loc Lowering::loc(const Value *v) {
  auto it = locs.find(v);
  if (it != locs.end()) return it->second;
  if (v->constant) {
    Loc l = constant_new(*v->constant, v->name);
    locs[v] = l;
    return l;
  }
  throw Error("internal: value '" + v->name + "' used before it was lowered");
}

void Lowering::bind(Value *v, const Loc &l) { locs[v] = l; }

Loc Lowering::buffer_new(DType t, const Shape &s, Buffer::Kind kind, const std::string &name) {
  // Element counts are int64 from here on (arena plan, capture sizes): a shape whose count would
  // overflow (bound by --input-shape, or computed by Expand/Tile/...) is an error, not a wrap.
  if (s.size() > kMaxRank)
    fail("value '" + name + "' has " + std::to_string(s.size()) + " dimensions, more than " +
         std::to_string(kMaxRank));
  int64_t numel = 1;
  bool zero = false;
  for (int64_t d : s) zero = zero || d == 0;
  for (int64_t d : s)
    if (!zero && (__builtin_mul_overflow(numel, d, &numel) || numel > ((int64_t)1 << 48)))
      fail("value '" + name + "' of shape " + shape_str(s) +
           " has too many elements (more than 2^48)");
  Buffer b;
  b.kind = kind;
  b.dtype = t;
  b.numel = shape_numel(s);
  b.name = name;
  prog.buffers.push_back(std::move(b));
  Loc l;
  l.buffer = (int)prog.buffers.size() - 1;
  l.shape = s;
  l.strides = shape_strides(s);
  l.dtype = t;
  return l;
}

Loc Lowering::constant_new(const Tensor &t, const std::string &name) {
  Loc l = buffer_new(t.dtype, t.shape, Buffer::Kind::constant, name);
  prog.buffers[l.buffer].data = t;
  return l;
}

void Lowering::output_constant(Value *out, const Tensor &t) {
  out->dtype = t.dtype;
  out->shape = t.shape;
  out->typed = true;
  out->constant = t;
}

Loc Lowering::output_new(Value *out, DType t, const Shape &s) {
  for (int64_t d : s)
    if (d < 0) fail("computed a negative dimension for output '" + out->name + "'");
  out->dtype = t;
  out->shape = s;
  out->typed = true;
  Loc l = buffer_new(t, s, Buffer::Kind::intermediate, out->name);
  bind(out, l);
  return l;
}

void Lowering::output_view(Value *out, const Loc &l) {
  // A view allocates nothing, but what reads it counts its elements: a view of 8^23 elements
  // (Expand) is refused here, naming its node, rather than wrapping later.
  if (l.shape.size() > kMaxRank)
    fail("output '" + out->name + "' has " + std::to_string(l.shape.size()) +
         " dimensions, more than " + std::to_string(kMaxRank));
  try {
    shape_numel(l.shape);
  } catch (const Error &e) {
    fail("output '" + out->name + "': " + e.what());
  }
  out->dtype = l.dtype;
  out->shape = l.shape;
  out->typed = true;
  bind(out, l);
}

void Lowering::fold_reserve(int64_t bytes) {
  auto mib = [](int64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
  // Outside folding (a Dropout mask made while scheduling) one constant may not pass 1 GiB either.
  if (!fold_budget) {
    if (bytes < 0 || bytes > (int64_t(1) << 30))
      fail("a compile-time constant of " + mib(bytes) + " is larger than 1 GiB");
    return;
  }
  if (bytes < 0 || bytes > fold_budget->limit - fold_budget->used)
    fail("constant folding would allocate " + mib(bytes) + " more, past its limit of " +
         mib(fold_budget->limit) + " (" + mib(fold_budget->used) +
         " used; raise it with --fold-limit-mb)");
  fold_budget->used += bytes;
}

Kernel &Lowering::kernel_new(const std::string &name) {
  prog.kernels.emplace_back();
  Kernel &k = prog.kernels.back();
  k.name = name;
  if (node) k.source_nodes.push_back(node->name);
  return k;
}

void Lowering::fail(const std::string &msg) const {
  throw Error(graph.origin + ": " + (node ? node->label() + ": " : std::string()) + msg);
}

const Tensor &Lowering::const_input(size_t i, const char *what) const {
  const Value *v = node->input(i);
  if (!v) fail(std::string("input '") + what + "' is missing");
  if (!v->constant) {
    // Name the model inputs it comes from, so the user knows what to bind (`--bind NAME=FILE`).
    std::vector<const Value *> stack = {v}, seen = {v};
    std::string from;
    while (!stack.empty()) {
      const Value *u = stack.back();
      stack.pop_back();
      if (u->is_input && !u->constant) from += (from.empty() ? "'" : ", '") + u->name + "'";
      if (!u->producer) continue;
      for (const Value *w : u->producer->inputs)
        if (w && !w->constant && std::find(seen.begin(), seen.end(), w) == seen.end()) {
          seen.push_back(w);
          stack.push_back(w);
        }
    }
    fail(std::string("input '") + what + "' ('" + v->name +
         "') must be known at compile time, but it depends on the model's inputs" +
         (from.empty() || v->is_input ? std::string() : " (" + from + ")"));
  }
  return *v->constant;
}

Access access_broadcast(const Loc &l, int rank) {
  Access a;
  a.buffer = l.buffer;
  a.offset = l.offset;
  int r = (int)l.shape.size();
  for (int d = 0; d < r; d++) {
    DimIndex di;
    di.extent = l.shape[d];
    di.stride = l.strides[d];
    if (l.shape[d] != 1) di.terms.push_back({rank - r + d, 1});
    a.dims.push_back(di);
  }
  return a;
}

Access access_axes(const Loc &l, const std::vector<int> &axis_of) {
  Access a;
  a.buffer = l.buffer;
  a.offset = l.offset;
  for (size_t d = 0; d < l.shape.size(); d++) {
    DimIndex di;
    di.extent = l.shape[d];
    di.stride = l.strides[d];
    if (axis_of[d] >= 0 && l.shape[d] != 1) di.terms.push_back({axis_of[d], 1});
    a.dims.push_back(di);
  }
  return a;
}

Access access_store(const Loc &l) { return access_broadcast(l, (int)l.shape.size()); }

bool shape_broadcast(const Shape &a, const Shape &b, Shape &out) {
  size_t r = std::max(a.size(), b.size());
  out.assign(r, 1);
  for (size_t i = 0; i < r; i++) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

int axis_normalize(const Lowering &L, int64_t axis, size_t r) {
  int64_t a = axis < 0 ? axis + (int64_t)r : axis;
  // Every caller indexes a rank-r array with the result: a scalar has no axis (found by fuzzing:
  // Gather on a scalar read shape[0] of an empty shape).
  if (a < 0 || a >= (int64_t)r)
    L.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  return (int)a;
}

std::map<std::string, LowerFn> &lower_table() {
  static std::map<std::string, LowerFn> table;
  return table;
}

static void lower_table_fill() {
  static bool done = false;
  if (done) return;
  done = true;
  lower_register_elementwise();
  lower_register_nn();
  lower_register_movement();
  lower_register_reduce();
  lower_register_index();
  lower_register_loss();
  lower_register_einsum();
  lower_register_select();
  lower_register_signal();
  lower_register_quant();
  lower_register_rnn();
  lower_register_grid_sample();
}

std::vector<std::string> lower_ops() {
  lower_table_fill();
  std::vector<std::string> r;
  for (const auto &[op, fn] : lower_table()) r.push_back(op);
  return r;
}

void lower_node(Lowering &L, Node &n) {
  lower_table_fill();
  L.node = &n;
  auto it = lower_table().find(n.op);
  if (it == lower_table().end())
    L.fail("operator " + n.op + " is not supported by capgraph (opset " +
           std::to_string(L.graph.opset) + ")");
  for (size_t i = 0; i < n.inputs.size(); i++)
    if (n.inputs[i] && !n.inputs[i]->typed)
      L.fail("input " + std::to_string(i) + " ('" + n.inputs[i]->name + "') has no type");
  const size_t first_kernel = L.prog.kernels.size();
  try {
    it->second(L, n);
  } catch (const Error &e) {
    // Shape arithmetic (tensor.h) throws without knowing the node; name it here.
    std::string m = e.what();
    if (m.rfind(L.graph.origin + ": ", 0) == 0) throw;
    L.fail(m);
  }
  // A kernel with no output element does nothing (a Conv with no output channels): dropped here
  // rather than refused later as an internal error.
  auto &ks = L.prog.kernels;
  ks.erase(std::remove_if(ks.begin() + (long)first_kernel, ks.end(),
                          [](const Kernel &k) {
                            for (int a = 0; a < k.n_parallel && a < (int)k.axes.size(); a++)
                              if (k.axes[a] == 0) return true;
                            return false;
                          }),
           ks.end());
  for (size_t i = first_kernel; i < L.prog.kernels.size(); i++)
    if (L.prog.kernels[i].exprs.size() > kKernelMaxExprs)
      L.fail("needs " + std::to_string(L.prog.kernels[i].exprs.size()) +
             " expressions in one kernel, more than capgraph's limit of " +
             std::to_string(kKernelMaxExprs) + " (too many inputs?)");
  for (Value *o : n.outputs)
    if (!o->name.empty() && !o->typed)
      L.fail("output '" + o->name + "' is not supported (optional output)");
  L.node = nullptr;
}

void kernel_copy(Lowering &L, const Loc &src, const Loc &dst, const std::string &name) {
  Kernel &k = L.kernel_new(name);
  int rank = (int)dst.shape.size();
  k.axes = rank ? dst.shape : Shape{1};
  k.n_parallel = (int)k.axes.size();
  int v = k.expr_load(access_broadcast(src, rank), src.dtype);
  k.result = k.expr_cast(v, dst.dtype);
  k.store = access_store(dst);
  k.store_dtype = dst.dtype;
}

}  // namespace capgraph
