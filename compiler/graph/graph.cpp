#include "graph/graph.h"

#include <set>
#include <unordered_map>

#include "error.h"
#include "graph/op_arity.h"

namespace capgraph {

const onnx::Attribute *Node::attr(const std::string &n) const {
  for (const auto &a : attrs)
    if (a.name == n) return &a;
  return nullptr;
}

int64_t Node::attr_int(const std::string &n, int64_t def) const {
  const onnx::Attribute *a = attr(n);
  return a ? a->i : def;
}

float Node::attr_float(const std::string &n, float def) const {
  const onnx::Attribute *a = attr(n);
  return a ? a->f : def;
}

std::string Node::attr_string(const std::string &n, const std::string &def) const {
  const onnx::Attribute *a = attr(n);
  return a ? a->s : def;
}

std::vector<int64_t> Node::attr_ints(const std::string &n, std::vector<int64_t> def) const {
  const onnx::Attribute *a = attr(n);
  return a ? a->ints : def;
}

std::vector<float> Node::attr_floats(const std::string &n) const {
  const onnx::Attribute *a = attr(n);
  return a ? a->floats : std::vector<float>{};
}

std::string Node::label() const { return op + " node '" + name + "'"; }

Value *Graph::value_new(const std::string &name) {
  values.push_back(std::make_unique<Value>());
  values.back()->name = name;
  return values.back().get();
}

std::vector<Node *> Graph::consumers(const Value *v) const {
  std::vector<Node *> r;
  for (const auto &n : nodes) {
    if (n->removed) continue;
    for (Value *in : n->inputs)
      if (in == v) {
        r.push_back(n.get());
        break;
      }
  }
  return r;
}

DType dtype_from_onnx(onnx::DataType t, const std::string &what) {
  switch (t) {
    case onnx::DataType::float32: return DType::f32;
    case onnx::DataType::float16: return DType::f16;
    case onnx::DataType::float64: return DType::f64;
    case onnx::DataType::int8: return DType::i8;
    case onnx::DataType::uint8: return DType::u8;
    case onnx::DataType::int16: return DType::i16;
    case onnx::DataType::int32: return DType::i32;
    case onnx::DataType::int64: return DType::i64;
    case onnx::DataType::boolean: return DType::boolean;
    case onnx::DataType::bfloat16: return DType::bf16;
    case onnx::DataType::uint16: return DType::u16;
    case onnx::DataType::uint32: return DType::u32;
    case onnx::DataType::uint64: return DType::u64;
    default: throw Error(what + ": element type " + onnx::data_type_name(t) + " is not supported");
  }
}

Tensor tensor_from_onnx(const onnx::Tensor &t, const std::string &what) {
  if (t.external)
    throw Error(what + ": tensor '" + t.name + "' uses external data, which is not supported");
  DType dt = dtype_from_onnx(t.dtype, what + " tensor '" + t.name + "'");
  // The dims and the data both come from the file: check they agree before trusting either.
  int64_t numel = 0;
  try {
    numel = shape_numel(t.dims);
  } catch (const Error &e) {
    throw Error(what + " tensor '" + t.name + "': " + e.what());
  }
  if ((uint64_t)numel * dtype_size(dt) != t.data.size())
    throw Error(what + " tensor '" + t.name + "': shape " + shape_str(t.dims) + " needs " +
                std::to_string(numel * (int64_t)dtype_size(dt)) + " bytes of " + dtype_name(dt) +
                " but the file holds " + std::to_string(t.data.size()));
  return Tensor::from_bytes(dt, t.dims, t.data);
}

Shape shape_parse(const std::string &s) {
  Shape r;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of("x,", i);
    if (j == std::string::npos) j = s.size();
    std::string part = s.substr(i, j - i);
    // At most 15 digits: a dimension stoll can hold, and products of a few that int64 can.
    if (part.empty() || part.size() > 15 ||
        part.find_first_not_of("0123456789") != std::string::npos)
      throw Error("bad shape '" + s + "': expected dimensions like 1x3x640x640");
    r.push_back(std::stoll(part));
    i = j + 1;
  }
  if (r.empty() || s.back() == 'x' || s.back() == ',')
    throw Error("bad shape '" + s + "': expected dimensions like 1x3x640x640");
  return r;
}

namespace {

// graph_import's steps over one model: values are found by name as nodes are read in order.
struct GraphImport {
  Graph &g;
  const std::string &origin;
  std::unordered_map<std::string, Value *> by_name;

