// npy_compare ACTUAL.npy REFERENCE.npy [REL_TOL]
// Compares two .npy files the way the conformance suite does: same dtype and shape, and
// max |a - b| <= REL_TOL * max |ref| + k_output_abs_tol (REL_TOL defaults to k_output_rel_tol,
// runtime/run_files.h: 1e-3 and 1e-5). Prints the figures;
// exits 0 when they match, 1 when they do not, 2 when a file cannot be read.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "npy.h"
#include "run_files.h"

using namespace capgraph;

static double element(const npy_array &a, size_t i) {
  const uint8_t *p = a.data.data();
  switch (a.dtype) {
    case CAPGRAPH_F32: return ((const float *)p)[i];
    case CAPGRAPH_F64: return ((const double *)p)[i];
    case CAPGRAPH_I64: return (double)((const int64_t *)p)[i];
    case CAPGRAPH_I32: return ((const int32_t *)p)[i];
    case CAPGRAPH_U8:
    case CAPGRAPH_BOOL: return p[i];
    case CAPGRAPH_I8: return ((const int8_t *)p)[i];
    default: return NAN;
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: npy_compare ACTUAL.npy REFERENCE.npy [REL_TOL]\n");
    return 2;
  }
  double rel = argc > 3 ? std::atof(argv[3]) : capgraph::k_output_rel_tol;
  npy_array a, r;
  std::string err;
  if (!npy_read(argv[1], &a, &err) || !npy_read(argv[2], &r, &err)) {
    std::fprintf(stderr, "npy_compare: %s\n", err.c_str());
    return 2;
  }
  if (a.dtype != r.dtype || a.shape != r.shape) {
    std::printf("MISMATCH %s: dtype/shape differ (%s vs %s)\n", argv[1], npy_descr(a.dtype),
                npy_descr(r.dtype));
    return 1;
  }
  size_t n = a.data.size() / npy_dtype_size(a.dtype);
  double max_diff = 0, max_ref = 0;
  size_t worst = 0;
  bool nan_mismatch = false;
  for (size_t i = 0; i < n; i++) {
    double x = element(a, i), y = element(r, i);
    if (std::isnan(x) != std::isnan(y)) nan_mismatch = true;
    if (std::isnan(x) || std::isnan(y)) continue;
    double d = std::fabs(x - y);
    if (d > max_diff) {
      max_diff = d;
      worst = i;
    }
    max_ref = std::max(max_ref, std::fabs(y));
  }
  bool ok = !nan_mismatch && max_diff <= rel * max_ref + capgraph::k_output_abs_tol;
  std::printf("%s %s: %zu elements, max |a-b| = %.3g (at %zu), max |ref| = %.3g, allowed %.3g\n",
              ok ? "MATCH" : "MISMATCH", argv[1], n, max_diff, worst, max_ref,
              rel * max_ref + capgraph::k_output_abs_tol);
  return ok ? 0 : 1;
}
