// The QMD and method tables: every row inside its descriptor or word, no two fields overlapping
// (a mistyped bit range shows up here), values round-trip through the encoder and decoder, and
// the encoders agree with the independent summaries in nv_plan.md (§2.4 push-buffer header and GP
// entry formulas as tinygrad writes them, §2.7 QMD bit positions).
#include <doctest/doctest.h>

#include <set>

#include "nv_methods.h"
#include "nv_qmd.h"

using namespace capgraph::nv;

namespace {

const qmd_version kVersions[] = {qmd_version::V03_00, qmd_version::V04_00};

std::vector<uint32_t> qmd_zero(qmd_version v) { return std::vector<uint32_t>(qmd_dwords(v), 0); }

}  // namespace

TEST_CASE("QMD fields lie inside the QMD and never overlap") {
  for (qmd_version v : kVersions) {
    std::vector<int> owner(qmd_dwords(v) * 32, -1);
    int present = 0;
    for (int f = 0; f < (int)qmd_field::count_; f++) {
      const qmd_field_desc &d = qmd_field_info(v, (qmd_field)f);
      if (!d.name) continue;
      present++;
      INFO(qmd_field_name(v, (qmd_field)f));
      REQUIRE(d.lo <= d.hi);
      REQUIRE(d.hi < qmd_dwords(v) * 32);
      CHECK(d.hi - d.lo < 32);  // every field capgraph uses fits one 32-bit value
      CHECK(d.line > 0);
      for (int b = d.lo; b <= d.hi; b++) {
        INFO("bit " << b << " also belongs to field " << owner[b]);
        CHECK(owner[b] == -1);
        owner[b] = f;
      }
    }
    CHECK(present == (int)qmd_field::count_ - 1);  // each version lacks exactly one field
  }
}

TEST_CASE("every QMD field round-trips and touches only its own bits") {
  for (qmd_version v : kVersions) {
    for (int f = 0; f < (int)qmd_field::count_; f++) {
      const qmd_field_desc &d = qmd_field_info(v, (qmd_field)f);
      if (!d.name) continue;
      INFO(qmd_field_name(v, (qmd_field)f));
      uint64_t all = (d.hi - d.lo == 63) ? ~0ull : (1ull << (d.hi - d.lo + 1)) - 1;
      std::vector<uint32_t> q = qmd_zero(v);
      REQUIRE(qmd_set(q, v, (qmd_field)f, all).empty());
      CHECK(qmd_get(q, v, (qmd_field)f) == all);
      for (int g = 0; g < (int)qmd_field::count_; g++)
        if (g != f) CHECK(qmd_get(q, v, (qmd_field)g) == 0);
      uint64_t some = 0x5a5a5a5aull & all;
      REQUIRE(qmd_set(q, v, (qmd_field)f, some).empty());
      CHECK(qmd_get(q, v, (qmd_field)f) == some);
      // One more than the field holds is refused, and the QMD is left as it was.
      if (all != ~0ull) {
        std::vector<uint32_t> before = q;
        CHECK(!qmd_set(q, v, (qmd_field)f, all + 1).empty());
        CHECK(q == before);
      }
    }
  }
}

TEST_CASE("QMD fields sit where nv_plan.md §2.7 puts them") {
  std::vector<uint32_t> q = qmd_zero(qmd_version::V04_00);
  REQUIRE(q.size() == 96);
  REQUIRE(qmd_set(q, qmd_version::V04_00, qmd_field::QMD_MAJOR_VERSION, 4).empty());  // 583:580
  CHECK(q[18] == 4u << 4);
  REQUIRE(qmd_set(q, qmd_version::V04_00, qmd_field::GRID_WIDTH, 0x12345678).empty());  // 1055:1024
  CHECK(q[32] == 0x12345678u);
  REQUIRE(
      qmd_set(q, qmd_version::V04_00, qmd_field::CTA_THREAD_DIMENSION0, 256).empty());  // 1167:1152
  CHECK(q[36] == 256u);
  REQUIRE(qmd_set(q, qmd_version::V04_00, qmd_field::PROGRAM_ADDRESS_LOWER, 0xdeadbe00)
              .empty());  // 1247:1216
  CHECK(q[38] == 0xdeadbe00u);
  REQUIRE(
      qmd_set(q, qmd_version::V04_00, qmd_field::CONSTANT_BUFFER0_VALID, 1).empty());  // bit 416
  CHECK(q[13] == 1u);
  CHECK(qmd_field_name(qmd_version::V04_00, qmd_field::GRID_WIDTH) == "QMD V04_00 GRID_WIDTH");

  std::vector<uint32_t> r = qmd_zero(qmd_version::V03_00);
  REQUIRE(r.size() == 64);
  REQUIRE(qmd_set(r, qmd_version::V03_00, qmd_field::QMD_MAJOR_VERSION, 3).empty());
  CHECK(r[18] == 3u << 4);
  REQUIRE(qmd_set(r, qmd_version::V03_00, qmd_field::GRID_WIDTH, 7)
              .empty());  // CTA_RASTER_WIDTH 415:384
  CHECK(r[12] == 7u);
  REQUIRE(qmd_set(r, qmd_version::V03_00, qmd_field::REGISTER_COUNT, 40)
              .empty());  // REGISTER_COUNT_V 656:648
  CHECK(r[20] == 40u << 8);
  REQUIRE(qmd_set(r, qmd_version::V03_00, qmd_field::CONSTANT_BUFFER0_SIZE_SHIFTED4, 0x180 >> 4)
              .empty());  // 1087:1075
  CHECK(r[33] == (0x18u << 19));
  CHECK(qmd_field_name(qmd_version::V03_00, qmd_field::GRID_WIDTH) ==
        "QMD V03_00 CTA_RASTER_WIDTH");
}

