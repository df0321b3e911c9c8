// NVIDIA push-buffer methods as data: every method capgraph writes on the host (GPFIFO channel),
// compute and copy classes is one row of nv_methods_table.cpp (name, class, byte offset, fields
// with bit ranges, source line). The push-buffer writer, the GP entry encoder and a future fake NV
// GPU's decoder use that one table.
//
// Classes (nv_plan.md §2.5): host AMPERE_CHANNEL_GPFIFO_A (C56F) and HOPPER_CHANNEL_GPFIFO_A
// (C86F), compute AMPERE_COMPUTE_B (C7C0), ADA_COMPUTE_A (C9C0), HOPPER_COMPUTE_A (CBC0), copy
// AMPERE_DMA_COPY_B (C7B5), HOPPER_DMA_COPY_A (C8B5): the methods below have the same offsets and
// fields in every class of a family, so one row serves the family.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace capgraph::nv {

enum class method_family : uint8_t { host, compute, copy };

// Subchannels capgraph binds (tinygrad, NVK and the mc write-up agree; nv_plan.md §2.4).
constexpr uint32_t kSubchannelHost = 0, kSubchannelCompute = 1, kSubchannelCopy = 4;

struct method_field {
  const char *name;
  uint8_t lo, hi;
};

enum class method : uint8_t {
  // host (C56F / C86F)
  SET_OBJECT_HOST,
  NON_STALL_INTERRUPT,
  SEM_ADDR_LO,
  SEM_ADDR_HI,
  SEM_PAYLOAD_LO,
  SEM_PAYLOAD_HI,
  SEM_EXECUTE,
  WFI,
  // compute (C6C0 .. CBC0)
  SET_OBJECT,
  SET_QMD_VERSION,
  SET_SHADER_SHARED_MEMORY_WINDOW_A,
  SET_SHADER_SHARED_MEMORY_WINDOW_B,
  SEND_PCAS_A,
  SEND_SIGNALING_PCAS2_B,
  SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A,
  SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B,
  SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C,
  SET_SHADER_LOCAL_MEMORY_A,
  SET_SHADER_LOCAL_MEMORY_B,
  SET_SHADER_LOCAL_MEMORY_WINDOW_A,
  SET_SHADER_LOCAL_MEMORY_WINDOW_B,
  INVALIDATE_SHADER_CACHES_NO_WFI,
  // copy (C6B5 .. C8B5)
  SET_SEMAPHORE_A,
  SET_SEMAPHORE_B,
  SET_SEMAPHORE_PAYLOAD,
  LAUNCH_DMA,
  OFFSET_IN_UPPER,
  OFFSET_IN_LOWER,
  OFFSET_OUT_UPPER,
  OFFSET_OUT_LOWER,
  LINE_LENGTH_IN,
  LINE_COUNT,
  count_,
};

struct method_desc {
  method id;
  method_family family;
  const char *name;            // the vendor's spelling without the NVxxxx_ prefix
  uint16_t offset;             // byte offset in the class
  const method_field *fields;  // the data word's fields, low to high
  uint8_t num_fields;
  const char *source;  // header and line
};

const method_desc &method_info(method m);

// Values of the fields the encoders use (vendor spelling). Source: clc56f.h lines 214-233
// (SEM_EXECUTE), clc6c0.h 374-381 (PCAS actions), clc8b5.h 86-125 (LAUNCH_DMA).
enum : uint32_t {
  SEM_EXECUTE_OPERATION_RELEASE = 1,
  SEM_EXECUTE_OPERATION_ACQ_CIRC_GEQ = 3,
  PCAS_ACTION_SCHEDULE = 2,
  PCAS_ACTION_INVALIDATE_COPY_SCHEDULE = 3,
  PCAS_ACTION_PREFETCH_SCHEDULE = 9,
  LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED = 2,
  LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_ONE_WORD_SEMAPHORE = 1,
  LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE = 2,
  LAUNCH_DMA_MEMORY_LAYOUT_PITCH = 1,
};

// A method's data word from its field values (table order). Sets *error (if empty) when a value
// does not fit its field or the count is wrong.
uint32_t method_word(method m, std::initializer_list<uint64_t> values, std::string *error);

// Appends method calls to a push buffer: one incrementing-method header (SEC_OP INC_METHOD) then
// the data words for consecutive methods from `m` on. Source: clc56f.h lines 287-301
// (NVC56F_DMA_METHOD_ADDRESS 11:0 in dwords, METHOD_SUBCHANNEL 15:13, METHOD_COUNT 28:16,
// SEC_OP 31:29, SEC_OP_INC_METHOD = 1).
class push_writer {
 public:
  explicit push_writer(std::vector<uint32_t> *out) : out_(out) {}
  void call(uint32_t subchannel, method m, std::initializer_list<uint32_t> data);
  const std::string &error() const { return error_; }

 private:
  std::vector<uint32_t> *out_;
  std::string error_;
};

// The header of `count` incrementing method calls from byte offset `method_offset`.
uint32_t method_header(uint32_t subchannel, uint32_t method_offset, uint32_t count);

// A GPFIFO entry (two dwords) pointing at `dwords` words of push buffer at GPU address `address`
// (4-byte aligned, below 2^40). Source: clc56f.h lines 265-275 (GP_ENTRY0_GET 31:2,
// GP_ENTRY1_GET_HI 7:0, GP_ENTRY1_LEVEL 9:9, GP_ENTRY1_LENGTH 30:10). Returns an error message
// (empty on success) when the address or length does not fit.
std::string gp_entry(uint64_t address, uint32_t dwords, bool subroutine, uint32_t out[2]);

}  // namespace capgraph::nv
