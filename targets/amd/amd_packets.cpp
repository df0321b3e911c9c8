// Encoder, decoder and text dump, all driven by the table in amd_packets_table.cpp.
#include "amd_packets.h"

#include <cstdio>

namespace capgraph::amd {
namespace {

uint64_t field_mask(const packet_field &f) {
  const unsigned bits = unsigned(f.hi - f.lo + 1);
  return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
}

// The header word of a packet whose total size is `dwords`.
uint32_t header_word(const packet_desc &d, size_t dwords) {
  if (d.eng == engine::pm4)  // type 3, count = body dwords - 1
    return (pm4_type3 << 30) | (uint32_t((dwords - 2) & 0x3fff) << 16) | (uint32_t(d.opcode) << 8);
  return uint32_t(d.opcode) | (uint32_t(d.sub_op) << 8);
}

const packet_desc *lookup(engine eng, uint8_t opcode, uint8_t sub_op, size_t dwords) {
  const packet_desc *found = nullptr;
  for (size_t i = 0; i < size_t(packet::count_); ++i) {
    const packet_desc &d = packet_info(packet(i));
    if (d.eng != eng || d.opcode != opcode || (eng == engine::sdma && d.sub_op != sub_op)) continue;
    // Two layouts may share an opcode (ACQUIRE_MEM on gfx9 and gfx10+): the size picks one.
    if (d.variable ? dwords >= d.dwords : dwords == d.dwords) return &d;
    if (!found) found = &d;
  }
  return found;
}

}  // namespace

void packet_writer::emit_named(packet id, const uint8_t *f, const uint64_t *v, size_t count,
                               const uint32_t *tail, size_t tail_len) {
  const packet_desc &d = packet_info(id);
  uint64_t values[kMaxFields] = {};
  bool named[kMaxFields] = {};
  for (size_t i = 0; i < count && i < kMaxFields; ++i) {
    // A field enum has exactly the packet's fields, so f[i] < d.num_fields.
    if (named[f[i]] && error_.empty())
      error_ = std::string(d.name) + "." + d.fields[f[i]].name + ": named twice";
    named[f[i]] = true;
    values[f[i]] = v[i];
  }
  if (count > kMaxFields && error_.empty())
    error_ = std::string(d.name) + ": " + std::to_string(count) + " fields named";
  emit_values(id, values, d.num_fields, tail, tail_len);
}

void packet_writer::emit_values(packet id, const uint64_t *v, size_t num_values,
                                const uint32_t *tail, size_t tail_len) {
  const packet_desc &d = packet_info(id);
  const size_t total = d.dwords + (d.variable ? tail_len : 0);
  const size_t at = out_->size();
  out_->resize(at + total, 0);
  uint32_t *w = out_->data() + at;
  w[0] = header_word(d, total);
  if (num_values != d.num_fields && error_.empty())
    error_ = std::string(d.name) + ": " + std::to_string(num_values) + " values for " +
             std::to_string(d.num_fields) + " fields";
  for (size_t i = 0; i < d.num_fields && i < num_values; ++i) {
    const packet_field &f = d.fields[i];
    const uint64_t mask = field_mask(f);
    if ((v[i] & ~mask) && error_.empty())
      error_ = std::string(d.name) + "." + f.name + ": value " + std::to_string(v[i]) +
               " does not fit bits " + std::to_string(f.lo) + ".." + std::to_string(f.hi);
    const uint64_t x = v[i] & mask;
    if (f.hi - f.lo == 63) {
      w[f.dword] = uint32_t(x);
      w[f.dword + 1] = uint32_t(x >> 32);
    } else {
      w[f.dword] |= uint32_t(x << f.lo);
    }
  }
  if (d.variable)
    for (size_t i = 0; i < tail_len; ++i) w[d.dwords + i] = tail[i];
}

bool packet_decode(engine eng, const uint32_t *words, size_t n, decoded *out, std::string *err) {
  char buf[160];
  if (n == 0) {
    *err = "empty stream";
    return false;
  }
  const uint32_t h = words[0];
  uint8_t opcode, sub_op = 0;
  size_t total;
  if (eng == engine::pm4) {
    if ((h >> 30) != pm4_type3) {
      snprintf(buf, sizeof buf, "PM4 header 0x%08x is a type-%u packet; only type 3 is known", h,
               h >> 30);
      *err = buf;
      return false;
    }
    opcode = uint8_t(h >> 8);
    total = ((h >> 16) & 0x3fff) + 2;
  } else {
    opcode = uint8_t(h);
    sub_op = uint8_t(h >> 8);
    total = 0;  // from the table
  }
  const packet_desc *d = lookup(eng, opcode, sub_op, total);
  if (!d) {
    snprintf(buf, sizeof buf, "unknown %s opcode 0x%02x (sub-op %u, header 0x%08x)",
             eng == engine::pm4 ? "PM4" : "SDMA", opcode, sub_op, h);
    *err = buf;
    return false;
  }
  if (eng == engine::sdma) total = d->dwords;
  if (d->variable ? total < d->dwords : total != d->dwords) {
    snprintf(buf, sizeof buf, "%s: %zu dwords, the packet has %s%u", d->name, total,
             d->variable ? "at least " : "", d->dwords);
    *err = buf;
    return false;
  }
  if (total > n) {
    snprintf(buf, sizeof buf, "%s: truncated (%zu of %zu dwords)", d->name, n, total);
    *err = buf;
    return false;
  }
  out->desc = d;
  out->dwords = total;
  for (size_t i = 0; i < d->num_fields; ++i) {
    const packet_field &f = d->fields[i];
    out->values[i] = f.hi - f.lo == 63
                         ? uint64_t(words[f.dword]) | (uint64_t(words[f.dword + 1]) << 32)
                         : (uint64_t(words[f.dword]) >> f.lo) & field_mask(f);
  }
  out->tail = d->variable ? words + d->dwords : nullptr;
  out->tail_len = d->variable ? total - d->dwords : 0;
  return true;
}

std::string stream_text(engine eng, const uint32_t *words, size_t n, register_namer namer) {
  std::string s;
  char buf[96];
  for (size_t at = 0; at < n;) {
    decoded p;
    std::string err;
    if (!packet_decode(eng, words + at, n - at, &p, &err)) {
      snprintf(buf, sizeof buf, "%04zx: ERROR ", at);
      return s + buf + err + "\n";
    }
    snprintf(buf, sizeof buf, "%04zx: %s", at, p.desc->name);
    s += buf;
    const bool sh = p.desc->id == packet::SET_SH_REG;
    for (size_t i = 0; i < p.desc->num_fields; ++i) {
      if (sh) break;
      snprintf(buf, sizeof buf, " %s=0x%llx", p.desc->fields[i].name,
               (unsigned long long)p.values[i]);
      s += buf;
    }
    for (size_t i = 0; i < p.tail_len; ++i) {
      if (sh) {
        const uint32_t reg = sh_reg_base + uint32_t(p.values[0]) + uint32_t(i);
        const char *name = namer ? namer(reg) : nullptr;
        if (name)
          snprintf(buf, sizeof buf, " %s=0x%x", name, p.tail[i]);
        else
          snprintf(buf, sizeof buf, " reg_0x%04x=0x%x", reg, p.tail[i]);
      } else {
        snprintf(buf, sizeof buf, " 0x%x", p.tail[i]);
      }
      s += buf;
    }
    s += "\n";
    at += p.dwords;
  }
  return s;
}

}  // namespace capgraph::amd
