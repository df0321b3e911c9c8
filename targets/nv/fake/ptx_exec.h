// The PTX interpreter: runs one launch of a parsed kernel (ptx_parse.h) over the fake GPU's
// memory, whole thread blocks of warps of 32 lanes.
//
// Modelled (sources: NVIDIA, "Parallel Thread Execution ISA" 8.5, each instruction's section,
// "Parallel Synchronization and Communication Instructions: bar" and "Memory Consistency Model"):
// - SIMT: a warp runs the lanes at its lowest program counter together; a branch that splits the
//   lanes runs each side in turn and the lanes reconverge where their counters meet again (so
//   divergent code runs as it may on a GPU, and a `bar.sync` reached by part of a block waits
//   for the rest);
// - `bar.sync 0`: every live thread of the block must arrive; threads that exited are not waited
//   for. A block where some threads wait forever is an error naming the kernel;
// - shared memory races: a word written by one thread and read or written by another with no
//   `bar.sync` between is an error naming the instruction (the kernels' tiles depend on it);
// - memory: `.global` (and generic addresses outside the windows) through the fake's mappings,
//   `.shared` per block, `.local` per thread, `.param` read from the launch's constant bank 0;
//   every access must be mapped and naturally aligned (a GPU faults otherwise);
// - rounding: `.rn/.rz/.rm/.rp` and `.rni/.rzi/.rmi/.rpi` exactly, `.ftz` flushes subnormals,
//   float-to-integer conversions saturate and give 0 for NaN, as the manual defines them.
// Not modelled: timing, caches, the SASS ptxas makes (register allocation, scheduling, its own
// instruction choices); the approximate instructions (`.approx` rcp/sqrt/rsqrt/ex2/lg2/sin/cos/
// tanh, `div.full`) are computed in double and rounded, which is within the manual's error
// bounds but not the hardware's bits; atomics, warp shuffles and votes, textures, calls.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "ptx_parse.h"

namespace capgraph::nv {

// A piece of GPU memory the fake has mapped: [gpu, gpu + size) is at `host`.
struct ptx_region {
  uint64_t gpu = 0, size = 0;
  uint8_t *host = nullptr;
};
using ptx_region_find = std::function<ptx_region(uint64_t gpu)>;

// What one launch executed, for `capgraph profile --device fake-nv`. Instruction counts are warp
// instructions (one per warp that issues it, as GPU profilers count); `thread_instructions`
// counts the lanes that executed them.
struct ptx_counts {
  uint64_t blocks = 0, warps = 0;
  uint64_t int_alu = 0, fp32 = 0, fp64 = 0, fp16 = 0, sfu = 0, convert = 0, control = 0;
  uint64_t global_loads = 0, global_stores = 0, shared_loads = 0, shared_stores = 0;
  uint64_t other_memory = 0;  // param and local
  uint64_t thread_instructions = 0, fma_lanes = 0, flop_lanes = 0;
  uint64_t global_read_bytes = 0, global_write_bytes = 0, shared_read_bytes = 0,
           shared_write_bytes = 0;
  uint64_t barriers = 0;            // bar.sync completed by a block
  uint64_t divergent_branches = 0;  // warp branches that split the warp
  uint64_t warp_instructions() const {
    return int_alu + fp32 + fp64 + fp16 + sfu + convert + control + global_loads + global_stores +
           shared_loads + shared_stores + other_memory;
  }
  void add(const ptx_counts &o);
};

struct ptx_launch {
  const ptx_kernel *kernel = nullptr;
  std::string name;  // for messages: "kernel 3 'cg_3_conv3x3'"
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  // The kernel's parameters as its constant bank 0 holds them, from the cubin's param offset on.
  const uint8_t *params = nullptr;
  uint64_t param_bytes = 0;
  uint64_t shared_bytes = 0;  // what the launch gives each block (QMD SHARED_MEMORY_SIZE)
  uint64_t shared_window = 0, local_window = 0;  // generic-address windows (the channel's)
  ptx_region_find find;
  uint64_t max_warp_instructions = uint64_t(1) << 36;  // a kernel that does not end stops here
  int threads = 1;                                     // host threads sharing the blocks
};

// Runs every block. False with `*err` naming the kernel, the instruction (its PTX line and text)
// and the lane when something the GPU would fault on or the interpreter does not model happens.
bool ptx_launch_run(const ptx_launch &l, ptx_counts *counts, std::string *err);

}  // namespace capgraph::nv
