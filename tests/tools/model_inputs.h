// Inputs for the measuring tools (replay_overhead, replay_rss): each input from a NAME=FILE.npy
// argument, or seeded values when none is given (float: uniform in [-1, 1); other types: zero),
// so every replay computes on the same numbers.
#pragma once
#include <string>
#include <vector>

#include "capgraph_runtime.h"

namespace capgraph {

// Writes every input of `m`. `files` holds "NAME=FILE.npy" arguments. On failure returns false
// with *err naming the input or file.
bool model_inputs_fill(capgraph_model *m, const std::vector<std::string> &files, std::string *err);

}  // namespace capgraph
