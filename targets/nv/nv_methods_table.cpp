// The NVIDIA method table: the one description of every method capgraph writes or a fake reads.
// Written by us from NVIDIA's public class headers (facts only), NVIDIA/open-gpu-doc at c8607fe:
//   host:    classes/host/clc56f.h (AMPERE_CHANNEL_GPFIFO_A; HOPPER_CHANNEL_GPFIFO_A's clc86f.h
//            keeps these offsets, nv_plan.md §2.5)
//   compute: classes/compute/clc6c0.h and clcbc0.h (same offsets; C7C0/C9C0 too, nv_plan.md §2.5)
//   copy:    classes/dma-copy/clc6b5.h, clc7b5.h, clc8b5.h (same offsets)
#include "nv_methods.h"

namespace capgraph::nv {
namespace {

#define FIELDS(name) constexpr method_field name[]
#define N(a) uint8_t(sizeof(a) / sizeof((a)[0]))

FIELDS(f_set_object_host) = {{"NVCLASS", 0, 15}, {"ENGINE", 16, 20}};
FIELDS(f_word) = {{"VALUE", 0, 31}};
FIELDS(f_sem_addr_lo) = {{"OFFSET", 2, 31}};  // the address's bits 31:2 in place
FIELDS(f_sem_addr_hi) = {{"OFFSET", 0, 7}};
FIELDS(f_sem_execute) = {{"OPERATION", 0, 2},
                         {"RELEASE_WFI", 20, 20},
                         {"PAYLOAD_SIZE", 24, 24},
                         {"RELEASE_TIMESTAMP", 25, 25}};
FIELDS(f_wfi) = {{"SCOPE", 0, 0}};
FIELDS(f_set_object) = {{"CLASS_ID", 0, 15}, {"ENGINE_ID", 16, 20}};
FIELDS(f_set_qmd_version) = {{"CURRENT", 0, 15}, {"OLDEST_SUPPORTED", 16, 31}};
FIELDS(f_upper17) = {{"ADDRESS_UPPER", 0, 16}};
FIELDS(f_pcas_a) = {{"QMD_ADDRESS_SHIFTED8", 0, 31}};
FIELDS(f_pcas2_b) = {{"PCAS_ACTION", 0, 3}};
FIELDS(f_lmem_nt_a) = {{"SIZE_UPPER", 0, 7}};
FIELDS(f_lmem_nt_c) = {{"MAX_SM_COUNT", 0, 8}};
FIELDS(f_invalidate) = {{"INSTRUCTION", 0, 0}, {"GLOBAL_DATA", 4, 4}, {"CONSTANT", 12, 12}};
FIELDS(f_launch_dma) = {{"DATA_TRANSFER_TYPE", 0, 1}, {"FLUSH_ENABLE", 2, 2},
                        {"SEMAPHORE_TYPE", 3, 4},     {"INTERRUPT_TYPE", 5, 6},
                        {"SRC_MEMORY_LAYOUT", 7, 7},  {"DST_MEMORY_LAYOUT", 8, 8},
                        {"MULTI_LINE_ENABLE", 9, 9},  {"FLUSH_TYPE", 25, 25}};

// Rows in `method` order.
constexpr method_desc kMethods[] = {
    {method::SET_OBJECT_HOST, method_family::host, "SET_OBJECT", 0x0000, f_set_object_host,
     N(f_set_object_host), "clc56f.h:67"},
    {method::NON_STALL_INTERRUPT, method_family::host, "NON_STALL_INTERRUPT", 0x0020, f_word,
     N(f_word), "clc56f.h:109"},
    {method::SEM_ADDR_LO, method_family::host, "SEM_ADDR_LO", 0x005c, f_sem_addr_lo,
     N(f_sem_addr_lo), "clc56f.h:205"},
    {method::SEM_ADDR_HI, method_family::host, "SEM_ADDR_HI", 0x0060, f_sem_addr_hi,
     N(f_sem_addr_hi), "clc56f.h:207"},
    {method::SEM_PAYLOAD_LO, method_family::host, "SEM_PAYLOAD_LO", 0x0064, f_word, N(f_word),
     "clc56f.h:209"},
    {method::SEM_PAYLOAD_HI, method_family::host, "SEM_PAYLOAD_HI", 0x0068, f_word, N(f_word),
     "clc56f.h:211"},
    {method::SEM_EXECUTE, method_family::host, "SEM_EXECUTE", 0x006c, f_sem_execute,
     N(f_sem_execute), "clc56f.h:213"},
    {method::WFI, method_family::host, "WFI", 0x0078, f_wfi, N(f_wfi), "clc56f.h:246"},
    {method::SET_OBJECT, method_family::compute, "SET_OBJECT", 0x0000, f_set_object,
     N(f_set_object), "clcbc0.h:34"},
    {method::SET_QMD_VERSION, method_family::compute, "SET_QMD_VERSION", 0x0288, f_set_qmd_version,
     N(f_set_qmd_version), "clcbc0.h:382"},
    {method::SET_SHADER_SHARED_MEMORY_WINDOW_A, method_family::compute,
     "SET_SHADER_SHARED_MEMORY_WINDOW_A", 0x02a0, f_upper17, N(f_upper17), "clcbc0.h:413"},
    {method::SET_SHADER_SHARED_MEMORY_WINDOW_B, method_family::compute,
     "SET_SHADER_SHARED_MEMORY_WINDOW_B", 0x02a4, f_word, N(f_word), "clcbc0.h:416"},
    {method::SEND_PCAS_A, method_family::compute, "SEND_PCAS_A", 0x02b4, f_pcas_a, N(f_pcas_a),
     "clcbc0.h:422"},
    {method::SEND_SIGNALING_PCAS2_B, method_family::compute, "SEND_SIGNALING_PCAS2_B", 0x02c0,
     f_pcas2_b, N(f_pcas2_b), "clcbc0.h:437"},
    {method::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A, method_family::compute,
     "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A", 0x02e4, f_lmem_nt_a, N(f_lmem_nt_a),
     "clcbc0.h:459"},
    {method::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B, method_family::compute,
     "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B", 0x02e8, f_word, N(f_word), "clcbc0.h:462"},
    {method::SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C, method_family::compute,
     "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C", 0x02ec, f_lmem_nt_c, N(f_lmem_nt_c),
     "clcbc0.h:465"},
    // ADDRESS_UPPER is 16:0 in C6C0 (clc6c0.h:461) and 24:0 in CBC0 (clcbc0.h:584): the narrower
    // width, which every address below 2^49 fits.
    {method::SET_SHADER_LOCAL_MEMORY_A, method_family::compute, "SET_SHADER_LOCAL_MEMORY_A", 0x0790,
     f_upper17, N(f_upper17), "clcbc0.h:583"},
    {method::SET_SHADER_LOCAL_MEMORY_B, method_family::compute, "SET_SHADER_LOCAL_MEMORY_B", 0x0794,
     f_word, N(f_word), "clcbc0.h:586"},
    {method::SET_SHADER_LOCAL_MEMORY_WINDOW_A, method_family::compute,
     "SET_SHADER_LOCAL_MEMORY_WINDOW_A", 0x07b0, f_upper17, N(f_upper17), "clcbc0.h:592"},
    {method::SET_SHADER_LOCAL_MEMORY_WINDOW_B, method_family::compute,
     "SET_SHADER_LOCAL_MEMORY_WINDOW_B", 0x07b4, f_word, N(f_word), "clcbc0.h:595"},
    {method::INVALIDATE_SHADER_CACHES_NO_WFI, method_family::compute,
     "INVALIDATE_SHADER_CACHES_NO_WFI", 0x1698, f_invalidate, N(f_invalidate), "clcbc0.h:695"},
    // SET_SEMAPHORE_A.UPPER is 24:0 in C8B5 (clc8b5.h:49) and 16:0 in C6B5 (clc6b5.h:40): the
    // narrower.
    {method::SET_SEMAPHORE_A, method_family::copy, "SET_SEMAPHORE_A", 0x0240, f_upper17,
     N(f_upper17), "clc8b5.h:48"},
    {method::SET_SEMAPHORE_B, method_family::copy, "SET_SEMAPHORE_B", 0x0244, f_word, N(f_word),
     "clc8b5.h:50"},
    {method::SET_SEMAPHORE_PAYLOAD, method_family::copy, "SET_SEMAPHORE_PAYLOAD", 0x0248, f_word,
     N(f_word), "clc8b5.h:52"},
    {method::LAUNCH_DMA, method_family::copy, "LAUNCH_DMA", 0x0300, f_launch_dma, N(f_launch_dma),
     "clc8b5.h:85"},
    // OFFSET_*_UPPER.UPPER is 24:0 in C8B5 (clc8b5.h:172, 176) and 16:0 in C6B5 (clc6b5.h:140): the
    // narrower.
    {method::OFFSET_IN_UPPER, method_family::copy, "OFFSET_IN_UPPER", 0x0400, f_upper17,
     N(f_upper17), "clc8b5.h:171"},
    {method::OFFSET_IN_LOWER, method_family::copy, "OFFSET_IN_LOWER", 0x0404, f_word, N(f_word),
     "clc8b5.h:173"},
    {method::OFFSET_OUT_UPPER, method_family::copy, "OFFSET_OUT_UPPER", 0x0408, f_upper17,
     N(f_upper17), "clc8b5.h:175"},
    {method::OFFSET_OUT_LOWER, method_family::copy, "OFFSET_OUT_LOWER", 0x040c, f_word, N(f_word),
     "clc8b5.h:177"},
    {method::LINE_LENGTH_IN, method_family::copy, "LINE_LENGTH_IN", 0x0418, f_word, N(f_word),
     "clc8b5.h:183"},
    {method::LINE_COUNT, method_family::copy, "LINE_COUNT", 0x041c, f_word, N(f_word),
     "clc8b5.h:185"},
};

static_assert(sizeof(kMethods) / sizeof(kMethods[0]) == (size_t)method::count_,
              "one row per method");

}  // namespace

const method_desc &method_info(method m) { return kMethods[(size_t)m]; }

}  // namespace capgraph::nv
