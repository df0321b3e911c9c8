// An ir3 (Adreno a6xx / a630) instruction emulator: runs a compute dispatch's own machine code,
// every workgroup and every wave, on host memory reached through the caller's address mapping,
// checks the timing and synchronisation rules the hardware does not enforce (ir3_hazard.h), and
// counts what it executed for a cost model. It is what the fake KGSL runs at CP_EXEC_CS.
//
// Modelled: wave64 and wave128 (SP_CS_CTRL_REG0 THREADSIZE), per-fiber full and half registers
// (merged file: hrN aliases half of rN/2), the shared registers r48-r55 (one per wave), p0.x-w,
// a0.x and a1.x; (rptN) with (r), (nopN), (sat), abs/neg/not source modifiers; branches (br, brao,
// braa, bany, ball, jump, getone) with divergence and reconvergence at the lowest program counter
// (where Mesa places (jp)), predication (predt/predf/prede); bar across the waves of a workgroup;
// cat1 mov/cov/mova/swz/gat/sct/movmsk with the ROUND field; the cat2/cat3 integer, bitwise and
// float ALU (float32 and float16, flush-to-zero, mad.f32 unfused by default); cat4 rcp, rsq,
// log2, exp2, sin, cos, sqrt (computed in double, rounded: not the hardware's approximations);
// ldg/stg (immediate and .a forms, vectors), ldl/stl (shared), ldp/stp (private), getfiberid;
// isam, isaml at level 0 (what ir3 makes of txf) and stib.b/ldib.b on RGBA float32 and float16
// linear 2D images (descriptors in the A6XX_TEX_CONST layout, ir3_image below) with
// out-of-range reads giving 0. Private memory is
// the emulator's own, per fiber (the SP_CS_PVT_MEM_ADDR buffer is not touched); registers,
// shared and private memory start at zero in every workgroup.
// Not modelled (an error naming the instruction when executed): varyings and fragment-only
// instructions, sel.s/sel.f, sad, dp2acc/dp4acc, wmm, atomics, ldc/ldc.k/ldg.k/stc (the capture
// binds no UBOs), other cat5 texture instructions, shfl, brac/brax/call/ret/kill/getlast;
// caches and real timing.
//
// Sources: Mesa 25.0.7 src/freedreno/isa/ir3-cat*.xml (encodings and their documentation);
// src/freedreno/ir3/ir3_compiler_nir.c (what each NIR op becomes: imul's mull.u + madsh.m16,
// bcsel's sel.b32, conversions), ir3_nir_imul.py and src/compiler/nir/nir_opcodes.py (umul_low,
// imadsh_mix16), instr-a3xx.h (round_t: 0 is toward zero), ir3.h ir3_cat2_absneg /
// ir3_output_conv_type (what (neg)/(abs) and DST_CONV mean per opcode), ir3_reconvergence.c and
// ir3_legalize.c mark_xvergence_points (the later destination of a divergent branch is where
// parked fibers wait), ir3-cat0.xml predt (predication); src/freedreno/registers/adreno/a6xx.xml
// SP_MODE_CONTROL CONSTANT_DEMOTION_ENABLE (a half const register reads the 32-bit constant and
// converts it, f2f16 or u2u16 by operand type), A6XX_TEX_CONST (descriptor words), a6xx_format
// FMT6_16_16_16_16_FLOAT (0x62) and FMT6_32_32_32_32_FLOAT (0x82); src/freedreno/vulkan/
// tu_device.cc (float controls: fp32 and fp16 denormals flushed, round to nearest even).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir3_decode.h"
#include "ir3_hazard.h"

