// The a6xx packet headers: known words from freedreno command-stream dumps, the parity rules and
// what the decoder refuses.
#include "adreno_pm4.h"

#include <doctest/doctest.h>

using namespace capgraph::adreno;

TEST_CASE("adreno pm4: headers carry odd parity over the count and the register or opcode") {
  // CP_EXEC_CS with 4 words: 0x33 has four ones (parity bit 1), 4 has one (parity bit 0).
  CHECK(pkt7(CP_EXEC_CS, 4) == 0x70b30004u);
  // CP_WAIT_FOR_IDLE with no payload: 0x26 has three ones (0), 0 has none (1 at bit 15).
  CHECK(pkt7(CP_WAIT_FOR_IDLE, 0) == 0x70268000u);
  // SP_CS_CTRL_REG0 (0xa9b0, seven ones: parity 0 at bit 27), 10 registers (two ones: parity 1 at
  // bit 7).
  CHECK(pkt4(SP_CS_CTRL_REG0, 10) == (0x40000000u | 10 | 1u << 7 | 0xa9b0u << 8));
  // SP_CS_IBO_COUNT (0xaa00, four ones: parity 1 at bit 27), 1 register (one: parity 0).
  CHECK(pkt4(SP_CS_IBO_COUNT, 1) == (0x40000000u | 1 | 0xaa00u << 8 | 1u << 27));
  for (uint32_t v = 0; v < 4096; ++v) {
    CHECK((__builtin_popcount(v) + odd_parity_bit(v)) % 2 == 1);
  }
}

TEST_CASE("adreno pm4: the decoder reads back every header and refuses damaged ones") {
  for (uint32_t reg : {0x980u, 0xa9b0u, 0xb990u, 0xbb08u, 0x3ffffu})
    for (uint32_t n : {0u, 1u, 12u, 127u}) {
      const packet p = packet_decode(pkt4(reg, n));
      REQUIRE(p.kind == packet::type4);
      CHECK(p.reg_or_opcode == reg);
      CHECK(p.count == n);
    }
  for (uint32_t op = 0; op < 128; ++op)
    for (uint32_t n : {0u, 3u, 4099u, 16383u}) {
      const packet p = packet_decode(pkt7(op, n));
      REQUIRE(p.kind == packet::type7);
      CHECK(p.reg_or_opcode == op);
      CHECK(p.count == n);
    }
  // Each single-bit flip of a header's count, register or opcode breaks a parity.
  const uint32_t h7 = pkt7(CP_EXEC_CS, 4), h4 = pkt4(SP_CS_INSTRLEN, 1);
  for (int bit : {0, 3, 13, 16, 22}) CHECK(packet_decode(h7 ^ (1u << bit)).kind == packet::bad);
  for (int bit : {0, 6, 8, 25}) CHECK(packet_decode(h4 ^ (1u << bit)).kind == packet::bad);
  CHECK(packet_decode(h7 ^ (1u << 15)).why.find("count parity") != std::string::npos);
  CHECK(packet_decode(h7 ^ (1u << 23)).why.find("opcode parity") != std::string::npos);
  CHECK(packet_decode(h4 ^ (1u << 27)).why.find("register parity") != std::string::npos);
  CHECK(packet_decode(0x00000000u).kind == packet::bad);  // type 0 (a2xx-era): not on a6xx streams
  CHECK(packet_decode(0xc0001000u).kind == packet::bad);  // type 3
  CHECK(packet_decode(h7 | 1u << 24).kind == packet::bad);  // reserved bits
}

TEST_CASE("adreno pm4: the text dump names registers and opcodes") {
  const std::vector<uint32_t> w = {
      pkt4(SP_CS_INSTRLEN, 1), 3, pkt7(CP_EXEC_CS, 4), 0, 5, 1, 1, pkt7(0x7f, 0)};
  const std::string t = pm4_text(w, [](uint64_t a, void *) { return std::to_string(a); }, nullptr);
  CHECK(t.find("REG SP_CS_INSTRLEN = 0x3") != std::string::npos);
  CHECK(t.find("CP_EXEC_CS 0x0 0x5 0x1 0x1") != std::string::npos);
  CHECK(t.find("opcode 0x7f") != std::string::npos);
  CHECK(reg_known(HLSQ_CS_NDRANGE_0 + 6));
  CHECK_FALSE(reg_known(0xa9be));
}

