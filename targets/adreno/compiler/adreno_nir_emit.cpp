#include "adreno_nir_emit.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include "codegen/cpu_codegen.h"
#include "codegen/gpu_tile.h"
#include "codegen/math_coeffs.h"
#include "error.h"
#include "knobs.h"
#include "schedule/half_storage.h"

// Mesa's C headers (extern "C" inside).
#include "compiler/glsl_types.h"
#include "nir.h"
#include "nir_builder.h"

namespace capgraph {

namespace {

// Points a split reduction's work item folds per loop iteration, their loads in flight together
// (emit_group_point, group_reduce_parts).
constexpr int64_t kSplitUnroll = 4;

// One kernel's NIR, mirroring KernelEmitter (kernel_emit.cpp) operation for operation so that the
// GPU kernel and the CPU host twin compute the same kernel IR. Value types: floats are 32-bit (f16
// storage is widened on load, narrowed on store), booleans 1-bit, integers 64-bit as on the CPU
// (ir3 lowers 64-bit integer arithmetic); index arithmetic is 32-bit, which every buffer below
// 2^31 bytes allows (checked).
struct NirKernelEmitter {
  const Kernel &k;
  const Program &p;
  nir_builder b;
  nir_function_impl *impl = nullptr;
  std::vector<int> slots;
  std::map<int, nir_def *> base;       // buffer -> 64-bit GPU address
  std::map<int, nir_def *> base_pair;  // buffer -> the same as two 32-bit halves
  std::vector<nir_def *> iv;           // current index of each axis (32-bit)
  std::map<int, nir_def *> cache;      // expression values of the current evaluation
  nir_def *acc_value = nullptr;
  nir_def *valid = nullptr;  // AND of skip checks in the current reduction body
  bool in_body = false;
  // Lanes: a work item computes `lanes` consecutive outputs along lane_axis (the innermost
  // parallel axis), evaluating the expressions once per lane; a load that is contiguous along that
  // axis is read once as a vector (vec4: one ldg of 4 components) and each lane takes its channel,
  // and the results leave in one vector store. lane_base is the axis index of lane 0.
  int lanes = 1, lane = 0, lane_axis = -1;
  nir_def *lane_base = nullptr;
  std::vector<char> load_vector;             // per load: read as a vector
  std::map<int, nir_def *> vec_raw, vec_ok;  // per load: its vector and validity at this point
  // The window path (window_emit): the reduction unrolled here, its axes' values host constants
  // (rval), and every element a window load reads loaded once per work item, whichever lanes and
  // reduction points read it (wcache, keyed by the load and its per-dimension constants).
  bool window = false;
  bool half_program = false;  // the program stores float16 (program_has_half)
  std::vector<int64_t> rval;
  std::vector<char> load_window;  // per load: read through the window cache
  struct WindowElement {
    nir_def *v, *ok;
  };
  std::map<std::vector<int64_t>, WindowElement> wcache;
  std::map<int, nir_def *> base_odd_pair;  // buffer -> its address + 2 bytes, as two halves
  std::map<std::pair<int, int>, nir_def *> window_pd;            // (load, dim) -> P_d
  std::map<std::tuple<int, int, int64_t>, nir_def *> window_in;  // (load, dim, C_d) -> in bounds
  // load -> this work item's address of its elements no bound moves (and + 2 bytes)
  std::map<int, std::array<nir_def *, 2>> linear_addr;

  NirKernelEmitter(const Kernel &kk, const Program &pp) : k(kk), p(pp) {}

  [[noreturn]] void fail(const std::string &what) const {
    throw Error("kernel " + k.name + " (target adreno): " + what);
  }

  unsigned value_bits(DType t) const {
    switch (t) {
      case DType::f32:
      case DType::f16: return 32;
      case DType::boolean: return 1;
      case DType::f64: fail("64-bit floats are not supported on Adreno (ir3 has no fp64)");
      default: return 64;
    }
  }
  static unsigned mem_bytes(DType t) { return (unsigned)dtype_size(t); }

  nir_def *i32(int64_t v) { return nir_imm_int(&b, (int32_t)v); }

  // for (i = lo; i < hi; i++) body(i), i in a function-temporary variable that
  // nir_lower_vars_to_ssa turns into a phi.
  // `rolled`: NIR must not unroll it (code size: the a630's instruction cache is 8 KiB).
  void loop(nir_def *lo, nir_def *hi, const std::function<void(nir_def *)> &body,
            bool rolled = false) {
    nir_variable *var = nir_local_variable_create(impl, glsl_int_type(), "i");
    nir_store_var(&b, var, lo, 1);
    nir_loop *l = nir_push_loop(&b);
    if (rolled) l->control = nir_loop_control_dont_unroll;
    nir_def *i = nir_load_var(&b, var);
    nir_push_if(&b, nir_ige(&b, i, hi));
    nir_jump(&b, nir_jump_break);
    nir_pop_if(&b, nullptr);
    body(i);
    nir_store_var(&b, var, nir_iadd_imm(&b, i, 1), 1);
    nir_pop_loop(&b, nullptr);
  }
  void guarded(nir_def *cond, const std::function<void()> &body) {
    nir_push_if(&b, cond);
    body();
    nir_pop_if(&b, nullptr);
  }
  void nest(int first, int last, const std::function<void()> &body) {
    if (first == last) return body();
    // The innermost reduction axis of a small body, 4 points per iteration (the last extent % 4
    // after the loop): their loads issue together and one (sy) wait covers them, where a rolled
    // loop waits out a load's latency per point (the comma-shaped model's matrix-vector
    // products: one wave each, its chain of waits the whole estimate). The points stay in order.
    // Programs with float16 storage only (float32 captures unchanged).
    constexpr int64_t kUnroll = 4;
    const int64_t extent = k.axes[first];
    if (half_program && first == last - 1 && first >= k.n_parallel && extent > kUnroll &&
        k.exprs.size() <= 32) {
      loop(i32(0), i32(extent / kUnroll), [&](nir_def *i) {
        nir_def *at = nir_imul_imm(&b, i, kUnroll);
        for (int64_t u = 0; u < kUnroll; u++) {
          iv[first] = u ? nir_iadd_imm(&b, at, (uint64_t)u) : at;
          body();
        }
      });
      for (int64_t r = extent - extent % kUnroll; r < extent; r++) {  // the last points
        iv[first] = i32(r);
        body();
      }
      return;
    }
    loop(i32(0), i32(k.axes[first]), [&](nir_def *i) {
      iv[first] = i;
      nest(first + 1, last, body);
    });
  }

  nir_def *affine(const DimIndex &d) {
    nir_def *r = i32(d.shift);
    for (const AxisTerm &t : d.terms)
      r = nir_iadd(&b, r, nir_imul_imm(&b, iv[t.axis], (uint64_t)t.coef));
    return r;
  }
  nir_def *floor_mod(nir_def *a, int64_t m) {  // m > 0, result in [0, m)
    nir_def *r = nir_irem(&b, a, i32(m));
    return nir_bcsel(&b, nir_ilt_imm(&b, r, 0), nir_iadd_imm(&b, r, (uint64_t)m), r);
  }

  // Element offset (32-bit) of an access at the current point; *ok: validity of skip bounds.
  nir_def *access_offset(const Access &a, nir_def **ok) {
    nir_def *off = i32(a.offset);
    *ok = nullptr;
    for (const DimIndex &d : a.dims) {
      nir_def *idx = affine(d);
      if (d.expr >= 0) idx = nir_iadd(&b, idx, to_index(eval(d.expr), k.exprs[d.expr].dtype));
      nir_def *good = nullptr;
      if (d.divisor != 1) {
        good = nir_ieq_imm(&b, nir_irem(&b, idx, i32(d.divisor)), 0);
        idx = nir_idiv(&b, idx, i32(d.divisor));
      }
      switch (d.bound) {
        case Bound::none: break;
        case Bound::skip: {
          nir_def *in = nir_ult(&b, idx, i32(d.extent));
          good = good ? nir_iand(&b, good, in) : in;
          break;
        }
        case Bound::clamp: idx = nir_imin(&b, nir_imax(&b, idx, i32(0)), i32(d.extent - 1)); break;
        case Bound::reflect:
          if (d.extent == 1) {
            idx = i32(0);
          } else {
            int64_t period = 2 * (d.extent - 1);
            nir_def *m = floor_mod(idx, period);
            idx = nir_bcsel(&b, nir_ige(&b, m, i32(d.extent)), nir_isub(&b, i32(period), m), m);
          }
          break;
        case Bound::wrap: idx = floor_mod(idx, d.extent); break;
      }
      if (good) {
        idx = nir_bcsel(&b, good, idx, i32(0));  // never address outside, even when skipped
        *ok = *ok ? nir_iand(&b, *ok, good) : good;
      }
      off = nir_iadd(&b, off, nir_imul_imm(&b, idx, (uint64_t)d.stride));
    }
    return off;
  }
  nir_def *element_addr(int buffer, nir_def *off) {
    nir_def *bytes = nir_imul_imm(&b, off, mem_bytes(p.buffers[buffer].dtype));
    return nir_iadd(&b, base.at(buffer), nir_u2u64(&b, bytes));
  }

  // An integer or boolean expression value as a 32-bit index (gather); floats truncate.
  nir_def *to_index(nir_def *v, DType t) {
    if (dtype_is_float(t)) return nir_f2i32(&b, v);
    if (v->bit_size == 1) return nir_b2i32(&b, v);
    return nir_i2i32(&b, v);
  }

  nir_def *constant(double v, DType t) {
    switch (value_bits(t)) {
      case 32: return nir_imm_float(&b, (float)v);
      case 1: return nir_imm_bool(&b, v != 0);
      default: return nir_imm_int64(&b, int64_saturate(v));  // +-inf reduce identities: no UB cast
    }
  }

  nir_def *convert(nir_def *v, DType from, DType to) {
    unsigned fb = value_bits(from), tb = value_bits(to);
    bool ff = dtype_is_float(from), tf = dtype_is_float(to);
    if (ff == tf && fb == tb) return v;
    if (to == DType::boolean) return ff ? nir_fneu_imm(&b, v, 0.0) : nir_ine_imm(&b, v, 0);
    if (from == DType::boolean) return tf ? nir_b2f32(&b, v) : nir_b2i64(&b, v);
    if (ff && !tf) return nir_f2i64(&b, v);
    if (!ff && tf) {
      // An integer widened from 32 bits or fewer (a uint8 camera frame's load) converts from
      // its narrow form: the same value, without ir3's lowering of a 64-bit conversion (~35
      // instructions per value). Programs with float16 storage only, as the window path.
      if (half_program && v->parent_instr->type == nir_instr_type_alu) {
        nir_alu_instr *w = nir_instr_as_alu(v->parent_instr);
        nir_def *n = w->src[0].src.ssa;
        if (w->op == nir_op_u2u64 && n->bit_size <= 32) return nir_u2f32(&b, nir_u2u32(&b, n));
        if (w->op == nir_op_i2i64 && n->bit_size <= 32) return nir_i2f32(&b, nir_i2i32(&b, n));
      }
      return nir_i2f32(&b, v);
    }
    return v;
  }

