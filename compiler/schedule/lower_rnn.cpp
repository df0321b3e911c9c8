// The recurrent layers RNN, GRU and LSTM (forward direction, default activations), unrolled over
// the sequence at compile time: one kernel projects every time step's input at once
// (X W^T + biases), then each step is one to three small kernels reading the previous step's
// state. Every step's hidden state is kept ([T, batch, hidden]), so Y is one masked copy and
// Y_h its last row. With sequence_lens, a batch entry past its length keeps its state and its Y
// rows are zero.
// Sources: the ONNX operator specification (onnx/docs/Operators.md, RNN/GRU/LSTM, opset 14): gate
// order z, r, h (GRU) and i, o, f, c (LSTM), peepholes P = [Pi, Po, Pf], B = [Wb, Rb], layout 1
// puts the batch first in X, Y, Y_h and Y_c.
#include <functional>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

enum class Cell { rnn, gru, lstm };

// A strided view of `base` starting `offset` elements further in.
Loc view(const Loc &base, int64_t offset, Shape shape, Shape strides) {
  Loc l = base;
  l.offset = base.offset + offset;
  l.shape = std::move(shape);
  l.strides = std::move(strides);
  return l;
}

struct Recurrence {
  Cell cell;
  int64_t T = 0, B = 0, I = 0, H = 0, G = 1;
  Loc x;       // (T, B, I) view, whatever the layout
  Loc w, r;    // (G*H, I) and (G*H, H)
  Loc wb, rb;  // (G*H) each, buffer -1 when absent
  Loc p;       // (3*H) peepholes, buffer -1 when absent
  Loc lens;    // (B), buffer -1 when absent
  bool clip = false;
  double clip_at = 0;
  bool linear_before_reset = false;
  bool batch_first = false;  // layout 1: X, Y, Y_h and Y_c put the batch first
  Loc h0, c0;                // the initial states (B, H): given, or zero constants
  std::string base;          // names the internal buffers: the first named output, or the node
};

int load(Kernel &k, const Loc &l, std::vector<int> axes) {
  return k.expr_load(access_axes(l, axes), DType::f32);
}

// A per-(b, j) view of rows [g*H, (g+1)*H) of a (B, G*H) buffer.
Loc gate(const Loc &gates, int64_t g, int64_t H) {
  return view(gates, g * H * gates.strides[1], {gates.shape[0], H},
              {gates.strides[0], gates.strides[1]});
}
Loc gate_vec(const Loc &v, int64_t g, int64_t H) {
  return view(v, g * H * v.strides[0], {H}, {v.strides[0]});
}

int clipped(Kernel &k, const Recurrence &s, int v) {
  if (!s.clip) return v;
  v = k.expr_binary(Op::max, v, k.expr_const(-s.clip_at, DType::f32), DType::f32);
  return k.expr_binary(Op::min, v, k.expr_const(s.clip_at, DType::f32), DType::f32);
}
int sigmoid(Kernel &k, const Recurrence &s, int v) {
  return k.expr_unary(Op::sigmoid, clipped(k, s, v), DType::f32);
}
int tanh_(Kernel &k, const Recurrence &s, int v) {
  return k.expr_unary(Op::tanh, clipped(k, s, v), DType::f32);
}

// kernel over (B, n | K): acc = sum_k a[b, k] * m[j, k] (m's rows `rows`), result from `finish`.
Kernel &step_product(Lowering &L, const char *name, const Loc &a, const Loc &m, int64_t n,
                     const Loc &out, const std::function<int(Kernel &, int)> &scale_a,
                     const std::function<int(Kernel &, int)> &finish) {
  Kernel &k = L.kernel_new(name);
  const int64_t K = a.shape[1];
  k.axes = {a.shape[0], n, K};
  k.n_parallel = 2;
  int av = scale_a(k, load(k, a, {0, 2}));
  k.body = k.expr_binary(Op::mul, av, load(k, m, {1, 2}), DType::f32);
  k.reduce = Reduce::sum;
  k.acc_dtype = DType::f32;
  k.result = finish(k, k.expr_unary(Op::acc, -1, DType::f32));
  k.store = access_store(out);
  k.store_dtype = DType::f32;
  k.flops = 2 * a.shape[0] * n * K;
  return k;
}

// mask ? v : keep, where mask says step t is inside batch entry b's sequence.
int masked(Kernel &k, const Recurrence &s, int64_t t, int v, int keep) {
  if (s.lens.buffer < 0) return v;
  int len = k.expr_cast(k.expr_load(access_axes(s.lens, {0}), s.lens.dtype), DType::i64);
  int in = k.expr_binary(Op::lt, k.expr_const((double)t, DType::i64), len, DType::boolean);
  return k.expr_select(in, v, keep, DType::f32);
}

