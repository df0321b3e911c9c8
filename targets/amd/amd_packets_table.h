// The AMD packet table: the one description of every packet capgraph writes or a fake reads, as
// X-macros, so the same rows make the field descriptions the decoder and the text dump walk
// (amd_packets_table.cpp) and the enum-typed field names the encoder and the fake use
// (amd_packets.h: amd::fields::RELEASE_MEM::data_sel ...). Written by us from public headers
// (facts only):
//   PM4: Linux drivers/gpu/drm/amd/amdgpu/nvd.h (gfx10-11) and soc15d.h (gfx9), the
//        PACKET3_* field macros; drivers/gpu/drm/amd/amdkfd/kfd_pm4_headers_ai.h; Mesa
//        src/amd/common/sid.h.
//   SDMA: Linux drivers/gpu/drm/amd/amdgpu/sdma_v6_0_0_pkt_open.h / navi10_sdma_pkt_open.h
//        (SDMA_OP_*, SDMA_SUBOP_*, SDMA_PKT_*_TAG bit fields) and sdma_v6_0.c.
// Field values and their meanings are in amd_packets.h.
#pragma once

// AMD_PACKETS(P): one P(id, engine, name, opcode, sub_op, dwords, variable, source, FIELDS) per
// packet, in `enum class packet` order. name: the vendor's spelling without PACKET3_/SDMA_PKT_;
// opcode: PM4 IT_OPCODE or SDMA op; sub_op: SDMA sub-op (0 for PM4); dwords: total size with the
// header (for a variable packet, its fixed part); variable: trailing values follow the fixed part;
// FIELDS: the X-macro of its fields, each F(name, dword, lo, hi): bits [lo, hi] of body dword
// `dword` (dword 0 is the header); a 64-bit field (hi - lo == 63) spans `dword` (low half) and
// `dword + 1`.
// clang-format off
#define AMD_PACKETS(P)                                                                            \
  /* PM4 type-3 packets, compute queues */                                                        \
  P(NOP, pm4, "NOP", 0x10, 0, 2, true, kNvd, AMD_FIELDS_NOP)                                     \
  P(SET_SH_REG, pm4, "SET_SH_REG", 0x76, 0, 2, true, kNvd, AMD_FIELDS_SET_SH_REG)                \
  P(DISPATCH_DIRECT, pm4, "DISPATCH_DIRECT", 0x15, 0, 5, false, kNvd, AMD_FIELDS_DISPATCH_DIRECT)\
  P(EVENT_WRITE, pm4, "EVENT_WRITE", 0x46, 0, 2, false, kNvd, AMD_FIELDS_EVENT_WRITE)            \
  P(RELEASE_MEM, pm4, "RELEASE_MEM", 0x49, 0, 8, false, kNvd, AMD_FIELDS_RELEASE_MEM)            \
  P(ACQUIRE_MEM, pm4, "ACQUIRE_MEM", 0x58, 0, 8, false,                                           \
    "Linux amdgpu nvd.h (gfx10+ layout, GCR_CNTL in dword 7)", AMD_FIELDS_ACQUIRE_MEM)            \
  P(ACQUIRE_MEM_GFX9, pm4, "ACQUIRE_MEM", 0x58, 0, 7, false,                                      \
    "Linux amdgpu soc15d.h (gfx9 layout, CP_COHER_CNTL)", AMD_FIELDS_ACQUIRE_MEM_GFX9)            \
  P(WAIT_REG_MEM, pm4, "WAIT_REG_MEM", 0x3c, 0, 7, false, kNvd, AMD_FIELDS_WAIT_REG_MEM)         \
  P(INDIRECT_BUFFER, pm4, "INDIRECT_BUFFER", 0x3f, 0, 4, false, kNvd, AMD_FIELDS_INDIRECT_BUFFER)\
  P(WRITE_DATA, pm4, "WRITE_DATA", 0x37, 0, 4, true, kNvd, AMD_FIELDS_WRITE_DATA)                \
  /* SDMA (header: op [7:0], sub_op [15:8], packet bits above) */                                 \
  P(SDMA_NOP, sdma, "NOP", 0, 0, 1, false, kSdma, AMD_FIELDS_SDMA_NOP)                           \
  P(SDMA_COPY_LINEAR, sdma, "COPY_LINEAR", 1, 0, 7, false, kSdma, AMD_FIELDS_SDMA_COPY_LINEAR)   \
  P(SDMA_FENCE, sdma, "FENCE", 5, 0, 4, false, kSdma, AMD_FIELDS_SDMA_FENCE)                     \
  P(SDMA_TRAP, sdma, "TRAP", 6, 0, 2, false, kSdma, AMD_FIELDS_SDMA_TRAP)                        \
  P(SDMA_POLL_REGMEM, sdma, "POLL_REGMEM", 8, 0, 6, false, kSdma, AMD_FIELDS_SDMA_POLL_REGMEM)   \
  /* sub_op 2: SDMA_SUBOP_TIMESTAMP_GET_GLOBAL */                                                 \
  P(SDMA_TIMESTAMP, sdma, "TIMESTAMP", 13, 2, 3, false, kSdma, AMD_FIELDS_SDMA_TIMESTAMP)

