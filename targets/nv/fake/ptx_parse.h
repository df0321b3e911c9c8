// PTX text -> kernels the interpreter (ptx_exec.h) runs: the module directives and the instruction
// subset LLVM's NVPTX backend emits for capgraph's kernels (the README of this folder lists it).
// Parsing checks the syntax it knows and refuses everything else by name: an instruction,
// modifier, type, directive or operand it does not know is an error naming it, the kernel and the
// line, never skipped. Sources: NVIDIA, "Parallel Thread Execution ISA" (version 8.5), chapters
// "Syntax", "State Spaces, Types, and Variables", "Instruction Operands" and "Instruction Set"
// (each instruction's section by its name); LLVM's NVPTX output read from our own kernels.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace capgraph::nv {

// Opcodes, one per PTX instruction name (the modifiers are in ptx_instr).
enum class ptx_op : uint8_t {
  add,
  sub,
  mul,
  mad,
  fma,
  div,
  rem,
  abs,
  neg,
  min,
  max,
  and_,
  or_,
  xor_,
  not_,
  cnot,
  shl,
  shr,
  popc,
  clz,
  brev,
  bfe,
  bfi,
  copysign,
  selp,
  setp,
  mov,
  cvt,
  cvta,
  rcp,
  sqrt,
  rsqrt,
  ex2,
  lg2,
  sin,
  cos,
  tanh,
  ld,
  st,
  bra,
  bar,
  ret,
  exit,
  membar,
  fence
};
const char *ptx_op_name(ptx_op op);

// Value types. b/u/s are integers of `bits`, f is IEEE binary16/32/64 (or bf16), pred 1 bit.
enum class ptx_kind : uint8_t { b, u, s, f, bf, pred };
struct ptx_type {
  ptx_kind kind = ptx_kind::b;
  uint8_t bits = 32;
};

enum class ptx_space : uint8_t { generic, global, shared, local, param, const_ };
// Rounding: none, then IEEE (rn rz rm rp), then to-integral (rni rzi rmi rpi).
enum class ptx_round : uint8_t { none, rn, rz, rm, rp, rni, rzi, rmi, rpi };
// setp comparisons; the `u` forms are true when either operand is NaN.
enum class ptx_cmp : uint8_t {
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  lo,
  ls,
  hi,
  hs,
  equ,
  neu,
  ltu,
  leu,
  gtu,
  geu,
  num,
  nan
};
enum class ptx_boolop : uint8_t { none, and_, or_, xor_ };
// %tid.x ... : the special registers our kernels read.
enum class ptx_sreg : uint8_t {
  tid_x,
  tid_y,
  tid_z,
  ntid_x,
  ntid_y,
  ntid_z,
  ctaid_x,
  ctaid_y,
  ctaid_z,
  nctaid_x,
  nctaid_y,
  nctaid_z,
  laneid,
  warpid
};

struct ptx_operand {
  enum class kind : uint8_t { none, reg, imm, sreg, address, label, symbol, sink } k = kind::none;
  bool negate = false;  // `!%p` (a predicate operand)
  uint32_t reg = 0;     // register index (reg, address base when base_is_reg)
  uint64_t imm = 0;     // immediate bits (as the instruction's type reads them); address offset
  ptx_sreg sreg = ptx_sreg::tid_x;
  // address: [reg + imm], [symbol + imm] or [imm]; symbol: a variable or parameter name.
  bool base_is_reg = false, base_is_symbol = false;
  uint32_t symbol = 0;  // index into ptx_kernel::symbols
  uint32_t label = 0;   // instruction index (after labels are resolved)
};

struct ptx_instr {
  ptx_op op;
  ptx_type type;      // the instruction's (destination) type
  ptx_type src_type;  // cvt's source type; mul/mad .wide: the sources'
  ptx_space space = ptx_space::generic;
  ptx_round round = ptx_round::none;
  ptx_cmp cmp = ptx_cmp::eq;
  ptx_boolop boolop = ptx_boolop::none;
  bool ftz = false, sat = false, approx = false, hi = false, wide = false, uni = false;
  bool to_space = false;  // cvta.to.<space> (generic -> space) rather than space -> generic
  uint8_t vec = 1;        // ld/st .v2/.v4
  bool guarded = false;   // @%p / @!%p
  bool guard_negate = false;
  uint32_t guard = 0;
  // Destinations then sources, in PTX order; ld/st vectors take `vec` registers in dst/srcs.
  std::vector<ptx_operand> dst, src;
  uint32_t line = 0;  // in the PTX text, for messages
  std::string text;   // the instruction as written, for messages and the profile
};

// A `.shared`/`.local` variable declared in the kernel (or at module scope), or a `.param`.
struct ptx_symbol {
  std::string name;
  ptx_space space;
  uint64_t offset = 0;  // in its space (shared: from the block's shared base; param: in the list)
  uint64_t size = 0;
};

struct ptx_kernel {
  std::string name;
  std::vector<ptx_symbol> symbols;
  std::vector<uint32_t> params;     // symbols that are parameters, in order
  uint64_t param_bytes = 0;         // their layout's size (each aligned to its own size)
  uint64_t shared_bytes = 0;        // static shared variables, laid out from 0
  uint64_t local_bytes = 0;         // per thread (`.local` depots)
  uint32_t registers = 0;           // distinct registers named
  uint32_t reqntid[3] = {0, 0, 0};  // .reqntid, 0 when absent
  std::vector<ptx_instr> code;
  std::vector<std::string> register_names;  // by index, for messages
};

struct ptx_module {
  std::string version, target;
  uint32_t address_size = 64;
  std::map<std::string, ptx_kernel> kernels;  // by entry name
};

// Parses a whole module. False and `*err` ("PTX line N (kernel K): ...") on anything it does not
// know or cannot read; never throws on bad text.
bool ptx_parse(const std::string &text, ptx_module *out, std::string *err);

}  // namespace capgraph::nv
