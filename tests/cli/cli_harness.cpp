#include "cli_harness.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "npy.h"
#include "onnx_writer.h"

extern char **environ;

namespace capgraph::cli_test {

namespace fs = std::filesystem;
using namespace capgraph::model_gen;

namespace {

// The scratch directory lives as long as the test process.
struct scratch {
  std::string dir;
  scratch() {
    const char *tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/capgraph_cli_test.XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!mkdtemp(buf.data()))
      throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    dir = buf.data();
  }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

scratch &scratch_get() {
  static scratch s;
  return s;
}

}  // namespace

std::string scratch_dir() { return scratch_get().dir; }
std::string scratch_path(const std::string &name) { return scratch_dir() + "/" + name; }

std::vector<uint8_t> file_read(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(bool(f), "cannot read " << path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

void file_write(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  REQUIRE_MESSAGE(bool(f), "cannot write " << path);
}

bool file_exists(const std::string &path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

std::vector<std::string> dir_list(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

cli_result cli_run(const std::vector<std::string> &args, int timeout_ms) {
  std::vector<std::string> argv_s = {CAPGRAPH_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  return process_run(argv_s, timeout_ms);
}

cli_result process_run(const std::vector<std::string> &argv_in, int timeout_ms) {
  static int counter = 0;
  const std::string log = scratch_path("cli_output_" + std::to_string(counter++) + ".log");
  std::vector<std::string> argv_s = argv_in;
  std::vector<char *> argv;
  for (std::string &s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  REQUIRE_MESSAGE(rc == 0, "cannot start " << argv[0] << ": " << std::strerror(rc));

  cli_result r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status) && !r.timed_out) r.signal = WTERMSIG(status);
  const std::vector<uint8_t> text = file_read(log);
  r.output.assign(text.begin(), text.end());
  fs::remove(log);
  return r;
}

std::string crash_sign(const cli_result &r) {
  if (r.timed_out) return "timed out";
  if (r.signal) return std::string("killed by signal ") + strsignal(r.signal);
  for (const char *s :
       {"terminate called", "AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
        "runtime error:", "Segmentation fault", "Assertion", "Aborted", "core dumped", "LLVM ERROR",
        "PLEASE submit a bug report", "Stack dump"})
    if (r.output.find(s) != std::string::npos) return std::string("output contains '") + s + "'";
  return "";
}

void check_clean_failure(const cli_result &r, const std::vector<std::string> &mentions) {
  INFO("output: ", r.output);
  CHECK_MESSAGE(crash_sign(r).empty(), crash_sign(r));
  CHECK(r.exit_code != 0);
  CHECK(r.exit_code != -1);
  // One message a person can act on, not a usage dump or an empty line.
  CHECK(r.output.find("error") != std::string::npos);
  for (const std::string &m : mentions)
    CHECK_MESSAGE(r.output.find(m) != std::string::npos,
                  "the message should mention '" << m << "'");
}

void check_success(const cli_result &r) {
  INFO("output: ", r.output);
  CHECK_MESSAGE(crash_sign(r).empty(), crash_sign(r));
  CHECK(r.exit_code == 0);
}

namespace {

std::string model_save(const std::string &name, const ModelBuilder &b) {
  const std::string path = scratch_path(name);
  if (!file_exists(path)) b.save(path);
  return path;
}

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i % 7) - 3);
  return v;
}

std::string capture_compile(const std::string &onnx, const std::string &name) {
  const std::string path = scratch_path(name);
  if (file_exists(path)) return path;
  const cli_result r = cli_run({"compile", onnx, "-o", path});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return path;
}

}  // namespace

std::string model_conv_relu() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {1, 3, 8, 8});
  b.initializer("w", ramp(4 * 3 * 3 * 3, 0.1f), {4, 3, 3, 3});
  b.initializer("b", ramp(4, 0.5f), {4});
  b.node("Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv1";
  b.node("Relu", {"c"}, {"y"}).name = "relu1";
  b.output("y", DataType::float32, {1, 4, 8, 8});
  return model_save("conv_relu.onnx", b);
}

std::string model_mul_add() {
  ModelBuilder b(13);
  b.input("x", DataType::float32, {2, 3});
  b.input("bias", DataType::float32, {3});
  b.initializer("two", std::vector<float>{2.0f}, {});
  b.node("Mul", {"x", "two"}, {"x2"}).name = "mul1";
  b.node("Add", {"x2", "bias"}, {"s"}).name = "add1";
  b.node("Relu", {"s"}, {"y"}).name = "relu1";
  b.output("y", DataType::float32, {2, 3});
  return model_save("mul_add.onnx", b);
}

std::string model_unsupported() {
  ModelBuilder b(13);
  b.input("boxes", DataType::float32, {1, 4, 4});
  b.input("scores", DataType::float32, {1, 1, 4});
  b.input("max", DataType::int64, {1});
  b.node("NonMaxSuppression", {"boxes", "scores", "max"}, {"selected"}).name = "nms_1";
  b.output("selected", DataType::int64);
  return model_save("unsupported.onnx", b);
}

std::string model_dynamic() {
  ModelBuilder b(13);
  onnx::ValueInfo in;
  in.name = "images";
  in.dtype = DataType::float32;
  in.has_shape = true;
  in.dims = {{-1, "batch"}, {3, ""}, {-1, "height"}, {-1, "width"}};
  b.input(in);
  b.node("Relu", {"images"}, {"y"}).name = "relu1";
  b.output("y", DataType::float32);
  return model_save("dynamic.onnx", b);
}

std::string capture_conv_relu() { return capture_compile(model_conv_relu(), "conv_relu.cap"); }
std::string capture_mul_add() { return capture_compile(model_mul_add(), "mul_add.cap"); }

std::string npy_f32(const std::string &name, const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v = ramp(size_t(n), 0.25f);
  const std::string path = scratch_path(name);
  std::string err;
  REQUIRE_MESSAGE(
      npy_write(path, CAPGRAPH_F32, shape.data(), int(shape.size()), v.data(), v.size() * 4, &err),
      err);
  return path;
}

}  // namespace capgraph::cli_test
