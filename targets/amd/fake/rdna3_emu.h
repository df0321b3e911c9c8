// An RDNA3 (gfx1100) instruction emulator: runs a dispatched kernel's own machine code, wave by
// wave, on host memory reached through the fake GPU's address mapping. It is how the fake AMD GPU
// executes every dispatch, so a wrong register, address computation or mask in the compiled code
// fails a test instead of passing on the host twin.
//
// What it models: wave32 (wave64 is refused: capgraph's gfx11 code is wave32), 106 SGPRs + VCC,
// M0, EXEC, SCC, up to 256 VGPRs; SALU (SOP1/SOP2/SOPC/SOPK), branches and the no-op scheduling
// hints (SOPP), scalar loads (SMEM), VALU (VOP1/VOP2/VOPC/VOP3/VOP3SD/VOPD with abs/neg/clamp/omod
// and literals; of VOP3P the mixed-precision v_fma_mix*), global and flat loads and stores, LDS
// (DS) and s_barrier, and the registers the hardware sets at wave launch from COMPUTE_PGM_RSRC2 and
// the user SGPRs. Not modelled: wave64, DPP, packed math (VOP3P other than v_fma_mix*), scratch,
// buffer (MUBUF) instructions other than the cache invalidations buffer_gl0_inv / buffer_gl1_inv
// (no-ops: no caches), atomics on global memory, timing, caches. An instruction outside
// rdna3_ops.txt is an error naming its encoding, opcode and offset.
//
// Decoding happens once per kernel (rdna3_program_decode), following control flow from the
// entry, into a table of pre-resolved operands; execution walks that table.
//
// Sources: AMD "RDNA3 Instruction Set Architecture Reference Guide" (2023): ch. 3 "Kernel State"
// (SGPR/VGPR initialization), ch. 4 "Program Flow Control", ch. 5 "Scalar ALU", ch. 6 "Vector
// ALU" (6.2 operand modifiers, 6.5 VOPD dual issue), ch. 10 "Flat/Global", ch. 11 "LDS",
// ch. 15 "Microcode Formats" and 16 "Instructions" (per-opcode pseudocode); LLVM AMDGPUUsage
// "Initial Kernel Execution State" and "compute_pgm_rsrc2 for GFX6-GFX12". Encodings are taken
// from llvm-mc-19 -mcpu=gfx1100 (rdna3_ops_gen.py).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace capgraph::amd {

enum class rdna3_op : uint16_t {
#define OP(name, enc, opcode) name,
#include "rdna3_ops.inc"
#undef OP
  count
};
const char *rdna3_op_name(rdna3_op op);

// A span of GPU memory and the host bytes behind it (what the fake's allocations are).
struct rdna3_region {
  uint64_t gpu = 0, size = 0;
  uint8_t *cpu = nullptr;
};
// The region holding GPU address `gpu`, or one with cpu == nullptr.
using rdna3_region_find = std::function<rdna3_region(uint64_t gpu)>;

// One decoded instruction. Operand codes are the ISA's 9-bit source codes: 0-255 scalar
// registers and constants (255: the literal in `lit`), 256 + n: VGPR n.
struct rdna3_inst {
  rdna3_op op = rdna3_op::count;
  rdna3_op op_y = rdna3_op::count;  // VOPD: the second (Y) operation
  uint8_t enc = 0;                  // rdna3_enc
  uint8_t dwords = 1;
  uint8_t abs = 0, neg = 0, opsel = 0, omod = 0;
  uint8_t opsel_hi = 0;  // VOP3P: which sources are f16 (v_fma_mix*)
  bool clamp = false;
  uint16_t src[3] = {0, 0, 0}, dst = 0, sdst = 0;  // VOP3SD / VOPC: the SGPR written
  uint16_t src_y[2] = {0, 0}, dst_y = 0;           // VOPD Y
  uint32_t lit = 0;
  int32_t imm = 0;                 // SOPP/SOPK simm16, SMEM/FLAT/DS offset
  uint32_t offset = 0;             // bytes from the kernel's entry
  int32_t next = -1, target = -1;  // instruction indices: fall-through and branch target
};

struct rdna3_program {
  std::vector<rdna3_inst> insts;  // insts[0] is the entry
  uint32_t vgprs = 0;             // VGPRs granted by COMPUTE_PGM_RSRC1
};

// Per-kernel execution counts (wave instructions unless said otherwise). Objective counts of what
// the emulator executed, for profiles; not a timing model.
struct rdna3_counts {
  uint64_t waves = 0, salu = 0, smem = 0, branches = 0, waits = 0;
  uint64_t valu = 0, valu_fma = 0;  // VOPD counts as two
  uint64_t fma_lanes = 0;           // fused multiply-adds over active lanes
  uint64_t vmem_load_bytes = 0, vmem_store_bytes = 0, lds_bytes = 0;  // over active lanes
  uint64_t smem_bytes = 0;
  void add(const rdna3_counts &o);
};

struct rdna3_dispatch {
  std::string kernel;  // for messages
  uint64_t code = 0;   // GPU address of the entry instruction
  uint32_t rsrc1 = 0, rsrc2 = 0;
  uint32_t user_data[32] = {};  // COMPUTE_USER_DATA_0.. as the packet stream set them
  uint32_t groups = 0;          // workgroups along X
  uint32_t workgroup_size = 0;  // work-items per workgroup (X)
  bool wave32 = true;
  uint32_t threads = 1;  // host threads sharing the workgroups
};

// Decodes the kernel at `d.code` (reached through `find`). false: *err says what and where.
bool rdna3_program_decode(const rdna3_dispatch &d, const rdna3_region_find &find,
                          rdna3_program *out, std::string *err);

// Runs every workgroup of the dispatch. false: *err names the kernel, instruction and reason.
bool rdna3_dispatch_run(const rdna3_dispatch &d, const rdna3_program &p,
                        const rdna3_region_find &find, rdna3_counts *counts, std::string *err);

}  // namespace capgraph::amd
