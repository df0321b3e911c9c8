#include "ptx_exec.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "ptx_alu.h"

namespace capgraph::nv {

void ptx_counts::add(const ptx_counts &o) {
  blocks += o.blocks, warps += o.warps, int_alu += o.int_alu, fp32 += o.fp32, fp64 += o.fp64;
  fp16 += o.fp16, sfu += o.sfu, convert += o.convert, control += o.control;
  global_loads += o.global_loads, global_stores += o.global_stores;
  shared_loads += o.shared_loads, shared_stores += o.shared_stores, other_memory += o.other_memory;
  thread_instructions += o.thread_instructions, fma_lanes += o.fma_lanes,
      flop_lanes += o.flop_lanes;
  global_read_bytes += o.global_read_bytes, global_write_bytes += o.global_write_bytes;
  shared_read_bytes += o.shared_read_bytes, shared_write_bytes += o.shared_write_bytes;
  barriers += o.barriers, divergent_branches += o.divergent_branches;
}

namespace {

constexpr uint32_t kWarp = 32;
constexpr uint64_t kWindow = 1ull << 32;  // the shared and local windows are 4 GiB
constexpr uint32_t kManyReaders = 0xffffffffu;

struct lane_error {
  std::string why;
};

// One warp's lanes: which exist and have not exited, which wait at bar.sync, and where each is.
// While `uniform`, every runnable lane is at `upc` (the per-lane counters are stale).
struct warp {
  uint32_t first_thread = 0;  // linear thread index of lane 0 in the block
  uint32_t live = 0, waiting = 0;
  bool uniform = true;
  uint32_t upc = 0;
  uint32_t pc[kWarp] = {};
};

// Runs blocks; one per host thread, each with its own registers and shared memory.
class block_runner {
 public:
  block_runner(const ptx_launch &l) : l_(l), k_(*l.kernel) {
    threads_ = l.block[0] * l.block[1] * l.block[2];
    warps_.resize((threads_ + kWarp - 1) / kWarp);
    regs_.assign(size_t(warps_.size()) * std::max<uint32_t>(k_.registers, 1) * kWarp, 0);
    shared_.resize(k_.shared_bytes);
    const size_t words = (k_.shared_bytes + 3) / 4;
    wr_epoch_.assign(words, 0), wr_thread_.assign(words, 0);
    rd_epoch_.assign(words, 0), rd_thread_.assign(words, 0);
    local_.resize(size_t(threads_) * k_.local_bytes);
  }

  // Runs block (x, y, z); throws lane_error.
  void run(uint32_t bx, uint32_t by, uint32_t bz, std::atomic<uint64_t> &budget) {
    ctaid_[0] = bx, ctaid_[1] = by, ctaid_[2] = bz;
    ++epoch_;
    // Shared memory starts as garbage on a GPU: a kernel reading what no thread wrote gets NaNs.
    std::fill(shared_.begin(), shared_.end(), uint8_t(0xff));
    std::fill(local_.begin(), local_.end(), uint8_t(0xff));
    for (size_t w = 0; w < warps_.size(); w++) {
      warp &wp = warps_[w];
      wp = warp{};
      wp.first_thread = uint32_t(w * kWarp);
      const uint32_t n = std::min<uint32_t>(kWarp, threads_ - wp.first_thread);
      wp.live = n == 32 ? ~0u : (1u << n) - 1;
    }
    counts.blocks++;
    counts.warps += warps_.size();
    while (true) {
      bool any_live = false;
      for (size_t w = 0; w < warps_.size(); w++) {
        warp_run(w, budget);
        any_live |= warps_[w].live != 0;
      }
      if (!any_live) return;
      // Every warp stopped: all live lanes wait at bar.sync (warp_run only stops there).
      for (warp &wp : warps_) {
        if (wp.uniform) {
          wp.upc++;
        } else {
          for (uint32_t m = wp.waiting; m; m &= m - 1) wp.pc[__builtin_ctz(m)]++;
        }
        wp.waiting = 0;
      }
      counts.barriers++;
      ++epoch_;
    }
  }

  ptx_counts counts;

