// Kernel IR -> NIR (Mesa's shader IR), built in-process with nir_builder: the Adreno code
// generator's front half. Internal to adreno_*.cpp, which are the only files that include
// Mesa headers (compiled only when CAPGRAPH_ADRENO is on).
//
// The shader is an OpenCL-style compute kernel (MESA_SHADER_KERNEL): its parameters are read with
// load_kernel_input, which ir3 places in the constant file at a fixed allocation
// (IR3_CONST_ALLOC_KERNEL_PARAMS) instead of going through a UBO that ir3 may or may not push;
// adreno_codegen.cpp checks where they landed. Parameter i is the 64-bit GPU address of slot i
// (kernel_slots(): the stored buffer first, then the loaded ones), 8 bytes each, nothing else.
//
// Work items: global id = workgroup_id.x * workgroup size + local_id.x indexes the parallel space,
// innermost axis fastest. Where the innermost axis divides by 4 and the output is a contiguous row
// along it, a work item computes 4 consecutive outputs: loads contiguous along that axis are one
// vec4 load, the results one vec4 store (the other loads are per lane, or once when they do not
// move with the axis). Elsewhere one work item computes one output. Large reductions over few
// outputs (>= 256 points, <= 16384 outputs, float) instead take a workgroup per output: the points
// are dealt round-robin to its work items and combined through shared memory (a halving tree with
// a barrier per step). Other reductions stay serial inside the work item.
//
// Convolutions and matrix products follow the GPU schedule every GPU target shares (gpu_tile.h,
// planned with the target's GpuFacts): a workgroup per output tile, 4 x 4, 8 x 4 or 8 x 8
// accumulators per work item (the facts' micro tile; adreno_tile_choice.h picks it per kernel),
// the reduction staged through shared memory between workgroup barriers.
#pragma once
#include <cstdint>
#include <vector>

#include "adreno_texture.h"
#include "codegen/gpu_tile.h"
#include "schedule/kernel.h"

struct nir_shader;
struct nir_shader_compiler_options;

namespace capgraph {

struct AdrenoNirKernel {
  nir_shader *shader = nullptr;  // ralloc'ed; the caller owns it
  uint32_t param_bytes = 0;      // bytes of kernel parameters (8 per slot)
  int64_t work_items = 0;        // work items: points of the parallel space / lanes
  int lanes = 1;                 // consecutive outputs per work item (4: vec4 loads and stores)
  bool group_reduce = false;     // a reduction split across work items of a workgroup
  int group_parts = 0;           // group_reduce: work items per output (group_size: one per group)
  bool tiled = false;            // gpu_tile's schedule: a workgroup per output tile
  uint32_t shared_bytes = 0;     // shared memory the NIR declares (shader_info.shared_size)
  int64_t grid = 0;              // workgroups to launch
  unsigned group_size = 0;       // work items per workgroup (facts.group_size)
  GpuTilePlan plan;              // the tile plan, when tiled
  // Buffers read as images (texture and sampler i: images[i]): the tiled product's weight
  // operand, when asked for and it qualifies (adreno_image_operand).
  std::vector<adreno::image_facts> images;
};

// The most reduction points the window path unrolls (a 7 x 7 window).
constexpr int64_t kWindowMaxPoints = 49;

// The window path's lane counts for kernel k (empty: it does not apply). It applies to sliding
// windows (depthwise convolutions, pooling: a load indexed by the lane axis and a reduction axis
// in one padded dimension) in programs with float16 storage (float32 captures keep the loop
// path, byte for byte), with at most kWindowMaxPoints reduction points and a contiguous store
// along the innermost parallel axis, which each count divides. A work item computes `lanes`
// neighbouring outputs along that axis with the reduction unrolled, loading each input element
// its outputs share once (a 3 x 3 stride-1 window over 8 outputs: 30 loads instead of 72), its
// bounds checked only where the launch can leave the tensor, once per row and per column, half
// elements by dword or constant offsets instead of a 64-bit address each.
// CAPGRAPH_ADRENO_WINDOW=0 turns it off, =N keeps only N lanes (where N divides the axis; a knob
// for comparisons, recorded in the capture). Which count each kernel gets is the static
// estimate's choice (adreno_codegen.cpp, adreno_window_cost).
std::vector<int> adreno_window_lanes(const Kernel &k, const Program &p);

// A tiled product's b operand (a convolution's or Gemm's weight) read through the texture unit
// (issue 28, tinygrad's QCOM approach: ../shared/research/adreno_perf.md §3) instead of staged
// through shared memory: each work item fetches its tn columns, 4 reduction points per texel,
// with one isaml each per 4 points of the chunk, straight into registers (float16 texels
// arrive widened by the texture unit); shared memory holds the a slab only. A read past the
// image (a padded column, a point past the reduction) gives 0 (ISAMMODE_GL, and the sampler's
// zero border), so no bounds are computed. It qualifies when b is a constant float16 or float32
// weight whose view is rows of the plan's n axis (one axis) holding the chunk axis contiguously
// (step 1, a multiple of 4 points, the only reduction axis of more than one point) from element
// 0: a 1x1 convolution's [cout][cin], a Gemm's transposed [n][k]; the row pitch a multiple of 64
// bytes, at most 16384 texels and rows (adreno_texture.h), and the plan's chunk a multiple of 4.
// The view (its parameter slot, format, size, pitch), or nothing (width 0).
adreno::image_facts adreno_image_operand(const Kernel &k, const Program &p, const GpuTilePlan &pl);

// Builds the NIR of kernel `k` with the compiler's NIR options for a target with `facts`
// (facts.group_size work items per workgroup along x). Throws Error naming the kernel for what this
// lowering does not support (64-bit floats, buffers of 2^31 bytes or more).
// window_lanes > 0: the window path with that many lanes (one of adreno_window_lanes).
// With `image_b`, a tiled kernel whose b operand qualifies (adreno_image_operand) reads it as an
// image; one that does not is refused (the caller asks only where it qualifies).
AdrenoNirKernel adreno_nir_build(const Kernel &k, const Program &p,
                                 const nir_shader_compiler_options *options, const GpuFacts &facts,
                                 int window_lanes = 0, bool image_b = false);

}  // namespace capgraph
