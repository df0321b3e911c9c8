// `capgraph run` with bad inputs and outputs: missing or unknown inputs, wrong shapes and dtypes,
// files that are not .npy or not in C order, an output directory that cannot be written.
// The model is mul_add.onnx (inputs x f32 2x3 and bias f32 3, output y).
#include <doctest/doctest.h>

#include <cstring>

#include "cli_harness.h"
#include "npy.h"

using namespace capgraph;
using namespace capgraph::cli_test;

namespace {

// An .npy file with the given header dictionary and `data_bytes` zero bytes of data.
std::string npy_raw(const std::string &name, const std::string &dict, size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  const std::string file = std::string("\x93NUMPY\x01\x00", 8) + char(header.size() & 255) +
                           char(header.size() >> 8) + header;
  std::vector<uint8_t> bytes(file.begin(), file.end());
  bytes.resize(bytes.size() + data_bytes, 0);
  const std::string path = scratch_path(name);
  file_write(path, bytes);
  return path;
}

std::string npy_typed(const std::string &name, capgraph_dtype t,
                      const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<uint8_t> data(size_t(n) * npy_dtype_size(t), 0);
  const std::string path = scratch_path(name);
  std::string err;
  REQUIRE_MESSAGE(
      npy_write(path, t, shape.data(), int(shape.size()), data.data(), data.size(), &err), err);
  return path;
}

std::string x_ok() { return npy_f32("x_2x3.npy", {2, 3}); }
std::string bias_ok() { return npy_f32("bias_3.npy", {3}); }

}  // namespace

TEST_CASE("run: the good case writes y.npy (the baseline)") {
  const std::string out = scratch_path("run_ok_out");
  check_success(cli_run({"run", capture_mul_add(), "--input", "x=" + x_ok(), "--input",
                         "bias=" + bias_ok(), "--output-dir", out}));
  npy_array y;
  std::string err;
  REQUIRE_MESSAGE(npy_read(out + "/y.npy", &y, &err), err);
  CHECK(y.shape == std::vector<int64_t>{2, 3});
}

TEST_CASE("run: a missing input is an error naming it, its dtype and shape") {
  const std::string cap = capture_mul_add();
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + x_ok()}),
                      {cap, "missing input 'bias'", "<f4", "3", "--input bias="});
  check_clean_failure(cli_run({"run", cap}), {cap, "missing input 'x'"});
}

TEST_CASE("run: an unknown input name lists the model's inputs") {
  const std::string cap = capture_mul_add();
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + x_ok(), "--input", "bias=" + bias_ok(),
                               "--input", "nosuch=" + bias_ok()}),
                      {"no input 'nosuch'", "x, bias"});
  check_clean_failure(cli_run({"run", cap, "--input", "x"}), {"--input", "NAME=FILE.npy"});
  check_clean_failure(cli_run({"run", cap, "--input", "=foo.npy"}), {"--input"});
}

TEST_CASE("run: wrong input shapes are named with the expected and given shape") {
  const std::string cap = capture_mul_add();
  const std::string t = npy_f32("x_3x2.npy", {3, 2});
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + t, "--input", "bias=" + bias_ok()}),
                      {t, "'x'", "2x3", "3x2"});
  const std::string r1 = npy_f32("x_6.npy", {6});
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + r1, "--input", "bias=" + bias_ok()}),
                      {r1, "'x'", "2x3"});
  const std::string s = npy_f32("x_scalar.npy", {});
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + s, "--input", "bias=" + bias_ok()}),
                      {s, "scalar"});
  const std::string e = npy_f32("x_0x3.npy", {0, 3});
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + e, "--input", "bias=" + bias_ok()}),
                      {e, "0x3"});
}

