#include "ptx_parse.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <set>

namespace capgraph::nv {

namespace {

const char *const kOpNames[] = {"add",  "sub",  "mul",  "mad",    "fma",  "div", "rem",  "abs",
                                "neg",  "min",  "max",  "and",    "or",   "xor", "not",  "cnot",
                                "shl",  "shr",  "popc", "clz",    "brev", "bfe", "bfi",  "copysign",
                                "selp", "setp", "mov",  "cvt",    "cvta", "rcp", "sqrt", "rsqrt",
                                "ex2",  "lg2",  "sin",  "cos",    "tanh", "ld",  "st",   "bra",
                                "bar",  "ret",  "exit", "membar", "fence"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == size_t(ptx_op::fence) + 1);

const char *const kCmpNames[] = {"eq", "ne",  "lt",  "le",  "gt",  "ge",  "lo",  "ls",  "hi",
                                 "hs", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};

// Thrown inside the parser only; ptx_parse turns it into its error string.
struct parse_error {
  std::string why;
};
[[noreturn]] void fail(const std::string &why) { throw parse_error{why}; }

bool type_named(const std::string &m, ptx_type *t) {
  if (m == "pred") return *t = {ptx_kind::pred, 1}, true;
  if (m == "bf16") return *t = {ptx_kind::bf, 16}, true;
  if (m.size() < 2) return false;
  ptx_kind k;
  switch (m[0]) {
    case 'b': k = ptx_kind::b; break;
    case 'u': k = ptx_kind::u; break;
    case 's': k = ptx_kind::s; break;
    case 'f': k = ptx_kind::f; break;
    default: return false;
  }
  const std::string n = m.substr(1);
  if (n != "8" && n != "16" && n != "32" && n != "64") return false;
  if (k == ptx_kind::f && n == "8") return false;
  *t = {k, uint8_t(std::stoi(n))};
  return true;
}

// Splits `s` at top-level commas (not inside {} or []).
std::vector<std::string> split_operands(const std::string &s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '{' || c == '[') depth++;
    if (c == '}' || c == ']') depth--;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  for (std::string &o : out) {
    size_t b = o.find_first_not_of(" \t\n"), e = o.find_last_not_of(" \t\n");
    o = b == std::string::npos ? "" : o.substr(b, e - b + 1);
  }
  return out;
}

// One kernel body being read.
struct kernel_reader {
  ptx_kernel &k;
  std::map<std::string, uint32_t> regs;     // register name -> index
  std::map<std::string, uint32_t> ranges;   // "%r" -> count declared by %r<N>
  std::map<std::string, uint32_t> symbols;  // variable/parameter name -> symbol index
  std::map<std::string, uint32_t> labels;   // label -> instruction index
  std::vector<std::pair<uint32_t, std::string>> label_uses;  // (instr, label) to resolve

  uint32_t reg(const std::string &name) {
    auto it = regs.find(name);
    if (it != regs.end()) return it->second;
    // %r12 is declared by %r<N> when 12 < N.
    size_t d = name.size();
    while (d > 0 && isdigit((unsigned char)name[d - 1])) d--;
    auto r = ranges.find(name.substr(0, d));
    if (d == name.size() || r == ranges.end() || std::stoull(name.substr(d)) >= r->second)
      fail("register " + name + " is not declared");
    const uint32_t i = uint32_t(k.register_names.size());
    k.register_names.push_back(name);
    regs[name] = i;
    return i;
  }

  void declare_reg(const std::string &decl) {
    // ".reg .b32 %r<16>" or ".reg .pred %p" or ".reg .b64 %rd1, %rd2"
    size_t at = decl.find('%');
    if (at == std::string::npos) fail("cannot read the register declaration '" + decl + "'");
    for (const std::string &one : split_operands(decl.substr(at))) {
      size_t lt = one.find('<');
      if (lt != std::string::npos) {
        const unsigned long n = std::strtoul(one.c_str() + lt + 1, nullptr, 10);
        if (n == 0 || n > (1u << 20)) fail("register range '" + one + "'");
        ranges[one.substr(0, lt)] = uint32_t(n);
      } else {
        ranges.erase(one);
        if (!regs.count(one)) {
          regs[one] = uint32_t(k.register_names.size());
          k.register_names.push_back(one);
        }
      }
    }
  }

