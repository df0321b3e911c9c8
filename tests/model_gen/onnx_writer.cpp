// ModelProto writer for tests. Field numbers are those of onnx/onnx.proto, the same ones
// compiler/onnx/onnx_reader.cpp reads; they are spelled out again here on purpose, so a wrong
// number on one side is caught by ONNX Runtime rejecting the file instead of cancelling out.
#include "onnx_writer.h"

#include <fstream>

#include "error.h"

namespace capgraph::model_gen {
namespace {

enum WireType : uint32_t { wire_varint = 0, wire_fixed64 = 1, wire_bytes = 2, wire_fixed32 = 5 };

// One protobuf message being written. Nested messages are written into their own ProtoWriter and
// appended with their length, which is simple and fast enough for test models.
struct ProtoWriter {
  std::vector<uint8_t> bytes;

  void varint_put(uint64_t v) {
    for (; v >= 0x80; v >>= 7) bytes.push_back(uint8_t(v | 0x80));
    bytes.push_back(uint8_t(v));
  }
  void fixed_put(uint64_t v, size_t size) {
    for (size_t k = 0; k < size; ++k) bytes.push_back(uint8_t(v >> (8 * k)));
  }
  void key_put(uint32_t field, uint32_t wire) { varint_put(uint64_t(field) << 3 | wire); }
  void varint_field_put(uint32_t field, uint64_t v) {
    key_put(field, wire_varint);
    varint_put(v);
  }
  void fixed_field_put(uint32_t field, uint64_t v, size_t size) {
    key_put(field, size == 4 ? wire_fixed32 : wire_fixed64);
    fixed_put(v, size);
  }
  void bytes_field_put(uint32_t field, const void *data, size_t size) {
    key_put(field, wire_bytes);
    varint_put(size);
    auto p = static_cast<const uint8_t *>(data);
    bytes.insert(bytes.end(), p, p + size);
  }
  void string_field_put(uint32_t field, const std::string &s) {
    bytes_field_put(field, s.data(), s.size());
  }
  void message_field_put(uint32_t field, const ProtoWriter &m) {
    bytes_field_put(field, m.bytes.data(), m.bytes.size());
  }