  void initializers_add(const onnx::Model &m) {
    for (const onnx::Tensor &t : m.graph.initializers) {
      Value *v = g.value_new(t.name);
      v->constant = tensor_from_onnx(t, origin + ": initializer");
      v->dtype = v->constant->dtype;
      v->shape = v->constant->shape;
      v->typed = true;
      by_name[t.name] = v;
    }
  }

  // An input given --bind: a constant, checked against the model's type and fixed dimensions.
  void input_bind(const onnx::ValueInfo &vi, const Tensor &t, const InputShapes &shapes) {
    const std::string what = origin + ": --bind " + vi.name;
    if (shapes.count(vi.name))
      throw Error(what +
                  ": the input is also given --input-shape; a bound input's shape is its file's");
    DType want = dtype_from_onnx(vi.dtype, origin + ": input '" + vi.name + "'");
    if (t.dtype != want)
      throw Error(what + ": the file holds " + dtype_name(t.dtype) + " but the model's input is " +
                  dtype_name(want));
    if (vi.has_shape && vi.dims.size() != t.shape.size())
      throw Error(what + ": the file's shape " + shape_str(t.shape) + " has rank " +
                  std::to_string(t.shape.size()) + " but the model's input has rank " +
                  std::to_string(vi.dims.size()));
    for (size_t i = 0; vi.has_shape && i < vi.dims.size(); i++)
      if (vi.dims[i].value >= 0 && vi.dims[i].value != t.shape[i])
        throw Error(what + ": the file's shape " + shape_str(t.shape) +
                    " disagrees with the model's fixed dimension " + std::to_string(i) + " = " +
                    std::to_string(vi.dims[i].value));
    Value *v = g.value_new(vi.name);
    v->constant = t;
    v->dtype = want;
    v->shape = t.shape;
    v->typed = true;
    by_name[vi.name] = v;
  }

  // A graph input: its shape from --input-shape (`given`, or nullptr) or the model; dimensions
  // left unknown are added to `unbound`.
  void input_add(const onnx::ValueInfo &vi, const Shape *given, std::vector<std::string> &unbound) {
    Value *v = g.value_new(vi.name);
    v->is_input = true;
    v->dtype = dtype_from_onnx(vi.dtype, origin + ": input '" + vi.name + "'");
    if (given) {
      if (vi.has_shape && given->size() != vi.dims.size())
        throw Error(origin + ": --input-shape " + vi.name + "=" + shape_str(*given) + " has rank " +
                    std::to_string(given->size()) + " but the model's input has rank " +
                    std::to_string(vi.dims.size()));
      for (size_t i = 0; vi.has_shape && i < vi.dims.size(); i++)
        if (vi.dims[i].value >= 0 && vi.dims[i].value != (*given)[i])
          throw Error(origin + ": --input-shape " + vi.name + "=" + shape_str(*given) +
                      " disagrees with the model's fixed dimension " + std::to_string(i) + " = " +
                      std::to_string(vi.dims[i].value));
      v->shape = *given;
    } else {
      if (!vi.has_shape) unbound.push_back(vi.name + " (no shape in the model)");
      for (size_t i = 0; i < vi.dims.size(); i++) {
        if (vi.dims[i].value >= 0) {
          v->shape.push_back(vi.dims[i].value);
        } else {
          v->shape.push_back(-1);
          std::string dn = vi.dims[i].param.empty() ? "?" : vi.dims[i].param;
          unbound.push_back(vi.name + "[" + std::to_string(i) + "] '" + dn + "'");
        }
      }
    }
    if (v->shape.size() > kMaxPortRank)
      throw Error(origin + ": input '" + vi.name + "' has " + std::to_string(v->shape.size()) +
                  " dimensions; at most " + std::to_string(kMaxPortRank) + " are supported");
    v->typed = true;
    by_name[vi.name] = v;
    g.inputs.push_back(v);
  }

