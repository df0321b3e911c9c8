// Graph passes run after shape inference and constant folding, before scheduling.
#pragma once
#include "graph/graph.h"

namespace capgraph {

// The memory constant folding may allocate in all (folded values and the interpreter's scratch),
// unless the caller sets another (`capgraph compile --fold-limit-mb`).
constexpr int64_t kFoldLimitBytes = int64_t(1) << 30;

// Infers every value's type and folds every node whose inputs are all constants (using the
// lowering's own op definitions, interpreted). Large results stay runtime kernels. Folding that
// would allocate more than `limit_bytes` in all is an error naming the node.
void graph_infer_fold(Graph &g, int64_t limit_bytes = kFoldLimitBytes);

// Folds BatchNormalization into the Conv before it (new weights and bias computed here).
// Returns how many were folded.
int graph_fold_batchnorm(Graph &g);

// Folds a constant zero Pad on spatial dims into the Conv/pool that reads it.
int graph_fold_pad(Graph &g);

// Marks nodes no output depends on as removed. Returns how many.
int graph_remove_dead(Graph &g);

}  // namespace capgraph