  // A repeated number field: one packed run, or one key per value. `size` 0 means varints.
  void repeated_put(uint32_t field, const std::vector<uint64_t> &values, size_t size, bool packed) {
    if (values.empty()) return;
    if (!packed) {
      for (uint64_t v : values)
        size == 0 ? varint_field_put(field, v) : fixed_field_put(field, v, size);
      return;
    }
    ProtoWriter run;
    for (uint64_t v : values) size == 0 ? run.varint_put(v) : run.fixed_put(v, size);
    message_field_put(field, run);
  }
};

uint32_t float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

template <class T>
std::vector<uint64_t> as_u64(const std::vector<T> &values) {
  std::vector<uint64_t> out;
  for (T v : values)
    out.push_back(uint64_t(v));  // negative ints become 10-byte varints, as protobuf does
  return out;
}

bool dtype_is_signed(DataType t) {
  return t == DataType::int8 || t == DataType::int16 || t == DataType::int32 ||
         t == DataType::int64;
}

// TensorProto (onnx.proto): dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7, name 8,
// raw_data 9, double_data 10, uint64_data 11.
ProtoWriter tensor_write(const onnx::Tensor &t, WireStyle style) {
  ProtoWriter w;
  bool packed = style == WireStyle::typed_packed;
  w.repeated_put(1, as_u64(t.dims), 0, packed);
  w.varint_field_put(2, uint64_t(t.dtype));
  if (!t.name.empty()) w.string_field_put(8, t.name);

  // Which typed field holds each data type, and the size of one element in Tensor::data.
  uint32_t field = 0;
  size_t element = 0, wire_size = 0;  // wire_size 0: varint
  switch (t.dtype) {
    case DataType::float32: field = 4, element = 4, wire_size = 4; break;
    case DataType::int8:
    case DataType::uint8:
    case DataType::boolean: field = 5, element = 1; break;
    case DataType::int16:
    case DataType::uint16:
    case DataType::float16:
    case DataType::bfloat16: field = 5, element = 2; break;
    case DataType::int32: field = 5, element = 4; break;
    case DataType::int64: field = 7, element = 8; break;
    case DataType::float64: field = 10, element = 8, wire_size = 8; break;
    case DataType::uint32: field = 11, element = 4; break;
    case DataType::uint64: field = 11, element = 8; break;
    default: break;
  }
  if (style == WireStyle::standard || field == 0) {
    // raw_data is written even when empty: an empty tensor with no data field at all is valid
    // too, but this is what the exporters write.
    w.bytes_field_put(9, t.data.data(), t.data.size());
    return w;
  }
  std::vector<uint64_t> values;
  for (size_t off = 0; off + element <= t.data.size(); off += element) {
    uint64_t v = 0;
    for (size_t k = 0; k < element; ++k) v |= uint64_t(t.data[off + k]) << (8 * k);
    if (dtype_is_signed(t.dtype) && element < 8 && (v >> (8 * element - 1)) & 1)
      v |= ~uint64_t(0) << (8 * element);  // sign-extend: int32_data holds the value, not its bytes
    values.push_back(v);
  }
  w.repeated_put(field, values, wire_size, packed);
  return w;
}

// AttributeProto: name 1, f 2, i 3, s 4, t 5, floats 7, ints 8, strings 9, tensors 10, type 20.
ProtoWriter attribute_write(const onnx::Attribute &a, WireStyle style) {
  using K = onnx::Attribute::Kind;
  ProtoWriter w;
  bool packed = style == WireStyle::typed_packed;
  w.string_field_put(1, a.name);
  switch (a.kind) {  // AttributeType values: FLOAT 1, INT 2, STRING 3, TENSOR 4, FLOATS 6, INTS 7,
                     // STRINGS 8, TENSORS 9
    case K::f:
      w.varint_field_put(20, 1);
      w.fixed_field_put(2, float_bits(a.f), 4);
      break;
    case K::i:
      w.varint_field_put(20, 2);
      w.varint_field_put(3, uint64_t(a.i));
      break;
    case K::s:
      w.varint_field_put(20, 3);
      w.string_field_put(4, a.s);
      break;
    case K::t:
      w.varint_field_put(20, 4);
      w.message_field_put(5, tensor_write(a.t, style));
      break;
    case K::floats: {
      w.varint_field_put(20, 6);
      std::vector<uint64_t> bits;
      for (float f : a.floats) bits.push_back(float_bits(f));
      w.repeated_put(7, bits, 4, packed);
      break;
    }
    case K::ints:
      w.varint_field_put(20, 7);
      w.repeated_put(8, as_u64(a.ints), 0, packed);
      break;
    case K::strings:
      w.varint_field_put(20, 8);
      for (const std::string &s : a.strings) w.string_field_put(9, s);
      break;
    case K::tensors:
      w.varint_field_put(20, 9);
      for (const onnx::Tensor &t : a.tensors) w.message_field_put(10, tensor_write(t, style));
      break;
    default:
      throw Error("model_gen: attribute '" + a.name +
                  "': the writer has no subgraphs or undefined kinds");
  }
  return w;
}

// ValueInfoProto { name 1, type 2: TypeProto { tensor_type 1: { elem_type 1, shape 2:
// TensorShapeProto { dim 1: { dim_value 1 | dim_param 2 } } } } }
ProtoWriter value_info_write(const onnx::ValueInfo &v) {
  ProtoWriter tensor_type;
  tensor_type.varint_field_put(1, uint64_t(v.dtype));
  if (v.has_shape) {
    ProtoWriter shape;
    for (const onnx::Dim &d : v.dims) {
      ProtoWriter dim;  // neither field set: an unknown dimension
      if (d.value >= 0)
        dim.varint_field_put(1, uint64_t(d.value));
      else if (!d.param.empty())
        dim.string_field_put(2, d.param);
      shape.message_field_put(1, dim);
    }
    tensor_type.message_field_put(2, shape);
  }
  ProtoWriter type, w;
  type.message_field_put(1, tensor_type);
  w.string_field_put(1, v.name);
  w.message_field_put(2, type);
  return w;
}

// NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7.
ProtoWriter node_write(const onnx::Node &n, WireStyle style) {
  ProtoWriter w;
  for (const std::string &s : n.inputs) w.string_field_put(1, s);
  for (const std::string &s : n.outputs) w.string_field_put(2, s);
  if (!n.name.empty()) w.string_field_put(3, n.name);
  w.string_field_put(4, n.op_type);
  for (const onnx::Attribute &a : n.attributes) w.message_field_put(5, attribute_write(a, style));
  if (!n.domain.empty()) w.string_field_put(7, n.domain);
  return w;
}

// GraphProto: node 1, name 2, initializer 5, input 11, output 12, value_info 13.
ProtoWriter graph_write(const onnx::Graph &g, WireStyle style) {
  ProtoWriter w;
  for (const onnx::Node &n : g.nodes) w.message_field_put(1, node_write(n, style));
  w.string_field_put(2, g.name);
  for (const onnx::Tensor &t : g.initializers) w.message_field_put(5, tensor_write(t, style));
  for (const onnx::ValueInfo &v : g.inputs) w.message_field_put(11, value_info_write(v));
  for (const onnx::ValueInfo &v : g.outputs) w.message_field_put(12, value_info_write(v));
  for (const onnx::ValueInfo &v : g.value_info) w.message_field_put(13, value_info_write(v));
  return w;
}

onnx::ValueInfo value_info_make(std::string name, DataType dtype,
                                const std::vector<int64_t> &dims) {
  onnx::ValueInfo v{std::move(name), dtype, true, {}};
  for (int64_t d : dims) v.dims.push_back(onnx::Dim{d < 0 ? -1 : d, ""});
  return v;
}

onnx::Attribute attribute_make(std::string name, onnx::Attribute::Kind kind) {
  onnx::Attribute a;
  a.name = std::move(name);
  a.kind = kind;
  return a;
}

}  // namespace

// ModelProto: ir_version 1, producer_name 2, producer_version 3, graph 7, opset_import 8
// (OperatorSetIdProto: domain 1, version 2).
std::vector<uint8_t> model_serialize(const onnx::Model &model, WireStyle style) {
  ProtoWriter w;
  w.varint_field_put(1, uint64_t(model.ir_version));
  if (!model.producer_name.empty()) w.string_field_put(2, model.producer_name);
  if (!model.producer_version.empty()) w.string_field_put(3, model.producer_version);
  for (const onnx::OpsetImport &o : model.opsets) {
    ProtoWriter opset;
    opset.string_field_put(1, o.domain);
    opset.varint_field_put(2, uint64_t(o.version));
    w.message_field_put(8, opset);
  }
  w.message_field_put(7, graph_write(model.graph, style));  // last: see the header
  return std::move(w.bytes);
}

onnx::Attribute attr_int(std::string name, int64_t value) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::i);
  a.i = value;
  return a;
}
onnx::Attribute attr_ints(std::string name, std::vector<int64_t> values) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::ints);
  a.ints = std::move(values);
  return a;
}
onnx::Attribute attr_float(std::string name, float value) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::f);
  a.f = value;
  return a;
}
onnx::Attribute attr_floats(std::string name, std::vector<float> values) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::floats);
  a.floats = std::move(values);
  return a;
}
onnx::Attribute attr_string(std::string name, std::string value) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::s);
  a.s = std::move(value);
  return a;
}
onnx::Attribute attr_strings(std::string name, std::vector<std::string> values) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::strings);
  a.strings = std::move(values);
  return a;
}
onnx::Attribute attr_tensor(std::string name, onnx::Tensor value) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::t);
  a.t = std::move(value);
  return a;
}
onnx::Attribute attr_tensors(std::string name, std::vector<onnx::Tensor> values) {
  onnx::Attribute a = attribute_make(std::move(name), onnx::Attribute::Kind::tensors);
  a.tensors = std::move(values);
  return a;
}

