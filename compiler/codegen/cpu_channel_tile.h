// The CPU register tile for channel-blocked products (schedule/layout.h): convolutions, depthwise
// convolutions and matrix products whose output's innermost axis is a block of L channels (8, or
// 16 on AVX-512 targets).
//
// One work item computes R output positions x VB channel blocks, each an L-lane vector
// accumulator held in a register across all reduction loops (or two blocks per 2L-lane
// accumulator: `pair`). Per reduction point it loads VB weight vectors (contiguous: the weights
// are packed in loop order) and, per position, one input value broadcast to all lanes (or, for
// depthwise, the input's own 8-channel vector), then does R x VB / pair fused multiply-adds.
// Strides and dilations cost nothing (positions are scalar loads); the window's border checks are
// made once per window offset, and a tile entirely inside the input runs a loop without any check.
#pragma once
#include <cstdint>

#include "codegen/cpu_target.h"
#include "schedule/kernel.h"

namespace llvm {
class Value;
}

namespace capgraph {

struct KernelEmitter;  // codegen/kernel_emit.h (LLVM): the plan is usable without LLVM headers

struct ChannelTilePlan {
  bool ok = false;
  int x = -1, w = -1;     // loads: X varies with the position, W is contiguous along the block
  bool x_vector = false;  // X is contiguous along the block too (depthwise): vector, not broadcast
  // X is read through this expression, or -1: an affine chain (cast, add, sub, mul, div by
  // constants) of a uint8 / int8 load of a graph input (schedule/fuse.h
  // program_fuse_input_casts). Evaluated per position it would cost several scalar operations
  // per multiply-add (the comma-like stem conv ran 3-4x slower so); instead each work range
  // first tabulates the chain for every byte value (x_table_axis: the one reduction axis its
  // constants move with, e.g. per-channel means, or -1), and a point loads the byte and
  // broadcasts its table entry: two loads where a float X takes one, bit for bit the same value.
  int x_expr = -1, x_load_expr = -1, x_table_axis = -1;
  int v = -1;             // the channel-block axis (innermost parallel, extent L)
  int64_t L = 8;          // channels per block: 8, or the target's wider block (16 on AVX-512)
  int regs = 16;          // <L x float> registers a tile may hold (the target's, per block)
  int chains = 8;         // independent FMA chains that hide the FMA latency
  int pos = -1;           // the position axis, R per tile
  int pos2 = -1;          // flat tiles: the next position axis, walked together with pos as one
  int o = -1;             // the axis W depends on and X does not, VB per tile (or -1)
  int64_t R = 1, VB = 1;  // VB counts L-channel blocks (a multiple of `pair`)
  // Blocks per accumulator: 2 where one register holds two L-channel blocks (8-channel blocks on
  // 16-lane AVX-512): the accumulator holds blocks o and o + 1 of one position, its weight vector
  // is their two L-lane weight rows joined, and the input is broadcast to all 2L lanes, so an
  // 8-blocked output (1000 channels, mobilenet's 24/40/80) runs at the full vector width.
  int64_t pair = 1;
  int64_t P = 1;  // positions (ext(pos), times ext(pos2) for flat tiles)
  int64_t W = 1;  // ext(pos): a flat position q is (q / W, q % W) along (pos2, pos)
  // How positions make tiles:
  //  - split: single positions below lo and from hi on, R at a time in [lo, hi); the window
  //    checks run for every tile (the fallback when static tiles do not apply);
  //  - fixed: tile t holds positions [t R, t R + R) (the last one fewer); tiles [t_lo, t_hi) lie
  //    inside [lo, hi) and run without checks, each other tile is emitted on its own with its
  //    positions known, so each window offset is known inside or outside for each position.
  //    Flat tiles (pos2 >= 0) are all emitted so.
  enum class Mode { split, fixed } mode = Mode::split;
  int64_t lo = 0, hi = 1;
  int64_t tiles = 1, t_lo = 0, t_hi = 1;
  // Multiply-adds the fixed tiles write out (tile copies x positions x accumulator columns x
  // unrolled lanes): what the kernel's code size, and so its compile time, grows with.
  int64_t fixed_fmas = 0;
  // The fixed tiles keep the innermost reduction lanes (8, unrolled elsewhere) a loop: written
  // out they would pass kFixedFmasMax (cpu_channel_tile.cpp).
  bool lanes_looped = false;
  // The window reduction's loops carry llvm.loop.unroll.disable (on 8-lane vectors: AVX2).
  bool keep_window_loops = false;
  // Those of the fixed tiles do, where the input is broadcast (not depthwise), on 16-lane
  // vectors (AVX-512) too (cpu_channel_tile.cpp TileEmitter::reduction_emit).
  bool keep_fixed_window_loops = false;
};

// The plan for kernel k on target t (its vector registers size the tile), or one with ok ==
// false. CAPGRAPH_NO_TILE=1 disables it.
ChannelTilePlan channel_tile_plan(const Kernel &k, const Program &p, const CpuTarget &t);
// Work items of a kernel laid out by the plan (positions and o counted in tiles).
int64_t channel_tile_work_size(const Kernel &k, const ChannelTilePlan &cp);
// The window offsets the tile's reduction walks (the product of the reduction axes that move X's
// checked dims: 9 for a 3x3 conv, 1 for a 1x1 conv or a product).
int64_t channel_tile_window(const Kernel &k, const ChannelTilePlan &cp);
// The trips of the tile's other reduction loops (input channel blocks), without the innermost
// lanes the emitter writes out: 16 for a 3x3 conv over 128 channels in 8-channel blocks.
int64_t channel_tile_rest_trips(const Kernel &k, const ChannelTilePlan &cp);
// The byte table of an X chain (see x_expr), emitted before the work loop; nullptr without one.
llvm::Value *channel_tile_table(KernelEmitter &e, const ChannelTilePlan &cp);
// Emits one work item `w` (the caller loops over its range); `table` from channel_tile_table.
void channel_tile_emit(KernelEmitter &e, const ChannelTilePlan &cp, llvm::Value *w,
                       llvm::Value *table);

}  // namespace capgraph