  uint32_t symbol_add(const std::string &name, ptx_space space, uint64_t size, uint64_t align) {
    if (symbols.count(name)) fail("'" + name + "' is declared twice");
    if (align == 0 || (align & (align - 1)) || align > 4096) fail("alignment of '" + name + "'");
    ptx_symbol s{name, space, 0, size};
    uint64_t &top = space == ptx_space::shared  ? k.shared_bytes
                    : space == ptx_space::local ? k.local_bytes
                                                : k.param_bytes;
    s.offset = (top + align - 1) / align * align;
    top = s.offset + size;
    const uint32_t i = uint32_t(k.symbols.size());
    k.symbols.push_back(s);
    symbols[name] = i;
    return i;
  }

  // ".shared .align 16 .b8 name[3072]" / ".local .align 4 .b8 __local_depot0[8]" / ".param .u64 p"
  uint32_t declare_var(const std::string &decl) {
    std::vector<std::string> words;
    std::string w;
    for (char c : decl + " ") {
      if (isspace((unsigned char)c)) {
        if (!w.empty()) words.push_back(w);
        w.clear();
      } else {
        w += c;
      }
    }
    ptx_space space;
    if (words[0] == ".shared")
      space = ptx_space::shared;
    else if (words[0] == ".local")
      space = ptx_space::local;
    else if (words[0] == ".param")
      space = ptx_space::param;
    else
      fail("variables in " + words[0] + " are not supported ('" + decl + "')");
    uint64_t align = 0;
    ptx_type t;
    size_t i = 1;
    if (i + 1 < words.size() && words[i] == ".align")
      align = std::strtoull(words[i + 1].c_str(), nullptr, 10), i += 2;
    if (i >= words.size() || words[i][0] != '.' || !type_named(words[i].substr(1), &t) ||
        t.kind == ptx_kind::pred)
      fail("cannot read the variable declaration '" + decl + "'");
    i++;
    if (i + 1 != words.size()) fail("cannot read the variable declaration '" + decl + "'");
    std::string name = words[i];
    uint64_t count = 1;
    size_t lb = name.find('[');
    if (lb != std::string::npos) {
      if (name.back() != ']') fail("cannot read the array in '" + decl + "'");
      count = std::strtoull(name.c_str() + lb + 1, nullptr, 10);
      name = name.substr(0, lb);
      if (count == 0 || count > (1ull << 24)) fail("array size in '" + decl + "'");
    }
    const uint64_t elem = t.bits / 8;
    return symbol_add(name, space, elem * count, align ? align : elem);
  }
};

struct literal {
  bool is_f32 = false, is_f64 = false;
  uint64_t bits = 0;  // integer value (two's complement) or the float's bits
};

bool literal_read(const std::string &s, literal *l) {
  if (s.size() == 10 && (s.rfind("0f", 0) == 0 || s.rfind("0F", 0) == 0)) {
    char *end;
    l->bits = std::strtoull(s.c_str() + 2, &end, 16);
    l->is_f32 = true;
    return *end == 0;
  }
  if (s.size() == 18 && (s.rfind("0d", 0) == 0 || s.rfind("0D", 0) == 0)) {
    char *end;
    l->bits = std::strtoull(s.c_str() + 2, &end, 16);
    l->is_f64 = true;
    return *end == 0;
  }
  if (s.empty() || !(isdigit((unsigned char)s[0]) || s[0] == '-')) return false;
  char *end;
  errno = 0;
  const bool neg = s[0] == '-';
  const uint64_t v = std::strtoull(s.c_str() + neg, &end, 0);
  if (*end == 'U') end++;  // PTX's unsigned suffix
  if (*end || errno) return false;
  l->bits = neg ? uint64_t(0) - v : v;
  return true;
}

// A literal as the bits of an operand of type `t`.
uint64_t literal_as(const literal &l, ptx_type t) {
  if (t.kind == ptx_kind::f) {
    double v;
    if (l.is_f32) {
      float f;
      uint32_t b = uint32_t(l.bits);
      memcpy(&f, &b, 4);
      v = f;
    } else if (l.is_f64) {
      memcpy(&v, &l.bits, 8);
    } else {
      // A plain integer literal in a float instruction is its value (PTX ISA, "Constants").
      v = double(int64_t(l.bits));
    }
    if (t.bits == 64) {
      uint64_t b;
      memcpy(&b, &v, 8);
      return b;
    }
    if (t.bits == 32) {
      float f = float(v);
      uint32_t b;
      memcpy(&b, &f, 4);
      return b;
    }
    if (l.is_f32 || l.is_f64)
      fail("a float literal for a " + std::to_string(t.bits) + "-bit float");
    return l.bits & 0xffff;  // f16 as its bits (0x3C00)
  }
  if (l.is_f32 || l.is_f64) {
    // Hex float literals in an integer (.b32/.b64) move are their bits.
    return l.bits;
  }
  if (t.kind == ptx_kind::pred) return l.bits != 0;
  return t.bits == 64 ? l.bits : l.bits & ((1ull << t.bits) - 1);
}

const std::map<std::string, ptx_sreg> &sregs() {
  static const std::map<std::string, ptx_sreg> m = {
      {"%tid.x", ptx_sreg::tid_x},       {"%tid.y", ptx_sreg::tid_y},
      {"%tid.z", ptx_sreg::tid_z},       {"%ntid.x", ptx_sreg::ntid_x},
      {"%ntid.y", ptx_sreg::ntid_y},     {"%ntid.z", ptx_sreg::ntid_z},
      {"%ctaid.x", ptx_sreg::ctaid_x},   {"%ctaid.y", ptx_sreg::ctaid_y},
      {"%ctaid.z", ptx_sreg::ctaid_z},   {"%nctaid.x", ptx_sreg::nctaid_x},
      {"%nctaid.y", ptx_sreg::nctaid_y}, {"%nctaid.z", ptx_sreg::nctaid_z},
      {"%laneid", ptx_sreg::laneid},     {"%warpid", ptx_sreg::warpid}};
  return m;
}

struct instr_reader {
  kernel_reader &kr;
  ptx_instr &in;