// The node's operands checked and viewed as the steps read them (s.T, s.B, s.I, s.H, s.G and the
// Loc fields), in the order they are first asked of the Lowering.
Recurrence recurrence_read(Lowering &L, Node &n, Cell cell) {
  const Value *xv = n.input(0), *wv = n.input(1), *rv = n.input(2);
  for (const Value *v : {xv, wv, rv})
    if (v->dtype != DType::f32) L.fail("X, W and R must be float32");
  std::string dir = n.attr_string("direction", "forward");
  if (dir != "forward") L.fail("direction '" + dir + "' is not supported (forward is)");
  if (n.attr("activations")) {
    std::vector<std::string> want = cell == Cell::rnn ? std::vector<std::string>{"Tanh"}
                                    : cell == Cell::gru
                                        ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                        : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    const onnx::Attribute *a = n.attr("activations");
    if (a->strings != want) L.fail("activations other than the defaults are not supported");
  }
  if (cell == Cell::lstm && n.attr_int("input_forget", 0) != 0)
    L.fail("input_forget is not supported");
  Recurrence s;
  s.cell = cell;
  s.G = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
  s.batch_first = n.attr_int("layout", 0) != 0;
  const bool batch_first = s.batch_first;
  if (xv->shape.size() != 3) L.fail("X must have rank 3, got shape " + shape_str(xv->shape));
  Loc xl = L.loc(xv);
  s.T = xv->shape[batch_first ? 1 : 0];
  s.B = xv->shape[batch_first ? 0 : 1];
  s.I = xv->shape[2];
  s.H = n.attr_int("hidden_size", wv->shape.size() == 3 ? wv->shape[1] / s.G : 0);
  const int64_t GH = s.G * s.H;
  if (s.H <= 0) L.fail("hidden_size must be positive");
  if (s.T == 0 || s.B == 0) L.fail("an empty sequence or batch is not supported");
  if (s.T > 4096)
    L.fail("a sequence of " + std::to_string(s.T) +
           " steps is unrolled into too many kernels (at most 4096)");
  s.x = batch_first ? view(xl, 0, {s.T, s.B, s.I}, {xl.strides[1], xl.strides[0], xl.strides[2]})
                    : xl;
  if (wv->shape != Shape{1, GH, s.I})
    L.fail("W has shape " + shape_str(wv->shape) + ", expected " + shape_str({1, GH, s.I}));
  if (rv->shape != Shape{1, GH, s.H})
    L.fail("R has shape " + shape_str(rv->shape) + ", expected " + shape_str({1, GH, s.H}));
  Loc wl = L.loc(wv), rl = L.loc(rv);
  s.w = view(wl, 0, {GH, s.I}, {wl.strides[1], wl.strides[2]});
  s.r = view(rl, 0, {GH, s.H}, {rl.strides[1], rl.strides[2]});
  if (const Value *bv = n.input(3)) {
    if (bv->dtype != DType::f32 || bv->shape != Shape{1, 2 * GH})
      L.fail("B must be float32 of shape " + shape_str({1, 2 * GH}));
    Loc bl = L.loc(bv);
    s.wb = view(bl, 0, {GH}, {bl.strides[1]});
    s.rb = view(bl, GH * bl.strides[1], {GH}, {bl.strides[1]});
  }
  if (const Value *lv = n.input(4)) {
    if ((lv->dtype != DType::i32 && lv->dtype != DType::i64) || lv->shape != Shape{s.B})
      L.fail("sequence_lens must be int32 or int64 of shape [" + std::to_string(s.B) + "]");
    s.lens = L.loc(lv);
  }
  // Names for the internal buffers: the first named output (Y may be omitted).
  s.base = n.name;
  for (const Value *o : n.outputs)
    if (!o->name.empty()) {
      s.base = o->name;
      break;
    }
  auto initial = [&](size_t i, const char *what) {
    const Value *v = n.input(i);
    if (!v)
      return L.constant_new(
          Tensor::from_f64(DType::f32, {s.B, s.H}, std::vector<double>(s.B * s.H, 0.0)),
          s.base + "_" + what);
    Shape want = batch_first ? Shape{s.B, 1, s.H} : Shape{1, s.B, s.H};
    if (v->dtype != DType::f32 || v->shape != want)
      L.fail(std::string(what) + " must be float32 of shape " + shape_str(want));
    Loc l = L.loc(v);
    return view(l, 0, {s.B, s.H}, {l.strides[batch_first ? 0 : 1], l.strides[2]});
  };
  s.h0 = initial(5, "initial_h");
  s.c0 = cell == Cell::lstm ? initial(6, "initial_c") : Loc{};
  if (cell == Cell::lstm)
    if (const Value *pv = n.input(7)) {
      if (pv->dtype != DType::f32 || pv->shape != Shape{1, 3 * s.H})
        L.fail("P must be float32 of shape " + shape_str({1, 3 * s.H}));
      Loc pl = L.loc(pv);
      s.p = view(pl, 0, {3 * s.H}, {pl.strides[1]});
    }
  if (n.attr("clip")) {
    s.clip = true;
    s.clip_at = n.attr_float("clip", 0);
  }
  s.linear_before_reset = cell == Cell::gru && n.attr_int("linear_before_reset", 0) != 0;
  return s;
}

