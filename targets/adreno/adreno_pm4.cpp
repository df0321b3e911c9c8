#include "adreno_pm4.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "clock_text.h"

namespace capgraph::adreno {

// The descriptions of every register's and packet's fields (adreno_pm4_table.h).
namespace fields {
namespace {
#define ADRENO_REG_FIELD_DESC(name, lo, hi, shr) {#name, 0, lo, hi, shr},
#define ADRENO_PACKET_FIELD_DESC(name, dword, lo, hi) {#name, dword, lo, hi, 0},
// An array of at least one element, so that registers without fields have one too.
#define ADRENO_REG_FIELDS(name, offset, line, FIELDS) \
  constexpr field_desc k_##name[] = {FIELDS(ADRENO_REG_FIELD_DESC){nullptr, 0, 0, 0, 0}};
#define ADRENO_PACKET_FIELDS(name, opcode, source, FIELDS) \
  constexpr field_desc k_##name[] = {FIELDS(ADRENO_PACKET_FIELD_DESC){nullptr, 0, 0, 0, 0}};
ADRENO_REGS(ADRENO_REG_FIELDS)
ADRENO_PACKETS(ADRENO_PACKET_FIELDS)
#undef ADRENO_PACKET_FIELDS
#undef ADRENO_REG_FIELDS
#undef ADRENO_PACKET_FIELD_DESC
#undef ADRENO_REG_FIELD_DESC
}  // namespace

#define ADRENO_FIELDS_OF(name, ...)                                                      \
  const field_list &fields_of(name) {                                                    \
    static constexpr field_list l = {#name, k_##name, uint8_t(std::size(k_##name) - 1)}; \
    return l;                                                                            \
  }
ADRENO_REGS(ADRENO_FIELDS_OF)
ADRENO_PACKETS(ADRENO_FIELDS_OF)
#undef ADRENO_FIELDS_OF
}  // namespace fields

namespace {

struct named {
  uint32_t value;
  const char *name;
};

#define ADRENO_NAMED(name, value, ...) {value, #name},
constexpr named opcodes[] = {ADRENO_PACKETS(ADRENO_NAMED)};
constexpr named regs[] = {ADRENO_REGS(ADRENO_NAMED)};
#undef ADRENO_NAMED

const char *name_of(const named *table, size_t n, uint32_t v) {
  for (size_t i = 0; i < n; ++i)
    if (table[i].value == v) return table[i].name;
  return "";
}

bool wide(const field_desc &d) { return d.hi - d.lo == 63; }

uint64_t field_mask(const field_desc &d) {
  const unsigned bits = d.hi - d.lo + 1u;
  return bits >= 64 ? ~0ull : (1ull << bits) - 1;
}

}  // namespace

uint64_t field_max(const field_desc &d) { return field_mask(d) << d.shr; }

uint64_t payload_get(const uint32_t *p, uint32_t n, const field_desc &d) {
  if (wide(d)) return d.dword + 1u < n ? uint64_t(p[d.dword + 1]) << 32 | p[d.dword] : 0;
  return d.dword < n ? ((uint64_t(p[d.dword]) >> d.lo) & field_mask(d)) << d.shr : 0;
}

size_t payload_words(const field_list &l, const uint8_t *ids, size_t n) {
  size_t words = 0;
  for (size_t i = 0; i < n; ++i) {
    const field_desc &d = l.fields[ids[i]];
    words = std::max<size_t>(words, d.dword + (wide(d) ? 2u : 1u));
  }
  return words;
}

void fields_write(const field_list &l, const uint8_t *ids, const uint64_t *values, size_t n,
                  uint32_t *words, size_t num_words, std::string *error) {
  const auto fail = [&](const std::string &why) {
    if (error->empty()) *error = why;
  };
  uint32_t named = 0;  // a packet or register has fewer than 32 fields
  for (size_t i = 0; i < n; ++i) {
    const field_desc &d = l.fields[ids[i]];
    const std::string what = std::string(l.owner) + "." + d.name;
    if (named & (1u << ids[i])) fail(what + ": named twice");
    named |= 1u << ids[i];
    const uint64_t v = values[i];
    if (v & ~field_max(d) || (d.shr && v & ((1ull << d.shr) - 1)))
      fail(what + ": value " + std::to_string(v) + " does not fit bits " + std::to_string(d.lo) +
           ".." + std::to_string(d.hi) + (d.shr ? " >> " + std::to_string(d.shr) : ""));
    const uint64_t x = (v >> d.shr) & field_mask(d);
    if (d.dword + (wide(d) ? 1u : 0u) >= num_words) continue;  // sized from these fields
    if (wide(d)) {
      words[d.dword] = uint32_t(x);
      words[d.dword + 1] = uint32_t(x >> 32);
    } else {
      words[d.dword] |= uint32_t(x << d.lo);
    }
  }
}

void pm4_writer::regs(uint32_t first, std::initializer_list<uint32_t> values) {
  out_->push_back(pkt4(first, uint32_t(values.size())));
  out_->insert(out_->end(), values.begin(), values.end());
}

void pm4_writer::packet_words(uint32_t op, const std::vector<uint32_t> &payload) {
  if (payload.size() > 0x3fff)
    return fail("a packet of " + std::to_string(payload.size()) + " words");
  out_->push_back(pkt7(op, uint32_t(payload.size())));
  out_->insert(out_->end(), payload.begin(), payload.end());
}

std::vector<const field_list *> field_lists_all() {
#define ADRENO_FIELD_LIST(name, ...) &fields::fields_of(fields::name{}),
  return {ADRENO_REGS(ADRENO_FIELD_LIST) ADRENO_PACKETS(ADRENO_FIELD_LIST)};
#undef ADRENO_FIELD_LIST
}

packet packet_decode(uint32_t h) {
  packet p;
  switch (h >> 28) {
    case 4:
      p.count = h & 0x7f;
      p.reg_or_opcode = (h >> 8) & 0x3ffff;
      if (h & (1u << 26))
        p.why = "type-4 header " + hex(h) + ": reserved bit 26 set";
      else if (((h >> 7) & 1) != odd_parity_bit(p.count))
        p.why = "type-4 header " + hex(h) + ": wrong count parity";
      else if (((h >> 27) & 1) != odd_parity_bit(p.reg_or_opcode))
        p.why = "type-4 header " + hex(h) + ": wrong register parity";
      else
        p.kind = packet::type4;
      break;
    case 7:
      p.count = h & 0x3fff;
      p.reg_or_opcode = (h >> 16) & 0x7f;
      if (h & (1u << 14) || h & (0xfu << 24))
        p.why = "type-7 header " + hex(h) + ": reserved bits set";
      else if (((h >> 15) & 1) != odd_parity_bit(p.count))
        p.why = "type-7 header " + hex(h) + ": wrong count parity";
      else if (((h >> 23) & 1) != odd_parity_bit(p.reg_or_opcode))
        p.why = "type-7 header " + hex(h) + ": wrong opcode parity";
      else
        p.kind = packet::type7;
      break;
    default: p.why = "word " + hex(h) + " is not a type-4 or type-7 packet header";
  }
  return p;
}

const char *opcode_name(uint32_t op) { return name_of(opcodes, std::size(opcodes), op); }
const char *reg_name(uint32_t r) { return name_of(regs, std::size(regs), r); }
bool reg_known(uint32_t r) { return *reg_name(r) != 0; }

std::string pm4_text(const std::vector<uint32_t> &w, std::string (*address)(uint64_t, void *),
                     void *ctx) {
  std::string o;
  for (size_t i = 0; i < w.size();) {
    const packet p = packet_decode(w[i]);
    if (p.kind == packet::bad || i + 1 + p.count > w.size()) {
      o += "BAD " + (p.why.empty() ? "packet runs past the end" : p.why) + "\n";
      break;
    }
    const size_t b = i + 1;  // payload
    const uint32_t *pay = w.data() + b;
    const auto get = [&](auto field) { return field_get(pay, p.count, field); };
    const auto addr = [&](auto field) { return address(get(field), ctx); };
    if (p.kind == packet::type4) {
      for (uint32_t k = 0; k < p.count; ++k) {
        const uint32_t r = p.reg_or_opcode + k;
        const bool address_reg = r == SP_CS_OBJ_START;
        o += std::string(k ? "   " : "") + "REG " + reg_name(r) + " = " +
             (address_reg && k + 1 < p.count ? address(uint64_t(w[b + k + 1]) << 32 | w[b + k], ctx)
                                             : hex(w[b + k])) +
             "\n";
        if (address_reg && k + 1 < p.count) ++k;
      }
    } else {
      o += opcode_name(p.reg_or_opcode);
      if (!*opcode_name(p.reg_or_opcode)) o += "opcode " + hex(p.reg_or_opcode);
      switch (p.reg_or_opcode) {
        case CP_LOAD_STATE6_FRAG: {
          using f = fields::CP_LOAD_STATE6_FRAG;
          o += " dst " + std::to_string(get(f::DST_OFF)) + " type " +
               std::to_string(get(f::STATE_TYPE)) + " src " + std::to_string(get(f::STATE_SRC)) +
               " block " + hex(get(f::STATE_BLOCK)) + " units " + std::to_string(get(f::NUM_UNIT));
          if (get(f::STATE_SRC) == SS6_INDIRECT)
            o += " from " + addr(f::EXT_SRC_ADDR);
          else
            for (uint32_t k = 3; k < p.count; ++k) o += " " + hex(w[b + k]);
          break;
        }
        case CP_EVENT_WRITE: {
          using f = fields::CP_EVENT_WRITE;
          o += " event " + hex(get(f::EVENT));
          if (p.count >= 4) o += " to " + addr(f::ADDR_0) + " value " + hex(get(f::VALUE));
          break;
        }
        case CP_WAIT_REG_MEM: {
          using f = fields::CP_WAIT_REG_MEM;
          o += " func " + std::to_string(get(f::FUNCTION)) + " at " + addr(f::POLL_ADDR) + " ref " +
               hex(get(f::REF)) + " mask " + hex(get(f::MASK));
          break;
        }
        case CP_REG_TO_MEM: {
          using f = fields::CP_REG_TO_MEM;
          o += " reg " + hex(get(f::REG)) + " to " + addr(f::DEST);
          break;
        }
        case CP_INDIRECT_BUFFER: {
          using f = fields::CP_INDIRECT_BUFFER;
          o += " " + addr(f::IB_BASE) + " dwords " + std::to_string(get(f::IB_SIZE));
          break;
        }
        case CP_MEMCPY: {
          using f = fields::CP_MEMCPY;
          o += " dwords " + std::to_string(get(f::DWORDS)) + " from " + addr(f::SRC) + " to " +
               addr(f::DST);
          break;
        }
        default:
          for (uint32_t k = 0; k < p.count; ++k) o += " " + hex(w[b + k]);
      }
      o += "\n";
    }
    i = b + p.count;
  }
  return o;
}

}  // namespace capgraph::adreno
