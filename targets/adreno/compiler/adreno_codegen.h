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

#include "codegen/gpu_tile.h"
#include "schedule/kernel.h"

namespace capgraph {

// A chip the code generator compiles for. Source: Mesa src/freedreno/common/freedreno_devices.py
// (a630: gpu_id 630, chip id 0x06030000 with any patch level; the comma three reports
// 0x06030001 through KGSL_PROP_DEVICE_INFO, ../shared/research/adreno_plan.md §2.1).
struct AdrenoTarget {
  std::string name = "adreno-a630";
  uint32_t gpu_id = 630;
  uint64_t chip_id = 0x06030001;
  int workgroup_size = 128;  // work items per workgroup (two waves of 64 on a6xx)
  // What the shared GPU schedule (gpu_tile.h) plans with. Sources, Mesa 25.0.7:
  // src/freedreno/common/freedreno_devices.py, GPUId(630): cs_shared_mem_size = 32 * 1024 (shared
  // memory one workgroup may allocate; SP_CS_CTRL_REG1 SHARED_SIZE counts it in KiB),
  // threadsize_base = 64 (a wave; ir3 may double it to 128), a6xx_gen1 reg_size_vec4 = 96 (the
  // register file of one wave slot in vec4); ir3_compiler.c ir3_get_reg_dependent_max_waves halves
  // it for double-size waves, so a work item of a 128-wide wave has 48 vec4 = 192 32-bit registers
  // (also ir3_ra.h RA_FULL_SIZE: 48 vec4 of full registers).
  unsigned wave_size = 64;
  unsigned shared_bytes = 32 * 1024;
  unsigned registers = 4 * 48;
};
const AdrenoTarget &adreno_a630();

// The target's facts for the shared GPU schedule.
inline GpuFacts adreno_gpu_facts(const AdrenoTarget &t) {
  return {(unsigned)t.workgroup_size, t.wave_size, t.shared_bytes, t.registers};
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