  // Every input bound or shaped; every --input-shape and --bind naming an input.
  void inputs_add(const onnx::Model &m, const InputShapes &shapes, const InputBindings &bound) {
    std::vector<std::string> unbound;
    std::map<std::string, bool> used_shapes;
    std::map<std::string, bool> used_bindings;
    for (const onnx::ValueInfo &vi : m.graph.inputs) {
      if (by_name.count(vi.name)) continue;  // an initializer listed as input (old exporters)
      auto b = bound.find(vi.name);
      if (b != bound.end()) {
        used_bindings[vi.name] = true;
        input_bind(vi, b->second, shapes);
        continue;
      }
      auto given = shapes.find(vi.name);
      if (given != shapes.end()) used_shapes[vi.name] = true;
      input_add(vi, given != shapes.end() ? &given->second : nullptr, unbound);
    }
    for (const auto &[name, s] : shapes)
      if (!used_shapes.count(name))
        throw Error(origin + ": --input-shape names '" + name + "', which is not a model input");
    for (const auto &[name, t] : bound)
      if (!used_bindings.count(name))
        throw Error(origin + ": --bind names '" + name + "', which is not a model input");
    if (!unbound.empty()) {
      std::string msg = origin +
                        ": the model has dynamic input dimensions that must be bound with "
                        "--input-shape NAME=DxDx...:";
      for (const auto &u : unbound) msg += "\n  " + u;
      throw Error(msg);
    }
  }

  void node_add(const onnx::Node &on) {
    auto n = std::make_unique<Node>();
    n->name = on.name;
    n->op = on.op_type;
    n->attrs = on.attributes;
    if (!on.domain.empty() && on.domain != "ai.onnx")
      throw Error(origin + ": " + n->label() + ": operator domain '" + on.domain +
                  "' is not supported");
    for (const std::string &in : on.inputs) {
      if (in.empty()) {
        n->inputs.push_back(nullptr);
        continue;
      }
      auto it = by_name.find(in);
      if (it == by_name.end())
        throw Error(origin + ": " + n->label() + " reads '" + in +
                    "', which no earlier node produces (graph not in topological order?)");
      n->inputs.push_back(it->second);
    }
    for (const std::string &out : on.outputs) {
      Value *v = g.value_new(out);
      v->producer = n.get();
      if (!out.empty()) by_name[out] = v;
      n->outputs.push_back(v);
    }
    // Before opset 7 most binary ops broadcast only with a `broadcast` attribute, Reshape and Pad
    // take attributes, BatchNormalization has `spatial`...: those old forms are not read. The ops
    // below mean the same at opsets 1-6 as at 7 (their only extra attribute, consumed_inputs, was a
    // memory hint), so a model made of them is accepted.
    static const std::set<std::string> same_before_7 = {"Abs",           "Ceil",
                                                        "Elu",           "Exp",
                                                        "Floor",         "GlobalAveragePool",
                                                        "GlobalMaxPool", "HardSigmoid",
                                                        "Identity",      "InstanceNormalization",
                                                        "LeakyRelu",     "Log",
                                                        "Neg",           "Not",
                                                        "Reciprocal",    "Relu",
                                                        "Selu",          "Sigmoid",
                                                        "Softplus",      "Softsign",
                                                        "Sqrt",          "Tanh"};
    if (g.opset < 7 && !same_before_7.count(n->op))
      throw Error(origin + ": " + n->label() + ": opset " + std::to_string(g.opset) +
                  " is not supported for " + n->op +
                  " (its definition before opset 7 differs; opsets 7 to 21 are)");
    node_arity_check(*n, g.opset, origin);
    g.nodes.push_back(std::move(n));
  }

  void outputs_add(const onnx::Model &m) {
    for (const onnx::ValueInfo &vi : m.graph.outputs) {
      auto it = by_name.find(vi.name);
      if (it == by_name.end())
        throw Error(origin + ": graph output '" + vi.name + "' is produced by no node");
      it->second->is_output = true;
      g.outputs.push_back(it->second);
    }
    if (g.outputs.empty()) throw Error(origin + ": the graph has no outputs");
  }
};

}  // namespace

Graph graph_import(const onnx::Model &m, const std::string &origin, const InputShapes &shapes,
                   const InputBindings &bound) {
  Graph g;
  g.origin = origin;
  g.opset = m.default_opset();
  if (g.opset == 0) g.opset = 9;  // no default-domain import: oldest opset we read
  if (g.opset < 1 || g.opset > 21)
    throw Error(origin + ": opset " + std::to_string(g.opset) + " is not supported (1 to 21 are)");
  GraphImport im{g, origin, {}};
  im.initializers_add(m);
  im.inputs_add(m, shapes, bound);
  for (const onnx::Node &on : m.graph.nodes) im.node_add(on);
  im.outputs_add(m);
  return g;
}

}  // namespace capgraph
