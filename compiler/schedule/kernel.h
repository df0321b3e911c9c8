// The kernel IR: what the scheduler produces and every code generator consumes.
//
// A kernel is a loop nest over an iteration space `axes`. The first `n_parallel` axes are output
// axes (independent, split across threads); the rest are reduction axes. Per point of the full
// space the kernel evaluates `body` and folds it into an accumulator with `reduce`; per point of
// the parallel space it evaluates `result` (which may read the accumulator through Op::acc) and
// stores it through `store`. A kernel without reduction axes evaluates only `result`.
//
// Memory is reached only through Accesses: affine maps from iteration axes to each dimension of
// a buffer view, with explicit rules for indices that fall outside the dimension (padding,
// clamping, reflection, wrapping) and optional data-dependent indices (gather). This one form
// covers elementwise ops with broadcasting, transposes, slices, pads, concatenation, pooling,
// convolution, matrix products, reductions and resizes, so one code generator serves them all.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.h"

namespace capgraph {

// What an index outside [0, extent) means.
enum class Bound : uint8_t {
  none,     // cannot happen (the scheduler proved it)
  skip,     // the point contributes nothing: in a reduction it is skipped; elsewhere reads `fill`
  clamp,    // clamp to [0, extent-1] (edge padding, nearest resize at borders)
  reflect,  // mirror without repeating the edge (Pad mode=reflect)
  wrap,     // modulo extent (Tile)
};

struct AxisTerm {
  int axis;      // iteration axis
  int64_t coef;  // multiplier
};

// The index into one dimension of a buffer: sum(coef * iter[axis]) + shift (+ value of `expr`).
struct DimIndex {
  std::vector<AxisTerm> terms;
  int64_t shift = 0;
  int expr = -1;       // integer expression added to the index (gather), or -1
  int64_t extent = 1;  // size of this dimension of the buffer view
  int64_t stride = 0;  // elements between consecutive indices of this dimension
  Bound bound = Bound::none;
  // The raw index is divided by this; a raw index it does not divide is out of range (strided
  // transposed convolution reads input i only where o + pad - k*dilation == i * stride).
  int64_t divisor = 1;
};

// A read or write of one buffer through a view.
struct Access {
  int buffer = -1;     // index into Program::buffers
  int64_t offset = 0;  // elements: where the view starts inside the buffer
  std::vector<DimIndex> dims;
  double fill = 0;  // value read where a `skip` bound is out of range (outside reductions)
};

// Every primitive operation, one row each: X(enumerator, printed name, operand count). The enum,
// kOpCount, op_name and op_arity are made from this list; a new op is one row here plus a case in
// each emitter (compiler/README.md, "Adding a primitive op"), which op_emitters_test checks.
// clang-format off
#define CAPGRAPH_OPS(X)                                             \
  /* leaves (iota: the current index of iteration axis `access`) */ \
  X(constant, "constant", 0)                                        \
  X(load, "load", 0)                                                \
  X(acc, "acc", 0)                                                  \
  X(iota, "iota", 0)                                                \
  /* unary */                                                       \
  X(cast, "cast", 1)                                                \
  X(neg, "neg", 1)                                                  \
  X(abs, "abs", 1)                                                  \
  X(sqrt, "sqrt", 1)                                                \
  X(exp, "exp", 1)                                                  \
  X(log, "log", 1)                                                  \
  X(tanh, "tanh", 1)                                                \
  X(sigmoid, "sigmoid", 1)                                          \
  X(erf, "erf", 1)                                                  \
  X(floor, "floor", 1)                                              \
  X(ceil, "ceil", 1)                                                \
  X(round, "round", 1)                                              \
  X(trunc, "trunc", 1)                                              \
  X(recip, "recip", 1)                                              \
  X(logical_not, "not", 1)                                          \
  /* binary */                                                      \
  X(add, "add", 2)                                                  \
  X(sub, "sub", 2)                                                  \
  X(mul, "mul", 2)                                                  \
  X(div, "div", 2)                                                  \
  X(mod, "mod", 2)                                                  \
  X(pow, "pow", 2)                                                  \
  X(max, "max", 2)                                                  \
  X(min, "min", 2)                                                  \
  X(lt, "lt", 2)                                                    \
  X(le, "le", 2)                                                    \
  X(gt, "gt", 2)                                                    \
  X(ge, "ge", 2)                                                    \
  X(eq, "eq", 2)                                                    \
  X(ne, "ne", 2)                                                    \
  X(logical_and, "and", 2)                                          \
  X(logical_or, "or", 2)                                            \
  /* ternary: a ? b : c */                                          \
  X(select, "select", 3)
// clang-format on

#define CAPGRAPH_OP_ENUMERATOR(op, name, arity) op,
enum class Op : uint8_t { CAPGRAPH_OPS(CAPGRAPH_OP_ENUMERATOR) };
#undef CAPGRAPH_OP_ENUMERATOR
#define CAPGRAPH_OP_ONE(op, name, arity) +1
inline constexpr int kOpCount = 0 CAPGRAPH_OPS(CAPGRAPH_OP_ONE);
#undef CAPGRAPH_OP_ONE
const char *op_name(Op op);
int op_arity(Op op);

struct Expr {
  Op op = Op::constant;
  DType dtype = DType::f32;    // type of the result (comparisons give boolean)
  int a = -1, b = -1, c = -1;  // operand expressions (indices into Kernel::exprs)
  double value = 0;            // Op::constant
  int access = -1;             // Op::load: index into Kernel::loads; Op::iota: the axis
};

enum class Reduce : uint8_t { none, sum, max, min, prod };

// The most expressions one kernel may hold. The code generators and the interpreter walk
// expressions recursively (KernelEmitter::eval), one frame per level: fusion stops growing a kernel
// here and kernel_check refuses a bigger one, so a chain of 25k+ elementwise nodes becomes several
// kernels instead of a stack overflow. Real epilogues (GELU, LayerNorm, Mish) stay far below it.
constexpr size_t kKernelMaxExprs = 2048;

struct Kernel {
  std::string name;                       // readable, e.g. "conv3x3_s2+relu"
  std::vector<std::string> source_nodes;  // ONNX nodes this kernel implements
  Shape axes;                             // iteration extents
  int n_parallel = 0;                     // axes[0, n_parallel) are output axes
  std::vector<Access> loads;
  std::vector<Expr> exprs;
  int body = -1;  // evaluated per full-space point (reduction kernels)
  Reduce reduce = Reduce::none;
  DType acc_dtype = DType::f32;
  int result = -1;  // evaluated per parallel point, stored
  Access store;     // terms reference parallel axes only
  DType store_dtype = DType::f32;
  int64_t flops = 0;  // for inspect; multiply-add counts 2

