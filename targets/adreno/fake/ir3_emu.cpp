// The ir3 executor: see ir3_emu.h for what is modelled and the sources.
#include "ir3_emu.h"

#include <algorithm>
#include <atomic>
#include <cfenv>
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>

#include "hcq/half_float.h"

namespace capgraph::adreno {
namespace {

using o = ir3_op;

// --- Numbers -------------------------------------------------------------------------------------

float f32_of(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}
uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

using hcq::half_to_float;

// Rounding modes of the cat1 ROUND field (Mesa instr-a3xx.h round_t).
enum round_mode : uint8_t { round_zero = 0, round_even = 1, round_up = 2, round_down = 3 };

// `x` to float16 bits with a rounding mode. Overflow gives infinity where the mode rounds away
// from zero in that direction, else the largest finite half.
uint16_t half_of(double x, int mode) {
  if (std::isnan(x)) return 0x7e00;
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  const bool neg = sign != 0;
  // Round the magnitude up (away from zero) when...
  auto away = [&](double frac, uint32_t q) {
    switch (mode) {
      case round_even: return frac > 0.5 || (frac == 0.5 && (q & 1));
      case round_up: return frac > 0 && !neg;
      case round_down: return frac > 0 && neg;
      default: return false;
    }
  };
  if (std::isinf(a)) return sign | 0x7c00;
  uint32_t h;
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  e -= 1;             // a in [2^e, 2^(e+1))
  if (a == 0) return sign;
  if (e < -14) {  // subnormal: units of 2^-24
    const double units = std::ldexp(a, 24);
    const double q = std::floor(units);
    h = uint32_t(q) + away(units - q, uint32_t(q));
  } else {
    const double units = std::ldexp(a, 10 - e);  // in [1024, 2048)
    const double q = std::floor(units);
    if (e + 15 >= 31) {
      h = 0x7c00;
    } else {
      h = uint32_t(e + 15) << 10 | (uint32_t(q) - 1024);
      h += away(units - q, uint32_t(q));
    }
  }
  if (h >= 0x7c00) {
    const bool to_inf =
        mode == round_even || (mode == round_up && !neg) || (mode == round_down && neg);
    h = to_inf ? 0x7c00 : 0x7bff;
  }
  return uint16_t(sign | h);
}

// `x` to float32 with a rounding mode (x exact in double).
float f32_round(double x, int mode) {
  float f = float(x);  // to nearest even (the host's default)
  if (mode == round_even || std::isnan(x) || double(f) == x) return f;
  const bool above = std::fabs(double(f)) > std::fabs(x);
  if (mode == round_zero && above) f = std::nextafter(f, 0.0f);
  if (mode == round_up && double(f) < x)
    f = std::nextafter(f, std::numeric_limits<float>::infinity());
  if (mode == round_down && double(f) > x)
    f = std::nextafter(f, -std::numeric_limits<float>::infinity());
  return f;
}

// Denormals flushed to zero (turnip reports fp32 and fp16 denorms flushed, not preserved).
float ftz(float f) {
  return (bits_of(f) & 0x7f800000u) == 0 ? f32_of(bits_of(f) & 0x80000000u) : f;
}
uint16_t ftz16(uint16_t h) { return (h & 0x7c00) == 0 ? uint16_t(h & 0x8000) : h; }

// The float lookup table of cat2/cat4 immediates (ir3-common.xml #mulitsrc-immed-flut).
const double flut[12] = {0.0,
                         0.5,
                         1.0,
                         2.0,
                         M_E,
                         M_PI,
                         1 / M_PI,
                         1 / M_LOG2E,
                         M_LOG2E,
                         1 / 3.321928094887362,
                         3.321928094887362,
                         4.0};

int64_t sext(uint64_t v, int bits) {
  const uint64_t m = 1ull << (bits - 1);
  v &= (bits == 64 ? ~0ull : (1ull << bits) - 1);
  return int64_t((v ^ m) - m);
}

bool type_float(uint8_t t) { return t == ir3_f16 || t == ir3_f32; }
bool type_signed(uint8_t t) { return t == ir3_s16 || t == ir3_s32; }
int type_bytes(uint8_t t) {
  switch (t) {
    case ir3_f32:
    case ir3_u32:
    case ir3_s32: return 4;
    case ir3_u8:
    case ir3_u8_32: return 1;
    default: return 2;
  }
}

// mov/cov: raw source bits of `st` to raw destination bits of `dt` (Mesa ir3_compiler_nir.c
// create_cov: float conversions honour ROUND, float->int truncates under the default ROUND 0;
// 8-bit sources are sign-extended, which is why Mesa masks with 0xff to zero-extend them).
uint32_t convert(uint32_t v, uint8_t st, uint8_t dt, uint8_t round) {
  if (st == dt) return v;
  if (type_float(st)) {
    const double x = st == ir3_f16 ? double(half_to_float(uint16_t(v))) : double(f32_of(v));
    if (dt == ir3_f32) return bits_of(f32_round(x, round));
    if (dt == ir3_f16) return half_of(x, round);
    if (std::isnan(x)) return 0;
    double r;
    switch (round) {
      case round_even: r = std::nearbyint(x); break;
      case round_up: r = std::ceil(x); break;
      case round_down: r = std::floor(x); break;
      default: r = std::trunc(x); break;
    }
    const int bits = type_bytes(dt) * 8;
    const double lo = type_signed(dt) ? -std::ldexp(1, bits - 1) : 0;
    const double hi = type_signed(dt) ? std::ldexp(1, bits - 1) - 1 : std::ldexp(1, bits) - 1;
    r = r < lo ? lo : r > hi ? hi : r;
    return uint32_t(int64_t(r)) & (bits == 32 ? 0xffffffffu : (1u << bits) - 1);
  }
  int64_t x;
  switch (st) {
    case ir3_u16: x = v & 0xffff; break;
    case ir3_s16: x = sext(v, 16); break;
    case ir3_s32: x = int32_t(v); break;
    case ir3_u8: x = sext(v, 8); break;
    case ir3_u8_32: x = v & 0xff; break;
    default: x = v; break;
  }
  if (dt == ir3_f32) return bits_of(f32_round(double(x), round));
  if (dt == ir3_f16) return half_of(double(x), round);
  switch (dt) {
    case ir3_u16:
    case ir3_s16: return uint32_t(x) & 0xffff;
    case ir3_u8:
    case ir3_u8_32: return uint32_t(x) & 0xff;
    default: return uint32_t(x);
  }
}

// --- Registers -----------------------------------------------------------------------------------

// One wave's state. Registers are stored register-major: full register `regid` of fiber `lane` at
// file[regid * lanes + lane]; p0.x-w, a0.x and a1.x follow the footprint's registers.
struct wave {
  int lanes = 64;
  int fiber0 = 0;      // index of lane 0 in the workgroup
  uint32_t nfull = 0;  // footprint in regids
  std::vector<uint32_t> file;
  uint32_t shared[32] = {};
  std::vector<uint32_t> pc;
  ir3_lanes live, last_group;
  bool started = false, at_barrier = false;
  bool uniform = true;    // all live fibers at the same pc
  uint8_t pred_mode = 0;  // 0: none, 1: predt, 2: predf
  ir3_lanes pred;
  uint64_t executed = 0;
  std::vector<uint8_t> priv;
  ir3_hazard_tracker hazards;
  uint32_t *p0(int comp) { return &file[(nfull + comp) * lanes]; }
  uint32_t *a(int n) { return &file[(nfull + 4 + n) * lanes]; }
};

// Where an operand's value comes from for one repetition: a register column (stride 1 per
// fiber, 0 for shared registers), a value every fiber sees (constant, immediate), or a per-fiber
// relative address.
struct column {
  uint32_t *p = nullptr;  // a value column points at its own `value`: columns are never copied
  int stride = 0, shift = 0;
  uint32_t mask = 0xffffffffu;
  bool half = false, rel = false, pred = false;
  uint32_t value = 0;
  const ir3_operand *op = nullptr;  // relative: resolved per fiber
  int k = 0;
  bool fctx = false;
  column() = default;
  column(const column &) = delete;
  column &operator=(const column &) = delete;
  void clear() {
    p = nullptr;
    stride = shift = k = 0;
    mask = 0xffffffffu;
    half = rel = pred = fctx = false;
    value = 0;
    op = nullptr;
  }
  void set_value(uint32_t v) {
    value = v;
    p = &value;
    stride = 0;
  }
  uint32_t load(int lane) const { return (p[lane * stride] >> shift) & mask; }
  void store(int lane, uint32_t v) const {
    uint32_t &x = p[lane * stride];
    if (pred) v = v != 0;
    x = (x & ~(mask << shift)) | (v & mask) << shift;
  }
};

// --- The runner ----------------------------------------------------------------------------------

// What the host threads of one dispatch share: the next workgroup to run, the first failure in
// workgroup order (so the error does not depend on the thread count), the images stored so far.
struct dispatch_shared {
  std::atomic<uint64_t> next{0};
  std::atomic<uint64_t> error_at{UINT64_MAX};
  std::mutex lock;
  std::string error;
  std::vector<std::pair<uint64_t, uint64_t>> stored_images;
};

class runner {
 public:
  runner(const ir3_dispatch &d, const ir3_region_find &find, ir3_counts *counts,
         ir3_findings *findings, dispatch_shared *shared)
      : d_(d), find_(find), c_(*counts), f_(*findings), s_(*shared) {}
  bool run();  // workgroups until none is left