TEST_CASE("adreno pm4: every field of the table stays inside its word and overlaps no other") {
  for (const field_list *l : field_lists_all()) {
    CAPTURE(l->owner);
    std::vector<uint64_t> used(8, 0);
    for (uint8_t i = 0; i < l->count; ++i) {
      const field_desc &d = l->fields[i];
      CAPTURE(d.name);
      const bool wide = d.hi - d.lo == 63;
      REQUIRE(d.lo <= d.hi);
      REQUIRE((wide || d.hi < 32));
      REQUIRE(size_t(d.dword + (wide ? 1 : 0)) < used.size());
      for (unsigned w = 0; w < (wide ? 2u : 1u); ++w) {
        const uint64_t bits = wide ? 0xffffffffull : ((2ull << d.hi) - (1ull << d.lo));
        CHECK((used[d.dword + w] & bits) == 0);
        used[d.dword + w] |= bits;
      }
    }
  }
}

TEST_CASE("adreno pm4: named fields make the words the hand-shifted encoder made") {
  std::vector<uint32_t> words;
  pm4_writer w(&words);
  using reg0 = fields::SP_CS_CTRL_REG0;
  CHECK(w.word({{reg0::HALFREGFOOTPRINT, 3},
                {reg0::FULLREGFOOTPRINT, 12},
                {reg0::BRANCHSTACK, 5},
                {reg0::THREADSIZE, THREAD128},
                {reg0::MERGEDREGS, 1}}) == (1u << 20 | 3u << 1 | 12u << 7 | 5u << 14 | 1u << 31));
  // shr: the private memory sizes are written in their units.
  CHECK(w.word({{fields::SP_CS_PVT_MEM_PARAM::MEMSIZEPERITEM, 3 * 512}}) == 3u);
  CHECK(w.word({{fields::HLSQ_CS_CNTL::CONSTLEN, 64}, {fields::HLSQ_CS_CNTL::ENABLED, 1}}) ==
        (16u | 1u << 8));
  using load = fields::CP_LOAD_STATE6_FRAG;
  w.emit({{load::DST_OFF, 2},
          {load::STATE_TYPE, ST6_CONSTANTS},
          {load::STATE_SRC, SS6_DIRECT},
          {load::STATE_BLOCK, SB6_CS_SHADER},
          {load::NUM_UNIT, 1},
          {load::EXT_SRC_ADDR, 0}},
         {7, 8, 9, 10});
  const uint32_t ls0 = 2 | ST6_CONSTANTS << 14 | SS6_DIRECT << 16 | SB6_CS_SHADER << 18 | 1u << 22;
  CHECK(words == std::vector<uint32_t>{pkt7(CP_LOAD_STATE6_FRAG, 7), ls0, 0, 0, 7, 8, 9, 10});
  CHECK(field_get(words.data() + 1, 7, load::NUM_UNIT) == 1);
  CHECK(field_get(words.data() + 1, 7, load::STATE_BLOCK) == SB6_CS_SHADER);
  words.clear();
  w.emit({{fields::CP_EVENT_WRITE::EVENT, CACHE_INVALIDATE}});
  CHECK(words == std::vector<uint32_t>{pkt7(CP_EVENT_WRITE, 1), CACHE_INVALIDATE});
  CHECK(w.error().empty());
  // A value over its field, one below a field's unit, a field named twice: errors.
  w.word({{reg0::BRANCHSTACK, 64}});
  CHECK(w.error() == "SP_CS_CTRL_REG0.BRANCHSTACK: value 64 does not fit bits 14..19");
  pm4_writer unit(&words);
  unit.word({{fields::SP_CS_PVT_MEM_PARAM::MEMSIZEPERITEM, 100}});
  CHECK(unit.error().find("MEMSIZEPERITEM: value 100 does not fit bits 0..7 >> 9") !=
        std::string::npos);
  pm4_writer twice(&words);
  twice.word({{reg0::MERGEDREGS, 1}, {reg0::MERGEDREGS, 1}});
  CHECK(twice.error() == "SP_CS_CTRL_REG0.MERGEDREGS: named twice");
}
