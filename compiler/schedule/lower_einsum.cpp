// Einsum: one kernel whose iteration axes are the equation's letters. The output's letters are
// the parallel axes, the others are summed; each operand is read with its letters as the axes of
// its dimensions, so a letter repeated in one operand reads a diagonal, and the product of the
// operands is the body. An ellipsis stands for the same broadcast dimensions in every operand.
// Sources: the ONNX operator specification (onnx/docs/Operators.md, Einsum, opset 12), numpy.einsum
// for the implicit output (letters used once, in alphabetical order, after the ellipsis dims).
#include <algorithm>
#include <map>

#include "error.h"
#include "schedule/lower.h"

namespace capgraph {

namespace {

// The equation without spaces, split into its operands' terms and the output term.
struct Equation {
  std::vector<std::string> terms;
  std::string out;
  bool explicit_out = false;
};

Equation equation_parse(Lowering &L, const std::string &text) {
  std::string s;
  for (char c : text)
    if (c != ' ') s += c;
  Equation e;
  size_t arrow = s.find("->");
  std::string lhs = s;
  if (arrow != std::string::npos) {
    e.explicit_out = true;
    e.out = s.substr(arrow + 2);
    lhs = s.substr(0, arrow);
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.terms.push_back(
        lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  auto valid = [&](const std::string &t) {
    std::string rest = t;
    size_t dots = rest.find("...");
    if (dots != std::string::npos) rest.erase(dots, 3);
    for (char c : rest)
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
        L.fail("equation '" + text + "': unexpected character '" + std::string(1, c) + "'");
  };
  for (const std::string &t : e.terms) valid(t);
  valid(e.out);
  return e;
}

// The term with its ellipsis replaced by `n` letters standing for the broadcast dims (digits,
// which no user letter can be), the last n of the `width` ellipsis dims.
std::string ellipsis_expand(const std::string &t, int64_t n, int64_t width) {
  size_t dots = t.find("...");
  if (dots == std::string::npos) return t;
  std::string dims;
  for (int64_t i = width - n; i < width; i++) dims += (char)('0' + i);
  return t.substr(0, dots) + dims + t.substr(dots + 3);
}

void lower_einsum(Lowering &L, Node &n) {
  std::string text = n.attr_string("equation", "");
  Equation e = equation_parse(L, text);
  if (e.terms.size() != n.inputs.size())
    L.fail("equation '" + text + "' has " + std::to_string(e.terms.size()) +
           " operands, the node " + std::to_string(n.inputs.size()) + " inputs");
  DType t = n.input(0)->dtype;
  for (const Value *v : n.inputs)
    if (!v || v->dtype != t) L.fail("every input must be given and of one element type");
  if (t != DType::f32 && t != DType::f64 && t != DType::i32 && t != DType::i64)
    L.fail(std::string("element type ") + dtype_name(t) +
           " is not supported (float32, float64, int32, int64 are)");
  // How many dims the ellipsis covers in each operand; the widest sets the output's.
  int64_t width = 0;
  std::vector<int64_t> ell(e.terms.size(), 0);
  for (size_t i = 0; i < e.terms.size(); i++) {
    const std::string &term = e.terms[i];
    bool has = term.find("...") != std::string::npos;
    int64_t letters = (int64_t)term.size() - (has ? 3 : 0);
    int64_t rank = (int64_t)n.input(i)->shape.size();
    if (has ? rank < letters : rank != letters)
      L.fail("operand " + std::to_string(i) + " ('" + term + "') does not fit input of shape " +
             shape_str(n.input(i)->shape));
    ell[i] = has ? rank - letters : 0;
    width = std::max(width, ell[i]);
  }
  if (width > 10) L.fail("an ellipsis covering more than 10 dimensions is not supported");
  std::vector<std::string> terms;
  std::map<char, int64_t> extent;
  std::map<char, int> uses;
  for (size_t i = 0; i < e.terms.size(); i++) {
    terms.push_back(ellipsis_expand(e.terms[i], ell[i], width));
    for (size_t d = 0; d < terms[i].size(); d++) {
      char c = terms[i][d];
      int64_t x = n.input(i)->shape[d];
      uses[c]++;
      bool broadcast_dim = c >= '0' && c <= '9';
      if (!extent.count(c) || (broadcast_dim && extent[c] == 1)) {
        if (extent.count(c) && extent[c] != 1 && x != extent[c])
          L.fail("dimension '" + std::string(1, c) + "' has sizes " + std::to_string(extent[c]) +
                 " and " + std::to_string(x));
        extent[c] = x;
      } else if (extent[c] != x && !(broadcast_dim && x == 1)) {
        L.fail("letter '" + std::string(1, c) + "' has sizes " + std::to_string(extent[c]) +
               " and " + std::to_string(x));
      }
    }
  }
  std::string out;
  if (e.explicit_out) {
    // An output without an ellipsis sums the broadcast dims away.
    out = ellipsis_expand(e.out, width, width);
  } else {
    for (int64_t i = 0; i < width; i++) out += (char)('0' + i);
    for (const auto &[c, k] : uses)
      if (k == 1 && !(c >= '0' && c <= '9')) out += c;
  }
  for (char c : out) {
    if (!extent.count(c)) L.fail("output letter '" + std::string(1, c) + "' is not in any operand");
    if (std::count(out.begin(), out.end(), c) > 1)
      L.fail("output letter '" + std::string(1, c) + "' is repeated");
  }
  // Axes: the output's letters, then the summed ones.
  std::map<char, int> axis;
  Shape axes, out_shape;
  for (char c : out) {
    axis[c] = (int)axes.size();
    axes.push_back(extent[c]);
    out_shape.push_back(extent[c]);
  }
  int n_parallel = (int)axes.size();
  if (n_parallel == 0) {
    axes.push_back(1);
    n_parallel = 1;
  }
  for (const auto &[c, x] : extent)
    if (!axis.count(c)) {
      axis[c] = (int)axes.size();
      axes.push_back(x);
    }
  std::vector<Loc> locs;
  for (const Value *v : n.inputs) locs.push_back(L.loc(v));
  Loc y = L.output_new(n.outputs[0], t, out_shape);
  if (shape_numel(out_shape) == 0) return;
  bool reduces = (int)axes.size() > n_parallel;
  Kernel &k = L.kernel_new("einsum");
  k.axes = axes;
  k.n_parallel = n_parallel;
  int prod = -1;
  for (size_t i = 0; i < locs.size(); i++) {
    std::vector<int> axis_of;
    for (char c : terms[i]) axis_of.push_back(axis[c]);
    int v = k.expr_load(access_axes(locs[i], axis_of), t);
    prod = prod < 0 ? v : k.expr_binary(Op::mul, prod, v, t);
  }
  if (reduces) {
    // A reduced axis of extent 0 sums nothing: the output is zero.
    k.body = prod;
    k.reduce = Reduce::sum;
    k.acc_dtype = t;
    k.result = k.expr_unary(Op::acc, -1, t);
  } else {
    k.result = prod;
  }
  std::vector<int> store_axes;
  for (size_t d = 0; d < out_shape.size(); d++) store_axes.push_back((int)d);
  k.store = access_axes(y, store_axes);
  k.store_dtype = t;
  int64_t points = 1;
  for (int64_t a : axes) points *= a;
  k.flops = points * (int64_t)locs.size();
}

}  // namespace

void lower_register_einsum() { lower_table()["Einsum"] = lower_einsum; }

}  // namespace capgraph