 private:
  bool workgroup(uint32_t x, uint32_t y, uint32_t z);
  bool wave_run(wave &w);
  bool step(wave &w, uint32_t at, const ir3_lanes &group, const ir3_lanes &exec);
  bool alu(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool mov(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool cat2(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool cat3(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool cat4(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool mem(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool tex(wave &w, const ir3_instr &i, const ir3_lanes &exec);
  bool image(wave &w, const ir3_instr &i, const ir3_lanes &exec);

  bool fail(const std::string &what) {
    if (err_.empty()) {
      err_ = "kernel " + d_.kernel + ": instruction " + std::to_string(at_);
      if (at_ < d_.program.size()) err_ += " (" + ir3_render(d_.program[at_], int(at_)) + ")";
      err_ += " of workgroup (" + std::to_string(wg_[0]) + "," + std::to_string(wg_[1]) + "," +
              std::to_string(wg_[2]) + "): " + what;
    }
    return false;
  }
  static std::string reg_name(uint16_t reg, bool half) {
    return std::string(half ? "hr" : "r") + std::to_string(reg >> 2) + "." + "xyzw"[reg & 3];
  }

  // A register column (regid of the operand's size) or a failure.
  bool reg_column(wave &w, uint16_t reg, bool half, column *c);
  // The column of source `op` for repetition k, in a float (`fctx`) or integer context.
  bool src_column(wave &w, const ir3_operand &op, int k, bool fctx, column *c);
  bool dst_column(wave &w, const ir3_operand &op, int k, column *c);
  uint32_t const_value(uint32_t index, bool half, bool fctx);
  bool get(wave &w, const column &c, int lane, uint32_t *v) {
    if (__builtin_expect(c.rel, 0)) return get_rel(w, c, lane, v);
    *v = c.load(lane);
    return true;
  }
  bool put(wave &w, const column &c, int lane, uint32_t v) {
    if (__builtin_expect(c.rel, 0)) return put_rel(w, c, lane, v);
    c.store(lane, v);
    return true;
  }
  bool get_rel(wave &w, const column &c, int lane, uint32_t *v);
  bool put_rel(wave &w, const column &c, int lane, uint32_t v);

  // Global memory through the caller's mapping (the last region is kept).
  uint8_t *global(uint64_t addr, uint64_t bytes, const char *what, int lane);

  const ir3_dispatch &d_;
  const ir3_region_find &find_;
  ir3_counts &c_;
  ir3_findings &f_;
  dispatch_shared &s_;
  std::string err_;
  uint32_t wg_[3] = {0, 0, 0};
  uint32_t at_ = 0;
  ir3_region last_{};
  std::vector<uint8_t> shared_;
  std::vector<wave> waves_;
  uint32_t sink_ = 0;  // where writes to r63 ("no register") go
};

bool runner::reg_column(wave &w, uint16_t reg, bool half, column *c) {
  c->clear();
  c->half = half;
  c->mask = half ? 0xffffu : 0xffffffffu;
  const uint16_t full =
      half ? (reg < ir3_regid_shared ? reg / 2 : ir3_regid_shared + (reg - ir3_regid_shared) / 2)
           : reg;
  c->shift = half ? 16 * (reg & 1) : 0;
  if (full >= ir3_regid_shared && full < ir3_regid_shared + 32) {
    c->p = &w.shared[full - ir3_regid_shared];
    c->stride = 0;
    return true;
  }
  c->stride = 1;
  if (half && !d_.merged_regs) return fail("half registers without MERGEDREGS are not modelled");
  if (full < ir3_regid_shared) {
    if (full >= w.nfull)
      return fail(reg_name(reg, half) + " is past the register footprint (FULLREGFOOTPRINT " +
                  std::to_string(d_.full_regs) + " vec4)");
    c->p = &w.file[size_t(full) * w.lanes];
    return true;
  }
  if (half) return fail("a half access to a0/a1/p0 is not modelled");
  if (full >= ir3_regid_p0 && full < ir3_regid_p0 + 4) {
    c->p = w.p0(full - ir3_regid_p0);
    c->pred = true;
    return true;
  }
  if (full == ir3_regid_a0 || full == ir3_regid_a1) {
    c->p = w.a(full - ir3_regid_a0);
    return true;
  }
  if (full >= 252) {  // r63: "no register"
    c->p = &sink_;
    c->stride = 0;
    return true;
  }
  return fail("register " + reg_name(reg, half) + " is not a register of an a6xx compute shader");
}

uint32_t runner::const_value(uint32_t index, bool half, bool fctx) {
  const uint32_t v = d_.consts[index];
  if (!half) return v;
  if (d_.constant_demotion) return fctx ? half_of(f32_of(v), round_even) : v & 0xffff;
  return (d_.consts[index / 2] >> (16 * (index & 1))) & 0xffff;
}

bool runner::src_column(wave &w, const ir3_operand &op, int k, bool fctx, column *c) {
  const int adv = op.r ? k : 0;
  switch (op.kind) {
    case ir3_operand::gpr: return reg_column(w, uint16_t(op.num + adv), op.half, c);
    case ir3_operand::constant: {
      c->clear();
      const uint32_t n = op.num + adv;
      if (n >= d_.constlen_vec4 * 4)
        return fail("c" + std::to_string(n >> 2) + "." + "xyzw"[n & 3] +
                    " is past the constants loaded (constlen " + std::to_string(d_.constlen_vec4) +
                    " vec4)");
      c->half = op.half;
      c->set_value(const_value(n, op.half, fctx));
      return true;
    }
    case ir3_operand::immed: {
      c->clear();
      c->half = op.half;
      if (op.flut) {
        if (op.value > 11)
          return fail("float-table immediate " + std::to_string(op.value) + " is not in the table");
        const double v = flut[op.value];
        c->set_value(op.half ? half_of(v, round_even) : bits_of(float(v)));
      } else {
        c->set_value(op.half ? uint32_t(op.value) & 0xffff : uint32_t(op.value));
      }
      return true;
    }
    case ir3_operand::rel_gpr:
    case ir3_operand::rel_const:
      c->clear();
      c->rel = true;
      c->half = op.half;
      c->op = &op;
      c->k = adv;
      c->fctx = fctx;
      return true;
    default: return fail("an operand of no kind");
  }
}

bool runner::dst_column(wave &w, const ir3_operand &op, int k, column *c) {
  if (op.kind == ir3_operand::rel_gpr) {
    c->clear();
    c->rel = true;
    c->half = op.half;
    c->op = &op;
    c->k = k;
    return true;
  }
  return reg_column(w, uint16_t(op.num + k), op.half, c);
}

bool runner::get_rel(wave &w, const column &c, int lane, uint32_t *v) {
  const int32_t at = int32_t(w.a(0)[lane]) + c.op->value + c.k;
  if (c.op->kind == ir3_operand::rel_const) {
    if (at < 0 || uint32_t(at) >= d_.constlen_vec4 * 4)
      return fail("c<a0.x> reads constant " + std::to_string(at) + ", past the constants loaded");
    *v = const_value(uint32_t(at), c.half, c.fctx);
    return true;
  }
  column r;
  if (at < 0 || at >= (c.half ? 2 : 1) * ir3_regid_shared ||
      !reg_column(w, uint16_t(at), c.half, &r))
    return fail("r<a0.x> reads register " + std::to_string(at) + ", past the register file");
  return get(w, r, lane, v);
}

bool runner::put_rel(wave &w, const column &c, int lane, uint32_t v) {
  const int32_t at = int32_t(w.a(0)[lane]) + c.op->value + c.k;
  column r;
  if (at < 0 || at >= (c.half ? 2 : 1) * ir3_regid_shared ||
      !reg_column(w, uint16_t(at), c.half, &r))
    return fail("r<a0.x> writes register " + std::to_string(at) + ", past the register file");
  return put(w, r, lane, v);
}

uint8_t *runner::global(uint64_t addr, uint64_t bytes, const char *what, int lane) {
  if (!(last_.cpu && addr >= last_.gpu && addr + bytes <= last_.gpu + last_.size)) {
    last_ = find_(addr);
    if (!last_.cpu || addr < last_.gpu || addr + bytes > last_.gpu + last_.size) {
      char b[96];
      snprintf(b, sizeof b, " of %llu bytes at 0x%llx (fiber %d) is outside every allocation",
               (unsigned long long)bytes, (unsigned long long)addr, lane);
      last_ = {};
      fail(std::string("memory fault: ") + what + b);
      return nullptr;
    }
  }
  return last_.cpu + (addr - last_.gpu);
}

// Iterates the set bits of a lane mask.
template <class F>
bool each(const ir3_lanes &m, F &&f) {
  for (int h = 0; h < 2; h++)
    for (uint64_t b = m.w[h]; b; b &= b - 1)
      if (!f(h * 64 + __builtin_ctzll(b))) return false;
  return true;
}

// --- ALU -----------------------------------------------------------------------------------------

bool runner::mov(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  if (i.src_type == ir3_u8_32 || i.dst_type == ir3_u8_32)
    return fail("cat1 type 7 is not modelled");
  const uint64_t dreg = (i.word >> 32) & 0xff;
  if (i.op == o::movmsk) {
    column d;
    for (int k = 0; k <= i.repeat; k++) {
      if (!dst_column(w, i.dst[0], k, &d)) return false;
      const uint32_t bits = uint32_t(exec.w[k / 2] >> (32 * (k & 1)));
      if (!each(exec, [&](int lane) { return put(w, d, lane, bits); })) return false;
    }
    return true;
  }
  if (i.op == o::swz || i.op == o::gat || i.op == o::sct) {
    // All sources are read before any destination is written (ir3-cat1.xml).
    const bool fs = type_float(i.src_type);
    column s[4], dd[4];
    const int ns = i.op == o::sct ? 4 : i.nsrc, nd = i.op == o::gat ? 4 : i.ndst;
    for (int k = 0; k < ns; k++) {
      ir3_operand op = i.op == o::sct ? i.src[0] : i.src[k];
      if (i.op == o::sct) op.num = uint16_t(op.num + k);
      if (!src_column(w, op, 0, fs, &s[k])) return false;
    }
    for (int k = 0; k < nd; k++) {
      ir3_operand op = i.op == o::gat ? i.dst[0] : i.dst[k];
      if (i.op == o::gat) op.num = uint16_t(op.num + k);
      if (!dst_column(w, op, 0, &dd[k])) return false;
    }
    return each(exec, [&](int lane) {
      uint32_t v[4];
      for (int k = 0; k < ns; k++)
        if (!get(w, s[k], lane, &v[k])) return false;
      for (int k = 0; k < nd; k++)
        if (!put(w, dd[k], lane, convert(v[k], i.src_type, i.dst_type, i.round))) return false;
      return true;
    });
  }
  const bool fs = type_float(i.src_type);
  column s, d;
  for (int k = 0; k <= i.repeat; k++) {
    if (!src_column(w, i.src[0], k, fs, &s)) return false;
    if (dreg == ir3_regid_a0 || dreg == ir3_regid_a1) {
      // mova / mova1: a0.x takes the s16 value, a1.x the u16 value.
      if (!reg_column(w, uint16_t(dreg), false, &d)) return false;
      const bool a0 = dreg == ir3_regid_a0;
      if (!each(exec, [&](int lane) {
            uint32_t v;
            if (!get(w, s, lane, &v)) return false;
            return put(w, d, lane, a0 ? uint32_t(int32_t(int16_t(v))) : v & 0xffff);
          }))
        return false;
      continue;
    }
    if (!dst_column(w, i.dst[0], k, &d)) return false;
    const bool shared_dst = d.stride == 0 && d.p && d.p != &sink_;
    const int first = exec.first();
    if (!each(exec, [&](int lane) {
          if (shared_dst && lane != first) return true;
          uint32_t v;
          if (!get(w, s, lane, &v)) return false;
          return put(w, d, lane, convert(v, i.src_type, i.dst_type, i.round));
        }))
      return false;
  }
  return true;
}

// Cat2: op kinds by how they read their sources (Mesa ir3.h ir3_cat2_absneg, ir3_output_conv_type).
enum kind2 : uint8_t { k_float, k_int, k_signed, k_bit };

kind2 kind_of(ir3_op op) {
  switch (op) {
    case o::add_f:
    case o::min_f:
    case o::max_f:
    case o::mul_f:
    case o::sign_f:
    case o::cmps_f:
    case o::absneg_f:
    case o::floor_f:
    case o::ceil_f:
    case o::rndne_f:
    case o::rndaz_f:
    case o::trunc_f:
    case o::cmpv_f: return k_float;
    case o::add_s:
    case o::sub_s:
    case o::cmps_s:
    case o::min_s:
    case o::max_s:
    case o::absneg_s:
    case o::mul_s24:
    case o::clz_s:
    case o::cmpv_s: return k_signed;
    case o::and_b:
    case o::or_b:
    case o::not_b:
    case o::xor_b:
    case o::bfrev_b:
    case o::clz_b:
    case o::shl_b:
    case o::shr_b:
    case o::ashr_b:
    case o::mgen_b:
    case o::getbit_b:
    case o::cbits_b: return k_bit;
    default: return k_int;
  }
}

bool compare(int cond, double a, double b) {
  switch (cond) {
    case 0: return a < b;
    case 1: return a <= b;
    case 2: return a > b;
    case 3: return a >= b;
    case 4: return a == b;
    default: return a != b;
  }
}

// Fast paths: full-precision cat2/cat3 with register, const or immediate operands and a full (or
// p0) destination, the op chosen once per instruction instead of per fiber. The generic loops
// below define the semantics; these compute the same.
template <class F>
void lanes(const ir3_lanes &exec, F &&f) {
  for (int h = 0; h < 2; h++)
    for (uint64_t b = exec.w[h]; b; b &= b - 1) f(h * 64 + __builtin_ctzll(b));
}
inline float fin(uint32_t v, bool abs, bool neg) {
  float x = ftz(f32_of(v));
  if (abs) x = std::fabs(x);
  return neg ? -x : x;
}

bool cat2_fast(const ir3_instr &i, const ir3_lanes &exec, const column &s0, const column &s1,
               const column &d) {
  if (!i.full || s0.rel || s1.rel || d.rel || (i.dst_half && !d.pred)) return false;
  const bool a0 = i.src[0].abs, n0 = i.src[0].neg, a1 = i.src[1].abs, n1 = i.src[1].neg;
  const bool sat = i.sat;
  auto fout = [sat](float v) {
    if (sat) v = std::isnan(v) ? 0.0f : v < 0 ? 0.0f : v > 1 ? 1.0f : v;
    return bits_of(ftz(v));
  };
  auto f2 = [&](auto op) {
    lanes(exec,
          [&](int l) { d.store(l, fout(op(fin(s0.load(l), a0, n0), fin(s1.load(l), a1, n1)))); });
    return true;
  };
  // Bitwise ops read (neg) as NOT (Mesa ir3.h ir3_cat2_absneg).
  auto b2 = [&](auto op) {
    const uint32_t x0 = n0 ? ~0u : 0u, x1 = n1 ? ~0u : 0u;
    lanes(exec, [&](int l) { d.store(l, op(s0.load(l) ^ x0, s1.load(l) ^ x1)); });
    return true;
  };
  auto i2 = [&](auto op) {
    lanes(exec, [&](int l) { d.store(l, op(s0.load(l), s1.load(l))); });
    return true;
  };
  const int cond = i.cond;
  switch (i.op) {
    case o::add_f: return f2([](float x, float y) { return x + y; });
    case o::mul_f: return f2([](float x, float y) { return x * y; });
    case o::min_f: return f2([](float x, float y) { return std::fmin(x, y); });
    case o::max_f: return f2([](float x, float y) { return std::fmax(x, y); });
    case o::cmps_f:
      lanes(exec, [&](int l) {
        d.store(l, compare(cond, fin(s0.load(l), a0, n0), fin(s1.load(l), a1, n1)));
      });
      return true;
    default: break;
  }
  if (sat) return false;
  switch (i.op) {
    case o::add_u:
    case o::add_s: return i2([](uint32_t x, uint32_t y) { return x + y; });
    case o::sub_u:
    case o::sub_s: return i2([](uint32_t x, uint32_t y) { return x - y; });
    case o::min_u: return i2([](uint32_t x, uint32_t y) { return x < y ? x : y; });
    case o::max_u: return i2([](uint32_t x, uint32_t y) { return x > y ? x : y; });
    case o::min_s:
      return i2([](uint32_t x, uint32_t y) { return int32_t(x) < int32_t(y) ? x : y; });
    case o::max_s:
      return i2([](uint32_t x, uint32_t y) { return int32_t(x) > int32_t(y) ? x : y; });
    case o::mul_u24:
      return i2([](uint32_t x, uint32_t y) { return (x & 0xffffff) * (y & 0xffffff); });
    case o::mul_s24:
      return i2([](uint32_t x, uint32_t y) { return uint32_t(sext(x, 24) * sext(y, 24)); });
    case o::mull_u: return i2([](uint32_t x, uint32_t y) { return (x & 0xffff) * (y & 0xffff); });
    case o::cmps_u:
      return i2(
          [cond](uint32_t x, uint32_t y) { return uint32_t(compare(cond, double(x), double(y))); });
    case o::cmps_s:
      return i2([cond](uint32_t x, uint32_t y) {
        return uint32_t(compare(cond, double(int32_t(x)), double(int32_t(y))));
      });
    case o::and_b: return b2([](uint32_t x, uint32_t y) { return x & y; });
    case o::or_b: return b2([](uint32_t x, uint32_t y) { return x | y; });
    case o::xor_b: return b2([](uint32_t x, uint32_t y) { return x ^ y; });
    case o::shl_b: return b2([](uint32_t x, uint32_t y) { return x << (y & 31); });
    case o::shr_b: return b2([](uint32_t x, uint32_t y) { return x >> (y & 31); });
    case o::ashr_b:
      return b2([](uint32_t x, uint32_t y) { return uint32_t(int32_t(x) >> (y & 31)); });
    default: return false;
  }
}

bool cat3_fast(const ir3_instr &i, const ir3_lanes &exec, const column &s0, const column &s1,
               const column &s2, const column &d, bool fused) {
  if (!i.full || i.sat || s0.rel || s1.rel || s2.rel || d.rel || (i.dst_half && !d.pred))
    return false;
  auto i3 = [&](auto op) {
    lanes(exec, [&](int l) { d.store(l, op(s0.load(l), s1.load(l), s2.load(l))); });
    return true;
  };
  switch (i.op) {
    case o::mad_f32: {
      const bool n0 = i.src[0].neg, n1 = i.src[1].neg, n2 = i.src[2].neg;
      if (fused)
        lanes(exec, [&](int l) {
          const float x = fin(s0.load(l), false, n0), y = fin(s1.load(l), false, n1),
                      z = fin(s2.load(l), false, n2);
          d.store(l, bits_of(ftz(std::fma(x, y, z))));
        });
      else
        lanes(exec, [&](int l) {
          const float x = fin(s0.load(l), false, n0), y = fin(s1.load(l), false, n1),
                      z = fin(s2.load(l), false, n2);
          d.store(l, bits_of(ftz(x * y + z)));
        });
      return true;
    }
    case o::sel_b32: return i3([](uint32_t x, uint32_t y, uint32_t z) { return y ? x : z; });
    case o::madsh_m16:
      return i3([](uint32_t x, uint32_t y, uint32_t z) {
        return (((x & 0xffff) * (y >> 16)) << 16) + z;
      });
    case o::mad_u24:
      return i3(
          [](uint32_t x, uint32_t y, uint32_t z) { return (x & 0xffffff) * (y & 0xffffff) + z; });
    case o::mad_s24:
      return i3([](uint32_t x, uint32_t y, uint32_t z) {
        return uint32_t(sext(x, 24) * sext(y, 24)) + z;
      });
    case o::shrm: return i3([](uint32_t x, uint32_t y, uint32_t z) { return (y >> (x & 31)) & z; });
    case o::shlm: return i3([](uint32_t x, uint32_t y, uint32_t z) { return (y << (x & 31)) & z; });
    case o::shrg: return i3([](uint32_t x, uint32_t y, uint32_t z) { return (y >> (x & 31)) | z; });
    case o::shlg: return i3([](uint32_t x, uint32_t y, uint32_t z) { return (y << (x & 31)) | z; });
    case o::andg: return i3([](uint32_t x, uint32_t y, uint32_t z) { return (y & x) | z; });
    default: return false;
  }
}

bool runner::cat2(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  const kind2 kind = kind_of(i.op);
  const bool half = !i.full, fctx = kind == k_float;
  const int bits = half ? 16 : 32;
  switch (i.op) {
    case o::bary_f:
    case o::flat_b:
    case o::cmpv_f:
    case o::cmpv_u:
    case o::cmpv_s:
    case o::mgen_b:
    case o::setrm:
    case o::shb:
    case o::msad: return fail("not modelled");
    default: break;
  }
  if (i.cond > 5) return fail("compare condition " + std::to_string(i.cond) + " is not modelled");
  if (i.sat && kind != k_float && i.op != o::add_u && i.op != o::add_s && i.op != o::sub_u &&
      i.op != o::sub_s)
    return fail("(sat) on an integer op other than add/sub is not modelled");
  const bool cmp = i.op == o::cmps_f || i.op == o::cmps_u || i.op == o::cmps_s;
  const bool out_signed = kind == k_signed || i.op == o::mad_s24;
  column s0, s1, d;
  for (int k = 0; k <= i.repeat; k++) {
    if (!src_column(w, i.src[0], k, fctx, &s0)) return false;
    if (i.nsrc > 1 && !src_column(w, i.src[1], k, fctx, &s1)) return false;
    if (!dst_column(w, i.dst[0], k, &d)) return false;
    if (cat2_fast(i, exec, s0, i.nsrc > 1 ? s1 : s0, d)) continue;
    const bool to_half = i.dst_half && !d.pred;
    const bool conv = !cmp && !d.pred && to_half != half;
    if (!each(exec, [&](int lane) {
          uint32_t a = 0, b = 0;
          if (!get(w, s0, lane, &a)) return false;
          if (i.nsrc > 1 && !get(w, s1, lane, &b)) return false;
          uint32_t r = 0;
          if (kind == k_float) {
            auto rd = [&](uint32_t v, const ir3_operand &op) {
              float x = half ? half_to_float(ftz16(uint16_t(v))) : ftz(f32_of(v));
              if (op.abs) x = std::fabs(x);
              if (op.neg) x = -x;
              return x;
            };
            const float x = rd(a, i.src[0]), y = i.nsrc > 1 ? rd(b, i.src[1]) : 0.0f;
            double v = 0;
            switch (i.op) {
              case o::add_f: v = half ? double(x) + double(y) : double(x + y); break;
              case o::mul_f: v = half ? double(x) * double(y) : double(x * y); break;
              case o::min_f: v = std::fmin(x, y); break;
              case o::max_f: v = std::fmax(x, y); break;
              case o::sign_f:
                v = x > 0 ? 1.0 : x < 0 ? -1.0 : std::isnan(x) ? 0.0 : double(x);
                break;
              case o::absneg_f: v = x; break;
              case o::floor_f: v = std::floor(x); break;
              case o::ceil_f: v = std::ceil(x); break;
              case o::trunc_f: v = std::trunc(x); break;
              case o::rndne_f: v = std::nearbyint(x); break;
              case o::rndaz_f: v = std::round(x); break;
              default: r = compare(i.cond, x, y); break;  // cmps.f
            }
            if (!cmp) {
              if (i.sat) v = std::isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
              r = to_half ? ftz16(half_of(v, round_even)) : bits_of(ftz(float(v)));
            }
          } else {
            auto rd = [&](uint32_t v, const ir3_operand &op) -> int64_t {
              int64_t x =
                  kind == k_signed ? sext(v, bits) : int64_t(v & (half ? 0xffffu : 0xffffffffu));
              if (kind == k_bit && op.neg)
                x = int64_t(~uint64_t(x) & (half ? 0xffffu : 0xffffffffu));
              if (i.op == o::absneg_s) {
                if (op.abs) x = x < 0 ? -x : x;
                if (op.neg) x = -x;
              }
              return x;
            };
            const int64_t x = rd(a, i.src[0]), y = i.nsrc > 1 ? rd(b, i.src[1]) : 0;
            const uint64_t ux = uint64_t(x), uy = uint64_t(y), mask = half ? 0xffffu : 0xffffffffu;
            int64_t v = 0;
            switch (i.op) {
              case o::add_u:
              case o::add_s: v = x + y; break;
              case o::sub_u:
              case o::sub_s: v = x - y; break;
              case o::min_u:
              case o::min_s: v = x < y ? x : y; break;
              case o::max_u:
              case o::max_s: v = x > y ? x : y; break;
              case o::absneg_s: v = x; break;
              case o::and_b: v = int64_t(ux & uy); break;
              case o::or_b: v = int64_t(ux | uy); break;
              case o::xor_b: v = int64_t(ux ^ uy); break;
              case o::not_b: v = int64_t(~ux & mask); break;
              case o::mul_u24: v = int64_t((ux & 0xffffff) * (uy & 0xffffff)); break;
              case o::mul_s24: v = sext(ux, 24) * sext(uy, 24); break;
              // nir_opcodes.py umul_low: the low halves' product.
              case o::mull_u: v = int64_t((ux & 0xffff) * (uy & 0xffff)); break;
              case o::shl_b: v = int64_t(ux << (uy & (bits - 1))); break;
              case o::shr_b: v = int64_t((ux & mask) >> (uy & (bits - 1))); break;
              case o::ashr_b: v = sext(ux, bits) >> (uy & (bits - 1)); break;
              case o::bfrev_b: {
                uint64_t rv = 0;
                for (int bit = 0; bit < bits; bit++) rv |= ((ux >> bit) & 1) << (bits - 1 - bit);
                v = int64_t(rv);
                break;
              }
              // No bit to find gives -1: Mesa lowers ufind_msb to src ? 31 - clz.b : clz.b,
              // find_lsb to clz.b(bfrev.b) and ifind_msb to clz.s >= 0 ? 31 - clz.s : clz.s, and
              // NIR defines all three as -1 there (ir3_compiler_nir.c, nir_opcodes.py).
              case o::clz_b: {
                int n = 0;
                while (n < bits && !((ux >> (bits - 1 - n)) & 1)) n++;
                v = n == bits ? -1 : n;
                break;
              }
              case o::clz_s: {
                const uint64_t t = (x < 0 ? ~ux : ux) & mask;
                int n = 0;
                while (n < bits && !((t >> (bits - 1 - n)) & 1)) n++;
                v = n == bits ? -1 : n;
                break;
              }
              case o::cbits_b: v = __builtin_popcountll(ux & mask); break;
              case o::getbit_b: v = int64_t((ux >> (uy & (bits - 1))) & 1); break;
              default: v = compare(i.cond, double(x), double(y)); break;  // cmps.u/s
            }
            if (i.sat) {
              const int64_t lo = kind == k_signed ? -(int64_t(1) << (bits - 1)) : 0;
              const int64_t hi = kind == k_signed ? (int64_t(1) << (bits - 1)) - 1 : int64_t(mask);
              v = v < lo ? lo : v > hi ? hi : v;
            }
            r = uint32_t(v);
            if (conv && !to_half) r = out_signed ? uint32_t(sext(r, 16)) : r & 0xffff;
          }
          if (to_half) r &= 0xffff;
          return put(w, d, lane, r);
        }))
      return false;
  }
  return true;
}

bool runner::cat3(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  switch (i.op) {
    case o::sel_s16:
    case o::sel_s32:
    case o::sel_f16:
    case o::sel_f32:
    case o::sad_s16:
    case o::sad_s32:
    case o::dp2acc:
    case o::dp4acc:
    case o::wmm:
    case o::wmm_accu:
    case o::madsh_u16: return fail("not modelled");
    default: break;
  }
  const bool half = !i.full, fl = i.op == o::mad_f32 || i.op == o::mad_f16;
  const int bits = half ? 16 : 32;
  const uint32_t mask = half ? 0xffffu : 0xffffffffu;
  column s0, s1, s2, d;
  for (int k = 0; k <= i.repeat; k++) {
    if (!src_column(w, i.src[0], k, fl, &s0) || !src_column(w, i.src[1], k, fl, &s1) ||
        !src_column(w, i.src[2], k, fl, &s2) || !dst_column(w, i.dst[0], k, &d))
      return false;
    if (cat3_fast(i, exec, s0, s1, s2, d, d_.mad_fused)) continue;
    const bool to_half = i.dst_half && !d.pred;
    if (!each(exec, [&](int lane) {
          uint32_t a, b, c;
          if (!get(w, s0, lane, &a) || !get(w, s1, lane, &b) || !get(w, s2, lane, &c)) return false;
          uint32_t r;
          if (fl) {
            auto rd = [&](uint32_t v, const ir3_operand &op) {
              float x = half ? half_to_float(ftz16(uint16_t(v))) : ftz(f32_of(v));
              return op.neg ? -x : x;
            };
            const float x = rd(a, i.src[0]), y = rd(b, i.src[1]), z = rd(c, i.src[2]);
            double v;
            if (half)
              v = d_.mad_fused ? double(x) * y + z
                               : double(half_to_float(half_of(double(x) * y, round_even))) + z;
            else
              v = d_.mad_fused ? double(std::fma(x, y, z)) : double(x * y + z);
            if (i.sat) v = std::isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
            r = to_half ? ftz16(half_of(v, round_even)) : bits_of(ftz(float(v)));
          } else {
            const uint64_t x = a & mask, y = b & mask, z = c & mask;
            uint64_t v;
            switch (i.op) {
              case o::mad_u16: v = x * y + z; break;
              case o::mad_s16: v = uint64_t(sext(x, 16) * sext(y, 16) + sext(z, 16)); break;
              // nir_opcodes.py imadsh_mix16: (low half of src1) * (high half of src2), shifted
              // up 16.
              case o::madsh_m16: v = (((x & 0xffff) * (y >> 16)) << 16) + z; break;
              case o::mad_u24: v = (x & 0xffffff) * (y & 0xffffff) + z; break;
              case o::mad_s24: v = uint64_t(sext(x, 24) * sext(y, 24) + int64_t(int32_t(z))); break;
              case o::sel_b16:
              case o::sel_b32: v = (y & mask) ? x : z; break;
              // ir3-cat3.xml: shrm (src2 >> src1) & src3, shlm (src2 << src1) & src3, shrg
              // (src2 >> src1) | src3, shlg (src2 << src1) | src3, andg (src2 & src1) | src3.
              case o::shrm: v = (y >> (x & (bits - 1))) & z; break;
              case o::shlm: v = (y << (x & (bits - 1))) & z; break;
              case o::shrg: v = (y >> (x & (bits - 1))) | z; break;
              case o::shlg: v = (y << (x & (bits - 1))) | z; break;
              default: v = (y & x) | z; break;  // andg
            }
            r = uint32_t(v) & mask;
            if (to_half != half)
              r = to_half ? r & 0xffff : (i.op == o::mad_s24 ? uint32_t(sext(r, 16)) : r);
          }
          return put(w, d, lane, r);
        }))
      return false;
  }
  return true;
}

bool runner::cat4(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  const bool half = !i.full;
  column s, d;
  for (int k = 0; k <= i.repeat; k++) {
    if (!src_column(w, i.src[0], k, true, &s) || !dst_column(w, i.dst[0], k, &d)) return false;
    const bool to_half = i.dst_half;
    if (!each(exec, [&](int lane) {
          uint32_t a;
          if (!get(w, s, lane, &a)) return false;
          double x = half ? half_to_float(ftz16(uint16_t(a))) : ftz(f32_of(a));
          if (i.src[0].abs) x = std::fabs(x);
          if (i.src[0].neg) x = -x;
          double v;
          switch (i.op) {
            case o::rcp: v = 1.0 / x; break;
            case o::rsq:
            case o::hrsq: v = 1.0 / std::sqrt(x); break;
            case o::log2:
            case o::hlog2: v = std::log2(x); break;
            case o::exp2:
            case o::hexp2: v = std::exp2(x); break;
            case o::sin: v = std::sin(x); break;
            case o::cos: v = std::cos(x); break;
            default: v = std::sqrt(x); break;
          }
          if (i.sat) v = std::isnan(v) ? 0.0 : v < 0 ? 0.0 : v > 1 ? 1.0 : v;
          return put(w, d, lane, to_half ? ftz16(half_of(v, round_even)) : bits_of(ftz(float(v))));
        }))
      return false;
  }
  return true;
}

// --- Memory --------------------------------------------------------------------------------------

bool runner::mem(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  const int esz = type_bytes(i.type);
  const bool th = ir3_type_half(i.type);
  switch (i.op) {
    case o::ldg:
    case o::ldg_a:
    case o::stg:
    case o::stg_a: {
      const bool load = i.op == o::ldg || i.op == o::ldg_a;
      const bool a_form = i.op == o::ldg_a || i.op == o::stg_a;
      column lo, hi, off, val[8];
      ir3_operand base = i.src[0];
      if (!src_column(w, base, 0, false, &lo)) return false;
      base.num++;
      if (!src_column(w, base, 0, false, &hi)) return false;
      if (a_form && !src_column(w, i.src[1], 0, false, &off)) return false;
      if (i.size < 1 || i.size > 4)
        return fail("a global access of " + std::to_string(i.size) + " components");
      for (int c = 0; c < i.size; c++) {
        ir3_operand v = load ? i.dst[0] : i.src[2];
        v.num = uint16_t(v.num + c);
        v.half = th;
        if (!(load ? dst_column(w, v, 0, &val[c]) : src_column(w, v, 0, false, &val[c])))
          return false;
      }
      const uint64_t bytes = uint64_t(esz) * i.size;
      return each(exec, [&](int lane) {
        uint32_t l, h, s = 0;
        if (!get(w, lo, lane, &l) || !get(w, hi, lane, &h)) return false;
        if (a_form && !get(w, off, lane, &s)) return false;
        // ldg.a/stg.a: base + (src2 << (SRC2_ADD_DWORD_SHIFT + 2)) + (OFF << 2) (ir3-cat6.xml).
        const uint64_t addr = (uint64_t(h) << 32 | l) +
                              (a_form ? (uint64_t(s) << (i.shift + 2)) + (uint64_t(i.offset) << 2)
                                      : uint64_t(int64_t(i.offset)));
        uint8_t *p = global(addr, bytes, load ? "global load" : "global store", w.fiber0 + lane);
        if (!p) return false;
        for (int c = 0; c < i.size; c++) {
          if (load) {
            uint32_t v = 0;
            memcpy(&v, p + c * esz, esz);
            if (!put(w, val[c], lane, v)) return false;
          } else {
            uint32_t v;
            if (!get(w, val[c], lane, &v)) return false;
            memcpy(p + c * esz, &v, esz);
          }
        }
        (load ? c_.global_load_bytes : c_.global_store_bytes) += bytes;
        return true;
      });
    }
    case o::ldl:
    case o::stl:
    case o::ldp:
    case o::stp: {
      const bool load = i.op == o::ldl || i.op == o::ldp;
      const bool priv = i.op == o::ldp || i.op == o::stp;
      column addr, val[256];
      if (!src_column(w, i.src[0], 0, false, &addr)) return false;
      if (i.size < 1 || i.size > 64)
        return fail("a local access of " + std::to_string(i.size) + " components");
      for (int c = 0; c < i.size; c++) {
        ir3_operand v = load ? i.dst[0] : i.src[1];
        v.num = uint16_t(v.num + c);
        v.half = th;
        if (!(load ? dst_column(w, v, 0, &val[c]) : src_column(w, v, 0, false, &val[c])))
          return false;
      }
      const uint64_t bytes = uint64_t(esz) * i.size;
      const uint64_t limit = priv ? d_.private_bytes : d_.shared_bytes;
      return each(exec, [&](int lane) {
        uint32_t a;
        if (!get(w, addr, lane, &a)) return false;
        // Register plus immediate in 32 bits, wrapping: ir3 folds a constant out of an address
        // whose other part may be negative as an unsigned value (Mesa 25.0.7 ir3_nir.c,
        // nir_opt_offsets with allow_offset_wrap = true), e.g. l[r8.z+960] with r8.z = -960
        // stores at 0 (a double-buffered tile's slab offset, set_bytes - set).
        const int64_t at = int64_t(uint32_t(a + uint32_t(i.offset)));
        if (at < 0 || uint64_t(at) + bytes > limit)
          return fail(std::string(priv ? "private" : "shared") + " memory " +
                      (load ? "load" : "store") + " of " + std::to_string(bytes) + " bytes at " +
                      std::to_string(at) + " (fiber " + std::to_string(w.fiber0 + lane) +
                      ") is past the " + std::to_string(limit) + " bytes");
        uint8_t *p = priv ? &w.priv[size_t(lane) * d_.private_bytes + at] : &shared_[at];
        for (int c = 0; c < i.size; c++) {
          if (load) {
            uint32_t v = 0;
            memcpy(&v, p + c * esz, esz);
            if (!put(w, val[c], lane, v)) return false;
          } else {
            uint32_t v;
            if (!get(w, val[c], lane, &v)) return false;
            memcpy(p + c * esz, &v, esz);
          }
        }
        if (priv)
          c_.private_bytes += bytes;
        else
          (load ? c_.shared_load_bytes : c_.shared_store_bytes) += bytes;
        return true;
      });
    }
    case o::getfiberid: {
      column d;
      if (!dst_column(w, i.dst[0], 0, &d)) return false;
      return each(exec, [&](int lane) { return put(w, d, lane, uint32_t(lane)); });
    }
    case o::stib_b:
    case o::ldib_b: return image(w, i, exec);
    default: return fail("not modelled");
  }
}

// A texel address and its component type for an image descriptor, or a failure naming why.
struct image_view {
  uint64_t base = 0;
  uint32_t width = 0, height = 0, pitch = 0, fmt = 0;
  uint8_t swiz[4] = {0, 1, 2, 3};
  int texel_bytes() const { return fmt == ir3_fmt6_32_32_32_32_float ? 16 : 8; }
};
bool image_decode(const ir3_image &im, image_view *v, std::string *why) {
  const uint32_t w0 = im.words[0];
  v->fmt = (w0 >> 22) & 0xff;
  if (v->fmt != ir3_fmt6_32_32_32_32_float && v->fmt != ir3_fmt6_16_16_16_16_float) {
    *why = "format " + std::to_string(v->fmt) +
           " (only FMT6_32_32_32_32_FLOAT and FMT6_16_16_16_16_FLOAT are modelled)";
    return false;
  }
  if (w0 & 3) {
    *why = "a tiled image (TILE_MODE " + std::to_string(w0 & 3) + ")";
    return false;
  }
  if (((im.words[2] >> 29) & 7) != 1) {
    *why = "an image of TYPE " + std::to_string((im.words[2] >> 29) & 7) +
           " (only A6XX_TEX_2D is modelled)";
    return false;
  }
  for (int c = 0; c < 4; c++) v->swiz[c] = uint8_t((w0 >> (4 + 3 * c)) & 7);
  v->width = im.words[1] & 0x7fff;
  v->height = (im.words[1] >> 15) & 0x7fff;
  v->pitch = (im.words[2] >> 7) & 0x3fffff;
  v->base = (uint64_t(im.words[5] & 0x1ffff) << 32) | (im.words[4] & ~31u);
  return true;
}

bool runner::tex(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  if (i.op == o::tcinv) return true;
  // isaml is isam with a level of detail (the second source): what ir3 makes of NIR's txf
  // (ir3_compiler_nir.c emit_tex). Linear images have one level: only level 0 is modelled.
  if (i.op != o::isam && i.op != o::isaml) return fail("not modelled");
  if (i.s2en || i.sv || i.imm_offset || i.o || i.tex3d || i.array)
    return fail("only the plain 2D isam/isaml (no .s2en, .v, offsets, .3d, .a) is modelled");
  if (i.type != ir3_f32 && i.type != ir3_f16)
    return fail("isam of a non-float type is not modelled");
  if (i.tex >= d_.textures.size())
    return fail("t#" + std::to_string(i.tex) + " has no texture descriptor");
  image_view v;
  std::string why;
  if (!image_decode(d_.textures[i.tex], &v, &why))
    return fail("t#" + std::to_string(i.tex) + " is " + why);
  const uint64_t end = v.base + uint64_t(v.pitch) * v.height;
  {
    std::lock_guard<std::mutex> hold(s_.lock);
    for (const auto &[b, e] : s_.stored_images)
      if (b < end && v.base < e)
        f_.add(ir3_hazard_kind::image_stale, at_, UINT32_MAX, i.tex, false);
  }
  column x, y, dst[4];
  ir3_operand cx = i.src[0], cy = i.src[0];
  cy.num++;
  if (!src_column(w, cx, 0, false, &x) || !src_column(w, cy, 0, false, &y)) return false;
  column lod;
  const bool has_lod = i.op == o::isaml;
  if (has_lod && (i.nsrc < 2 || !src_column(w, i.src[1], 0, false, &lod))) return false;
  for (int c = 0; c < 4; c++) {
    ir3_operand dc = i.dst[0];
    dc.num = uint16_t(dc.num + c);
    dc.half = i.type == ir3_f16;
    if ((i.wrmask >> c & 1) && !dst_column(w, dc, 0, &dst[c])) return false;
  }
  return each(exec, [&](int lane) {
    uint32_t xs, ys, level = 0;
    if (!get(w, x, lane, &xs) || !get(w, y, lane, &ys)) return false;
    if (has_lod && !get(w, lod, lane, &level)) return false;
    if (level != 0)
      return fail("isaml of level " + std::to_string(level) + " (only level 0 is modelled)");
    const int32_t px = !i.full ? int32_t(sext(xs, 16)) : int32_t(xs),
                  py = !i.full ? int32_t(sext(ys, 16)) : int32_t(ys);
    float texel[4] = {0, 0, 0, 0};
    // ISAMMODE_GL: out-of-range fetches return 0 (a6xx.xml a6xx_isam_mode).
    if (px >= 0 && py >= 0 && uint32_t(px) < v.width && uint32_t(py) < v.height) {
      const uint8_t *p = global(v.base + uint64_t(py) * v.pitch + uint64_t(px) * v.texel_bytes(),
                                v.texel_bytes(), "texture fetch", w.fiber0 + lane);
      if (!p) return false;
      c_.texture_bytes += v.texel_bytes();
      for (int c = 0; c < 4; c++) {
        if (v.fmt == ir3_fmt6_32_32_32_32_float) {
          memcpy(&texel[c], p + 4 * c, 4);
        } else {
          uint16_t h;
          memcpy(&h, p + 2 * c, 2);
          texel[c] = half_to_float(h);
        }
      }
    }
    for (int c = 0; c < 4; c++) {
      if (!(i.wrmask >> c & 1)) continue;
      const uint8_t s = v.swiz[c];
      const float f = s < 4 ? texel[s] : s == 5 ? 1.0f : 0.0f;
      if (!put(w, dst[c], lane, i.type == ir3_f16 ? half_of(f, round_even) : bits_of(f)))
        return false;
    }
    c_.texels++;
    return true;
  });
}

bool runner::image(wave &w, const ir3_instr &i, const ir3_lanes &exec) {
  if (!i.typed || i.mode != 0 || i.bindless || i.has_offset || i.dims != 2)
    return fail("only typed 2D image access with an immediate slot is modelled");
  if (i.type != ir3_f32 && i.type != ir3_f16)
    return fail("image access of a non-float type is not modelled");
  const uint32_t slot = uint32_t(i.src[3].value);
  if (slot >= d_.ibos.size()) return fail("IBO " + std::to_string(slot) + " has no descriptor");
  image_view v;
  std::string why;
  if (!image_decode(d_.ibos[slot], &v, &why))
    return fail("IBO " + std::to_string(slot) + " is " + why);
  const bool store = i.op == o::stib_b;
  if (store) {
    std::lock_guard<std::mutex> hold(s_.lock);
    s_.stored_images.emplace_back(v.base, v.base + uint64_t(v.pitch) * v.height);
  }
  column x, y, val[4];
  ir3_operand cx = i.src[1], cy = i.src[1];
  cy.num++;
  if (!src_column(w, cx, 0, false, &x) || !src_column(w, cy, 0, false, &y)) return false;
  const int n = i.type_size;
  for (int c = 0; c < n; c++) {
    ir3_operand vc = i.src[0];
    vc.num = uint16_t(vc.num + c);
    vc.half = i.type == ir3_f16;
    if (!(store ? src_column(w, vc, 0, true, &val[c]) : dst_column(w, vc, 0, &val[c])))
      return false;
  }
  return each(exec, [&](int lane) {
    uint32_t xs, ys;
    if (!get(w, x, lane, &xs) || !get(w, y, lane, &ys)) return false;
    const int32_t px = int32_t(xs), py = int32_t(ys);
    const bool inside = px >= 0 && py >= 0 && uint32_t(px) < v.width && uint32_t(py) < v.height;
    uint8_t *p = nullptr;
    if (inside) {
      p = global(v.base + uint64_t(py) * v.pitch + uint64_t(px) * v.texel_bytes(), v.texel_bytes(),
                 store ? "image store" : "image load", w.fiber0 + lane);
      if (!p) return false;
    }
    for (int c = 0; c < n; c++) {
      if (store) {
        uint32_t r;
        if (!get(w, val[c], lane, &r)) return false;
        if (!inside) continue;  // out-of-range stores are dropped
        const float f = i.type == ir3_f16 ? half_to_float(uint16_t(r)) : f32_of(r);
        if (v.fmt == ir3_fmt6_32_32_32_32_float) {
          memcpy(p + 4 * c, &f, 4);
        } else {
          const uint16_t h = half_of(f, round_even);
          memcpy(p + 2 * c, &h, 2);
        }
      } else {
        float f = 0;
        if (inside) {
          if (v.fmt == ir3_fmt6_32_32_32_32_float) {
            memcpy(&f, p + 4 * c, 4);
          } else {
            uint16_t h;
            memcpy(&h, p + 2 * c, 2);
            f = half_to_float(h);
          }
        }
        if (!put(w, val[c], lane, i.type == ir3_f16 ? half_of(f, round_even) : bits_of(f)))
          return false;
      }
    }
    if (store) c_.image_stores += inside;
    return true;
  });
}

// --- Control -------------------------------------------------------------------------------------

bool runner::step(wave &w, uint32_t at, const ir3_lanes &group, const ir3_lanes &exec) {
  const ir3_instr &i = d_.program[at];
  // Issue accounting.
  c_.instructions++;
  if (!c_.per_instruction.empty()) c_.per_instruction[at]++;
  c_.issue_slots += 1 + ir3_repeats(i) + i.nop;
  c_.ss_waits += i.ss;
  c_.sy_waits += i.sy;
  switch (i.cat) {
    case 0: (i.op == o::nop ? c_.nops : c_.flow) += i.op == o::nop ? 1 + i.repeat : 1; break;
    case 1:
    case 2:
    case 3:
      c_.alu++;
      c_.rpt_extra += ir3_repeats(i);
      c_.nop_slots += i.nop;
      if ((i.cat == 2 && kind_of(i.op) == k_float && !i.full) || i.op == o::mad_f16) c_.alu_f16++;
      if (i.op == o::mad_f32 || i.op == o::mad_f16)
        c_.fma_lanes += uint64_t(1 + i.repeat) * exec.count();
      if (i.op == o::mad_f16) c_.fma_f16_lanes += uint64_t(1 + i.repeat) * exec.count();
      break;
    case 4:
      c_.sfu++;
      c_.rpt_extra += i.repeat;
      break;
    case 5: c_.tex++; break;
    case 6: c_.mem++; break;
    default: c_.sync++; break;
  }
  // Default: every fiber of the group moves on to the next instruction.
  auto advance = [&](const ir3_lanes &m, uint32_t to) {
    each(m, [&](int lane) {
      w.pc[lane] = to;
      return true;
    });
  };
  switch (i.cat) {
    case 0: {
      const uint32_t next = at + 1, target = uint32_t(int64_t(at) + i.branch);
      auto cond = [&](int lane, int k) { return (w.p0(i.comp[k])[lane] != 0) != i.inv[k]; };
      ir3_lanes taken;
      switch (i.op) {
        case o::nop: advance(group, next); return true;
        case o::end: w.live = w.live & ~group; return true;
        case o::predt:
        case o::predf:
          w.pred = ir3_lanes();
          for (int lane = 0; lane < w.lanes; lane++)
            if (w.p0(0)[lane]) w.pred.set(lane);
          w.pred_mode = i.op == o::predt ? 1 : 2;
          advance(group, next);
          return true;
        case o::prede:
          w.pred_mode = 0;
          advance(group, next);
          return true;
        case o::jump: taken = group; break;
        case o::br:
        case o::brao:
        case o::braa:
          each(group, [&](int lane) {
            const bool t = i.op == o::br     ? cond(lane, 0)
                           : i.op == o::brao ? cond(lane, 0) || cond(lane, 1)
                                             : cond(lane, 0) && cond(lane, 1);
            if (t) taken.set(lane);
            return true;
          });
          break;
        case o::bany:
        case o::ball: {
          bool any = false, all = true;
          each(group, [&](int lane) {
            any |= cond(lane, 0);
            all &= cond(lane, 0);
            return true;
          });
          if (i.op == o::bany ? any : all) taken = group;
          break;
        }
        case o::getone: {
          // Every fiber but one jumps (Mesa ir3_legalize.c block_sched: getone branches to the
          // block the chosen fiber skips).
          taken = group;
          taken.clear(group.first());
          break;
        }
        default: return fail("not modelled");
      }
      const ir3_lanes stay = group & ~taken;
      if (taken.any() && stay.any()) {
        c_.divergent_branches++;
        w.uniform = false;
      }
      if (target >= d_.program.size() && taken.any())
        return fail("branches past the end of the program");
      advance(taken, target);
      advance(stay, next);
      return true;
    }
    case 1:
      if (!mov(w, i, exec)) return false;
      break;
    case 2:
      if (!cat2(w, i, exec)) return false;
      break;
    case 3:
      if (!cat3(w, i, exec)) return false;
      break;
    case 4:
      if (!cat4(w, i, exec)) return false;
      break;
    case 5:
      if (!tex(w, i, exec)) return false;
      break;
    case 6:
      if (!mem(w, i, exec)) return false;
      break;
    default:
      if (i.op == o::bar) {
        c_.barriers++;
        w.at_barrier = true;
      }
      break;  // fence, sleep and the cache operations change nothing here
  }
  advance(group, at + 1);
  return true;
}

bool runner::wave_run(wave &w) {
  const uint32_t n = uint32_t(d_.program.size());
  while (!w.at_barrier) {
    if (!w.live.any()) return true;
    // The fibers at the lowest program counter run; the others stay parked (ir3_reconvergence.c:
    // the later destination of a divergent branch is where its fibers wait).
    uint32_t pc = UINT32_MAX;
    ir3_lanes group;
    if (w.uniform) {
      pc = w.pc[w.live.first()];
      group = w.live;
    } else {
      each(w.live, [&](int lane) {
        if (w.pc[lane] < pc) {
          pc = w.pc[lane];
          group = ir3_lanes();
        }
        if (w.pc[lane] == pc) group.set(lane);
        return true;
      });
      if (group == w.live) w.uniform = true;
    }
    at_ = pc;
    if (pc >= n) return fail("fibers ran past the end of the program without `end`");
    if (++w.executed > d_.max_wave_instructions)
      return fail("a wave executed " + std::to_string(d_.max_wave_instructions) +
                  " instructions without reaching `end`");
    const ir3_instr &i = d_.program[pc];
    // Fibers that did not run the previous instruction rejoin here: a reconvergence point.
    if (w.started && !i.jp && (group & ~w.last_group).any())
      f_.add(ir3_hazard_kind::missing_jp, pc, UINT32_MAX, 0, false);
    ir3_lanes exec = group;
    if (i.cat != 0) {
      if (w.pred_mode == 1) exec = group & w.pred;
      if (w.pred_mode == 2) exec = group & ~w.pred;
    }
    if (d_.check_hazards)
      w.hazards.issue(i, pc, exec, int32_t(w.a(0)[std::max(exec.first(), 0)]), &f_);
    if (!step(w, pc, group, exec)) return false;
    w.last_group = group;
    w.started = true;
  }
  return true;
}

bool runner::workgroup(uint32_t x, uint32_t y, uint32_t z) {
  wg_[0] = x;
  wg_[1] = y;
  wg_[2] = z;
  const int lanes = d_.wave128 ? 128 : 64;
  const uint32_t fibers = d_.local[0] * d_.local[1] * d_.local[2];
  const int nwaves = int((fibers + lanes - 1) / lanes);
  // Registers, shared and private memory start zeroed (the hardware leaves whatever was there):
  // a workgroup's result must not depend on which host thread ran what before it.
  std::fill(shared_.begin(), shared_.end(), 0);
  waves_.resize(nwaves);
  for (int k = 0; k < nwaves; k++) {
    wave &w = waves_[k];
    w.lanes = lanes;
    w.fiber0 = k * lanes;
    w.nfull = std::min<uint32_t>(d_.full_regs * 4, ir3_regid_shared);
    w.file.assign(size_t(w.nfull + 6) * lanes, 0);
    memset(w.shared, 0, sizeof w.shared);
    w.pc.assign(lanes, 0);
    w.live = ir3_lanes();
    w.last_group = ir3_lanes();
    w.started = w.at_barrier = false;
    w.uniform = true;
    w.pred_mode = 0;
    w.executed = 0;
    w.priv.assign(size_t(lanes) * d_.private_bytes, 0);
    w.hazards.wave_start();
    for (int lane = 0; lane < lanes; lane++)
      if (uint32_t(w.fiber0 + lane) < fibers) w.live.set(lane);
    // System values the dispatch places in registers before the first instruction
    // (HLSQ_CS_CNTL_0 LOCALIDREGID / WGIDCONSTID; ir3 puts the workgroup id in shared registers).
    const uint32_t wgid[3] = {x, y, z};
    column c;
    for (int comp = 0; comp < 3; comp++) {
      if (d_.workgroup_id_regid != 0xfc) {
        if (!reg_column(w, uint16_t(d_.workgroup_id_regid + comp), false, &c)) return false;
        for (int lane = 0; lane < (c.stride ? lanes : 1); lane++) c.p[lane * c.stride] = wgid[comp];
      }
      if (d_.local_id_regid != 0xfc) {
        if (!reg_column(w, uint16_t(d_.local_id_regid + comp), false, &c)) return false;
        for (int lane = 0; lane < lanes; lane++) {
          const uint32_t f = uint32_t(w.fiber0 + lane);
          const uint32_t id[3] = {f % d_.local[0], (f / d_.local[0]) % d_.local[1],
                                  f / (d_.local[0] * d_.local[1])};
          c.p[lane * c.stride] = id[comp];
        }
      }
    }
  }
  c_.workgroups++;
  c_.waves += uint64_t(nwaves);
  // Each wave runs until it ends or waits at a barrier; a barrier opens when every wave that has
  // not ended waits at it.
  for (;;) {
    bool waiting = false;
    for (wave &w : waves_) {
      if (!wave_run(w)) return false;
      waiting |= w.at_barrier;
    }
    if (!waiting) return true;
    for (wave &w : waves_) w.at_barrier = false;
  }
}

bool runner::run() {
  shared_.assign(d_.shared_bytes, 0);
  if (d_.per_instruction) c_.per_instruction.assign(d_.program.size(), 0);
  const uint64_t gx = d_.groups[0], gy = d_.groups[1], total = gx * gy * d_.groups[2];
  for (;;) {
    const uint64_t n = s_.next.fetch_add(1);
    if (n >= total || n > s_.error_at.load()) return true;
    if (!workgroup(uint32_t(n % gx), uint32_t(n / gx % gy), uint32_t(n / (gx * gy)))) {
      std::lock_guard<std::mutex> hold(s_.lock);
      if (n < s_.error_at.load()) {
        s_.error_at = n;
        s_.error = err_;
      }
      return false;
    }
  }
}

}  // namespace

void ir3_counts::add(const ir3_counts &o) {
  workgroups += o.workgroups;
  waves += o.waves;
  instructions += o.instructions;
  alu += o.alu;
  alu_f16 += o.alu_f16;
  sfu += o.sfu;
  flow += o.flow;
  mem += o.mem;
  tex += o.tex;
  sync += o.sync;
  nops += o.nops;
  rpt_extra += o.rpt_extra;
  nop_slots += o.nop_slots;
  issue_slots += o.issue_slots;
  fma_lanes += o.fma_lanes;
  fma_f16_lanes += o.fma_f16_lanes;
  global_load_bytes += o.global_load_bytes;
  global_store_bytes += o.global_store_bytes;
  shared_load_bytes += o.shared_load_bytes;
  shared_store_bytes += o.shared_store_bytes;
  private_bytes += o.private_bytes;
  texels += o.texels;
  texture_bytes += o.texture_bytes;
  image_stores += o.image_stores;
  barriers += o.barriers;
  ss_waits += o.ss_waits;
  sy_waits += o.sy_waits;
  divergent_branches += o.divergent_branches;
  if (per_instruction.size() < o.per_instruction.size())
    per_instruction.resize(o.per_instruction.size());
  for (size_t n = 0; n < o.per_instruction.size(); n++) per_instruction[n] += o.per_instruction[n];
}

ir3_image ir3_image_rgba(uint32_t format, uint32_t width, uint32_t height, uint32_t pitch,
                         uint64_t base) {
  ir3_image im;
  // A6XX_TEX_CONST_0: SWIZ_X-W = X Y Z W, FMT; _1: WIDTH, HEIGHT; _2: PITCH, TYPE = A6XX_TEX_2D;
  // _4/_5: BASE_LO/HI (a6xx.xml).
  im.words[0] = 0u << 4 | 1u << 7 | 2u << 10 | 3u << 13 | (format & 0xff) << 22;
  im.words[1] = (width & 0x7fff) | (height & 0x7fff) << 15;
  im.words[2] = (pitch & 0x3fffff) << 7 | 1u << 29;
  im.words[4] = uint32_t(base) & ~31u;
  im.words[5] = uint32_t(base >> 32) & 0x1ffff;
  return im;
}

bool ir3_dispatch_run(const ir3_dispatch &d, const ir3_region_find &find, ir3_counts *counts,
                      std::vector<ir3_finding> *findings, std::string *err) {
  if (d.program.empty() || d.full_regs * 4 > ir3_regid_shared) {
    if (err)
      *err = "kernel " + d.kernel +
             (d.program.empty()
                  ? ": no instructions"
                  : ": FULLREGFOOTPRINT " + std::to_string(d.full_regs) + " is past r47");
    return false;
  }
  const uint64_t total = uint64_t(d.groups[0]) * d.groups[1] * d.groups[2];
  const unsigned n = unsigned(std::max<uint64_t>(1, std::min<uint64_t>(d.threads, total)));
  dispatch_shared shared;
  std::vector<ir3_counts> c(n);
  std::vector<ir3_findings> f(n);
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < n; t++)
    pool.emplace_back([&, t] { runner(d, find, &c[t], &f[t], &shared).run(); });
  runner(d, find, &c[0], &f[0], &shared).run();
  for (std::thread &t : pool) t.join();
  for (unsigned t = 1; t < n; t++) {
    c[0].add(c[t]);
    f[0].merge(f[t]);
  }
  if (counts) counts->add(c[0]);
  if (findings) {
    std::vector<ir3_finding> l = f[0].list(d.program);
    findings->insert(findings->end(), l.begin(), l.end());
  }
  if (shared.error_at != UINT64_MAX) {
    if (err) *err = shared.error;
    return false;
  }
  return true;
}

}  // namespace capgraph::adreno
