#include "npy.h"

#include <doctest/doctest.h>

#include <cstring>

#include "capture_fixture.h"

using namespace capgraph;

namespace {

std::vector<uint8_t> npy_bytes(const std::string &header_dict, const std::vector<uint8_t> &data,
                               int version = 1) {
  std::string header = header_dict;
  const size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', uint8_t(version), 0};
  const size_t len = header.size();
  out.push_back(uint8_t(len));
  out.push_back(uint8_t(len >> 8));
  if (version != 1) out.push_back(0), out.push_back(0);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string parse_error(const std::vector<uint8_t> &bytes) {
  npy_array a;
  std::string err;
  CHECK_FALSE(npy_parse(bytes.data(), bytes.size(), "x.npy", &a, &err));
  return err;
}

}  // namespace

TEST_CASE("round trip of every dtype and rank") {
  const capgraph_dtype types[] = {CAPGRAPH_F32, CAPGRAPH_F16, CAPGRAPH_F64,
                                  CAPGRAPH_I8,  CAPGRAPH_U8,  CAPGRAPH_I16,
                                  CAPGRAPH_I32, CAPGRAPH_I64, CAPGRAPH_BOOL};
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {1, 2, 3, 4}, {0, 7}};
  for (capgraph_dtype t : types)
    for (const auto &shape : shapes) {
      size_t count = 1;
      for (int64_t d : shape) count *= size_t(d);
      std::vector<uint8_t> data(count * npy_dtype_size(t));
      for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 7 + 1);
      const std::string path = test::temp_path("rt.npy");
      std::string err;
      REQUIRE(npy_write(path, t, shape.data(), int(shape.size()), data.data(), data.size(), &err));
      const std::vector<uint8_t> bytes = test::file_read(path);
      CHECK((10 + size_t(bytes[8])) % 64 == 0);  // data 64-byte aligned, as NumPy writes it
      npy_array a;
      REQUIRE(npy_read(path, &a, &err));
      CHECK(a.dtype == t);
      CHECK(a.shape == shape);
      CHECK(a.data == data);
    }
}

TEST_CASE("headers as NumPy writes them") {
  const std::vector<uint8_t> data = {0, 0, 128, 63, 0, 0, 0, 64};  // 1.0f, 2.0f
  npy_array a;
  std::string err;
  std::vector<uint8_t> bytes =
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data);
  REQUIRE(npy_parse(bytes.data(), bytes.size(), "x.npy", &a, &err));
  CHECK(a.shape == std::vector<int64_t>{2});
  float f[2];
  memcpy(f, a.data.data(), 8);
  CHECK(f[1] == 2.0f);
  bytes = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", data, 2);
  REQUIRE(npy_parse(bytes.data(), bytes.size(), "x.npy", &a, &err));
  CHECK(a.shape == std::vector<int64_t>{1, 2});
  bytes = npy_bytes("{\"descr\": \"|b1\", \"fortran_order\": False, \"shape\": (8,)}", data, 3);
  REQUIRE(npy_parse(bytes.data(), bytes.size(), "x.npy", &a, &err));
  CHECK(a.dtype == CAPGRAPH_BOOL);
  bytes = npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", data);
  REQUIRE(npy_parse(bytes.data(), bytes.size(), "x.npy", &a, &err));
  CHECK(a.shape.empty());
  CHECK(a.data.size() == 4);
}

TEST_CASE("unsupported files are refused with a message") {
  const std::vector<uint8_t> data(64, 0);
  CHECK(parse_error({1, 2, 3}) == "x.npy: not a .npy file (no \\x93NUMPY magic)");
  CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data))
            .find("Fortran order") != std::string::npos);
  CHECK(parse_error(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", data))
            .find("big-endian (>f4)") != std::string::npos);
  CHECK(parse_error(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", data))
            .find("dtype <c8 is not supported") != std::string::npos);
  CHECK(parse_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (100,), }", data))
            .find("truncated data: 64 bytes for 400") != std::string::npos);
  CHECK(parse_error(npy_bytes("{'descr': '<f4', 'shape': (2,), }", data)).find("lacks") !=
        std::string::npos);
  std::vector<uint8_t> cut =
      npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", data);
  cut.resize(30);
  CHECK(parse_error(cut) == "x.npy: truncated .npy header");
  npy_array a;
  std::string err;
  CHECK_FALSE(npy_read("/nonexistent/in.npy", &a, &err));
  CHECK(err.rfind("/nonexistent/in.npy: cannot open", 0) == 0);
}
