// The ONNX model as read from the protobuf wire format: a faithful, minimal mirror of the parts of
// onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto, ValueInfoProto) that
// a graph compiler needs. Names are kept so errors can point at the node.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace capgraph::onnx {

// TensorProto.DataType values (onnx.proto).
enum class DataType : int32_t {
  undefined = 0,
  float32 = 1,
  uint8 = 2,
  int8 = 3,
  uint16 = 4,
  int16 = 5,
  int32 = 6,
  int64 = 7,
  string = 8,
  boolean = 9,
  float16 = 10,
  float64 = 11,
  uint32 = 12,
  uint64 = 13,
  bfloat16 = 16,
};
const char *data_type_name(DataType t);

struct Tensor {
  std::string name;
  DataType dtype = DataType::undefined;
  std::vector<int64_t> dims;
  // Little-endian raw bytes, product(dims) * element size, whichever field the file used
  // (raw_data, float_data, int64_data, int32_data, double_data, ...) normalised into this.
  // Empty for string tensors (their values are not kept) and for external ones.
  std::vector<uint8_t> data;
  bool external = false;  // data_location == EXTERNAL: not read; the compiler reports it
};

// One dimension of a ValueInfo's shape: a number, a symbolic name (dim_param), or unknown.
struct Dim {
  int64_t value = -1;  // >= 0 when known
  std::string param;   // dim_param when symbolic
};

struct ValueInfo {
  std::string name;
  DataType dtype = DataType::undefined;
  bool has_shape = false;
  std::vector<Dim> dims;
};

struct Attribute {
  enum class Kind { undefined, f, i, s, t, g, floats, ints, strings, tensors, graphs };
  std::string name;
  Kind kind = Kind::undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<Tensor> tensors;
  // Subgraphs (If/Loop bodies) are not kept; has_graph says one was there so the compiler can
  // name the node in its "unsupported" error.
  bool has_graph = false;
};

struct Node {
  std::string name;  // may be empty in the file; the reader fills "<op_type>_<index>" then
  std::string op_type;
  std::string domain;               // "" or "ai.onnx" for the default domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs;
  std::vector<Attribute> attributes;

  const Attribute *attr(const std::string &name) const;
};

struct Graph {
  std::string name;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs;  // may include initializers (IR version < 4 style)
  std::vector<ValueInfo> outputs;
  std::vector<ValueInfo> value_info;
};

struct OpsetImport {
  std::string domain;
  int64_t version = 0;
};

struct Model {
  int64_t ir_version = 0;
  std::string producer_name;
  std::string producer_version;
  std::vector<OpsetImport> opsets;
  Graph graph;

  // Opset of the default domain ("" / "ai.onnx"), or 0 when absent.
  int64_t default_opset() const;
};

// Parses a serialized ModelProto. Throws capgraph::Error (see compiler/error.h) with a message
// naming `origin` (usually the file path) and what is wrong (truncated, bad wire type, ...).
Model model_parse(const uint8_t *data, size_t size, const std::string &origin);
Model model_load(const std::string &path);

}  // namespace capgraph::onnx
