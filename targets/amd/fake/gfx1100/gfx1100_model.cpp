#include "gfx1100_model.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "am_discovery.h"
#include "am_firmware.h"
#include "am_firmware_synthetic.h"
#include "am_ih.h"
#include "am_protocol.h"
#include "am_vm.h"
#include "amd_chips.h"
#include "fake_amd.h"
#include "pcie_endpoint.h"

namespace capgraph::emu {

std::vector<uint8_t> gfx1100_discovery_binary();

using namespace am;

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}
uint32_t get32(const uint8_t *p) {
  return uint32_t(p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24);
}

// Field bits (gc_11_0_0_sh_mask.h, mmhub_3_0_0_sh_mask.h).
constexpr uint32_t kRs64Pipe0Reset = 1u << 16, kRs64Pipe0Active = 1u << 26, kRs64Halt = 1u << 30;
constexpr uint32_t kDoorbellEn = 1u << 30;
constexpr uint32_t kSdmaRbEnable = 1u << 0, kSdmaF32Halt = 1u << 0;
constexpr uint32_t kIhRbEnable = 1u << 0;
constexpr uint32_t kSoftResetSdma0 = 1u << 23, kSoftResetCp = 1u << 0;
constexpr uint32_t kBootloadComplete = 1u << 31;
constexpr uint32_t kFaultMappingError = 1u << 8;
constexpr uint32_t kIhWptrWriteback = 1u << 8;
// RLC_SAFE_MODE cmd (bit 0) and message (4:1); SH_MEM_CONFIG address_mode
// (bit 0, 0 = 64-bit) and alignment_mode (3:2, 3 = unaligned) (gc_11_0_0_sh_mask.h,
// soc21 enums). MC_VM_MX_L1_TLB_CNTL enable_l1_tlb 0, system_access_mode 4:3,
// enable_advanced_driver_model 6; VM_L2_CNTL enable_l2_cache 0.
constexpr uint32_t kRlcSafeModeCmd = 1u;
constexpr uint32_t kL1TlbEnable = 1u, kL1TlbAdvancedDriverModel = 1u << 6, kL2CacheEnable = 1u;
// VM faults land in the IH ring as soc21 client VMC (MM hub) or GFX (the GC
// hub's UTCL2), src id 0, VMID in dword 0 bits 27:24, the page address in
// dwords 4/5 (am_ih.h, from Linux amdgpu_ih_decode_iv_helper and
// gmc_v11_0_process_interrupt).

const char *bl_name(uint32_t cmd) {
  switch (cmd) {
    case psp_bl_load_key_database: return "LOAD_KEY_DATABASE";
    case psp_bl_load_tos_spl_table: return "LOAD_TOS_SPL_TABLE";
    case psp_bl_load_sysdrv: return "LOAD_SYSDRV";
    case psp_bl_load_sosdrv: return "LOAD_SOSDRV";
    default: return "?";
  }
}

}  // namespace

gfx1100_model::gfx1100_model(options o) : opt_(o) {
  discovery_ = gfx1100_discovery_binary();
  discovery_table t;
  std::string err;
  if (!discovery_parse(discovery_.data(), discovery_.size(), &t, &err) ||
      !reg_map_build(t, &map_, &err))
    fault("model: own discovery table: " + err);
  // What the PSP must be handed: the synthetic files' pieces.
  firmware_file f;
  if (firmware_parse("psp_13_0_0_sos.bin", synthetic_firmware_file("psp_13_0_0_sos.bin"), &f,
                     &err)) {
    for (const psp_bin &b : f.psp_bins)
      sos_bins_[b.fw_type] =
          std::vector<uint8_t>(f.bytes.begin() + b.offset, f.bytes.begin() + b.offset + b.size);
  } else {
    fault("model: synthetic sOS: " + err);
  }
  for (const char *name : {"smu_13_0_0.bin", "sdma_6_0_0.bin", "gc_11_0_0_mec.bin",
                           "gc_11_0_0_imu.bin", "gc_11_0_0_rlc.bin"}) {
    ucode_file_pieces p;
    if (!firmware_parse(name, synthetic_firmware_file(name), &f, &err) ||
        !ucode_locate(f, &p, &err)) {
      fault(std::string("model: synthetic ") + name + ": " + err);
      continue;
    }
    for (const ucode_piece &u : p.pieces)
      pieces_[u.fw_type] = {u.name, std::vector<uint8_t>(f.bytes.begin() + u.offset,
                                                         f.bytes.begin() + u.offset + u.size)};
    if (p.mec_ucode_start) mec_start_ = p.mec_ucode_start;
  }
  power_cycle();
}

gfx1100_model::~gfx1100_model() = default;

void gfx1100_model::vram_free::operator()(uint8_t *p) const { std::free(p); }

void gfx1100_model::reset_state() {
  regs_.clear();
  hqd_regs_.clear();
  sos_alive_ = bl_busy_forever_ = ring_ready_ = false;
  compute_pending_ = false;
  bl_done_.clear();
  psp_rptr_ = 0;
  toc_loaded_ = tmr_set_ = smu_fw_ = rlc_autoload_ = false;
  fw_loaded_.clear();
  smu_dram_hi_ = smu_dram_lo_ = smu_features_ = false;
  mec_running_ = sdma_active_ = false;
  hqd_active_.clear();
  latched_[0] = latched_[1] = false;
  hdp_dirty_ = rlc_safe_mode_ = false;
  engine_ = std::make_unique<amd::fake_gpu>(
      *amd::chip_find("gfx1100"),
      opt_.engine_twins ? amd::fake_mode::twin : amd::fake_mode::emulate);
  // The engine's SDMA reaches SYSTEM pages (the bridge SRAM and windows) through the GC walk
  // and bus-master DMA, as the GPU's does; a failed walk is a GC VM fault (gpu_read/gpu_write).
  engine_->bus_access = [this](uint64_t va, uint8_t *p, size_t n, bool write) {
    std::string why;
    return write ? gpu_write(true, va, p, n, &why) : gpu_read(true, va, p, n, &why);
  };
  engine_vram_ = false;
  engine_hqd_.clear();
  engine_sdma_ = 0;
  engine_fault_seen_.clear();
  // Read-only state a cold GPU presents.
  regs_[map_[regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE]] = uint32_t(opt_.vram_bytes >> 20);
  const uint32_t fb_lo = uint32_t(opt_.fb_base >> 24),
                 fb_hi = uint32_t((opt_.fb_base + opt_.vram_bytes - 1) >> 24);
  regs_[map_[regMMMC_VM_FB_LOCATION_BASE]] = regs_[map_[regGCMC_VM_FB_LOCATION_BASE]] = fb_lo;
  regs_[map_[regMMMC_VM_FB_LOCATION_TOP]] = regs_[map_[regGCMC_VM_FB_LOCATION_TOP]] = fb_hi;
  regs_[map_[regCP_MEC_RS64_CNTL]] = kRs64Halt;
  regs_[map_[regSDMA0_F32_CNTL]] = kSdmaF32Halt;
}

