// The a6xx shader core does not interlock: a result read too early, or read without the sync
// bit that waits for it, is silently wrong on the hardware. This checker follows one wave's
// executed instruction stream and names every such read, with the rules Mesa's ir3 legalizes by
// (so Mesa's own kernels pass with zero findings), applied per fiber: a write by some fibers and a
// read by others (two sides of a divergent branch) is no hazard.
//
// Rules (Mesa 25.0.7 src/freedreno/ir3/ir3_legalize.c delay_calc / delay_update /
// legalize_block, ir3_delay.c, ir3.h is_ss_producer / is_sy_producer / is_war_hazard_producer,
// ir3_compiler.c delay_slots for gen 6; summarised in ../shared/research/adreno_perf.md §2):
// - issue slots are counted as legalize counts them: each ALU (cat1-3) and flow (cat0, but jump,
//   br, braa, brao) instruction takes 1 + (rptN) + (nopN) (swz 2, gat and sct 4); others none;
// - an ALU result is ready for an ALU reading the same register size 3 slots after it is
//   written, for any other reader (cat0/4/5/6, or a half read of a full write and the reverse
//   in the merged file) 6 slots after; p0 and a0/a1 writes 6; (rptN) writes element k, and a (r)
//   source reads element k, k slots later; mad/madsh read their third source 2 slots late;
// - a result of an (ss) producer (cat4 SFU, getfiberid, ldl/ldlw/ldlv, shfl, resinfo, local
//   atomics, any write to a shared register r48-r55) needs an (ss) before it is read or its
//   register rewritten; a result of an (sy) producer (cat5 texture, ldg/ldp/ldib/ldc and other
//   non-local loads, global atomics) needs an (sy);
// - after a texture, memory or (ss)-producing instruction, a write to one of its source registers
//   needs an (ss) first (or an (sy) when that instruction was an (sy) producer, not a store);
// - the first instruction after a cat7 barrier or fence other than a nop carries (ss) and (sy),
//   or the nops before it do;
// - parked fibers resume only at an instruction marked (jp) (ir3_legalize.c mark_jp);
// - isam reads through the texture cache, which does not see stores made earlier in the same
//   dispatch (ir3_compiler_nir.c emit_intrinsic_load_image), so an isam of an image a stib.b
//   wrote is a finding.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "ir3_decode.h"

namespace capgraph::adreno {

// Fibers of a wave (up to 128), one bit each.
struct ir3_lanes {
  uint64_t w[2] = {0, 0};
  bool any() const { return (w[0] | w[1]) != 0; }
  bool test(int i) const { return (w[i >> 6] >> (i & 63)) & 1; }
  void set(int i) { w[i >> 6] |= 1ull << (i & 63); }
  void clear(int i) { w[i >> 6] &= ~(1ull << (i & 63)); }
  int count() const { return __builtin_popcountll(w[0]) + __builtin_popcountll(w[1]); }
  int first() const {
    return w[0] ? __builtin_ctzll(w[0]) : w[1] ? 64 + __builtin_ctzll(w[1]) : -1;
  }
  ir3_lanes operator&(const ir3_lanes &o) const { return {{w[0] & o.w[0], w[1] & o.w[1]}}; }
  ir3_lanes operator|(const ir3_lanes &o) const { return {{w[0] | o.w[0], w[1] | o.w[1]}}; }
  ir3_lanes operator~() const { return {{~w[0], ~w[1]}}; }
  bool operator==(const ir3_lanes &o) const { return w[0] == o.w[0] && w[1] == o.w[1]; }
};

enum class ir3_hazard_kind : uint8_t {
  too_close,     // read before the producer's delay slots have passed
  missing_ss,    // read of an (ss) producer's result with no (ss) since it issued
  missing_sy,    // read of an (sy) producer's result with no (sy) since it issued
  war,           // write to a source of an in-flight texture/memory/(ss) instruction, unsynced
  waw,           // write to the destination of an in-flight (ss)/(sy) producer, unsynced
  barrier_sync,  // the instruction after a barrier or fence lacks (ss) or (sy)
  missing_jp,    // parked fibers resume at an instruction without (jp)
  image_stale,   // isam of an image a stib.b wrote earlier in the same dispatch
};
const char *ir3_hazard_name(ir3_hazard_kind k);

// One hazard, found at instruction `instr` (the reader or writer that needed the delay or sync).
struct ir3_finding {
  ir3_hazard_kind kind = ir3_hazard_kind::too_close;
  uint32_t instr = 0;
  uint32_t producer = UINT32_MAX;  // the instruction it conflicts with, when there is one
  uint16_t reg = 0;                // regid (of a half register when `half`); isam: the t# slot
  bool half = false;
  uint32_t missing = 0;  // too_close: issue slots short of the delay
  uint64_t count = 0;    // occurrences in the dispatch (all waves)
  std::string text;      // "too_close at 12 (add.f r0.x, r1.x, r2.x): r1.x ..."
};

// Findings of a dispatch, one per (kind, instruction, register), counted.
class ir3_findings {
 public:
  void add(ir3_hazard_kind kind, uint32_t instr, uint32_t producer, uint16_t reg, bool half,
           uint32_t missing = 0);
  void merge(const ir3_findings &o);
  // The findings with their text (instructions rendered from `program`).
  std::vector<ir3_finding> list(const std::vector<ir3_instr> &program) const;
  bool empty() const { return found_.empty(); }