  void lane_set(int l) {
    lane = l;
    if (lanes > 1) iv[lane_axis] = nir_iadd_imm(&b, lane_base, (uint64_t)l);
  }
  // Loads `components` elements at element offset `off` of `buffer`. 32-bit elements use ir3's
  // own global access (a 64-bit base and a 32-bit offset in dwords: one `ldg.a`/`stg.a`, no 64-bit
  // address arithmetic per access); other sizes go through load_global on a 64-bit address,
  // which ir3 splits and lowers. Source: Mesa src/freedreno/ir3/ir3_a6xx.c,
  // emit_intrinsic_load_global_ir3 (on a6xx the offset register counts dwords).
  nir_def *global_load(int buffer, nir_def *off, unsigned components) {
    unsigned bytes = mem_bytes(p.buffers[buffer].dtype);
    nir_def *raw;
    if (bytes == 4) {
      nir_intrinsic_instr *ld = nir_intrinsic_instr_create(b.shader, nir_intrinsic_load_global_ir3);
      ld->num_components = (uint8_t)components;
      ld->src[0] = nir_src_for_ssa(base_pair.at(buffer));
      ld->src[1] = nir_src_for_ssa(off);
      nir_intrinsic_set_align(ld, 4, 0);
      nir_def_init(&ld->instr, &ld->def, components, 32);
      nir_builder_instr_insert(&b, &ld->instr);
      raw = &ld->def;
    } else {
      raw = nir_load_global(&b, element_addr(buffer, off), bytes, components, bytes * 8);
    }
    // Inputs and weights do not change during a kernel: loads may be merged and moved.
    nir_intrinsic_set_access(nir_instr_as_intrinsic(raw->parent_instr), ACCESS_CAN_REORDER);
    return raw;
  }
  void global_store(int buffer, nir_def *off, nir_def *value) {
    unsigned bytes = mem_bytes(p.buffers[buffer].dtype);
    if (bytes == 4) {
      nir_intrinsic_instr *st =
          nir_intrinsic_instr_create(b.shader, nir_intrinsic_store_global_ir3);
      st->num_components = (uint8_t)value->num_components;
      st->src[0] = nir_src_for_ssa(value);
      st->src[1] = nir_src_for_ssa(base_pair.at(buffer));
      st->src[2] = nir_src_for_ssa(off);
      nir_intrinsic_set_align(st, 4, 0);
      nir_builder_instr_insert(&b, &st->instr);
    } else {
      nir_store_global(&b, element_addr(buffer, off), bytes, value,
                       (nir_component_mask_t)((1u << value->num_components) - 1));
    }
  }

  // The value of load `e` as the kernel computes with it, from its raw element `raw`.
  nir_def *load_widen(const Expr &e, nir_def *raw) {
    DType bt = p.buffers[k.loads[e.access].buffer].dtype;
    nir_def *v;
    switch (bt) {
      case DType::f16: v = nir_f2f32(&b, raw); break;
      case DType::boolean: v = nir_ine_imm(&b, raw, 0); break;
      case DType::u8: v = nir_u2u64(&b, raw); break;
      case DType::i8:
      case DType::i16:
      case DType::i32: v = nir_i2i64(&b, raw); break;
      default: v = raw;
    }
    return convert(v, bt, e.dtype);
  }
  nir_def *load_masked(const Expr &e, nir_def *v, nir_def *ok) {
    if (ok) {
      if (in_body)
        valid = valid ? nir_iand(&b, valid, ok) : ok;
      else
        v = nir_bcsel(&b, ok, v, constant(k.loads[e.access].fill, e.dtype));
    }
    return v;
  }

  // A window load (window_emit): dimension d's index is P_d, the part that moves with the
  // parallel axes (the lane axis at lane_base: the same for every lane and reduction point), plus
  // C_d, a host constant (the shift, the reduction axes' values, the lane). One element per
  // distinct C vector is loaded and widened once. A bound is checked only where P_d's range over
  // the launch can take the index out of [0, extent) (a 3 x 3 window's first and last rows and
  // columns), once per dimension and value of C_d (a row's check is shared by its columns, a
  // column's by its rows). An element no bound can move is read at a constant offset from the
  // access's address for this work item (ldg with an immediate offset: no ALU per element).
  nir_def *window_load(const Expr &e) {
    const Access &a = k.loads[e.access];
    std::vector<int64_t> key{e.access};
    for (const DimIndex &d : a.dims) {
      int64_t c = d.shift;
      for (const AxisTerm &t : d.terms)
        if (t.axis >= k.n_parallel)
          c += t.coef * rval[(size_t)t.axis];
        else if (t.axis == lane_axis)
          c += t.coef * lane;
      key.push_back(c);
    }
    auto it = wcache.find(key);
    if (it == wcache.end()) {
      const int64_t ebytes = mem_bytes(p.buffers[a.buffer].dtype);
      std::vector<nir_def *> pds(a.dims.size());
      std::vector<char> checked(a.dims.size(), 0);
      bool linear = ebytes == 2 || ebytes == 4;
      int64_t c_total = a.offset;
      for (size_t di = 0; di < a.dims.size(); di++) {
        const DimIndex &d = a.dims[di];
        const int64_t c = key[di + 1];
        int64_t lo = 0, hi = 0;  // P_d's range over every work item of the launch
        const bool have = window_pd.count({e.access, (int)di}) > 0;
        for (const AxisTerm &t : d.terms)
          if (t.axis < k.n_parallel) {
            if (!have) {
              nir_def *x = nir_imul_imm(&b, t.axis == lane_axis ? lane_base : iv[(size_t)t.axis],
                                        (uint64_t)t.coef);
              pds[di] = pds[di] ? nir_iadd(&b, pds[di], x) : x;
            }
            const int64_t top =
                t.coef * (k.axes[(size_t)t.axis] - (t.axis == lane_axis ? lanes : 1));
            lo += std::min<int64_t>(0, top), hi += std::max<int64_t>(0, top);
          }
        if (have)
          pds[di] = window_pd[{e.access, (int)di}];
        else
          window_pd[{e.access, (int)di}] = pds[di];
        checked[di] = d.bound != Bound::none && (lo + c < 0 || hi + c >= d.extent);
        linear &= !checked[di];
        c_total += c * d.stride;
      }
      // A negative constant offset must fit ldg's immediate (ldg.a's register is unsigned).
      if ((ebytes == 2 ? (c_total - (c_total & 1)) / 2 : c_total) <= -256) linear = false;
      nir_def *raw, *ok = nullptr;
      if (linear) {
        raw = linear_load(e.access, pds, c_total);
      } else {
        // Half elements: ir3's dword-offset load (ldg.a.u16, no 64-bit address per element)
        // from the buffer's base, or its base + 2 bytes for an element at an odd position,
        // where every element's parity is known here (window_half_parity).
        const int odd_dim = ebytes == 2 ? window_half_parity(a) : -2;
        nir_def *off = nullptr, *odd_idx = nullptr;
        bool odd = false;
        for (size_t di = 0; di < a.dims.size(); di++) {
          const DimIndex &d = a.dims[di];
          const int64_t c = key[di + 1];
          nir_def *idx = pds[di] ? nir_iadd_imm(&b, pds[di], (uint64_t)c) : i32(c);
          if (checked[di] && d.bound == Bound::skip) {
            // One value per row (column) check, so that points checked by the same ones share
            // their validity (window_reduce's runs).
            nir_def *&in = window_in[{e.access, (int)di, c}];
            if (!in) in = nir_ult(&b, idx, i32(d.extent));
            // Skipped: read a valid element of the same parity (the value is not used).
            idx = nir_bcsel(&b, in, idx, i32((int)di == odd_dim ? (c & 1) : 0));
            ok = ok ? nir_iand(&b, ok, in) : in;
          } else if (checked[di] && d.bound == Bound::clamp) {
            idx = nir_imin(&b, nir_imax(&b, idx, i32(0)), i32(d.extent - 1));
          }
          nir_def *term = nir_imul_imm(&b, idx, (uint64_t)d.stride);
          if ((int)di == odd_dim) {
            odd_idx = term;
            odd = (c & 1) != 0;
          } else {
            off = off ? nir_iadd(&b, off, term) : term;
          }
        }
        if (!off) off = i32(0);
        off = nir_iadd_imm(&b, off, (uint64_t)a.offset);
        if (odd_dim >= -1) {
          nir_def *dw = nir_ushr_imm(&b, off, 1);
          if (odd_idx) dw = nir_iadd(&b, dw, nir_ushr_imm(&b, odd_idx, 1));
          raw = half_load(base_pair.at(a.buffer), dw, odd ? a.buffer : -1);
        } else {
          if (odd_idx) off = nir_iadd(&b, off, odd_idx);
          raw = global_load(a.buffer, off, 1);
        }
      }
      it = wcache.emplace(key, WindowElement{load_widen(e, raw), ok}).first;
    }
    return load_masked(e, it->second.v, it->second.ok);
  }
  // An element of window load `access` that no bound moves: at element offset sum(P_d x stride_d)
  // + c_total. The first part's address is computed once per work item (64-bit); the element is
  // `ldg` at a constant dword offset from it, or from it + 2 bytes for a half element at an odd
  // constant (Mesa ir3_a6xx.c emit_intrinsic_load_global_ir3: an immediate offset of fewer than
  // 256 dwords, else a register).
  nir_def *linear_load(int access, const std::vector<nir_def *> &pds, int64_t c_total) {
    const Access &a = k.loads[(size_t)access];
    const unsigned ebytes = mem_bytes(p.buffers[a.buffer].dtype);
    auto &addr = linear_addr[access];
    if (!addr[0]) {
      nir_def *pt = nullptr;
      for (size_t di = 0; di < a.dims.size(); di++)
        if (pds[di]) {
          nir_def *x = nir_imul_imm(&b, pds[di], (uint64_t)a.dims[di].stride);
          pt = pt ? nir_iadd(&b, pt, x) : x;
        }
      nir_def *at = base.at(a.buffer);
      if (pt) at = nir_iadd(&b, at, nir_i2i64(&b, nir_imul_imm(&b, pt, ebytes)));
      addr[0] = nir_unpack_64_2x32(&b, at);
      if (ebytes == 2) addr[1] = nir_unpack_64_2x32(&b, nir_iadd_imm(&b, at, 2));
    }
    if (ebytes == 4) return dword_load(addr[0], i32(c_total), 32);
    const int64_t odd = c_total & 1;
    return dword_load(addr[odd], i32((c_total - odd) / 2), 16);
  }
  // Which dimension of half-element load `a` may put an element at an odd position (-1: none), or
  // -2 where that is not known here. Known when the view's offset is even, at most one dimension
  // has an odd stride, and in it every parallel axis moves the index by an even amount (the lane
  // axis by lanes x its coefficient, lane_base being a multiple of lanes): then the parity of
  // its index is that of its constant C_d. Clamped indices are not (the clamp moves them).
  int window_half_parity(const Access &a) const {
    if (a.offset % 2) return -2;
    int odd = -1;
    for (size_t di = 0; di < a.dims.size(); di++) {
      const DimIndex &d = a.dims[di];
      if (d.stride % 2 == 0) continue;
      if (odd >= 0 || d.bound == Bound::clamp || (d.bound == Bound::skip && d.extent < 2))
        return -2;
      for (const AxisTerm &t : d.terms)
        if (t.axis < k.n_parallel && (t.coef * (t.axis == lane_axis ? lanes : 1)) % 2) return -2;
      odd = (int)di;
    }
    return odd;
  }
  // One 16-bit element at dword offset `dw` of an address (`pair`, or, for odd_buffer >= 0, that
  // buffer's base + 2 bytes).
  nir_def *half_load(nir_def *pair, nir_def *dw, int odd_buffer) {
    if (odd_buffer >= 0) {
      if (!base_odd_pair.count(odd_buffer))
        base_odd_pair[odd_buffer] =
            nir_unpack_64_2x32(&b, nir_iadd_imm(&b, base.at(odd_buffer), 2));
      pair = base_odd_pair[odd_buffer];
    }
    return dword_load(pair, dw, 16);
  }
  // One element of `bits` at dword offset `dw` of the address `pair`: ir3's own global load,
  // `ldg.a` (`ldg` for a small constant offset; Mesa ir3_a6xx.c emit_intrinsic_load_global_ir3:
  // the type from the bit size, the offset in dwords on a6xx).
  nir_def *dword_load(nir_def *pair, nir_def *dw, unsigned bits) {
    nir_intrinsic_instr *ld = nir_intrinsic_instr_create(b.shader, nir_intrinsic_load_global_ir3);
    ld->num_components = 1;
    ld->src[0] = nir_src_for_ssa(pair);
    ld->src[1] = nir_src_for_ssa(dw);
    nir_intrinsic_set_align(ld, bits / 8, 0);
    nir_intrinsic_set_access(ld, ACCESS_CAN_REORDER);
    nir_def_init(&ld->instr, &ld->def, 1, bits);
    nir_builder_instr_insert(&b, &ld->instr);
    return &ld->def;
  }

