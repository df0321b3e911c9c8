// Adreno a6xx command packets (PM4 type 4 and type 7) and the registers capgraph writes. Their
// layouts are described once, in adreno_pm4_table.h; from it come the enums below, the field
// names the encoder (adreno_hcq.cpp) sets, the fake KGSL (fake/fake_kgsl.cpp) checks and the
// golden dump prints, as NVIDIA's QMD and method tables do. Packet headers: adreno_pm4.xml's <doc>
// and pm4_pkt4_hdr / pm4_pkt7_hdr in Mesa src/freedreno/common/freedreno_pm4.h (odd parity over
// the count and over the register / opcode).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "adreno_pm4_table.h"

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

// Opcodes (adreno_pm4.xml enum adreno_pm4_type3_packets) and registers (a6xx.xml, A6XX variants).
#define ADRENO_OPCODE_ENUMERATOR(name, opcode, source, FIELDS) name = opcode,
enum opcode : uint32_t { ADRENO_PACKETS(ADRENO_OPCODE_ENUMERATOR) };
#undef ADRENO_OPCODE_ENUMERATOR
#define ADRENO_REG_ENUMERATOR(name, offset, line, FIELDS) name = offset,
enum reg : uint32_t { ADRENO_REGS(ADRENO_REG_ENUMERATOR) };
#undef ADRENO_REG_ENUMERATOR

// Field values (adreno_pm4.xml and a6xx.xml enums of the same names).
constexpr uint32_t RM6_COMPUTE = 8;                                       // a6xx_marker
constexpr uint32_t CACHE_FLUSH_TS = 4;                                    // vgt_event_type
constexpr uint32_t CACHE_INVALIDATE = 0x31;                               // vgt_event_type (A6XX)
constexpr uint32_t WRITE_GE = 5;                                          // cp_cond_function
constexpr uint32_t POLL_MEMORY = 1;                                       // poll_memory_type
constexpr uint32_t ST6_SHADER = 0, ST6_CONSTANTS = 1;                     // a6xx_state_type
constexpr uint32_t SS6_DIRECT = 0, SS6_INDIRECT = 2;                      // a6xx_state_src
constexpr uint32_t SB6_CS_TEX = 5, SB6_CS_SHADER = 0xd;                   // a6xx_state_block
constexpr uint32_t ISAMMODE_GL = 2;                                       // a6xx_isam_mode
constexpr uint32_t THREAD128 = 1;                                         // a6xx_threadsize
constexpr uint32_t CONSTLEN_128 = 0, CONSTLEN_192 = 1, CONSTLEN_256 = 2;  // a6xx_const_ram_mode
constexpr uint32_t regid_none = 0xfc;  // "not used" in a3xx_regid fields

// One field: bits [lo, hi] of word `dword` (0 for a register; a packet's payload dword) hold the
// value >> shr. A 64-bit field (hi - lo == 63) is words `dword` and `dword + 1`.
struct field_desc {
  const char *name;
  uint8_t dword, lo, hi, shr;
};
// The fields of one register or packet.
struct field_list {
  const char *owner;  // "SP_CS_CTRL_REG0", "CP_LOAD_STATE6_FRAG"
  const field_desc *fields;
  uint8_t count;
};

// Each register's and each packet's fields, one scoped enum per register or packet in table
// order (fields::SP_CS_CTRL_REG0::THREADSIZE), and their descriptions (fields_of).
namespace fields {
#define ADRENO_FIELD_ID(name, ...) name,
#define ADRENO_REG_FIELDS(name, offset, line, FIELDS)    \
  enum class name : uint8_t { FIELDS(ADRENO_FIELD_ID) }; \
  const field_list &fields_of(name);
#define ADRENO_PACKET_FIELDS(name, opcode, source, FIELDS) \
  enum class name : uint8_t { FIELDS(ADRENO_FIELD_ID) };   \
  const field_list &fields_of(name);
ADRENO_REGS(ADRENO_REG_FIELDS)
ADRENO_PACKETS(ADRENO_PACKET_FIELDS)
#undef ADRENO_PACKET_FIELDS
#undef ADRENO_REG_FIELDS
#undef ADRENO_FIELD_ID
}  // namespace fields

template <class Field>
const field_desc &field_info(Field f) {
  return fields::fields_of(f).fields[size_t(f)];
}

// One named field and its value.
template <class Field>
struct field_value {
  Field field;
  uint64_t value;
};

