#include "nv_methods.h"

namespace capgraph::nv {

uint32_t method_word(method m, std::initializer_list<uint64_t> values, std::string *error) {
  const method_desc &d = method_info(m);
  auto fail = [&](const std::string &why) {
    if (error->empty()) *error = std::string(d.name) + ": " + why;
  };
  if (values.size() != d.num_fields) {
    fail(std::to_string(values.size()) + " values for " + std::to_string(d.num_fields) + " fields");
    return 0;
  }
  uint32_t word = 0;
  size_t i = 0;
  for (uint64_t v : values) {
    const method_field &f = d.fields[i++];
    unsigned width = f.hi - f.lo + 1;
    if (width < 64 && v >> width)
      fail(std::string(f.name) + " = " + std::to_string(v) + " does not fit " +
           std::to_string(width) + " bits");
    word |= (uint32_t)((v & ((width == 32 ? 0xffffffffull : (1ull << width) - 1))) << f.lo);
  }
  return word;
}

uint32_t method_header(uint32_t subchannel, uint32_t method_offset, uint32_t count) {
  constexpr uint32_t kSecOpIncMethod = 1;
  return kSecOpIncMethod << 29 | (count & 0x1fff) << 16 | (subchannel & 7) << 13 |
         (method_offset >> 2 & 0xfff);
}

void push_writer::call(uint32_t subchannel, method m, std::initializer_list<uint32_t> data) {
  const method_desc &d = method_info(m);
  // A method's family decides its subchannel: host methods are decoded by the channel itself on
  // any subchannel, engine methods must go to the subchannel their object is bound to.
  uint32_t want = d.family == method_family::compute ? kSubchannelCompute
                  : d.family == method_family::copy  ? kSubchannelCopy
                                                     : subchannel;
  if (subchannel != want && error_.empty())
    error_ = std::string(d.name) + " sent on subchannel " + std::to_string(subchannel) +
             ", its class is bound to " + std::to_string(want);
  if (subchannel > 7 || data.size() == 0 || data.size() > 0x1fff) {
    if (error_.empty()) error_ = std::string(d.name) + ": bad subchannel or data count";
    return;
  }
  out_->push_back(method_header(subchannel, d.offset, (uint32_t)data.size()));
  out_->insert(out_->end(), data.begin(), data.end());
}

std::string gp_entry(uint64_t address, uint32_t dwords, bool subroutine, uint32_t out[2]) {
  if (address % 4)
    return "push buffer address " + std::to_string(address) + " is not 4-byte aligned";
  if (address >> 40)
    return "push buffer address " + std::to_string(address) +
           " is above 2^40 (GP entries carry 40 address bits)";
  if (dwords == 0 || dwords >> 21)
    return "push buffer of " + std::to_string(dwords) +
           " dwords does not fit GP_ENTRY1_LENGTH (21 bits)";
  out[0] = (uint32_t)address & ~3u;
  out[1] = (uint32_t)(address >> 32) | (subroutine ? 1u : 0u) << 9 | dwords << 10;
  return "";
}

}  // namespace capgraph::nv
