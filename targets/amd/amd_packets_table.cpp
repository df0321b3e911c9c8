// The AMD packet table: the one description of every packet capgraph writes or a fake reads.
// Written by us from public headers (facts only):
//   PM4: Linux drivers/gpu/drm/amd/amdgpu/nvd.h (gfx10-11) and soc15d.h (gfx9), the
//        PACKET3_* field macros; drivers/gpu/drm/amd/amdkfd/kfd_pm4_headers_ai.h; Mesa
//        src/amd/common/sid.h.
//   SDMA: Linux drivers/gpu/drm/amd/amdgpu/sdma_v6_0_0_pkt_open.h / navi10_sdma_pkt_open.h
//        (SDMA_OP_*, SDMA_SUBOP_*, SDMA_PKT_*_TAG bit fields) and sdma_v6_0.c.
// Field values and their meanings are in amd_packets.h.
#include "amd_packets.h"

namespace capgraph::amd {
namespace {

#define FIELDS(name) constexpr packet_field name[]
#define N(a) uint8_t(sizeof(a) / sizeof((a)[0]))

// ---- PM4 (type-3 packets on compute queues) ----
FIELDS(f_nop) = {{"pad", 1, 0, 31}};
FIELDS(f_set_sh_reg) = {{"reg_offset", 1, 0, 15}};  // then the register values
FIELDS(f_dispatch_direct) = {
    {"dim_x", 1, 0, 31}, {"dim_y", 2, 0, 31}, {"dim_z", 3, 0, 31}, {"initiator", 4, 0, 31}};
FIELDS(f_event_write) = {{"event_type", 1, 0, 5}, {"event_index", 1, 8, 11}};
FIELDS(f_release_mem) = {{"event_type", 1, 0, 5},  {"event_index", 1, 8, 11},
                         {"cache_ctl", 1, 12, 22}, {"cache_policy", 1, 25, 26},
                         {"dst_sel", 2, 16, 17},   {"int_sel", 2, 24, 26},
                         {"data_sel", 2, 29, 31},  {"addr", 3, 0, 63},
                         {"data", 5, 0, 63},       {"int_ctxid", 7, 0, 31}};
FIELDS(f_acquire_mem) = {{"coher_cntl", 1, 0, 31},    {"coher_size", 2, 0, 31},
                         {"coher_size_hi", 3, 0, 7},  {"coher_base", 4, 0, 31},
                         {"coher_base_hi", 5, 0, 23}, {"poll_interval", 6, 0, 15},
                         {"gcr_cntl", 7, 0, 18}};
FIELDS(f_acquire_mem_gfx9) = {{"coher_cntl", 1, 0, 30},   {"engine_sel", 1, 31, 31},
                              {"coher_size", 2, 0, 31},   {"coher_size_hi", 3, 0, 7},
                              {"coher_base", 4, 0, 31},   {"coher_base_hi", 5, 0, 23},
                              {"poll_interval", 6, 0, 15}};
FIELDS(f_wait_reg_mem) = {{"function", 1, 0, 2},  {"mem_space", 1, 4, 5},
                          {"operation", 1, 6, 7}, {"engine_sel", 1, 8, 9},
                          {"addr", 2, 0, 63},     {"reference", 4, 0, 31},
                          {"mask", 5, 0, 31},     {"poll_interval", 6, 0, 15}};
FIELDS(f_indirect_buffer) = {{"ib_base", 1, 0, 63},
                             {"ib_size", 3, 0, 19},
                             {"chain", 3, 20, 20},
                             {"valid", 3, 23, 23},
                             {"vmid", 3, 24, 27}};
FIELDS(f_write_data) = {{"dst_sel", 1, 8, 11},
                        {"wr_confirm", 1, 20, 20},
                        {"engine_sel", 1, 30, 31},
                        {"addr", 2, 0, 63}};  // then the data dwords

// ---- SDMA (header: op [7:0], sub_op [15:8], packet bits above) ----
FIELDS(f_sdma_nop) = {{"count", 0, 16, 29}};
FIELDS(f_sdma_copy_linear) = {{"count", 1, 0, 29},  // bytes - 1
                              {"dst_sw", 2, 16, 17},
                              {"src_sw", 2, 24, 25},
                              {"src", 3, 0, 63},
                              {"dst", 5, 0, 63}};
FIELDS(f_sdma_fence) = {{"mtype", 0, 16, 18}, {"addr", 1, 0, 63}, {"data", 3, 0, 31}};
FIELDS(f_sdma_trap) = {{"int_context", 1, 0, 27}};
FIELDS(f_sdma_poll_regmem) = {{"hdp_flush", 0, 26, 26}, {"func", 0, 28, 30},
                              {"mem_poll", 0, 31, 31},  {"addr", 1, 0, 63},
                              {"value", 3, 0, 31},      {"mask", 4, 0, 31},
                              {"interval", 5, 0, 15},   {"retry_count", 5, 16, 27}};
FIELDS(f_sdma_timestamp) = {{"addr", 1, 0, 63}};

constexpr const char *k_nvd = "Linux amdgpu nvd.h / soc15d.h, Mesa sid.h";
constexpr const char *k_sdma = "Linux amdgpu sdma_v6_0_0_pkt_open.h, sdma_v6_0.c";

// Order must follow enum class packet.
constexpr packet_desc k_table[] = {
    {packet::NOP, engine::pm4, "NOP", 0x10, 0, 2, true, f_nop, N(f_nop), k_nvd},
    {packet::SET_SH_REG, engine::pm4, "SET_SH_REG", 0x76, 0, 2, true, f_set_sh_reg, N(f_set_sh_reg),
     k_nvd},
    {packet::DISPATCH_DIRECT, engine::pm4, "DISPATCH_DIRECT", 0x15, 0, 5, false, f_dispatch_direct,
     N(f_dispatch_direct), k_nvd},
    {packet::EVENT_WRITE, engine::pm4, "EVENT_WRITE", 0x46, 0, 2, false, f_event_write,
     N(f_event_write), k_nvd},
    {packet::RELEASE_MEM, engine::pm4, "RELEASE_MEM", 0x49, 0, 8, false, f_release_mem,
     N(f_release_mem), k_nvd},
    {packet::ACQUIRE_MEM, engine::pm4, "ACQUIRE_MEM", 0x58, 0, 8, false, f_acquire_mem,
     N(f_acquire_mem), "Linux amdgpu nvd.h (gfx10+ layout, GCR_CNTL in dword 7)"},
    {packet::ACQUIRE_MEM_GFX9, engine::pm4, "ACQUIRE_MEM", 0x58, 0, 7, false, f_acquire_mem_gfx9,
     N(f_acquire_mem_gfx9), "Linux amdgpu soc15d.h (gfx9 layout, CP_COHER_CNTL)"},
    {packet::WAIT_REG_MEM, engine::pm4, "WAIT_REG_MEM", 0x3c, 0, 7, false, f_wait_reg_mem,
     N(f_wait_reg_mem), k_nvd},
    {packet::INDIRECT_BUFFER, engine::pm4, "INDIRECT_BUFFER", 0x3f, 0, 4, false, f_indirect_buffer,
     N(f_indirect_buffer), k_nvd},
    {packet::WRITE_DATA, engine::pm4, "WRITE_DATA", 0x37, 0, 4, true, f_write_data, N(f_write_data),
     k_nvd},
    {packet::SDMA_NOP, engine::sdma, "NOP", 0, 0, 1, false, f_sdma_nop, N(f_sdma_nop), k_sdma},
    {packet::SDMA_COPY_LINEAR, engine::sdma, "COPY_LINEAR", 1, 0, 7, false, f_sdma_copy_linear,
     N(f_sdma_copy_linear), k_sdma},
    {packet::SDMA_FENCE, engine::sdma, "FENCE", 5, 0, 4, false, f_sdma_fence, N(f_sdma_fence),
     k_sdma},
    {packet::SDMA_TRAP, engine::sdma, "TRAP", 6, 0, 2, false, f_sdma_trap, N(f_sdma_trap), k_sdma},
    {packet::SDMA_POLL_REGMEM, engine::sdma, "POLL_REGMEM", 8, 0, 6, false, f_sdma_poll_regmem,
     N(f_sdma_poll_regmem), k_sdma},
    {packet::SDMA_TIMESTAMP, engine::sdma, "TIMESTAMP", 13, 2, 3, false, f_sdma_timestamp,
     N(f_sdma_timestamp), k_sdma},  // sub_op 2: SDMA_SUBOP_TIMESTAMP_GET_GLOBAL
};
static_assert(sizeof(k_table) / sizeof(k_table[0]) == size_t(packet::count_));
constexpr bool table_in_order() {
  for (size_t i = 0; i < size_t(packet::count_); ++i)
    if (size_t(k_table[i].id) != i) return false;
  return true;
}
static_assert(table_in_order(), "k_table must list packets in enum order");

}  // namespace

const packet_desc &packet_info(packet id) { return k_table[size_t(id)]; }

}  // namespace capgraph::amd