  ptx_operand operand(const std::string &s, ptx_type t) {
    ptx_operand o;
    if (s.empty()) fail("an empty operand");
    if (s == "_") return o.k = ptx_operand::kind::sink, o;
    if (s[0] == '!') {
      o = operand(s.substr(1), t);
      if (o.k != ptx_operand::kind::reg) fail("'!' before something that is not a predicate");
      o.negate = true;
      return o;
    }
    if (s[0] == '[') return address(s);
    if (s[0] == '%') {
      auto sr = sregs().find(s);
      if (sr != sregs().end()) return o.k = ptx_operand::kind::sreg, o.sreg = sr->second, o;
      if (s.find('.') != std::string::npos) fail("special register " + s + " is not supported");
      o.k = ptx_operand::kind::reg;
      o.reg = kr.reg(s);
      return o;
    }
    literal l;
    if (literal_read(s, &l)) {
      o.k = ptx_operand::kind::imm;
      o.imm = literal_as(l, t);
      return o;
    }
    if (s[0] == '$' || isalpha((unsigned char)s[0]) || s[0] == '_') {
      auto it = kr.symbols.find(s);
      if (it != kr.symbols.end()) return o.k = ptx_operand::kind::symbol, o.symbol = it->second, o;
      if (in.op == ptx_op::bra) return o.k = ptx_operand::kind::label, o;
      fail("'" + s + "' is no register, variable or parameter this kernel declares");
    }
    fail("cannot read the operand '" + s + "'");
  }