void gfx1100_model::power_cycle() {
  reset_state();
  vram_.reset(static_cast<uint8_t *>(std::calloc(opt_.vram_bytes, 1)));
  vram_write(opt_.vram_bytes - kDiscoveryOffsetFromVramEnd, discovery_.data(), discovery_.size());
}

void gfx1100_model::fault(const std::string &what) {
  faults.push_back(what);
  log("FAULT " + what);
}

void gfx1100_model::log(const std::string &line) {
  if (trace_on) trace.push_back(line);
}

// ---- VRAM -----------------------------------------------------------------

// Bytes past the end of VRAM read as 0 and are not written (they decode to
// nothing on a real GPU either).
void gfx1100_model::vram_read(uint64_t pa, void *dst, size_t n) const {
  auto *d = static_cast<uint8_t *>(dst);
  const size_t in = pa >= opt_.vram_bytes ? 0 : size_t(std::min<uint64_t>(n, opt_.vram_bytes - pa));
  std::memcpy(d, vram_.get() + pa, in);
  std::memset(d + in, 0, n - in);
}

void gfx1100_model::vram_write(uint64_t pa, const void *src, size_t n) {
  const size_t in = pa >= opt_.vram_bytes ? 0 : size_t(std::min<uint64_t>(n, opt_.vram_bytes - pa));
  std::memcpy(vram_.get() + pa, src, in);
}

// ---- BARs -----------------------------------------------------------------

void gfx1100_model::compute_run_if_due() {
  if (compute_pending_ && std::chrono::steady_clock::now() >= compute_due_) {
    compute_pending_ = false;
    engine_run("compute");
  }
}

uint32_t gfx1100_model::bar_read32(int bar, uint64_t off) {
  compute_run_if_due();
  if (bar == 0) {
    uint32_t v = 0;
    vram_read(off, &v, 4);
    return v;
  }
  if (bar == 5) return reg_read(uint32_t(off >> 2));
  return 0;  // doorbells read as 0
}

void gfx1100_model::bar_write32(int bar, uint64_t off, uint32_t v, uint8_t byte_en) {
  compute_run_if_due();
  if (bar == 0) {
    // A CPU write over the BAR passes the host data path (HDP): the GPU's
    // engines see it only after an HDP flush (hdp_check).
    hdp_dirty_ = true;
    uint8_t b[4];
    vram_read(off, b, 4);
    for (int i = 0; i < 4; ++i)
      if (byte_en & (1 << i)) b[i] = uint8_t(v >> (8 * i));
    vram_write(off, b, 4);
  } else if (bar == 5) {
    reg_write(uint32_t(off >> 2), v);
  } else if (bar == 2) {
    // Doorbells are 64-bit slots; the queues would run here (issue 14, HCQ).
    if (off & 4) return;  // the high half of a 64-bit slot: the low half was checked
    if (!(reg(regRCC_DEV0_EPF0_RCC_DOORBELL_APER_EN) & 1)) {
      fault("doorbell write at " + hex(off) +
            " with the doorbell aperture off (RCC_DOORBELL_APER_EN)");
      return;
    }
    log("doorbell " + hex(off >> 3) + " = " + hex(v));
    if (off >> 3 == kDoorbellMecRing0) {
      if (!compute_delay_ms) {
        engine_run("compute");
      } else if (!compute_pending_) {  // a doorbell while one is pending runs with it
        compute_pending_ = true;
        compute_due_ =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(compute_delay_ms);
      }
    }
    if (off >> 3 == kDoorbellSdma0) engine_run("SDMA");
  }
}

void gfx1100_model::attach(PcieEndpoint &ep) {
  static const int kBar[3] = {0, 2, 5};
  ep.bar_read_hook = [this](int i, uint64_t off, uint32_t *v) {
    *v = bar_read32(kBar[i], off);
    return true;
  };
  ep.bar_write_hook = [this](int i, uint64_t off, uint32_t v, uint8_t be) {
    bar_write32(kBar[i], off, v, be);
  };
  dma_read = [&ep](uint64_t a, uint8_t *d, size_t n) {
    return ep.dma_read && ep.dma_read(a, d, n);
  };
  dma_write = [&ep](uint64_t a, const uint8_t *s, size_t n) {
    return ep.dma_write && ep.dma_write(a, s, n);
  };
}

// ---- registers ------------------------------------------------------------

uint32_t gfx1100_model::reg(am::reg r) const {
  auto it = regs_.find(map_[r]);
  return it == regs_.end() ? 0 : it->second;
}

uint32_t gfx1100_model::hqd_bank() const {
  // GRBM_GFX_CNTL: pipeid 1:0, meid 3:2, queueid 10:8 (gc_11_0_0_sh_mask.h).
  auto it = regs_.find(map_[regGRBM_GFX_CNTL]);
  const uint32_t v = it == regs_.end() ? 0 : it->second;
  return (v & 0xF) | ((v >> 8) & 7) << 4;
}

uint32_t gfx1100_model::hqd_get(uint32_t off) const {
  auto it = hqd_regs_.find(hqd_bank() << 16 | off);
  return it == hqd_regs_.end() ? 0 : it->second;
}

bool gfx1100_model::hqd_active(int me, int pipe, int queue) const {
  return hqd_active_.count(uint32_t(pipe | me << 2 | queue << 4)) != 0;
}