  nir_def *load_value(const Expr &e) {
    if (window && load_window[e.access]) return window_load(e);
    const Access &a = k.loads[e.access];
    nir_def *ok, *raw;
    if (lanes > 1 && load_vector[e.access]) {
      if (!vec_raw.count(e.access)) {  // the first lane to read it: one vector load at lane 0
        nir_def *mine = iv[lane_axis];
        iv[lane_axis] = lane_base;
        nir_def *off = access_offset(a, &ok);
        iv[lane_axis] = mine;
        vec_raw[e.access] = global_load(a.buffer, off, (unsigned)lanes);
        vec_ok[e.access] = ok;
      }
      raw = nir_channel(&b, vec_raw[e.access], (unsigned)lane);
      ok = vec_ok[e.access];
    } else {
      nir_def *off = access_offset(a, &ok);
      raw = global_load(a.buffer, off, 1);
    }
    return load_masked(e, load_widen(e, raw), ok);
  }

  // Transcendentals on the SFU (ir3's exp2/log2), which are within the spine's tolerance of the
  // CPU's polynomial versions (math_ir.cpp); the special cases follow math_ir.cpp.
  nir_def *fexp(nir_def *x) { return nir_fexp2(&b, nir_fmul_imm(&b, x, math_coeffs::log2_e)); }
  nir_def *flog(nir_def *x) { return nir_fmul_imm(&b, nir_flog2(&b, x), M_LN2); }
  nir_def *copysign(nir_def *mag, nir_def *sign) {
    return nir_ior(&b, nir_iand_imm(&b, mag, 0x7fffffff), nir_iand_imm(&b, sign, 0x80000000u));
  }
  nir_def *poly(nir_def *x, std::span<const double> coefs) {  // Horner, highest degree first
    nir_def *r = nullptr;
    for (double c : coefs)
      r = r ? nir_fadd_imm(&b, nir_fmul(&b, r, x), c) : nir_imm_float(&b, (float)c);
    return r;
  }
  nir_def *ftanh(nir_def *x) {  // sign(x) (1 - 2 / (exp(2|x|) + 1)); odd series near 0
    nir_def *ax = nir_fabs(&b, x);
    nir_def *e = fexp(nir_fmul_imm(&b, ax, 2.0));
    nir_def *t = nir_fsub(&b, nir_imm_float(&b, 1),
                          nir_fdiv(&b, nir_imm_float(&b, 2), nir_fadd_imm(&b, e, 1)));
    nir_def *small = nir_fmul(&b, x, poly(nir_fmul(&b, x, x), math_coeffs::tanh_series));
    return nir_bcsel(&b, nir_flt_imm(&b, ax, math_coeffs::tanh_series_below), small,
                     copysign(t, x));
  }
  nir_def *ferf(nir_def *x) {  // Abramowitz & Stegun 7.1.26, as math_ir.cpp
    nir_def *ax = nir_fabs(&b, x);
    nir_def *t = nir_frcp(&b, nir_fadd_imm(&b, nir_fmul_imm(&b, ax, math_coeffs::erf_p), 1));
    nir_def *pl = nir_fmul(&b, t, poly(t, math_coeffs::erf_series));
    nir_def *r = nir_fsub(&b, nir_imm_float(&b, 1),
                          nir_fmul(&b, pl, fexp(nir_fneg(&b, nir_fmul(&b, ax, ax)))));
    return copysign(r, x);
  }
  nir_def *fpow(nir_def *x, nir_def *y, int yexpr) {
    const Expr &ye = k.exprs[yexpr];
    if (ye.op == Op::constant) {
      double v = ye.value;
      if (v == 1) return x;
      if (v == 2) return nir_fmul(&b, x, x);
      if (v == 3) return nir_fmul(&b, nir_fmul(&b, x, x), x);
      if (v == 0.5) return nir_fsqrt(&b, x);
      if (v == -1) return nir_frcp(&b, x);
      if (v == 0) return nir_imm_float(&b, 1);
    }
    nir_def *r = fexp(nir_fmul(&b, y, flog(nir_fabs(&b, x))));
    nir_def *yint = nir_feq(&b, nir_ffloor(&b, y), y);
    nir_def *half = nir_fmul_imm(&b, y, 0.5);
    nir_def *yodd = nir_iand(&b, yint, nir_fneu(&b, nir_ffloor(&b, half), half));
    nir_def *neg = nir_flt_imm(&b, x, 0.0);
    r = nir_bcsel(&b, nir_iand(&b, neg, yodd), nir_fneg(&b, r), r);
    r = nir_bcsel(&b, nir_iand(&b, neg, nir_inot(&b, yint)), nir_imm_float(&b, NAN), r);
    return nir_bcsel(&b, nir_feq_imm(&b, y, 0.0), nir_imm_float(&b, 1), r);
  }
  nir_def *fexp_full(nir_def *x) {  // saturating like math_ir.cpp's ir_exp
    nir_def *r = fexp(x);
    r = nir_bcsel(&b, nir_flt_imm(&b, x, math_coeffs::exp_f32_lo), nir_imm_float(&b, 0), r);
    r = nir_bcsel(&b, nir_fgt_imm(&b, x, math_coeffs::exp_f32_hi), nir_imm_float(&b, INFINITY), r);
    return nir_bcsel(&b, nir_fneu(&b, x, x), x, r);
  }
  nir_def *flog_full(nir_def *x) {
    nir_def *r = flog(x);
    r = nir_bcsel(&b, nir_feq_imm(&b, x, 0.0), nir_imm_float(&b, -INFINITY), r);
    r = nir_bcsel(&b, nir_flt_imm(&b, x, 0.0), nir_imm_float(&b, NAN), r);
    return nir_bcsel(&b, nir_fneu(&b, x, x), x, r);
  }

