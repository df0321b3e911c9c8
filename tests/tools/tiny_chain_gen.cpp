// tiny_chain_gen DIR [LAYERS] [WIDTH] [ROWS]
// Writes the "many tiny kernels" model of issue 3's replay-overhead item: a chain of LAYERS
// (default 200) layers h = tanh(h · W_i) on a ROWS x WIDTH (default 1 x 16) matrix. Each MatMul is
// a product of two operands, so no two layers fuse (the Tanh fuses into its MatMul): the capture
// has one small launch per layer and almost no work in each, so replaying it measures the runtime's
// per-step cost. Also writes a seeded input and the expected output, computed here in double
// precision (independently of capgraph and ONNX Runtime):
//   DIR/tiny_chain.onnx  DIR/input.npy (name "x")  DIR/expected.npy (name "y")
// Each W_i is a random orthogonal matrix: a layer keeps its input's length and tanh shrinks it
// only slowly, so after 200 layers the output is still far from 0, and an error in any layer
// reaches it (neither amplified nor damped away). How many rows make one unit of a kernel's work
// (what threads share) is the compiler's choice: today 1x16 is one unit (a kernel no thread can
// share) and 8x16 two; the test and scripts/bench.sh use those two.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "npy.h"
#include "onnx_writer.h"

using namespace capgraph;
using namespace capgraph::model_gen;

namespace {

// A random orthogonal n x n matrix: Gram-Schmidt on Gaussian columns (kept as columns of W).
std::vector<float> orthogonal_random(int n, std::mt19937 *rng) {
  std::normal_distribution<double> normal;
  const size_t m = size_t(n);
  std::vector<double> q(m * m);  // q[c * m + r]: column c
  for (size_t c = 0; c < m; ++c) {
    double *col = &q[c * m];
    for (;;) {
      for (size_t r = 0; r < m; ++r) col[r] = normal(*rng);
      for (size_t p = 0; p < c; ++p) {
        double dot = 0;
        for (size_t r = 0; r < m; ++r) dot += col[r] * q[p * m + r];
        for (size_t r = 0; r < m; ++r) col[r] -= dot * q[p * m + r];
      }
      double norm = 0;
      for (size_t r = 0; r < m; ++r) norm += col[r] * col[r];
      if (norm > 1e-6) {  // a draw (nearly) inside the span of the others is drawn again
        for (size_t r = 0; r < m; ++r) col[r] /= std::sqrt(norm);
        break;
      }
    }
  }
  std::vector<float> w(m * m);  // row-major [in, out]
  for (size_t r = 0; r < m; ++r)
    for (size_t c = 0; c < m; ++c) w[r * m + c] = float(q[c * m + r]);
  return w;
}

int count_arg(const char *s, const char *what, int lo, int hi) {
  char *end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) {
    std::fprintf(stderr, "tiny_chain_gen: %s must be %d to %d, not '%s'\n", what, lo, hi, s);
    std::exit(2);
  }
  return int(v);
}

bool npy_save(const std::string &path, const std::vector<float> &v, int64_t rows) {
  const int64_t shape[2] = {rows, int64_t(v.size()) / rows};
  std::string err;
  if (!npy_write(path, CAPGRAPH_F32, shape, 2, v.data(), v.size() * sizeof(float), &err)) {
    std::fprintf(stderr, "tiny_chain_gen: %s\n", err.c_str());
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 5) {
    std::fprintf(stderr, "usage: tiny_chain_gen DIR [LAYERS] [WIDTH] [ROWS]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int layers = argc > 2 ? count_arg(argv[2], "LAYERS", 1, 100000) : 200;
  const int width = argc > 3 ? count_arg(argv[3], "WIDTH", 1, 4096) : 16;
  const int rows = argc > 4 ? count_arg(argv[4], "ROWS", 1, 4096) : 1;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    std::fprintf(stderr, "tiny_chain_gen: cannot create %s: %s\n", dir.c_str(),
                 ec.message().c_str());
    return 1;
  }

  std::mt19937 rng(20261122);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> x(size_t(rows) * size_t(width), 0.0f);
  for (float &v : x) v = value(rng);

  ModelBuilder b(13);
  b.input("x", DataType::float32, {rows, width});
  std::vector<double> h(x.begin(), x.end()), next(h.size());
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    const std::vector<float> w = orthogonal_random(width, &rng);
    const std::string id = std::to_string(i);
    b.initializer("w" + id, w, {width, width});
    const std::string out = i + 1 == layers ? "y" : "h" + id;
    b.node("MatMul", {prev, "w" + id}, {"m" + id}).name = "matmul" + id;
    b.node("Tanh", {"m" + id}, {out}).name = "tanh" + id;
    prev = out;
    // The reference: each row times W (W is [in, out], row-major).
    for (size_t r = 0; r < size_t(rows); ++r)
      for (size_t o = 0; o < size_t(width); ++o) {
        double s = 0;
        for (size_t k = 0; k < size_t(width); ++k)
          s += h[r * size_t(width) + k] * double(w[k * size_t(width) + o]);
        next[r * size_t(width) + o] = std::tanh(s);
      }
    h.swap(next);
  }
  b.output("y", DataType::float32, {rows, width});

  try {
    b.save(dir + "/tiny_chain.onnx");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "tiny_chain_gen: %s\n", e.what());
    return 1;
  }
  const std::vector<float> y(h.begin(), h.end());
  if (!npy_save(dir + "/input.npy", x, rows) || !npy_save(dir + "/expected.npy", y, rows)) return 1;
  std::printf("%s/tiny_chain.onnx: %d MatMul+Tanh layers on %dx%d\n", dir.c_str(), layers, rows,
              width);
  return 0;
}