uint32_t gfx1100_model::reg_read(uint32_t a) {
  const uint32_t gc0 = map_[regCP_MQD_BASE_ADDR];
  if (a >= gc0 && a < gc0 + kHqdRegCount) {
    if (a == map_[regCP_HQD_ACTIVE]) return hqd_active_.count(hqd_bank()) ? 1 : 0;
    return hqd_get(a - gc0);
  }
  if (a == map_[regMP0_SMN_C2PMSG_35]) return (psp_silent || bl_busy_forever_) ? 0 : kPspBlReady;
  if (a == map_[regMP0_SMN_C2PMSG_81]) return (sos_alive_ && !psp_silent) ? 0x1 : 0;
  // C2PMSG_64: bit 31 = the sOS takes ring commands; the low 16 bits the
  // last command's status (always 0 here).
  if (a == map_[regMP0_SMN_C2PMSG_64]) return (sos_alive_ && !psp_silent) ? kPspBlReady : 0;
  if (a == map_[regMMVM_INVALIDATE_ENG17_SEM]) return 1;  // acquired
  if (a == map_[regRLC_RLCS_BOOTLOAD_STATUS]) return rlc_autoload_ ? kBootloadComplete : 0;
  if (a == map_[regCP_STAT]) return 0;
  if (a == map_[regSH_MEM_CONFIG] || a == map_[regSH_MEM_BASES]) a = sh_mem_key(a);
  auto it = regs_.find(a);
  return it == regs_.end() ? 0 : it->second;
}

void gfx1100_model::reg_write(uint32_t a, uint32_t v) {
  const am::reg r = reg_find(map_, a);
  const uint32_t gc0 = map_[regCP_MQD_BASE_ADDR];
  if (a >= gc0 && a < gc0 + kHqdRegCount) {
    if (a == map_[regCP_HQD_ACTIVE] || a == map_[regCP_HQD_DEQUEUE_REQUEST]) {
      log("w " + std::string(r == reg_count ? hex(a) : reg_info(r).name) + " = " + hex(v));
      if (a == map_[regCP_HQD_ACTIVE] && (v & 1)) hqd_activate();
      const bool stop =
          (a == map_[regCP_HQD_ACTIVE] && !(v & 1)) || (a == map_[regCP_HQD_DEQUEUE_REQUEST] && v);
      if (stop && hqd_active_.erase(hqd_bank()) && a == map_[regCP_HQD_DEQUEUE_REQUEST])
        log("hqd dequeued");
      if (stop && engine_hqd_.count(hqd_bank())) {
        engine_->queue_detach(engine_hqd_[hqd_bank()]);
        engine_hqd_.erase(hqd_bank());
      }
      return;
    }
    hqd_regs_[hqd_bank() << 16 | (a - gc0)] = v;
    return;  // the 56-register MQD copy is one line in the trace: hqd_activate
  }
  const uint32_t remap = reg(regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL) & 0x7FFFC;  // address 18:2, bytes
  if (remap && a == remap / 4) {
    log("hdp flush");
    hdp_dirty_ = false;
    return;
  }
  if (r == reg_count) {
    log("w " + hex(a) + " = " + hex(v) + " (not a register the model knows)");
    regs_[a] = v;
    return;
  }
  log(std::string("w ") + reg_info(r).name + " = " + hex(v));
  switch (r) {
    case regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE:
    case regMMMC_VM_FB_LOCATION_BASE:
    case regMMMC_VM_FB_LOCATION_TOP:
    case regGCMC_VM_FB_LOCATION_BASE:
    case regGCMC_VM_FB_LOCATION_TOP:
      fault(std::string("write to read-only ") + reg_info(r).name);
      return;
    case regMP0_SMN_C2PMSG_35:
      regs_[a] = v;
      psp_bootloader(v);
      return;
    case regMP0_SMN_C2PMSG_64: psp_ring_ctrl(v); return;
    case regMP0_SMN_C2PMSG_67:
      regs_[a] = v;
      psp_ring_run(v);
      return;
    case regMP1_SMN_C2PMSG_66:
      regs_[a] = v;
      smu_message(v);
      return;
    case regMP1_SMN_C2PMSG_75:
      regs_[a] = v;
      if (v == kSmuDebugMode1Reset && !smu_silent) {
        ++mode1_resets;
        log("mode-1 reset");
        reset_state();  // VRAM kept (model choice; Linux restores nothing from it)
        regs_[map_[regMP1_SMN_C2PMSG_54]] = kSmuRespOk;
      }
      return;
    case regMMVM_INVALIDATE_ENG17_REQ: gc_invalidate(false, v); return;
    case regGCVM_INVALIDATE_ENG17_REQ: gc_invalidate(true, v); return;
    case regCP_MEC_RS64_CNTL:
      regs_[a] = v;
      mec_cntl(v);
      return;
    case regSDMA0_QUEUE0_RB_CNTL:
      regs_[a] = v;
      sdma_enable(v);
      return;
    case regGRBM_SOFT_RESET:
      regs_[a] = v;
      if (v & kSoftResetSdma0) {
        sdma_active_ = false;
        if (engine_sdma_) engine_->queue_detach(engine_sdma_);
        engine_sdma_ = 0;
      }
      if (v & kSoftResetCp) {
        hqd_active_.clear();
        for (auto &[bank, h] : engine_hqd_) engine_->queue_detach(h);
        engine_hqd_.clear();
      }
      return;
    case regMMVM_L2_PROTECTION_FAULT_STATUS:
    case regGCVM_L2_PROTECTION_FAULT_STATUS:
      regs_[a] = 0;  // write clears (model choice; Linux clears through the invalidate request bit)
      return;
    case regSH_MEM_CONFIG:
    case regSH_MEM_BASES: regs_[sh_mem_key(a)] = v; return;
    case regRLC_SAFE_MODE:
      // The RLC acts on cmd and clears it (Linux gfx_v11_0_rlc_enter_safe_mode
      // waits for that); with no RLC firmware running nobody answers.
      regs_[a] = v;
      if ((v & kRlcSafeModeCmd) && rlc_autoload_) {
        regs_[a] = v & ~kRlcSafeModeCmd;
        rlc_safe_mode_ = ((v >> 1) & 0xF) == 1;
        log(std::string("rlc safe mode ") + (rlc_safe_mode_ ? "entered" : "left"));
      }
      return;
    case regRLC_CGCG_CGLS_CTRL:
      if (!rlc_safe_mode_) fault("RLC_CGCG_CGLS_CTRL changed outside RLC safe mode");
      regs_[a] = v;
      return;
    default: regs_[a] = v; return;
  }
}

// ---- GMC ------------------------------------------------------------------

