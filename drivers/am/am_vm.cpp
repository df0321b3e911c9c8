#include "am_vm.h"

#include <cstdio>

namespace capgraph::am {

namespace {

const char *level_name(int l) {
  static const char *names[] = {"PDB2", "PDB1", "PDB0", "PTB"};
  return l >= 0 && l < 4 ? names[l] : "?";
}

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", static_cast<unsigned long long>(v));
  return b;
}

uint64_t level_bytes(int l) { return 1ull << kVmLevelShift[l]; }
uint32_t level_index(int l, uint64_t va) {
  return uint32_t(va >> kVmLevelShift[l]) & (kVmTableEntries - 1);
}

// The largest fragment f <= max whose aligned block of 4 KiB << f pages,
// holding va, lies inside the mapping with its physical side aligned alike.
// Blocks nest, so every page of one block gets the same f, as the TLB
// requires (amdgpu_vm_pte_fragment: "consistent across the entire block").
uint32_t fragment_pick(const vm_mapping &m, uint64_t va, uint32_t max_fragment) {
  uint32_t f = 0;
  while (f < max_fragment) {
    const uint64_t block = kVmPageBytes << (f + 1);
    const uint64_t start = va & ~(block - 1);
    if (start < m.va || start + block > m.va + m.size || ((m.va - m.pa) & (block - 1)) != 0) break;
    ++f;
  }
  return f;
}

struct builder {
  const vm_options &opt;
  uint64_t pool_pa, pool_bytes;
  vm_tables t;
  std::string *err;

  // Index of a new zeroed table, or -1 when the pool is spent.
  int table_alloc(vm_level level) {
    const uint64_t used = uint64_t(t.tables.size()) * kVmTableBytes;
    if (used + kVmTableBytes > pool_bytes) return -1;
    vm_table tb;
    tb.pa = pool_pa + used;
    tb.level = level;
    t.tables.push_back(std::move(tb));
    return int(t.tables.size() - 1);
  }

  bool fail(size_t i, const vm_mapping &m, const std::string &what) {
    *err = "GPU page tables: mapping " + std::to_string(i) + " (VA " + hex(m.va) + ", PA " +
           hex(m.pa) + ", " + hex(m.size) + " bytes): " + what;
    return false;
  }

  bool map(size_t i, const vm_mapping &m) {
    for (uint64_t off = 0; off < m.size;) {
      const uint64_t va = m.va + off, pa = m.pa + off, left = m.size - off;
      int leaf = vm_ptb;
      for (int l = opt.largest_page; l < vm_ptb; ++l) {
        const uint64_t ps = level_bytes(l);
        if (va % ps == 0 && pa % ps == 0 && left >= ps) {
          leaf = l;
          break;
        }
      }
      size_t ti = 0;
      for (int l = vm_pdb2; l < leaf; ++l) {
        uint64_t &e = t.tables[ti].entries[level_index(l, va)];
        if (e == 0) {
          const int nt = table_alloc(vm_level(l + 1));
          if (nt < 0)
            return fail(i, m,
                        "the page-table pool at " + hex(pool_pa) + " (" + hex(pool_bytes) +
                            " bytes, " + std::to_string(pool_bytes / kVmTableBytes) +
                            " tables) is too small");
          t.tables[ti].entries[level_index(l, va)] = t.tables[size_t(nt)].pa | kPteValid;
          ti = size_t(nt);
        } else if (e & kPdePte) {
          return fail(
              i, m,
              "VA " + hex(va) + " overlaps an earlier mapping (a " + level_name(l) + " page)");
        } else {
          ti = size_t(((e & kPteAddressMask) - pool_pa) / kVmTableBytes);
        }
      }
      uint64_t &e = t.tables[ti].entries[level_index(leaf, va)];
      if (e != 0) return fail(i, m, "VA " + hex(va) + " overlaps an earlier mapping");
      e = (pa & kPteAddressMask) | m.flags | kPteValid |
          uint64_t(fragment_pick(m, va, opt.max_fragment)) << kPteFragmentShift |
          (leaf != vm_ptb ? kPdePte : 0);
      off += level_bytes(leaf);
    }
    return true;
  }
};

}  // namespace

