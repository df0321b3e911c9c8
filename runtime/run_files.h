// What `capgraph run` and `capgraph-run` share: binding input .npy files to a loaded model,
// naming the output files, creating the output directory, and the tolerance outputs are compared
// with. One definition, so the two front ends cannot drift apart.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "capgraph_runtime.h"

namespace capgraph {

// Outputs match a reference when max |out - ref| <= k_output_rel_tol * max |ref| +
// k_output_abs_tol (tests/tools/npy_compare, the capture's reference samples).
constexpr double k_output_rel_tol = 1e-3;
constexpr double k_output_abs_tol = 1e-5;

// "2x3", or "scalar" for rank 0.
std::string shape_text(const int64_t *shape, int rank);

// Reads each NAME=FILE.npy into the model's input NAME, checking its dtype and shape. Every input
// must be given unless `allow_missing` (the caller fills the rest). false with *err naming the
// model or the file, the input, and what was expected.
bool inputs_bind(capgraph_model *m, const std::string &model_path,
                 const std::vector<std::pair<std::string, std::string>> &inputs, bool allow_missing,
                 std::string *err);

// The file an output is written to: its name with every character outside [A-Za-z0-9._-]
// replaced by '_', then ".npy".
std::string output_file_name(const char *output_name);

// Makes sure `dir` is a directory outputs can go to, creating it when it is missing (its parent
// must exist: a mistyped path is not silently built). false with *err naming it.
bool output_dir_create(const std::string &dir, std::string *err);

}  // namespace capgraph
