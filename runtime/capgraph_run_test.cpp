// capgraph-run as a user runs it: a capture and .npy inputs in, .npy outputs and timing out,
// and a non-zero exit with a message for every mistake.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "capture_fixture.h"
#include "npy.h"

using namespace capgraph;

namespace {

struct result {
  int exit_code;
  std::string output;  // stdout and stderr
};

result capgraph_run_exec(const std::string &args) {
  const std::string log = test::temp_path("run.log");
  const std::string cmd = std::string(CAPGRAPH_RUN_COMMAND) + " " + args + " > " + log + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::vector<uint8_t> text = test::file_read(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::string(text.begin(), text.end())};
}

std::string npy_save(const char *name, const std::vector<float> &v, std::vector<int64_t> shape) {
  const std::string path = test::temp_path(name);
  std::string err;
  REQUIRE(
      npy_write(path, CAPGRAPH_F32, shape.data(), int(shape.size()), v.data(), v.size() * 4, &err));
  return path;
}

std::vector<float> npy_floats(const std::string &path, std::vector<int64_t> *shape) {
  npy_array a;
  std::string err;
  INFO(err);
  REQUIRE(npy_read(path, &a, &err));
  *shape = a.shape;
  std::vector<float> v(a.data.size() / 4);
  memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

}  // namespace

TEST_CASE("capgraph-run replays a capture and writes every output") {
  const std::string model = test::temp_path("model.cap");
  test::file_write(model, test::capture_build(test::reference_spec(2)));
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  const std::string a_path = npy_save("a.npy", a, {test::k_reference_n});
  const std::string b_path = npy_save("b.npy", b, {test::k_reference_n});
  const std::string out_dir = test::temp_path("out");
  REQUIRE(std::system(("mkdir -p " + out_dir).c_str()) == 0);

  for (const char *threads : {"1", "2", "3"}) {
    const result r =
        capgraph_run_exec(model + " --input a=" + a_path + " --input b=" + b_path +
                          " --output-dir " + out_dir + " --threads " + threads + " --runs 5");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(r.output.find("5 runs: median ") != std::string::npos);
    // "y:0" and "rows/r" are file names with the characters outside [A-Za-z0-9._-] replaced.
    CHECK(r.output.find("output rows/r -> " + out_dir + "/rows_r.npy") != std::string::npos);
    std::vector<int64_t> shape;
    const test::reference_outputs want =
        test::reference_expected(a, b, test::reference_weight(test::k_reference_n));
    const std::vector<float> y = npy_floats(out_dir + "/y_0.npy", &shape);
    CHECK(shape == std::vector<int64_t>{test::k_reference_n});
    for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == doctest::Approx(want.y[i]).epsilon(1e-5));
    CHECK(npy_floats(out_dir + "/z.npy", &shape) == b);
    npy_floats(out_dir + "/rows_r.npy", &shape);
    CHECK(shape == std::vector<int64_t>{test::k_reference_n / 4, 4});
  }
}

TEST_CASE("capgraph-run creates a missing --output-dir, as capgraph run does") {
  // It used to fail with "cannot create" for a directory that did not exist yet.
  const std::string model = test::temp_path("model_newdir.cap");
  test::file_write(model, test::capture_build(test::reference_spec(1)));
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  const std::string a_path = npy_save("a.npy", a, {test::k_reference_n});
  const std::string b_path = npy_save("b.npy", b, {test::k_reference_n});
  const std::string out_dir = test::temp_path("new_out_dir");
  REQUIRE(std::system(("rm -rf " + out_dir).c_str()) == 0);
  const result r = capgraph_run_exec(model + " --input a=" + a_path + " --input b=" + b_path +
                                     " --output-dir " + out_dir + "/");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<int64_t> shape;
  CHECK(npy_floats(out_dir + "/z.npy", &shape) == b);
  // Missing parents are built too, as mkdir -p does.
  const std::string top = test::temp_path("no_such_parent");
  REQUIRE(std::system(("rm -rf " + top).c_str()) == 0);
  const std::string deep = top + "/a/b";
  const result nested = capgraph_run_exec(model + " --input a=" + a_path + " --input b=" + b_path +
                                          " --output-dir " + deep);
  INFO(nested.output);
  CHECK(nested.exit_code == 0);
  CHECK(npy_floats(deep + "/z.npy", &shape) == b);
  // A level that is a file: the message names it, nothing is written.
  const std::string blocked = top + "/a/b/z.npy/c";
  const result bad = capgraph_run_exec(model + " --input a=" + a_path + " --input b=" + b_path +
                                       " --output-dir " + blocked);
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find(blocked + ": cannot write outputs there: " + top +
                        "/a/b/z.npy is not a directory") != std::string::npos);
}

TEST_CASE("capgraph-run refuses mistakes with a message") {
  const std::string model = test::temp_path("model.cap");
  test::file_write(model, test::capture_build(test::reference_spec(1)));
  std::vector<float> a, b;
  test::reference_inputs(test::k_reference_n, &a, &b);
  const std::string a_path = npy_save("a.npy", a, {test::k_reference_n});
  const std::string wrong = npy_save("wrong.npy", a, {test::k_reference_n / 2, 2});

  result r = capgraph_run_exec(model + " --input a=" + a_path);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("missing input 'b' (<f4 1000): pass --input b=FILE.npy") !=
        std::string::npos);

  r = capgraph_run_exec(model + " --input a=" + a_path + " --input b=" + wrong);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("input 'b' must be <f4 1000 but the file holds <f4 500x2") !=
        std::string::npos);

  r = capgraph_run_exec(model + " --input c=" + a_path);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("the model has no input 'c'") != std::string::npos);

  r = capgraph_run_exec(model + " --input a=/nonexistent.npy");
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("/nonexistent.npy: cannot open") != std::string::npos);

  r = capgraph_run_exec(model + " --frobnicate");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("usage:") != std::string::npos);
  CHECK(capgraph_run_exec(model + " --threads 0").exit_code == 2);
  CHECK(capgraph_run_exec("").exit_code == 2);

  const std::string junk = test::temp_path("junk.cap");
  test::file_write(junk, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  r = capgraph_run_exec(junk);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find(junk + ": not a capture file") != std::string::npos);
}

TEST_CASE("the shared library works from Python ctypes (ctypes_example.py)") {
  // A sanitized .so cannot be loaded into an uninstrumented python3.
  if (CAPGRAPH_TEST_CROSSCOMPILING || CAPGRAPH_TEST_SANITIZE ||
      std::system("python3 -c pass 2>/dev/null") != 0) {
    MESSAGE("skipped: cross-compiled, sanitized, or no python3");
    return;
  }
  const std::string model = test::temp_path("model.cap");
  test::file_write(model, test::capture_build(test::reference_spec(2)));
  for (const char *threads : {"0", "1", "3"}) {
    const result r = [&] {
      const std::string log = test::temp_path("py.log");
      const std::string cmd = std::string("python3 ") + CAPGRAPH_RUNTIME_SOURCE_DIR +
                              "/ctypes_example.py " + CAPGRAPH_RUNTIME_SO + " " + model + " " +
                              threads + " > " + log + " 2>&1";
      const int status = std::system(cmd.c_str());
      const std::vector<uint8_t> text = test::file_read(log);
      return result{WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                    std::string(text.begin(), text.end())};
    }();
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("output z [1000] 0.5 0.5 0.5 0.5") != std::string::npos);
    CHECK(r.output.find("output rows/r [250, 4] ") != std::string::npos);
  }
}
