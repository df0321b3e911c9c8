// am_vm: tables built for the GMMU=0 layouts the driver will use (all of a
// 24 GiB VRAM less the reserved top, at one VA base; a bridge SRAM window as
// SYSTEM pages), written into a VRAM model, then every checked address
// translated back through them as the GPU walker would.
#include "am_vm.h"

#include <doctest/doctest.h>

#include <map>

using namespace capgraph::am;

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;
constexpr uint64_t kPool =
    16 * MiB;  // page-table pool in VRAM (tinygrad keeps boot memory in the first 32 MiB)

// VRAM as the fake GPU will see it: only what the driver wrote.
struct vram_model {
  std::map<uint64_t, uint64_t> words;
  void write(const vm_tables &t) {
    for (const vm_table &tb : t.tables)
      for (uint32_t i = 0; i < kVmTableEntries; ++i) words[tb.pa + 8ull * i] = tb.entries[i];
  }
  vm_read64 reader() const {
    return [this](uint64_t pa, uint64_t *v) {
      auto it = words.find(pa);
      if (it == words.end()) return false;
      *v = it->second;
      return true;
    };
  }
};

vm_tables build(const std::vector<vm_mapping> &maps, vm_options opt = {},
                uint64_t pool_bytes = 1 * MiB) {
  vm_tables t;
  std::string err;
  REQUIRE_MESSAGE(vm_tables_build(maps, kPool, pool_bytes, opt, &t, &err), err);
  return t;
}

std::string build_error(const std::vector<vm_mapping> &maps, vm_options opt = {},
                        uint64_t pool_bytes = 1 * MiB, uint64_t pool = kPool) {
  vm_tables t;
  std::string err;
  CHECK_FALSE(vm_tables_build(maps, pool, pool_bytes, opt, &t, &err));
  CHECK(t.tables.empty());
  return err;
}

bool has(const std::string &s, const char *part) { return s.find(part) != std::string::npos; }

// Every VA of the list translates to its mapping's PA with its flags, and
// each page's fragment block is inside the mapping, aligned, contiguous and
// carries the same fragment throughout.
void round_trip(const vm_tables &t, const std::vector<vm_mapping> &maps,
                const std::vector<uint64_t> &offsets) {
  vram_model vram;
  vram.write(t);
  for (const vm_mapping &m : maps) {
    for (uint64_t off : offsets) {
      if (off >= m.size) continue;
      vm_walk w;
      std::string err;
      REQUIRE_MESSAGE(vm_translate(vram.reader(), t.root_pa, m.va + off, &w, &err), err);
      CHECK(w.pa == m.pa + off);
      CHECK((w.pte & m.flags) == m.flags);
      CHECK((w.pte & (kPteSystem | kPteMtypeMask)) == (m.flags & (kPteSystem | kPteMtypeMask)));
      const uint64_t block = kVmPageBytes << w.fragment;
      const uint64_t start = (m.va + off) & ~(block - 1);
      CHECK(start >= m.va);
      CHECK(start + block <= m.va + m.size);
      CHECK((m.pa + (start - m.va)) % block == 0);
      vm_walk first, last;
      REQUIRE(vm_translate(vram.reader(), t.root_pa, start, &first, &err));
      REQUIRE(vm_translate(vram.reader(), t.root_pa, start + block - 1, &last, &err));
      CHECK(first.fragment == w.fragment);
      CHECK(last.fragment == w.fragment);
      CHECK(last.pa - first.pa == block - 1);
    }
  }
}

std::vector<uint64_t> offsets_spread(uint64_t size, int n) {
  std::vector<uint64_t> v = {0, 4095, 4096, size - 1, size - 4096};
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v.push_back(x % size);
  }
  return v;
}

}  // namespace

