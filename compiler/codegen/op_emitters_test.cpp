// Every primitive op (schedule/kernel.h, CAPGRAPH_OPS) through everything that gives kernel IR a
// meaning: the interpreter (schedule/interpret.cpp), the LLVM emitter (codegen/kernel_emit.cpp)
// for the CPU and for each LLVM GPU target this build has, and the NIR emitter
// (targets/adreno/compiler/adreno_nir_emit.cpp) when it has Mesa. Their op switches have no
// default, so -Wswitch names a missing case at build time; a missing case that gets past it fails
// here naming the op and the emitter. It checks that each op is handled, not what it computes
// (op_conformance_test, interpret_test and cpu_codegen_test do that).
#include <doctest/doctest.h>

#include <vector>

#include "error.h"
#include "schedule/interpret.h"
#include "schedule/kernel.h"
#include "target/target_table.h"

using namespace capgraph;

namespace {

constexpr int64_t kN = 8;

Access row(int buffer) {
  Access a;
  a.buffer = buffer;
  DimIndex d;
  d.terms = {{0, 1}};
  d.extent = kN;
  d.stride = 1;
  a.dims = {d};
  return a;
}

// One kernel over 8 points whose result applies `op` to loads of x (float32) or c (boolean),
// stored to y of the result's type. Op::acc is the result of a sum over a second axis.
Program op_program(Op op) {
  Program p;
  auto buffer = [&](Buffer::Kind kind, DType t, const char *name) {
    Buffer b;
    b.kind = kind;
    b.dtype = t;
    b.numel = kN;
    b.name = name;
    p.buffers.push_back(b);
    return (int)p.buffers.size() - 1;
  };
  int x = buffer(Buffer::Kind::input, DType::f32, "x");
  int c = buffer(Buffer::Kind::input, DType::boolean, "c");
  Kernel k;
  k.name = op_name(op);
  k.axes = {kN};
  k.n_parallel = 1;
  auto fx = [&] { return k.expr_load(row(x), DType::f32); };
  auto bc = [&] { return k.expr_load(row(c), DType::boolean); };
  switch (op_arity(op)) {
    case 0:
      if (op == Op::constant) k.result = k.expr_const(1.5, DType::f32);
      if (op == Op::load) k.result = fx();
      if (op == Op::iota) k.result = k.expr_iota(0, DType::f32);
      if (op == Op::acc) {
        k.axes = {kN, 2};
        k.body = fx();
        k.reduce = Reduce::sum;
        k.result = k.expr_unary(Op::acc, -1, DType::f32);
      }
      break;
    case 1:
      if (op == Op::cast)
        k.result = k.expr_unary(op, fx(), DType::i32);
      else if (op == Op::logical_not)
        k.result = k.expr_unary(op, bc(), DType::boolean);
      else
        k.result = k.expr_unary(op, fx(), DType::f32);
      break;
    case 2:
      if (op == Op::logical_and || op == Op::logical_or)
        k.result = k.expr_binary(op, bc(), bc(), DType::boolean);
      else if (op >= Op::lt && op <= Op::ne)
        k.result = k.expr_binary(op, fx(), fx(), DType::boolean);
      else
        k.result = k.expr_binary(op, fx(), fx(), DType::f32);
      break;
    default: k.result = k.expr_select(bc(), fx(), fx(), DType::f32);
  }
  REQUIRE_MESSAGE(k.result >= 0, "op_program builds no kernel for op " << std::string(op_name(op)));
  k.store_dtype = k.exprs[k.result].dtype;
  k.store = row(buffer(Buffer::Kind::output, k.store_dtype, "y"));
  p.kernels.push_back(k);
  return p;
}

void interpret(const Program &p) {
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<uint8_t *> bufs;
  for (const Buffer &b : p.buffers) bytes.emplace_back(b.numel * dtype_size(b.dtype), 0);
  for (auto &b : bytes) bufs.push_back(b.data());
  kernel_interpret(p.kernels[0], p, bufs);
}

}  // namespace

TEST_CASE("every primitive op has a case in the interpreter and in every emitter") {
  struct Emitter {
    std::string name;
    std::function<void(const Program &)> run;
  };
  std::vector<Emitter> emitters = {{"the interpreter (schedule/interpret.cpp)", interpret}};
  // LLVM (cpu, amd, nv) and NIR (adreno): each target's code generator, where this build has it
  // (a target whose code generator cannot run here says why on a plain add and is skipped).
  for (const char *target : {"cpu", "amd-gfx1100", "nv-sm90", "adreno-a630"}) {
    Emitter e{std::string("the code generator of ") + target,
              [target](const Program &p) { target_find(target).codegen(p, target, 1); }};
    try {
      e.run(op_program(Op::add));
    } catch (const Error &err) {
      MESSAGE("SKIPPED: " << std::string(target) << ": " << std::string(err.what()));
      continue;
    }
    emitters.push_back(e);
  }
  for (int o = 0; o < kOpCount; o++) {
    Op op = (Op)o;
    Program p = op_program(op);
    for (const Emitter &e : emitters) {
      try {
        e.run(p);
      } catch (const Error &err) {
        FAIL_CHECK("op " << std::string(op_name(op)) << " in " << e.name << ": "
                         << std::string(err.what()));
      }
    }
  }
}