namespace capgraph::adreno {

// A span of GPU memory and the host bytes behind it.
struct ir3_region {
  uint64_t gpu = 0, size = 0;
  uint8_t *cpu = nullptr;
};
// The region holding GPU address `gpu`, or one with cpu == nullptr (a fault).
using ir3_region_find = std::function<ir3_region(uint64_t gpu)>;

// A texture (isam) or image (stib.b/ldib.b) descriptor: 16 dwords in the A6XX_TEX_CONST layout,
// as CP_LOAD_STATE6 loads them (SB6_CS_TEX for textures, ST6_UAV for IBOs). Read fields: word 0
// TILE_MODE (0: linear, required), SWIZ_X-W (0-3: a component, 4: zero, 5: one), FMT (0x62 or
// 0x82); word 1 WIDTH, HEIGHT; word 2 PITCH (bytes), TYPE (1: 2D, required); words 4-5 BASE.
struct ir3_image {
  uint32_t words[16] = {};
};
// A descriptor for a linear RGBA image (format 0x62 float16 or 0x82 float32) at `base`.
ir3_image ir3_image_rgba(uint32_t format, uint32_t width, uint32_t height, uint32_t pitch,
                         uint64_t base);
constexpr uint32_t ir3_fmt6_16_16_16_16_float = 0x62;
constexpr uint32_t ir3_fmt6_32_32_32_32_float = 0x82;

// What the fake has at CP_EXEC_CS: the shader and the state the dispatch registers program.
struct ir3_dispatch {
  std::string kernel;                  // for messages
  std::vector<ir3_instr> program;      // ir3_program_decode of the shader
  bool wave128 = false;                // SP_CS_CTRL_REG0 / HLSQ_CS_CNTL_1 THREADSIZE
  uint32_t full_regs = 48;             // FULLREGFOOTPRINT (vec4); accesses past it fault
  uint32_t half_regs = 0;              // HALFREGFOOTPRINT (only without merged registers)
  bool merged_regs = true;             // MERGEDREGS
  uint32_t local[3] = {1, 1, 1};       // HLSQ_CS_NDRANGE_0 local size
  uint32_t groups[3] = {1, 1, 1};      // CP_EXEC_CS
  uint32_t shared_bytes = 0;           // shared memory of a workgroup (SP_CS_CTRL_REG1 SHARED_SIZE)
  uint32_t private_bytes = 0;          // private memory of a fiber (SP_CS_PVT_MEM_PARAM)
  uint32_t consts[256 * 4] = {};       // the constant file, 256 vec4 of 32-bit words
  uint32_t constlen_vec4 = 256;        // vec4 loaded (HLSQ_CS_CNTL CONSTLEN); reads past it fault
  uint32_t workgroup_id_regid = 0xfc;  // HLSQ_CS_CNTL_0 WGIDCONSTID (0xfc: none)
  uint32_t local_id_regid = 0xfc;      // HLSQ_CS_CNTL_0 LOCALIDREGID
  bool constant_demotion = true;       // SP_MODE_CONTROL CONSTANT_DEMOTION_ENABLE
  std::vector<ir3_image> textures;     // t# of isam
  std::vector<ir3_image> ibos;         // the slot of stib.b / ldib.b
  // mad.f32/mad.f16 round the product before the add. No Mesa 25.0.7 source says whether the
  // a6xx fuses them; true rounds once (std::fma).
  bool mad_fused = false;
  bool check_hazards = true;                           // run the hazard checker (ir3_hazard.h)
  bool per_instruction = false;                        // fill ir3_counts.per_instruction
  uint64_t max_wave_instructions = uint64_t(1) << 26;  // per wave: past it, the wave never ends
  // Host threads sharing the workgroups (each runs whole workgroups; `find` is then called from
  // several threads). Results, counts, findings and the error reported do not depend on it.
  unsigned threads = 1;
};

// What one dispatch executed: wave instructions unless said otherwise, over all waves. Objective
// counts for a cost model (../shared/research/adreno_perf.md §6), not a timing model.
struct ir3_counts {
  uint64_t workgroups = 0, waves = 0;
  uint64_t instructions = 0;      // wave instructions issued, nops included
  uint64_t alu = 0, alu_f16 = 0;  // cat1-3 (alu_f16: half-precision cat2/cat3 float ops)
  uint64_t sfu = 0, flow = 0, mem = 0, tex = 0, sync = 0;  // cat4, cat0 but nop, cat6, cat5, cat7
  uint64_t nops = 0;                                       // nop instructions, with their (rpt)
  uint64_t rpt_extra = 0;      // repetitions added by (rptN) on non-nop instructions
  uint64_t nop_slots = 0;      // slots added by (nopN) on cat2/cat3
  uint64_t issue_slots = 0;    // 1 + repeat + (nopN) per instruction
  uint64_t fma_lanes = 0;      // mad.f32/mad.f16 repetitions x active fibers
  uint64_t fma_f16_lanes = 0;  // the mad.f16 part of fma_lanes
  uint64_t global_load_bytes = 0, global_store_bytes = 0;
  uint64_t shared_load_bytes = 0, shared_store_bytes = 0;
  uint64_t private_bytes = 0;           // loaded and stored
  uint64_t texels = 0;                  // isam fetches over active fibers
  uint64_t texture_bytes = 0;           // bytes those fetches read (in range)
  uint64_t image_stores = 0;            // stib.b texels
  uint64_t barriers = 0;                // bar executed by a wave
  uint64_t ss_waits = 0, sy_waits = 0;  // instructions carrying (ss) / (sy)
  uint64_t divergent_branches = 0;      // branches whose active fibers went both ways
  // Wave executions of each instruction (when ir3_dispatch.per_instruction is set): the hot spots
  // of a kernel, and which of its instructions a run never reached.
  std::vector<uint64_t> per_instruction;
  void add(const ir3_counts &o);
};

// Runs every workgroup of the dispatch. false: *err names the kernel, the instruction (index and
// text), and what went wrong (an instruction not modelled, a memory fault with its address, a
// register past the footprint, a constant past constlen, a wave that never reaches `end`).
// Hazards found are appended to *findings (the run itself goes on).
bool ir3_dispatch_run(const ir3_dispatch &d, const ir3_region_find &find, ir3_counts *counts,
                      std::vector<ir3_finding> *findings, std::string *err);

}  // namespace capgraph::adreno
