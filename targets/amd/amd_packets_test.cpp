// The packet table, encoder and decoder: round trips of every packet, encodings checked against
// values computed independently from the Linux header macros, and loud failures on bad input.
#include "amd_packets.h"

#include <doctest/doctest.h>

#include "amd_chips.h"

using namespace capgraph::amd;

TEST_CASE("every packet round-trips through the encoder and decoder") {
  for (size_t i = 0; i < size_t(packet::count_); ++i) {
    const packet_desc &d = packet_info(packet(i));
    CAPTURE(d.name);
    // A distinct value per field that fills it up to its top bit.
    std::vector<uint64_t> values;
    for (size_t f = 0; f < d.num_fields; ++f) {
      const unsigned bits = d.fields[f].hi - d.fields[f].lo + 1;
      const uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
      values.push_back((0x9e3779b97f4a7c15ull * (f + 1)) & mask);
    }
    std::vector<uint32_t> words;
    packet_writer w(&words);
    const uint32_t tail[3] = {7, 8, 9};
    w.emit_values(d.id, values.data(), values.size(), tail, d.variable ? 3 : 0);
    REQUIRE(w.error().empty());
    REQUIRE(words.size() == d.dwords + (d.variable ? 3u : 0u));
    decoded p;
    std::string err;
    REQUIRE(packet_decode(d.eng, words.data(), words.size(), &p, &err));
    CHECK(p.desc == &d);
    CHECK(p.dwords == words.size());
    for (size_t f = 0; f < d.num_fields; ++f) {
      CAPTURE(d.fields[f].name);
      CHECK(p.values[f] == values[f]);
    }
    CHECK(p.tail_len == (d.variable ? 3u : 0u));
  }
}

TEST_CASE("fields do not overlap and stay inside their packet") {
  for (size_t i = 0; i < size_t(packet::count_); ++i) {
    const packet_desc &d = packet_info(packet(i));
    CAPTURE(d.name);
    std::vector<uint64_t> used(d.dwords, 0);
    // Header bits the encoder owns.
    used[0] = d.eng == engine::pm4 ? 0xffffff00ull : 0xffffull;
    for (size_t f = 0; f < d.num_fields; ++f) {
      const packet_field &x = d.fields[f];
      CAPTURE(x.name);
      const bool wide = x.hi - x.lo == 63;
      REQUIRE(x.lo <= x.hi);
      REQUIRE(size_t(x.dword + (wide ? 1 : 0)) < d.dwords);
      for (unsigned dw = 0; dw < (wide ? 2u : 1u); ++dw) {
        const uint64_t bits =
            wide ? 0xffffffffull
                 : (((x.hi == 31 ? 0x100000000ull : 1ull << (x.hi + 1))) - (1ull << x.lo));
        CHECK((used[x.dword + dw] & bits) == 0);
        used[x.dword + dw] |= bits;
      }
    }
  }
}

TEST_CASE("encodings match the Linux header macros") {
  std::vector<uint32_t> words;
  packet_writer w(&words);
  // PACKET3(PACKET3_RELEASE_MEM, 6) = 3 << 30 | 6 << 16 | 0x49 << 8
  using rm = fields::RELEASE_MEM;
  w.emit({{rm::event_type, 0x14},
          {rm::event_index, 5},
          {rm::data_sel, 2},
          {rm::addr, 0x123456789abcull},
          {rm::data, 0x1122334455667788ull}});
  REQUIRE(words.size() == 8);
  CHECK(words[0] == 0xC0064900u);
  // EVENT_TYPE(0x14) | EVENT_INDEX(5)
  CHECK(words[1] == 0x514u);
  // DATA_SEL(2) << 29
  CHECK(words[2] == 0x40000000u);
  CHECK(words[3] == 0x56789abcu);
  CHECK(words[4] == 0x1234u);
  CHECK(words[5] == 0x55667788u);
  CHECK(words[6] == 0x11223344u);
  words.clear();
  // INDIRECT_BUFFER: size | INDIRECT_BUFFER_VALID (1 << 23)
  using ib = fields::INDIRECT_BUFFER;
  w.emit({{ib::ib_base, 0x1000}, {ib::ib_size, 100}, {ib::valid, 1}});
  CHECK(words[0] == 0xC0023F00u);
  CHECK(words[3] == (100u | (1u << 23)));
  words.clear();
  // SET_SH_REG of COMPUTE_PGM_LO: offset 0x20c from PACKET3_SET_SH_REG_START
  const uint32_t v[2] = {1, 2};
  w.emit({{fields::SET_SH_REG::reg_offset, reg::COMPUTE_PGM_LO - sh_reg_base}}, v, 2);
  CHECK(words == std::vector<uint32_t>{0xC0027600u, 0x20cu, 1, 2});
  words.clear();
  // SDMA COPY_LINEAR: op 1, sub-op 0; count is bytes - 1.
  using copy = fields::SDMA_COPY_LINEAR;
  w.emit({{copy::count, 4095}, {copy::src, 0x10}, {copy::dst, 0x20}});
  CHECK(words == std::vector<uint32_t>{1, 4095, 0, 0x10, 0, 0x20, 0});
  words.clear();
  // SDMA POLL_REGMEM: op 8, func 5 (>=) in 28..30, mem_poll bit 31.
  using poll = fields::SDMA_POLL_REGMEM;
  w.emit({{poll::func, 5},
          {poll::mem_poll, 1},
          {poll::addr, 0x40},
          {poll::value, 3},
          {poll::mask, 0xffffffff},
          {poll::interval, 10},
          {poll::retry_count, 0xfff}});
  CHECK(words[0] == (8u | (5u << 28) | (1u << 31)));
  CHECK(words[5] == (10u | (0xfffu << 16)));
  // gfx11's full cache acquire: GLI_INV(1) | GLM_WB | GLM_INV | GLK_WB | GLK_INV | GLV_INV |
  // GL1_INV | GL2_INV | GL2_WB.
  CHECK(chip_find("gfx1100")->acquire_cache == 0xC3F1u);
  CHECK(w.error().empty());
}

