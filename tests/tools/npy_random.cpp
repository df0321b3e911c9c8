// npy_random OUT.npy 1x3x224x224 [SEED] [float32|uint8|int64]
// Writes a reproducible random tensor (float32 uniform in [-1, 1), uint8 in [0, 255], int64 in
// [0, 10)) for conformance runs that feed the same input to capgraph and ONNX Runtime.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "npy.h"

using namespace capgraph;

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: npy_random OUT.npy DxDx... [SEED] [float32|uint8|int64]\n");
    return 2;
  }
  std::vector<int64_t> shape;
  size_t n = 1;
  for (char *p = argv[2]; *p;) {
    char *end;
    long d = std::strtol(p, &end, 10);
    if (end == p || d < 0) {
      std::fprintf(stderr, "npy_random: bad shape '%s'\n", argv[2]);
      return 2;
    }
    shape.push_back(d);
    n *= (size_t)d;
    p = *end ? end + 1 : end;
  }
  std::mt19937 rng(argc > 3 ? (unsigned)std::atoi(argv[3]) : 1);
  std::string type = argc > 4 ? argv[4] : "float32";
  std::vector<uint8_t> bytes;
  capgraph_dtype dt;
  if (type == "uint8") {
    dt = CAPGRAPH_U8;
    for (size_t i = 0; i < n; i++) bytes.push_back(rng() & 255);
  } else if (type == "int64") {
    dt = CAPGRAPH_I64;
    bytes.resize(n * 8);
    for (size_t i = 0; i < n; i++) {
      int64_t v = rng() % 10;
      std::memcpy(&bytes[i * 8], &v, 8);
    }
  } else {
    dt = CAPGRAPH_F32;
    std::uniform_real_distribution<float> u(-1, 1);
    bytes.resize(n * 4);
    for (size_t i = 0; i < n; i++) {
      float v = u(rng);
      std::memcpy(&bytes[i * 4], &v, 4);
    }
  }
  std::string err;
  if (!npy_write(argv[1], dt, shape.data(), (int)shape.size(), bytes.data(), bytes.size(), &err)) {
    std::fprintf(stderr, "npy_random: %s\n", err.c_str());
    return 1;
  }
  return 0;
}