TEST_CASE("a QMD field the version lacks, or a QMD of the wrong size, is refused by name") {
  std::vector<uint32_t> q = qmd_zero(qmd_version::V04_00);
  std::string e = qmd_set(q, qmd_version::V04_00, qmd_field::SM_GLOBAL_CACHING_ENABLE, 1);
  CHECK(e.find("not in this version") != std::string::npos);
  std::vector<uint32_t> small = qmd_zero(qmd_version::V03_00);
  CHECK(qmd_set(small, qmd_version::V04_00, qmd_field::GRID_WIDTH, 1).find("expected 96") !=
        std::string::npos);
  CHECK(!qmd_set(q, qmd_version::V04_00, qmd_field::REGISTER_COUNT, 512).empty());  // 9 bits
}

TEST_CASE("method rows: unique offsets per family, fields inside the word and apart") {
  std::set<std::pair<int, int>> seen;
  for (int m = 0; m < (int)method::count_; m++) {
    const method_desc &d = method_info((method)m);
    INFO(d.name);
    CHECK((int)d.id == m);
    CHECK(d.offset % 4 == 0);
    CHECK(d.offset < 0x4000);  // 12-bit dword method address
    CHECK(seen.insert({(int)d.family, d.offset}).second);
    uint32_t used = 0;
    for (int i = 0; i < d.num_fields; i++) {
      const method_field &f = d.fields[i];
      REQUIRE(f.lo <= f.hi);
      REQUIRE(f.hi < 32);
      uint32_t mask =
          (uint32_t)((f.hi - f.lo == 31 ? 0xffffffffull : (1ull << (f.hi - f.lo + 1)) - 1) << f.lo);
      CHECK((used & mask) == 0);
      used |= mask;
    }
  }
}

TEST_CASE("push-buffer words agree with tinygrad's formulas (nv_plan.md §2.4, §2.6)") {
  std::vector<uint32_t> pb;
  push_writer w(&pb);
  std::string err;
  uint64_t sem = 0x1234567890ull;
  uint32_t exec = method_word(method::SEM_EXECUTE, {SEM_EXECUTE_OPERATION_RELEASE, 1, 1, 1}, &err);
  w.call(kSubchannelHost, method::SEM_ADDR_LO, {(uint32_t)sem, (uint32_t)(sem >> 32), 7, 0, exec});
  REQUIRE(err.empty());
  REQUIRE(w.error().empty());
  REQUIRE(pb.size() == 6);
  // tinygrad: (2 << 28) | count << 16 | subchannel << 13 | method >> 2
  CHECK(pb[0] == ((2u << 28) | 5u << 16 | 0u << 13 | 0x5cu >> 2));
  CHECK(pb[5] == (1u | 1u << 20 | 1u << 24 | 1u << 25));
  w.call(kSubchannelCompute, method::SEND_PCAS_A, {0x1000000 >> 8});
  w.call(kSubchannelCompute, method::SEND_SIGNALING_PCAS2_B, {PCAS_ACTION_PREFETCH_SCHEDULE});
  CHECK(pb[6] == ((2u << 28) | 1u << 16 | 1u << 13 | 0x2b4u >> 2));
  CHECK(pb[9] == 9u);
  CHECK(w.error().empty());

  // A copy-engine method on the compute subchannel is refused by name.
  w.call(kSubchannelCompute, method::LAUNCH_DMA, {0});
  CHECK(w.error().find("LAUNCH_DMA sent on subchannel 1") != std::string::npos);

  // LAUNCH_DMA fields, and a value too wide for its field.
  uint32_t launch =
      method_word(method::LAUNCH_DMA,
                  {LAUNCH_DMA_DATA_TRANSFER_TYPE_NON_PIPELINED, 1,
                   LAUNCH_DMA_SEMAPHORE_TYPE_RELEASE_FOUR_WORD_SEMAPHORE, 0,
                   LAUNCH_DMA_MEMORY_LAYOUT_PITCH, LAUNCH_DMA_MEMORY_LAYOUT_PITCH, 0, 0},
                  &err);
  CHECK(err.empty());
  CHECK(launch == (2u | 1u << 2 | 2u << 3 | 1u << 7 | 1u << 8));
  method_word(method::SEND_SIGNALING_PCAS2_B, {16}, &err);
  CHECK(err.find("PCAS_ACTION") != std::string::npos);
}

TEST_CASE("GP entries agree with tinygrad's formula and refuse what does not fit") {
  uint32_t e[2];
  uint64_t addr = 0xAB12345678ull;
  REQUIRE(gp_entry(addr, 300, true, e).empty());
  // tinygrad: (addr / 4) << 2 | len << 42 | 1 << 41
  uint64_t want = (addr / 4) << 2 | 300ull << 42 | 1ull << 41;
  CHECK(((uint64_t)e[1] << 32 | e[0]) == want);
  CHECK(gp_entry(addr + 2, 1, true, e).find("aligned") != std::string::npos);
  CHECK(gp_entry(1ull << 40, 1, true, e).find("2^40") != std::string::npos);
  CHECK(gp_entry(addr, 1u << 21, true, e).find("LENGTH") != std::string::npos);
}
