// The graph IR: ONNX nodes over typed tensor values with static shapes. Import binds dynamic
// dimensions, shape inference and constant folding fill in every value's type (schedule/lower
// defines each op once; folding interprets it), then passes rewrite the graph before scheduling.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "onnx/onnx_model.h"

namespace capgraph {

struct Node;

// The most dimensions a model input or output may have: the runtime's CAPGRAPH_MAX_RANK
// (runtime/capgraph_runtime.h), which refuses captures with more. Intermediates may have up to
// kMaxRank (each dimension can become a loop of a kernel).
constexpr size_t kMaxPortRank = 8;
constexpr size_t kMaxRank = 32;

struct Value {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  bool typed = false;              // dtype/shape known (after inference)
  std::optional<Tensor> constant;  // known at compile time
  Node *producer = nullptr;
  bool is_input = false;
  bool is_output = false;
};

struct Node {
  std::string name;
  std::string op;
  std::vector<Value *> inputs;  // nullptr where an optional input is omitted
  std::vector<Value *> outputs;
  std::vector<onnx::Attribute> attrs;
  bool removed = false;

  Value *input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  const onnx::Attribute *attr(const std::string &n) const;
  int64_t attr_int(const std::string &n, int64_t def) const;
  float attr_float(const std::string &n, float def) const;
  std::string attr_string(const std::string &n, const std::string &def) const;
  std::vector<int64_t> attr_ints(const std::string &n, std::vector<int64_t> def = {}) const;
  std::vector<float> attr_floats(const std::string &n) const;
  // "Conv 'conv1'" — how errors name a node.
  std::string label() const;
};

struct Graph {
  std::string origin;  // model file, for messages
  int64_t opset = 0;
  std::vector<std::unique_ptr<Value>> values;
  std::vector<std::unique_ptr<Node>> nodes;  // topological order
  std::vector<Value *> inputs, outputs;

  Value *value_new(const std::string &name);
  // Nodes that read v (not removed).
  std::vector<Node *> consumers(const Value *v) const;
};

// Input shapes given by the user (--input-shape NAME=1x3x640x640) for dynamic dimensions.
using InputShapes = std::map<std::string, Shape>;

// Builds the graph. Unbound dynamic input dimensions are an error listing all of them.
// Graph inputs given as compile-time constants (`capgraph compile --bind NAME=FILE.npy`): each
// becomes a constant, folded like an initializer, and is no longer an input of the capture.
using InputBindings = std::map<std::string, Tensor>;
Graph graph_import(const onnx::Model &m, const std::string &origin, const InputShapes &shapes,
                   const InputBindings &bound = {});

// Converts an ONNX data type; throws Error naming `what` for types capgraph does not handle.
DType dtype_from_onnx(onnx::DataType t, const std::string &what);
Tensor tensor_from_onnx(const onnx::Tensor &t, const std::string &what);

// Parses "1x3x640x640".
Shape shape_parse(const std::string &s);

}  // namespace capgraph
