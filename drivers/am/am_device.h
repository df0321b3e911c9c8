// am_device — boots an RX 7900 XTX (gfx1100) that no kernel driver owns,
// over an am::pci_function (the USB bridge, or the fake GPU in tests), the
// way tinygrad's AM driver does (usbgpu_am_plan.md §1.2-1.8): discovery,
// the HDP flush remap, MMHUB (AGP off, system aperture, default and dummy
// pages, L1 TLB, L2 cache, VM context 0) and its page tables (GMMU=0: all of
// VRAM mapped once, plus the staging window), IH ring, PSP (bootloader: KDB, SPL, SYS_DRV, SOS; KM
// ring; LOAD_TOC, SMU firmware, SETUP_TMR, every LOAD_IP_FW piece, AUTOLOAD_RLC), SMU (driver
// table, features), GC hub (as the MM hub), MEC started directly (no MES) after the RLC/TCP setup
// and SH_MEM for VMID 0, one compute queue programmed into its HQD registers, SDMA queue 0, then
// GFX clock gating inside RLC safe mode. Every CPU write of VRAM over BAR0 is followed by an HDP
// flush before the GPU is told to read it (a TLB invalidation, the PSP's write pointer, a queue's
// activation or doorbell).
//
// A previous session that ended cleanly (SCRATCH_REG7 = the AM magic,
// SCRATCH_REG6 = 0, no VM fault pending) is reused: a partial boot sets up
// only the GC hub, the MEC and the two queues. A GPU whose PSP is alive but
// cannot be reused is mode-1 reset first. Every poll is bounded
// (options.timeout_ms) and a timeout names the step and reads out the PSP,
// SMU and VM fault registers and the IH ring's new entries, decoded (am_ih.h). teardown() dequeues
// and stops the queues and marks the session clean.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "am_chip.h"
#include "am_firmware.h"
#include "am_pci.h"
#include "am_regs.h"
#include "am_vm.h"

namespace capgraph::am {

struct device_options {
  std::string
      firmware_dir;  // empty: firmware_dir() ($CAPGRAPH_AMD_FIRMWARE or /lib/firmware/amdgpu)
  unsigned timeout_ms = 2000;  // each poll (tinygrad's wait_cond uses 10 s)
  bool force_cold = false;     // never a partial boot
};

// Where the boot puts things: physical VRAM offsets (the boot allocator of
// tinygrad's AM, fixed so a partial boot finds them again) and GPU VAs.
struct device_layout {
  static constexpr uint64_t page_tables = 0x000000, page_table_bytes = 0x10000;
  static constexpr uint64_t psp_cmd = 0x010000, psp_fence = 0x011000;
  static constexpr uint64_t smu_table = 0x012000;  // 16 KiB
  static constexpr uint64_t mqd = 0x016000;
  static constexpr uint64_t queue_words =
      0x017000;  // rptr/wptr words: compute @0/8, SDMA @0x100/0x108, IH @0x200
  static constexpr uint64_t eop = 0x018000, eop_bytes = 0x1000;
  static constexpr uint64_t compute_ring = 0x019000, compute_ring_bytes = 0x2000;
  // The hubs' system-aperture default page and protection-fault dummy page
  // (tinygrad AM_GMC.init_sw memscratch / dummy_page, one 4 KiB page each).
  static constexpr uint64_t gmc_scratch = 0x01B000, gmc_dummy = 0x01C000;
  static constexpr uint64_t psp_ring = 0x020000, psp_ring_bytes = 0x10000;
  static constexpr uint64_t ih_ring = 0x040000, ih_ring_bytes = 0x40000;
  static constexpr uint64_t sdma_ring = 0x080000, sdma_ring_bytes = 0x10000;
  static constexpr uint64_t tmr = 0x100000;  // up to kPspTmrMaxBytes, 1 MiB aligned
  static constexpr uint64_t free_start = 0x1400000;
  // VM context 0 starts at vm_base; VRAM is at vm_base + physical offset,
  // the staging window (bridge SRAM, SYSTEM pages) at staging_va.
  static constexpr uint64_t vm_base = 0x100000000000ull, vm_end = 0x7FFFFFFFFFFFull;
  static constexpr uint64_t staging_va = vm_base + 0x10000000000ull;
  // The page holding the bridge's copy-out trigger (pci_function::
  // staging_trigger_bus_addr), SYSTEM like the staging window and in the
  // same page table, 1 MiB above it; and the VRAM dword the transport's SDMA
  // copies signal their completion in (beside the queue words).
  static constexpr uint64_t staging_trigger_page_va = staging_va + 0x100000;
  static constexpr uint64_t copy_fence = queue_words + 0x300;
};

struct boot_stats {
  bool partial = false;
  uint32_t mode1_resets = 0;
  uint64_t reg_reads = 0, reg_writes = 0;  // BAR5 dword accesses
  uint64_t vram_bytes_written = 0, vram_bytes_read = 0;
  uint64_t staged_bytes = 0;  // firmware through the staging window
  uint64_t hdp_flushes = 0;   // register writes that made CPU VRAM writes visible to the GPU
};

class device {
 public:
  device(pci_function &pci, device_options opt = {});
  // Full or partial boot. False with a message naming the step; the GPU is
  // left marked dirty (SCRATCH_REG6 != 0) so the next boot is a cold one.
  bool boot(std::string *err);
  // Stops the queues and marks the session clean; false when the GPU did
  // not answer (the message says which step).
  bool teardown(std::string *err);

