// The a6xx registers and packets capgraph writes, described once as X-macros: each register's
// offset and fields, each packet's opcode and payload fields, with bit ranges as Mesa writes them.
// From them come the register and opcode enums, the enum-typed field names the encoder sets
// (adreno_hcq.cpp), the fake KGSL checks (fake/fake_kgsl.cpp) and the text dump reads
// (adreno_pm4.cpp), and the names for messages. Names keep freedreno's spelling as of Mesa 25.0.7
// (the XML renamed many in 25.2; offsets are the stable key, ../shared/research/adreno_plan.md
// §2.3 lists both).
//
// Sources (Mesa 25.0.7, file:line of each register or packet below):
//   src/freedreno/registers/adreno/a6xx.xml: register offsets (A6XX variants) and fields; the
//     shared bitsets a6xx_sp_xs_ctrl_reg0 (4659), a6xx_sp_xs_config (4684),
//     a6xx_sp_xs_pvt_mem_param (4763), a6xx_sp_xs_pvt_mem_size (4780),
//     a6xx_sp_xs_pvt_mem_hw_stack_offset (4823), a6xx_hlsq_xs_cntl (5521),
//     a6xx_hlsq_control_3/4/5_reg (5578-5594).
//   src/freedreno/registers/adreno/adreno_pm4.xml: opcodes (enum adreno_pm4_type3_packets) and
//     the payload domains. CP_INDIRECT_BUFFER has no domain there: its payload (address, then
//     the size in dwords, 20 bits) is Linux adreno_ringbuffer.c's and Mesa tu_cs.cc's.
#pragma once