size_t vm_tables::leaf_count() const {
  size_t n = 0;
  for (const vm_table &tb : tables)
    for (uint64_t e : tb.entries)
      if ((e & kPteValid) && (tb.level == vm_ptb || (e & kPdePte))) ++n;
  return n;
}

bool vm_tables_build(const std::vector<vm_mapping> &maps, uint64_t pool_pa, uint64_t pool_bytes,
                     const vm_options &opt, vm_tables *out, std::string *err) {
  *out = vm_tables{};
  if (pool_pa % kVmTableBytes || pool_pa >= kVmSpanBytes || pool_bytes > kVmSpanBytes - pool_pa) {
    *err = "GPU page tables: the pool at " + hex(pool_pa) + " (" + hex(pool_bytes) +
           " bytes) must start 4 KiB aligned inside the 48-bit address field";
    return false;
  }
  if (opt.largest_page < vm_pdb1 || opt.largest_page > vm_ptb || opt.max_fragment > 31) {
    *err = "GPU page tables: largest_page must be PDB1, PDB0 or PTB and max_fragment at most 31";
    return false;
  }
  builder b{opt, pool_pa, pool_bytes, {}, err};
  if (b.table_alloc(vm_pdb2) < 0) {
    *err = "GPU page tables: the pool at " + hex(pool_pa) + " has no room for the root table";
    return false;
  }
  b.t.root_pa = pool_pa;
  const uint64_t owned = kPteValid | kPteFragmentMask | kPdePte | kPteAddressMask;
  for (size_t i = 0; i < maps.size(); ++i) {
    const vm_mapping &m = maps[i];
    if (m.va % kVmPageBytes || m.pa % kVmPageBytes || m.size % kVmPageBytes || m.size == 0)
      return b.fail(i, m, "VA, PA and size must be non-zero multiples of 4 KiB");
    if (m.va >= kVmSpanBytes || m.size > kVmSpanBytes - m.va)
      return b.fail(i, m, "runs past the 48-bit VA span the 4-level tables cover");
    if (m.pa >= kVmSpanBytes || m.size > kVmSpanBytes - m.pa)
      return b.fail(i, m, "runs past the 48-bit address field of an entry");
    if (m.flags & owned)
      return b.fail(
          i, m,
          "flags " + hex(m.flags) + " carry bits the builder sets (" + hex(m.flags & owned) + ")");
    if (!b.map(i, m)) return false;
  }
  *out = std::move(b.t);
  return true;
}

bool vm_translate(const vm_read64 &read, uint64_t root_pa, uint64_t va, vm_walk *out,
                  std::string *err) {
  *out = vm_walk{};
  auto fault = [&](const std::string &what) {
    *err = "GPU page fault at VA " + hex(va) + ": " + what;
    return false;
  };
  if (va >= kVmSpanBytes) return fault("past the 48-bit span of the page tables");
  uint64_t table = root_pa;
  for (int l = vm_pdb2; l <= vm_ptb; ++l) {
    if (table % kVmTableBytes)
      return fault(std::string(level_name(l)) + " table at " + hex(table) +
                   " is not 4 KiB aligned");
    const uint32_t idx = level_index(l, va);
    uint64_t e = 0;
    if (!read(table + 8ull * idx, &e))
      return fault(std::string(level_name(l)) + " entry " + std::to_string(idx) + " at " +
                   hex(table + 8ull * idx) + " cannot be read");
    const std::string where = std::string(level_name(l)) + " entry " + std::to_string(idx) +
                              " of the table at " + hex(table);
    if (!(e & kPteValid)) return fault(where + " is not valid (" + hex(e) + ")");
    if (l == vm_ptb || (e & kPdePte)) {
      const uint64_t ps = level_bytes(l);
      const uint64_t base = e & kPteAddressMask;
      if (base & (ps - 1))
        return fault(where + " maps a " + hex(ps) + "-byte page at unaligned " + hex(base));
      out->pa = base + (va & (ps - 1));
      out->pte = e;
      out->level = vm_level(l);
      out->fragment = uint32_t((e & kPteFragmentMask) >> kPteFragmentShift);
      return true;
    }
    if (e & kPteSystem)
      return fault(where + " points to a table in system memory, which this walker does not read");
    table = e & kPteAddressMask;
  }
  return fault("no leaf");  // unreachable: PTB entries are leaves
}

}  // namespace capgraph::am
