// Writes the seed corpora of the fuzz harnesses: small ONNX models covering the common op
// families (made with tests/model_gen), their captures for this CPU (the real compiler), the
// captures of two of them for each GPU target fuzz_gpu_capture replays on a fake (every table
// field written, defaults too, so a byte mutation reaches each fact), and .npy files of every
// dtype. scripts/fuzz.sh runs it before each campaign; the fuzz_regressions test
// runs it and replays the seeds through every harness.
//   fuzz_seeds DIR   ->  DIR/onnx/*.onnx  DIR/capture/*.cap  DIR/gpu/*.cap  DIR/npy/*.npy
#include <sys/stat.h>

#include <cstdio>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "compile.h"
#include "error.h"
#include "npy.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = scale * float(int(i % 7) - 3);
  return v;
}

void bytes_write(const std::string &path, const std::vector<uint8_t> &bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  if (!f) throw std::runtime_error("cannot write " + path);
}

struct model {
  std::string name;
  ModelBuilder b;
};

std::vector<model> models() {
  std::vector<model> out;
  auto add = [&](const std::string &name) -> ModelBuilder & {
    out.push_back({name, ModelBuilder(13)});
    return out.back().b;
  };
  {
    ModelBuilder &b = add("conv_relu");
    b.input("x", DataType::float32, {1, 3, 8, 8});
    b.initializer("w", ramp(4 * 3 * 3 * 3, 0.1f), {4, 3, 3, 3});
    b.initializer("b", ramp(4, 0.5f), {4});
    b.node("Conv", {"x", "w", "b"}, {"c"}, {attr_ints("pads", {1, 1, 1, 1})}).name = "conv1";
    b.node("Relu", {"c"}, {"y"}).name = "relu1";
    b.output("y", DataType::float32, {1, 4, 8, 8});
  }
  {
    ModelBuilder &b = add("mul_add_relu");
    b.input("x", DataType::float32, {2, 3});
    b.input("bias", DataType::float32, {3});
    b.initializer("two", std::vector<float>{2.0f}, {});
    b.node("Mul", {"x", "two"}, {"x2"});
    b.node("Add", {"x2", "bias"}, {"s"});
    b.node("Relu", {"s"}, {"y"});
    b.output("y", DataType::float32, {2, 3});
  }
  {
    ModelBuilder &b = add("gather");
    b.input("x", DataType::float32, {5, 6});
    b.initializer("idx", std::vector<int64_t>{4, 0, 2, 2, 1, 3}, {6});
    b.node("Gather", {"x", "idx"}, {"y"}, {attr_int("axis", 0)});
    b.output("y", DataType::float32, {6, 6});
  }
  {
    ModelBuilder &b = add("resize");
    b.input("x", DataType::float32, {1, 1, 3, 5});
    b.initializer("scales", std::vector<float>{1, 1, 2, 3}, {4});
    b.node("Resize", {"x", "", "scales"}, {"y"}, {attr_string("mode", "nearest")});
    b.output("y", DataType::float32, {1, 1, 6, 15});
  }
  {
    ModelBuilder &b = add("matmul_softmax");
    b.input("x", DataType::float32, {2, 4});
    b.initializer("w", ramp(4 * 3, 0.2f), {4, 3});
    b.node("MatMul", {"x", "w"}, {"m"});
    b.node("Softmax", {"m"}, {"y"}, {attr_int("axis", -1)});
    b.output("y", DataType::float32, {2, 3});
  }
  {
    ModelBuilder &b = add("pool_reduce");
    b.input("x", DataType::float32, {1, 2, 6, 6});
    b.node("MaxPool", {"x"}, {"p"},
           {attr_ints("kernel_shape", {2, 2}), attr_ints("strides", {2, 2})});
    b.node("ReduceMean", {"p"}, {"y"}, {attr_ints("axes", {2, 3}), attr_int("keepdims", 1)});
    b.output("y", DataType::float32, {1, 2, 1, 1});
  }
  {
    ModelBuilder &b = add("reshape_transpose_concat");
    b.input("x", DataType::float32, {2, 6});
    b.initializer("shape", std::vector<int64_t>{3, 4}, {2});
    b.node("Reshape", {"x", "shape"}, {"r"});
    b.node("Transpose", {"r"}, {"t"}, {attr_ints("perm", {1, 0})});
    b.node("Concat", {"t", "t"}, {"y"}, {attr_int("axis", 0)});
    b.output("y", DataType::float32, {8, 3});
  }
  {
    ModelBuilder &b = add("slice_pad_sigmoid");
    b.input("x", DataType::float32, {4, 5});
    b.initializer("starts", std::vector<int64_t>{1, 0}, {2});
    b.initializer("ends", std::vector<int64_t>{3, 4}, {2});
    b.initializer("pads", std::vector<int64_t>{0, 1, 0, 1}, {4});
    b.node("Slice", {"x", "starts", "ends"}, {"s"});
    b.node("Pad", {"s", "pads"}, {"p"});
    b.node("Sigmoid", {"p"}, {"y"});
    b.output("y", DataType::float32, {2, 6});
  }
  return out;
}

