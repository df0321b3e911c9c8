// Adreno a6xx command packets (PM4 type 4 and type 7) and the registers capgraph writes, described
// once here: the encoder (adreno_hcq.cpp), the fake KGSL (fake_kgsl.cpp) and the golden dump all
// use these. Names keep freedreno's spelling as of Mesa 25.0.7 (the XML renamed many in 25.2;
// offsets are the stable key, adreno_plan.md §2.3 lists both). Sources: Mesa
// src/freedreno/registers/adreno/adreno_pm4.xml (packet headers in adreno_pm4.xml's <doc> and
// pm4_pkt4_hdr / pm4_pkt7_hdr in freedreno/common/freedreno_pm4.h: odd parity over the count and
// over the register / opcode; opcodes; CP_LOAD_STATE6, CP_EVENT_WRITE, CP_WAIT_REG_MEM,
// CP_REG_TO_MEM, CP_MEMCPY, CP_EXEC_CS fields) and src/freedreno/registers/adreno/a6xx.xml
// (register offsets and fields: SP_CS_*, HLSQ_CS_*, HLSQ_INVALIDATE_CMD, SP_MODE_CONTROL,
// SP_TP_MODE_CNTL, CP_ALWAYS_ON_COUNTER).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::adreno {

// The bit that makes the number of ones in v odd.
constexpr uint32_t odd_parity_bit(uint32_t v) { return (__builtin_popcount(v) & 1) ^ 1; }

// Type 4: write `count` (0..127) consecutive registers from `reg` (18 bits).
constexpr uint32_t pkt4(uint32_t reg, uint32_t count) {
  return 0x40000000u | (count & 0x7f) | odd_parity_bit(count) << 7 | (reg & 0x3ffff) << 8 |
         odd_parity_bit(reg) << 27;
}
// Type 7: opcode (7 bits) with `count` (0..16383) payload words.
constexpr uint32_t pkt7(uint32_t opcode, uint32_t count) {
  return 0x70000000u | (count & 0x3fff) | odd_parity_bit(count) << 15 | (opcode & 0x7f) << 16 |
         odd_parity_bit(opcode) << 23;
}

// Opcodes (adreno_pm4.xml enum adreno_pm4_type3_packets).
enum opcode : uint32_t {
  CP_NOP = 0x10,
  CP_WAIT_MEM_WRITES = 0x12,
  CP_WAIT_FOR_IDLE = 0x26,
  CP_EXEC_CS = 0x33,
  CP_LOAD_STATE6_FRAG = 0x34,
  CP_WAIT_REG_MEM = 0x3c,
  CP_REG_TO_MEM = 0x3e,
  CP_INDIRECT_BUFFER = 0x3f,
  CP_EVENT_WRITE = 0x46,
  CP_SET_MARKER = 0x65,
  CP_MEMCPY = 0x75,
};