void gfx1100_model::gc_invalidate(bool gc, uint32_t req) {
  // INVALIDATE_ENG17_REQ per_vmid_invalidate_req is bits 15:0; the ACK
  // register answers the same bits (gc_11_0_0_sh_mask.h).
  const uint32_t vmids = req & 0xFFFF;
  hdp_check(gc ? "GC TLB invalidation (the page walker)" : "MM TLB invalidation (the page walker)");
  regs_[map_[gc ? regGCVM_INVALIDATE_ENG17_ACK : regMMVM_INVALIDATE_ENG17_ACK]] = vmids;
  if (vmids & 1) {
    const uint64_t lo = reg(gc ? regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32
                               : regMMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32);
    const uint64_t hi = reg(gc ? regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32
                               : regMMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32);
    root_latched_[gc] = (lo | hi << 32);
    latched_[gc] = true;
    log(std::string(gc ? "gc" : "mm") + " tlb invalidate vmid0 root " + hex(root_latched_[gc]));
  }
}

void gfx1100_model::vm_fault(bool gc, uint64_t addr, const std::string &why) {
  regs_[map_[gc ? regGCVM_L2_PROTECTION_FAULT_STATUS : regMMVM_L2_PROTECTION_FAULT_STATUS]] =
      kFaultMappingError;
  regs_[map_[gc ? regGCVM_L2_PROTECTION_FAULT_ADDR_LO32 : regMMVM_L2_PROTECTION_FAULT_ADDR_LO32]] =
      uint32_t(addr >> 12);
  regs_[map_[gc ? regGCVM_L2_PROTECTION_FAULT_ADDR_HI32 : regMMVM_L2_PROTECTION_FAULT_ADDR_HI32]] =
      uint32_t(addr >> 44) & 0xF;
  fault(std::string(gc ? "GCVM" : "MMVM") + " page fault at " + hex(addr) + ": " + why);
  // The interrupt ring entry, when the driver turned the IH ring on. The IH
  // writes its ring and write-pointer copy at MC addresses inside the FB
  // (mc_space 4), not through a VM: no translation here.
  if (!(reg(regIH_RB_CNTL) & kIhRbEnable)) return;
  const uint64_t fb = (uint64_t(reg(regMMMC_VM_FB_LOCATION_BASE)) & 0xFFFFFF) << 24;
  const uint64_t base = (uint64_t(reg(regIH_RB_BASE)) | uint64_t(reg(regIH_RB_BASE_HI)) << 32) << 8;
  const uint32_t size = 4u << ((reg(regIH_RB_CNTL) >> 1) & 0x1F);  // rb_size: log2 of dwords
  uint32_t wptr = (reg(regIH_RB_WPTR) & 0x3FFFC) % size;
  const uint32_t e[8] = {gc ? kIhClientGfx : kIhClientVmc, 0, 0, 0, uint32_t(addr >> 12),
                         uint32_t(addr >> 44) & 0xF,       0, 0};
  if (base >= fb && base - fb + size <= opt_.vram_bytes) vram_write(base - fb + wptr, e, sizeof e);
  wptr = (wptr + kIhEntryBytes) % size;
  regs_[map_[regIH_RB_WPTR]] = wptr;
  const uint64_t wb =
      uint64_t(reg(regIH_RB_WPTR_ADDR_LO)) | uint64_t(reg(regIH_RB_WPTR_ADDR_HI) & 0xFFFF) << 32;
  if ((reg(regIH_RB_CNTL) & kIhWptrWriteback) && wb >= fb && wb - fb + 4 <= opt_.vram_bytes)
    vram_write(wb - fb, &wptr, 4);
}

// What a hub needs before it translates anything: the setup every source's
// hub init does (Linux mmhub_v3_0 / gfxhub_v3_0 init_tlb_regs, init_cache_regs,
// init_system_aperture_regs; tinygrad AM_GMC.init_hub). A cold hub has all of
// these 0 (model choice): L1 TLB and L2 off, and an AGP aperture of
// BOT 0..TOP 0 that is open.
bool gfx1100_model::hub_ready(bool gc, std::string *why) const {
  const uint32_t l1 = reg(gc ? regGCMC_VM_MX_L1_TLB_CNTL : regMMMC_VM_MX_L1_TLB_CNTL);
  const char *hub = gc ? "GC" : "MM";
  if (!(l1 & kL1TlbEnable) || ((l1 >> 3) & 3) != 3 || !(l1 & kL1TlbAdvancedDriverModel)) {
    *why = std::string(hub) + " hub L1 TLB not set up (MC_VM_MX_L1_TLB_CNTL " + hex(l1) +
           ": enable_l1_tlb, system_access_mode 3, enable_advanced_driver_model)";
    return false;
  }
  if (!(reg(gc ? regGCVM_L2_CNTL : regMMVM_L2_CNTL) & kL2CacheEnable)) {
    *why = std::string(hub) + " hub L2 cache off (VM_L2_CNTL.enable_l2_cache)";
    return false;
  }
  if (reg(gc ? regGCMC_VM_AGP_BOT : regMMMC_VM_AGP_BOT) <=
      reg(gc ? regGCMC_VM_AGP_TOP : regMMMC_VM_AGP_TOP)) {
    *why = std::string(hub) + " hub AGP aperture open (MC_VM_AGP_BOT <= AGP_TOP)";
    return false;
  }
  return true;
}

bool gfx1100_model::hdp_check(const char *reader) {
  if (!hdp_dirty_) return true;
  fault(std::string("HDP: ") + reader +
        " read VRAM while CPU writes over BAR0 were not flushed (no write to the "
        "remapped HDP_MEM_FLUSH_CNTL since): the GPU would see stale data");
  hdp_dirty_ = false;  // reported once
  return false;
}

// SH_MEM_CONFIG/BASES are banked by GRBM_GFX_CNTL.vmid (7:4): one copy per
// VMID, kept in regs_ under the address with the VMID in bits 27:24 (VMID 0
// under the plain address, so reg() reads VMID 0's), so whatever keeps
// regs_ keeps them.
uint32_t gfx1100_model::sh_mem_key(uint32_t addr) const {
  auto it = regs_.find(map_[regGRBM_GFX_CNTL]);
  const uint32_t vmid = it == regs_.end() ? 0 : (it->second >> 4) & 0xF;
  return addr | vmid << 24;
}

