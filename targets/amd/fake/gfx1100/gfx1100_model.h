// gfx1100_model — a register-model RX 7900 XTX (Navi31, gfx1100) for the
// tests: what the AM boot (drivers/am) touches, modelled as far as the
// public sources say, with the rules a real GPU enforces turned into checks
// that fail loudly (`faults`). It sits behind the emulated bridge as the
// PCIe endpoint's BARs (attach), or is driven directly (gfx1100_direct.h).
//
// What it models:
// - BAR0 VRAM (sparse, 256 MiB by default) with a generated IP discovery
//   table at VRAM end - 64 KiB (gfx1100's IP versions, Navi's register
//   bases); BAR2 doorbells; BAR5 registers (am_regs.h, the driver's table).
// - GMC: FB location (read-only), the system aperture and VM context 0 of
//   both hubs (MMHUB for the PSP, GC for CP and SDMA). A hub translates
//   nothing (a VM fault) until its L1 TLB (enable, system_access_mode 3,
//   advanced driver model) and L2 cache are on and its AGP aperture is
//   closed. Page tables take
//   effect only at an INVALIDATE_ENG17 request (the TLB holds the old ones
//   until then); every GPU address outside the aperture is walked through
//   the tables the driver wrote (am::vm_translate); SYSTEM pages reach the
//   bridge by bus-master DMA. A failed walk sets L2_PROTECTION_FAULT_STATUS
//   /ADDR and writes an IH ring entry (soc21 client VMC or GFX, src 0, the
//   page address in dwords 4/5, am_ih.h) and the write-pointer copy when
//   the IH ring is on.
// - HDP: a CPU write over BAR0 is unseen by the GPU until a write to the
//   HDP flush register at the address BIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL
//   names; a TLB invalidation, the PSP ring, a queue activation or a
//   doorbell with writes unflushed is a fault (detected, not a stale copy).
// - PSP (MP0 13.0.0): the bootloader mailbox checks the component order
//   (KDB, SPL table = KDB on MP0 13, SYS_DRV, SOS) and that each buffer
//   holds that component's bytes; the KM ring; LOAD_TOC (answers a TMR
//   size), LOAD_IP_FW (size and every byte against the synthetic files,
//   SMU before SETUP_TMR, the rest after), SETUP_TMR, AUTOLOAD_RLC (needs
//   every RLC/IMU/MEC/SDMA piece; sets RLC bootload_complete).
// - SMU (MP1): message/argument/response; answers once its firmware is
//   loaded; driver table address; debug-channel mode-1 reset.
// - GFX: GRBM_GFX_CNTL-banked HQD registers; the MEC starts only after RLC
//   autoload and with CP_MEC_RS64_PRGRM_CNTR_START = the MEC file's start
//   address >> 2; CP_HQD_ACTIVE needs a running MEC, a doorbell inside the
//   MEC doorbell range, SH_MEM_CONFIG/BASES set for VMID 0 (banked by
//   GRBM_GFX_CNTL.vmid) and translatable MQD/ring addresses; dequeue.
// - RLC: safe mode is acknowledged (cmd bit cleared) only once the RLC runs
//   (after autoload); clock-gating control written outside safe mode is a
//   fault.
// - SDMA queue 0: RB_CNTL.rb_enable needs SDMA firmware loaded, F32 not
//   halted and a translatable ring.
// - Queues run: an active HQD and SDMA queue 0 are handed to fake_amd's
//   packet interpreter (targets/amd, the fake-amd GPU's, with its RDNA3
//   emulator), over this model's VRAM at the VAs the driver mapped it
//   (every 2 MiB of the identity mapping is walked through the GC page
//   tables before the engine may use it); a doorbell in the queue's slot
//   runs them. A packet that touches unmapped memory is a GC VM fault.
// - SCRATCH registers survive a driver's exit (the model outlives it), so
//   partial boot and teardown are visible; power_cycle() loses everything.
// Not modelled: cache contents (stale HDP data is a fault instead), clock gating's effect, real
// firmware behaviour, authentication, the S2A doorbell routing registers beyond BAR5, timing.
// Sources: see am_regs.h, am_protocol.h, am_vm.h (the facts are shared with
// the driver and pinned by am_regs_test), usbgpu_am_plan.md §1.2-1.8, §5.5.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "am_regs.h"
#include "am_ucode.h"