  nir_def *eval(int i) {
    auto it = cache.find(i);
    if (it != cache.end()) return it->second;
    const Expr &e = k.exprs[i];
    bool fl = dtype_is_float(e.dtype);
    nir_def *a = nullptr, *bb = nullptr, *c = nullptr;
    int n = op_arity(e.op);
    if (n > 0) a = eval(e.a);
    if (n > 1) bb = eval(e.b);
    if (n > 2) c = eval(e.c);
    bool afl = n > 0 && dtype_is_float(k.exprs[e.a].dtype);
    nir_def *r = nullptr;
    switch (e.op) {
      case Op::constant: r = constant(e.value, e.dtype); break;
      case Op::load: r = load_value(e); break;
      case Op::acc: r = acc_value; break;
      case Op::iota:
        r = fl                         ? nir_i2f32(&b, iv[e.access])
            : value_bits(e.dtype) == 1 ? nir_ine_imm(&b, iv[e.access], 0)
                                       : nir_i2i64(&b, iv[e.access]);
        break;
      case Op::cast:
        r = convert(a, k.exprs[e.a].dtype, e.dtype);
        // float16 is computed in float32: a cast to it rounds here, as KernelEmitter's does, so a
        // value a fused kernel no longer stores is still the one a float16 holds.
        if (e.dtype == DType::f16) r = nir_f2f32(&b, nir_f2f16_rtne(&b, r));
        break;
      case Op::neg: r = fl ? nir_fneg(&b, a) : nir_ineg(&b, a); break;
      case Op::abs: r = fl ? nir_fabs(&b, a) : nir_iabs(&b, a); break;
      case Op::sqrt: r = nir_fsqrt(&b, a); break;
      case Op::exp: r = fexp_full(a); break;
      case Op::log: r = flog_full(a); break;
      case Op::tanh: r = ftanh(a); break;
      case Op::sigmoid: r = nir_frcp(&b, nir_fadd_imm(&b, fexp(nir_fneg(&b, a)), 1)); break;
      case Op::erf: r = ferf(a); break;
      case Op::floor: r = fl ? nir_ffloor(&b, a) : a; break;
      case Op::ceil: r = fl ? nir_fceil(&b, a) : a; break;
      case Op::round: r = fl ? nir_fround_even(&b, a) : a; break;
      case Op::trunc: r = fl ? nir_ftrunc(&b, a) : a; break;
      case Op::recip: r = nir_frcp(&b, a); break;
      case Op::logical_not: r = nir_inot(&b, a); break;
      case Op::add: r = fl ? nir_fadd(&b, a, bb) : nir_iadd(&b, a, bb); break;
      case Op::sub: r = fl ? nir_fsub(&b, a, bb) : nir_isub(&b, a, bb); break;
      case Op::mul: r = fl ? nir_fmul(&b, a, bb) : nir_imul(&b, a, bb); break;
      case Op::div:
        if (fl) {
          r = nir_fdiv(&b, a, bb);
        } else {  // integer division by zero gives 0, as on the CPU
          nir_def *zero = nir_ieq_imm(&b, bb, 0);
          r = nir_bcsel(&b, zero, nir_imm_int64(&b, 0),
                        nir_idiv(&b, a, nir_bcsel(&b, zero, nir_imm_int64(&b, 1), bb)));
        }
        break;
      case Op::mod:
        if (fl) {
          r = nir_fsub(&b, a, nir_fmul(&b, nir_ffloor(&b, nir_fdiv(&b, a, bb)), bb));
        } else {  // floored modulo (sign of the divisor); 0 for a zero divisor
          nir_def *zero = nir_ieq_imm(&b, bb, 0);
          r = nir_bcsel(&b, zero, nir_imm_int64(&b, 0),
                        nir_imod(&b, a, nir_bcsel(&b, zero, nir_imm_int64(&b, 1), bb)));
        }
        break;
      case Op::pow:
        if (fl) {
          r = fpow(a, bb, e.b);
        } else {
          nir_def *fr = fpow(nir_i2f32(&b, a), nir_i2f32(&b, bb), e.b);
          r = nir_f2i64(&b, nir_fround_even(&b, fr));
        }
        break;
      // max/min: NaN in the second operand wins, as on the CPU (kernel_emit.cpp).
      case Op::max:
        if (afl)
          r = nir_bcsel(&b, nir_fneu(&b, bb, bb), bb, nir_bcsel(&b, nir_fge(&b, bb, a), bb, a));
        else
          r = nir_imax(&b, a, bb);
        break;
      case Op::min:
        if (afl)
          r = nir_bcsel(&b, nir_fneu(&b, bb, bb), bb, nir_bcsel(&b, nir_fge(&b, a, bb), bb, a));
        else
          r = nir_imin(&b, a, bb);
        break;
      case Op::lt: r = afl ? nir_flt(&b, a, bb) : nir_ilt(&b, a, bb); break;
      case Op::le: r = afl ? nir_fge(&b, bb, a) : nir_ige(&b, bb, a); break;
      case Op::gt: r = afl ? nir_flt(&b, bb, a) : nir_ilt(&b, bb, a); break;
      case Op::ge: r = afl ? nir_fge(&b, a, bb) : nir_ige(&b, a, bb); break;
      case Op::eq: r = afl ? nir_feq(&b, a, bb) : nir_ieq(&b, a, bb); break;
      case Op::ne: r = afl ? nir_fneu(&b, a, bb) : nir_ine(&b, a, bb); break;
      case Op::logical_and: r = nir_iand(&b, a, bb); break;
      case Op::logical_or: r = nir_ior(&b, a, bb); break;
      case Op::select: r = nir_bcsel(&b, a, bb, c); break;
    }
    // No default above, so -Wswitch names an op without a case; op_emitters_test runs them all.
    if (!r)
      throw Error(
          std::string(
              "internal: the NIR emitter (codegen/adreno_nir_emit.cpp) gives no value for op ") +
          op_name(e.op));
    cache[i] = r;
    return r;
  }

  nir_def *evaluate(int root, bool body) {
    cache.clear();
    if (lane == 0) {
      vec_raw.clear();
      vec_ok.clear();
    }
    in_body = body;
    valid = nullptr;
    nir_def *v = eval(root);
    in_body = false;
    return v;
  }

  nir_def *combine(nir_def *acc, nir_def *v) {
    bool fl = dtype_is_float(k.acc_dtype);
    switch (k.reduce) {
      case Reduce::sum: return fl ? nir_fadd(&b, acc, v) : nir_iadd(&b, acc, v);
      case Reduce::prod: return fl ? nir_fmul(&b, acc, v) : nir_imul(&b, acc, v);
      // NaN propagates as in the interpreter and the CPU code.
      case Reduce::max:
        return fl ? nir_bcsel(&b, nir_ior(&b, nir_flt(&b, acc, v), nir_fneu(&b, v, v)), v, acc)
                  : nir_imax(&b, acc, v);
      case Reduce::min:
        return fl ? nir_bcsel(&b, nir_ior(&b, nir_flt(&b, v, acc), nir_fneu(&b, v, v)), v, acc)
                  : nir_imin(&b, acc, v);
      case Reduce::none: break;
    }
    return v;
  }

  // A result as its buffer stores it.
  nir_def *memory_value(nir_def *v) {
    DType bt = p.buffers[k.store.buffer].dtype;
    DType vt = k.exprs[k.result].dtype;
    if (bt == DType::boolean) return nir_b2i8(&b, convert(v, vt, DType::boolean));
    // Rounded to nearest even, as ONNX (and every other target) rounds: plain f2f16 becomes a
    // cov with ROUND 0, toward zero on the a6xx (Mesa ir3_compiler_nir.c create_cov), one float16
    // ulp off (seen by fake-adreno:check on the float16 op-conformance cases).
    if (bt == DType::f16) return nir_f2f16_rtne(&b, convert(v, vt, DType::f32));
    if (dtype_is_float(bt)) return convert(v, vt, DType::f32);
    return nir_i2iN(&b, convert(v, vt, DType::i64), mem_bytes(bt) * 8);
  }
  // Stores the lanes' results (lane 0's element first; with lanes > 1 the store has no bounds).
  void store_results(const std::vector<nir_def *> &m) {
    const Access &s = k.store;
    nir_def *ok;
    if (lanes > 1) iv[lane_axis] = lane_base;
    nir_def *off = access_offset(s, &ok);
    std::vector<nir_def *> parts = m;
    // At most 4 components per store (the window path's lanes go up to 16).
    std::vector<nir_def *> values;
    for (size_t q = 0; q < parts.size(); q += 4) {
      const size_t n = std::min<size_t>(4, parts.size() - q);
      values.push_back(n == 1 ? parts[q] : nir_vec(&b, &parts[q], (unsigned)n));
    }
    auto emit = [&] {
      for (size_t q = 0; q < values.size(); q++)
        global_store(s.buffer, q ? nir_iadd_imm(&b, off, (uint64_t)(4 * q)) : off, values[q]);
    };
    if (ok)
      guarded(ok, emit);
    else
      emit();
  }

  // Workgroup shared memory, one 32-bit or 16-bit word at byte offset `off`.
  void shared_store(nir_def *off, nir_def *v) {
    nir_intrinsic_instr *st = nir_intrinsic_instr_create(b.shader, nir_intrinsic_store_shared);
    st->num_components = 1;
    st->src[0] = nir_src_for_ssa(v);
    st->src[1] = nir_src_for_ssa(off);
    nir_intrinsic_set_base(st, 0);
    nir_intrinsic_set_write_mask(st, 0x1);
    nir_intrinsic_set_align(st, v->bit_size / 8, 0);
    nir_builder_instr_insert(&b, &st->instr);
  }
  nir_def *shared_load(nir_def *off) {
    nir_intrinsic_instr *ld = nir_intrinsic_instr_create(b.shader, nir_intrinsic_load_shared);
    ld->num_components = 1;
    ld->src[0] = nir_src_for_ssa(off);
    nir_intrinsic_set_base(ld, 0);
    nir_intrinsic_set_align(ld, 4, 0);
    nir_def_init(&ld->instr, &ld->def, 1, 32);
    nir_builder_instr_insert(&b, &ld->instr);
    return &ld->def;
  }
  // Every work item of the workgroup arrives, and shared-memory writes before are visible after:
  // GLSL's barrier() in a compute shader as NIR spells it (workgroup execution and memory scope,
  // acquire-release on shared memory). ir3 makes the execution scope a `bar` and keeps shared
  // loads and stores on their side of it. Sources: Mesa 25.0.7 src/compiler/glsl/glsl_to_nir.cpp
  // (nir_visitor::visit(ir_barrier *)), src/freedreno/ir3/ir3_compiler_nir.c
  // emit_intrinsic_barrier.
  void workgroup_barrier() {
    nir_intrinsic_instr *bar = nir_intrinsic_instr_create(b.shader, nir_intrinsic_barrier);
    nir_intrinsic_set_execution_scope(bar, SCOPE_WORKGROUP);
    nir_intrinsic_set_memory_scope(bar, SCOPE_WORKGROUP);
    nir_intrinsic_set_memory_semantics(bar, NIR_MEMORY_ACQ_REL);
    nir_intrinsic_set_memory_modes(bar, nir_var_mem_shared);
    nir_builder_instr_insert(&b, &bar->instr);
  }