// ADRENO_REGS(R): R(name, offset, source line in a6xx.xml, FIELDS). FIELDS(F) lists the
// register's fields as F(name, lo, hi, shr): bits [lo, hi] hold the value >> shr (Mesa's "shr").
// A register without fields (ADRENO_NO_FIELDS) holds a plain number or address half. The members
// of a block written together (SP_CS_OBJ_START_HI, ...) are registers of their own.
// clang-format off
#define ADRENO_REGS(R)                                                                   \
  R(CP_ALWAYS_ON_COUNTER, 0x0980, 2464, ADRENO_NO_FIELDS) /* 64-bit, 19.2 MHz */         \
  R(SP_CS_CTRL_REG0, 0xa9b0, 5115, ADRENO_FIELDS_SP_CS_CTRL_REG0)                        \
  R(SP_CS_CTRL_REG1, 0xa9b1, 5133, ADRENO_FIELDS_SP_CS_CTRL_REG1)                        \
  R(SP_CS_BRANCH_COND, 0xa9b2, 5152, ADRENO_NO_FIELDS)                                   \
  R(SP_CS_OBJ_FIRST_EXEC_OFFSET, 0xa9b3, 5153, ADRENO_NO_FIELDS)                         \
  R(SP_CS_OBJ_START, 0xa9b4, 5154, ADRENO_NO_FIELDS) /* 64-bit shader address */         \
  R(SP_CS_OBJ_START_HI, 0xa9b5, 5154, ADRENO_NO_FIELDS)                                  \
  R(SP_CS_PVT_MEM_PARAM, 0xa9b6, 5155, ADRENO_FIELDS_SP_CS_PVT_MEM_PARAM)                \
  R(SP_CS_PVT_MEM_ADDR, 0xa9b7, 5156, ADRENO_NO_FIELDS) /* 64-bit */                     \
  R(SP_CS_PVT_MEM_ADDR_HI, 0xa9b8, 5156, ADRENO_NO_FIELDS)                               \
  R(SP_CS_PVT_MEM_SIZE, 0xa9b9, 5157, ADRENO_FIELDS_SP_CS_PVT_MEM_SIZE)                  \
  R(SP_CS_TEX_COUNT, 0xa9ba, 5158, ADRENO_NO_FIELDS)                                     \
  R(SP_CS_CONFIG, 0xa9bb, 5159, ADRENO_FIELDS_SP_CS_CONFIG)                              \
  R(SP_CS_INSTRLEN, 0xa9bc, 5160, ADRENO_NO_FIELDS) /* units of 128 bytes */             \
  R(SP_CS_PVT_MEM_HW_STACK_OFFSET, 0xa9bd, 5161, ADRENO_FIELDS_SP_CS_PVT_MEM_HW_STACK_OFFSET) \
  R(SP_CS_TEX_SAMP, 0xa9e2, 5211, ADRENO_NO_FIELDS) /* 64-bit: the samplers (issue 28) */ \
  R(SP_CS_TEX_SAMP_HI, 0xa9e3, 5211, ADRENO_NO_FIELDS)                                   \
  R(SP_CS_TEX_CONST, 0xa9e6, 5213, ADRENO_NO_FIELDS) /* 64-bit: the texture descriptors */ \
  R(SP_CS_TEX_CONST_HI, 0xa9e7, 5213, ADRENO_NO_FIELDS)                                  \
  R(SP_CS_IBO_COUNT, 0xaa00, 5241, ADRENO_NO_FIELDS)                                     \
  R(SP_MODE_CONTROL, 0xab00, 5285, ADRENO_FIELDS_SP_MODE_CONTROL)                        \
  R(SP_PERFCTR_ENABLE, 0xae0f, 5358, ADRENO_FIELDS_SP_PERFCTR_ENABLE)                    \
  R(SP_TP_BORDER_COLOR_BASE_ADDR, 0xb302, 5412, ADRENO_NO_FIELDS) /* 64-bit */           \
  R(SP_TP_BORDER_COLOR_BASE_ADDR_HI, 0xb303, 5412, ADRENO_NO_FIELDS)                     \
  R(SP_TP_MODE_CNTL, 0xb309, 5417, ADRENO_FIELDS_SP_TP_MODE_CNTL)                        \
  R(TPL1_DBG_ECO_CNTL, 0xb600, 5487, ADRENO_NO_FIELDS)                                   \
  R(HLSQ_CONTROL_2_REG, 0xb983, 5604, ADRENO_FIELDS_HLSQ_CONTROL_2_REG)                  \
  R(HLSQ_CONTROL_3_REG, 0xb984, 5611, ADRENO_FIELDS_HLSQ_CONTROL_3_REG)                  \
  R(HLSQ_CONTROL_4_REG, 0xb985, 5612, ADRENO_FIELDS_HLSQ_CONTROL_4_REG)                  \
  R(HLSQ_CONTROL_5_REG, 0xb986, 5613, ADRENO_FIELDS_HLSQ_CONTROL_5_REG)                  \
  R(HLSQ_CS_CNTL, 0xb987, 5614, ADRENO_FIELDS_HLSQ_CS_CNTL)                              \
  R(HLSQ_CS_NDRANGE_0, 0xb990, 5632, ADRENO_FIELDS_HLSQ_CS_NDRANGE_0)                    \
  R(HLSQ_CS_NDRANGE_1, 0xb991, 5639, ADRENO_NO_FIELDS) /* GLOBALSIZE_X */                \
  R(HLSQ_CS_NDRANGE_2, 0xb992, 5642, ADRENO_NO_FIELDS) /* GLOBALOFF_X */                 \
  R(HLSQ_CS_NDRANGE_3, 0xb993, 5645, ADRENO_NO_FIELDS) /* GLOBALSIZE_Y */                \
  R(HLSQ_CS_NDRANGE_4, 0xb994, 5648, ADRENO_NO_FIELDS) /* GLOBALOFF_Y */                 \
  R(HLSQ_CS_NDRANGE_5, 0xb995, 5651, ADRENO_NO_FIELDS) /* GLOBALSIZE_Z */                \
  R(HLSQ_CS_NDRANGE_6, 0xb996, 5654, ADRENO_NO_FIELDS) /* GLOBALOFF_Z */                 \
  R(HLSQ_CS_CNTL_0, 0xb997, 5657, ADRENO_FIELDS_HLSQ_CS_CNTL_0)                          \
  R(HLSQ_CS_CNTL_1, 0xb998, 5667, ADRENO_FIELDS_HLSQ_CS_CNTL_1)                          \
  R(HLSQ_CS_KERNEL_GROUP_X, 0xb999, 5679, ADRENO_NO_FIELDS)                              \
  R(HLSQ_CS_KERNEL_GROUP_Y, 0xb99a, 5680, ADRENO_NO_FIELDS)                              \
  R(HLSQ_CS_KERNEL_GROUP_Z, 0xb99b, 5681, ADRENO_NO_FIELDS)                              \
  R(HLSQ_INVALIDATE_CMD, 0xbb08, 5781, ADRENO_FIELDS_HLSQ_INVALIDATE_CMD)