  // Builders used by the scheduler (they append and return the new expression's index).
  int expr_const(double v, DType t);
  int expr_load(Access a, DType t);
  int expr_unary(Op op, int a, DType t);
  int expr_binary(Op op, int a, int b, DType t);
  int expr_select(int cond, int a, int b, DType t);
  int expr_cast(int a, DType t);
  int expr_iota(int axis, DType t);
  // Appends src's expressions in order (operands before users, as kernel_check wants), their
  // operands renumbered and a load's access through load_map; src expression i is not appended
  // where with[i] >= 0 (empty: nowhere) but stands for this kernel's expression with[i]. Returns
  // where each of src's expressions went.
  std::vector<int> expr_append(const Kernel &src, const std::vector<int> &load_map,
                               const std::vector<int> &with = {});
};

// A buffer of the kernel program. Constants become capture weights; the others get arena space.
struct Buffer {
  enum class Kind : uint8_t { input, output, intermediate, constant };
  Kind kind = Kind::intermediate;
  DType dtype = DType::f32;
  int64_t numel = 0;
  std::string name;  // the ONNX value it holds (first one, for views)
  Tensor data;       // Kind::constant only
};

// The whole model after scheduling: buffers, kernels in execution order, named inputs/outputs.
struct Program {
  struct Port {
    std::string name;
    int buffer;
    DType dtype;
    Shape shape;
  };
  std::vector<Buffer> buffers;
  std::vector<Kernel> kernels;
  std::vector<Port> inputs, outputs;
};

// Whether an index (or any dimension of an access) moves with iteration axis `axis`.
bool dim_uses(const DimIndex &d, int axis);
bool access_uses(const Access &a, int axis);

// Whether expression i of k is float elementwise arithmetic (cast, neg, abs, sigmoid, add, sub,
// mul, div, max, min) of constants and loads whose access `plain` accepts (an expression fusion
// may move, or a GPU tile stage). Each load it reads is added to *loads once, when given.
bool expr_elementwise(const Kernel &k, int i, bool (*plain)(const Access &),
                      std::vector<int> *loads = nullptr);

// Index of the reduction identity for an accumulator.
double reduce_identity(Reduce r);

// Checks the invariants a code generator relies on (axis indices in range, expressions refer to
// earlier ones, accesses to existing buffers, dims match...). Throws Error naming the kernel.
void kernel_check(const Kernel &k, const Program &p);

}  // namespace capgraph
