// AMD command packets as data: every PM4 (compute queue) and SDMA (copy queue) packet capgraph
// writes or a fake reads is described once in amd_packets_table.h (name, opcode, dword fields
// with bit ranges, sources). The encoder, the decoder, the text dump and the fake GPU all use that
// one table, so a packet's layout cannot disagree between writer and reader; callers name the
// fields they set or read (amd::fields::WAIT_REG_MEM::addr), as NVIDIA's QMD and method tables do.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "amd_packets_table.h"

namespace capgraph::amd {

enum class engine : uint8_t { pm4, sdma };

// One field: bits [lo, hi] of body dword `dword` (dword 0 is the header). A 64-bit field
// (hi - lo == 63) spans dwords `dword` (low half) and `dword + 1` (high half).
struct packet_field {
  const char *name;
  uint8_t dword;
  uint8_t lo, hi;
};

// Packet ids: the index of each packet in the table.
#define AMD_PACKET_ID(id, ...) id,
enum class packet : uint8_t { AMD_PACKETS(AMD_PACKET_ID) count_ };
#undef AMD_PACKET_ID

// Each packet's fields, one scoped enum per packet in table order (fields::RELEASE_MEM::data_sel
// is field 6 of RELEASE_MEM), and the packet a field enum belongs to (packet_of).
namespace fields {
#define AMD_FIELD_ID(name, ...) name,
#define AMD_PACKET_FIELD_ENUM(id, eng, name, opcode, sub_op, dwords, variable, source, FIELDS) \
  enum class id : uint8_t { FIELDS(AMD_FIELD_ID) };                                            \
  constexpr packet packet_of(id) { return packet::id; }
AMD_PACKETS(AMD_PACKET_FIELD_ENUM)
#undef AMD_PACKET_FIELD_ENUM
#undef AMD_FIELD_ID
}  // namespace fields

// One named field and its value, for packet_writer::emit.
template <class Field>
struct field_value {
  Field field;
  uint64_t value;
};

struct packet_desc {
  packet id;
  engine eng;
  const char *name;  // the vendor's spelling, without PACKET3_/SDMA_PKT_ prefixes
  uint8_t opcode;    // PM4 IT_OPCODE, or SDMA op
  uint8_t sub_op;    // SDMA sub-op (0 for PM4)
  uint16_t dwords;   // total size with the header; for a variable packet the fixed part
  bool variable;     // trailing values follow the fixed part (SET_SH_REG, NOP, WRITE_DATA)
  const packet_field *fields;
  uint8_t num_fields;
  const char *source;  // where the layout comes from
};

const packet_desc &packet_info(packet id);

// Encoder: appends one packet, its fields named: emit({{f::addr, a}, {f::data, v}}) with f one
// packet's field enum (fields::SDMA_FENCE). A field not named is 0. `tail` is appended after the
// fixed part of a variable packet. A value that does not fit its field, or a field named twice,
// sets *error (the first one) and is masked; callers check the error once after recording a whole
// stream.
class packet_writer {
 public:
  explicit packet_writer(std::vector<uint32_t> *out) : out_(out) {}
#define AMD_PACKET_EMIT(id, ...)                                                                   \
  void emit(std::initializer_list<field_value<fields::id>> values, const uint32_t *tail = nullptr, \
            size_t tail_len = 0) {                                                                 \
    emit_fields(packet::id, values, tail, tail_len);                                               \
  }
  AMD_PACKETS(AMD_PACKET_EMIT)
#undef AMD_PACKET_EMIT
  // All fields by position (table order; 64-bit fields take one value): for code that walks the
  // table itself (the round-trip test).
  void emit_values(packet id, const uint64_t *values, size_t num_values, const uint32_t *tail,
                   size_t tail_len);
  const std::string &error() const { return error_; }
  std::vector<uint32_t> &words() { return *out_; }

