// Lowering: each ONNX op is defined once, as kernels over buffer views. Shape inference and
// constant folding use the same definitions (a node on constants is lowered into a scratch
// program and interpreted), so an op cannot mean one thing when folded and another when compiled.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

#include "graph/graph.h"
#include "schedule/kernel.h"

namespace capgraph {

// Where a value lives: a strided view of a buffer (elements).
struct Loc {
  int buffer = -1;
  int64_t offset = 0;
  Shape shape;
  Shape strides;
  DType dtype = DType::f32;

  bool contiguous() const;
};

// What constant folding may still allocate (graph/passes.h), shared by every node's Lowering.
struct FoldBudget {
  int64_t limit = 0;
  int64_t used = 0;
};

class Lowering {
 public:
  explicit Lowering(const Graph &g) : graph(g) {}

  const Graph &graph;
  Program prog;
  const Node *node = nullptr;         // the node being lowered (for errors and kernel provenance)
  FoldBudget *fold_budget = nullptr;  // set while folding: compile-time values are charged to it

  // Charges `bytes` of compile-time data to the fold budget before it is allocated, or fails
  // naming the node and the limit. Outside folding, one constant may not pass 1 GiB.
  void fold_reserve(int64_t bytes);

  // The value's location; constants get a constant buffer the first time they are used.
  Loc loc(const Value *v);
  void bind(Value *v, const Loc &l);
  bool bound(const Value *v) const { return locs.count(v) != 0; }
  Loc buffer_new(DType t, const Shape &s, Buffer::Kind kind, const std::string &name);
  Loc constant_new(const Tensor &t, const std::string &name);
  // Sets the output's type and makes it a compile-time constant.
  void output_constant(Value *out, const Tensor &t);
  // A new contiguous intermediate for `out` (sets its type).
  Loc output_new(Value *out, DType t, const Shape &s);
  // Sets the output's type and binds it as a view (no kernel).
  void output_view(Value *out, const Loc &l);

  // A new kernel attributed to the current node.
  Kernel &kernel_new(const std::string &name);

  // Throws Error naming the model, the node and its op.
  [[noreturn]] void fail(const std::string &msg) const;
  // Input i as a compile-time constant, or an error saying it must be one.
  const Tensor &const_input(size_t i, const char *what) const;
  bool has_input(size_t i) const { return node->input(i) != nullptr; }

 private:
  std::unordered_map<const Value *, Loc> locs;
};

// Access to `l` from an iteration space of rank `rank` whose trailing axes align with l's
// dimensions (numpy broadcasting: size-1 dimensions are not indexed).
Access access_broadcast(const Loc &l, int rank);
// Access to `l` where dimension d is indexed by iteration axis axis_of[d] (-1: index 0).
Access access_axes(const Loc &l, const std::vector<int> &axis_of);
// A contiguous store of shape `s` indexed by iteration axes 0..rank-1.
Access access_store(const Loc &l);
// numpy broadcast of two shapes; empty optional if incompatible.
bool shape_broadcast(const Shape &a, const Shape &b, Shape &out);
// Normalises a possibly negative axis for rank r, or fails.
int axis_normalize(const Lowering &L, int64_t axis, size_t r);

using LowerFn = std::function<void(Lowering &, Node &)>;
// The table of every supported op. Registered by the lower_*.cpp files.
std::map<std::string, LowerFn> &lower_table();
void lower_register_elementwise();
void lower_register_nn();
void lower_register_movement();
void lower_register_reduce();
void lower_register_index();
void lower_register_loss();
void lower_register_einsum();
void lower_register_select();
void lower_register_signal();
void lower_register_quant();
void lower_register_rnn();
void lower_register_grid_sample();

// The names of every supported op.
std::vector<std::string> lower_ops();
// Lowers one node (types its outputs). Unsupported ops fail naming the node and the op.
void lower_node(Lowering &L, Node &n);

// An ONNX TensorProto.DataType number (e.g. Cast's `to`) as a DType, or fail naming the node.
DType dtype_from_onnx_int(const Lowering &L, int64_t v);

// The kernel computing a contiguous copy of `src` into `dst` (same shape).
void kernel_copy(Lowering &L, const Loc &src, const Loc &dst, const std::string &name);

}  // namespace capgraph