// ---- PM4 ----
#define AMD_FIELDS_NOP(F) F(pad, 1, 0, 31)
#define AMD_FIELDS_SET_SH_REG(F) F(reg_offset, 1, 0, 15) /* then the register values */
#define AMD_FIELDS_DISPATCH_DIRECT(F) \
  F(dim_x, 1, 0, 31) F(dim_y, 2, 0, 31) F(dim_z, 3, 0, 31) F(initiator, 4, 0, 31)
#define AMD_FIELDS_EVENT_WRITE(F) F(event_type, 1, 0, 5) F(event_index, 1, 8, 11)
#define AMD_FIELDS_RELEASE_MEM(F)                                                      \
  F(event_type, 1, 0, 5) F(event_index, 1, 8, 11) F(cache_ctl, 1, 12, 22)              \
  F(cache_policy, 1, 25, 26) F(dst_sel, 2, 16, 17) F(int_sel, 2, 24, 26)               \
  F(data_sel, 2, 29, 31) F(addr, 3, 0, 63) F(data, 5, 0, 63) F(int_ctxid, 7, 0, 31)
#define AMD_FIELDS_ACQUIRE_MEM(F)                                                      \
  F(coher_cntl, 1, 0, 31) F(coher_size, 2, 0, 31) F(coher_size_hi, 3, 0, 7)            \
  F(coher_base, 4, 0, 31) F(coher_base_hi, 5, 0, 23) F(poll_interval, 6, 0, 15)        \
  F(gcr_cntl, 7, 0, 18)
#define AMD_FIELDS_ACQUIRE_MEM_GFX9(F)                                                 \
  F(coher_cntl, 1, 0, 30) F(engine_sel, 1, 31, 31) F(coher_size, 2, 0, 31)             \
  F(coher_size_hi, 3, 0, 7) F(coher_base, 4, 0, 31) F(coher_base_hi, 5, 0, 23)         \
  F(poll_interval, 6, 0, 15)
#define AMD_FIELDS_WAIT_REG_MEM(F)                                                     \
  F(function, 1, 0, 2) F(mem_space, 1, 4, 5) F(operation, 1, 6, 7) F(engine_sel, 1, 8, 9) \
  F(addr, 2, 0, 63) F(reference, 4, 0, 31) F(mask, 5, 0, 31) F(poll_interval, 6, 0, 15)
#define AMD_FIELDS_INDIRECT_BUFFER(F)                                                  \
  F(ib_base, 1, 0, 63) F(ib_size, 3, 0, 19) F(chain, 3, 20, 20) F(valid, 3, 23, 23)    \
  F(vmid, 3, 24, 27)
#define AMD_FIELDS_WRITE_DATA(F) /* then the data dwords */                            \
  F(dst_sel, 1, 8, 11) F(wr_confirm, 1, 20, 20) F(engine_sel, 1, 30, 31) F(addr, 2, 0, 63)

// ---- SDMA ----
#define AMD_FIELDS_SDMA_NOP(F) F(count, 0, 16, 29)
#define AMD_FIELDS_SDMA_COPY_LINEAR(F) /* count: bytes - 1 */                          \
  F(count, 1, 0, 29) F(dst_sw, 2, 16, 17) F(src_sw, 2, 24, 25) F(src, 3, 0, 63)        \
  F(dst, 5, 0, 63)
#define AMD_FIELDS_SDMA_FENCE(F) F(mtype, 0, 16, 18) F(addr, 1, 0, 63) F(data, 3, 0, 31)
#define AMD_FIELDS_SDMA_TRAP(F) F(int_context, 1, 0, 27)
#define AMD_FIELDS_SDMA_POLL_REGMEM(F)                                                 \
  F(hdp_flush, 0, 26, 26) F(func, 0, 28, 30) F(mem_poll, 0, 31, 31) F(addr, 1, 0, 63)  \
  F(value, 3, 0, 31) F(mask, 4, 0, 31) F(interval, 5, 0, 15) F(retry_count, 5, 16, 27)
#define AMD_FIELDS_SDMA_TIMESTAMP(F) F(addr, 1, 0, 63)
// clang-format on