namespace capgraph::amd {
class fake_gpu;
}

namespace capgraph::emu {

class PcieEndpoint;

class gfx1100_model {
 public:
  struct options {
    uint64_t vram_bytes = 256ull << 20;  // = the emulated endpoint's BAR0 (large BAR)
    uint64_t fb_base = 0x8000000000ull;  // MC address of VRAM (model choice)
    uint32_t tmr_bytes = 16u << 20;      // what LOAD_TOC answers
    // The packet interpreter runs kernels' host twins instead of their machine code (for the
    // fixture captures, whose code objects hold no real code).
    bool engine_twins = false;
  };
  explicit gfx1100_model(options o);
  gfx1100_model() : gfx1100_model(options{}) {}
  ~gfx1100_model();
  gfx1100_model(const gfx1100_model &) = delete;
  gfx1100_model &operator=(const gfx1100_model &) = delete;

  // BAR accesses; off in bytes from the BAR's start. bar: 0 VRAM, 2
  // doorbells, 5 registers (the endpoint's BAR indices 0, 1, 2).
  uint32_t bar_read32(int bar, uint64_t off);
  void bar_write32(int bar, uint64_t off, uint32_t v, uint8_t byte_en = 0xF);
  // Serves the endpoint's BARs from this model and routes bus-master DMA
  // through it.
  void attach(PcieEndpoint &ep);

  // Bus-master access upstream (the bridge SRAM and windows).
  std::function<bool(uint64_t bus, uint8_t *dst, size_t n)> dma_read;
  std::function<bool(uint64_t bus, const uint8_t *src, size_t n)> dma_write;

  void vram_read(uint64_t pa, void *dst, size_t n) const;
  void vram_write(uint64_t pa, const void *src, size_t n);
  uint32_t reg(am::reg r) const;
  const am::reg_map &regs() const { return map_; }
  uint64_t vram_bytes() const { return opt_.vram_bytes; }

  // The packet interpreter the queues run on: a capture's kernels are linked to it
  // (fake_gpu::capture_attach) by the HCQ transport a test puts over the driver.
  amd::fake_gpu &engine() { return *engine_; }

  // A power cycle: registers, engines and VRAM lost; the discovery table
  // comes back.
  void power_cycle();

  // The model as bytes (registers, PSP/SMU/GFX state, the VRAM pages that
  // are not zero; gfx1100_state.cpp), so a fake GPU can outlive its process
  // as a real one outlives the driver's. No packet-engine queues are kept:
  // a clean session ends with them stopped (teardown), a dirty one is reset
  // by the next boot. state_load refuses a truncated or corrupt image as a
  // whole (*err says why) and leaves the model power-cycled.
  std::vector<uint8_t> state_save() const;
  bool state_load(const uint8_t *p, size_t n, std::string *err);

  // How long the GPU takes: the compute queue runs this many ms (wall clock) after its doorbell,
  // when a later BAR access finds the time passed (0: at once). For the wait tests (issue 32).
  unsigned compute_delay_ms = 0;

  // Fault switches.
  bool psp_silent = false;  // the bootloader never says ready, the sOS never answers
  bool smu_silent = false;

  // What the boot did, one line per register write (by name) and per engine
  // event, in order: the golden trace.
  std::vector<std::string> trace;
  bool trace_on = true;
  // Rules the driver broke, in order (empty: none).
  std::vector<std::string> faults;

  // Observed state, for tests.
  bool sos_alive() const { return sos_alive_; }
  bool rlc_autoloaded() const { return rlc_autoload_; }
  bool mec_running() const { return mec_running_; }
  bool hqd_active(int me, int pipe, int queue) const;
  bool sdma_active() const { return sdma_active_; }
  // Queues a driver left running (active HQDs and SDMA queue 0): zero after a clean teardown.
  int64_t live_queues() const { return int64_t(hqd_active_.size()) + (sdma_active_ ? 1 : 0); }
  uint32_t mode1_resets = 0;
  std::vector<std::string> psp_loaded;  // LOAD_IP_FW piece names in order
  // Translate a GPU address as hub `gc` (false: MMHUB) does; false with a
  // reason on a page fault (which is also recorded as the hub's fault).
  bool gpu_translate(bool gc, uint64_t addr, uint64_t *pa, bool *system, std::string *why);
  bool gpu_read(bool gc, uint64_t addr, uint8_t *dst, size_t n, std::string *why);
  bool gpu_write(bool gc, uint64_t addr, const uint8_t *src, size_t n, std::string *why);
  // CPU writes over BAR0 not yet flushed through HDP.
  bool hdp_dirty() const { return hdp_dirty_; }
  bool rlc_safe_mode() const { return rlc_safe_mode_; }