  // A workgroup per output element (group_size work items, `lid` the local id; the parallel axes
  // already bound): the reduction's points are dealt round-robin to the work items, each folds its
  // share into its own accumulator, and the partial results are combined in shared memory by a
  // tree of halving steps (log2(group_size) barriers). Work item 0 evaluates the result and stores.
  // With `parts` < group_size (group_reduce_parts), the workgroup holds group_size / parts outputs,
  // `parts` consecutive work items each; each output's items fold and combine among themselves
  // (the barriers are the whole group's), and `in_range` says whether this item's output exists
  // (the last workgroup's may not).
  void emit_group_point(nir_def *lid, int group_size, int parts, nir_def *in_range) {
    int64_t points = 1;
    for (size_t a = k.n_parallel; a < k.axes.size(); a++) points *= k.axes[a];
    nir_def *part = parts == group_size ? lid : nir_umod_imm(&b, lid, (uint64_t)parts);
    // A workgroup per output folds one point per item per iteration, as it always has; a split
    // one up to 4.
    const int64_t unroll =
        parts == group_size ? 1 : std::min<int64_t>(kSplitUnroll, (points + parts - 1) / parts);
    nir_variable *acc = nir_local_variable_create(impl, glsl_float_type(), "acc");
    nir_store_var(&b, acc, constant(reduce_identity(k.reduce), k.acc_dtype), 1);
    nir_variable *r = nir_local_variable_create(impl, glsl_int_type(), "r");
    nir_store_var(&b, r, part, 1);
    nir_push_loop(&b);
    {
      nir_def *ri = nir_load_var(&b, r);
      nir_push_if(&b, nir_ige(&b, ri, i32(points)));
      nir_jump(&b, nir_jump_break);
      nir_pop_if(&b, nullptr);
      // Points ri, ri + parts, ... (`unroll` of them: their loads in flight together, one wait
      // for all, where a split reduction's item folds several; a point past the end is
      // evaluated at ri and dropped).
      std::vector<std::pair<nir_def *, nir_def *>> got;  // value, kept (null: always)
      for (int64_t u = 0; u < unroll; u++) {
        nir_def *idx = nir_iadd_imm(&b, ri, (uint64_t)(u * parts));
        nir_def *in = u ? nir_ult(&b, idx, i32(points)) : nullptr;
        nir_def *rem = in ? nir_bcsel(&b, in, idx, ri) : idx;  // innermost reduction axis fastest
        for (int a = (int)k.axes.size() - 1; a >= k.n_parallel; a--) {
          if (k.axes[a] == 1) {
            iv[a] = i32(0);
            continue;
          }
          iv[a] = a == k.n_parallel ? rem : nir_umod_imm(&b, rem, (uint64_t)k.axes[a]);
          if (a > k.n_parallel) rem = nir_udiv_imm(&b, rem, (uint64_t)k.axes[a]);
        }
        nir_def *v = convert(evaluate(k.body, true), k.exprs[k.body].dtype, k.acc_dtype);
        nir_def *keep = valid && in ? nir_iand(&b, valid, in) : valid ? valid : in;
        got.emplace_back(v, keep);
      }
      for (const auto &[v, keep] : got) {
        nir_def *old = nir_load_var(&b, acc);
        nir_def *nv = combine(old, v);
        if (keep) nv = nir_bcsel(&b, keep, nv, old);
        nir_store_var(&b, acc, nv, 1);
      }
      nir_store_var(&b, r, nir_iadd_imm(&b, ri, (uint64_t)(parts * unroll)), 1);
    }
    nir_pop_loop(&b, nullptr);
    nir_def *slot = nir_imul_imm(&b, lid, 4);
    shared_store(slot, nir_load_var(&b, acc));
    workgroup_barrier();
    for (int half = parts / 2; half > 0; half /= 2) {
      nir_push_if(&b, nir_ult(&b, part, i32(half)));
      nir_def *mine = shared_load(slot);
      nir_def *other = shared_load(nir_iadd_imm(&b, slot, (uint64_t)(4 * half)));
      shared_store(slot, combine(mine, other));
      nir_pop_if(&b, nullptr);
      workgroup_barrier();
    }
    nir_def *first = nir_ieq_imm(&b, part, 0);
    nir_push_if(&b, in_range ? nir_iand(&b, first, in_range) : first);
    acc_value = shared_load(parts == group_size ? i32(0) : slot);
    store_results({memory_value(evaluate(k.result, false))});
    nir_pop_if(&b, nullptr);
  }

  // Four staged operands at byte offset `off` (aligned to their size) as float32: one ldl of 4
  // floats, or of 4 float16 widened here with a cov each (half the shared-memory bytes).
  std::array<nir_def *, 4> shared_load4(nir_def *off, int64_t elem) {
    const unsigned bits = elem == 2 ? 16 : 32;
    nir_intrinsic_instr *ld = nir_intrinsic_instr_create(b.shader, nir_intrinsic_load_shared);
    ld->num_components = 4;
    ld->src[0] = nir_src_for_ssa(off);
    nir_intrinsic_set_base(ld, 0);
    nir_intrinsic_set_align(ld, 4 * (unsigned)elem, 0);
    nir_def_init(&ld->instr, &ld->def, 4, bits);
    nir_builder_instr_insert(&b, &ld->instr);
    std::array<nir_def *, 4> v;
    for (unsigned i = 0; i < 4; i++) {
      v[i] = nir_channel(&b, &ld->def, i);
      if (bits == 16) v[i] = nir_f2f32(&b, v[i]);
    }
    return v;
  }

  // Flat index -> the indices of `axes` (innermost fastest).
  void decompose(nir_def *flat, const std::vector<int> &axes) {
    for (int i = (int)axes.size() - 1; i >= 0; i--) {
      uint64_t ext = (uint64_t)k.axes[axes[i]];
      iv[axes[i]] = i ? nir_umod_imm(&b, flat, ext) : flat;
      if (i) flat = nir_udiv_imm(&b, flat, ext);
    }
  }

  // Texel (x, y) of texture and sampler 0 as 4 float32 (txf at level 0, which ir3 makes an
  // isaml: ir3_compiler_nir.c emit_tex; float16 texels are widened by the texture unit).
  nir_def *texel(nir_def *x, nir_def *y) {
    nir_tex_instr *tex = nir_tex_instr_create(b.shader, 2);
    tex->op = nir_texop_txf;
    tex->sampler_dim = GLSL_SAMPLER_DIM_2D;
    tex->dest_type = nir_type_float32;
    tex->coord_components = 2;
    tex->texture_index = 0;
    tex->sampler_index = 0;
    tex->src[0] = nir_tex_src_for_ssa(nir_tex_src_coord, nir_vec2(&b, x, y));
    tex->src[1] = nir_tex_src_for_ssa(nir_tex_src_lod, i32(0));
    nir_def_init(&tex->instr, &tex->def, 4, 32);
    nir_builder_instr_insert(&b, &tex->instr);
    return &tex->def;
  }