ModelBuilder::ModelBuilder(int64_t opset) {
  model_.ir_version = 8;
  model_.producer_name = "capgraph-model-gen";
  model_.opsets.push_back({"", opset});
  model_.graph.name = "main";
}

void ModelBuilder::input(std::string name, DataType dtype, std::vector<int64_t> dims) {
  model_.graph.inputs.push_back(value_info_make(std::move(name), dtype, dims));
}
void ModelBuilder::input(onnx::ValueInfo value) { model_.graph.inputs.push_back(std::move(value)); }
void ModelBuilder::output(std::string name, DataType dtype) {
  model_.graph.outputs.push_back(onnx::ValueInfo{std::move(name), dtype, false, {}});
}
void ModelBuilder::output(std::string name, DataType dtype, std::vector<int64_t> dims) {
  model_.graph.outputs.push_back(value_info_make(std::move(name), dtype, dims));
}
void ModelBuilder::output(onnx::ValueInfo value) {
  model_.graph.outputs.push_back(std::move(value));
}

void ModelBuilder::initializer(onnx::Tensor tensor) {
  model_.graph.initializers.push_back(std::move(tensor));
}
void ModelBuilder::initializer(std::string name, const std::vector<float> &values,
                               std::vector<int64_t> dims) {
  initializer(tensor_make(std::move(name), DataType::float32, values, std::move(dims)));
}
void ModelBuilder::initializer(std::string name, const std::vector<int64_t> &values,
                               std::vector<int64_t> dims) {
  initializer(tensor_make(std::move(name), DataType::int64, values, std::move(dims)));
}

onnx::Node &ModelBuilder::node(std::string op_type, std::vector<std::string> inputs,
                               std::vector<std::string> outputs,
                               std::vector<onnx::Attribute> attributes) {
  onnx::Node n;
  n.op_type = std::move(op_type);
  n.inputs = std::move(inputs);
  n.outputs = std::move(outputs);
  n.attributes = std::move(attributes);
  return model_.graph.nodes.emplace_back(std::move(n));
}

std::vector<uint8_t> ModelBuilder::serialize(WireStyle style) const {
  return model_serialize(model_, style);
}

void ModelBuilder::save(const std::string &path, WireStyle style) const {
  std::vector<uint8_t> bytes = serialize(style);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size())) ||
      !file.flush())
    throw Error(path + ": cannot write ONNX model");
}

}  // namespace capgraph::model_gen
