// Builds small ONNX models in code and writes genuine ModelProto bytes, so tests can make exactly
// the model they need (one op, an odd attribute, an empty tensor) and run it through both capgraph
// and ONNX Runtime. It uses the reader's own structs (compiler/onnx/onnx_model.h): a model built
// here and read back with onnx::model_parse compares field by field.
//
//   ModelBuilder b(13);
//   b.input("x", DataType::float32, {1, 3, 8, 8});
//   b.initializer("w", weights, {4, 3, 3, 3});  // std::vector<float>
//   b.node("Conv", {"x", "w"}, {"y"}, {attr_ints("pads", {1, 1, 1, 1})});
//   b.node("Relu", {"y"}, {"z"});
//   b.output("z", DataType::float32);             // shape left for the runtime to infer
//   b.save("conv_relu.onnx");
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "onnx/onnx_model.h"

namespace capgraph::model_gen {

using onnx::DataType;

// How numbers are laid out on the wire. Each is valid protobuf that ONNX Runtime accepts; the two
// "typed" styles exist so tests reach every path of the reader, not just the common one.
enum class WireStyle {
  standard,        // as onnx's own serializer writes: tensor data in raw_data, dims and attribute
                   // lists unpacked (onnx.proto is proto2 and does not mark them packed)
  typed_packed,    // tensor data in float_data/int32_data/int64_data/double_data/uint64_data,
                   // every repeated number packed (as a proto3 writer would)
  typed_unpacked,  // tensor data in those typed fields, one field key per value
};

// ModelProto bytes for `model`. The graph is written last (protobuf allows any field order) so that
// every truncation of the output lacks a complete graph and must be rejected by a reader.
std::vector<uint8_t> model_serialize(const onnx::Model &model,
                                     WireStyle style = WireStyle::standard);

// A tensor from host values; T must have the element size of dtype (bool: uint8_t).
template <class T>
onnx::Tensor tensor_make(std::string name, DataType dtype, const std::vector<T> &values,
                         std::vector<int64_t> dims) {
  static_assert(std::endian::native == std::endian::little, "Tensor::data is little-endian");
  onnx::Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

onnx::Attribute attr_int(std::string name, int64_t value);
onnx::Attribute attr_ints(std::string name, std::vector<int64_t> values);
onnx::Attribute attr_float(std::string name, float value);
onnx::Attribute attr_floats(std::string name, std::vector<float> values);
onnx::Attribute attr_string(std::string name, std::string value);
onnx::Attribute attr_strings(std::string name, std::vector<std::string> values);
onnx::Attribute attr_tensor(std::string name, onnx::Tensor value);
onnx::Attribute attr_tensors(std::string name, std::vector<onnx::Tensor> values);

class ModelBuilder {
 public:
  // A model importing the default ("") domain at `opset`, IR version 8 (ONNX 1.10+, which every
  // supported ONNX Runtime reads).
  explicit ModelBuilder(int64_t opset);

  // dims < 0 are unknown dimensions; use the ValueInfo overloads for symbolic ones (dim_param).
  void input(std::string name, DataType dtype, std::vector<int64_t> dims);
  void input(onnx::ValueInfo value);
  void output(std::string name, DataType dtype);  // no shape at all
  void output(std::string name, DataType dtype, std::vector<int64_t> dims);
  void output(onnx::ValueInfo value);

  void initializer(onnx::Tensor tensor);
  void initializer(std::string name, const std::vector<float> &values, std::vector<int64_t> dims);
  void initializer(std::string name, const std::vector<int64_t> &values, std::vector<int64_t> dims);

  // Adds a node and returns it, to set a name or domain: `b.node(...).name = "conv1";`. The
  // reference is valid until the next node() call. Nodes left unnamed are written without a name.
  onnx::Node &node(std::string op_type, std::vector<std::string> inputs,
                   std::vector<std::string> outputs, std::vector<onnx::Attribute> attributes = {});

  // Everything else (value_info, more opset imports, producer, graph name) is set here directly.
  onnx::Model &model() { return model_; }

  std::vector<uint8_t> serialize(WireStyle style = WireStyle::standard) const;
  // Writes the file; throws capgraph::Error naming the path when it cannot.
  void save(const std::string &path, WireStyle style = WireStyle::standard) const;

 private:
  onnx::Model model_;
};

}  // namespace capgraph::model_gen
