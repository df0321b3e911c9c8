// am_vm — the GPU page tables of the AM driver's "GMMU=0" memory model: a few
// fixed mappings made once at boot (all of VRAM, contiguous, at one VA base;
// later a few bus windows), never remapped, so boot writes a handful of
// tables over USB and replay writes none. vm_tables_build is a pure function
// from mappings to the tables' contents; vm_translate walks tables the way
// the GPU's walker does and is what the fake GPU uses to check every address
// through the tables the driver actually wrote.
//
// Sources (gfx11, GMC v11 / MMHUB 3.0 / GC 11.0 VM context 0):
// - Levels PDB2 -> PDB1 -> PDB0 -> PTB, 9 bits each above the 4 KiB page
//   (shifts 39/30/21/12, 512 entries of 8 bytes per 4 KiB table, 48-bit VA):
//   Linux amdgpu_vm.h enum amdgpu_vm_level; gmc_v11_0.c sets
//   amdgpu_vm_adjust_size(adev, 256 * 1024, 9, 3, 48) (block size 9, 3
//   levels of directories, 48 bits); tinygrad AM (VM_CONTEXT0_CNTL
//   page_table_depth 3, block size 0), usbgpu_am_plan.md §1.2-1.3.
// - Entry bits, Linux amdgpu_vm.h: VALID 0, SYSTEM 1, SNOOPED 2, TMZ 3,
//   EXECUTABLE 4, READABLE 5, WRITEABLE 6, FRAG 7-11 (a block of 2^frag
//   4 KiB pages, aligned and contiguous, the TLB may cache as one),
//   PRT 51, PDE_PTE 54 (a directory entry that is itself a page),
//   MTYPE_NV10 48-50 (soc21 MTYPE: NC 0, WC 1, CC 2, UC 3); the address of
//   the next table or of the page is in bits 12-47 (gmc_v11_0_get_vm_pde
//   BUG_ON(addr & 0xFFFF00000000003F)). A directory entry pointing to a
//   table in VRAM carries only VALID (amdgpu_vm_pt.c amdgpu_vm_pde_update).
// - Huge pages: Linux uses PDE_PTE at PDB0 (2 MiB); tinygrad's AM also at
//   PDB1 (1 GiB; AMPageTableEntry.supports_huge_page, run on gfx11
//   hardware). vm_options::largest_page picks; 1 GiB is the default because
//   it makes the whole of a 24 GiB VRAM a few dozen entries.
// - Fragment: Linux caps it at vm_manager.fragment_size, 9 (2 MiB) for
//   gfx11 (amdgpu_vm_pte_fragment); tinygrad does not cap it. Capped here,
//   at 9 by default.
// - Walk: the walker indexes from VM_CONTEXT0_PAGE_TABLE_START, i.e. VAs
//   here are offsets from that start (tinygrad PageTableTraverseContext
//   subtracts va_base). Addresses in entries are VRAM physical offsets
//   (gmc_v11_0_get_vm_pde turns MC addresses into them), or bus addresses
//   when SYSTEM is set.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace capgraph::am {

enum vm_level : int { vm_pdb2 = 0, vm_pdb1 = 1, vm_pdb0 = 2, vm_ptb = 3 };
constexpr int kVmLevelShift[4] = {39, 30, 21, 12};
constexpr uint32_t kVmTableEntries = 512;
constexpr uint64_t kVmTableBytes = 4096;
constexpr uint64_t kVmPageBytes = 4096;
constexpr uint64_t kVmSpanBytes = 1ull << 48;  // what the root's 512 entries cover

