// Reads an ONNX ModelProto straight from the protobuf wire format, without the protobuf library.
//
// Why by hand: the compiler needs a handful of messages from onnx.proto, and the wire format is
// four encodings (https://protobuf.dev/programming-guides/encoding/). Pulling in libprotobuf plus
// generated code for that would be the largest dependency of the compiler.
//
// The input is untrusted (any file a user passes), so every read is bounds-checked against the
// bytes of the enclosing message and every length is checked against what is left before anything
// is allocated. Any problem throws capgraph::Error naming the origin, the byte offset and the chain
// of messages being read ("in TensorProto 'conv1.weight' in GraphProto 'main' in ModelProto").
// Subgraphs (If/Loop bodies) are skipped, not parsed, so there is no recursion for a hostile file
// to exhaust.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "error.h"
#include "onnx/onnx_model.h"

namespace capgraph::onnx {
namespace {

// Protobuf wire types: the low 3 bits of every field key.
enum WireType : uint32_t {
  wire_varint = 0,
  wire_fixed64 = 1,
  wire_bytes = 2,
  wire_group_start = 3,
  wire_group_end = 4,
  wire_fixed32 = 5,
};

// Field numbers from onnx/onnx.proto (stable across IR versions; numbers are never reused).
namespace model_field {
enum : uint32_t {
  ir_version = 1,
  producer_name = 2,
  producer_version = 3,
  graph = 7,
  opset_import = 8
};
}
namespace opset_field {  // OperatorSetIdProto
enum : uint32_t { domain = 1, version = 2 };
}
namespace graph_field {
enum : uint32_t {
  node = 1,
  name = 2,
  initializer = 5,
  input = 11,
  output = 12,
  value_info = 13,
  sparse_initializer = 15
};
}
namespace node_field {
enum : uint32_t { input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7 };
}
namespace attribute_field {
enum : uint32_t {
  name = 1,
  f = 2,
  i = 3,
  s = 4,
  t = 5,
  g = 6,
  floats = 7,
  ints = 8,
  strings = 9,
  tensors = 10,
  graphs = 11,
  type = 20
};
}
namespace tensor_field {
enum : uint32_t {
  dims = 1,
  data_type = 2,
  float_data = 4,
  int32_data = 5,
  string_data = 6,
  int64_data = 7,
  name = 8,
  raw_data = 9,
  double_data = 10,
  uint64_data = 11,
  data_location = 14
};
}
namespace value_info_field {
enum : uint32_t { name = 1, type = 2 };
}
namespace type_field {  // TypeProto; sequence, map, optional and sparse types are not read
enum : uint32_t { tensor_type = 1 };
}
namespace tensor_type_field {  // TypeProto.Tensor
enum : uint32_t { elem_type = 1, shape = 2 };
}
namespace shape_field {  // TensorShapeProto
enum : uint32_t { dim = 1 };
}
namespace dim_field {  // TensorShapeProto.Dimension
enum : uint32_t { dim_value = 1, dim_param = 2 };
}

// AttributeProto.AttributeType values; SPARSE_TENSOR(S) and TYPE_PROTO(S) map to Kind::undefined.
Attribute::Kind attribute_kind_from_type(uint64_t type) {
  using K = Attribute::Kind;
  switch (type) {
    case 1: return K::f;
    case 2: return K::i;
    case 3: return K::s;
    case 4: return K::t;
    case 5: return K::g;
    case 6: return K::floats;
    case 7: return K::ints;
    case 8: return K::strings;
    case 9: return K::tensors;
    case 10: return K::graphs;
    default: return K::undefined;
  }
}

// Bytes per element in raw_data; 0 where the reader does not know a fixed size (string, complex,
// float8, 4-bit types): such data is passed through unchecked and the compiler rejects the type.
size_t element_size(DataType t) {
  switch (t) {
    case DataType::uint8:
    case DataType::int8:
    case DataType::boolean: return 1;
    case DataType::uint16:
    case DataType::int16:
    case DataType::float16:
    case DataType::bfloat16: return 2;
    case DataType::float32:
    case DataType::int32:
    case DataType::uint32: return 4;
    case DataType::int64:
    case DataType::float64:
    case DataType::uint64: return 8;
    default: return 0;
  }
}

float float_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

// Appends the low `size` bytes of `value`, least significant first (the layout raw_data uses).
void little_endian_append(std::vector<uint8_t> &out, uint64_t value, size_t size) {
  for (size_t k = 0; k < size; ++k) out.push_back(uint8_t(value >> (8 * k)));
}

// The data fields of one TensorProto as found. They are turned into Tensor::data only once the
// whole message is read, because nothing forces data_type to come before the data.
struct TensorFields {
  const uint8_t *raw = nullptr;  // raw_data bytes, inside the input buffer
  size_t raw_size = 0;
  bool has_raw = false;
  std::vector<uint32_t> float_bits;
  std::vector<int32_t> int32s;  // also int8/uint8/int16/uint16/bool/float16/bfloat16, one per value
  std::vector<int64_t> int64s;
  std::vector<uint64_t> double_bits;
  std::vector<uint64_t> uint64s;  // uint32 and uint64
  size_t string_count = 0;
};

class Parser {
 public:
  Parser(const uint8_t *data, size_t size, const std::string &origin)
      : base_(data), size_(size), origin_(origin) {}