// Reading fields back: a register's from its word, a packet's from its `n` payload words (0 for
// a field past them).
template <class Field>
uint64_t field_get(uint32_t word, Field f) {
  const field_desc &d = field_info(f);
  const uint32_t bits = d.hi - d.lo + 1;
  return uint64_t((word >> d.lo) & (bits >= 32 ? ~0u : (1u << bits) - 1)) << d.shr;
}
uint64_t payload_get(const uint32_t *payload, uint32_t n, const field_desc &d);
template <class Field>
uint64_t field_get(const uint32_t *payload, uint32_t n, Field f) {
  return payload_get(payload, n, field_info(f));
}
// The largest value a field holds.
uint64_t field_max(const field_desc &d);

// Words from named fields (fields not named are 0). A value that does not fit its field (too
// large, or low bits below its shr), or a field named twice, sets *error if it is empty.
// `words` words are written; a packet's payload runs to the last word a named field reaches.
void fields_write(const field_list &l, const uint8_t *ids, const uint64_t *values, size_t n,
                  uint32_t *words, size_t num_words, std::string *error);
size_t payload_words(const field_list &l, const uint8_t *ids, size_t n);

// Appends a command stream: type-4 register writes, their values made from named fields
// (word()), and type-7 packets with named payload fields (emit()). The first problem (a value
// that does not fit, a packet too long) is kept in error(); the encoder checks it once.
class pm4_writer {
 public:
  explicit pm4_writer(std::vector<uint32_t> *out) : out_(out) {}
  // Type 4: `values` into consecutive registers from `first`.
  void regs(uint32_t first, std::initializer_list<uint32_t> values);
  // A register's value from its named fields: word({{f::THREADSIZE, THREAD128}, ...}).
#define ADRENO_REG_WORD(name, offset, line, FIELDS)                   \
  uint32_t word(std::initializer_list<field_value<fields::name>> v) { \
    uint32_t w = 0;                                                   \
    named(v, &w, 1);                                                  \
    return w;                                                         \
  }
  ADRENO_REGS(ADRENO_REG_WORD)
#undef ADRENO_REG_WORD
  // Type 7 without payload (CP_WAIT_FOR_IDLE, CP_WAIT_MEM_WRITES).
  void emit(opcode op) { packet_words(op, {}); }
  // Type 7 with its payload fields named, then `data` (a direct CP_LOAD_STATE6's constants).
#define ADRENO_PACKET_EMIT(name, opcode, source, FIELDS)        \
  void emit(std::initializer_list<field_value<fields::name>> v, \
            const std::vector<uint32_t> &data = {}) {           \
    std::vector<uint32_t> w(payload_size(v));                   \
    named(v, w.data(), w.size());                               \
    w.insert(w.end(), data.begin(), data.end());                \
    packet_words(name, w);                                      \
  }
  ADRENO_PACKETS(ADRENO_PACKET_EMIT)
#undef ADRENO_PACKET_EMIT
  void fail(const std::string &why) {
    if (error_.empty()) error_ = why;
  }
  const std::string &error() const { return error_; }

 private:
  static constexpr size_t kMaxFields = 16;
  template <class Field>
  static size_t split(std::initializer_list<field_value<Field>> v, uint8_t *ids, uint64_t *values) {
    size_t n = 0;
    for (const field_value<Field> &x : v)
      if (n < kMaxFields) ids[n] = uint8_t(x.field), values[n++] = x.value;
    return n;
  }
  template <class Field>
  size_t payload_size(std::initializer_list<field_value<Field>> v) {
    uint8_t ids[kMaxFields];
    uint64_t values[kMaxFields];
    return payload_words(fields::fields_of(Field{}), ids, split(v, ids, values));
  }
  template <class Field>
  void named(std::initializer_list<field_value<Field>> v, uint32_t *words, size_t num_words) {
    uint8_t ids[kMaxFields];
    uint64_t values[kMaxFields];
    const size_t n = split(v, ids, values);
    if (v.size() > kMaxFields) fail(std::to_string(v.size()) + " fields named");
    fields_write(fields::fields_of(Field{}), ids, values, n, words, num_words, &error_);
  }
  void packet_words(uint32_t op, const std::vector<uint32_t> &payload);

  std::vector<uint32_t> *out_;
  std::string error_;
};

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
// Whether the fake accepts writes to `reg` (every register of the table).
bool reg_known(uint32_t reg);

// Every register's and packet's field list, for tests that walk the table.
std::vector<const field_list *> field_lists_all();

// A readable dump of a command stream, one packet per line; addresses printed through `address`
// (so a golden file does not depend on where memory landed).
std::string pm4_text(const std::vector<uint32_t> &words,
                     std::string (*address)(uint64_t gpu, void *ctx), void *ctx);

}  // namespace capgraph::adreno