  ptx_operand address(const std::string &s) {
    if (s.back() != ']') fail("cannot read the address '" + s + "'");
    std::string body = s.substr(1, s.size() - 2);
    ptx_operand o;
    o.k = ptx_operand::kind::address;
    size_t plus = body.find('+');
    std::string base = body.substr(0, plus),
                off = plus == std::string::npos ? "" : body.substr(plus + 1);
    auto trim = [](std::string &x) {
      size_t b = x.find_first_not_of(" \t"), e = x.find_last_not_of(" \t");
      x = b == std::string::npos ? "" : x.substr(b, e - b + 1);
    };
    trim(base);
    trim(off);
    literal l;
    if (!off.empty()) {
      if (!literal_read(off, &l) || l.is_f32 || l.is_f64)
        fail("cannot read the address offset '" + s + "'");
      o.imm = l.bits;
    }
    if (base.empty()) fail("cannot read the address '" + s + "'");
    if (base[0] == '%') {
      o.base_is_reg = true;
      o.reg = kr.reg(base);
    } else if (literal_read(base, &l) && !l.is_f32 && !l.is_f64) {
      if (!off.empty()) fail("cannot read the address '" + s + "'");
      o.imm = l.bits;
    } else {
      auto it = kr.symbols.find(base);
      if (it == kr.symbols.end()) fail("the address '" + s + "' names no variable or parameter");
      o.base_is_symbol = true;
      o.symbol = it->second;
    }
    return o;
  }