  Model model_read() {
    Span s{base_, base_ + size_};
    if (size_ == 0) fail(s.pos, "empty file, not an ONNX model");
    Model model;
    FrameScope frame(*this, {"ModelProto"});
    bool has_graph = false;
    for (Field f; field_next(s, f);) {
      switch (f.number) {
        case model_field::ir_version: model.ir_version = int64_t(varint_field_read(s, f)); break;
        case model_field::producer_name: model.producer_name = string_field_read(s, f); break;
        case model_field::producer_version: model.producer_version = string_field_read(s, f); break;
        case model_field::opset_import:
          model.opsets.push_back(opset_read(message_field_read(s, f)));
          break;
        case model_field::graph:
          model.graph = graph_read(message_field_read(s, f));
          has_graph = true;
          break;
        default: field_skip(s, f);
      }
    }
    // Any bytes parse as *some* protobuf now and then; a ModelProto without a graph is the
    // usual sign that this is not an ONNX file at all.
    if (!has_graph) fail(s.end, "no graph in ModelProto (not an ONNX model?)");
    return model;
  }

 private:
  // [pos, end): the bytes of the message being read. Reads advance pos and never pass end.
  // `cut` marks a message the file ends inside of (see bytes_read).
  struct Span {
    const uint8_t *pos;
    const uint8_t *end;
    bool cut = false;
    size_t left() const { return size_t(end - pos); }
  };
  struct Field {
    uint32_t number = 0;
    uint32_t wire = 0;
    const uint8_t *at = nullptr;  // where its key starts, for errors
  };
  // One message being read, for the "in NodeProto 'conv1' in GraphProto 'main'" part of errors.
  // Names are pointers to the fields being filled, so an error shows as much as was read so far.
  struct Frame {
    const char *message;
    const std::string *name = nullptr;
    size_t index = SIZE_MAX;               // position in its repeated field, when unnamed
    const std::string *op_type = nullptr;  // NodeProto only
  };
  struct FrameScope {
    Parser &parser;
    FrameScope(Parser &p, Frame frame) : parser(p) { parser.frames_.push_back(frame); }
    ~FrameScope() { parser.frames_.pop_back(); }
  };

  [[noreturn]] void fail(const uint8_t *at, const std::string &what) const {
    std::string msg = origin_ + ": " + what + " at byte " + std::to_string(at - base_);
    for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
      msg += std::string(" in ") + frame->message;
      if (frame->name && !frame->name->empty())
        msg += " '" + *frame->name + "'";
      else if (frame->index != SIZE_MAX)
        msg += " #" + std::to_string(frame->index);
      if (frame->op_type && !frame->op_type->empty() && (!frame->name || frame->name->empty()))
        msg += " (" + *frame->op_type + ")";
    }
    throw Error(msg);
  }

  // ---- wire format -----------------------------------------------------------------------------