bool gfx1100_model::gpu_translate(bool gc, uint64_t addr, uint64_t *pa, bool *system,
                                  std::string *why) {
  const uint64_t fb =
      (uint64_t(reg(gc ? regGCMC_VM_FB_LOCATION_BASE : regMMMC_VM_FB_LOCATION_BASE)) & 0xFFFFFF)
      << 24;
  const uint64_t lo =
      uint64_t(reg(gc ? regGCMC_VM_SYSTEM_APERTURE_LOW_ADDR : regMMMC_VM_SYSTEM_APERTURE_LOW_ADDR))
      << 18;
  const uint64_t hi = uint64_t(reg(gc ? regGCMC_VM_SYSTEM_APERTURE_HIGH_ADDR
                                      : regMMMC_VM_SYSTEM_APERTURE_HIGH_ADDR))
                      << 18;
  *system = false;
  if (!hub_ready(gc, why)) {
    vm_fault(gc, addr, *why);
    return false;
  }
  // The system aperture: MC addresses of VRAM, not translated.
  if (lo && addr >= lo && addr < hi + (1u << 18)) {
    *pa = addr - fb;
    if (*pa < opt_.vram_bytes) return true;
  }
  const uint32_t cntl = reg(gc ? regGCVM_CONTEXT0_CNTL : regMMVM_CONTEXT0_CNTL);
  if (!(cntl & 1)) {
    *why = "VM context 0 not enabled and the address is outside the system aperture";
    vm_fault(gc, addr, *why);
    return false;
  }
  if (!latched_[gc]) {
    *why = "no TLB invalidation since the page table base was set";
    vm_fault(gc, addr, *why);
    return false;
  }
  const uint64_t start = (uint64_t(reg(gc ? regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32
                                          : regMMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32)) |
                          uint64_t(reg(gc ? regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32
                                          : regMMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32) &
                                   0xF)
                              << 32)
                         << 12;
  const uint64_t end = (uint64_t(reg(gc ? regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32
                                        : regMMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32)) |
                        uint64_t(reg(gc ? regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32
                                        : regMMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32) &
                                 0xF)
                            << 32)
                       << 12;
  if (addr < start || addr > end + 0xFFF) {
    *why = "outside VM context 0's range " + hex(start) + ".." + hex(end);
    vm_fault(gc, addr, *why);
    return false;
  }
  // PAGE_TABLE_BASE_ADDR holds the root's VRAM address | valid (tinygrad
  // enable_vm_addressing).
  if (!(root_latched_[gc] & 1)) {
    *why = "page table base not valid (bit 0)";
    vm_fault(gc, addr, *why);
    return false;
  }
  vm_walk w;
  auto rd = [this](uint64_t p, uint64_t *v) {
    if (p + 8 > opt_.vram_bytes) return false;
    vram_read(p, v, 8);
    return true;
  };
  if (!vm_translate(rd, root_latched_[gc] & ~0xFFFull, addr - start, &w, why)) {
    vm_fault(gc, addr, *why);
    return false;
  }
  *pa = w.pa;
  *system = (w.pte & kPteSystem) != 0;
  return true;
}

// One page at a time: each page is translated on its own (consecutive GPU
// pages need not be consecutive in VRAM), SYSTEM pages go upstream by
// bus-master DMA.
bool gfx1100_model::gpu_access(bool gc, uint64_t addr, uint8_t *p, size_t n, bool write,
                               std::string *why) {
  while (n) {
    const size_t in = std::min<size_t>(n, 4096 - (addr & 0xFFF));
    uint64_t pa = 0;
    bool sys = false;
    if (!gpu_translate(gc, addr, &pa, &sys, why)) return false;
    if (sys) {
      const bool ok =
          write ? (dma_write && dma_write(pa, p, in)) : (dma_read && dma_read(pa, p, in));
      if (!ok) {
        *why = std::string("bus-master ") + (write ? "write to " : "read of ") + hex(pa) +
               " not answered (bridge)";
        return false;
      }
    } else if (write) {
      vram_write(pa, p, in);
    } else {
      vram_read(pa, p, in);
    }
    p += in, addr += in, n -= in;
  }
  return true;
}

bool gfx1100_model::gpu_read(bool gc, uint64_t addr, uint8_t *dst, size_t n, std::string *why) {
  return gpu_access(gc, addr, dst, n, false, why);
}

bool gfx1100_model::gpu_write(bool gc, uint64_t addr, const uint8_t *src, size_t n,
                              std::string *why) {
  return gpu_access(gc, addr, const_cast<uint8_t *>(src), n, true,
                    why);  // not written through on a write
}

// ---- PSP ------------------------------------------------------------------

bool gfx1100_model::psp_check_bytes(uint64_t gpu_addr, const std::vector<uint8_t> &want, size_t n,
                                    const char *what) {
  std::vector<uint8_t> got(n);
  std::string why;
  if (!gpu_read(false, gpu_addr, got.data(), n, &why)) {
    fault(std::string("PSP could not read ") + what + " at " + hex(gpu_addr) + ": " + why);
    return false;
  }
  for (size_t i = 0; i < n; ++i)
    if (i >= want.size() || got[i] != want[i]) {
      fault(std::string("PSP: ") + what + " byte " + std::to_string(i) + " is " + hex(got[i]) +
            ", not the firmware's " +
            (i < want.size() ? hex(want[i]) : std::string("(past its end)")));
      return false;
    }
  return true;
}

void gfx1100_model::psp_bootloader(uint32_t cmd) {
  if (psp_silent) return;
  // The order tinygrad's AM uses on MP0 13.0.0 (KDB twice: the SPL table is
  // taken from KDB below MP0 14), then SOS last; components absent from the
  // file are skipped (ip.py:585-596).
  static const struct {
    uint32_t cmd, bin;
  } order[] = {{psp_bl_load_key_database, psp_fw_kdb},
               {psp_bl_load_tos_spl_table, psp_fw_kdb},
               {psp_bl_load_sysdrv, psp_fw_sys_drv},
               {psp_bl_load_sosdrv, psp_fw_sos}};
  size_t next = bl_done_.size();
  if (next >= 4 || order[next].cmd != cmd || sos_alive_) {
    fault(std::string("PSP bootloader: ") + bl_name(cmd) + " (" + hex(cmd) +
          ") out of order after " + std::to_string(bl_done_.size()) + " components");
    bl_busy_forever_ = true;
    return;
  }
  const uint64_t addr = uint64_t(reg(regMP0_SMN_C2PMSG_36)) << 20;
  const auto &want = sos_bins_[order[next].bin];
  // The bootloader reads the component's own header; the model checks the
  // first 256 bytes and the last one (the size is not in the mailbox).
  std::vector<uint8_t> head(want.begin(), want.begin() + std::min<size_t>(256, want.size()));
  if (!psp_check_bytes(addr, head, head.size(), bl_name(cmd))) {
    bl_busy_forever_ = true;
    return;
  }
  bl_done_.push_back(cmd);
  log(std::string("psp bootloader ") + bl_name(cmd) + " from " + hex(addr) + " ok");
  if (cmd == psp_bl_load_sosdrv) {
    sos_alive_ = true;
    log("psp sOS alive");
  }
}