 private:
  uint64_t *reg(size_t w, uint32_t r) { return &regs_[(w * k_.registers + r) * kWarp]; }

  [[noreturn]] void fault(const ptx_instr &in, uint32_t lane, size_t w, const std::string &why) {
    const uint32_t t = warps_[w].first_thread + lane;
    throw lane_error{"PTX line " + std::to_string(in.line) + " '" + in.text + "' (block " +
                     std::to_string(ctaid_[0]) + "," + std::to_string(ctaid_[1]) + "," +
                     std::to_string(ctaid_[2]) + ", thread " + std::to_string(t) + "): " + why};
  }

  uint64_t sreg(ptx_sreg s, size_t w, uint32_t lane) const {
    const uint32_t t = warps_[w].first_thread + lane;
    const uint32_t bx = l_.block[0], by = l_.block[1];
    switch (s) {
      case ptx_sreg::tid_x: return t % bx;
      case ptx_sreg::tid_y: return t / bx % by;
      case ptx_sreg::tid_z: return t / (bx * by);
      case ptx_sreg::ntid_x: return l_.block[0];
      case ptx_sreg::ntid_y: return l_.block[1];
      case ptx_sreg::ntid_z: return l_.block[2];
      case ptx_sreg::ctaid_x: return ctaid_[0];
      case ptx_sreg::ctaid_y: return ctaid_[1];
      case ptx_sreg::ctaid_z: return ctaid_[2];
      case ptx_sreg::nctaid_x: return l_.grid[0];
      case ptx_sreg::nctaid_y: return l_.grid[1];
      case ptx_sreg::nctaid_z: return l_.grid[2];
      case ptx_sreg::laneid: return lane;
      case ptx_sreg::warpid: return w;
    }
    return 0;
  }

  uint64_t value(const ptx_operand &o, size_t w, uint32_t lane) {
    switch (o.k) {
      case ptx_operand::kind::reg: {
        const uint64_t v = reg(w, o.reg)[lane];
        return o.negate ? !v : v;
      }
      case ptx_operand::kind::imm: return o.imm;
      case ptx_operand::kind::sreg: return sreg(o.sreg, w, lane);
      // A variable's name is its address in its own state space (PTX ISA, "Addresses as Operands").
      case ptx_operand::kind::symbol: return k_.symbols[o.symbol].offset;
      default: return 0;
    }
  }

  void write(const ptx_operand &o, size_t w, uint32_t lane, uint64_t v) {
    if (o.k == ptx_operand::kind::reg) reg(w, o.reg)[lane] = v;
  }

  // Where an access of `bytes` at `addr` in `space` lands on the host, after every check a GPU
  // would fault on. `store` marks shared words for the race check.
  uint8_t *memory(const ptx_instr &in, ptx_space space, uint64_t addr, uint64_t bytes, size_t w,
                  uint32_t lane, bool store) {
    if (addr & (bytes - 1))  // accesses are 1, 2, 4, 8 or 16 bytes
      fault(in, lane, w,
            "address " + hex(addr) + " is not aligned to the " + std::to_string(bytes) +
                "-byte access");
    if (space == ptx_space::generic) {
      // Generic addresses: the shared and local windows, anything else is global (PTX ISA,
      // "Generic Addressing").
      if (addr - l_.shared_window < kWindow)
        space = ptx_space::shared, addr -= l_.shared_window;
      else if (addr - l_.local_window < kWindow)
        space = ptx_space::local, addr -= l_.local_window;
      else
        space = ptx_space::global;
    }
    const uint32_t t = warps_[w].first_thread + lane;
    switch (space) {
      case ptx_space::global: {
        if (!(addr - cache_.gpu < cache_.size && addr + bytes - cache_.gpu <= cache_.size)) {
          cache_ = l_.find(addr);
          if (!cache_.host || addr + bytes - cache_.gpu > cache_.size)
            fault(in, lane, w,
                  "global address " + hex(addr) + " (" + std::to_string(bytes) +
                      " bytes) is not mapped");
        }
        (store ? counts.global_write_bytes : counts.global_read_bytes) += bytes;
        return cache_.host + (addr - cache_.gpu);
      }
      case ptx_space::shared: {
        if (addr >= shared_.size() || addr + bytes > shared_.size() ||
            addr + bytes > l_.shared_bytes)
          fault(in, lane, w,
                "shared address " + hex(addr) + " is outside the block's " +
                    std::to_string(std::min<uint64_t>(shared_.size(), l_.shared_bytes)) + " bytes");
        shared_race_check(in, addr, bytes, t, store, w, lane);
        (store ? counts.shared_write_bytes : counts.shared_read_bytes) += bytes;
        return shared_.data() + addr;
      }
      case ptx_space::local: {
        if (addr + bytes > k_.local_bytes || addr >= k_.local_bytes)
          fault(in, lane, w,
                "local address " + hex(addr) + " is outside the thread's " +
                    std::to_string(k_.local_bytes) + " bytes");
        return local_.data() + size_t(t) * k_.local_bytes + addr;
      }
      case ptx_space::param: {
        if (store) fault(in, lane, w, "a store to kernel parameters");
        if (addr + bytes > l_.param_bytes || addr >= l_.param_bytes)
          fault(in, lane, w,
                "parameter bytes [" + std::to_string(addr) + ", +" + std::to_string(bytes) +
                    ") are outside the " + std::to_string(l_.param_bytes) +
                    " the constant bank holds");
        return const_cast<uint8_t *>(l_.params) + addr;
      }
      default: fault(in, lane, w, "the .const state space is not modelled");
    }
  }