#define ADRENO_NO_FIELDS(F)
#define ADRENO_FIELDS_SP_CS_CTRL_REG0(F)                                                 \
  F(THREADMODE, 0, 0, 0) F(HALFREGFOOTPRINT, 1, 6, 0) F(FULLREGFOOTPRINT, 7, 12, 0)      \
  F(BRANCHSTACK, 14, 19, 0) F(THREADSIZE, 20, 20, 0) F(EARLYPREAMBLE, 23, 23, 0)         \
  F(MERGEDREGS, 31, 31, 0)
#define ADRENO_FIELDS_SP_CS_CTRL_REG1(F) F(SHARED_SIZE, 0, 4, 0) F(CONSTANTRAMMODE, 5, 6, 0)
#define ADRENO_FIELDS_SP_CS_PVT_MEM_PARAM(F)                                             \
  F(MEMSIZEPERITEM, 0, 7, 9) F(HWSTACKSIZEPERTHREAD, 24, 31, 0)
#define ADRENO_FIELDS_SP_CS_PVT_MEM_SIZE(F)                                              \
  F(TOTALPVTMEMSIZE, 0, 17, 12) F(PERWAVEMEMLAYOUT, 31, 31, 0)
#define ADRENO_FIELDS_SP_CS_CONFIG(F)                                                    \
  F(BINDLESS_TEX, 0, 0, 0) F(BINDLESS_SAMP, 1, 1, 0) F(BINDLESS_IBO, 2, 2, 0)            \
  F(BINDLESS_UBO, 3, 3, 0) F(ENABLED, 8, 8, 0) F(NTEX, 9, 16, 0) F(NSAMP, 17, 21, 0)     \
  F(NIBO, 22, 28, 0)
#define ADRENO_FIELDS_SP_CS_PVT_MEM_HW_STACK_OFFSET(F) F(OFFSET, 0, 18, 11)
#define ADRENO_FIELDS_SP_MODE_CONTROL(F)                                                 \
  F(CONSTANT_DEMOTION_ENABLE, 0, 0, 0) F(ISAMMODE, 1, 2, 0) F(SHARED_CONSTS_ENABLE, 3, 3, 0)
#define ADRENO_FIELDS_SP_PERFCTR_ENABLE(F)                                               \
  F(VS, 0, 0, 0) F(HS, 1, 1, 0) F(DS, 2, 2, 0) F(GS, 3, 3, 0) F(FS, 4, 4, 0) F(CS, 5, 5, 0)
#define ADRENO_FIELDS_SP_TP_MODE_CNTL(F) F(ISAMMODE, 0, 1, 0) F(UNK3, 2, 7, 0)
#define ADRENO_FIELDS_HLSQ_CONTROL_2_REG(F)                                              \
  F(FACEREGID, 0, 7, 0) F(SAMPLEID, 8, 15, 0) F(SAMPLEMASK, 16, 23, 0) F(CENTERRHW, 24, 31, 0)
