// Runs the built `capgraph` binary the way a user does and judges how it failed. Shared by the
// bad-input suites in this folder (see README.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::cli_test {

struct cli_result {
  int exit_code = -1;      // valid when the process exited
  int signal = 0;          // the signal that ended it, or 0
  bool timed_out = false;  // killed after the timeout
  std::string output;      // stdout and stderr, interleaved as written
};

// Runs `capgraph args...` with a wall-clock limit; the child is killed when it runs past it.
cli_result cli_run(const std::vector<std::string> &args, int timeout_ms = 30000);
// Runs any program the same way: argv[0] is its path.
cli_result process_run(const std::vector<std::string> &argv, int timeout_ms);

// A crash or sanitizer report in the result: "" when there is none, else what was seen.
std::string crash_sign(const cli_result &r);

// The command failed the way the standard asks: it exited (no signal, no timeout) with a non-zero
// status, printed no crash or sanitizer report, and its message contains every `mentions` string.
void check_clean_failure(const cli_result &r, const std::vector<std::string> &mentions);
// The command exited 0 without a crash report.
void check_success(const cli_result &r);

// A fresh directory for this process (removed at exit) and paths inside it.
std::string scratch_dir();
std::string scratch_path(const std::string &name);

std::vector<uint8_t> file_read(const std::string &path);
void file_write(const std::string &path, const std::vector<uint8_t> &bytes);
bool file_exists(const std::string &path);
// Names of the entries of a directory, sorted.
std::vector<std::string> dir_list(const std::string &dir);

// Test models, written into the scratch directory once and returned by path.
//   conv_relu.onnx  x f32 1x3x8x8 -> Conv(4x3x3x3, pads 1) 'conv1' -> Relu 'relu1' -> y
//   mul_add.onnx    x f32 2x3, bias f32 3 -> y = Relu(x * 2 + bias)
//   unsupported.onnx  boxes, scores, max -> NonMaxSuppression node 'nms_1' (refused: its
//                     max_output_boxes_per_class is a run-time input, the output bound needs it)
//   dynamic.onnx    images f32 [batch, 3, height, width] -> Relu -> y
std::string model_conv_relu();
std::string model_mul_add();
std::string model_unsupported();
std::string model_dynamic();
// conv_relu.onnx compiled for this machine (`capgraph compile`), and its bytes.
std::string capture_conv_relu();
// mul_add.onnx compiled for this machine.
std::string capture_mul_add();

// An .npy file of float32 values.
std::string npy_f32(const std::string &name, const std::vector<int64_t> &shape);

}  // namespace capgraph::cli_test