TEST_CASE("vm: all of a 24 GiB VRAM, less the reserved 64 MiB, is 3 tables and 503 entries") {
  // VA 64 GiB past PAGE_TABLE_START -> VRAM 0; the tail below the reserve is
  // not 1 GiB aligned and takes 2 MiB pages.
  const vm_mapping vram{64 * GiB, 0, 24 * GiB - 64 * MiB, kPteVramDefault};
  const vm_tables t = build({vram});
  CHECK(t.root_pa == kPool);
  REQUIRE(t.tables.size() == 3);
  CHECK(t.tables[1].level == vm_pdb1);
  CHECK(t.tables[2].level == vm_pdb0);
  CHECK(t.tables[2].pa == kPool + 2 * kVmTableBytes);
  CHECK(t.leaf_count() == 23 + 480);
  // The root's one entry points at the PDB1 table and carries only VALID.
  CHECK(t.tables[0].entries[0] == (t.tables[1].pa | kPteValid));
  // PDB1 entry 64 is the first 1 GiB page: VRAM 0, PDE_PTE, fragment 9.
  const uint64_t e = t.tables[1].entries[64];
  CHECK((e & kPteAddressMask) == 0);
  CHECK((e & kPdePte) != 0);
  CHECK(((e & kPteFragmentMask) >> kPteFragmentShift) == 9);
  CHECK((e & kPteMtypeMask) == pte_mtype(mtype_uc));
  CHECK(t.tables[1].entries[63] == 0);
  round_trip(t, {vram}, offsets_spread(vram.size, 400));

  vram_model m;
  m.write(t);
  vm_walk w;
  std::string err;
  REQUIRE(vm_translate(m.reader(), t.root_pa, vram.va + 5 * GiB + 123, &w, &err));
  CHECK(w.level == vm_pdb1);
  REQUIRE(vm_translate(m.reader(), t.root_pa, vram.va + vram.size - 1, &w, &err));
  CHECK(w.level == vm_pdb0);
  CHECK(w.pa == vram.size - 1);
  // One byte past the mapping is a fault that names the level and entry.
  CHECK_FALSE(vm_translate(m.reader(), t.root_pa, vram.va + vram.size, &w, &err));
  CHECK(has(err, "PDB0 entry 480"));
  CHECK(has(err, "not valid"));
  CHECK_FALSE(vm_translate(m.reader(), t.root_pa, vram.va - 1, &w, &err));
  CHECK(has(err, "PDB1 entry 63"));
}

TEST_CASE("vm: with 2 MiB pages at most (Linux's choice) the same VRAM takes 26 tables") {
  const vm_mapping vram{64 * GiB, 0, 24 * GiB - 64 * MiB, kPteVramDefault};
  vm_options opt;
  opt.largest_page = vm_pdb0;
  const vm_tables t = build({vram}, opt);
  CHECK(t.tables.size() == 1 + 1 + 24);
  CHECK(t.leaf_count() == (24 * GiB - 64 * MiB) / (2 * MiB));
  round_trip(t, {vram}, offsets_spread(vram.size, 200));
}

TEST_CASE("vm: unaligned edges take 4 KiB pages; fragments stay inside the mapping") {
  // Starts 4 KiB past a 2 MiB boundary and ends 12 KiB past one: 4 KiB pages
  // up to the first boundary, 2 MiB pages, a 4 KiB tail. Every page checked.
  const vm_mapping m{1 * GiB + 4 * KiB, 256 * MiB + 4 * KiB, 10 * MiB - 4 * KiB + 12 * KiB,
                     kPteVramDefault};
  const vm_tables t = build({m});
  CHECK(t.leaf_count() == 511 + 4 + 3);
  std::vector<uint64_t> every;
  for (uint64_t off = 0; off < m.size; off += 4096) every.push_back(off + (off / 4096) % 4096);
  round_trip(t, {m}, every);

  // VA and PA aligned differently: no page or fragment can exceed 4 KiB.
  const vm_mapping skew{1 * GiB, 4 * KiB, 4 * MiB, kPteVramDefault};
  const vm_tables s = build({skew});
  CHECK(s.leaf_count() == 1024);
  for (const vm_table &tb : s.tables)
    for (uint64_t e : tb.entries)
      if (tb.level == vm_ptb && e) CHECK((e & kPteFragmentMask) == 0);
  round_trip(s, {skew}, offsets_spread(skew.size, 100));

  // max_fragment bounds the field.
  vm_options opt;
  opt.max_fragment = 4;
  const vm_tables f = build({m}, opt);
  for (const vm_table &tb : f.tables)
    for (uint64_t e : tb.entries) CHECK(((e & kPteFragmentMask) >> kPteFragmentShift) <= 4);
  round_trip(f, {m}, offsets_spread(m.size, 100));
}

TEST_CASE("vm: VRAM and a bridge SRAM window as SYSTEM pages share the tables") {
  const vm_mapping vram{0, 0, 2 * GiB, kPteVramDefault};
  // The bridge's 512 KiB SRAM at bus address 0x200000 (usbgpu_am_plan.md §3.2).
  const vm_mapping sram{
      4 * GiB, 0x200000, 512 * KiB,
      kPteReadable | kPteWriteable | kPteSystem | kPteSnooped | pte_mtype(mtype_uc)};
  const vm_tables t = build({vram, sram});
  round_trip(t, {vram, sram}, offsets_spread(512 * KiB, 100));
  vram_model m;
  m.write(t);
  vm_walk w;
  std::string err;
  REQUIRE(vm_translate(m.reader(), t.root_pa, 4 * GiB + 0x1234, &w, &err));
  CHECK(w.pa == 0x201234);
  CHECK((w.pte & kPteSystem) != 0);
  CHECK(w.level == vm_ptb);
  REQUIRE(vm_translate(m.reader(), t.root_pa, 0x1234, &w, &err));
  CHECK((w.pte & kPteSystem) == 0);
}