#define ADRENO_FIELDS_HLSQ_CONTROL_3_REG(F)                                              \
  F(IJ_PERSP_PIXEL, 0, 7, 0) F(IJ_LINEAR_PIXEL, 8, 15, 0) F(IJ_PERSP_CENTROID, 16, 23, 0) \
  F(IJ_LINEAR_CENTROID, 24, 31, 0)
#define ADRENO_FIELDS_HLSQ_CONTROL_4_REG(F)                                              \
  F(IJ_PERSP_SAMPLE, 0, 7, 0) F(IJ_LINEAR_SAMPLE, 8, 15, 0) F(XYCOORDREGID, 16, 23, 0)   \
  F(ZWCOORDREGID, 24, 31, 0)
#define ADRENO_FIELDS_HLSQ_CONTROL_5_REG(F)                                              \
  F(LINELENGTHREGID, 0, 7, 0) F(FOVEATIONQUALITYREGID, 8, 15, 0)
#define ADRENO_FIELDS_HLSQ_CS_CNTL(F) F(CONSTLEN, 0, 7, 2) F(ENABLED, 8, 8, 0)
#define ADRENO_FIELDS_HLSQ_CS_NDRANGE_0(F) /* local sizes are the size minus one */      \
  F(KERNELDIM, 0, 1, 0) F(LOCALSIZEX, 2, 11, 0) F(LOCALSIZEY, 12, 21, 0)                 \
  F(LOCALSIZEZ, 22, 31, 0)
#define ADRENO_FIELDS_HLSQ_CS_CNTL_0(F)                                                  \
  F(WGIDCONSTID, 0, 7, 0) F(WGSIZECONSTID, 8, 15, 0) F(WGOFFSETCONSTID, 16, 23, 0)       \
  F(LOCALIDREGID, 24, 31, 0)
#define ADRENO_FIELDS_HLSQ_CS_CNTL_1(F)                                                  \
  F(LINEARLOCALIDREGID, 0, 7, 0) F(SINGLE_SP_CORE, 8, 8, 0) F(THREADSIZE, 9, 9, 0)       \
  F(THREADSIZE_SCALAR, 10, 10, 0)
#define ADRENO_FIELDS_HLSQ_INVALIDATE_CMD(F)                                             \
  F(VS_STATE, 0, 0, 0) F(HS_STATE, 1, 1, 0) F(DS_STATE, 2, 2, 0) F(GS_STATE, 3, 3, 0)    \
  F(FS_STATE, 4, 4, 0) F(CS_STATE, 5, 5, 0) F(CS_IBO, 6, 6, 0) F(GFX_IBO, 7, 7, 0)       \
  F(GFX_SHARED_CONST, 8, 8, 0) F(CS_BINDLESS, 9, 13, 0) F(GFX_BINDLESS, 14, 18, 0)       \
  F(CS_SHARED_CONST, 19, 19, 0)