// Every step's input projection: xw[t, b, g] = X[t, b] . W[g] + Wb[g] + Rb[g] (GRU with
// linear_before_reset keeps Rb of the h gate for inside the reset product).
Loc input_projection_lower(Lowering &L, const Recurrence &s) {
  const int64_t GH = s.G * s.H;
  Loc xw = L.buffer_new(DType::f32, {s.T, s.B, GH}, Buffer::Kind::intermediate, s.base + "_xw");
  Kernel &k = L.kernel_new(s.cell == Cell::rnn   ? "rnn_input"
                           : s.cell == Cell::gru ? "gru_input"
                                                 : "lstm_input");
  k.axes = {s.T, s.B, GH, s.I};
  k.n_parallel = 3;
  k.body = k.expr_binary(Op::mul, load(k, s.x, {0, 1, 3}), load(k, s.w, {2, 3}), DType::f32);
  k.reduce = Reduce::sum;
  k.acc_dtype = DType::f32;
  int v = k.expr_unary(Op::acc, -1, DType::f32);
  if (s.wb.buffer >= 0) {
    v = k.expr_binary(Op::add, v, load(k, s.wb, {2}), DType::f32);
    int rb = load(k, s.rb, {2});
    if (s.linear_before_reset) {  // no Rb for the h gate (rows 2H..3H)
      int in_h = k.expr_binary(Op::ge, k.expr_iota(2, DType::i64),
                               k.expr_const((double)(2 * s.H), DType::i64), DType::boolean);
      rb = k.expr_select(in_h, k.expr_const(0, DType::f32), rb, DType::f32);
    }
    v = k.expr_binary(Op::add, v, rb, DType::f32);
  }
  k.result = v;
  k.store = access_store(xw);
  k.store_dtype = DType::f32;
  k.flops = 2 * s.T * s.B * GH * s.I;
  return xw;
}

// The buffers the steps write: hs[t] is the hidden state after step t (cs[t] the LSTM cell
// state); `gates` holds one step's gate pre-activations (GRU, LSTM).
struct StepBuffers {
  Loc xw, hs, cs, gates;
};

// Row t of a (T, B, H) state buffer.
Loc state_row(const Recurrence &s, const Loc &l, int64_t t) {
  return view(l, t * l.strides[0], {s.B, s.H}, {l.strides[1], l.strides[2]});
}

// Gate g's (B, H) part of step t's input projection.
Loc projection_at(const Recurrence &s, const Loc &xw, int64_t t, int64_t g) {
  return view(xw, t * xw.strides[0] + g * s.H, {s.B, s.H}, {xw.strides[1], 1});
}

int identity(Kernel &, int v) { return v; }

void rnn_step_lower(Lowering &L, const Recurrence &s, const StepBuffers &sb, int64_t t,
                    const Loc &hp, const Loc &ht) {
  step_product(L, "rnn_step", hp, s.r, s.H, ht, identity, [&](Kernel &k, int acc) {
    int h = tanh_(
        k, s,
        k.expr_binary(Op::add, acc, load(k, projection_at(s, sb.xw, t, 0), {0, 1}), DType::f32));
    return masked(k, s, t, h, load(k, hp, {0, 1}));
  });
}