  // gpu_tile's schedule (gpu_tile.h), operation for operation as gpu_tile_emit builds it in LLVM
  // for AMDGPU and NVPTX: workgroup `group` owns a TM x TN tile of the output, work item `local`
  // its tm x tn accumulators (registers: NIR variables that become phis); the reduction goes
  // through shared memory a chunk of kc points at a time (slab a at byte 0, slab b after it),
  // between two workgroup barriers, each work item reading its tm and tn operands as one vec4
  // shared load each. The epilogue evaluates the kernel's result per accumulator and stores
  // tn (or tm) neighbours as one vec4 where the plan says they are contiguous.
  // `image_b`: b is read through the texture unit (adreno_image_operand), not staged.
  void tile_emit(const GpuTilePlan &pl, const GpuFacts &f, nir_def *group, nir_def *local,
                 bool image_b) {
    const int64_t TM = pl.TM(), TN = pl.TN(), GS = f.group_size, E = k.axes[pl.chunk];
    if ((pl.tm != 4 && pl.tm != 8) || (pl.tn != 4 && pl.tn != 8))
      fail("the tile plan's micro tile is not 4 or 8 by 4 or 8 (whole vec4 operand loads)");
    const uint32_t slab_b = (uint32_t)(pl.elem_a * pl.kc * TM);
    // Two sets of slabs, chunks alternating between them (plan.buffers == 2): one barrier per
    // chunk. Staging chunk c + 1 into the set chunk c - 1 was read from is safe: a work item
    // stages it only after passing chunk c's barrier, which every work item reaches only after
    // computing chunk c - 1. With one set a second barrier ends each chunk, and the instruction
    // after it began the next chunk's block, where ir3's legalize does not give it (ss)(sy)
    // (ir3_legalize.c, `last_n` is per block): the hazard checker's barrier_sync, seen with the
    // 8 x 4 and 8 x 8 micro tiles.
    const uint32_t set_bytes = image_b ? slab_b : (uint32_t)(pl.shared_bytes() / pl.buffers);
    nir_variable *set = nir_local_variable_create(impl, glsl_uint_type(), "slab_set");
    nir_store_var(&b, set, i32(0), 1);
    std::vector<nir_variable *> acc((size_t)(pl.tm * pl.tn));
    for (auto &x : acc) {
      x = nir_local_variable_create(impl, glsl_float_type(), "acc");
      nir_store_var(&b, x, nir_imm_float(&b, 0), 1);
    }
    nir_def *ln = nir_umod_imm(&b, local, (uint64_t)pl.lanes_n),
            *lm = nir_udiv_imm(&b, local, (uint64_t)pl.lanes_n);
    nir_def *tile_n = nir_umod_imm(&b, group, (uint64_t)pl.tiles_n),
            *rest = nir_udiv_imm(&b, group, (uint64_t)pl.tiles_n);
    nir_def *tile_m = nir_umod_imm(&b, rest, (uint64_t)pl.tiles_m),
            *batch = nir_udiv_imm(&b, rest, (uint64_t)pl.tiles_m);
    nir_def *m0 = nir_imul_imm(&b, tile_m, (uint64_t)TM),
            *n0 = nir_imul_imm(&b, tile_n, (uint64_t)TN);
    decompose(batch, pl.batch);

    // slab[kk][t] = load(position base + t, reduction point c0 + kk), 0 outside the tile, the
    // reduction or a skipped border; one element per work item per step, neighbouring work items
    // on neighbouring positions. The full steps are a rolled loop: unrolled, each repeats the
    // index arithmetic (~70 instructions), and the chunk loop's body outgrew the a630's 8 KiB
    // instruction cache (freedreno_devices.py instr_cache_size = 64 units of 128 bytes).
    // `expr` >= 0: the operand is that expression (pl.a_expr), evaluated per element and staged
    // as elem bytes (float16: the value it holds is already one, expr_splice's rounding cast).
    auto stage = [&](nir_def *set_at, uint32_t slab, int load, int64_t T, nir_def *base,
                     int64_t ext, const std::vector<int> &axes, nir_def *c0, int expr,
                     int64_t expr_elem) {
      const Access &a = k.loads[load];
      // float16 is staged as it is
      const int64_t elem = expr >= 0 ? expr_elem : dtype_size(p.buffers[a.buffer].dtype);
      // One element: its address (offset 0 when it is outside the tile, the reduction or a
      // skipped border: element 0 of the buffer exists, so every load is in bounds), the load,
      // and whether the value or 0 is staged.
      struct Fetched {
        nir_def *value, *in, *at;
      };
      auto fetch = [&](nir_def *idx) {
        nir_def *kk = nir_udiv_imm(&b, idx, (uint64_t)T), *t = nir_umod_imm(&b, idx, (uint64_t)T);
        nir_def *pos = nir_iadd(&b, base, t), *r = nir_iadd(&b, c0, kk);
        nir_def *in = nir_iand(&b, nir_ult(&b, pos, i32(ext)), nir_ult(&b, r, i32(E)));
        decompose(nir_bcsel(&b, in, pos, i32(0)), axes);  // never address outside
        iv[pl.chunk] = nir_bcsel(&b, in, r, i32(0));
        Fetched fe;
        if (expr >= 0) {
          // Its loads address inside their buffers whatever the point (access_offset), and
          // `valid` is their skip bounds: a padded point stages 0, as the float graph's padding.
          fe.value = evaluate(expr, true);
          if (valid) in = nir_iand(&b, in, valid);
          if (elem == 2) fe.value = nir_f2f16(&b, fe.value);
        } else {
          nir_def *ok;
          nir_def *off = access_offset(a, &ok);
          if (ok) in = nir_iand(&b, in, ok);
          fe.value = global_load(a.buffer, nir_bcsel(&b, in, off, i32(0)), 1);
        }
        fe.in = in;
        fe.at = nir_iadd(&b, set_at, nir_iadd_imm(&b, nir_imul_imm(&b, idx, (uint64_t)elem), slab));
        return fe;
      };
      // `count` elements, `GS` apart from `idx`: every load first, then the selects and shared
      // stores, so the loads are in flight together and the work item waits once ((sy) before
      // the first select) instead of once per element. Before, each element was an if around
      // its load (a branch, and a wait, per element; NOTES.md "Hostile files" tells why its
      // phi is placed as it was).
      auto steps = [&](nir_def *idx, int64_t count) {
        std::vector<Fetched> got;
        for (int64_t u = 0; u < count; u++)
          got.push_back(fetch(nir_iadd_imm(&b, idx, (uint64_t)(u * GS))));
        nir_def *zero = elem == 2 ? nir_imm_float16(&b, 0) : nir_imm_float(&b, 0);
        for (const Fetched &fe : got) shared_store(fe.at, nir_bcsel(&b, fe.in, fe.value, zero));
      };
      const int64_t full = pl.kc * T / GS;
      // Elements per loop iteration: up to f.stage_batch, a divisor of the full steps.
      int64_t batch = std::max<int64_t>(1, std::min<int64_t>(f.stage_batch, full));
      while (full % batch) batch--;
      if (full > batch)
        loop(
            i32(0), i32(full / batch),
            [&](nir_def *st) {
              steps(nir_iadd(&b, local, nir_imul_imm(&b, st, (uint64_t)(GS * batch))), batch);
            },
            true);
      else if (full > 0)
        steps(local, full);
      if (pl.kc * T % GS) {  // the last, partial step: only the work items with an element in it
        nir_def *idx = nir_iadd_imm(&b, local, (uint64_t)(full * GS));
        guarded(nir_ult(&b, idx, i32(pl.kc * T)), [&] { steps(idx, 1); });
      }
    };

    std::function<void(size_t)> outer = [&](size_t at) {
      if (at < pl.outer.size()) {
        loop(i32(0), i32(k.axes[pl.outer[at]]), [&](nir_def *i) {
          iv[pl.outer[at]] = i;
          outer(at + 1);
        });
        return;
      }
      loop(i32(0), i32((E + pl.kc - 1) / pl.kc), [&](nir_def *chunk) {
        nir_def *c0 = nir_imul_imm(&b, chunk, (uint64_t)pl.kc);
        nir_def *set_at = nir_load_var(&b, set);  // byte offset of this chunk's slabs
        stage(set_at, 0, pl.a, TM, m0, pl.M, pl.m, c0, pl.a_expr, pl.elem_a);
        if (!image_b) stage(set_at, slab_b, pl.b, TN, n0, pl.N, pl.n, c0, -1, 0);
        workgroup_barrier();
        auto point = [&](nir_def *kk) {
          nir_def *at_a = nir_iadd(&b, set_at,
                                   nir_iadd(&b, nir_imul_imm(&b, kk, (uint64_t)(pl.elem_a * TM)),
                                            nir_imul_imm(&b, lm, (uint64_t)(pl.elem_a * pl.tm))));
          nir_def *at_b = nir_iadd(&b, set_at,
                                   nir_iadd(&b, nir_imul_imm(&b, kk, (uint64_t)(pl.elem_b * TN)),
                                            nir_imul_imm(&b, ln, (uint64_t)(pl.elem_b * pl.tn))));
          // tm (tn) operands as tm / 4 vec4 shared loads: an 8 x 8 micro tile reads 16 operands
          // (and widens 16 float16) per 64 multiply-adds, a 4 x 4 one 8 per 16.
          auto operands = [&](nir_def *at, int64_t count, int64_t elem) {
            std::vector<nir_def *> v;
            for (int64_t q = 0; q < count; q += 4)
              for (nir_def *x : shared_load4(nir_iadd_imm(&b, at, (uint64_t)(q * elem)), elem))
                v.push_back(x);
            return v;
          };
          const std::vector<nir_def *> av = operands(at_a, pl.tm, pl.elem_a),
                                       bv = operands(nir_iadd_imm(&b, at_b, slab_b), pl.tn,
                                                     pl.elem_b);
          for (int64_t i = 0; i < pl.tm; i++)
            for (int64_t j = 0; j < pl.tn; j++) {
              nir_variable *x = acc[(size_t)(i * pl.tn + j)];
              nir_def *prod = nir_fmul(&b, av[(size_t)i], bv[(size_t)j]);
              nir_store_var(&b, x, nir_fadd(&b, nir_load_var(&b, x), prod), 1);
            }
        };
        // The first point right after the barrier, in its block: ir3's legalize gives the
        // instruction after a `bar` (ss)(sy) only within a block (ir3_legalize.c, `last_n`), and a
        // loop starting right after it began a new block without them (the hazard checker's
        // barrier_sync, seen once float16 slabs made the loop too long for NIR to unroll).
        // b as an image: 4 points at a time, a texel per column holding the 4 (texel x =
        // point / 4, row y = the column), their a operands from the slab.
        auto point4 = [&](nir_def *q) {
          nir_def *kk = nir_imul_imm(&b, q, 4);
          nir_def *x = nir_udiv_imm(&b, nir_iadd(&b, c0, kk), 4);
          std::vector<nir_def *> bv;
          for (int64_t j = 0; j < pl.tn; j++)
            bv.push_back(texel(
                x, nir_iadd(&b, n0,
                            nir_iadd_imm(&b, nir_imul_imm(&b, ln, (uint64_t)pl.tn), (uint64_t)j))));
          for (int64_t u = 0; u < 4; u++) {
            nir_def *at_a = nir_iadd(&b, set_at,
                                     nir_iadd(&b,
                                              nir_imul_imm(&b, nir_iadd_imm(&b, kk, (uint64_t)u),
                                                           (uint64_t)(pl.elem_a * TM)),
                                              nir_imul_imm(&b, lm, (uint64_t)(pl.elem_a * pl.tm))));
            std::vector<nir_def *> av;
            for (int64_t q4 = 0; q4 < pl.tm; q4 += 4)
              for (nir_def *v :
                   shared_load4(nir_iadd_imm(&b, at_a, (uint64_t)(q4 * pl.elem_a)), pl.elem_a))
                av.push_back(v);
            for (int64_t i = 0; i < pl.tm; i++)
              for (int64_t j = 0; j < pl.tn; j++) {
                nir_variable *v = acc[(size_t)(i * pl.tn + j)];
                nir_def *prod = nir_fmul(&b, av[(size_t)i], nir_channel(&b, bv[(size_t)j], u));
                nir_store_var(&b, v, nir_fadd(&b, nir_load_var(&b, v), prod), 1);
              }
          }
        };
        if (image_b) {
          point4(i32(0));
          if (pl.kc > 4) loop(i32(1), i32(pl.kc / 4), point4);
        } else {
          point(i32(0));
          if (pl.kc > 1) loop(i32(1), i32(pl.kc), point);
        }
        if (pl.buffers == 2)  // the next chunk stages into the other set
          nir_store_var(&b, set, nir_isub(&b, i32(set_bytes), set_at), 1);
        else
          workgroup_barrier();  // the next chunk overwrites the slabs
      });
    };
    outer(0);
    // Values defined inside the loops do not reach the epilogue.
    for (size_t x = k.n_parallel; x < k.axes.size(); x++) iv[x] = i32(0);

    // Epilogue: each accumulator is one output element, finished as in the untiled form.
    // One stg.a of 4 dwords, or one stg of 4 float16 (8 bytes) on a 64-bit address.
    const DType st = p.buffers[k.store.buffer].dtype;
    const bool vec_store = mem_bytes(st) == 4 || st == DType::f16;
    const bool along_n = vec_store && pl.store_vector == 'n',
               along_m = vec_store && pl.store_vector == 'm';
    // With a vector store, one per 4 neighbours (the plan's store_vector: groups of 4).
    const int64_t step_m = along_m ? 4 : 1, step_n = along_n ? 4 : 1;
    for (int64_t i = 0; i < pl.tm; i += step_m)
      for (int64_t j = 0; j < pl.tn; j += step_n) {
        nir_def *m =
            nir_iadd(&b, m0, nir_iadd_imm(&b, nir_imul_imm(&b, lm, (uint64_t)pl.tm), (uint64_t)i));
        nir_def *n =
            nir_iadd(&b, n0, nir_iadd_imm(&b, nir_imul_imm(&b, ln, (uint64_t)pl.tn), (uint64_t)j));
        // With a vector store, M (or N) is a multiple of 4 (the plan checked the innermost axis):
        // the first of the four in range means all four are.
        guarded(nir_iand(&b, nir_ult(&b, m, i32(pl.M)), nir_ult(&b, n, i32(pl.N))), [&] {
          int count = along_n || along_m ? 4 : 1;
          std::vector<nir_def *> results;
          for (int l = count - 1; l >= 0;
               l--) {  // the last evaluated is element 0: its indices address the store
            decompose(along_m ? nir_iadd_imm(&b, m, (uint64_t)l) : m, pl.m);
            decompose(along_n ? nir_iadd_imm(&b, n, (uint64_t)l) : n, pl.n);
            int64_t ai = along_m ? i + l : i, aj = along_n ? j + l : j;
            acc_value = nir_load_var(&b, acc[(size_t)(ai * pl.tn + aj)]);
            results.insert(results.begin(), memory_value(evaluate(k.result, false)));
          }
          store_results(results);
        });
      }
  }