// The GPU targets fuzz_gpu_capture replays on a fake, each in a build that carries it: a target
// this build's compiler lacks (no Mesa: no adreno) is said and left out.
void gpu_seeds_write(const std::string &dir, const std::string &name, const std::string &onnx) {
  for (const char *target : {"adreno-a630", "nv-sm90", "amd-gfx1100", "null"}) {
    CompileOptions opt;
    opt.jobs = 1;
    opt.target = target;
    opt.all_fields = true;
    try {
      bytes_write(dir + "/gpu/" + name + "_" + target + ".cap", compile_model(onnx, opt, nullptr));
    } catch (const Error &e) {
      fprintf(stderr, "fuzz_seeds: no %s seed for %s: %s\n", target, name.c_str(), e.what());
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: fuzz_seeds DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  for (const char *sub : {"", "/onnx", "/capture", "/gpu", "/npy"})
    mkdir((dir + sub).c_str(), 0755);
  try {
    for (const model &m : models()) {
      const std::string onnx = dir + "/onnx/" + m.name + ".onnx";
      m.b.save(onnx);
      CompileOptions opt;
      opt.jobs = 1;
      bytes_write(dir + "/capture/" + m.name + ".cap", compile_model(onnx, opt, nullptr));
      if (m.name == "conv_relu") {  // one capture split over two threads too
        opt.threads = 2;
        bytes_write(dir + "/capture/" + m.name + "_t2.cap", compile_model(onnx, opt, nullptr));
      }
      if (m.name == "conv_relu" || m.name == "matmul_softmax") gpu_seeds_write(dir, m.name, onnx);
    }
    const capgraph_dtype dtypes[] = {CAPGRAPH_F32, CAPGRAPH_F16, CAPGRAPH_F64,
                                     CAPGRAPH_I8,  CAPGRAPH_U8,  CAPGRAPH_I16,
                                     CAPGRAPH_I32, CAPGRAPH_I64, CAPGRAPH_BOOL};
    for (capgraph_dtype t : dtypes) {
      const int64_t shape[] = {2, 3};
      std::vector<uint8_t> data(6 * npy_dtype_size(t), 1);
      bytes_write(dir + "/npy/" + std::string(npy_descr(t) + 1) + "_2x3.npy",
                  npy_format(t, shape, 2, data.data(), data.size()));
    }
    const int64_t scalar_shape[] = {0};
    bytes_write(dir + "/npy/scalar.npy", npy_format(CAPGRAPH_F32, scalar_shape, 0, "\0\0\0\0", 4));
    bytes_write(dir + "/npy/empty.npy", npy_format(CAPGRAPH_F32, scalar_shape, 1, "", 0));
  } catch (const std::exception &e) {
    fprintf(stderr, "fuzz_seeds: %s\n", e.what());
    return 1;
  }
  return 0;
}