  const boot_stats &stats() const { return stats_; }
  const chip &chip_info() const { return chip_; }
  uint64_t vram_bytes() const { return vram_bytes_; }
  uint64_t fb_base() const { return fb_base_; }
  static uint64_t vram_va(uint64_t pa) { return device_layout::vm_base + pa; }

  // Puts command words on the compute queue (PM4; sdma: SDMA packets on
  // SDMA queue 0) in VRAM, publishes the write pointer in VRAM and rings
  // the queue's doorbell. SDMA packets may not wrap: the ring's tail is
  // filled with zero words (SDMA NOPs) first. False with a message naming
  // the queue on a transfer error or a submission larger than the ring.
  bool queue_submit(bool sdma, const uint32_t *words, size_t n, std::string *err);
  // queue_submit in two steps, for a submission that must be published
  // while the bridge has a staging read armed (then the armed read owns the
  // bulk IN pipe, so nothing may use it before the collect): the ring words
  // first, then the write pointer and the doorbell, `without_bulk` through
  // pci_function::bar_write_without_bulk.
  bool queue_write(bool sdma, const uint32_t *words, size_t n, std::string *err);
  bool queue_kick(bool sdma, bool without_bulk, std::string *err);
  // Polls the 64-bit word at VRAM offset pa until it is >= target, at most
  // timeout_ms; the timeout message reads out the fault registers.
  bool wait_vram64(uint64_t pa, uint64_t target, unsigned timeout_ms, std::string *err);

  // Reads or writes bytes of VRAM at physical offset pa through BAR0 (the
  // whole VRAM is the large BAR); for the HCQ transport's uploads and
  // downloads. False with a message naming the offset.
  bool vram_copy_in(uint64_t pa, const void *p, size_t bytes, std::string *err);
  bool vram_copy_out(uint64_t pa, void *p, size_t bytes, std::string *err);
  bool booted() const { return booted_; }
  // The GPU VA of the copy-out trigger (0: the PCI function has none), and
  // the PCI function, for the transport's copies through the staging window.
  uint64_t staging_trigger_va() const {
    const uint64_t t = pci_.staging_trigger_bus_addr();
    return t ? device_layout::staging_trigger_page_va + (t & 0xFFF) : 0;
  }
  pci_function &pci() { return pci_; }

  // Register access by name, counted; for tests and the transport.
  bool rreg(reg r, uint32_t *v);
  // Sleeps until the 64-bit value at VRAM pa reaches target (wrap-safe) or register fault_reg
  // reads non-zero, when the PCI function can watch for it (pci_function::watch64: the USB
  // bridge's firmware); `unsupported` otherwise, and the caller polls.
  pci_function::watch_outcome vram_watch64(uint64_t pa, uint64_t target, reg fault_reg,
                                           unsigned timeout_ms, uint64_t *value, uint32_t *fault,
                                           std::string *err);
  bool wreg(reg r, uint32_t v);

 private:
  pci_function &pci_;
  device_options opt_;
  reg_map regs_;
  chip chip_;
  std::vector<firmware_file> files_;
  uint64_t vram_bytes_ = 0, fb_base_ = 0, mec_start_ = 0;
  boot_stats stats_;
  std::string step_;  // what the boot is doing, for messages
  std::string err_;
  bool booted_ = false;
  uint64_t compute_wptr_ = 0;            // dwords
  uint64_t sdma_wptr_ = 0;               // bytes
  uint64_t kicked_wptr_[2] = {0, 0};     // compute, SDMA: the write pointer last published
  bool queue_lost_[2] = {false, false};  // a kick failed: the GPU's view of the queue is unknown
  bool hdp_dirty_ = false;               // VRAM written over BAR0 since the last HDP flush
  // VRAM moves go through this, allocated once with the device, not a vector per call: replay
  // must not allocate. 1 MiB, so an input the size of resnet18's (602,112 B) is one BAR transfer
  // call (each call ends its TLP stream: smaller chunks cost USB transfers, see README).
  std::vector<uint32_t> staging_ = std::vector<uint32_t>(1u << 18);

  bool fail(const std::string &what);
  bool poll(reg r, uint32_t mask, uint32_t want, const char *what);
  bool vram_write(uint64_t pa, const void *p, size_t bytes);
  bool vram_read(uint64_t pa, void *p, size_t bytes);
  std::string fault_readout();
  std::string ih_readout();
  bool hdp_flush(bool without_bulk = false);
  uint64_t mc(uint64_t pa) const { return fb_base_ + pa; }

  bool discover();
  bool firmware_load();
  bool mode1_reset();
  bool soc_init();
  bool hub_init(bool gc);
  bool tlb_flush(bool gc);
  bool page_tables_write();
  bool ih_init();
  bool psp_boot();
  bool psp_stage(const uint8_t *p, size_t n);
  bool psp_submit(uint32_t cmd_id, const uint32_t *args, size_t nargs, uint32_t *tmr_size);
  bool smu_init();
  bool smu_msg(uint32_t msg, uint32_t arg, uint32_t *out);
  bool gfx_init(bool partial);
  bool rlc_setup();
  bool clock_gating_set();
  bool compute_queue_init();
  bool sdma_init();
};

}  // namespace capgraph::am