void gfx1100_model::psp_ring_ctrl(uint32_t v) {
  if (!sos_alive_ || psp_silent) return;
  if (v == kPspCtrlDestroyRings) {
    ring_ready_ = false;
    regs_[map_[regMP0_SMN_C2PMSG_71]] = 0;
    log("psp rings destroyed");
    return;
  }
  if (v == kPspRingTypeKm << 16) {
    const uint32_t size = reg(regMP0_SMN_C2PMSG_71);
    if (!size || (!reg(regMP0_SMN_C2PMSG_69) && !reg(regMP0_SMN_C2PMSG_70))) {
      fault("PSP: KM ring created without an address or size (C2PMSG_69/70/71)");
      return;
    }
    ring_ready_ = true;
    psp_rptr_ = 0;
    regs_[map_[regMP0_SMN_C2PMSG_67]] = 0;
    log("psp KM ring at " +
        hex(uint64_t(reg(regMP0_SMN_C2PMSG_69)) | uint64_t(reg(regMP0_SMN_C2PMSG_70)) << 32) +
        " size " + hex(size));
    return;
  }
  fault("PSP: unknown ring control " + hex(v));
}

void gfx1100_model::psp_ring_run(uint32_t wptr) {
  if (psp_silent) return;
  if (!ring_ready_) {
    fault("PSP: write pointer moved before the KM ring exists");
    return;
  }
  hdp_check("the PSP (KM ring frame and command)");
  const uint64_t ring = uint64_t(reg(regMP0_SMN_C2PMSG_69)) | uint64_t(reg(regMP0_SMN_C2PMSG_70))
                                                                  << 32;
  const uint32_t ring_dw = reg(regMP0_SMN_C2PMSG_71) / 4;
  std::string why;
  while (psp_rptr_ != wptr) {
    uint8_t fr[kPspFrameBytes];
    if (!gpu_read(false, ring + uint64_t(psp_rptr_ % ring_dw) * 4, fr, sizeof fr, &why)) {
      fault("PSP: ring frame unreadable: " + why);
      return;
    }
    psp_rptr_ += kPspFrameBytes / 4;
    const uint64_t cmd = get32(fr + kPspFrameCmdLo) | uint64_t(get32(fr + kPspFrameCmdHi)) << 32;
    const uint64_t fence = get32(fr + kPspFrameFenceLo) | uint64_t(get32(fr + kPspFrameFenceHi))
                                                              << 32;
    uint32_t tmr = 0;
    const uint32_t status = psp_command(cmd, &tmr);
    uint8_t resp[kPspCmdBytes];
    if (!gpu_read(false, cmd, resp, sizeof resp, &why)) return;
    std::memcpy(resp + kPspRespStatus, &status, 4);
    std::memcpy(resp + kPspRespTmrSize, &tmr, 4);
    gpu_write(false, cmd, resp, sizeof resp, &why);
    const uint32_t fv = get32(fr + kPspFrameFenceValue);
    gpu_write(false, fence, reinterpret_cast<const uint8_t *>(&fv), 4, &why);
  }
}

uint32_t gfx1100_model::psp_command(uint64_t cmd_addr, uint32_t *tmr_size) {
  constexpr uint32_t kBad = 0xFFFF0005;  // a failure status (model choice: any non-zero is one)
  uint8_t c[kPspCmdBytes];
  std::string why;
  if (!gpu_read(false, cmd_addr, c, sizeof c, &why)) {
    fault("PSP: command buffer unreadable: " + why);
    return kBad;
  }
  const uint32_t id = get32(c + kPspCmdId);
  const uint8_t *a = c + kPspCmdArgs;
  const uint64_t addr = get32(a) | uint64_t(get32(a + 4)) << 32;
  const uint32_t size = get32(a + 8);
  switch (id) {
    case psp_cmd_load_toc: {
      const auto &want = sos_bins_[psp_fw_toc];
      if (size != want.size()) {
        fault("PSP LOAD_TOC: size " + std::to_string(size) + ", the TOC is " +
              std::to_string(want.size()));
        return kBad;
      }
      if (!psp_check_bytes(addr, want, size, "TOC")) return kBad;
      toc_loaded_ = true;
      *tmr_size = opt_.tmr_bytes;
      log("psp LOAD_TOC " + std::to_string(size) + " bytes ok, tmr " + hex(opt_.tmr_bytes));
      return 0;
    }
    case psp_cmd_setup_tmr: {
      const uint32_t flags = get32(a + 12);
      if (!toc_loaded_ || !smu_fw_) {
        fault(std::string("PSP SETUP_TMR before ") +
              (!toc_loaded_ ? "LOAD_TOC" : "the SMU firmware"));
        return kBad;
      }
      const uint64_t fb = (uint64_t(reg(regMMMC_VM_FB_LOCATION_BASE)) & 0xFFFFFF) << 24;
      if (size != opt_.tmr_bytes || (addr & 0xFFFFF) || addr < fb ||
          addr + size > fb + opt_.vram_bytes || !(flags & kPspTmrFlagVirtPhyAddr)) {
        fault("PSP SETUP_TMR: buffer " + hex(addr) + " size " + hex(size) + " flags " + hex(flags) +
              " (want the TOC's size " + hex(opt_.tmr_bytes) +
              ", 1 MiB aligned in VRAM, virt_phy_addr)");
        return kBad;
      }
      tmr_set_ = true;
      log("psp SETUP_TMR at " + hex(addr) + " ok");
      return 0;
    }
    case psp_cmd_load_ip_fw: {
      const uint32_t type = get32(a + 12);
      auto it = pieces_.find(type);
      if (it == pieces_.end()) {
        fault("PSP LOAD_IP_FW: firmware type " + std::to_string(type) +
              " is not one a gfx1100 boot loads");
        return kBad;
      }
      const std::string &name = it->second.name;
      if (type == gfx_fw_smu ? tmr_set_ : !tmr_set_) {
        fault("PSP LOAD_IP_FW " + name + (type == gfx_fw_smu ? " after" : " before") +
              " SETUP_TMR");
        return kBad;
      }
      if (size != it->second.bytes.size()) {
        fault("PSP LOAD_IP_FW " + name + ": size " + std::to_string(size) + ", the piece is " +
              std::to_string(it->second.bytes.size()));
        return kBad;
      }
      if (!psp_check_bytes(addr, it->second.bytes, size, name.c_str())) return kBad;
      fw_loaded_.insert(type);
      psp_loaded.push_back(name);
      if (type == gfx_fw_smu) smu_fw_ = true;
      log("psp LOAD_IP_FW " + name + " " + std::to_string(size) + " bytes ok");
      return 0;
    }
    case psp_cmd_autoload_rlc: {
      for (const auto &p : pieces_)
        if (!fw_loaded_.count(p.first)) {
          fault("PSP AUTOLOAD_RLC before " + p.second.name + " was loaded");
          return kBad;
        }
      rlc_autoload_ = true;
      log("psp AUTOLOAD_RLC ok");
      return 0;
    }
    default: fault("PSP: unknown command " + std::to_string(id)); return kBad;
  }
}

