// The hazard checker: see ir3_hazard.h for the rules and their sources.
#include "ir3_hazard.h"

namespace capgraph::adreno {
namespace {

using o = ir3_op;

// Delay slots of a gen-6 (a6xx) core: Mesa ir3_compiler.c (delay_slots), ir3_delay.c
// ir3_src_read_delay (pre-a7xx only mad*/madsh* read their third source late).
constexpr uint64_t alu_to_alu = 3, non_alu = 6, cat3_src2_read = 2;

bool is_alu(const ir3_instr &i) { return i.cat >= 1 && i.cat <= 3; }
bool is_mad(ir3_op op) {
  return op == o::mad_u16 || op == o::mad_s16 || op == o::mad_u24 || op == o::mad_s24 ||
         op == o::mad_f16 || op == o::mad_f32 || op == o::madsh_u16 || op == o::madsh_m16;
}
bool is_local_load(ir3_op op) { return op == o::ldl || op == o::ldlw || op == o::ldlv; }
bool is_load(ir3_op op) {
  return op == o::ldg || op == o::ldg_a || op == o::ldib_b || op == o::ldl || op == o::ldp ||
         op == o::ldlw || op == o::ldlv || op == o::ldc;
}
bool is_store(ir3_op op) {
  return op == o::stg || op == o::stg_a || op == o::stib_b || op == o::stp || op == o::stl ||
         op == o::stlw;
}
bool is_local_atomic(ir3_op op) { return op >= o::atomic_add && op <= o::atomic_xor; }
bool is_global_atomic(ir3_op op) {
  return (op >= o::atomic_g_add && op <= o::atomic_g_xor) ||
         (op >= o::atomic_b_add && op <= o::atomic_b_xor);
}
bool is_tex(const ir3_instr &i) { return i.cat == 5 && i.op != o::tcinv; }
bool is_mem(const ir3_instr &i) { return i.cat == 6 && i.op != o::getfiberid; }
bool is_shared_reg(uint16_t reg, bool half) {
  return half ? reg >= ir3_regid_shared : reg >= ir3_regid_shared && reg < ir3_regid_shared + 32;
}

void push(std::vector<ir3_access> *v, int reg, bool half, int slot) {
  if (reg < 0 || reg > 255) return;
  v->push_back({uint16_t(reg), half, uint8_t(slot)});
}

// The register elements an operand covers: `count` consecutive ones (a vector), or with (rptN)
// and (r) one per repetition, each `slot_step` slots after the previous (legalize counts a
// repeated instruction's (r) source elements in successive cycles).
void operand(const ir3_operand &op, int count, int repeat, int delay, int32_t a0,
             std::vector<ir3_access> *reads, std::vector<ir3_access> *v) {
  int base;
  if (op.kind == ir3_operand::gpr) {
    base = op.num;
  } else if (op.kind == ir3_operand::rel_gpr) {
    base = a0 + op.value;
    push(reads, ir3_regid_a0, false, 0);
  } else {
    if (op.kind == ir3_operand::rel_const) push(reads, ir3_regid_a0, false, 0);
    return;
  }
  if (repeat > 0 && op.r) {
    for (int k = 0; k <= repeat; k++) push(v, base + k, op.half, delay + k);
  } else {
    for (int k = 0; k < count; k++) push(v, base + k, op.half, delay);
  }
}

}  // namespace

int ir3_repeats(const ir3_instr &i) {
  // swz moves 2 values, gat and sct 4, one per cycle (ir3-cat1.xml: they "expand to a series of
  // mov instructions"; Mesa's ir3_lower_parallelcopy.c gives its swz repeat = 1).
  if (i.op == o::swz) return 1;
  if (i.op == o::gat || i.op == o::sct) return 3;
  return i.repeat;
}

const char *ir3_hazard_name(ir3_hazard_kind k) {
  static const char *const n[] = {"too_close", "missing_ss",   "missing_sy", "war",
                                  "waw",       "barrier_sync", "missing_jp", "image_stale"};
  return n[int(k)];
}

void ir3_findings::add(ir3_hazard_kind kind, uint32_t instr, uint32_t producer, uint16_t reg,
                       bool half, uint32_t missing) {
  ir3_finding &f = found_[{int(kind), instr, uint32_t(reg) | uint32_t(half) << 16}];
  if (f.count == 0) {
    f.kind = kind;
    f.instr = instr;
    f.producer = producer;
    f.reg = reg;
    f.half = half;
  }
  if (missing > f.missing) f.missing = missing;
  f.count++;
}

void ir3_findings::merge(const ir3_findings &o) {
  for (const auto &[key, f] : o.found_) {
    ir3_finding &g = found_[key];
    if (g.count == 0) {
      g = f;
    } else {
      g.count += f.count;
      if (f.missing > g.missing) g.missing = f.missing;
    }
  }
}

std::vector<ir3_finding> ir3_findings::list(const std::vector<ir3_instr> &program) const {
  std::vector<ir3_finding> out;
  auto at = [&](uint32_t n) {
    return std::to_string(n) + " (" + (n < program.size() ? ir3_render(program[n], int(n)) : "?") +
           ")";
  };
  for (const auto &[key, f0] : found_) {
    ir3_finding f = f0;
    f.text = std::string(ir3_hazard_name(f.kind)) + " at " + at(f.instr);
    ir3_operand r;
    r.kind = ir3_operand::gpr;
    r.num = f.reg;
    r.half = f.half;
    std::string reg = (f.half ? "h" : "") + std::string(f.reg >= 248   ? "p0."
                                                        : f.reg >= 244 ? "a"
                                                                       : "r");
    if (f.reg >= 248)
      reg += "xyzw"[f.reg & 3];
    else if (f.reg >= 244)
      reg += f.reg == 244 ? "0.x" : "1.x";
    else
      reg += std::to_string(f.reg >> 2) + "." + "xyzw"[f.reg & 3];
    switch (f.kind) {
      case ir3_hazard_kind::too_close:
        f.text += ": reads " + reg + " " + std::to_string(f.missing) + " issue slot(s) too early";
        break;
      case ir3_hazard_kind::missing_ss: f.text += ": reads " + reg + " without (ss)"; break;
      case ir3_hazard_kind::missing_sy: f.text += ": reads " + reg + " without (sy)"; break;
      case ir3_hazard_kind::war:
        f.text += ": overwrites " + reg + ", a source still being read, without (ss)/(sy)";
        break;
      case ir3_hazard_kind::waw:
        f.text += ": overwrites " + reg + ", still to be written by an unsynced instruction";
        break;
      case ir3_hazard_kind::barrier_sync:
        f.text += ": follows a barrier or fence without (ss)(sy)";
        break;
      case ir3_hazard_kind::missing_jp: f.text += ": parked fibers resume here without (jp)"; break;
      case ir3_hazard_kind::image_stale:
        f.text +=
            ": isam of t#" + std::to_string(f.reg) + ", an image stored to earlier in the dispatch";
        break;
    }
    if (f.producer != UINT32_MAX) f.text += "; after " + at(f.producer);
    f.text += " (" + std::to_string(f.count) + "x)";
    out.push_back(f);
  }
  return out;
}

void ir3_accesses(const ir3_instr &i, int32_t a0, std::vector<ir3_access> *reads,
                  std::vector<ir3_access> *writes) {
  reads->clear();
  writes->clear();
  const int rpt = i.repeat;
  auto src = [&](int k, int count, int delay = 0) {
    operand(i.src[k], count, rpt, delay, a0, reads, reads);
  };
  auto dst = [&](int k, int count) {
    if (rpt > 0) {
      ir3_operand d = i.dst[k];
      d.r = true;
      operand(d, 1, rpt, 0, a0, reads, writes);
    } else {
      operand(i.dst[k], count, 0, 0, a0, reads, writes);
    }
  };
  switch (i.cat) {
    case 0:
      if (i.op == o::br || i.op == o::bany || i.op == o::ball || i.op == o::kill)
        push(reads, ir3_regid_p0 + i.comp[0], false, 0);
      if (i.op == o::brao || i.op == o::braa) {
        push(reads, ir3_regid_p0 + i.comp[0], false, 0);
        push(reads, ir3_regid_p0 + i.comp[1], false, 0);
      }
      if (i.op == o::predt || i.op == o::predf) push(reads, ir3_regid_p0, false, 0);
      return;
    case 1:
      if (i.op == o::swz) {
        for (int k = 0; k < 2; k++) {
          push(reads, i.src[k].num, i.src[k].half, k);
          push(writes, i.dst[k].num, i.dst[k].half, k);
        }
      } else if (i.op == o::gat) {
        for (int k = 0; k < 4; k++) push(reads, i.src[k].num, i.src[k].half, k);
        for (int k = 0; k < 4; k++) push(writes, i.dst[0].num + k, i.dst[0].half, k);
      } else if (i.op == o::sct) {
        for (int k = 0; k < 4; k++) push(reads, i.src[0].num + k, i.src[0].half, k);
        for (int k = 0; k < 4; k++) push(writes, i.dst[k].num, i.dst[k].half, k);
      } else if (i.op == o::movmsk) {
        dst(0, i.repeat + 1);
      } else {
        src(0, 1);
        const uint64_t d = (i.word >> 32) & 0xff;
        if (d == ir3_regid_a0 || d == ir3_regid_a1)
          push(writes, int(d), false, 0);
        else
          dst(0, 1);
      }
      return;
    case 2:
      src(0, 1);
      if (i.nsrc > 1) src(1, 1);
      dst(0, 1);
      return;
    case 3:
      src(0, 1);
      src(1, 1);
      src(2, 1, is_mad(i.op) ? int(cat3_src2_read) : 0);
      dst(0, 1);
      return;
    case 4:
      src(0, 1);
      dst(0, 1);
      return;
    case 5: {
      if (i.op == o::tcinv) return;
      const int coords = i.op == o::isam || i.op == o::isaml ? 2 + (i.array || i.tex3d) : 1;
      if (i.nsrc > 0) src(0, coords);
      if (i.nsrc > 1) src(1, 1);
      for (int c = 0; c < 4; c++)
        if (i.wrmask >> c & 1) push(writes, i.dst[0].num + c, i.dst[0].half, 0);
      return;
    }
    case 6:
      switch (i.op) {
        case o::ldg:
          src(0, 2);
          dst(0, i.size);
          return;
        case o::ldg_a:
          src(0, 2);
          src(1, 1);
          dst(0, i.size);
          return;
        case o::stg:
          src(0, 2);
          src(2, i.size);
          return;
        case o::stg_a:
          src(0, 2);
          src(1, 1);
          src(2, i.size);
          return;
        case o::ldl:
        case o::ldp:
        case o::ldlw:
          src(0, 1);
          dst(0, i.size);
          return;
        case o::ldlv: dst(0, i.size); return;
        case o::stl:
        case o::stp:
        case o::stlw:
          src(0, 1);
          src(1, i.size);
          return;
        case o::ldib_b:
          src(1, i.dims);
          dst(0, i.type_size);
          return;
        case o::stib_b:
          src(0, i.type_size);
          src(1, i.dims);
          return;
        case o::getfiberid:
        case o::getspid:
        case o::getwid: dst(0, 1); return;
        case o::ldc:
          if (i.src[0].kind == ir3_operand::gpr) src(0, 1);
          if (i.src[1].kind == ir3_operand::gpr) src(1, 1);
          dst(0, i.type_size);
          return;
        case o::stc: src(0, i.size); return;
        case o::shfl:
          src(0, 1);
          if (i.src[1].kind == ir3_operand::gpr) src(1, 1);
          dst(0, 1);
          return;
        default:
          for (int k = 0; k < i.nsrc; k++)
            if (i.src[k].kind == ir3_operand::gpr) src(k, 1);
          for (int k = 0; k < i.ndst; k++) dst(k, 1);
          return;
      }
    default: return;
  }
}

ir3_hazard_tracker::ir3_hazard_tracker() : units_(512) {}

void ir3_hazard_tracker::wave_start() {
  // Every ready time lies behind the new cycle and every pending sync has an old generation.
  cycle_ += 2 * non_alu + 16;
  ss_gen_++;
  sy_gen_++;
  after_barrier_ = false;
}

void ir3_hazard_tracker::units_of(const ir3_access &a, std::vector<unit *> *out) {
  out->clear();
  auto add = [&](int u) {
    if (u >= 0 && u < int(units_.size())) out->push_back(&units_[u]);
  };
  const int r = a.reg;
  if (a.half) {
    add(r < ir3_regid_shared ? r : 384 + (r - ir3_regid_shared));
  } else if (r < ir3_regid_shared) {
    add(2 * r);
    add(2 * r + 1);
  } else if (r < ir3_regid_shared + 32) {
    add(384 + 2 * (r - ir3_regid_shared));
    add(385 + 2 * (r - ir3_regid_shared));
  } else {
    add(448 + 2 * (r - 224));
    add(449 + 2 * (r - 224));
  }
}

void ir3_hazard_tracker::ready_update(uint16_t reg, bool half, bool reset, uint64_t alu,
                                      uint64_t other, const ir3_lanes &exec, uint32_t index) {
  timing &t = half ? half_[reg] : full_[reg];
  if (reset) {
    t = timing();
    return;
  }
  if (alu > t.ready_alu) t.ready_alu = alu;
  if (other > t.ready_other) t.ready_other = other;
  t.writers = t.writers | exec;
  t.writer = index;
}

void ir3_hazard_tracker::issue(const ir3_instr &i, uint32_t index, const ir3_lanes &exec,
                               int32_t a0, ir3_findings *out) {
  using k = ir3_hazard_kind;
  // The sync bits wait before the instruction reads anything.
  if (i.ss) ss_gen_++;
  if (i.sy) sy_gen_++;
  // After a barrier legalize puts (ss)(sy) on the next instruction; the delay nops it inserts
  // come before that one, and a cat5+ instruction passes its (ss) to a nop of its own.
  if (after_barrier_) {
    barrier_ss_ |= i.ss;
    barrier_sy_ |= i.sy;
    if (i.op != o::nop) {
      if (!(barrier_ss_ && barrier_sy_)) out->add(k::barrier_sync, index, barrier_at_, 0, false);
      after_barrier_ = false;
    }
  }
  if (i.cat == 7) {
    after_barrier_ = true;
    barrier_ss_ = barrier_sy_ = false;
    barrier_at_ = index;
  }
  ir3_accesses(i, a0, &reads_, &writes_);
  const bool alu = is_alu(i);

  for (const ir3_access &r : reads_) {
    units_of(r, &touched_);
    for (unit *u : touched_) {
      if (u->ss_gen == ss_gen_ && (u->ss & exec).any())
        out->add(k::missing_ss, index, u->ss_from, r.reg, r.half);
      if (u->sy_gen == sy_gen_ && (u->sy & exec).any())
        out->add(k::missing_sy, index, u->sy_from, r.reg, r.half);
    }
    if (is_shared_reg(r.reg, r.half)) continue;  // shared registers are synced with (ss)
    const timing &t = r.half ? half_[r.reg] : full_[r.reg];
    const uint64_t ready = alu ? t.ready_alu : t.ready_other;
    const uint64_t at = cycle_ + r.slot;
    if (at < ready && (t.writers & exec).any())
      out->add(k::too_close, index, t.writer, r.reg, r.half, uint32_t(ready - at));
  }
  for (const ir3_access &w : writes_) {
    units_of(w, &touched_);
    for (unit *u : touched_) {
      if ((u->ss_gen == ss_gen_ && (u->ss & exec).any()) ||
          (u->sy_gen == sy_gen_ && (u->sy & exec).any()))
        out->add(k::waw, index, u->ss_gen == ss_gen_ ? u->ss_from : u->sy_from, w.reg, w.half);
      if ((u->war_ss_gen == ss_gen_ && (u->war_ss & exec).any()) ||
          (u->war_any_ss == ss_gen_ && u->war_any_sy == sy_gen_ && (u->war_any & exec).any()))
        out->add(k::war, index, u->war_from, w.reg, w.half);
    }
  }

  // Issue slots as legalize counts them (count_instruction): ALU and flow but jumps/branches.
  const bool counted =
      alu || (i.cat == 0 && i.op != o::jump && i.op != o::br && i.op != o::braa && i.op != o::brao);
  if (counted) cycle_ += 1;
  for (const ir3_access &w : writes_) {
    const uint64_t t = cycle_ + w.slot;
    const int r = w.reg;
    if (w.half) {
      if (is_shared_reg(w.reg, true)) continue;
      const int f = r / 2;
      ready_update(w.reg, true, !alu, t + alu_to_alu, t + non_alu, exec, index);
      ready_update(uint16_t(f), false, !alu, t + non_alu, t + non_alu, exec, index);
    } else if (r >= ir3_regid_a0) {
      ready_update(w.reg, false, !alu, t + non_alu, t + non_alu, exec, index);
    } else if (!is_shared_reg(w.reg, false)) {
      ready_update(w.reg, false, !alu, t + alu_to_alu, t + non_alu, exec, index);
      if (r < 96) {
        ready_update(uint16_t(2 * r), true, !alu, t + non_alu, t + non_alu, exec, index);
        ready_update(uint16_t(2 * r + 1), true, !alu, t + non_alu, t + non_alu, exec, index);
      }
    }
  }
  if (counted) cycle_ += ir3_repeats(i) + i.nop;

  // What later instructions must sync on.
  bool writes_shared = false;
  for (const ir3_access &w : writes_) writes_shared |= is_shared_reg(w.reg, w.half);
  const bool sfu = i.cat == 4 || i.op == o::getfiberid;
  const bool ss_producer = sfu || is_local_load(i.op) || i.op == o::shfl || writes_shared ||
                           i.op == o::resinfo || i.op == o::resinfo_b || is_local_atomic(i.op);
  const bool sy_producer = (is_tex(i) && i.ndst > 0) || (is_load(i.op) && !is_local_load(i.op)) ||
                           is_global_atomic(i.op);
  for (const ir3_access &w : writes_) {
    units_of(w, &touched_);
    for (unit *u : touched_) {
      if (ss_producer) {
        if (u->ss_gen != ss_gen_) u->ss = ir3_lanes();
        u->ss = u->ss | exec;
        u->ss_gen = ss_gen_;
        u->ss_from = index;
      } else if (sy_producer) {
        if (u->sy_gen != sy_gen_) u->sy = ir3_lanes();
        u->sy = u->sy | exec;
        u->sy_gen = sy_gen_;
        u->sy_from = index;
      }
    }
  }
  if (is_tex(i) || is_mem(i) || ss_producer || i.op == o::stc) {
    const bool by_ss = ss_producer || is_store(i.op) || i.op == o::stc;
    for (const ir3_access &r : reads_) {
      units_of(r, &touched_);
      for (unit *u : touched_) {
        if (by_ss) {
          if (u->war_ss_gen != ss_gen_) u->war_ss = ir3_lanes();
          u->war_ss = u->war_ss | exec;
          u->war_ss_gen = ss_gen_;
        } else {
          if (u->war_any_ss != ss_gen_ || u->war_any_sy != sy_gen_) u->war_any = ir3_lanes();
          u->war_any = u->war_any | exec;
          u->war_any_ss = ss_gen_;
          u->war_any_sy = sy_gen_;
        }
        u->war_from = index;
      }
    }
  }
}

}  // namespace capgraph::adreno