constexpr uint64_t kPteValid = 1ull << 0;
constexpr uint64_t kPteSystem = 1ull << 1;
constexpr uint64_t kPteSnooped = 1ull << 2;
constexpr uint64_t kPteTmz = 1ull << 3;
constexpr uint64_t kPteExecutable = 1ull << 4;
constexpr uint64_t kPteReadable = 1ull << 5;
constexpr uint64_t kPteWriteable = 1ull << 6;
constexpr int kPteFragmentShift = 7;
constexpr uint64_t kPteFragmentMask = 0x1full << kPteFragmentShift;
constexpr int kPteMtypeShift = 48;
constexpr uint64_t kPteMtypeMask = 7ull << kPteMtypeShift;
constexpr uint64_t kPtePrt = 1ull << 51;
constexpr uint64_t kPdePte = 1ull << 54;
constexpr uint64_t kPteAddressMask = 0x0000FFFFFFFFF000ull;

enum vm_mtype : uint64_t { mtype_nc = 0, mtype_wc = 1, mtype_cc = 2, mtype_uc = 3 };
constexpr uint64_t pte_mtype(vm_mtype m) { return uint64_t(m) << kPteMtypeShift; }

// Read/write/execute VRAM, uncached: what the GMMU=0 VRAM mapping uses.
constexpr uint64_t kPteVramDefault =
    kPteReadable | kPteWriteable | kPteExecutable | (uint64_t(mtype_uc) << 48);

// One contiguous mapping: [va, va + size) -> [pa, pa + size). va is an offset
// from the context's PAGE_TABLE_START; pa a VRAM offset, or a bus address
// when flags has kPteSystem. flags are the page bits to set (permissions,
// SYSTEM/SNOOPED, MTYPE); valid, fragment, PDE_PTE and the address are the
// builder's.
struct vm_mapping {
  uint64_t va = 0, pa = 0, size = 0;
  uint64_t flags = kPteVramDefault;
};

struct vm_options {
  vm_level largest_page = vm_pdb1;  // vm_pdb1: 1 GiB pages allowed; vm_pdb0: 2 MiB at most
  uint32_t max_fragment = 9;        // 0..31
};

// One 4 KiB table and all 512 of its entries (unused ones zero, i.e.
// invalid): writing the whole table leaves no stale VRAM behind it.
struct vm_table {
  uint64_t pa = 0;
  vm_level level = vm_pdb2;
  std::vector<uint64_t> entries = std::vector<uint64_t>(kVmTableEntries, 0);
};

struct vm_tables {
  uint64_t root_pa = 0;          // for VM_CONTEXT0_PAGE_TABLE_BASE
  std::vector<vm_table> tables;  // root first, then in the order allocated
  size_t leaf_count() const;     // entries that map pages (at any level)
};

// Lays out the tables for the mappings, taking 4 KiB tables one after the
// other from [pool_pa, pool_pa + pool_bytes) (VRAM). Each piece of a mapping
// gets the largest page its VA and PA alignment and the bytes left allow,
// and the largest fragment (up to max_fragment) whose aligned block lies
// inside the mapping. False with a message naming the mapping and the field
// when an address or size is not 4 KiB aligned, a mapping runs past the
// 48-bit span, two mappings overlap, flags carry bits the builder owns, or
// the pool is too small (and how many tables were needed).
bool vm_tables_build(const std::vector<vm_mapping> &maps, uint64_t pool_pa, uint64_t pool_bytes,
                     const vm_options &opt, vm_tables *out, std::string *err);

// Reads the 8-byte entry at a VRAM offset; false when it cannot (outside VRAM).
using vm_read64 = std::function<bool(uint64_t pa, uint64_t *value)>;

struct vm_walk {
  uint64_t pa = 0;   // the translated address (bus address when kPteSystem)
  uint64_t pte = 0;  // the entry that mapped it
  vm_level level = vm_ptb;
  uint32_t fragment = 0;
};

// Translates a VA as the GPU walker does, from the root table at root_pa.
// False (a page fault) with a message naming the VA, the level, the table
// and the entry when an entry is invalid, a table address is misaligned or
// unreadable, or the VA is past the 48-bit span.
bool vm_translate(const vm_read64 &read, uint64_t root_pa, uint64_t va, vm_walk *out,
                  std::string *err);

}  // namespace capgraph::am