// Pre-activations of all four gates, then the cell state, then the hidden state.
void lstm_step_lower(Lowering &L, const Recurrence &s, const StepBuffers &sb, int64_t t,
                     const Loc &hp, const Loc &ht) {
  const int64_t GH = s.G * s.H;
  const Loc &gates = sb.gates;
  Loc xt = view(sb.xw, t * sb.xw.strides[0], {s.B, GH}, {sb.xw.strides[1], 1});
  step_product(L, "lstm_gates", hp, s.r, GH, gates, identity, [&](Kernel &k, int acc) {
    return k.expr_binary(Op::add, acc, load(k, xt, {0, 1}), DType::f32);
  });
  Loc cp = t == 0 ? s.c0 : state_row(s, sb.cs, t - 1), ct = state_row(s, sb.cs, t);
  auto peep = [&](Kernel &k, int v, int64_t which, const Loc &c) {
    if (s.p.buffer < 0) return v;
    return k.expr_binary(Op::add, v,
                         k.expr_binary(Op::mul, load(k, gate_vec(s.p, which, s.H), {1}),
                                       load(k, c, {0, 1}), DType::f32),
                         DType::f32);
  };
  {
    Kernel &k = L.kernel_new("lstm_cell");
    k.axes = {s.B, s.H};
    k.n_parallel = 2;
    int i = sigmoid(k, s, peep(k, load(k, gate(gates, 0, s.H), {0, 1}), 0, cp));
    int f = sigmoid(k, s, peep(k, load(k, gate(gates, 2, s.H), {0, 1}), 2, cp));
    int g = tanh_(k, s, load(k, gate(gates, 3, s.H), {0, 1}));
    int c_prev = load(k, cp, {0, 1});
    int c = k.expr_binary(Op::add, k.expr_binary(Op::mul, f, c_prev, DType::f32),
                          k.expr_binary(Op::mul, i, g, DType::f32), DType::f32);
    k.result = masked(k, s, t, c, c_prev);
    k.store = access_store(ct);
    k.store_dtype = DType::f32;
    k.flops = 8 * s.B * s.H;
  }
  {
    Kernel &k = L.kernel_new("lstm_hidden");
    k.axes = {s.B, s.H};
    k.n_parallel = 2;
    int o = sigmoid(k, s, peep(k, load(k, gate(gates, 1, s.H), {0, 1}), 1, ct));
    int h = k.expr_binary(Op::mul, o, k.expr_unary(Op::tanh, load(k, ct, {0, 1}), DType::f32),
                          DType::f32);
    k.result = masked(k, s, t, h, load(k, hp, {0, 1}));
    k.store = access_store(ht);
    k.store_dtype = DType::f32;
    k.flops = 4 * s.B * s.H;
  }
}

// GRU: z and r pre-activations (gates[:, 0:2H]), then the candidate and the new state.
void gru_step_lower(Lowering &L, const Recurrence &s, const StepBuffers &sb, int64_t t,
                    const Loc &hp, const Loc &ht) {
  const Loc &gates = sb.gates;
  Loc zr = view(gates, 0, {s.B, 2 * s.H}, {gates.strides[0], 1});
  Loc xzr = view(sb.xw, t * sb.xw.strides[0], {s.B, 2 * s.H}, {sb.xw.strides[1], 1});
  step_product(L, "gru_gates", hp, s.r, 2 * s.H, zr, identity, [&](Kernel &k, int acc) {
    return k.expr_binary(Op::add, acc, load(k, xzr, {0, 1}), DType::f32);
  });
  Loc r_h = view(s.r, 2 * s.H * s.r.strides[0], {s.H, s.H}, {s.r.strides[0], s.r.strides[1]});
  Loc rp = gate(gates, 1, s.H), zp = gate(gates, 0, s.H);
  auto finish = [&](Kernel &k, int acc) {
    int x_h = load(k, projection_at(s, sb.xw, t, 2), {0, 1});
    int pre;
    if (s.linear_before_reset) {
      int rh = s.rb.buffer >= 0
                   ? k.expr_binary(Op::add, acc, load(k, gate_vec(s.rb, 2, s.H), {1}), DType::f32)
                   : acc;
      pre = k.expr_binary(
          Op::add, x_h, k.expr_binary(Op::mul, sigmoid(k, s, load(k, rp, {0, 1})), rh, DType::f32),
          DType::f32);
    } else {
      pre = k.expr_binary(Op::add, x_h, acc, DType::f32);
    }
    int cand = tanh_(k, s, pre);
    int z = sigmoid(k, s, load(k, zp, {0, 1}));
    int h_prev = load(k, hp, {0, 1});
    int one_minus_z = k.expr_binary(Op::sub, k.expr_const(1, DType::f32), z, DType::f32);
    int h = k.expr_binary(Op::add, k.expr_binary(Op::mul, one_minus_z, cand, DType::f32),
                          k.expr_binary(Op::mul, z, h_prev, DType::f32), DType::f32);
    return masked(k, s, t, h, h_prev);
  };
  if (s.linear_before_reset) {
    step_product(L, "gru_state", hp, r_h, s.H, ht, identity, finish);
  } else {
    // (r * h_prev) . R_h: the reset gate scales h_prev[b, k] inside the product.
    step_product(
        L, "gru_state", hp, r_h, s.H, ht,
        [&](Kernel &k, int v) {
          Loc rk = view(gates, s.H, {s.B, s.H}, {gates.strides[0], 1});
          return k.expr_binary(Op::mul, sigmoid(k, s, load(k, rk, {0, 2})), v, DType::f32);
        },
        finish);
  }
}