 private:
  struct expected_piece {
    std::string name;
    std::vector<uint8_t> bytes;
  };
  options opt_;
  am::reg_map map_;
  std::unordered_map<uint32_t, uint32_t> regs_;
  std::map<uint32_t, uint32_t> hqd_regs_;  // key: bank << 16 | offset in the HQD run
  struct vram_free {
    void operator()(uint8_t *p) const;
  };
  std::unique_ptr<uint8_t, vram_free> vram_;  // calloc'ed: untouched pages cost nothing
  std::unique_ptr<amd::fake_gpu> engine_;     // the packet interpreter the queues run on
  bool engine_vram_ = false;                  // VRAM attached to it, at engine_va_
  uint64_t engine_va_ = 0;
  std::map<uint32_t, uint64_t> engine_hqd_;  // HQD bank -> engine queue
  uint64_t engine_sdma_ = 0;
  std::string engine_fault_seen_;
  std::vector<uint8_t> discovery_;
  // Expected firmware, from the synthetic files.
  std::map<uint32_t, std::vector<uint8_t>> sos_bins_;  // psp_fw_type -> bytes
  std::map<uint32_t, expected_piece> pieces_;          // gfx_fw_type -> piece
  uint64_t mec_start_ = 0;

  // Engine state.
  bool sos_alive_ = false, bl_busy_forever_ = false, ring_ready_ = false;
  std::vector<uint32_t> bl_done_;  // bootloader commands accepted, in order
  uint32_t psp_rptr_ = 0;
  bool toc_loaded_ = false, tmr_set_ = false, smu_fw_ = false, rlc_autoload_ = false;
  std::set<uint32_t> fw_loaded_;
  bool smu_dram_hi_ = false, smu_dram_lo_ = false, smu_features_ = false;
  bool mec_running_ = false, sdma_active_ = false;
  std::set<uint32_t> hqd_active_;
  uint64_t root_latched_[2] = {0, 0};
  bool latched_[2] = {false, false};
  bool hdp_dirty_ = false, rlc_safe_mode_ = false;

  bool compute_pending_ = false;  // a compute doorbell waiting out compute_delay_ms
  std::chrono::steady_clock::time_point compute_due_;
  void compute_run_if_due();
  void reset_state();
  void fault(const std::string &what);
  void log(const std::string &line);
  uint32_t reg_read(uint32_t addr);
  void reg_write(uint32_t addr, uint32_t v);
  uint32_t hqd_bank() const;
  uint32_t hqd_get(uint32_t reg_addr_offset) const;
  void psp_bootloader(uint32_t cmd);
  void psp_ring_ctrl(uint32_t v);
  void psp_ring_run(uint32_t wptr);
  uint32_t psp_command(uint64_t cmd_mc, uint32_t *tmr_size);
  bool psp_check_bytes(uint64_t gpu_addr, const std::vector<uint8_t> &want, size_t n,
                       const char *what);
  void smu_message(uint32_t msg);
  void gc_invalidate(bool gc, uint32_t req);
  void mec_cntl(uint32_t v);
  void hqd_activate();
  void sdma_enable(uint32_t v);
  void vm_fault(bool gc, uint64_t addr, const std::string &why);
  bool hub_ready(bool gc, std::string *why) const;
  bool hdp_check(const char *reader);
  uint32_t sh_mem_key(uint32_t addr) const;
  bool gpu_access(bool gc, uint64_t addr, uint8_t *p, size_t n, bool write, std::string *why);
  bool engine_vram_attach();
  volatile uint64_t *engine_word(uint64_t va, const char *what);
  void engine_run(const char *which);
  void discovery_write();
};

}  // namespace capgraph::emu