 private:
  std::map<std::tuple<int, uint32_t, uint32_t>, ir3_finding> found_;
};

// One register element an instruction reads or writes: `slot` offsets the access from the
// instruction's issue (rpt element, mad's late third source).
struct ir3_access {
  uint16_t reg = 0;
  bool half = false;
  uint8_t slot = 0;
};
// Repetitions after the first issue of `i`: (rptN), or the moves of swz/gat/sct past the first.
int ir3_repeats(const ir3_instr &i);

// The registers `i` reads and writes (gpr, shared, a0/a1, p0; consts and immediates are not
// registers), relative operands resolved with `a0` (one fiber's a0.x).
void ir3_accesses(const ir3_instr &i, int32_t a0, std::vector<ir3_access> *reads,
                  std::vector<ir3_access> *writes);

// The timing and sync state of one wave.
class ir3_hazard_tracker {
 public:
  ir3_hazard_tracker();
  // A new wave in this slot: nothing pending, nothing in flight (cheaper than a new tracker).
  void wave_start();
  // Before `i` (at `index`) issues for the fibers `exec`; `a0` resolves relative operands.
  void issue(const ir3_instr &i, uint32_t index, const ir3_lanes &exec, int32_t a0,
             ir3_findings *out);

 private:
  // When a register may be read (legalize's alu_nop / non_alu_nop entries), per reader size:
  // full_[regid] for full readers, half_[regid] for half readers; p0 and a0/a1 in full_.
  struct timing {
    uint64_t ready_alu = 0, ready_other = 0;
    ir3_lanes writers;  // fibers whose writes set the ready times
    uint32_t writer = UINT32_MAX;
  };
  // Pending syncs of one half-register unit (legalize's regmasks, merged file): a full register
  // covers two units, a half one. Valid while its generation equals the wave's.
  struct unit {
    ir3_lanes ss, sy, war_ss, war_any;
    uint32_t ss_gen = 0, sy_gen = 0, war_ss_gen = 0, war_any_ss = 0, war_any_sy = 0;
    uint32_t ss_from = UINT32_MAX, sy_from = UINT32_MAX, war_from = UINT32_MAX;
  };
  void units_of(const ir3_access &a, std::vector<unit *> *out);
  void ready_update(uint16_t reg, bool half, bool reset, uint64_t alu, uint64_t other,
                    const ir3_lanes &exec, uint32_t index);

  timing full_[256], half_[256];
  std::vector<unit> units_;
  uint64_t cycle_ = 0;
  uint32_t ss_gen_ = 1, sy_gen_ = 1;
  bool after_barrier_ = false, barrier_ss_ = false, barrier_sy_ = false;
  uint32_t barrier_at_ = 0;
  std::vector<ir3_access> reads_, writes_;
  std::vector<unit *> touched_;
};

}  // namespace capgraph::adreno