  uint64_t varint_read(Span &s) {
    const uint8_t *start = s.pos;
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {  // at most 10 bytes
      if (s.pos == s.end) fail(start, "truncated protobuf (varint runs past the end)");
      uint8_t byte = *s.pos++;
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    fail(start, "malformed varint (longer than 10 bytes)");
  }

  uint64_t fixed_read(Span &s, size_t size) {  // fixed32 / fixed64, little-endian
    if (s.left() < size)
      fail(s.pos, "truncated protobuf (" + std::to_string(size) + "-byte value runs past the end)");
    uint64_t value = 0;
    for (size_t k = 0; k < size; ++k) value |= uint64_t(s.pos[k]) << (8 * k);
    s.pos += size;
    return value;
  }

  // A length-delimited payload. The length is checked against the bytes left in the enclosing
  // message before anything is done with it, so a corrupt length cannot cause a huge allocation.
  // A length running past the end of the *file* is a truncated file: a nested message is then
  // read as far as it goes (marked cut), so the error names the innermost message the file ends
  // in ("in TensorProto 'conv1.weight'"), not just the outermost one.
  Span bytes_read(Span &s, bool is_message = false) {
    const uint8_t *start = s.pos;
    uint64_t length = varint_read(s);
    if (length <= s.left()) {
      Span payload{s.pos, s.pos + length};
      s.pos += length;
      return payload;
    }
    std::string sizes =
        "field of " + std::to_string(length) + " bytes, only " + std::to_string(s.left()) + " left";
    if (s.end != base_ + size_) fail(start, "corrupt protobuf (" + sizes + " in its message)");
    if (!is_message) fail(start, "truncated protobuf (" + sizes + ")");
    Span payload{s.pos, s.end, true};
    s.pos = s.end;
    return payload;
  }

  // Steps to the next field of a message; false at its end. Every message is read with this loop.
  bool field_next(Span &s, Field &f) {
    if (s.pos == s.end) {
      if (s.cut) fail(s.end, "truncated protobuf (the file ends inside this message)");
      return false;
    }
    f = field_read(s);
    return true;
  }

  Field field_read(Span &s) {
    const uint8_t *at = s.pos;
    uint64_t key = varint_read(s);
    uint64_t number = key >> 3;
    uint32_t wire = uint32_t(key & 7);
    if (number == 0 || number > (1u << 29) - 1)
      fail(at, "invalid protobuf field number " + std::to_string(number));
    if (wire > wire_fixed32) fail(at, "invalid protobuf wire type " + std::to_string(wire));
    return {uint32_t(number), wire, at};
  }

  void field_skip(Span &s, const Field &f) {
    switch (f.wire) {
      case wire_varint: varint_read(s); break;
      case wire_fixed64: fixed_read(s, 8); break;
      case wire_bytes: bytes_read(s); break;
      case wire_fixed32: fixed_read(s, 4); break;
      // Groups are a proto2 feature onnx.proto never uses; skipping them needs a nesting walk.
      default:
        fail(f.at, "unsupported protobuf wire type " + std::to_string(f.wire) +
                       " (group) in field " + std::to_string(f.number));
    }
  }

  void wire_expect(const Field &f, uint32_t wire) {
    if (f.wire != wire)
      fail(f.at, "field " + std::to_string(f.number) + " has wire type " + std::to_string(f.wire) +
                     ", expected " + std::to_string(wire));
  }

  uint64_t varint_field_read(Span &s, const Field &f) {
    wire_expect(f, wire_varint);
    return varint_read(s);
  }
  Span message_field_read(Span &s, const Field &f) {
    wire_expect(f, wire_bytes);
    return bytes_read(s, true);
  }
  void bytes_field_skip(Span &s, const Field &f) {
    wire_expect(f, wire_bytes);
    bytes_read(s);
  }
  std::string string_field_read(Span &s, const Field &f) {
    wire_expect(f, wire_bytes);
    Span b = bytes_read(s);
    return std::string(reinterpret_cast<const char *>(b.pos), b.left());
  }
  float float_field_read(Span &s, const Field &f) {
    wire_expect(f, wire_fixed32);
    return float_from_bits(uint32_t(fixed_read(s, 4)));
  }

  // A repeated number comes packed (one length-delimited run of values: proto3 writers, and the
  // TensorProto data fields onnx.proto marks [packed = true]) or unpacked (one key per value: the
  // proto2 default, so dims and attribute ints as onnx's own serializer writes them). Accept both.
  template <class ElementRead>
  void repeated_read(Span &s, const Field &f, uint32_t element_wire, ElementRead &&element_read) {
    if (f.wire == wire_bytes) {
      Span packed = bytes_read(s);
      while (packed.pos < packed.end) element_read(packed);
    } else {
      wire_expect(f, element_wire);
      element_read(s);
    }
  }
  template <class T>
  void varints_read(Span &s, const Field &f, std::vector<T> &out) {
    repeated_read(s, f, wire_varint, [&](Span &in) { out.push_back(T(varint_read(in))); });
  }
  // Fixed-size numbers are kept as their bit patterns, 4 or 8 bytes each.
  template <class Bits>
  void fixeds_read(Span &s, const Field &f, std::vector<Bits> &out) {
    static_assert(std::is_same_v<Bits, uint32_t> || std::is_same_v<Bits, uint64_t>);
    repeated_read(s, f, sizeof(Bits) == 4 ? wire_fixed32 : wire_fixed64,
                  [&](Span &in) { out.push_back(Bits(fixed_read(in, sizeof(Bits)))); });
  }

  // ---- onnx.proto messages ---------------------------------------------------------------------

  OpsetImport opset_read(Span s) {
    OpsetImport opset;
    FrameScope frame(*this, {"OperatorSetIdProto", &opset.domain});
    for (Field f; field_next(s, f);) {
      if (f.number == opset_field::domain)
        opset.domain = string_field_read(s, f);
      else if (f.number == opset_field::version)
        opset.version = int64_t(varint_field_read(s, f));
      else
        field_skip(s, f);
    }
    return opset;
  }

  Graph graph_read(Span s) {
    Graph graph;
    FrameScope frame(*this, {"GraphProto", &graph.name});
    for (Field f; field_next(s, f);) {
      switch (f.number) {
        case graph_field::node:
          graph.nodes.push_back(node_read(message_field_read(s, f), graph.nodes.size()));
          break;
        case graph_field::name: graph.name = string_field_read(s, f); break;
        case graph_field::initializer:
          graph.initializers.push_back(
              tensor_read(message_field_read(s, f), graph.initializers.size()));
          break;
        case graph_field::input:
          graph.inputs.push_back(value_info_read(message_field_read(s, f), graph.inputs.size()));
          break;
        case graph_field::output:
          graph.outputs.push_back(value_info_read(message_field_read(s, f), graph.outputs.size()));
          break;
        case graph_field::value_info:
          graph.value_info.push_back(
              value_info_read(message_field_read(s, f), graph.value_info.size()));
          break;
        // Dropping these would leave nodes reading names that exist nowhere; say so here instead.
        case graph_field::sparse_initializer: fail(f.at, "sparse_initializer is not supported");
        default: field_skip(s, f);
      }
    }
    // Errors later in the compiler name nodes, so every node gets a name.
    for (size_t k = 0; k < graph.nodes.size(); ++k)
      if (graph.nodes[k].name.empty())
        graph.nodes[k].name = graph.nodes[k].op_type + "_" + std::to_string(k);
    return graph;
  }

  Node node_read(Span s, size_t index) {
    Node node;
    FrameScope frame(*this, {"NodeProto", &node.name, index, &node.op_type});
    for (Field f; field_next(s, f);) {
      switch (f.number) {
        case node_field::input: node.inputs.push_back(string_field_read(s, f)); break;
        case node_field::output: node.outputs.push_back(string_field_read(s, f)); break;
        case node_field::name: node.name = string_field_read(s, f); break;
        case node_field::op_type: node.op_type = string_field_read(s, f); break;
        case node_field::domain: node.domain = string_field_read(s, f); break;
        case node_field::attribute:
          node.attributes.push_back(
              attribute_read(message_field_read(s, f), node.attributes.size()));
          break;
        default: field_skip(s, f);
      }
    }
    return node;
  }

  Attribute attribute_read(Span s, size_t index) {
    using K = Attribute::Kind;
    Attribute a;
    FrameScope frame(*this, {"AttributeProto", &a.name, index});
    uint64_t type = 0;
    K seen = K::undefined;  // which value field was present, for files older than the type field
    for (Field f; field_next(s, f);) {
      switch (f.number) {
        case attribute_field::name: a.name = string_field_read(s, f); break;
        case attribute_field::type: type = varint_field_read(s, f); break;
        case attribute_field::f:
          a.f = float_field_read(s, f);
          seen = K::f;
          break;
        case attribute_field::i:
          a.i = int64_t(varint_field_read(s, f));
          seen = K::i;
          break;
        case attribute_field::s:
          a.s = string_field_read(s, f);
          seen = K::s;
          break;
        case attribute_field::t:
          a.t = tensor_read(message_field_read(s, f), SIZE_MAX);
          seen = K::t;
          break;
        case attribute_field::g:
          bytes_field_skip(s, f);
          a.has_graph = true;
          seen = K::g;
          break;
        case attribute_field::floats: {
          std::vector<uint32_t> bits;
          fixeds_read(s, f, bits);
          for (uint32_t b : bits) a.floats.push_back(float_from_bits(b));
          seen = K::floats;
          break;
        }
        case attribute_field::ints:
          varints_read(s, f, a.ints);
          seen = K::ints;
          break;
        case attribute_field::strings:
          a.strings.push_back(string_field_read(s, f));
          seen = K::strings;
          break;
        case attribute_field::tensors:
          a.tensors.push_back(tensor_read(message_field_read(s, f), a.tensors.size()));
          seen = K::tensors;
          break;
        case attribute_field::graphs:
          bytes_field_skip(s, f);
          a.has_graph = true;
          seen = K::graphs;
          break;
        default: field_skip(s, f);
      }
    }
    a.kind = type != 0 ? attribute_kind_from_type(type) : seen;
    return a;
  }

  Tensor tensor_read(Span s, size_t index) {
    Tensor t;
    FrameScope frame(*this, {"TensorProto", &t.name, index});
    const uint8_t *start = s.pos;
    TensorFields fields;
    for (Field f; field_next(s, f);) {
      switch (f.number) {
        case tensor_field::dims: varints_read(s, f, t.dims); break;
        case tensor_field::data_type: t.dtype = DataType(int32_t(varint_field_read(s, f))); break;
        case tensor_field::name: t.name = string_field_read(s, f); break;
        case tensor_field::raw_data: {
          wire_expect(f, wire_bytes);
          Span raw = bytes_read(s);
          fields.raw = raw.pos, fields.raw_size = raw.left(), fields.has_raw = true;
          break;
        }
        case tensor_field::float_data: fixeds_read(s, f, fields.float_bits); break;
        case tensor_field::int32_data: varints_read(s, f, fields.int32s); break;
        case tensor_field::int64_data: varints_read(s, f, fields.int64s); break;
        case tensor_field::double_data: fixeds_read(s, f, fields.double_bits); break;
        case tensor_field::uint64_data: varints_read(s, f, fields.uint64s); break;
        case tensor_field::string_data:
          bytes_field_skip(s, f);
          fields.string_count++;
          break;
        case tensor_field::data_location:
          t.external = varint_field_read(s, f) == 1;
          break;  // 1 = EXTERNAL
        default: field_skip(s, f);
      }
    }
    tensor_data_normalise(t, fields, start);
    return t;
  }

  // Fills t.data with product(dims) little-endian elements from whichever field held them, after
  // checking the count; `at` (the start of the TensorProto) is where errors point.
  void tensor_data_normalise(Tensor &t, TensorFields &fields, const uint8_t *at) {
    uint64_t count = 1;
    for (int64_t d : t.dims) {
      if (d < 0) fail(at, "negative dimension " + std::to_string(d));
      if (__builtin_mul_overflow(count, uint64_t(d), &count))
        fail(at, "dimensions overflow 64 bits");
    }
    if (t.external) return;  // the bytes live in another file; the compiler reports it
    size_t size = element_size(t.dtype);
    if (fields.has_raw) {
      uint64_t bytes;
      if (size != 0 &&
          (__builtin_mul_overflow(count, uint64_t(size), &bytes) || bytes != fields.raw_size))
        fail(at, "raw_data has " + std::to_string(fields.raw_size) + " bytes, dims need " +
                     std::to_string(count) + " x " + std::to_string(size));
      t.data.assign(fields.raw, fields.raw + fields.raw_size);
      return;
    }
    // Which typed field holds each data type: the comments on TensorProto in onnx.proto.
    const char *field = nullptr;
    size_t found = 0;
    auto values_append = [&](const auto &values, const char *name) {
      field = name, found = values.size();
      if (found != count) return;  // reported below
      t.data.reserve(found * size);
      for (auto v : values)
        little_endian_append(t.data, uint64_t(v), size);  // narrower types keep the low bytes
    };
    switch (t.dtype) {
      case DataType::float32: values_append(fields.float_bits, "float_data"); break;
      case DataType::int32:
      case DataType::int16:
      case DataType::uint16:
      case DataType::int8:
      case DataType::uint8:
      case DataType::boolean:
      case DataType::float16:
      case DataType::bfloat16: values_append(fields.int32s, "int32_data"); break;
      case DataType::int64: values_append(fields.int64s, "int64_data"); break;
      case DataType::float64: values_append(fields.double_bits, "double_data"); break;
      case DataType::uint32:
      case DataType::uint64: values_append(fields.uint64s, "uint64_data"); break;
      case DataType::string: field = "string_data", found = fields.string_count; break;  // not kept
      default: return;  // a type the compiler rejects by name; nothing to check here
    }
    if (found != count)
      fail(at, std::string(data_type_name(t.dtype)) + " tensor has " + std::to_string(found) +
                   " values in " + field + " (and no raw_data), dims need " +
                   std::to_string(count));
  }

  ValueInfo value_info_read(Span s, size_t index) {
    ValueInfo v;
    FrameScope frame(*this, {"ValueInfoProto", &v.name, index});
    for (Field f; field_next(s, f);) {
      if (f.number == value_info_field::name)
        v.name = string_field_read(s, f);
      else if (f.number == value_info_field::type)
        type_read(message_field_read(s, f), v);
      else
        field_skip(s, f);
    }
    return v;
  }

  // TypeProto: only tensor types are kept; sequences, maps and optionals leave dtype undefined.
  void type_read(Span s, ValueInfo &v) {
    FrameScope frame(*this, {"TypeProto"});
    for (Field f; field_next(s, f);) {
      if (f.number != type_field::tensor_type) {
        field_skip(s, f);
        continue;
      }
      Span tensor_type = message_field_read(s, f);
      for (Field g; field_next(tensor_type, g);) {
        if (g.number == tensor_type_field::elem_type)
          v.dtype = DataType(int32_t(varint_field_read(tensor_type, g)));
        else if (g.number == tensor_type_field::shape)
          shape_read(message_field_read(tensor_type, g), v);
        else
          field_skip(tensor_type, g);
      }
    }
  }

  void shape_read(Span s, ValueInfo &v) {
    FrameScope frame(*this, {"TensorShapeProto"});
    v.has_shape = true;
    v.dims.clear();
    for (Field f; field_next(s, f);) {
      if (f.number != shape_field::dim) {
        field_skip(s, f);
        continue;
      }
      Span d = message_field_read(s, f);
      Dim dim;
      for (Field g; field_next(d, g);) {
        if (g.number == dim_field::dim_value)
          dim.value = int64_t(varint_field_read(d, g));
        else if (g.number == dim_field::dim_param)
          dim.param = string_field_read(d, g);
        else
          field_skip(d, g);
      }
      v.dims.push_back(std::move(dim));
    }
  }

  const uint8_t *base_;
  size_t size_;
  const std::string &origin_;
  std::vector<Frame> frames_;
};

}  // namespace

const char *data_type_name(DataType t) {
  switch (t) {
    case DataType::undefined: return "undefined";
    case DataType::float32: return "float32";
    case DataType::uint8: return "uint8";
    case DataType::int8: return "int8";
    case DataType::uint16: return "uint16";
    case DataType::int16: return "int16";
    case DataType::int32: return "int32";
    case DataType::int64: return "int64";
    case DataType::string: return "string";
    case DataType::boolean: return "bool";
    case DataType::float16: return "float16";
    case DataType::float64: return "float64";
    case DataType::uint32: return "uint32";
    case DataType::uint64: return "uint64";
    case DataType::bfloat16: return "bfloat16";
  }
  return "unknown";  // complex, float8, 4-bit types, or a corrupt value
}

const Attribute *Node::attr(const std::string &attr_name) const {
  for (const Attribute &a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

int64_t Model::default_opset() const {
  int64_t version = 0;
  for (const OpsetImport &o : opsets)
    if (o.domain.empty() || o.domain == "ai.onnx") version = std::max(version, o.version);
  return version;
}

Model model_parse(const uint8_t *data, size_t size, const std::string &origin) {
  return Parser(data, size, origin).model_read();
}

Model model_load(const std::string &path) {
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);  // also fails for a directory
  if (ec) throw Error(path + ": cannot open ONNX model: " + ec.message());
  std::ifstream file(path, std::ios::binary);
  std::vector<uint8_t> bytes(size);
  if (!file || !file.read(reinterpret_cast<char *>(bytes.data()), std::streamsize(size)))
    throw Error(path + ": cannot read ONNX model: " + std::strerror(errno));
  return model_parse(bytes.data(), bytes.size(), path);
}

}  // namespace capgraph::onnx