  // The vector "{%f1, %f2, _, %f4}" as `vec` operands.
  std::vector<ptx_operand> vector(const std::string &s, ptx_type t) {
    if (s.size() < 2 || s[0] != '{' || s.back() != '}')
      fail("a ." + std::string("v") + std::to_string(in.vec) + " access needs {...}, got '" + s +
           "'");
    std::vector<ptx_operand> out;
    for (const std::string &e : split_operands(s.substr(1, s.size() - 2)))
      out.push_back(operand(e, t));
    if (out.size() != in.vec)
      fail("a .v" + std::to_string(in.vec) + " access with " + std::to_string(out.size()) +
           " registers");
    return out;
  }
};

// The modifiers after the opcode name, checked against what each opcode takes.
void modifiers_read(ptx_instr &in, const std::vector<std::string> &mods) {
  std::vector<ptx_type> types;
  for (const std::string &m : mods) {
    ptx_type t;
    if (type_named(m, &t)) {
      types.push_back(t);
      continue;
    }
    bool cmp_found = false;
    if (in.op == ptx_op::setp && types.empty()) {
      for (size_t c = 0; c < sizeof(kCmpNames) / sizeof(kCmpNames[0]); c++)
        if (m == kCmpNames[c]) in.cmp = ptx_cmp(c), cmp_found = true;
      if (cmp_found) continue;
    }
    if (m == "rn")
      in.round = ptx_round::rn;
    else if (m == "rz")
      in.round = ptx_round::rz;
    else if (m == "rm")
      in.round = ptx_round::rm;
    else if (m == "rp")
      in.round = ptx_round::rp;
    else if (m == "rni")
      in.round = ptx_round::rni;
    else if (m == "rzi")
      in.round = ptx_round::rzi;
    else if (m == "rmi")
      in.round = ptx_round::rmi;
    else if (m == "rpi")
      in.round = ptx_round::rpi;
    else if (m == "ftz")
      in.ftz = true;
    else if (m == "sat")
      in.sat = true;
    else if (m == "approx" || m == "full")
      in.approx = true;
    else if (m == "lo" && (in.op == ptx_op::mul || in.op == ptx_op::mad)) {
    } else if (m == "hi" && (in.op == ptx_op::mul || in.op == ptx_op::mad))
      in.hi = true;
    else if (m == "wide" && (in.op == ptx_op::mul || in.op == ptx_op::mad))
      in.wide = true;
    else if (m == "uni" && in.op == ptx_op::bra)
      in.uni = true;
    else if (m == "nc" && in.op == ptx_op::ld) {
    }  // read-only path: same value
    else if ((m == "sync" || m == "aligned") && in.op == ptx_op::bar) {
    } else if (m == "to" && in.op == ptx_op::cvta)
      in.to_space = true;
    else if (m == "global")
      in.space = ptx_space::global;
    else if (m == "shared")
      in.space = ptx_space::shared;
    else if (m == "local")
      in.space = ptx_space::local;
    else if (m == "param")
      in.space = ptx_space::param;
    else if (m == "const")
      in.space = ptx_space::const_;
    else if (m == "v2" && (in.op == ptx_op::ld || in.op == ptx_op::st))
      in.vec = 2;
    else if (m == "v4" && (in.op == ptx_op::ld || in.op == ptx_op::st))
      in.vec = 4;
    else if (in.op == ptx_op::setp && (m == "and" || m == "or" || m == "xor"))
      in.boolop = m == "and" ? ptx_boolop::and_ : m == "or" ? ptx_boolop::or_ : ptx_boolop::xor_;
    else if ((in.op == ptx_op::membar || in.op == ptx_op::fence) &&
             (m == "cta" || m == "gl" || m == "sys" || m == "sc" || m == "acq_rel" || m == "gpu")) {
    } else
      fail("modifier ." + m + " of " + ptx_op_name(in.op) + " is not supported");
  }
  const bool untyped = in.op == ptx_op::bra || in.op == ptx_op::bar || in.op == ptx_op::ret ||
                       in.op == ptx_op::exit || in.op == ptx_op::membar || in.op == ptx_op::fence;
  if (untyped) {
    if (!types.empty()) fail(std::string(ptx_op_name(in.op)) + " takes no type");
    return;
  }
  if (in.op == ptx_op::cvt) {
    if (types.size() != 2) fail("cvt needs a destination and a source type");
    in.type = types[0];
    in.src_type = types[1];
    return;
  }
  if (types.size() != 1) fail(std::string(ptx_op_name(in.op)) + " needs exactly one type");
  in.type = in.src_type = types[0];
  if (in.wide) {
    if (in.type.bits != 16 && in.type.bits != 32) fail(".wide needs a 16- or 32-bit type");
    in.type.bits *= 2;
  }
}

ptx_op op_named(const std::string &name, bool *known) {
  *known = true;
  if (name == "barrier") return ptx_op::bar;
  for (size_t i = 0; i < sizeof(kOpNames) / sizeof(kOpNames[0]); i++)
    if (name == kOpNames[i]) return ptx_op(i);
  *known = false;
  return ptx_op::add;
}

// How many destinations each opcode writes (st, bra, bar... none).
size_t dst_count(const ptx_instr &in) {
  switch (in.op) {
    case ptx_op::st:
    case ptx_op::bra:
    case ptx_op::bar:
    case ptx_op::ret:
    case ptx_op::exit:
    case ptx_op::membar:
    case ptx_op::fence: return 0;
    default: return 1;
  }
}

// The type the i-th source operand is read as.
ptx_type src_type_of(const ptx_instr &in, size_t i) {
  const ptx_type u32{ptx_kind::u, 32}, pred{ptx_kind::pred, 1};
  switch (in.op) {
    case ptx_op::shl:
    case ptx_op::shr: return i == 1 ? u32 : in.type;
    case ptx_op::bfe: return i == 0 ? in.type : u32;
    case ptx_op::bfi: return i >= 2 ? u32 : in.type;
    case ptx_op::selp: return i == 2 ? pred : in.type;
    case ptx_op::setp: return i == 2 ? pred : in.type;
    case ptx_op::cvt: return in.src_type;
    case ptx_op::mul:
    case ptx_op::mad: return in.wide && !(in.op == ptx_op::mad && i == 2) ? in.src_type : in.type;
    default: return in.type;
  }
}

// The sources each opcode takes, and their kinds: the lanes read exactly these.
void arity_check(const ptx_instr &in) {
  size_t want;
  switch (in.op) {
    case ptx_op::abs:
    case ptx_op::neg:
    case ptx_op::not_:
    case ptx_op::cnot:
    case ptx_op::popc:
    case ptx_op::clz:
    case ptx_op::brev:
    case ptx_op::mov:
    case ptx_op::cvt:
    case ptx_op::cvta:
    case ptx_op::rcp:
    case ptx_op::sqrt:
    case ptx_op::rsqrt:
    case ptx_op::ex2:
    case ptx_op::lg2:
    case ptx_op::sin:
    case ptx_op::cos:
    case ptx_op::tanh:
    case ptx_op::ld:
    case ptx_op::bra: want = 1; break;
    case ptx_op::mad:
    case ptx_op::fma:
    case ptx_op::selp:
    case ptx_op::bfe: want = 3; break;
    case ptx_op::bfi: want = 4; break;
    case ptx_op::setp: want = in.boolop == ptx_boolop::none ? 2 : 3; break;
    case ptx_op::st: want = 1 + in.vec; break;
    case ptx_op::ret:
    case ptx_op::exit:
    case ptx_op::membar:
    case ptx_op::fence: want = 0; break;
    default: want = 2; break;
  }
  if (in.src.size() != want)
    fail("'" + in.text + "' has " + std::to_string(in.src.size()) + " source operands, " +
         ptx_op_name(in.op) + " takes " + std::to_string(want));
  for (size_t i = 0; i < in.src.size(); i++) {
    const ptx_operand::kind k = in.src[i].k;
    const bool memory = (in.op == ptx_op::ld || in.op == ptx_op::st) && i == 0;
    if (memory != (k == ptx_operand::kind::address))
      fail("'" + in.text + "': operand " + std::to_string(i + 1) +
           (memory ? " must be an address [...]" : " cannot be an address"));
    if (k == ptx_operand::kind::sink) fail("'" + in.text + "' reads the sink '_'");
  }
}

void instruction_read(kernel_reader &kr, const std::string &stmt, uint32_t line) {
  ptx_instr in{};
  in.line = line;
  in.text = stmt;
  std::string s = stmt;
  if (s[0] == '@') {
    size_t sp = s.find_first_of(" \t");
    if (sp == std::string::npos) fail("a guard without an instruction: '" + stmt + "'");
    std::string g = s.substr(1, sp - 1);
    in.guarded = true;
    if (g[0] == '!') in.guard_negate = true, g = g.substr(1);
    in.guard = kr.reg(g);
    s = s.substr(s.find_first_not_of(" \t", sp));
  }
  size_t sp = s.find_first_of(" \t");
  const std::string opcode = s.substr(0, sp);
  const std::string rest = sp == std::string::npos ? "" : s.substr(sp + 1);
  std::vector<std::string> parts;
  {
    std::string cur;
    for (char c : opcode + ".") {
      if (c == '.') {
        parts.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
  }
  bool known;
  in.op = op_named(parts[0], &known);
  if (!known) fail("instruction '" + opcode + "' is not supported by the PTX interpreter");
  modifiers_read(in, std::vector<std::string>(parts.begin() + 1, parts.end()));
  instr_reader r{kr, in};
  std::vector<std::string> ops = split_operands(rest);
  if (in.op == ptx_op::bar) {
    if (ops.size() != 1 || ops[0] != "0") fail("only bar.sync 0 (the whole block) is supported");
    kr.k.code.push_back(in);
    return;
  }
  size_t nd = dst_count(in);
  if (in.op == ptx_op::setp && !ops.empty() && ops[0].find('|') != std::string::npos)
    fail("setp with two destinations (p|q) is not supported");
  if (ops.size() < nd) fail("'" + stmt + "' has too few operands");
  const ptx_type pred{ptx_kind::pred, 1};
  for (size_t i = 0; i < nd; i++) {
    ptx_type t = in.op == ptx_op::setp ? pred : in.type;
    if (in.op == ptx_op::ld && in.vec > 1) {
      in.dst = r.vector(ops[0], t);
    } else {
      in.dst.push_back(r.operand(ops[i], t));
      if (in.dst.back().k != ptx_operand::kind::reg && in.dst.back().k != ptx_operand::kind::sink)
        fail("the destination of '" + stmt + "' is not a register");
    }
  }
  for (size_t i = nd; i < ops.size(); i++) {
    const size_t si = i - nd;
    if (in.op == ptx_op::st && si == 1 && in.vec > 1) {
      for (const ptx_operand &o : r.vector(ops[i], in.type)) in.src.push_back(o);
    } else {
      in.src.push_back(r.operand(ops[i], src_type_of(in, si)));
    }
  }
  arity_check(in);
  if (in.op == ptx_op::bra) {
    if (in.src.size() != 1 || in.src[0].k != ptx_operand::kind::label) fail("bra needs one label");
    kr.label_uses.emplace_back(uint32_t(kr.k.code.size()), ops[0]);
  }
  kr.k.code.push_back(in);
}

// Text cursor over the module with line numbers.
struct cursor {
  const std::string &t;
  size_t at = 0;
  uint32_t line = 1;

  void skip() {
    while (at < t.size()) {
      if (t[at] == '\n')
        line++, at++;
      else if (isspace((unsigned char)t[at]))
        at++;
      else if (t.compare(at, 2, "//") == 0) {
        while (at < t.size() && t[at] != '\n') at++;
      } else if (t.compare(at, 2, "/*") == 0) {
        size_t e = t.find("*/", at + 2);
        if (e == std::string::npos) fail("an unterminated comment");
        for (size_t i = at; i < e; i++) line += t[i] == '\n';
        at = e + 2;
      } else
        break;
    }
  }
  // Up to (not including) the first of `stops` outside comments; comments dropped.
  std::string until(const char *stops) {
    std::string out;
    while (at < t.size() && !strchr(stops, t[at])) {
      if (t.compare(at, 2, "//") == 0 || t.compare(at, 2, "/*") == 0) {
        skip();
        out += ' ';
        continue;
      }
      if (t[at] == '\n') line++;
      out += t[at++];
    }
    if (at >= t.size())
      fail(std::string("the text ends where one of \"") + stops + "\" was expected");
    return out;
  }
};

std::string trim(const std::string &x) {
  size_t b = x.find_first_not_of(" \t\n\r"), e = x.find_last_not_of(" \t\n\r");
  return b == std::string::npos ? "" : x.substr(b, e - b + 1);
}

void body_read(cursor &c, kernel_reader &kr) {
  int depth = 1;
  while (true) {
    c.skip();
    if (c.at >= c.t.size()) fail("the kernel body does not end");
    const char ch = c.t[c.at];
    if (ch == '{') {
      depth++, c.at++;
      continue;
    }
    if (ch == '}') {
      c.at++;
      if (--depth == 0) break;
      continue;
    }
    const uint32_t line = c.line;
    // A label ends with ':' before any ';'.
    size_t semi = c.t.find(';', c.at), colon = c.t.find(':', c.at);
    if (colon != std::string::npos && colon < semi && c.t.find_first_of(" \t\n", c.at) > colon) {
      const std::string label = c.t.substr(c.at, colon - c.at);
      if (kr.labels.count(label)) fail("label " + label + " twice");
      kr.labels[label] = uint32_t(kr.k.code.size());
      c.at = colon + 1;
      continue;
    }
    const std::string stmt = trim(c.until(";"));
    c.at++;
    try {
      if (stmt.rfind(".reg", 0) == 0)
        kr.declare_reg(stmt);
      else if (stmt.rfind(".shared", 0) == 0 || stmt.rfind(".local", 0) == 0)
        kr.declare_var(stmt);
      else if (stmt.rfind(".pragma", 0) == 0) {
      }  // "nounroll": a hint to ptxas
      else if (stmt[0] == '.')
        fail("directive '" + stmt + "' in a kernel body is not supported");
      else
        instruction_read(kr, stmt, line);
    } catch (const parse_error &e) {
      fail("PTX line " + std::to_string(line) + " (kernel " + kr.k.name + "): " + e.why);
    }
  }
  for (const auto &[i, label] : kr.label_uses) {
    auto it = kr.labels.find(label);
    if (it == kr.labels.end()) fail("branch to label " + label + ", which the kernel lacks");
    kr.k.code[i].src[0].label = it->second;
  }
  kr.k.registers = uint32_t(kr.k.register_names.size());
}

void entry_read(cursor &c, ptx_module &m, const std::vector<std::string> &module_shared) {
  c.skip();
  const std::string name = trim(c.until("("));
  c.at++;
  if (name.empty() || m.kernels.count(name)) fail("kernel name '" + name + "' empty or twice");
  ptx_kernel &k = m.kernels[name];
  k.name = name;
  kernel_reader kr{k};
  try {
    const std::string params = c.until(")");
    c.at++;
    for (const std::string &p : split_operands(params))
      if (!p.empty()) k.params.push_back(kr.declare_var(p));
    for (const std::string &v : module_shared) kr.declare_var(v);
    // Performance directives up to the body.
    const std::string perf = trim(c.until("{;"));
    if (c.t[c.at] == ';') fail("a kernel declaration without a body");
    c.at++;
    if (!perf.empty()) {
      if (perf.rfind(".reqntid", 0) != 0 && perf.rfind(".maxntid", 0) != 0)
        fail("kernel directive '" + perf + "' is not supported");
      std::vector<std::string> dims = split_operands(perf.substr(8));
      for (size_t i = 0; i < dims.size() && i < 3; i++)
        if (perf.rfind(".reqntid", 0) == 0)
          k.reqntid[i] = uint32_t(std::strtoul(dims[i].c_str(), nullptr, 10));
    }
    body_read(c, kr);
  } catch (const parse_error &e) {
    if (e.why.rfind("PTX line", 0) == 0) throw;
    fail("(kernel " + name + ") " + e.why);
  }
}

}  // namespace

const char *ptx_op_name(ptx_op op) { return kOpNames[size_t(op)]; }

bool ptx_parse(const std::string &text, ptx_module *out, std::string *err) {
  cursor c{text};
  std::vector<std::string> module_shared;
  try {
    while (true) {
      c.skip();
      if (c.at >= text.size()) break;
      const uint32_t line = c.line;
      try {
        // A directive word.
        size_t e = text.find_first_of(" \t\n;(", c.at);
        const std::string word = text.substr(c.at, e - c.at);
        if (word == ".version" || word == ".target" || word == ".address_size") {
          c.at = e;
          const std::string v = trim(c.until("\n"));
          if (word == ".version")
            out->version = v;
          else if (word == ".target")
            out->target = v;
          else if ((out->address_size = uint32_t(std::strtoul(v.c_str(), nullptr, 10))) != 64)
            fail(".address_size " + v + " (only 64 is supported)");
        } else if (word == ".visible" || word == ".weak") {
          c.at = e;
        } else if (word == ".entry") {
          c.at = e;
          entry_read(c, *out, module_shared);
        } else if (word == ".shared") {
          const std::string decl = trim(c.until(";"));
          c.at++;
          module_shared.push_back(decl);
        } else {
          fail("module directive '" + word +
               "' is not supported (a .func, .global or .const needs "
               "support in the interpreter first)");
        }
      } catch (const parse_error &pe) {
        if (pe.why.rfind("PTX line", 0) == 0) throw;
        fail("PTX line " + std::to_string(line) + ": " + pe.why);
      }
    }
    if (out->kernels.empty()) fail("PTX module without a kernel");
  } catch (const parse_error &pe) {
    *err =
        pe.why.rfind("PTX", 0) == 0 ? pe.why : "PTX line " + std::to_string(c.line) + ": " + pe.why;
    return false;
  } catch (const std::exception &ex) {  // std::stoull on a damaged number
    *err = "PTX line " + std::to_string(c.line) + ": cannot read a number (" + ex.what() + ")";
    return false;
  }
  return true;
}

}  // namespace capgraph::nv