TEST_CASE("values that do not fit, unknown opcodes and short streams are errors") {
  std::vector<uint32_t> words;
  packet_writer w(&words);
  w.emit({{fields::EVENT_WRITE::event_type, 0x40}});  // event_type is 6 bits
  CHECK(w.error().find("EVENT_WRITE.event_type") != std::string::npos);
  packet_writer twice(&words);
  twice.emit({{fields::SDMA_FENCE::data, 1}, {fields::SDMA_FENCE::data, 2}});
  CHECK(twice.error() == "FENCE.data: named twice");

  decoded p;
  std::string err;
  const uint32_t unknown = 0xC0001200u;  // type 3, opcode 0x12 (CLEAR_STATE: not in the table)
  CHECK_FALSE(packet_decode(engine::pm4, &unknown, 1, &p, &err));
  CHECK(err.find("unknown PM4 opcode 0x12") != std::string::npos);
  const uint32_t type0 = 0x00001234u;
  CHECK_FALSE(packet_decode(engine::pm4, &type0, 1, &p, &err));
  CHECK(err.find("type-0") != std::string::npos);
  const uint32_t sdma_unknown = 0x0000000bu;  // CONST_FILL
  CHECK_FALSE(packet_decode(engine::sdma, &sdma_unknown, 1, &p, &err));
  CHECK(err.find("unknown SDMA opcode 0x0b") != std::string::npos);
  const uint32_t release_header = 0xC0064900u;
  CHECK_FALSE(packet_decode(engine::pm4, &release_header, 1, &p, &err));
  CHECK(err.find("truncated") != std::string::npos);
  const uint32_t wrong_size = 0xC0054900u;  // RELEASE_MEM with 6 body dwords
  CHECK_FALSE(packet_decode(engine::pm4, &wrong_size, 7, &p, &err));
  CHECK(err.find("RELEASE_MEM") != std::string::npos);
  CHECK(stream_text(engine::pm4, &unknown, 1, nullptr).find("ERROR unknown PM4 opcode") !=
        std::string::npos);
}

TEST_CASE("the two ACQUIRE_MEM layouts are told apart by their size") {
  std::vector<uint32_t> words;
  packet_writer w(&words);
  using acq = fields::ACQUIRE_MEM;
  using acq9 = fields::ACQUIRE_MEM_GFX9;
  w.emit({{acq::coher_size, 1},
          {acq::coher_size_hi, 2},
          {acq::coher_base, 3},
          {acq::coher_base_hi, 4},
          {acq::poll_interval, 5},
          {acq::gcr_cntl, 6}});
  w.emit({{acq9::coher_cntl, 1},
          {acq9::coher_size, 2},
          {acq9::coher_size_hi, 3},
          {acq9::coher_base, 4},
          {acq9::coher_base_hi, 5},
          {acq9::poll_interval, 6}});
  decoded a, b;
  std::string err;
  REQUIRE(packet_decode(engine::pm4, words.data(), words.size(), &a, &err));
  REQUIRE(packet_decode(engine::pm4, words.data() + a.dwords, words.size() - a.dwords, &b, &err));
  CHECK(a.desc->id == packet::ACQUIRE_MEM);
  CHECK(b.desc->id == packet::ACQUIRE_MEM_GFX9);
  // Fields read back by name, and only from their own packet.
  CHECK(a.get(acq::gcr_cntl) == 6);
  CHECK(b.get(acq9::coher_cntl) == 1);
  CHECK(b.get(acq::gcr_cntl) == 0);
}

TEST_CASE("chips: names, KFD versions and registers") {
  CHECK(chip_find("gfx1100")->gfx_target_version == 110000);
  CHECK(chip_find("gfx1201")->gfx_target_version == 120001);
  CHECK(chip_by_gfx_target_version(90402) == chip_find("gfx942"));
  CHECK(chip_find("gfx942")->wave_size == 64);
  CHECK_FALSE(chip_find("gfx942")->gcr_cntl);
  CHECK(chip_find("gfx1030") == nullptr);
  CHECK(std::string(register_name(0x2e0c)) == "COMPUTE_PGM_LO");
  CHECK(std::string(register_name(0x2e41)) == "COMPUTE_USER_DATA_1");
  CHECK(register_name(0x2e3f) == nullptr);
}