// ---- SMU ------------------------------------------------------------------

void gfx1100_model::smu_message(uint32_t msg) {
  if (smu_silent || !smu_fw_) return;  // no answer: C2PMSG_90 stays 0
  const uint32_t arg = reg(regMP1_SMN_C2PMSG_82);
  uint32_t out = arg;
  switch (msg) {
    case smu_get_version: out = 0x004E4600; break;  // any version (model choice)
    case smu_set_driver_dram_addr_high: smu_dram_hi_ = true; break;
    case smu_set_driver_dram_addr_low: smu_dram_lo_ = true; break;
    case smu_enable_all_features:
      if (!smu_dram_hi_ || !smu_dram_lo_)
        fault("SMU EnableAllSmuFeatures before the driver table address");
      smu_features_ = true;
      break;
    case smu_set_soft_min_by_freq:
    case smu_set_soft_max_by_freq: break;
    default: fault("SMU: unknown message " + hex(msg)); return;
  }
  regs_[map_[regMP1_SMN_C2PMSG_82]] = out;
  regs_[map_[regMP1_SMN_C2PMSG_90]] = kSmuRespOk;
  log("smu msg " + hex(msg) + " arg " + hex(arg) + " ok");
}

// ---- GFX / MEC / SDMA -----------------------------------------------------

void gfx1100_model::mec_cntl(uint32_t v) {
  if (v & kRs64Halt) {
    mec_running_ = false;
    return;
  }
  if (!(v & kRs64Pipe0Active) || (v & kRs64Pipe0Reset)) return;
  if (!rlc_autoload_) {
    fault("MEC unhalted before the RLC autoload (no microcode)");
    return;
  }
  const uint64_t start = uint64_t(reg(regCP_MEC_RS64_PRGRM_CNTR_START)) |
                         uint64_t(reg(regCP_MEC_RS64_PRGRM_CNTR_START_HI)) << 32;
  if (start != (mec_start_ >> 2)) {
    fault("MEC started at " + hex(start) + ", the firmware's start is " + hex(mec_start_ >> 2) +
          " (ucode_start >> 2)");
    return;
  }
  mec_running_ = true;
  log("mec running from " + hex(start));
}

void gfx1100_model::hqd_activate() {
  const uint32_t bank = hqd_bank();
  auto q = [&](am::reg r) { return hqd_get(map_[r] - map_[regCP_MQD_BASE_ADDR]); };
  if (!mec_running_) {
    fault("CP_HQD_ACTIVE with the MEC not running");
    return;
  }
  // The queue's waves run in VMID 0: its shader memory apertures must be set
  // (tinygrad AM_GFX.init_hw; address_mode 64-bit, unaligned access).
  const uint32_t shc = reg(regSH_MEM_CONFIG);
  if (!regs_.count(map_[regSH_MEM_CONFIG]) || !regs_.count(map_[regSH_MEM_BASES]) || (shc & 1) ||
      ((shc >> 2) & 3) != 3) {
    fault("CP_HQD_ACTIVE: SH_MEM_CONFIG/SH_MEM_BASES for VMID 0 not set up (config " + hex(shc) +
          ", bases " + hex(reg(regSH_MEM_BASES)) +
          ": want 64-bit addressing, unaligned mode, the apertures' bases)");
    return;
  }
  hdp_check("the CP (the queue's MQD and ring)");
  const uint32_t db = q(regCP_HQD_PQ_DOORBELL_CONTROL);
  const uint32_t db_off = (db >> 2) & 0x3FFFFFF;  // doorbell_offset 27:2, in dwords
  const uint32_t lo = reg(regCP_MEC_DOORBELL_RANGE_LOWER) >> 2,
                 up = reg(regCP_MEC_DOORBELL_RANGE_UPPER) >> 2;
  if (!(db & kDoorbellEn) || db_off < lo || db_off > up) {
    fault("CP_HQD_ACTIVE: doorbell control " + hex(db) + " outside the MEC doorbell range " +
          hex(lo) + ".." + hex(up));
    return;
  }
  const uint64_t mqd = uint64_t(q(regCP_MQD_BASE_ADDR)) | uint64_t(hqd_get(1)) << 32;
  const uint64_t ring =
      (uint64_t(q(regCP_HQD_PQ_BASE)) |
       uint64_t(hqd_get(map_[regCP_HQD_PQ_BASE] + 1 - map_[regCP_MQD_BASE_ADDR])) << 32)
      << 8;
  uint8_t probe[4];
  std::string why;
  if (!gpu_read(true, mqd, probe, 4, &why) || !gpu_read(true, ring, probe, 4, &why)) {
    fault("CP_HQD_ACTIVE: " + why);
    return;
  }
  // The queue runs on the packet engine: its ring and pointers in VRAM.
  const uint32_t qsize = q(regCP_HQD_PQ_CONTROL) & 0x3F;  // queue_size: log2(dwords) - 1
  const uint64_t rptr_va =
      uint64_t(hqd_get(0x1fb4 - kHqdRegFirst)) | uint64_t(hqd_get(0x1fb5 - kHqdRegFirst)) << 32;
  const uint64_t wptr_va =
      uint64_t(hqd_get(0x1fb6 - kHqdRegFirst)) | uint64_t(hqd_get(0x1fb7 - kHqdRegFirst)) << 32;
  volatile uint64_t *rp =
      engine_vram_attach() ? engine_word(rptr_va, "CP_HQD_PQ_RPTR_REPORT_ADDR") : nullptr;
  volatile uint64_t *wp = rp ? engine_word(wptr_va, "CP_HQD_PQ_WPTR_POLL_ADDR") : nullptr;
  if (!wp) return;
  engine_hqd_[bank] =
      engine_->queue_attach(hcq::queue_kind::compute, ring, 4ull << (qsize + 1), wp, rp);
  hqd_active_.insert(bank);
  log("hqd me" + std::to_string((bank >> 2) & 3) + " pipe" + std::to_string(bank & 3) + " queue" +
      std::to_string(bank >> 4) + " active: mqd " + hex(mqd) + " ring " + hex(ring) + " doorbell " +
      hex(db_off / 2));
}

