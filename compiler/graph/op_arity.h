// How many inputs and outputs each supported ONNX op takes: one table, checked for every node at
// import, so that no op definition (schedule/lower_*.cpp) ever sees a node missing an input it
// reads or an output it types. Each op in the lowering table has a row here (a test checks).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace capgraph {

struct OpArity {
  const char *op;
  int min_inputs;       // inputs 0..min_inputs-1 must be present (non-empty names)
  int max_inputs;       // -1: variadic
  int max_outputs;      // output 0 is always required
  int since_opset = 0;  // from this opset on, min_inputs_since applies instead (0: never)
  int min_inputs_since = 0;
};

// The row for `op`, or nullptr for ops capgraph does not support.
const OpArity *op_arity_find(const std::string &op);
// Every row (for tests).
const std::vector<OpArity> &op_arity_table();

// Throws Error naming the model, the node and its op when the node's inputs or outputs do not
// match its op's row. Unknown ops pass (lowering names them as unsupported).
void node_arity_check(const Node &n, int64_t opset, const std::string &origin);

}  // namespace capgraph