TEST_CASE("vm: bad mappings are refused, naming the mapping and what is wrong") {
  const uint64_t f = kPteVramDefault;
  CHECK(has(build_error({{0, 0, 4 * KiB + 1, f}}), "multiples of 4 KiB"));
  CHECK(has(build_error({{0, 12, 4 * KiB, f}}), "multiples of 4 KiB"));
  CHECK(has(build_error({{0, 0, 0, f}}), "non-zero"));
  CHECK(has(build_error({{kVmSpanBytes - 4 * KiB, 0, 8 * KiB, f}}), "48-bit VA span"));
  CHECK(has(build_error({{0, kVmSpanBytes, 4 * KiB, f}}), "48-bit address field"));
  CHECK(has(build_error({{0, 0, 4 * KiB, f | kPteValid}}), "bits the builder sets"));
  CHECK(has(build_error({{0, 0, 4 * KiB, f | kPdePte}}), "bits the builder sets"));
  // Overlaps: inside a huge page, onto a table, onto a 4 KiB page.
  std::string err = build_error({{0, 0, 1 * GiB, f}, {512 * MiB, 0, 4 * KiB, f}});
  CHECK(has(err, "mapping 1"));
  CHECK(has(err, "overlaps an earlier mapping (a PDB1 page)"));
  CHECK(has(build_error({{4 * KiB, 0, 4 * KiB, f}, {0, 0, 1 * GiB, f}}),
            "overlaps an earlier mapping"));
  CHECK(has(build_error({{0, 0, 8 * KiB, f}, {4 * KiB, 0, 4 * KiB, f}}), "VA 0x1000 overlaps"));
  // The pool: too small for the PDB0 table the tail needs; misaligned.
  err = build_error({{0, 0, 1 * GiB + 2 * MiB, f}}, {}, 2 * kVmTableBytes);
  CHECK(has(err, "pool"));
  CHECK(has(err, "too small"));
  CHECK(has(build_error({{0, 0, 4 * KiB, f}}, {}, 1 * MiB, kPool + 8), "4 KiB aligned"));
  CHECK(has(build_error({{0, 0, 4 * KiB, f}}, {}, 0), "no room for the root"));
  vm_options opt;
  opt.max_fragment = 32;
  CHECK(has(build_error({{0, 0, 4 * KiB, f}}, opt), "max_fragment"));
}

TEST_CASE("vm: the walker faults on damaged tables instead of reading garbage") {
  const vm_mapping vram{0, 0, 1 * GiB + 4 * MiB, kPteVramDefault};
  const vm_tables t = build({vram});
  vram_model m;
  m.write(t);
  vm_walk w;
  std::string err;
  CHECK_FALSE(vm_translate(m.reader(), t.root_pa, kVmSpanBytes, &w, &err));
  CHECK(has(err, "48-bit span"));
  // A 1 GiB page whose address is not 1 GiB aligned.
  m.words[t.tables[1].pa] |= 2 * MiB;
  CHECK_FALSE(vm_translate(m.reader(), t.root_pa, 0x10, &w, &err));
  CHECK(has(err, "unaligned"));
  // A directory entry pointing where nothing was written.
  m.words[t.tables[1].pa + 8] = (512 * MiB) | kPteValid;
  CHECK_FALSE(vm_translate(m.reader(), t.root_pa, 1 * GiB, &w, &err));
  CHECK(has(err, "cannot be read"));
  // A table in system memory.
  m.words[t.tables[1].pa + 8] = t.tables[2].pa | kPteValid | kPteSystem;
  CHECK_FALSE(vm_translate(m.reader(), t.root_pa, 1 * GiB, &w, &err));
  CHECK(has(err, "system memory"));
  // And an intact walk still works next to it.
  vm_tables clean = build({vram});
  vram_model c;
  c.write(clean);
  REQUIRE(vm_translate(c.reader(), clean.root_pa, 1 * GiB + 4 * MiB - 1, &w, &err));
  CHECK(w.pa == 1 * GiB + 4 * MiB - 1);
}
