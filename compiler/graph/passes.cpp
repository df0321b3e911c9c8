#include "graph/passes.h"

#include <cmath>
#include <set>

#include "error.h"
#include "schedule/interpret.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// Folding runs the interpreter; past this many output elements a node is left to run at
// replay time (a compiled kernel is faster than a slow fold).
constexpr int64_t kFoldLimit = 1 << 22;

// Gathers a view of a host buffer into a new contiguous constant.
Tensor loc_materialize(const Program &p, const std::vector<std::vector<uint8_t>> &host,
                       const Loc &l) {
  size_t es = dtype_size(l.dtype);
  int64_t n = shape_numel(l.shape);
  std::vector<uint8_t> out(n * es);
  std::vector<int64_t> idx(l.shape.size(), 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t off = l.offset;
    for (size_t d = 0; d < idx.size(); d++) off += idx[d] * l.strides[d];
    std::copy_n(host[l.buffer].data() + off * es, es, out.data() + i * es);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < l.shape[d]) break;
      idx[d] = 0;
    }
  }
  return Tensor::from_bytes(l.dtype, l.shape, std::move(out));
}

void node_fold(Graph &g, Node &n, FoldBudget &budget) {
  Lowering L(g);
  L.fold_budget = &budget;
  L.node = &n;  // errors binding the inputs name the node too
  bool all_const = true;
  for (Value *in : n.inputs) {
    if (!in) continue;
    if (!in->constant) {
      all_const = false;
      L.bind(in, L.buffer_new(in->dtype, in->shape, Buffer::Kind::input, in->name));
    }
  }
  lower_node(L, n);
  if (!all_const) return;
  int64_t total = 0;
  for (Value *o : n.outputs)
    if (!o->name.empty() && !o->constant) total += shape_numel(o->shape);
  if (total > kFoldLimit) return;
  // The interpreter stores no float16; such a node is compiled instead (its kernel computes in
  // float32 and stores float16).
  for (const Kernel &k : L.prog.kernels)
    if (L.prog.buffers[k.store.buffer].dtype == DType::f16) return;
  // The interpreter's scratch and the materialized outputs are charged before they exist.
  int64_t scratch = 0;
  for (const Buffer &b : L.prog.buffers)
    if (b.kind != Buffer::Kind::constant) scratch += b.numel * (int64_t)dtype_size(b.dtype);
  L.fold_reserve(scratch + total * 8);
  std::vector<std::vector<uint8_t>> host(L.prog.buffers.size());
  std::vector<uint8_t *> ptrs(host.size());
  for (size_t i = 0; i < host.size(); i++) {
    const Buffer &b = L.prog.buffers[i];
    if (b.kind == Buffer::Kind::constant)
      host[i] = *b.data.bytes;
    else
      host[i].assign(b.numel * dtype_size(b.dtype), 0);
    ptrs[i] = host[i].data();
  }
  for (const Kernel &k : L.prog.kernels) kernel_interpret(k, L.prog, ptrs);
  for (Value *o : n.outputs)
    if (!o->name.empty() && !o->constant && L.bound(o))
      o->constant = loc_materialize(L.prog, host, L.loc(o));
}

bool single_consumer(const Graph &g, const Value *v, const Node *who) {
  if (v->is_output) return false;
  std::vector<Node *> c = g.consumers(v);
  return c.size() == 1 && c[0] == who;
}

}  // namespace

void graph_infer_fold(Graph &g, int64_t limit_bytes) {
  FoldBudget budget{limit_bytes, 0};
  for (auto &n : g.nodes)
    if (!n->removed) node_fold(g, *n, budget);
  for (const Value *o : g.outputs)
    if (o->shape.size() > kMaxPortRank)
      throw Error(g.origin + ": output '" + o->name + "' has " + std::to_string(o->shape.size()) +
                  " dimensions; at most " + std::to_string(kMaxPortRank) + " are supported");
}