void gfx1100_model::sdma_enable(uint32_t v) {
  if (!(v & kSdmaRbEnable)) {
    sdma_active_ = false;
    if (engine_sdma_) engine_->queue_detach(engine_sdma_);
    engine_sdma_ = 0;
    return;
  }
  if (!fw_loaded_.count(gfx_fw_sdma_ucode_th0) || !fw_loaded_.count(gfx_fw_sdma_ucode_th1) ||
      !rlc_autoload_) {
    fault("SDMA ring enabled without SDMA firmware");
    return;
  }
  if (reg(regSDMA0_F32_CNTL) & kSdmaF32Halt) {
    fault("SDMA ring enabled while the F32 engine is halted");
    return;
  }
  hdp_check("SDMA (its ring)");
  const uint64_t ring =
      (uint64_t(reg(regSDMA0_QUEUE0_RB_BASE)) | uint64_t(reg(regSDMA0_QUEUE0_RB_BASE_HI)) << 32)
      << 8;
  uint8_t probe[4];
  std::string why;
  if (!gpu_read(true, ring, probe, 4, &why)) {
    fault("SDMA ring: " + why);
    return;
  }
  const uint32_t rb_size = (v >> 1) & 0x1F;  // log2(dwords)
  const uint64_t rptr_va = uint64_t(reg(regSDMA0_QUEUE0_RB_RPTR_ADDR_LO)) |
                           uint64_t(reg(regSDMA0_QUEUE0_RB_RPTR_ADDR_HI)) << 32;
  const uint64_t wptr_va = uint64_t(reg(regSDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO)) |
                           uint64_t(reg(regSDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI)) << 32;
  volatile uint64_t *rp =
      engine_vram_attach() ? engine_word(rptr_va, "SDMA0_QUEUE0_RB_RPTR_ADDR") : nullptr;
  volatile uint64_t *wp = rp ? engine_word(wptr_va, "SDMA0_QUEUE0_RB_WPTR_POLL_ADDR") : nullptr;
  if (!wp) return;
  if (engine_sdma_) engine_->queue_detach(engine_sdma_);
  engine_sdma_ = engine_->queue_attach(hcq::queue_kind::copy, ring, 4ull << rb_size, wp, rp);
  sdma_active_ = true;
  log("sdma queue0 active: ring " + hex(ring) + " doorbell " +
      hex(reg(regSDMA0_QUEUE0_DOORBELL_OFFSET) >> 3));
}

// ---- queues on the packet engine -----------------------------------------

bool gfx1100_model::engine_vram_attach() {
  // The engine resolves addresses in one contiguous region, so it may only
  // be given VRAM at the VAs where the driver's GC tables map it one to one
  // (the GMMU=0 model): walk every 2 MiB of it once.
  const uint64_t start = (uint64_t(reg(regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32)) |
                          uint64_t(reg(regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32) & 0xF) << 32)
                         << 12;
  if (engine_vram_) return true;
  for (uint64_t off = 0; off < opt_.vram_bytes; off += 2ull << 20) {
    uint64_t pa = 0;
    bool sys = false;
    std::string why;
    if (!gpu_translate(true, start + off, &pa, &sys, &why)) return false;
    if (sys || pa != off) {
      fault("GC page tables do not map VRAM one to one at " + hex(start) + " (offset " + hex(off) +
            " -> " + hex(pa) + "): the queues cannot run");
      return false;
    }
  }
  engine_->region_attach(start, opt_.vram_bytes, vram_.get());
  engine_vram_ = true;
  engine_va_ = start;
  return true;
}

volatile uint64_t *gfx1100_model::engine_word(uint64_t va, const char *what) {
  uint64_t pa = 0;
  bool sys = false;
  std::string why;
  if (!gpu_translate(true, va, &pa, &sys, &why)) return nullptr;
  if (sys || pa % 8 || pa + 8 > opt_.vram_bytes) {
    fault(std::string(what) + " " + hex(va) + " is not an aligned VRAM word");
    return nullptr;
  }
  return reinterpret_cast<volatile uint64_t *>(vram_.get() + pa);
}

void gfx1100_model::engine_run(const char *which) {
  hdp_check(which[0] == 'S' ? "the SDMA queue" : "the compute queue");
  engine_->run_queues();
  const std::string &f = engine_->fault();
  if (f.empty() || f == engine_fault_seen_) return;
  engine_fault_seen_ = f;
  // The fake's address faults name an address nothing maps: on the GPU
  // that is a GC VM fault (status and IH entry); anything else is a packet
  // the model does not know.
  // The faulting address is the first hex number in the engine's message.
  if (f.find("not mapped") != std::string::npos || f.find("outside") != std::string::npos ||
      f.find("not in GPU memory") != std::string::npos) {
    const size_t at = f.find("0x");
    vm_fault(true, at == std::string::npos ? 0 : std::strtoull(f.c_str() + at, nullptr, 16), f);
  }
  fault(std::string(which) + " queue: " + f);
}

}  // namespace capgraph::emu