  // A shared word touched by two threads with no bar.sync between, one of them writing: the result
  // depends on the order the GPU happens to run them in.
  void shared_race_check(const ptx_instr &in, uint64_t addr, uint64_t bytes, uint32_t t, bool store,
                         size_t w, uint32_t lane) {
    for (uint64_t word = addr / 4; word < (addr + bytes + 3) / 4; word++) {
      const bool written = wr_epoch_[word] == epoch_ && wr_thread_[word] != t;
      if (written)
        fault(in, lane, w,
              "shared memory race: thread " + std::to_string(wr_thread_[word]) +
                  " wrote shared address " + hex(word * 4) + " with no bar.sync since");
      if (store) {
        if (rd_epoch_[word] == epoch_ && rd_thread_[word] != t)
          fault(in, lane, w,
                "shared memory race: shared address " + hex(word * 4) +
                    " was read by another thread with no bar.sync since");
        wr_epoch_[word] = epoch_, wr_thread_[word] = t;
      } else if (rd_epoch_[word] != epoch_) {
        rd_epoch_[word] = epoch_, rd_thread_[word] = t;
      } else if (rd_thread_[word] != t) {
        rd_thread_[word] = kManyReaders;
      }
    }
  }

  static std::string hex(uint64_t v) {
    char b[24];
    snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
    return b;
  }

  uint64_t address(const ptx_operand &o, size_t w, uint32_t lane) {
    uint64_t a = o.imm;
    if (o.base_is_reg) a += reg(w, o.reg)[lane];
    if (o.base_is_symbol) a += k_.symbols[o.symbol].offset;
    return a;
  }

  // An operand's 32 lanes as a strided array: a register's lanes, an immediate repeated (step 0),
  // or the lanes computed into `tmp` (special registers, negated predicates, symbols).
  struct view {
    const uint64_t *p;
    uint32_t step;
    uint64_t at(uint32_t lane) const { return p[lane * step]; }
  };
  view view_of(const ptx_operand &o, size_t w, uint32_t exec, uint64_t *tmp) {
    if (o.k == ptx_operand::kind::reg && !o.negate) return {reg(w, o.reg), 1};
    if (o.k == ptx_operand::kind::imm) return {&o.imm, 0};
    for (uint32_t m = exec; m; m &= m - 1) tmp[__builtin_ctz(m)] = value(o, w, __builtin_ctz(m));
    return {tmp, 1};
  }
  uint64_t *dst_of(const ptx_operand &o, size_t w) {
    return o.k == ptx_operand::kind::reg ? reg(w, o.reg) : sink_;
  }