// Outputs: Y (zero past a sequence's end), Y_h and Y_c (the last state, which a finished sequence
// carried forward).
void outputs_lower(Lowering &L, Node &n, const Recurrence &s, const StepBuffers &sb) {
  const bool batch_first = s.batch_first;
  auto out_wanted = [&](size_t i) { return i < n.outputs.size() && !n.outputs[i]->name.empty(); };
  if (out_wanted(0)) {
    Shape y_shape = batch_first ? Shape{s.B, s.T, 1, s.H} : Shape{s.T, 1, s.B, s.H};
    Loc y = L.output_new(n.outputs[0], DType::f32, y_shape);
    // y viewed as (T, B, H)
    Loc yv = batch_first ? view(y, 0, {s.T, s.B, s.H}, {y.strides[1], y.strides[0], y.strides[3]})
                         : view(y, 0, {s.T, s.B, s.H}, {y.strides[0], y.strides[2], y.strides[3]});
    Kernel &k = L.kernel_new("rnn_output");
    k.axes = {s.T, s.B, s.H};
    k.n_parallel = 3;
    int v = load(k, sb.hs, {0, 1, 2});
    if (s.lens.buffer >= 0) {
      int len = k.expr_cast(k.expr_load(access_axes(s.lens, {1}), s.lens.dtype), DType::i64);
      int in = k.expr_binary(Op::lt, k.expr_iota(0, DType::i64), len, DType::boolean);
      v = k.expr_select(in, v, k.expr_const(0, DType::f32), DType::f32);
    }
    k.result = v;
    k.store = access_axes(yv, {0, 1, 2});
    k.store_dtype = DType::f32;
  }
  for (size_t o : {(size_t)1, (size_t)2}) {
    if (!out_wanted(o)) continue;
    if (o == 2 && s.cell != Cell::lstm) L.fail("has a third output; only LSTM has one (Y_c)");
    Loc y = L.output_new(n.outputs[o], DType::f32,
                         batch_first ? Shape{s.B, 1, s.H} : Shape{1, s.B, s.H});
    Loc yv = view(y, 0, {s.B, s.H}, {y.strides[batch_first ? 0 : 1], y.strides[2]});
    kernel_copy(L, state_row(s, o == 1 ? sb.hs : sb.cs, s.T - 1), yv,
                o == 1 ? "rnn_last_state" : "lstm_last_cell");
  }
}

void lower_recurrence(Lowering &L, Node &n, Cell cell) {
  const Recurrence s = recurrence_read(L, n, cell);
  StepBuffers sb;
  sb.xw = input_projection_lower(L, s);
  sb.hs = L.buffer_new(DType::f32, {s.T, s.B, s.H}, Buffer::Kind::intermediate, s.base + "_states");
  sb.cs = cell == Cell::lstm ? L.buffer_new(DType::f32, {s.T, s.B, s.H}, Buffer::Kind::intermediate,
                                            s.base + "_cells")
                             : Loc{};
  sb.gates = cell == Cell::rnn ? Loc{}
                               : L.buffer_new(DType::f32, {s.B, s.G * s.H},
                                              Buffer::Kind::intermediate, s.base + "_gates");
  for (int64_t t = 0; t < s.T; t++) {
    Loc hp = t == 0 ? s.h0 : state_row(s, sb.hs, t - 1), ht = state_row(s, sb.hs, t);
    if (cell == Cell::rnn)
      rnn_step_lower(L, s, sb, t, hp, ht);
    else if (cell == Cell::lstm)
      lstm_step_lower(L, s, sb, t, hp, ht);
    else
      gru_step_lower(L, s, sb, t, hp, ht);
  }
  outputs_lower(L, n, s, sb);
}

}  // namespace

void lower_register_rnn() {
  auto &t = lower_table();
  t["RNN"] = [](Lowering &L, Node &n) { lower_recurrence(L, n, Cell::rnn); };
  t["GRU"] = [](Lowering &L, Node &n) { lower_recurrence(L, n, Cell::gru); };
  t["LSTM"] = [](Lowering &L, Node &n) { lower_recurrence(L, n, Cell::lstm); };
}

}  // namespace capgraph
