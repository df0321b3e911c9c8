// Kernel IR -> LLVM IR: the part every LLVM target shares. A target's code generator creates the
// function and decides which loops walk its work items (cpu_codegen: rows split across threads;
// amdgpu_codegen: one GPU work item per output element); KernelEmitter evaluates the kernel at the
// points those loops visit: index arithmetic, bounds rules, expressions, reductions, the store.
// Both targets emit from the same kernel IR through this one emitter, so a GPU kernel and its
// host twin compute the same thing by construction.
#pragma once
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "schedule/kernel.h"

namespace capgraph {

// An integer constant of dtype t from a double (a reduce identity of +-inf included): truncated
// toward zero, saturated at t's limits, NaN gives 0.
int64_t int_constant_saturate(double v, DType t);

struct KernelEmitter {
  llvm::LLVMContext &ctx;
  llvm::Module &mod;
  llvm::IRBuilder<> b;
  const Kernel &k;
  const Program &p;
  llvm::Function *fn = nullptr;
  std::vector<int> slots;
  std::map<int, llvm::Value *> slot_ptr;   // buffer -> pointer (generic address space)
  std::vector<llvm::Value *> iv;           // current index of each axis (i64)
  llvm::Value *acc_value = nullptr;        // Op::acc inside the result
  std::map<int, llvm::Value *> cache;      // expression values of the current evaluation
  llvm::Value *valid = nullptr;            // AND of per-element skip checks in the current body
  std::vector<std::vector<char>> checked;  // [load][dim]: validity already ensured by the loops
  bool in_body = false;
  // Vector evaluation (the CPU's channel tiles): when lanes > 0, float values are <lanes x float>
  // along axis lane_axis (whose index must be 0 at the point evaluated): constants are splats and
  // loads read `lanes` consecutive elements, or one broadcast where the access does not move with
  // the axis. Only what vector_evaluable accepts may be evaluated so.
  unsigned lanes = 0;
  int lane_axis = -1;

  KernelEmitter(llvm::Module &m, const Kernel &kk, const Program &pp);

  llvm::Type *ir_type(DType t);   // type of values in registers
  llvm::Type *mem_type(DType t);  // type of elements in memory
  llvm::Value *i64(int64_t v) { return b.getInt64(v); }

  // for (i = lo; i < hi; i++) body(i); returns the back edge's branch (loop metadata goes there).
  llvm::BranchInst *loop(llvm::Value *lo, llvm::Value *hi,
                         const std::function<void(llvm::Value *)> &body);
  // A single trip is no loop: LICM would hoist each of its loads out one at a time, and on the
  // fixed border tiles (one such loop per tile and window offset) its MemorySSA updates walked the
  // whole function each time (27 s for one 3x3 conv over 8 channels).
  llvm::BranchInst *loop(int64_t n, const std::function<void(llvm::Value *)> &body) {
    if (n == 1) {
      body(i64(0));
      return nullptr;
    }
    return loop(i64(0), i64(n), body);
  }
  // Tells LLVM not to unroll the loop whose back edge is `latch` (from loop; nullptr: no loop).
  void loop_keep(llvm::BranchInst *latch);
  // While set, every loop made is kept so (loop_keep).
  bool keep_loops = false;
  // Runs body only if cond holds.
  void guarded(llvm::Value *cond, const std::function<void()> &body);
  // Loops over the given axes, outermost first; body runs at the innermost point.
  void nest_order(const std::vector<int> &axes, size_t at, const std::function<void()> &body);
  // The loops over all axes in [first, last) with iv bound.
  void nest(int first, int last, const std::function<void()> &body);

  // sum(coef * iv) + shift, skipping the terms of axis `except` (when >= 0).
  llvm::Value *affine(const DimIndex &d, int except = -1);
  int64_t coef_of(const DimIndex &d, int axis);
  // Element offset of an access at the current point. Sets *ok to the validity of skip bounds not
  // already ensured by the loop structure (nullptr if always valid).
  llvm::Value *access_offset(const Access &a, int load, llvm::Value **ok);
  llvm::Value *element_ptr(int buffer, llvm::Value *off);

  llvm::Value *to_i64(llvm::Value *v);
  llvm::Value *convert(llvm::Value *v, DType from, DType to);
  llvm::Value *load_value(const Expr &e);
  llvm::Value *constant(double v, DType t);
  llvm::Value *eval(int i);
  // Whether expression `root` can be evaluated in vector form along `axis` (expr_vector_evaluable).
  bool vector_evaluable(int root, int axis) const;
  llvm::Value *vector_cast(const Expr &e);  // a cast to float32 that vector_evaluable accepted
  // Evaluates root fresh at the current point (LICM hoists what does not change).
  llvm::Value *evaluate(int root, bool body);
  void store_result(llvm::Value *v);
  llvm::Value *combine(llvm::Value *acc, llvm::Value *v);
  llvm::Value *bf16_round(llvm::Value *v);  // float32 -> bfloat16 bits, nearest even
  // One output element at the current parallel point (iv of every parallel axis set): the
  // reduction over all reduction axes in the scalar accumulator `acc` (unused without one), then
  // the result and its store.
  void emit_point(llvm::Value *acc);

  int inner_axis() const { return k.n_parallel - 1; }
  llvm::Value *floor_div(llvm::Value *a, int64_t d);  // d > 0
  llvm::Value *ceil_div(llvm::Value *a, int64_t d) {
    return b.CreateNeg(floor_div(b.CreateNeg(a), d));
  }
};

// A structural key: kernels with equal keys compile to identical code.
std::string kernel_key(const Kernel &k, const Program &p);
// The entry symbol of unique kernel `index`.
std::string kernel_symbol(const Kernel &k, int index);

// Structurally equal kernels compile once: reps[u] is the first kernel of unique entry u, and
// unique_of[i] the entry of kernel i. Checks every kernel (kernel_check) on the way.
struct KernelDedupe {
  std::vector<int> unique_of, reps;
};
KernelDedupe kernels_dedupe(const Program &p);

void llvm_init_once();
std::unique_ptr<llvm::TargetMachine> target_machine_create(const std::string &triple,
                                                           const std::string &cpu,
                                                           const std::string &features);
// Verifies, optimises (O2 with the vectorizers) and compiles the module to an ELF relocatable
// object for the target machine (or to its assembly text: NVPTX's output is PTX).
// strength_reduce: with LLVM's loop strength reduction (CAPGRAPH_NO_LSR in cpu_codegen.cpp).
std::vector<uint8_t> module_compile(llvm::Module &m, llvm::TargetMachine &tm,
                                    llvm::CodeGenFileType type = llvm::CodeGenFileType::ObjectFile,
                                    bool strength_reduce = true);
// Runs build(0) .. build(n-1) on n threads; rethrows the first failure as an Error.
void parallel_run(int n, const std::function<void(int)> &build);
// Runs build(0) .. build(n-1) on `workers` threads (at most n; <= 0: one per core), each taking
// the next index until none is left; rethrows the first failure (lowest index) as an Error.
void parallel_pull(int n, int workers, const std::function<void(int)> &build);

}  // namespace capgraph