  void load_store(const ptx_instr &in, size_t w, uint32_t exec) {
    const uint64_t size = in.type.bits / 8;
    const bool store = in.op == ptx_op::st;
    const ptx_operand &addr = store ? in.src[0] : in.src[0];
    view v[4];
    uint64_t *d[4];
    for (uint32_t e = 0; e < in.vec; e++) {
      if (store)
        v[e] = view_of(in.src[1 + e], w, exec, tmp_[e]);
      else
        d[e] = dst_of(in.dst[e], w);
    }
    const bool sign = in.type.kind == ptx_kind::s && size < 8;
    for (uint32_t m = exec; m; m &= m - 1) {
      const uint32_t lane = __builtin_ctz(m);
      uint8_t *p = memory(in, in.space, address(addr, w, lane), size * in.vec, w, lane, store);
      for (uint32_t e = 0; e < in.vec; e++) {
        if (store) {
          const uint64_t x = v[e].at(lane);
          memcpy(p + e * size, &x, size);
        } else {
          uint64_t x = 0;
          memcpy(&x, p + e * size, size);
          if (sign) x = uint64_t(int64_t(x << (64 - 8 * size)) >> (64 - 8 * size));
          d[e][lane] = x;
        }
      }
    }
    uint64_t &n = in.space == ptx_space::param || in.space == ptx_space::local ? counts.other_memory
                  : in.space == ptx_space::shared
                      ? (store ? counts.shared_stores : counts.shared_loads)
                      : (store ? counts.global_stores : counts.global_loads);
    n++;
  }

  void cvta(const ptx_instr &in, size_t w, uint32_t exec) {
    const uint64_t base = in.space == ptx_space::shared  ? l_.shared_window
                          : in.space == ptx_space::local ? l_.local_window
                                                         : 0;
    if (in.space != ptx_space::shared && in.space != ptx_space::local &&
        in.space != ptx_space::global)
      fault(in, __builtin_ctz(exec), w, "cvta of this state space is not modelled");
    for (uint32_t m = exec; m; m &= m - 1) {
      const uint32_t lane = __builtin_ctz(m);
      const uint64_t a = value(in.src[0], w, lane);
      write(in.dst[0], w, lane, in.to_space ? a - base : a + base);
    }
    counts.convert++;
  }

  void alu(const ptx_instr &in, size_t w, uint32_t exec) {
    const size_t ns = std::min<size_t>(in.src.size(), 4);
    view v[4] = {};
    for (size_t i = 0; i < ns; i++) v[i] = view_of(in.src[i], w, exec, tmp_[i]);
    uint64_t *d = dst_of(in.dst[0], w);
    // The hot instructions of the convolutions, without the general path's per-lane switches.
    const bool f32 = in.type.kind == ptx_kind::f && in.type.bits == 32 && !in.ftz && !in.sat &&
                     !in.approx && (in.round == ptx_round::rn || in.round == ptx_round::none);
    if (f32 && (in.op == ptx_op::fma || in.op == ptx_op::add || in.op == ptx_op::mul)) {
      for (uint32_t m = exec; m; m &= m - 1) {
        const uint32_t lane = __builtin_ctz(m);
        const float a = f32_of(v[0].at(lane)), b = f32_of(v[1].at(lane));
        const float r = in.op == ptx_op::fma   ? std::fma(a, b, f32_of(v[2].at(lane)))
                        : in.op == ptx_op::add ? a + b
                                               : a * b;
        d[lane] = bits_of(r);
      }
      return;
    }
    if (in.op == ptx_op::add && in.type.bits == 64 && in.type.kind != ptx_kind::f) {
      for (uint32_t m = exec; m; m &= m - 1) {
        const uint32_t lane = __builtin_ctz(m);
        d[lane] = v[0].at(lane) + v[1].at(lane);
      }
      return;
    }
    std::string why;
    uint64_t s[4] = {};
    for (uint32_t m = exec; m; m &= m - 1) {
      const uint32_t lane = __builtin_ctz(m);
      for (size_t i = 0; i < ns; i++) s[i] = v[i].at(lane);
      if (!ptx_alu(in, s, &d[lane], &why)) fault(in, lane, w, why);
    }
  }

  static float f32_of(uint64_t b) {
    const uint32_t u = uint32_t(b);
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  static uint64_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }

  void count(const ptx_instr &in, uint32_t exec) {
    const uint32_t lanes = __builtin_popcount(exec);
    counts.thread_instructions += lanes;
    switch (ptx_class_of(in)) {
      case ptx_class::int_alu: counts.int_alu++; break;
      case ptx_class::fp32: counts.fp32++; break;
      case ptx_class::fp64: counts.fp64++; break;
      case ptx_class::fp16: counts.fp16++; break;
      case ptx_class::sfu: counts.sfu++; break;
      case ptx_class::convert: break;  // cvta counts itself
      case ptx_class::control: counts.control++; break;
      case ptx_class::memory: break;  // load_store counts by space
    }
    if (in.op == ptx_op::cvt) counts.convert++;
    const bool fp = in.type.kind == ptx_kind::f;
    if (fp && (in.op == ptx_op::fma || in.op == ptx_op::mad))
      counts.fma_lanes += lanes, counts.flop_lanes += 2 * lanes;
    else if (fp && (in.op == ptx_op::add || in.op == ptx_op::sub || in.op == ptx_op::mul ||
                    in.op == ptx_op::div))
      counts.flop_lanes += lanes;
  }

  // Runs warp `w` until all its lanes exited or wait at bar.sync.
  void warp_run(size_t w, std::atomic<uint64_t> &budget) {
    warp &wp = warps_[w];
    const std::vector<ptx_instr> &code = k_.code;
    uint64_t local_budget = 0;
    while (true) {
      const uint32_t runnable = wp.live & ~wp.waiting;
      if (!runnable) break;
      uint32_t pc, mask;
      if (wp.uniform) {
        pc = wp.upc, mask = runnable;
      } else {
        pc = UINT32_MAX;
        for (uint32_t m = runnable; m; m &= m - 1) pc = std::min(pc, wp.pc[__builtin_ctz(m)]);
        mask = 0;
        for (uint32_t m = runnable; m; m &= m - 1)
          if (wp.pc[__builtin_ctz(m)] == pc) mask |= 1u << __builtin_ctz(m);
      }
      if (pc >= code.size())
        throw lane_error{"warp " + std::to_string(w) +
                         " ran past the kernel's last instruction (no ret)"};
      const ptx_instr &in = code[pc];
      if (++local_budget == 4096) {
        local_budget = 0;
        if (budget.fetch_sub(4096) < 4096)
          fault(in, __builtin_ctz(mask), w,
                "ran more warp instructions than the launch allows (a loop that does not end?)");
      }
      uint32_t exec = mask;
      if (in.guarded) {
        const uint64_t *g = reg(w, in.guard);
        exec = 0;
        for (uint32_t m = mask; m; m &= m - 1) {
          const uint32_t lane = __builtin_ctz(m);
          if ((g[lane] != 0) != in.guard_negate) exec |= 1u << lane;
        }
      }
      count(in, exec);
      uint32_t next_taken = 0, target = pc + 1;
      switch (in.op) {
        case ptx_op::bra: next_taken = exec, target = in.src[0].label; break;
        case ptx_op::bar:
          if (exec != mask)
            fault(in, __builtin_ctz(mask), w, "a predicated bar.sync is not modelled");
          wp.waiting |= exec;
          if (wp.uniform && (wp.live & ~wp.waiting) != 0) {
            // Part of the warp waits: the rest runs on from its own counters.
            materialize(wp);
          }
          continue;  // the barrier advances the waiting lanes when it opens
        case ptx_op::ret:
        case ptx_op::exit: wp.live &= ~exec; break;
        case ptx_op::ld:
        case ptx_op::st: load_store(in, w, exec); break;
        case ptx_op::cvta: cvta(in, w, exec); break;
        case ptx_op::membar:
        case ptx_op::fence: break;
        default: alu(in, w, exec); break;
      }
      // Advance: `mask` lanes go to pc + 1, the taken ones (bra) to the target.
      const uint32_t stay = mask & ~next_taken & wp.live, go = next_taken & wp.live;
      if (wp.uniform && (go == 0 || stay == 0)) {
        wp.upc = go ? target : pc + 1;
        continue;
      }
      if (wp.uniform) {
        materialize(wp);
        counts.divergent_branches++;
      }
      for (uint32_t m = stay; m; m &= m - 1) wp.pc[__builtin_ctz(m)] = pc + 1;
      for (uint32_t m = go; m; m &= m - 1) wp.pc[__builtin_ctz(m)] = target;
      reconverge(wp);
    }
  }