int graph_fold_batchnorm(Graph &g) {
  int folded = 0;
  for (auto &bn : g.nodes) {
    if (bn->removed || bn->op != "BatchNormalization") continue;
    Value *x = bn->input(0);
    Node *conv = x ? x->producer : nullptr;
    if (!conv || conv->removed || conv->op != "Conv" || !single_consumer(g, x, bn.get())) continue;
    Value *w = conv->input(1), *b = conv->input(2);
    if (!w->constant || w->dtype != DType::f32 || (b && !b->constant)) continue;
    bool params_const = true;
    for (int i = 1; i <= 4; i++)
      if (!bn->input(i) || !bn->input(i)->constant) params_const = false;
    if (!params_const || bn->attr_int("training_mode", 0)) continue;
    for (size_t i = 1; i < bn->outputs.size(); i++)
      if (!bn->outputs[i]->name.empty() && !g.consumers(bn->outputs[i]).empty())
        params_const = false;
    if (!params_const) continue;
    std::vector<float> scale = bn->input(1)->constant->to_f32(),
                       shift = bn->input(2)->constant->to_f32();
    std::vector<float> mean = bn->input(3)->constant->to_f32(),
                       var = bn->input(4)->constant->to_f32();
    double eps = bn->attr_float("epsilon", 1e-5f);
    int64_t OC = w->shape[0];
    // Sizes come from the file: every table must have one entry per output channel (an empty
    // weight would divide by zero below).
    if (OC <= 0 || (int64_t)scale.size() != OC || (int64_t)shift.size() != OC ||
        (int64_t)mean.size() != OC || (int64_t)var.size() != OC)
      continue;
    std::vector<float> wv = w->constant->to_f32(),
                       bv = b ? b->constant->to_f32() : std::vector<float>(OC, 0.0f);
    if ((int64_t)bv.size() != OC || wv.size() % OC != 0) continue;
    int64_t per = (int64_t)wv.size() / OC;
    for (int64_t c = 0; c < OC; c++) {
      double a = scale[c] / std::sqrt((double)var[c] + eps);
      for (int64_t i = 0; i < per; i++) wv[c * per + i] = (float)(wv[c * per + i] * a);
      bv[c] = (float)((bv[c] - mean[c]) * a + shift[c]);
    }
    Value *nw = g.value_new(w->name + "_bn");
    nw->constant = Tensor::from_f32(w->shape, wv);
    nw->dtype = DType::f32;
    nw->shape = w->shape;
    nw->typed = true;
    Value *nb = g.value_new((b ? b->name : conv->name + "_bias") + "_bn");
    nb->constant = Tensor::from_f32({OC}, bv);
    nb->dtype = DType::f32;
    nb->shape = {OC};
    nb->typed = true;
    conv->inputs.resize(3);
    conv->inputs[1] = nw;
    conv->inputs[2] = nb;
    // The conv now produces the BN's output directly.
    Value *y = bn->outputs[0];
    conv->outputs[0] = y;
    y->producer = conv;
    bn->removed = true;
    folded++;
  }
  return folded;
}

int graph_fold_pad(Graph &g) {
  int folded = 0;
  for (auto &pad : g.nodes) {
    if (pad->removed || pad->op != "Pad" || pad->attr_string("mode", "constant") != "constant")
      continue;
    Value *y = pad->outputs[0];
    std::vector<Node *> cons = g.consumers(y);
    if (cons.size() != 1 || y->is_output) continue;
    Node *c = cons[0];
    if ((c->op != "Conv" && c->op != "MaxPool" && c->op != "AveragePool") || c->input(0) != y)
      continue;
    if (c->attr_string("auto_pad", "NOTSET") != "NOTSET") continue;
    std::vector<int64_t> pads;
    double value = 0;
    if (g.opset >= 11) {
      if (!pad->input(1) || !pad->input(1)->constant || pad->input(3)) continue;
      pads = pad->input(1)->constant->to_i64();
      if (pad->input(2)) {
        if (!pad->input(2)->constant) continue;
        value = pad->input(2)->constant->at_f64(0);
      }
    } else {
      pads = pad->attr_ints("pads");
      value = pad->attr_float("value", 0);
    }
    size_t r = y->shape.size(), S = r - 2;
    if (pads.size() != 2 * r || value != 0 || c->op == "MaxPool") continue;
    if (c->op == "AveragePool" && !c->attr_int("count_include_pad", 0)) continue;
    bool ok = pads[0] == 0 && pads[1] == 0 && pads[r] == 0 && pads[r + 1] == 0;
    for (int64_t p : pads) ok = ok && p >= 0;
    if (!ok) continue;
    std::vector<int64_t> cp = c->attr_ints("pads", std::vector<int64_t>(2 * S, 0));
    for (size_t i = 0; i < S; i++) {
      cp[i] += pads[2 + i];
      cp[S + i] += pads[r + 2 + i];
    }
    onnx::Attribute *a = nullptr;
    for (auto &at : c->attrs)
      if (at.name == "pads") a = &at;
    if (!a) {
      c->attrs.emplace_back();
      a = &c->attrs.back();
      a->name = "pads";
      a->kind = onnx::Attribute::Kind::ints;
    }
    a->ints = cp;
    c->inputs[0] = pad->input(0);
    pad->removed = true;
    folded++;
  }
  return folded;
}

int graph_remove_dead(Graph &g) {
  std::set<const Value *> live(g.outputs.begin(), g.outputs.end());
  int removed = 0;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    Node &n = *g.nodes[i];
    if (n.removed) continue;
    bool needed = false;
    for (Value *o : n.outputs) needed = needed || live.count(o);
    if (!needed) {
      n.removed = true;
      removed++;
      continue;
    }
    for (Value *in : n.inputs)
      if (in) live.insert(in);
  }
  return removed;
}

}  // namespace capgraph
