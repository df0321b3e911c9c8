// Adreno (a6xx) code generation: kernel IR -> NIR (adreno_nir_emit.h) -> Mesa's ir3 compiler ->
// a6xx machine code, with every fact the runtime needs to dispatch a kernel read back from ir3 at
// compile time and checked (see AdrenoKernelFacts). Mesa is linked into the compiler only
// (scripts/mesa_ir3.sh builds it); when capgraph is configured without it (CAPGRAPH_ADRENO=OFF)
// adreno_available() is false and adreno_codegen() throws an Error saying so.
//
// Kernel ABI: parameter i (8 bytes at byte 8*i of the kernel parameters, which start at
// params_offset_vec4 in the constant file) is the GPU address of slot i (kernel_slots()).
// The launch is grid[] workgroups of workgroup_size[] work items; work item
// (workgroup_id.x * workgroup_size[0] + local_id.x) owns `lanes` consecutive output elements, or,
// for group_reduce kernels, workgroup g owns output g and its work items share the reduction.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "adreno_chips.h"
#include "adreno_texture.h"
#include "codegen/gpu_tile.h"
#include "schedule/kernel.h"

namespace capgraph {

// A chip the code generator compiles for: the chip's facts (adreno_chips.h, the runtime's table)
// and what the code generator chooses.
struct AdrenoTarget {
  std::string name;  // "adreno-a630"
  uint32_t gpu_id = 0;
  uint64_t chip_id = 0;
  int workgroup_size = 128;  // work items per workgroup (two waves of 64 on a6xx)
  // What the shared GPU schedule (gpu_tile.h) plans with: the chip's wave and shared memory, and
  // the registers of one work item. ir3_compiler.c ir3_get_reg_dependent_max_waves halves a wave
  // slot's register file for double-size waves, so a work item of a 128-wide wave on the a630
  // has 96 / 2 = 48 vec4 = 192 32-bit registers (also ir3_ra.h RA_FULL_SIZE: 48 vec4 of full
  // registers). Source: Mesa 25.0.7.
  unsigned wave_size = 0;
  unsigned shared_bytes = 0;
  unsigned registers = 0;
};
// The target of a chip of adreno_chips.h.
inline AdrenoTarget adreno_target_of(const adreno::chip &c) {
  AdrenoTarget t;
  t.name = std::string("adreno-") + c.name;
  t.gpu_id = c.gpu_id;
  t.chip_id = c.chip_id;
  t.wave_size = c.wave_size;
  t.shared_bytes = c.shared_bytes;
  t.registers = 4 * (c.reg_size_vec4 / 2);
  return t;
}
const AdrenoTarget &adreno_a630();

// The target's facts for the shared GPU schedule.
inline GpuFacts adreno_gpu_facts(const AdrenoTarget &t) {
  // The NIR emitter widens float16 operands as it stages them (tile_emit).
  GpuFacts f{(unsigned)t.workgroup_size, t.wave_size, t.shared_bytes, t.registers, true};
  f.stage_batch = 4;
  f.double_buffer = true;  // one barrier per chunk (tile_emit)
  f.expr_operands = true;  // folded producers evaluated as staged (tile_emit)
  return f;
}

// Everything the runtime needs to dispatch one compiled kernel, named as in the capture. Register
// ids are ir3 "regid"s: register number * 4 + component (0xfc: not used).
struct AdrenoKernelFacts {
  std::vector<uint8_t> binary;  // instructions, then NIR constant data (none today), padded
  uint32_t instr_dwords = 0;    // 32-bit words of instructions (the disassembled part)
  uint32_t instr_count = 0;     // instructions, repeats expanded
  uint32_t full_regs = 0;     // full-precision vec4 registers used (SP_CS_CNTL_0 FULLREGFOOTPRINT)
  uint32_t half_regs = 0;     // half-precision vec4 registers used (HALFREGFOOTPRINT)
  bool merged_regs = true;    // half registers alias full ones (a6xx)
  uint32_t branch_stack = 0;  // SP_CS_CNTL_0 BRANCHSTACK value (ir3_shader_branchstack_hw)
  uint32_t private_memory_bytes = 0;     // per work item (spills, local arrays)
  bool private_memory_per_wave = false;  // its layout (SP_CS_PVT_MEM_SIZE PERWAVEMEMLAYOUT)
  uint32_t shared_memory_bytes = 0;      // per workgroup
  bool double_threadsize = false;        // waves of 128 work items (THREAD128) instead of 64
  uint32_t max_waves = 0;                // ir3's occupancy estimate
  // The constant file (vec4 units of 4 x 32 bits): constlen vec4 are loaded; the kernel
  // parameters live at [params_offset_vec4, +params_bytes); ir3's immediates at
  // immediates_offset_vec4 (values in `immediates`); driver params, when the kernel needs them,
  // at driver_params_offset_vec4 (UINT32_MAX: none).
  uint32_t constlen_vec4 = 0;
  uint32_t params_offset_vec4 = 0;
  uint32_t params_bytes = 0;
  uint32_t immediates_offset_vec4 = 0;
  std::vector<uint32_t> immediates;
  uint32_t driver_params_offset_vec4 = UINT32_MAX;
  uint32_t workgroup_id_regid = 0xfc;  // SP_CS_CONST_CONFIG_0 WGIDCONSTID (HLSQ_CS_CNTL_0)
  uint32_t local_id_regid = 0xfc;      // SP_CS_CONST_CONFIG_0 LOCALIDREGID
  uint32_t workgroup_size[3] = {1, 1, 1};
  uint32_t grid[3] = {1, 1, 1};  // workgroups
  int64_t work_items = 0;        // work items that compute something; grid * workgroup covers them
  uint32_t lanes = 1;            // consecutive outputs per work item (4: vec4 loads and stores)
  bool group_reduce = false;     // one workgroup per output, reducing through shared memory
  bool tiled = false;  // gpu_tile's plan: a tile of outputs per workgroup (not in the capture)
  // Tiled kernels: the micro tile (accumulators per work item along m and n) of the shape chosen
  // (adreno_tile_choice.h), how many shapes were compiled, and the chosen one's static estimate
  // (microseconds; only the micro tile is in the capture, for inspect). Window-path kernels
  // (adreno_nir_emit.h) have the estimate of their lane count too.
  uint32_t tile_m = 0, tile_n = 0;
  uint32_t reduce_split = 0;  // group_reduce: work items per output (group_size: one output)
  uint32_t tile_candidates = 0;
  double tile_estimate_us = 0;
  // Buffers read through the texture unit (texture and sampler i: images[i]; adreno_texture.h):
  // a tiled product's weight operand where the cost model chose it (adreno_tile_choice.h).
  std::vector<adreno::image_facts> images;
};

struct AdrenoCodegenResult {
  std::vector<AdrenoKernelFacts> unique;  // one per structurally distinct kernel
  std::vector<int> unique_of;             // per Program kernel: its entry in `unique`
};

// Whether this build of capgraph has the Mesa libraries (CAPGRAPH_ADRENO).
bool adreno_available();

// Whether the linked Mesa validates NIR (scripts/mesa_ir3.sh with CAPGRAPH_MESA_VALIDATE=1: the
// sanitizer job's): then every kernel's NIR goes through nir_validate_shader and
// nir_validate_ssa_dominance before ir3, and after every NIR pass, and Mesa's asserts are on.
bool adreno_nir_validated();

// Compiles every kernel of the program for `t`. Throws an Error naming the kernel and the target
// when ir3 fails or a fact check fails (a parameter outside the constant file, a UBO the
// runtime would have to bind, a texture or image, ...).
AdrenoCodegenResult adreno_codegen(const Program &p, const AdrenoTarget &t);

// Mesa's own ir3 disassembler (isaspec) over the instructions of `f`. `errors` counts words it
// could not decode or decoded with errors (unknown encodings, stray bits).
struct AdrenoDisassembly {
  std::string text;
  int errors = 0;
  int instructions = 0;
};
AdrenoDisassembly adreno_disassemble(const AdrenoKernelFacts &f, const AdrenoTarget &t);
AdrenoDisassembly adreno_disassemble_words(const std::vector<uint8_t> &code, const AdrenoTarget &t);

}  // namespace capgraph