// ADRENO_PACKETS(P): P(name, opcode, source, FIELDS) for each type-7 packet (opcode name, which
// for CP_LOAD_STATE6_FRAG is the CP_LOAD_STATE6 domain). FIELDS(F) lists the payload's fields as
// F(name, dword, lo, hi): bits [lo, hi] of payload dword `dword`; a 64-bit field (hi - lo == 63)
// is dwords `dword` (low half) and `dword + 1` (Mesa's reg64, or its _LO/_HI pair).
#define ADRENO_PACKETS(P)                                                                \
  P(CP_NOP, 0x10, "adreno_pm4.xml:258", ADRENO_NO_FIELDS)                                \
  P(CP_WAIT_MEM_WRITES, 0x12, "adreno_pm4.xml:461", ADRENO_NO_FIELDS)                    \
  P(CP_WAIT_FOR_IDLE, 0x26, "adreno_pm4.xml:278", ADRENO_NO_FIELDS)                      \
  P(CP_EXEC_CS, 0x33, "adreno_pm4.xml:1742", ADRENO_FIELDS_CP_EXEC_CS)                   \
  P(CP_LOAD_STATE6_FRAG, 0x34, "adreno_pm4.xml:791", ADRENO_FIELDS_CP_LOAD_STATE6_FRAG)  \
  P(CP_WAIT_REG_MEM, 0x3c, "adreno_pm4.xml:1489", ADRENO_FIELDS_CP_WAIT_REG_MEM)         \
  P(CP_REG_TO_MEM, 0x3e, "adreno_pm4.xml:1228", ADRENO_FIELDS_CP_REG_TO_MEM)             \
  P(CP_INDIRECT_BUFFER, 0x3f, "adreno_ringbuffer.c, tu_cs.cc", ADRENO_FIELDS_CP_INDIRECT_BUFFER) \
  P(CP_EVENT_WRITE, 0x46, "adreno_pm4.xml:1629", ADRENO_FIELDS_CP_EVENT_WRITE)           \
  P(CP_SET_MARKER, 0x65, "adreno_pm4.xml:1786", ADRENO_FIELDS_CP_SET_MARKER)             \
  P(CP_MEMCPY, 0x75, "adreno_pm4.xml:1341", ADRENO_FIELDS_CP_MEMCPY)

#define ADRENO_FIELDS_CP_EXEC_CS(F) /* dword 0 has no fields */                          \
  F(NGROUPS_X, 1, 0, 31) F(NGROUPS_Y, 2, 0, 31) F(NGROUPS_Z, 3, 0, 31)
#define ADRENO_FIELDS_CP_LOAD_STATE6_FRAG(F) /* then the data of an SS6_DIRECT load */   \
  F(DST_OFF, 0, 0, 13) F(STATE_TYPE, 0, 14, 15) F(STATE_SRC, 0, 16, 17)                  \
  F(STATE_BLOCK, 0, 18, 21) F(NUM_UNIT, 0, 22, 31) F(EXT_SRC_ADDR, 1, 0, 63)
#define ADRENO_FIELDS_CP_WAIT_REG_MEM(F)                                                 \
  F(FUNCTION, 0, 0, 2) F(SIGNED_COMPARE, 0, 3, 3) F(POLL, 0, 4, 5) F(WRITE_MEMORY, 0, 8, 8) \
  F(POLL_ADDR, 1, 0, 63) F(REF, 3, 0, 31) F(MASK, 4, 0, 31) F(DELAY_LOOP_CYCLES, 5, 0, 31)
#define ADRENO_FIELDS_CP_REG_TO_MEM(F) /* SIZE_64B is the XML's "64B" */                 \
  F(REG, 0, 0, 17) F(CNT, 0, 18, 29) F(SIZE_64B, 0, 30, 30) F(ACCUMULATE, 0, 31, 31)     \
  F(DEST, 1, 0, 63)
#define ADRENO_FIELDS_CP_INDIRECT_BUFFER(F) F(IB_BASE, 0, 0, 63) F(IB_SIZE, 2, 0, 19)
#define ADRENO_FIELDS_CP_EVENT_WRITE(F) /* dword 3, unnamed in the XML: the value written */ \
  F(EVENT, 0, 0, 7) F(TIMESTAMP, 0, 30, 30) F(IRQ, 0, 31, 31) F(ADDR_0, 1, 0, 63)        \
  F(VALUE, 3, 0, 31)
#define ADRENO_FIELDS_CP_SET_MARKER(F)                                                   \
  F(MODE, 0, 0, 3) F(USES_GMEM, 0, 4, 4) F(MARKER_MODE, 0, 8, 8)
#define ADRENO_FIELDS_CP_MEMCPY(F) F(DWORDS, 0, 0, 31) F(SRC, 1, 0, 63) F(DST, 3, 0, 63)
// clang-format on