  // The window path's reduction: every point unrolled here (the reduction axes' values are host
  // constants), in the order of the loop nest, each lane folding its own accumulator, so each
  // output sums the same terms in the same order as the other paths and the host twin. A run of
  // consecutive points with the same validity (a padded row's points, checked by the row alone)
  // is folded unconditionally and kept or dropped as a whole by one select at its end: the same
  // result as a select per point, all of them being kept or all dropped.
  void window_reduce(std::vector<nir_def *> &acc_values) {
    if (value_bits(k.acc_dtype) != 32) fail("the window path needs a float accumulator");
    std::vector<nir_def *> run_valid((size_t)lanes, nullptr), run_start((size_t)lanes, nullptr);
    auto close_run = [&](size_t l) {
      if (run_valid[l]) acc_values[l] = nir_bcsel(&b, run_valid[l], acc_values[l], run_start[l]);
      run_valid[l] = nullptr;
    };
    for (int l = 0; l < lanes; l++)
      acc_values[(size_t)l] = constant(reduce_identity(k.reduce), k.acc_dtype);
    rval.assign(k.axes.size(), 0);
    int64_t points = 1;
    for (size_t a = (size_t)k.n_parallel; a < k.axes.size(); a++) points *= k.axes[a];
    for (int64_t r = 0; r < points; r++) {
      int64_t rem = r;  // innermost reduction axis fastest, as the nest runs
      for (int a = (int)k.axes.size() - 1; a >= k.n_parallel; a--) {
        rval[(size_t)a] = rem % k.axes[(size_t)a];
        rem /= k.axes[(size_t)a];
        iv[(size_t)a] = i32(rval[(size_t)a]);
      }
      for (int l = 0; l < lanes; l++) {
        lane_set(l);
        nir_def *v = convert(evaluate(k.body, true), k.exprs[k.body].dtype, k.acc_dtype);
        if (valid != run_valid[(size_t)l]) {
          close_run((size_t)l);
          run_valid[(size_t)l] = valid;
          run_start[(size_t)l] = acc_values[(size_t)l];
        }
        acc_values[(size_t)l] = combine(acc_values[(size_t)l], v);
      }
    }
    for (int l = 0; l < lanes; l++) close_run((size_t)l);
  }