// Registers (a6xx.xml, A6XX variants).
enum reg : uint32_t {
  CP_ALWAYS_ON_COUNTER = 0x0980,  // 64-bit, 19.2 MHz
  SP_CS_CTRL_REG0 = 0xa9b0,       // footprints, branch stack, THREADSIZE, MERGEDREGS
  SP_CS_CTRL_REG1 = 0xa9b1,       // SHARED_SIZE, CONSTANTRAMMODE
  SP_CS_BRANCH_COND = 0xa9b2,
  SP_CS_OBJ_FIRST_EXEC_OFFSET = 0xa9b3,
  SP_CS_OBJ_START = 0xa9b4,  // 64-bit shader address (lo, hi)
  SP_CS_PVT_MEM_PARAM = 0xa9b6,
  SP_CS_PVT_MEM_ADDR = 0xa9b7,  // 64-bit
  SP_CS_PVT_MEM_SIZE = 0xa9b9,
  SP_CS_TEX_COUNT = 0xa9ba,
  SP_CS_CONFIG = 0xa9bb,    // ENABLED, NTEX, NSAMP, NIBO
  SP_CS_INSTRLEN = 0xa9bc,  // units of 128 bytes
  SP_CS_PVT_MEM_HW_STACK_OFFSET = 0xa9bd,
  SP_CS_IBO_COUNT = 0xaa00,
  SP_MODE_CONTROL = 0xab00,  // CONSTANT_DEMOTION_ENABLE, ISAMMODE
  SP_PERFCTR_ENABLE = 0xae0f,
  SP_TP_MODE_CNTL = 0xb309,  // ISAMMODE
  TPL1_DBG_ECO_CNTL = 0xb600,
  HLSQ_CONTROL_2_REG = 0xb983,      // ..HLSQ_CONTROL_5_REG at 0xb986: no fragment sysvals
  HLSQ_CS_CNTL = 0xb987,            // CONSTLEN (vec4 >> 2), ENABLED
  HLSQ_CS_NDRANGE_0 = 0xb990,       // KERNELDIM, LOCALSIZE - 1; then global size/offset x,y,z
  HLSQ_CS_CNTL_0 = 0xb997,          // WGIDCONSTID, WGSIZECONSTID, WGOFFSETCONSTID, LOCALIDREGID
  HLSQ_CS_CNTL_1 = 0xb998,          // LINEARLOCALIDREGID, THREADSIZE
  HLSQ_CS_KERNEL_GROUP_X = 0xb999,  // .._Z at 0xb99b
  HLSQ_INVALIDATE_CMD = 0xbb08,     // CS_STATE (bit 5), CS_IBO (bit 6)
};

// Field values.
constexpr uint32_t RM6_COMPUTE = 8;          // CP_SET_MARKER mode
constexpr uint32_t CACHE_FLUSH_TS = 4;       // vgt_event_type
constexpr uint32_t CACHE_INVALIDATE = 0x31;  // vgt_event_type (A6XX)
constexpr uint32_t EVENT_WRITE_TIMESTAMP = 1u
                                           << 30;  // CP_EVENT_WRITE_0: write dword 3 to the address
constexpr uint32_t EVENT_WRITE_IRQ = 1u << 31;
constexpr uint32_t WRITE_GE = 5;     // cp_cond_function
constexpr uint32_t POLL_MEMORY = 1;  // poll_memory_type, CP_WAIT_REG_MEM_0 bits 4..5
constexpr uint32_t ST6_SHADER = 0, ST6_CONSTANTS = 1;  // a6xx_state_type
constexpr uint32_t SS6_DIRECT = 0, SS6_INDIRECT = 2;   // a6xx_state_src
constexpr uint32_t SB6_CS_SHADER = 0xd;                // a6xx_state_block
constexpr uint32_t ISAMMODE_GL = 2;
constexpr uint32_t THREAD128 = 1;
constexpr uint32_t regid_none = 0xfc;  // "not used" in a3xx_regid fields

// CP_LOAD_STATE6_0: DST_OFF[0:13] STATE_TYPE[14:15] STATE_SRC[16:17] STATE_BLOCK[18:21]
// NUM_UNIT[22:31].
constexpr uint32_t load_state6_0(uint32_t dst_off, uint32_t type, uint32_t src, uint32_t block,
                                 uint32_t num_unit) {
  return (dst_off & 0x3fff) | (type & 3) << 14 | (src & 3) << 16 | (block & 0xf) << 18 |
         (num_unit & 0x3ff) << 22;
}

// A decoded packet header.
struct packet {
  enum kind_t { type4, type7, bad } kind = bad;
  uint32_t reg_or_opcode = 0;
  uint32_t count = 0;  // payload words
  std::string why;     // for bad: what is wrong (reserved bits, parity)
};
packet packet_decode(uint32_t header);

// Names for messages and dumps ("" when unknown).
const char *opcode_name(uint32_t opcode);
const char *reg_name(uint32_t reg);
// Whether the fake accepts writes to `reg` (every register this file names, and the 64-bit and
// block members between them).
bool reg_known(uint32_t reg);

// A readable dump of a command stream, one packet per line; addresses printed through `address`
// (so a golden file does not depend on where memory landed).
std::string pm4_text(const std::vector<uint32_t> &words,
                     std::string (*address)(uint64_t gpu, void *ctx), void *ctx);

}  // namespace capgraph::adreno