  // Leaves uniform mode: every lane's counter from the warp's.
  static void materialize(warp &wp) {
    if (!wp.uniform) return;
    for (uint32_t l = 0; l < kWarp; l++) wp.pc[l] = wp.upc;
    wp.uniform = false;
  }

  // Back to uniform mode when every live lane, waiting or not, is at one counter and none waits.
  static void reconverge(warp &wp) {
    if (wp.waiting || !wp.live) return;
    const uint32_t first = wp.pc[__builtin_ctz(wp.live)];
    for (uint32_t m = wp.live; m; m &= m - 1)
      if (wp.pc[__builtin_ctz(m)] != first) return;
    wp.uniform = true, wp.upc = first;
  }

  const ptx_launch &l_;
  const ptx_kernel &k_;
  uint32_t threads_ = 0;
  uint32_t ctaid_[3] = {};
  std::vector<warp> warps_;
  std::vector<uint64_t> regs_;
  std::vector<uint8_t> shared_, local_;
  std::vector<uint32_t> wr_epoch_, wr_thread_, rd_epoch_, rd_thread_;
  uint64_t tmp_[4][kWarp] = {}, sink_[kWarp] = {};
  uint32_t epoch_ = 0;
  ptx_region cache_;
};

}  // namespace

bool ptx_launch_run(const ptx_launch &l, ptx_counts *counts, std::string *err) {
  const ptx_kernel &k = *l.kernel;
  const std::string what = "PTX interpreter, " + l.name + ": ";
  const uint64_t threads = uint64_t(l.block[0]) * l.block[1] * l.block[2];
  if (threads == 0 || threads > 1024)
    return *err = what + "a block of " + std::to_string(threads) + " threads", false;
  for (int d = 0; d < 3; d++)
    if (k.reqntid[d] && k.reqntid[d] != l.block[d])
      return *err = what + ".reqntid " + std::to_string(k.reqntid[d]) + " in dimension " +
                    std::to_string(d) + ", the launch's block has " + std::to_string(l.block[d]),
             false;
  if (k.param_bytes > l.param_bytes)
    return *err = what + "its parameters take " + std::to_string(k.param_bytes) +
                  " bytes, the constant bank holds " + std::to_string(l.param_bytes) +
                  " after the parameter offset",
           false;
  if (k.shared_bytes > l.shared_bytes)
    return *err = what + "its shared variables take " + std::to_string(k.shared_bytes) +
                  " bytes, the launch gives each block " + std::to_string(l.shared_bytes),
           false;
  const uint64_t blocks = uint64_t(l.grid[0]) * l.grid[1] * l.grid[2];
  std::atomic<uint64_t> next{0}, budget{l.max_warp_instructions};
  std::atomic<bool> failed{false};
  std::mutex lock;
  std::string first_error;
  ptx_counts total;
  auto worker = [&] {
    block_runner r(l);
    try {
      for (uint64_t b = next++; b < blocks && !failed; b = next++)
        r.run(uint32_t(b % l.grid[0]), uint32_t(b / l.grid[0] % l.grid[1]),
              uint32_t(b / (uint64_t(l.grid[0]) * l.grid[1])), budget);
    } catch (const lane_error &e) {
      std::lock_guard<std::mutex> hold(lock);
      if (!failed.exchange(true)) first_error = what + e.why;
    }
    std::lock_guard<std::mutex> hold(lock);
    total.add(r.counts);
  };
  const int n = int(std::max<uint64_t>(1, std::min<uint64_t>(std::max(l.threads, 1), blocks)));
  std::vector<std::thread> pool;
  for (int i = 1; i < n; i++) pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool) t.join();
  if (counts) *counts = total;
  if (failed) return *err = first_error, false;
  return true;
}

}  // namespace capgraph::nv