  // The outputs of one work item: per lane the reduction (the lanes' accumulators advance
  // together through one loop nest), then the results and their store.
  void emit_point() {
    std::vector<nir_def *> acc_values(lanes, nullptr);
    if (window) {
      window_reduce(acc_values);
    } else if (k.reduce != Reduce::none) {
      if (value_bits(k.acc_dtype) == 1) fail("boolean accumulators are not supported");
      std::vector<nir_variable *> acc(lanes);
      for (int l = 0; l < lanes; l++) {
        acc[l] = nir_local_variable_create(
            impl, value_bits(k.acc_dtype) == 32 ? glsl_float_type() : glsl_int64_t_type(), "acc");
        nir_store_var(&b, acc[l], constant(reduce_identity(k.reduce), k.acc_dtype), 1);
      }
      nest(k.n_parallel, (int)k.axes.size(), [&] {
        for (int l = 0; l < lanes; l++) {
          lane_set(l);
          nir_def *v = convert(evaluate(k.body, true), k.exprs[k.body].dtype, k.acc_dtype);
          nir_def *old = nir_load_var(&b, acc[l]);
          nir_def *nv = combine(old, v);
          if (valid) nv = nir_bcsel(&b, valid, nv, old);
          nir_store_var(&b, acc[l], nv, 1);
        }
      });
      for (int l = 0; l < lanes; l++) acc_values[l] = nir_load_var(&b, acc[l]);
    }
    std::vector<nir_def *> results(lanes);
    for (int l = 0; l < lanes; l++) {
      lane_set(l);
      acc_value = acc_values[l];
      results[l] = memory_value(evaluate(k.result, false));
    }
    store_results(results);
  }
};

// How many consecutive outputs along the innermost parallel axis one work item computes: 4 when
// the axis divides by 4 and the store is a plain contiguous row along it (one vec4 store, no
// bounds), else 1. Disabled with CAPGRAPH_ADRENO_SCALAR=1 (for comparison).
int kernel_lanes(const Kernel &k, const Program &p) {
  if (knob_get("CAPGRAPH_ADRENO_SCALAR") || k.n_parallel < 1) return 1;
  int ax = k.n_parallel - 1;
  if (k.axes[ax] % 4 != 0) return 1;
  int64_t step = 0;
  for (const DimIndex &d : k.store.dims) {
    if (d.bound != Bound::none || d.expr >= 0 || d.divisor != 1) return 1;
    for (const AxisTerm &t : d.terms)
      if (t.axis == ax) step += t.coef * d.stride;
  }
  return step == 1 ? 4 : 1;
}

// Whether load `i` can be read as one vector per work item: contiguous along the lane axis, with
// nothing lane-dependent in its bounds or gathers.
bool load_is_vector(const Access &a, int ax) {
  int64_t step = 0;
  for (const DimIndex &d : a.dims) {
    int64_t c = 0;
    for (const AxisTerm &t : d.terms)
      if (t.axis == ax) c += t.coef;
    if (d.expr >= 0) return false;
    if (c != 0 && (d.bound != Bound::none || d.divisor != 1)) return false;
    step += c * d.stride;
  }
  return step == 1;
}

// Whether a reduction is worth a workgroup per output: many points to fold and few outputs to
// spread them over (global pooling, softmax rows, matrix-vector products), so that one work item
// per output would leave the GPU idle while each walks its whole reduction. Float accumulators only
// (shared memory holds 32-bit words). CAPGRAPH_ADRENO_SCALAR=1 turns it off (for comparison).
bool kernel_group_reduces(const Kernel &k, int64_t outputs) {
  if (knob_get("CAPGRAPH_ADRENO_SCALAR") || k.reduce == Reduce::none || k.acc_dtype != DType::f32)
    return false;
  int64_t points = 1;
  for (size_t a = k.n_parallel; a < k.axes.size(); a++) points *= k.axes[a];
  return points >= 256 && outputs <= 16384;
}

// A load the window path reads through its cache: affine in every dimension (no gather, no
// divisor), read as is, padded (skip) or clamped.
bool load_is_window(const Access &a) {
  for (const DimIndex &d : a.dims)
    if (d.expr >= 0 || d.divisor != 1 ||
        (d.bound != Bound::none && d.bound != Bound::skip && d.bound != Bound::clamp))
      return false;
  return true;
}

int64_t parallel_points(const Kernel &k) {
  int64_t n = 1;
  for (int a = 0; a < k.n_parallel; a++) n *= k.axes[a];
  return n;
}

}  // namespace

std::vector<int> adreno_window_lanes(const Kernel &k, const Program &p) {
  int forced = -1;
  const char *v = knob_get("CAPGRAPH_ADRENO_WINDOW");
  if (v && *v) {  // empty: as if unset
    char *end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (*end || (n != 0 && n != 4 && n != 7 && n != 8 && n != 14 && n != 16))
      throw Error(std::string("CAPGRAPH_ADRENO_WINDOW=") + v +
                  ": want 0 (no window path) or the lanes 4, 7, 8, 14 or 16");
    forced = (int)n;
  }
  if (forced == 0 || knob_get("CAPGRAPH_ADRENO_SCALAR") || k.n_parallel < 1 ||
      k.reduce == Reduce::none || k.acc_dtype != DType::f32)
    return {};
  const int ax = k.n_parallel - 1;
  int64_t points = 1;
  for (size_t a = (size_t)k.n_parallel; a < k.axes.size(); a++) points *= k.axes[a];
  if (points < 2 || points > kWindowMaxPoints) return {};
  int64_t step = 0;  // the store: a plain contiguous row along the lane axis
  for (const DimIndex &d : k.store.dims) {
    if (d.bound != Bound::none || d.expr >= 0 || d.divisor != 1) return {};
    for (const AxisTerm &t : d.terms)
      if (t.axis == ax) step += t.coef * d.stride;
  }
  if (step != 1) return {};
  // A sliding window: a load whose index moves with both the lane axis and a reduction axis in
  // one padded dimension (depthwise convolutions, pooling). Only in programs with float16
  // storage (every kernel of them, those of tensors kept float32 too): float32 captures stay as
  // they were, byte for byte (issue 28: "float32 captures unchanged").
  if (!program_has_half(p)) return {};
  bool slides = false;
  for (const Access &a : k.loads) {
    if (!load_is_window(a)) continue;
    for (const DimIndex &d : a.dims) {
      bool lane = false, red = false;
      for (const AxisTerm &t : d.terms) {
        lane |= t.axis == ax && t.coef != 0;
        red |= t.axis >= k.n_parallel && t.coef != 0;
      }
      slides |= lane && red && d.bound == Bound::skip;
    }
  }
  if (!slides) return {};
  std::vector<int> lanes;
  for (int l : {4, 7, 8, 14, 16})
    if (k.axes[(size_t)ax] % l == 0 && (forced < 0 || l == forced)) lanes.push_back(l);
  return lanes;
}

// Work items per output of a reduction split across a workgroup (emit_group_point), or 0 where it
// keeps one work item per output. Float32 captures as always: a workgroup per output (parts ==
// group_size) where the reduction is long (>= 256 points) and the outputs few (<= 16384). With
// float16 storage, those and the shorter reductions (>= 16 points) of fewer than 1000 outputs
// take `parts` from a latency model of the a630 (a630_estimate.h's latency term and constants):
// waves resident at once (2 SPs x 16); one work item per output waits on each of its points' loads
// in turn (L_sy, 110 clocks), a split item on every kSplitUnroll of them, then log2(parts) halving
// steps with a barrier (~40 clocks each: a shared load, an add, a shared store); the fewest
// clocks win. The matrix-vector products of a policy head (200 outputs of 128 points) were one
// wave waiting on 128 loads in turn: 22.5 us estimated, 8.7 split 8 ways. From 1000 outputs on,
// a kernel the old rule left one item per output keeps it: there the model misjudged
// squeezenet's last pooling (1000 outputs of 169 points: 18 us as it is, whose loop ir3 unrolls,
// 41 us split in two). Not for window-path kernels (depthwise convolutions, pooling windows).
namespace {
int group_reduce_parts(const Kernel &k, const Program &p, int group_size) {
  const int64_t outputs = parallel_points(k);
  const bool whole = kernel_group_reduces(k, outputs);
  if (!program_has_half(p)) return whole ? group_size : 0;
  if (knob_get("CAPGRAPH_ADRENO_SCALAR") || k.reduce == Reduce::none || k.acc_dtype != DType::f32 ||
      !adreno_window_lanes(k, p).empty() || (!whole && outputs >= 1000))
    return 0;
  int64_t points = 1;
  for (size_t a = (size_t)k.n_parallel; a < k.axes.size(); a++) points *= k.axes[a];
  if (points < 16) return 0;
  constexpr double kFold = 110, kStep = 40, kWave = 64, kResident = 32;
  auto clocks = [&](int64_t parts) {
    const int64_t per_group = parts == 1 ? 1 : group_size / parts;
    const double threads =
        double((outputs + per_group - 1) / per_group) * double(parts == 1 ? 1 : group_size);
    const double rounds = std::ceil(std::ceil(threads / kWave) / kResident);
    // A split item folds kSplitUnroll points per load wait (emit_group_point's unroll).
    const double per_item = double((points + parts - 1) / parts);
    const double waits = parts == 1 ? per_item : std::ceil(per_item / double(kSplitUnroll));
    return rounds * (waits * kFold + std::log2(double(parts)) * kStep);
  };
  int best = 1;
  for (int parts = 2; parts <= group_size && parts <= points; parts *= 2)
    if (clocks(parts) < clocks(best)) best = parts;
  return best > 1 ? best : 0;
}
}  // namespace

adreno::image_facts adreno_image_operand(const Kernel &k, const Program &p, const GpuTilePlan &pl) {
  const adreno::image_facts none;
  if (!pl.ok || pl.b < 0 || !pl.outer.empty() || pl.n.size() != 1 || pl.kc % 4) return none;
  const Access &a = k.loads[pl.b];
  const Buffer &buf = p.buffers[a.buffer];
  if (buf.kind != Buffer::Kind::constant || (buf.dtype != DType::f16 && buf.dtype != DType::f32))
    return none;
  // Each axis's step through the buffer (elements), and the start.
  std::vector<int64_t> step(k.axes.size(), 0);
  int64_t start = a.offset;
  for (const DimIndex &d : a.dims) {
    if (d.expr >= 0 || d.divisor != 1 || d.bound != Bound::none) return none;
    start += d.shift * d.stride;
    for (const AxisTerm &t : d.terms) step[(size_t)t.axis] += t.coef * d.stride;
  }
  const int n = pl.n[0], c = pl.chunk;
  for (size_t x = 0; x < k.axes.size(); x++)
    if ((int)x != n && (int)x != c && k.axes[x] > 1 && step[x] != 0) return none;
  const int64_t K = k.axes[c], N = k.axes[n], row = step[(size_t)n];
  const int64_t elem = dtype_size(buf.dtype);
  if (start != 0 || step[(size_t)c] != 1 || K % 4 || row < K || (N - 1) * row + K > buf.numel)
    return none;
  adreno::image_facts f;
  f.format = elem == 2 ? adreno::fmt6_16_16_16_16_float : adreno::fmt6_32_32_32_32_float;
  f.width = (uint32_t)std::min<int64_t>(K / 4, UINT32_MAX);
  f.height = (uint32_t)std::min<int64_t>(N, UINT32_MAX);
  f.pitch = (uint32_t)std::min<int64_t>(row * elem, UINT32_MAX);
  const std::vector<int> slots = kernel_slots(k);
  f.slot = (uint32_t)(std::find(slots.begin(), slots.end(), a.buffer) - slots.begin());
  std::string why;
  if (f.slot >= slots.size() || !adreno::image_facts_check(f, (uint64_t)(buf.numel * elem), &why))
    return none;
  return f;
}

AdrenoNirKernel adreno_nir_build(const Kernel &k, const Program &p,
                                 const nir_shader_compiler_options *options, const GpuFacts &facts,
                                 int window_lanes, bool image_b) {
  NirKernelEmitter e(k, p);
  AdrenoNirKernel r;
  const int workgroup_size = (int)facts.group_size;
  const GpuTilePlan plan = gpu_tile_plan(k, p, facts);
  r.tiled = plan.ok;
  r.group_size = facts.group_size;
  if (plan.ok) r.plan = plan;
  const int parts = r.tiled ? 0 : group_reduce_parts(k, p, workgroup_size);
  r.group_reduce = parts > 0;
  r.group_parts = parts;
  if (window_lanes) {
    const std::vector<int> can = adreno_window_lanes(k, p);
    if (r.tiled || r.group_reduce || std::find(can.begin(), can.end(), window_lanes) == can.end())
      e.fail("the window path with " + std::to_string(window_lanes) +
             " lanes does not apply to this kernel");
  }
  e.window = window_lanes > 0;
  e.half_program = program_has_half(p);
  e.lanes = window_lanes ? window_lanes : r.group_reduce || r.tiled ? 1 : kernel_lanes(k, p);
  e.lane_axis = e.lanes > 1 ? k.n_parallel - 1 : -1;
  e.load_vector.assign(k.loads.size(), 0);
  e.load_window.assign(k.loads.size(), 0);
  for (size_t i = 0; i < k.loads.size() && e.lanes > 1; i++) {
    if (e.window)
      e.load_window[i] = load_is_window(k.loads[i]);
    else
      e.load_vector[i] = load_is_vector(k.loads[i], e.lane_axis);
  }
  r.lanes = e.lanes;
  r.work_items = parallel_points(k) / e.lanes;
  e.slots = kernel_slots(k);
  for (int s : e.slots) {
    const Buffer &buf = p.buffers[s];
    if (buf.dtype == DType::f64)
      e.fail("buffer " + buf.name + " holds 64-bit floats, which ir3 cannot compute with");
    if (buf.dtype == DType::bf16 || buf.dtype == DType::u16 || buf.dtype == DType::u32 ||
        buf.dtype == DType::u64)
      e.fail("buffer " + buf.name + " holds " + dtype_name(buf.dtype) +
             ", which this emitter has no loads and stores for (CPU, AMD and NVIDIA targets have)");
    if (buf.numel * dtype_size(buf.dtype) >= (int64_t(1) << 31))
      e.fail("buffer " + buf.name + " is 2 GiB or larger; Adreno kernels index with 32 bits");
  }
  // A fused kernel may compute in them without a buffer of them (expr_splice's rounding casts).
  for (const Expr &x : k.exprs)
    if (x.dtype == DType::bf16 || x.dtype == DType::u16 || x.dtype == DType::u32 ||
        x.dtype == DType::u64)
      e.fail(std::string("computes in ") + dtype_name(x.dtype) +
             ", which this emitter has no conversions for (CPU, AMD and NVIDIA targets have)");
  if (r.work_items >= (int64_t(1) << 31)) e.fail("more than 2^31 output elements");
  for (int64_t a : k.axes)
    if (a >= (int64_t(1) << 31)) e.fail("an axis of 2^31 or more points");

  e.b = nir_builder_init_simple_shader(MESA_SHADER_KERNEL, options, "%s", k.name.c_str());
  nir_shader *s = e.b.shader;
  e.impl = e.b.impl;
  s->info.workgroup_size[0] = (uint16_t)workgroup_size;
  s->info.workgroup_size[1] = 1;
  s->info.workgroup_size[2] = 1;
  s->info.workgroup_size_variable = false;
  r.param_bytes = (uint32_t)(8 * e.slots.size());
  s->num_uniforms = 0;

  // Parameters: slot i's address at byte 8*i of the kernel inputs.
  for (size_t i = 0; i < e.slots.size(); i++) {
    nir_intrinsic_instr *ld = nir_intrinsic_instr_create(s, nir_intrinsic_load_kernel_input);
    ld->num_components = 1;
    ld->src[0] = nir_src_for_ssa(nir_imm_int(&e.b, (int)(8 * i)));
    nir_intrinsic_set_base(ld, 0);
    nir_intrinsic_set_range(ld, r.param_bytes);
    nir_intrinsic_set_align(ld, 8, 0);
    nir_def_init(&ld->instr, &ld->def, 1, 64);
    nir_builder_instr_insert(&e.b, &ld->instr);
    e.base[e.slots[i]] = &ld->def;
    e.base_pair[e.slots[i]] = nir_unpack_64_2x32(&e.b, &ld->def);
  }

  nir_def *group = nir_channel(&e.b, nir_load_workgroup_id(&e.b), 0);
  nir_def *local = nir_channel(&e.b, nir_load_local_invocation_id(&e.b), 0);
  e.iv.assign(k.axes.size(), nullptr);
  if (r.tiled) {  // a workgroup per output tile: every work item of every workgroup takes part
    if (plan.groups() >= (int64_t(1) << 31)) e.fail("more than 2^31 workgroups of output tiles");
    uint32_t shared = (uint32_t)plan.shared_bytes();
    if (image_b) {
      const adreno::image_facts view = adreno_image_operand(k, p, plan);
      if (!view.width) e.fail("its weight operand does not qualify to be read as an image");
      r.images.push_back(view);
      shared = (uint32_t)(plan.buffers * plan.kc * plan.elem_a * plan.TM());  // the a slabs
      s->info.num_textures = 1;
      BITSET_SET(s->info.textures_used, 0);
      BITSET_SET(s->info.textures_used_by_txf, 0);
    }
    s->info.shared_size = shared;
    r.grid = plan.groups();
    r.work_items = r.grid * workgroup_size;
    r.shared_bytes = shared;
    e.iv.assign(k.axes.size(), e.i32(0));
    e.tile_emit(plan, facts, group, local, image_b);
    r.shader = s;
    return r;
  }
  if (r.group_reduce) {  // workgroup_size / parts outputs per workgroup, `parts` items each
    s->info.shared_size = 4 * (unsigned)workgroup_size;
    const int64_t outputs = parallel_points(k), per_group = workgroup_size / parts;
    r.grid = (outputs + per_group - 1) / per_group;
    r.work_items = r.grid * workgroup_size;
    nir_def *rem = group, *in_range = nullptr;
    if (per_group > 1) {  // the last workgroup's items past the outputs compute output 0's share
      nir_def *out = nir_iadd(&e.b, nir_imul_imm(&e.b, group, (uint64_t)per_group),
                              nir_udiv_imm(&e.b, local, (uint64_t)parts));
      in_range = nir_ult(&e.b, out, e.i32(outputs));
      rem = nir_bcsel(&e.b, in_range, out, e.i32(0));
    }
    for (int a = k.n_parallel - 1; a >= 0; a--) {
      if (k.axes[a] == 1) {
        e.iv[a] = e.i32(0);
        continue;
      }
      e.iv[a] = a == 0 ? rem : nir_umod_imm(&e.b, rem, (uint64_t)k.axes[a]);
      if (a > 0) rem = nir_udiv_imm(&e.b, rem, (uint64_t)k.axes[a]);
    }
    e.emit_group_point(local, workgroup_size, parts, in_range);
    r.shader = s;
    return r;
  }
  r.grid = (r.work_items + workgroup_size - 1) / workgroup_size;
  nir_def *gid = nir_iadd(&e.b, nir_imul_imm(&e.b, group, (uint64_t)workgroup_size), local);
  e.guarded(nir_ult(&e.b, gid, e.i32(r.work_items)), [&] {
    nir_def *rem = gid;
    for (int a = k.n_parallel - 1; a >= 0;
         a--) {  // innermost fastest: neighbouring work items store neighbours
      int64_t extent = a == e.lane_axis ? k.axes[a] / e.lanes : k.axes[a];
      if (extent == 1) {
        e.iv[a] = e.i32(0);
      } else {
        e.iv[a] = a == 0 ? rem : nir_umod_imm(&e.b, rem, (uint64_t)extent);
        if (a > 0) rem = nir_udiv_imm(&e.b, rem, (uint64_t)extent);
      }
      if (a == e.lane_axis) e.lane_base = e.iv[a] = nir_imul_imm(&e.b, e.iv[a], (uint64_t)e.lanes);
    }
    e.emit_point();
  });
  r.shader = s;
  return r;
}

}  // namespace capgraph