 private:
  static constexpr size_t kMaxFields = 16;
  template <class Field>
  void emit_fields(packet id, std::initializer_list<field_value<Field>> values,
                   const uint32_t *tail, size_t tail_len) {
    uint8_t f[kMaxFields];
    uint64_t v[kMaxFields];
    size_t n = 0;
    for (const field_value<Field> &x : values) {
      if (n == kMaxFields) break;
      f[n] = uint8_t(x.field);
      v[n++] = x.value;
    }
    emit_named(id, f, v, values.size(), tail, tail_len);
  }
  // `count` fields named (the first kMaxFields of them in f and v).
  void emit_named(packet id, const uint8_t *f, const uint64_t *v, size_t count,
                  const uint32_t *tail, size_t tail_len);
  std::vector<uint32_t> *out_;
  std::string error_;
};

// One decoded packet.
struct decoded {
  const packet_desc *desc = nullptr;
  uint64_t values[16] = {};  // the fields in table order (a packet has at most 16)
  // A field by name; only for a field of the decoded packet (0 for another packet's).
  template <class Field>
  uint64_t get(Field f) const {
    return desc && desc->id == fields::packet_of(f) ? values[size_t(f)] : 0;
  }
  const uint32_t *tail = nullptr;
  size_t tail_len = 0;
  size_t dwords = 0;  // total size in dwords, header included
};

// Decodes the packet starting at words[0] (n words available). Returns false with *err naming
// the engine, opcode and why (unknown opcode, truncated, wrong size) for anything not in the
// table: a fake GPU fails loudly rather than guess.
bool packet_decode(engine eng, const uint32_t *words, size_t n, decoded *out, std::string *err);

// Names a register for text dumps ("COMPUTE_PGM_LO"); nullptr when unknown.
using register_namer = const char *(*)(uint32_t dword_offset);

// One line per packet: "RELEASE_MEM event_type=0x14 ... addr=0x1000 data=0x5". SET_SH_REG lines
// name registers through `namer` when given. Stops with "ERROR ..." at the first bad packet.
std::string stream_text(engine eng, const uint32_t *words, size_t n, register_namer namer);

// PM4 facts shared by every packet (Sources: Linux drivers/gpu/drm/amd/amdgpu/nvd.h and soc15d.h,
// PACKET3() / CP_PACKET_GET_*; the type-3 header is [31:30]=3, [29:16]=body dwords - 1,
// [15:8]=opcode).
constexpr uint32_t pm4_type3 = 3;
// SET_SH_REG takes register offsets relative to this dword address (nvd.h
// PACKET3_SET_SH_REG_START).
constexpr uint32_t sh_reg_base = 0x2c00;

// Field values (Sources: nvd.h, soc15d.h; Mesa src/amd/common/sid.h).
constexpr uint32_t event_cache_flush_and_inv_ts = 0x14;  // CACHE_FLUSH_AND_INV_TS_EVENT
constexpr uint32_t event_bottom_of_pipe_ts = 0x28;       // BOTTOM_OF_PIPE_TS
constexpr uint32_t event_cs_partial_flush = 0x07;        // CS_PARTIAL_FLUSH
constexpr uint32_t event_index_partial_flush = 4;
constexpr uint32_t event_index_end_of_pipe = 5;
constexpr uint32_t data_sel_none = 0, data_sel_value32 = 1, data_sel_value64 = 2,
                   data_sel_gpu_clock = 3;
constexpr uint32_t int_sel_none = 0, int_sel_after_write = 2;
constexpr uint32_t wait_func_always = 0, wait_func_ge = 5;  // WAIT_REG_MEM / POLL_REGMEM
constexpr uint32_t dispatch_compute_shader_en = 1u << 0, dispatch_force_start_at_000 = 1u << 2,
                   dispatch_cs_w32_en = 1u << 15;
// SDMA COPY_LINEAR moves at most this many bytes per packet (count is 22 bits on SDMA 4-6;
// Sources: Linux sdma_v6_0.c max_copy_bytes = 0x400000).
constexpr uint64_t sdma_max_copy = 1u << 22;

}  // namespace capgraph::amd