TEST_CASE("run: wrong input dtypes are named with the expected and given type") {
  const std::string cap = capture_mul_add();
  for (capgraph_dtype t :
       {CAPGRAPH_F64, CAPGRAPH_F16, CAPGRAPH_I64, CAPGRAPH_I32, CAPGRAPH_U8, CAPGRAPH_BOOL}) {
    CAPTURE(npy_descr(t));
    const std::string f = npy_typed(std::string("x_") + std::to_string(int(t)) + ".npy", t, {2, 3});
    check_clean_failure(cli_run({"run", cap, "--input", "x=" + f, "--input", "bias=" + bias_ok()}),
                        {f, "'x'", "<f4", npy_descr(t)});
  }
}

TEST_CASE("run: input files that are not usable .npy are named") {
  const std::string cap = capture_mul_add();
  auto with_x = [&](const std::string &f) {
    return cli_run({"run", cap, "--input", "x=" + f, "--input", "bias=" + bias_ok()});
  };
  const std::string text = scratch_path("not_npy.npy");
  file_write(text, {'h', 'e', 'l', 'l', 'o', '\n'});
  check_clean_failure(with_x(text), {text, "not a .npy"});
  const std::string empty = scratch_path("empty.npy");
  file_write(empty, {});
  check_clean_failure(with_x(empty), {empty});
  const std::string missing = scratch_path("missing.npy");
  check_clean_failure(with_x(missing), {missing});
  check_clean_failure(with_x(scratch_dir()), {scratch_dir()});
  const std::string fortran =
      npy_raw("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24);
  check_clean_failure(with_x(fortran), {fortran, "Fortran"});
  const std::string big_endian =
      npy_raw("big_endian.npy", "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", 24);
  check_clean_failure(with_x(big_endian), {big_endian, "big-endian"});
  const std::string short_data =
      npy_raw("short_data.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 20);
  check_clean_failure(with_x(short_data), {short_data, "truncated"});
  const std::string huge = npy_raw(
      "huge_shape.npy",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999, 99999999999999), }", 24);
  check_clean_failure(with_x(huge), {huge});
  const std::string no_shape =
      npy_raw("no_shape.npy", "{'descr': '<f4', 'fortran_order': False, }", 24);
  check_clean_failure(with_x(no_shape), {no_shape});
  const std::string strings =
      npy_raw("strings.npy", "{'descr': '<U5', 'fortran_order': False, 'shape': (2, 3), }", 120);
  check_clean_failure(with_x(strings), {strings, "<U5"});
}

TEST_CASE("run: an --output-dir that cannot be written is named") {
  const std::string cap = capture_mul_add();
  const std::string file = scratch_path("output_dir_is_a_file");
  file_write(file, {'x'});
  const cli_result r = cli_run(
      {"run", cap, "--input", "x=" + x_ok(), "--input", "bias=" + bias_ok(), "--output-dir", file});
  check_clean_failure(r, {file, "cannot write"});
  CHECK(file_read(file) == std::vector<uint8_t>{'x'});
  const std::string under_file = file + "/sub/dir";
  check_clean_failure(cli_run({"run", cap, "--input", "x=" + x_ok(), "--input", "bias=" + bias_ok(),
                               "--output-dir", under_file}),
                      {under_file, file + " is not a directory"});
  CHECK(file_read(file) == std::vector<uint8_t>{'x'});
}

TEST_CASE("run: a nested --output-dir is created whole, as mkdir -p does") {
  const std::string cap = capture_mul_add();
  const std::string deep = scratch_path("no/such/dir");
  const cli_result r = cli_run(
      {"run", cap, "--input", "x=" + x_ok(), "--input", "bias=" + bias_ok(), "--output-dir", deep});
  check_success(r);
  CHECK(file_exists(deep + "/y.npy"));
}

TEST_CASE("run: bad options") {
  const std::string cap = capture_mul_add();
  check_clean_failure(cli_run({"run", cap, "--random-inputs", "-3"}), {"--random-inputs"});
  check_clean_failure(cli_run({"run", cap, "--threads", "999"}), {"--threads"});
  check_clean_failure(cli_run({"run", cap, "--device", "tpu"}), {"tpu"});
  check_clean_failure(cli_run({"run", cap, "--outputdir", "x"}), {"--outputdir"});
  check_success(cli_run({"run", cap, "--random-inputs", "5"}));
}
