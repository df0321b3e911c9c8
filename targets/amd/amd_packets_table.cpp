// The AMD packet table's rows (amd_packets_table.h, where the sources are cited) as the field and
// packet descriptions the encoder, the decoder and the text dump walk.
#include <iterator>

#include "amd_packets.h"

namespace capgraph::amd {
namespace {

constexpr const char *kNvd = "Linux amdgpu nvd.h / soc15d.h, Mesa sid.h";
constexpr const char *kSdma = "Linux amdgpu sdma_v6_0_0_pkt_open.h, sdma_v6_0.c";

#define AMD_FIELD_DESC(name, dword, lo, hi) {#name, dword, lo, hi},
#define AMD_PACKET_FIELDS(id, eng, name, opcode, sub_op, dwords, variable, source, FIELDS) \
  constexpr packet_field f_##id[] = {FIELDS(AMD_FIELD_DESC)};
AMD_PACKETS(AMD_PACKET_FIELDS)
#undef AMD_PACKET_FIELDS
#undef AMD_FIELD_DESC

// clang-format off
#define AMD_PACKET_DESC(id, eng, name, opcode, sub_op, dwords, variable, source, FIELDS) \
  {packet::id, engine::eng, name, opcode, sub_op, dwords, variable,                       \
   f_##id, uint8_t(std::size(f_##id)), source},
// clang-format on
// Rows and `enum class packet` come from the one list, so they are in the same order.
constexpr packet_desc kTable[] = {AMD_PACKETS(AMD_PACKET_DESC)};
#undef AMD_PACKET_DESC
static_assert(sizeof(kTable) / sizeof(kTable[0]) == size_t(packet::count_));
constexpr bool fields_fit() {
  for (const packet_desc &d : kTable)
    if (d.num_fields > std::size(decoded{}.values)) return false;
  return true;
}
static_assert(fields_fit(), "a packet has more fields than decoded::values holds");

}  // namespace

const packet_desc &packet_info(packet id) { return kTable[size_t(id)]; }

}  // namespace capgraph::amd
