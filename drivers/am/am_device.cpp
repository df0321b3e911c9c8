#include "am_device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "am_ih.h"
#include "am_protocol.h"
#include "am_ucode.h"

namespace capgraph::am {

namespace {

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}
uint32_t lo32(uint64_t v) { return uint32_t(v); }
uint32_t hi32(uint64_t v) { return uint32_t(v >> 32); }
uint32_t log2u(uint64_t v) {
  uint32_t r = 0;
  while ((1ull << (r + 1)) <= v) ++r;
  return r;
}

// Field values (Linux gc_11_0_0_sh_mask.h, mmhub_3_0_0_sh_mask.h,
// osssys_6_0_0_sh_mask.h; the same bit positions are in tinygrad's regs.py).
// VM_CONTEXT0_CNTL: enable_context 0, page_table_depth 2:1 (3: four levels
// below the root... PDB2 root, as tinygrad's depth 3 - root level 0), every
// protection-fault interrupt/default bit 9-22, and tinygrad's base 0x1800000.
constexpr uint32_t kVmContextCntl = 0x1u | (3u << 1) | (0x3FFFu << 9) | 0x1800000u;
// INVALIDATE_ENG17_REQ: per_vmid_invalidate_req bit 0 (VMID 0),
// invalidate_l2_ptes 19, _pde0 20, _pde1 21, _pde2 22, invalidate_l1_ptes 23.
constexpr uint32_t kInvalidateVmid0 = 0x1u | (0x1Fu << 19);
constexpr uint32_t kRs64Pipe0Reset = 1u << 16, kRs64Pipe0Active = 1u << 26, kRs64Halt = 1u << 30;
constexpr uint32_t kBootloadComplete = 1u << 31;
constexpr uint32_t kDoorbellEn = 1u << 30;
constexpr uint32_t kSdmaDoorbellEnable = 1u << 28;
constexpr uint32_t kSoftResetSdma0 = 1u << 23, kSoftResetCp = 1u << 0, kSoftResetCpc = 1u << 18;
// Hub caches, as tinygrad AM_GMC.init_hub programs them (tinygrad/runtime/support/am/ip.py;
// Linux mmhub_v3_0_init_tlb_regs / init_cache_regs, gfxhub_v3_0 the same).
// MC_VM_MX_L1_TLB_CNTL: enable_l1_tlb 0, system_access_mode 4:3 = 3,
// system_aperture_unmapped_access 5 = 0, enable_advanced_driver_model 6,
// mtype 13:11 = MTYPE_UC (3, soc21 enum). A read-modify-write of those fields.
constexpr uint32_t kL1TlbMask = 0x1u | (3u << 3) | (1u << 5) | (1u << 6) | (7u << 11);
constexpr uint32_t kL1TlbValue = 0x1u | (3u << 3) | (1u << 6) | (3u << 11);
// VM_L2_CNTL: enable_l2_cache 0, enable_l2_fragment_processing 1 = 0 (gfx10+),
// l2_pde0_cache_tag_generation_mode 8 = 0, enable_default_page_out_to_system_memory 11,
// pde_fault_classification 18 = 0, context1_identity_access_mode 20:19 = 1,
// identity_mode_fragment_size 25:21 = 0.
constexpr uint32_t kL2CntlMask =
    0x1u | 0x2u | (1u << 8) | (1u << 11) | (1u << 18) | (3u << 19) | (0x1Fu << 21);
constexpr uint32_t kL2CntlValue = 0x1u | (1u << 11) | (1u << 19);
// VM_L2_CNTL2: invalidate_all_l1_tlbs 0, invalidate_l2_cache 1 (set on top).
constexpr uint32_t kL2Cntl2Invalidate = 0x3u;
// VM_L2_CNTL3 (written whole): bank_select 5:0 = 9, l2_cache_bigk_fragment_size
// 19:15 = 6, l2_cache_bigk_associativity 20, l2_cache_4k_associativity 31.
constexpr uint32_t kL2Cntl3 = 9u | (6u << 15) | (1u << 20) | (1u << 31);
constexpr uint32_t kL2Cntl4 = 1u;           // l2_cache_4k_partition_count 5:0 = 1
constexpr uint32_t kL2Cntl5 = 0x1FFu << 5;  // walker_priority_client_id 13:5 = 0x1ff
// AGP off: BOT above TOP (tinygrad writes BOT = 0xffffffffffff >> 24).
constexpr uint32_t kAgpBotOff = 0xFFFFFF;
// MMVM_L2_BANK_SELECT_RESERVED_CID2.reserved_cache_private_invalidation (bit
// 25), poked after each MM invalidation on gfx11 and read back (AM_GMC.flush_tlb).
constexpr uint32_t kReservedCachePrivateInvalidation = 1u << 25;
// SH_MEM_CONFIG: address_mode 0 = SH_MEM_ADDRESS_MODE_64 (0), alignment_mode
// 3:2 = SH_MEM_ALIGNMENT_MODE_UNALIGNED (3), initial_inst_prefetch 15:14 = 3.
// SH_MEM_BASES: private_base 15:0 = 2, shared_base 31:16 = 1 (the LDS aperture
// at 0x1000'0000'0000'0000, scratch at 0x2000...; tinygrad AM_GFX.init_hw).
constexpr uint32_t kShMemConfig = (3u << 2) | (3u << 14);
constexpr uint32_t kShMemBases = (1u << 16) | 2u;
// RLC_SAFE_MODE: cmd 0, message 4:1 (1 enter, 0 exit); the RLC clears cmd
// when it has acted (tinygrad set_clockgating_state polls bit 0 == 0).
constexpr uint32_t kRlcSafeModeEnter = 0x3, kRlcSafeModeExit = 0x1;
// RLC_CGCG_CGLS_CTRL: cgcg_en 0, cgls_en 1, cgls_rep_compansat_delay 7:2 = 0xf,
// cgcg_gfx_idle_threshold 26:8 = 0x36 (tinygrad AM_GFX.set_clockgating_state).
constexpr uint32_t kCgcgMask = 0x3u | (0x3Fu << 2) | (0x7FFFFu << 8);
constexpr uint32_t kCgcgValue = 0x3u | (0xFu << 2) | (0x36u << 8);
// GRBM_CNTL.read_timeout 7:0 = 0xff; TCP_CNTL |= 0x20000000 (Linux's gfx11
// golden setting, tinygrad AM_GFX.init_hw); RLC_SRM_CNTL srm_enable 0 | auto_incr_addr 1.
constexpr uint32_t kGrbmReadTimeout = 0xFF, kTcpCntlGolden = 0x20000000, kRlcSrmEnable = 0x3;
// IH_RB_CNTL (osssys_6_0_0): rb_size 5:1, wptr_writeback_enable 8,
// wptr_overflow_enable 16, enable_intr 17, mc_snoop 20, rptr_rearm 21,
// mc_space 30:28 = 4, wptr_overflow_clear 31 (tinygrad AM_IH.init_hw).
constexpr uint32_t kIhRbCntlFixed =
    (1u << 8) | (1u << 16) | (1u << 20) | (1u << 21) | (4u << 28) | (1u << 31);
constexpr uint32_t kIhRbEnable = 1u, kIhEnableIntr = 1u << 17;

}  // namespace

device::device(pci_function &pci, device_options opt) : pci_(pci), opt_(std::move(opt)) {}

bool device::fail(const std::string &what) {
  err_ = pci_.name() + ": " + (step_.empty() ? "" : step_ + ": ") + what;
  return false;
}

bool device::rreg(reg r, uint32_t *v) {
  std::string e;
  ++stats_.reg_reads;
  if (!pci_.bar_read(kBarMmio, uint64_t(regs_[r]) * 4, v, 1, &e))
    return fail(std::string("reading ") + reg_info(r).name + ": " + e);
  return true;
}

pci_function::watch_outcome device::vram_watch64(uint64_t pa, uint64_t target, reg fault_reg,
                                                 unsigned timeout_ms, uint64_t *value,
                                                 uint32_t *fault, std::string *err) {
  return pci_.watch64(kBarVram, pa, target, kBarMmio, uint64_t(regs_[fault_reg]) * 4, timeout_ms,
                      value, fault, err);
}

bool device::wreg(reg r, uint32_t v) {
  std::string e;
  ++stats_.reg_writes;
  if (!pci_.bar_write(kBarMmio, uint64_t(regs_[r]) * 4, &v, 1, &e))
    return fail(std::string("writing ") + reg_info(r).name + ": " + e);
  return true;
}

// Through staging_ in chunks, so a replay's uploads and downloads allocate nothing (the runtime's
// promise; gfx1100_replay_alloc_test counts). The BAR moves whole aligned dwords: a write that
// starts or ends inside a dword reads that dword first and merges, so the bytes around the range
// keep their values (an earlier version padded the tail with zeros, clobbering up to 3 bytes).
bool device::vram_write(uint64_t pa, const void *p, size_t bytes) {
  const uint8_t *src = static_cast<const uint8_t *>(p);
  std::string e;
  auto partial = [&](uint64_t at, size_t n) {  // n bytes at `at`, inside one aligned dword
    const uint64_t dw = at & ~uint64_t(3);
    uint32_t v = 0;
    stats_.vram_bytes_read += 4;
    stats_.vram_bytes_written += 4;
    if (!pci_.bar_read(kBarVram, dw, &v, 1, &e))
      return fail("reading VRAM at " + hex(dw) + ": " + e);
    std::memcpy(reinterpret_cast<uint8_t *>(&v) + (at - dw), src + (at - pa), n);
    if (!pci_.bar_write(kBarVram, dw, &v, 1, &e))
      return fail("writing VRAM at " + hex(dw) + ": " + e);
    return true;
  };
  uint64_t at = pa;
  const uint64_t end = pa + bytes;
  hdp_dirty_ = hdp_dirty_ || bytes != 0;
  if (at & 3) {  // a head inside the first dword
    const size_t n = size_t(std::min<uint64_t>(end, (at | 3) + 1) - at);
    if (!partial(at, n)) return false;
    at += n;
  }
  while (end - at >= 4) {
    const size_t dws = size_t(std::min<uint64_t>((end - at) / 4, staging_.size()));
    std::memcpy(staging_.data(), src + (at - pa), dws * 4);
    stats_.vram_bytes_written += dws * 4;
    if (!pci_.bar_write(kBarVram, at, staging_.data(), dws, &e))
      return fail("writing VRAM at " + hex(at) + ": " + e);
    at += dws * 4;
  }
  if (at < end && !partial(at, size_t(end - at))) return false;  // a tail inside the last dword
  return true;
}

bool device::vram_read(uint64_t pa, void *p, size_t bytes) {
  uint8_t *dst = static_cast<uint8_t *>(p);
  std::string e;
  const uint64_t end = pa + bytes;
  // Whole aligned dwords covering [pa, end); the bytes of the range are taken out of them.
  for (uint64_t at = pa & ~uint64_t(3); at < end;) {
    const size_t dws = size_t(std::min<uint64_t>((end - at + 3) / 4, staging_.size()));
    stats_.vram_bytes_read += dws * 4;
    if (!pci_.bar_read(kBarVram, at, staging_.data(), dws, &e))
      return fail("reading VRAM at " + hex(at) + ": " + e);
    const uint64_t from = std::max(at, pa), to = std::min(end, at + dws * 4);
    std::memcpy(dst + (from - pa), reinterpret_cast<const uint8_t *>(staging_.data()) + (from - at),
                size_t(to - from));
    at += dws * 4;
  }
  return true;
}

bool device::vram_copy_in(uint64_t pa, const void *p, size_t bytes, std::string *err) {
  step_ = "VRAM write";
  if (pa + bytes > vram_bytes_ || pa + bytes < pa) {
    *err = "VRAM write of " + std::to_string(bytes) + " bytes at " + hex(pa) + " past VRAM's end";
    return false;
  }
  if (vram_write(pa, p, bytes)) return true;
  *err = err_;
  return false;
}

bool device::vram_copy_out(uint64_t pa, void *p, size_t bytes, std::string *err) {
  step_ = "VRAM read";
  if (pa + bytes > vram_bytes_ || pa + bytes < pa) {
    *err = "VRAM read of " + std::to_string(bytes) + " bytes at " + hex(pa) + " past VRAM's end";
    return false;
  }
  if (vram_read(pa, p, bytes)) return true;
  *err = err_;
  return false;
}

// What a person needs when the GPU stops answering: the PSP and SMU
// mailboxes and both hubs' VM fault status (tinygrad reads the same on
// recovery, amdev.py:232-239). Best effort: a dead link reads nothing.
std::string device::fault_readout() {
  std::string s;
  const std::string keep = err_;
  for (reg r :
       {regMP0_SMN_C2PMSG_35, regMP0_SMN_C2PMSG_64, regMP0_SMN_C2PMSG_81, regMP1_SMN_C2PMSG_90,
        regMMVM_L2_PROTECTION_FAULT_STATUS, regMMVM_L2_PROTECTION_FAULT_ADDR_LO32,
        regGCVM_L2_PROTECTION_FAULT_STATUS, regGCVM_L2_PROTECTION_FAULT_ADDR_LO32}) {
    uint32_t v = 0;
    std::string e;
    if (!pci_.bar_read(kBarMmio, uint64_t(regs_[r]) * 4, &v, 1, &e)) {
      s += " (the device no longer answers: " + e + ")";
      err_ = keep;
      return s;
    }
    s += std::string(s.empty() ? "" : ", ") + (reg_info(r).name + 3) + "=" + hex(v);
  }
  s += ih_readout();
  err_ = keep;
  return s;
}

// The IH ring's entries since the last read pointer (at most the newest
// kShown), decoded, then the read pointer moved past them so the next
// read-out shows only new ones. tinygrad AM_IH.interrupt_handler walks the
// same ring the same way: offsets in IH_RB_WPTR/RPTR bits
// 17:2 are byte offsets into the ring. Nothing when the ring is off.
std::string device::ih_readout() {
  constexpr uint32_t kShown = 4;
  uint32_t cntl = 0, wptr = 0, rptr = 0;
  std::string e;
  auto rd = [&](reg r, uint32_t *v) {
    return pci_.bar_read(kBarMmio, uint64_t(regs_[r]) * 4, v, 1, &e);
  };
  if (!rd(regIH_RB_CNTL, &cntl) || !(cntl & kIhRbEnable) || !rd(regIH_RB_WPTR, &wptr) ||
      !rd(regIH_RB_RPTR, &rptr))
    return "";
  const uint32_t ring = uint32_t(device_layout::ih_ring_bytes);
  wptr = (wptr & 0x3FFFC) % ring;
  rptr = (rptr & 0x3FFFC) % ring;
  if (wptr == rptr) return "; IH ring: no new entries";
  const uint32_t count = ((wptr + ring - rptr) % ring) / kIhEntryBytes;
  std::string s = "; IH ring: " + std::to_string(count) + " new entr" + (count == 1 ? "y" : "ies");
  for (uint32_t i = count > kShown ? count - kShown : 0; i < count; ++i) {
    uint32_t dw[kIhEntryBytes / 4] = {};
    const uint64_t at = device_layout::ih_ring + (rptr + uint64_t(i) * kIhEntryBytes) % ring;
    if (!vram_read(at, dw, sizeof dw)) return s + " (unreadable)";
    s += std::string(i == (count > kShown ? count - kShown : 0) ? ": " : "; ") +
         ih_entry_describe(ih_entry_decode(dw));
  }
  pci_.bar_write(kBarMmio, uint64_t(regs_[regIH_RB_RPTR]) * 4, &wptr, 1, &e);
  return s;
}

// CPU writes of VRAM through BAR0 go through the host data path (HDP), which
// may hold them; a write to the remapped HDP_MEM_FLUSH_CNTL pushes them to
// memory before a GPU engine reads (Linux hdp_v6_0_flush_hdp, tinygrad
// AM_GMC.flush_hdp; ops_amd skips it over USB, we keep it: one register write,
// and only when VRAM was written since the last flush).
// `without_bulk`: over control transfers only, for the doorbell of a copy-out whose SRAM read is
// already armed (the bulk IN pipe then carries the SRAM data, not write results).
bool device::hdp_flush(bool without_bulk) {
  if (!hdp_dirty_) return true;
  const uint32_t zero = 0;
  std::string e;
  ++stats_.reg_writes;
  ++stats_.hdp_flushes;
  const bool ok = without_bulk
                      ? pci_.bar_write_without_bulk(kBarMmio, kMmioRemapHdpMemFlush, &zero, 1, &e)
                      : pci_.bar_write(kBarMmio, kMmioRemapHdpMemFlush, &zero, 1, &e);
  if (!ok) return fail("HDP flush: " + e);
  hdp_dirty_ = false;
  return true;
}

bool device::poll(reg r, uint32_t mask, uint32_t want, const char *what) {
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(opt_.timeout_ms);
  uint32_t v = 0;
  for (;;) {
    if (!rreg(r, &v)) return false;
    if ((v & mask) == want) return true;
    if (std::chrono::steady_clock::now() > deadline) break;
  }
  return fail(std::string(what) + ": timed out after " + std::to_string(opt_.timeout_ms) +
              " ms waiting for " + reg_info(r).name + " & " + hex(mask) + " == " + hex(want) +
              " (last " + hex(v) + "); " + fault_readout());
}

// ---- boot -----------------------------------------------------------------

bool device::boot(std::string *err) {
  stats_ = boot_stats{};
  booted_ = false;
  hdp_dirty_ = false;
  bool ok = discover() && firmware_load();
  uint32_t r7 = 0, r6 = 0, mmf = 0, gcf = 0, sos = 0;
  ok = ok && rreg(regSCRATCH_REG7, &r7) && rreg(regSCRATCH_REG6, &r6) &&
       rreg(regMMVM_L2_PROTECTION_FAULT_STATUS, &mmf) &&
       rreg(regGCVM_L2_PROTECTION_FAULT_STATUS, &gcf) && rreg(regMP0_SMN_C2PMSG_81, &sos);
  if (ok) {
    stats_.partial =
        !opt_.force_cold && r7 == kAmBootMagic && r6 == 0 && mmf == 0 && gcf == 0 && sos != 0;
    // Past this point the boot may have started the compute and SDMA queues.
    bool engines = false;
    if (stats_.partial) {
      ok = wreg(regSCRATCH_REG6, 1) && (engines = true) && gfx_init(true) && sdma_init();
    } else {
      ok = (sos == 0 || mode1_reset()) && wreg(regSCRATCH_REG7, 0) && wreg(regSCRATCH_REG6, 1) &&
           soc_init() && hub_init(false) && ih_init() && psp_boot() && smu_init() &&
           (engines = true) && gfx_init(false) && sdma_init() && clock_gating_set() &&
           wreg(regSCRATCH_REG7, kAmBootMagic);
    }
    // A boot that failed with queues started stops them again (as amdgpu's init unwinds the IP
    // blocks it brought up): a queue left running would fetch from memory this process no longer
    // owns once it exits. Best effort: the link that failed may be gone. The first error stays.
    if (!ok && engines) {
      const std::string first = err_;
      std::string ignored;
      teardown(&ignored);
      err_ = first;
    }
  }
  if (!ok) {
    *err = err_;
    return false;
  }
  step_.clear();
  booted_ = true;
  return true;
}

bool device::discover() {
  step_ = "discovery";
  regs_ = reg_map{};
  // Before discovery only the NBIO register is known: its absolute address
  // (0xde3) is fixed on every Navi (tinygrad amdev.py:292).
  regs_.addr[regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE] = 0xde3;
  uint32_t mib = 0;
  if (!rreg(regRCC_DEV0_EPF0_RCC_CONFIG_MEMSIZE, &mib)) return false;
  if (mib == 0 || mib == 0xFFFFFFFFu)
    return fail("RCC_CONFIG_MEMSIZE reads " + hex(mib) + ": not a GPU that is up");
  vram_bytes_ = uint64_t(mib) << 20;
  if (pci_.bar_size(kBarVram) < vram_bytes_)
    return fail("BAR0 is " + hex(pci_.bar_size(kBarVram)) + " bytes, smaller than VRAM (" +
                hex(vram_bytes_) +
                "): the GPU offered no resizable BAR large enough (the PCIe bring-up resizes it "
                "when offered); "
                "reaching VRAM past BAR0 through MM_INDEX/MM_DATA is not implemented");
  std::vector<uint8_t> bin(kDiscoveryTableBytes);
  if (!vram_read(vram_bytes_ - kDiscoveryOffsetFromVramEnd, bin.data(), bin.size())) return false;
  discovery_table t;
  std::string e;
  if (!discovery_parse(bin.data(), bin.size(), &t, &e) || !chip_select(t, &chip_, &e) ||
      !reg_map_build(t, &regs_, &e))
    return fail(e);
  uint32_t fb = 0;
  if (!rreg(regMMMC_VM_FB_LOCATION_BASE, &fb)) return false;
  fb_base_ = uint64_t(fb & 0xFFFFFF) << 24;
  return true;
}

bool device::firmware_load() {
  step_ = "firmware";
  std::string e;
  if (!firmware_read_all(opt_.firmware_dir.empty() ? firmware_dir() : opt_.firmware_dir,
                         chip_.firmware, &files_, &e))
    return fail(e);
  for (const firmware_file &f : files_) {
    if (f.name.find("_mec.bin") == std::string::npos) continue;
    ucode_file_pieces p;
    if (!ucode_locate(f, &p, &e)) return fail(e);
    mec_start_ = p.mec_ucode_start;
  }
  return true;
}

bool device::mode1_reset() {
  // The PSP is alive from an earlier session that did not end cleanly:
  // reset the whole GPU through the SMU's debug channel (MP0 13.0.0,
  // tinygrad ip.py:191-198), then wait for the sOS to be gone.
  step_ = "mode-1 reset";
  ++stats_.mode1_resets;
  return wreg(regMP1_SMN_C2PMSG_53, 0) && wreg(regMP1_SMN_C2PMSG_54, 0) &&
         wreg(regMP1_SMN_C2PMSG_75, kSmuDebugMode1Reset) &&
         poll(regMP1_SMN_C2PMSG_54, ~0u, kSmuRespOk, "SMU debug answer") &&
         poll(regMP0_SMN_C2PMSG_81, ~0u, 0, "sOS gone after the reset");
}

bool device::soc_init() {
  // tinygrad AM_SOC.init_hw (ip.py:30-40): open the doorbell aperture
  // (RCC_DEV0_EPF0_RCC_DOORBELL_APER_EN.bif_doorbell_aper_en, bit 0). Then
  // where the HDP flush lives: Linux soc21_common_hw_init ->
  // nbio_v4_3_remap_hdp_registers (address field 18:2 holds the byte offset).
  step_ = "SOC";
  return wreg(regRCC_DEV0_EPF0_RCC_DOORBELL_APER_EN, 1) &&
         wreg(regBIF_BX0_REMAP_HDP_MEM_FLUSH_CNTL, kMmioRemapHdpMemFlush);
}

bool device::page_tables_write() {
  step_ = "page tables";
  // GMMU=0 (usbgpu_am_plan.md §3.5): all VRAM once, plus the staging
  // window as uncached SYSTEM pages for the PSP's firmware reads.
  std::vector<vm_mapping> maps = {
      {vram_va(0) - device_layout::vm_base, 0, vram_bytes_, kPteVramDefault},
      {device_layout::staging_va - device_layout::vm_base, pci_.staging_bus_addr(),
       pci_.staging_bytes(),
       kPteSystem | kPteSnooped | kPteReadable | kPteWriteable | pte_mtype(mtype_uc)},
  };
  // The copy-out trigger's page (SDMA writes it after copying into the
  // window; tinygrad ops_amd.py maps the bridge's cq_buf the same way).
  if (const uint64_t t = pci_.staging_trigger_bus_addr())
    maps.push_back({device_layout::staging_trigger_page_va - device_layout::vm_base, t & ~0xFFFull,
                    0x1000,
                    kPteSystem | kPteSnooped | kPteReadable | kPteWriteable | pte_mtype(mtype_uc)});
  vm_tables t;
  std::string e;
  if (!vm_tables_build(maps, device_layout::page_tables, device_layout::page_table_bytes,
                       vm_options{}, &t, &e))
    return fail(e);
  for (const vm_table &tb : t.tables)
    if (!vram_write(tb.pa, tb.entries.data(), kVmTableBytes)) return false;
  return true;
}

bool device::hub_init(bool gc) {
  // tinygrad AM_GMC.init_hub / enable_vm_addressing (ip.py:110-155), in its
  // order; Linux gmc_v11_0_gart_enable -> mmhub_v3_0_gart_enable /
  // gfxhub_v3_0_gart_enable does the same steps (init_system_aperture_regs,
  // init_tlb_regs, init_cache_regs, setup_vmid_config): AGP off, the system
  // aperture covers VRAM's MC range, its default page and the protection-fault
  // dummy page, the L1 TLB and L2 cache on, VM context 0 spans
  // [vm_base, vm_end] with the root table, then a TLB flush makes it live.
  // Not done (unused with one VMID and per-VMID invalidation): the identity
  // aperture and the invalidation engines' address ranges.
  step_ = gc ? "GC hub" : "MM hub";
  if (!gc && !page_tables_write()) return false;
  step_ = gc ? "GC hub" : "MM hub";
  const uint64_t top = fb_base_ + vram_bytes_ - 1;
  const uint64_t start = device_layout::vm_base >> 12, end = device_layout::vm_end >> 12;
  const uint64_t root = device_layout::page_tables | 1;
  auto R = [gc](reg mm, reg g) { return gc ? g : mm; };
  auto update = [&](reg r, uint32_t mask, uint32_t value) {
    uint32_t v = 0;
    return rreg(r, &v) && wreg(r, (v & ~mask) | value);
  };
  return wreg(R(regMMMC_VM_AGP_BASE, regGCMC_VM_AGP_BASE), 0) &&
         wreg(R(regMMMC_VM_AGP_BOT, regGCMC_VM_AGP_BOT), kAgpBotOff) &&
         wreg(R(regMMMC_VM_AGP_TOP, regGCMC_VM_AGP_TOP), 0) &&
         wreg(R(regMMMC_VM_SYSTEM_APERTURE_LOW_ADDR, regGCMC_VM_SYSTEM_APERTURE_LOW_ADDR),
              uint32_t(fb_base_ >> 18)) &&
         wreg(R(regMMMC_VM_SYSTEM_APERTURE_HIGH_ADDR, regGCMC_VM_SYSTEM_APERTURE_HIGH_ADDR),
              uint32_t(top >> 18)) &&
         wreg(R(regMMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB,
                regGCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_LSB),
              lo32(device_layout::gmc_scratch >> 12)) &&
         wreg(R(regMMMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB,
                regGCMC_VM_SYSTEM_APERTURE_DEFAULT_ADDR_MSB),
              hi32(device_layout::gmc_scratch >> 12) & 0xF) &&
         wreg(R(regMMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32,
                regGCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_LO32),
              lo32(device_layout::gmc_dummy >> 12)) &&
         wreg(R(regMMVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32,
                regGCVM_L2_PROTECTION_FAULT_DEFAULT_ADDR_HI32),
              hi32(device_layout::gmc_dummy >> 12) & 0xF) &&
         update(R(regMMMC_VM_MX_L1_TLB_CNTL, regGCMC_VM_MX_L1_TLB_CNTL), kL1TlbMask, kL1TlbValue) &&
         update(R(regMMVM_L2_CNTL, regGCVM_L2_CNTL), kL2CntlMask, kL2CntlValue) &&
         update(R(regMMVM_L2_CNTL2, regGCVM_L2_CNTL2), 0, kL2Cntl2Invalidate) &&
         wreg(R(regMMVM_L2_CNTL3, regGCVM_L2_CNTL3), kL2Cntl3) &&
         wreg(R(regMMVM_L2_CNTL4, regGCVM_L2_CNTL4), kL2Cntl4) &&
         wreg(R(regMMVM_L2_CNTL5, regGCVM_L2_CNTL5), kL2Cntl5) &&
         wreg(R(regMMVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32,
                regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_LO32),
              lo32(start)) &&
         wreg(R(regMMVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32,
                regGCVM_CONTEXT0_PAGE_TABLE_START_ADDR_HI32),
              hi32(start)) &&
         wreg(R(regMMVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32,
                regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_LO32),
              lo32(end)) &&
         wreg(R(regMMVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32,
                regGCVM_CONTEXT0_PAGE_TABLE_END_ADDR_HI32),
              hi32(end)) &&
         wreg(R(regMMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32,
                regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_LO32),
              lo32(root)) &&
         wreg(R(regMMVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32,
                regGCVM_CONTEXT0_PAGE_TABLE_BASE_ADDR_HI32),
              hi32(root)) &&
         wreg(R(regMMVM_CONTEXT0_CNTL, regGCVM_CONTEXT0_CNTL), kVmContextCntl) && tlb_flush(gc);
}

bool device::tlb_flush(bool gc) {
  // tinygrad AM_GMC.flush_tlb (ip.py:89-108): HDP flush first (the walker
  // must see the page tables just written over BAR0); the MM hub's engine 17
  // is shared with the PSP and guarded by a semaphore, GC's is not; on gfx11
  // the MM hub's reserved-cache private invalidation is poked and read back.
  if (!hdp_flush()) return false;
  if (gc)
    return wreg(regGCVM_INVALIDATE_ENG17_REQ, kInvalidateVmid0) &&
           poll(regGCVM_INVALIDATE_ENG17_ACK, 1, 1, "GC TLB invalidate ack");
  uint32_t cid2 = 0;
  return poll(regMMVM_INVALIDATE_ENG17_SEM, 1, 1, "MM TLB semaphore") &&
         wreg(regMMVM_INVALIDATE_ENG17_REQ, kInvalidateVmid0) &&
         poll(regMMVM_INVALIDATE_ENG17_ACK, 1, 1, "MM TLB invalidate ack") &&
         wreg(regMMVM_INVALIDATE_ENG17_SEM, 0) &&
         rreg(regMMVM_L2_BANK_SELECT_RESERVED_CID2, &cid2) &&
         wreg(regMMVM_L2_BANK_SELECT_RESERVED_CID2, cid2 | kReservedCachePrivateInvalidation) &&
         rreg(regMMVM_L2_BANK_SELECT_RESERVED_CID2, &cid2);
}

bool device::ih_init() {
  // tinygrad AM_IH (ip.py:412-440), ring 0 only: base in 256-byte units,
  // the control fields of kIhRbCntlFixed with rb_size = log2(dwords), wptr
  // writeback to a VRAM word; enable (and interrupts) last. Interrupts never
  // reach the host over USB: ih_readout reads the ring on faults.
  step_ = "IH";
  const uint64_t ring = mc(device_layout::ih_ring), wb = mc(device_layout::queue_words + 0x200);
  const uint32_t cntl = (log2u(device_layout::ih_ring_bytes / 4) << 1) | kIhRbCntlFixed;
  return wreg(regIH_RB_BASE, uint32_t(ring >> 8)) && wreg(regIH_RB_BASE_HI, uint32_t(ring >> 40)) &&
         wreg(regIH_RB_WPTR_ADDR_LO, lo32(wb)) && wreg(regIH_RB_WPTR_ADDR_HI, hi32(wb) & 0xFFFF) &&
         wreg(regIH_RB_RPTR, 0) && wreg(regIH_RB_WPTR, 0) && wreg(regIH_RB_CNTL, cntl) &&
         wreg(regIH_RB_CNTL, cntl | kIhRbEnable | kIhEnableIntr);
}

// ---- PSP ------------------------------------------------------------------

bool device::psp_stage(const uint8_t *p, size_t n) {
  if (n > pci_.staging_bytes())
    return fail("firmware piece of " + std::to_string(n) +
                " bytes is larger than the staging window");
  std::string e;
  stats_.staged_bytes += n;
  if (!pci_.staging_write(0, p, n, &e))
    return fail("staging " + std::to_string(n) + " bytes: " + e);
  return true;
}

bool device::psp_submit(uint32_t cmd_id, const uint32_t *args, size_t nargs, uint32_t *tmr_size) {
  // tinygrad AM_PSP._ring_submit (ip.py:640-660): the command into its
  // buffer, a frame at the write pointer, advance C2PMSG_67, wait for the
  // fence, check resp.status. The fence word is cleared first so a value a
  // previous session left cannot pass for this command's.
  uint32_t wptr = 0;
  if (!rreg(regMP0_SMN_C2PMSG_67, &wptr)) return false;
  uint8_t cmd[kPspCmdBytes] = {};
  std::memcpy(cmd + kPspCmdId, &cmd_id, 4);
  if (nargs)
    std::memcpy(cmd + kPspCmdArgs, args, nargs * 4);  // args may be null when there are none
  uint32_t frame[kPspFrameBytes / 4] = {};
  const uint64_t cmd_mc = mc(device_layout::psp_cmd), fence_mc = mc(device_layout::psp_fence);
  frame[kPspFrameCmdLo / 4] = lo32(cmd_mc);
  frame[kPspFrameCmdHi / 4] = hi32(cmd_mc);
  frame[kPspFrameCmdSize / 4] = kPspCmdBytes;
  frame[kPspFrameFenceLo / 4] = lo32(fence_mc);
  frame[kPspFrameFenceHi / 4] = hi32(fence_mc);
  frame[kPspFrameFenceValue / 4] = wptr + 1;
  const uint32_t zero = 0;
  const uint64_t slot =
      device_layout::psp_ring + (uint64_t(wptr) * 4) % device_layout::psp_ring_bytes;
  if (!vram_write(device_layout::psp_fence, &zero, 4) ||
      !vram_write(device_layout::psp_cmd, cmd, sizeof cmd) ||
      !vram_write(slot, frame, sizeof frame) || !hdp_flush() ||
      !wreg(regMP0_SMN_C2PMSG_67, wptr + kPspFrameBytes / 4))
    return false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(opt_.timeout_ms);
  uint32_t fence = 0;
  for (;;) {
    if (!vram_read(device_layout::psp_fence, &fence, 4)) return false;
    if (fence == wptr + 1) break;
    if (std::chrono::steady_clock::now() > deadline)
      return fail("PSP did not answer (fence " + hex(fence) + ", want " + hex(wptr + 1) +
                  " after " + std::to_string(opt_.timeout_ms) + " ms); " + fault_readout());
  }
  uint32_t resp[2] = {};
  if (!vram_read(device_layout::psp_cmd + kPspRespStatus, resp, 4)) return false;
  if (resp[0] != 0) return fail("PSP refused the command: status " + hex(resp[0]));
  if (tmr_size && !vram_read(device_layout::psp_cmd + kPspRespTmrSize, tmr_size, 4)) return false;
  return true;
}

bool device::psp_boot() {
  const firmware_file *sos = nullptr;
  std::vector<const firmware_file *> ip_files;
  const firmware_file *smu = nullptr;
  for (const firmware_file &f : files_) {
    if (f.name.find("_sos.bin") != std::string::npos)
      sos = &f;
    else if (f.name.rfind("smu_", 0) == 0)
      smu = &f;
    else
      ip_files.push_back(&f);
  }
  if (!sos || !smu) return fail("the chip's firmware list has no sOS or SMU file");
  const uint64_t msg1 = device_layout::staging_va;
  uint32_t alive = 0;
  if (!rreg(regMP0_SMN_C2PMSG_81, &alive)) return false;
  if (!alive) {
    // The sOS components in tinygrad's order (ip.py:585-596); on MP0 13
    // the SPL table is the KDB again. Absent components are skipped.
    static const struct {
      uint32_t bin, cmd;
      const char *name;
    } comps[] = {{psp_fw_kdb, psp_bl_load_key_database, "KDB"},
                 {psp_fw_kdb, psp_bl_load_tos_spl_table, "SPL (KDB)"},
                 {psp_fw_sys_drv, psp_bl_load_sysdrv, "SYS_DRV"},
                 {psp_fw_soc_drv, psp_bl_load_socdrv, "SOC_DRV"},
                 {psp_fw_intf_drv, psp_bl_load_intfdrv, "INTF_DRV"},
                 {psp_fw_dbg_drv, psp_bl_load_dbgdrv, "DBG_DRV"},
                 {psp_fw_ras_drv, psp_bl_load_rasdrv, "RAS_DRV"},
                 {psp_fw_sos, psp_bl_load_sosdrv, "SOS"}};
    for (const auto &c : comps) {
      const psp_bin *b = sos->psp_find(c.bin);
      if (!b) continue;
      step_ = std::string("PSP bootloader ") + c.name;
      if (!poll(regMP0_SMN_C2PMSG_35, kPspBlReady, kPspBlReady, "bootloader ready") ||
          !psp_stage(sos->bytes.data() + b->offset, b->size) ||
          !wreg(regMP0_SMN_C2PMSG_36, uint32_t(msg1 >> 20)) || !wreg(regMP0_SMN_C2PMSG_35, c.cmd))
        return false;
      if (c.cmd != psp_bl_load_sosdrv &&
          !poll(regMP0_SMN_C2PMSG_35, kPspBlReady, kPspBlReady, "bootloader done"))
        return false;
    }
    step_ = "PSP sOS start";
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(opt_.timeout_ms);
    for (;;) {
      if (!rreg(regMP0_SMN_C2PMSG_81, &alive)) return false;
      if (alive) break;
      if (std::chrono::steady_clock::now() > deadline)
        return fail("sOS did not start (C2PMSG_81 stayed 0 for " + std::to_string(opt_.timeout_ms) +
                    " ms); " + fault_readout());
    }
  }
  step_ = "PSP ring";
  uint32_t size = 0;
  if (!rreg(regMP0_SMN_C2PMSG_71, &size)) return false;
  if (size && !wreg(regMP0_SMN_C2PMSG_64, kPspCtrlDestroyRings)) return false;
  const uint64_t ring = mc(device_layout::psp_ring);
  if (!poll(regMP0_SMN_C2PMSG_64, kPspBlReady, kPspBlReady, "sOS ready") ||
      !wreg(regMP0_SMN_C2PMSG_69, lo32(ring)) || !wreg(regMP0_SMN_C2PMSG_70, hi32(ring)) ||
      !wreg(regMP0_SMN_C2PMSG_71, uint32_t(device_layout::psp_ring_bytes)) ||
      !wreg(regMP0_SMN_C2PMSG_64, kPspRingTypeKm << 16) ||
      !poll(regMP0_SMN_C2PMSG_64, kPspRingReadyMask, kPspBlReady, "KM ring created"))
    return false;

  const psp_bin *toc = sos->psp_find(psp_fw_toc);
  uint32_t tmr_size = 0;
  if (toc) {
    step_ = "PSP LOAD_TOC";
    const uint32_t a[3] = {lo32(msg1), hi32(msg1), toc->size};
    if (!psp_stage(sos->bytes.data() + toc->offset, toc->size) ||
        !psp_submit(psp_cmd_load_toc, a, 3, &tmr_size))
      return false;
    if (tmr_size > kPspTmrMaxBytes)
      return fail("the TOC asks for a TMR of " + hex(tmr_size) + " bytes, more than the " +
                  hex(kPspTmrMaxBytes) + " reserved (tinygrad issue #15744 on an RX 7800M)");
  }
  auto load = [&](const firmware_file &f, const ucode_piece &p) {
    step_ = std::string("PSP LOAD_IP_FW ") + p.name + " (" + f.name + ")";
    const uint32_t a[4] = {lo32(msg1), hi32(msg1), p.size, p.fw_type};
    return psp_stage(f.bytes.data() + p.offset, p.size) &&
           psp_submit(psp_cmd_load_ip_fw, a, 4, nullptr);
  };
  std::string e;
  ucode_file_pieces smu_pieces;
  if (!ucode_locate(*smu, &smu_pieces, &e)) return fail(e);
  for (const ucode_piece &p : smu_pieces.pieces)
    if (!load(*smu, p)) return false;
  step_ = "PSP SETUP_TMR";
  const uint64_t tmr = mc(device_layout::tmr);
  const uint32_t ta[6] = {lo32(tmr),
                          hi32(tmr),
                          tmr_size,
                          kPspTmrFlagVirtPhyAddr,
                          lo32(device_layout::tmr),
                          hi32(device_layout::tmr)};
  if (!psp_submit(psp_cmd_setup_tmr, ta, 6, nullptr)) return false;
  for (const firmware_file *f : ip_files) {
    ucode_file_pieces pieces;
    if (!ucode_locate(*f, &pieces, &e)) return fail(e);
    for (const ucode_piece &p : pieces.pieces)
      if (!load(*f, p)) return false;
  }
  step_ = "PSP AUTOLOAD_RLC";
  return psp_submit(psp_cmd_autoload_rlc, nullptr, 0, nullptr);
}

// ---- SMU ------------------------------------------------------------------

bool device::smu_msg(uint32_t msg, uint32_t arg, uint32_t *out) {
  const std::string what = "SMU message " + hex(msg) + " answer";
  if (!wreg(regMP1_SMN_C2PMSG_90, 0) || !wreg(regMP1_SMN_C2PMSG_82, arg) ||
      !wreg(regMP1_SMN_C2PMSG_66, msg) ||
      !poll(regMP1_SMN_C2PMSG_90, ~0u, kSmuRespOk, what.c_str()))
    return false;
  return !out || rreg(regMP1_SMN_C2PMSG_82, out);
}

bool device::smu_init() {
  // tinygrad AM_SMU.init_hw (ip.py:182-185): the driver table, then features.
  step_ = "SMU";
  const uint64_t table = mc(device_layout::smu_table);
  return smu_msg(smu_set_driver_dram_addr_high, hi32(table), nullptr) &&
         smu_msg(smu_set_driver_dram_addr_low, lo32(table), nullptr) &&
         smu_msg(smu_enable_all_features, 0, nullptr);
}

// ---- GFX / SDMA -----------------------------------------------------------

bool device::gfx_init(bool partial) {
  // Linux gfx_v11_0_wait_for_rlc_autoload_complete: CP idle and the RLC's
  // bootload_complete (tinygrad ip.py:258 polls the same two registers).
  step_ = "GFX";
  if (!poll(regRLC_RLCS_BOOTLOAD_STATUS, kBootloadComplete, kBootloadComplete,
            "RLC autoload complete") ||
      !poll(regCP_STAT, ~0u, 0, "CP idle") || !hub_init(true))
    return false;
  // A reused GPU: reset the compute front end first, as tinygrad's
  // reset_mec does (GRBM_SOFT_RESET soft_reset_cp bit 0, soft_reset_cpc 18).
  if (partial &&
      !(wreg(regGRBM_SOFT_RESET, kSoftResetCp | kSoftResetCpc) && wreg(regGRBM_SOFT_RESET, 0)))
    return false;
  step_ = "MEC";
  // tinygrad _config_mec/_enable_mec: the RS64 program counter from the
  // MEC file's ucode_start (in dwords), pipe 0 reset while halted; on a cold
  // boot the RLC/TCP/SH_MEM setup between (rlc_setup); then run.
  const uint64_t pc = mec_start_ >> 2;
  if (!wreg(regCP_MEC_RS64_CNTL, kRs64Halt | kRs64Pipe0Reset) ||
      !wreg(regCP_MEC_RS64_PRGRM_CNTR_START, lo32(pc)) ||
      !wreg(regCP_MEC_RS64_PRGRM_CNTR_START_HI, hi32(pc)) || (!partial && !rlc_setup()) ||
      !wreg(regCP_MEC_DOORBELL_RANGE_LOWER, 0) || !wreg(regCP_MEC_DOORBELL_RANGE_UPPER, 0xf8) ||
      !wreg(regCP_MEC_RS64_CNTL, kRs64Pipe0Active))
    return false;
  return compute_queue_init();
}

bool device::rlc_setup() {
  // tinygrad AM_GFX.init_hw after _config_mec: TCP_CNTL's
  // golden bit, the RLC F32 on, SRM on with auto-increment, SPM MC policy,
  // the GRBM read timeout, then SH_MEM_CONFIG/BASES. tinygrad programs all 16
  // VMIDs; every queue here runs in VMID 0, so only VMID 0 (GRBM_GFX_CNTL
  // vmid 7:4 selects the bank): 3 USB writes instead of 48.
  step_ = "RLC";
  uint32_t tcp = 0, srm = 0, grbm = 0;
  return rreg(regTCP_CNTL, &tcp) && wreg(regTCP_CNTL, tcp | kTcpCntlGolden) &&
         wreg(regRLC_CNTL, 1) && rreg(regRLC_SRM_CNTL, &srm) &&
         wreg(regRLC_SRM_CNTL, srm | kRlcSrmEnable) && wreg(regRLC_SPM_MC_CNTL, 0xf) &&
         rreg(regGRBM_CNTL, &grbm) && wreg(regGRBM_CNTL, (grbm & ~0xFFu) | kGrbmReadTimeout) &&
         wreg(regGRBM_GFX_CNTL, 0 << 4) && wreg(regSH_MEM_CONFIG, kShMemConfig) &&
         wreg(regSH_MEM_BASES, kShMemBases) && wreg(regGRBM_GFX_CNTL, 0);
}

bool device::clock_gating_set() {
  // tinygrad AM_GFX.set_clockgating_state, the CGCG/CGLS part:
  // the RLC must be in safe mode while gating changes (Linux
  // gfx_v11_0_update_gfx_clock_gating brackets it with rlc.funcs->set_safe_mode);
  // the RLC acknowledges by clearing the cmd bit.
  step_ = "GFX clock gating";
  uint32_t cg = 0;
  return wreg(regRLC_SAFE_MODE, kRlcSafeModeEnter) &&
         poll(regRLC_SAFE_MODE, 1, 0, "RLC safe mode entered") &&
         rreg(regRLC_CGCG_CGLS_CTRL, &cg) &&
         wreg(regRLC_CGCG_CGLS_CTRL, (cg & ~kCgcgMask) | kCgcgValue) &&
         wreg(regRLC_SAFE_MODE, kRlcSafeModeExit);
}

bool device::compute_queue_init() {
  // tinygrad AM_GFX.setup_ring (ip.py:319-351): a v11 compute MQD in VRAM,
  // its HQD part (dwords 0x80..) copied into the 56 HQD registers of
  // me 1 pipe 0 queue 0 (GRBM_GFX_CNTL meid bits 3:2), then ACTIVE.
  step_ = "compute queue";
  std::vector<uint32_t> mqd(kMqdBytes / 4, 0);
  auto H = [&](reg r) -> uint32_t & {
    return mqd[kMqdHqdFirstDword + (reg_info(r).offset - kHqdRegFirst)];
  };
  const uint64_t mqd_va = vram_va(device_layout::mqd),
                 ring_va = vram_va(device_layout::compute_ring);
  const uint64_t rptr_va = vram_va(device_layout::queue_words), wptr_va = rptr_va + 8;
  const uint64_t eop_va = vram_va(device_layout::eop);
  mqd[0] = 0xC0310800;  // v11 MQD header (tinygrad setup_ring)
  H(regCP_MQD_BASE_ADDR) = lo32(mqd_va);
  mqd[kMqdHqdFirstDword + 1] = hi32(mqd_va);
  H(regCP_HQD_PQ_BASE) = lo32(ring_va >> 8);
  mqd[kMqdHqdFirstDword + (reg_info(regCP_HQD_PQ_BASE).offset + 1 - kHqdRegFirst)] =
      hi32(ring_va >> 8);
  mqd[kMqdHqdFirstDword + (0x1fb4 - kHqdRegFirst)] = lo32(rptr_va);  // CP_HQD_PQ_RPTR_REPORT_ADDR
  mqd[kMqdHqdFirstDword + (0x1fb5 - kHqdRegFirst)] = hi32(rptr_va);
  mqd[kMqdHqdFirstDword + (0x1fb6 - kHqdRegFirst)] = lo32(wptr_va);  // CP_HQD_PQ_WPTR_POLL_ADDR
  mqd[kMqdHqdFirstDword + (0x1fb7 - kHqdRegFirst)] = hi32(wptr_va);
  H(regCP_HQD_PQ_DOORBELL_CONTROL) = ((kDoorbellMecRing0 * 2) << 2) | kDoorbellEn;
  // PQ_CONTROL: queue_size 5:0 = log2(dwords) - 1, rptr_block_size 13:8 = 5.
  H(regCP_HQD_PQ_CONTROL) = (log2u(device_layout::compute_ring_bytes / 4) - 1) | (5u << 8);
  H(regCP_HQD_EOP_BASE_ADDR) = lo32(eop_va >> 8);
  mqd[kMqdHqdFirstDword + (0x1fcf - kHqdRegFirst)] = hi32(eop_va >> 8);
  mqd[kMqdHqdFirstDword + (0x1fd0 - kHqdRegFirst)] =
      log2u(device_layout::eop_bytes / 4) - 1;  // EOP_CONTROL
  uint32_t active = 0;
  std::string e;
  const uint32_t zeros[4] = {};
  compute_wptr_ = kicked_wptr_[0] = 0;
  queue_lost_[0] = false;
  if (!vram_write(device_layout::queue_words, zeros, sizeof zeros) ||
      !vram_write(device_layout::mqd, mqd.data(), kMqdBytes) || !hdp_flush() ||
      !wreg(regGRBM_GFX_CNTL, 1u << 2))
    return false;
  ++stats_.reg_writes;
  if (!pci_.bar_write(kBarMmio, uint64_t(regs_[regCP_MQD_BASE_ADDR]) * 4, &mqd[kMqdHqdFirstDword],
                      kHqdRegCount, &e))
    return fail("writing the HQD registers: " + e);
  if (!wreg(regCP_HQD_ACTIVE, 1) || !rreg(regCP_HQD_ACTIVE, &active) || !wreg(regGRBM_GFX_CNTL, 0))
    return false;
  if (!(active & 1))
    return fail("the compute queue did not become active (CP_HQD_ACTIVE reads " + hex(active) +
                "); " + fault_readout());
  return true;
}

bool device::sdma_init() {
  // tinygrad AM_SDMA (ip.py:503-560): F32 unhalted, queue 0 ring with rptr
  // writeback and wptr polling, doorbell sDMA_ENGINE0 (0x100, in dwords x2).
  step_ = "SDMA";
  const uint64_t ring = vram_va(device_layout::sdma_ring),
                 rptr = vram_va(device_layout::queue_words + 0x100);
  const uint64_t wptr = rptr + 8;
  // RB_CNTL: rb_enable 0, rb_size 5:1 = log2(dwords), wptr_poll_enable 8,
  // rptr_writeback_enable 12, rptr_writeback_timer 20:16 = 4, rb_priv 23.
  const uint32_t cntl = (log2u(device_layout::sdma_ring_bytes / 4) << 1) | (1u << 8) | (1u << 12) |
                        (4u << 16) | (1u << 23);
  const uint32_t zeros[4] = {};
  sdma_wptr_ = kicked_wptr_[1] = 0;
  queue_lost_[1] = false;
  return vram_write(device_layout::queue_words + 0x100, zeros, sizeof zeros) && hdp_flush() &&
         wreg(regSDMA0_F32_CNTL, 0) && wreg(regSDMA0_QUEUE0_MINOR_PTR_UPDATE, 1) &&
         wreg(regSDMA0_QUEUE0_RB_RPTR, 0) && wreg(regSDMA0_QUEUE0_RB_WPTR, 0) &&
         wreg(regSDMA0_QUEUE0_RB_BASE, lo32(ring >> 8)) &&
         wreg(regSDMA0_QUEUE0_RB_BASE_HI, hi32(ring >> 8)) &&
         wreg(regSDMA0_QUEUE0_RB_RPTR_ADDR_LO, lo32(rptr)) &&
         wreg(regSDMA0_QUEUE0_RB_RPTR_ADDR_HI, hi32(rptr)) &&
         wreg(regSDMA0_QUEUE0_RB_WPTR_POLL_ADDR_LO, lo32(wptr)) &&
         wreg(regSDMA0_QUEUE0_RB_WPTR_POLL_ADDR_HI, hi32(wptr)) &&
         wreg(regSDMA0_QUEUE0_DOORBELL_OFFSET, (kDoorbellSdma0 * 2) << 2) &&
         wreg(regSDMA0_QUEUE0_DOORBELL, kSdmaDoorbellEnable) &&
         wreg(regSDMA0_QUEUE0_MINOR_PTR_UPDATE, 0) && wreg(regSDMA0_QUEUE0_RB_CNTL, cntl | 1) &&
         wreg(regSDMA0_QUEUE0_IB_CNTL, 1) && wreg(regSCRATCH_REG6, 1);
}

bool device::queue_submit(bool sdma, const uint32_t *words, size_t n, std::string *err) {
  return queue_write(sdma, words, n, err) && queue_kick(sdma, false, err);
}

bool device::queue_write(bool sdma, const uint32_t *words, size_t n, std::string *err) {
  step_ = sdma ? "SDMA queue" : "compute queue";
  const uint64_t ring = sdma ? device_layout::sdma_ring : device_layout::compute_ring;
  const uint64_t ring_bytes =
      sdma ? device_layout::sdma_ring_bytes : device_layout::compute_ring_bytes;
  uint64_t &wptr = sdma ? sdma_wptr_ : compute_wptr_;
  const uint64_t unit = sdma ? 1 : 4;  // the write pointer counts bytes on SDMA, dwords on compute
  bool ok = booted_ || fail("not booted");
  // A kick that failed may or may not have reached the GPU: the queue's write pointer is unknown,
  // and words written after it would run behind the lost submission's (another model's commands
  // in memory it has freed since). Refused until the next boot sets the queue up again.
  if (ok && queue_lost_[sdma])
    ok = fail(
        "an earlier submission's write pointer or doorbell was lost on the wire, so the "
        "queue's state is unknown; free the models on this GPU and load them again (the "
        "next boot sets the queue up anew)");
  // Words written but never published (the caller gave up before its kick): overwritten.
  if (ok) wptr = kicked_wptr_[sdma];
  if (ok && 4 * uint64_t(n) >= ring_bytes)
    ok = fail(std::to_string(n) + " words do not fit the ring");
  uint64_t at = (wptr * unit) % ring_bytes;
  if (ok && sdma && at + 4 * n > ring_bytes) {
    // Zero words (SDMA NOPs) to the ring's end, from a static block: a replay (and the copies
    // through the SRAM, one SDMA submission per chunk) must not allocate when the ring wraps.
    static const uint32_t nops[1024] = {};
    for (uint64_t off = at; ok && off < ring_bytes; off += sizeof nops)
      ok = vram_write(ring + off, nops, size_t(std::min<uint64_t>(sizeof nops, ring_bytes - off)));
    wptr += (ring_bytes - at) / unit;
    at = 0;
  }
  // Compute rings wrap word by word.
  const size_t first = std::min<size_t>(n, size_t((ring_bytes - at) / 4));
  ok = ok && vram_write(ring + at, words, 4 * first) &&
       (first == n || vram_write(ring, words + first, 4 * (n - first)));
  if (ok) wptr += 4 * n / unit;
  if (!ok) *err = err_;
  return ok;
}

bool device::queue_kick(bool sdma, bool without_bulk, std::string *err) {
  step_ = sdma ? "SDMA queue" : "compute queue";
  const uint64_t wptr = sdma ? sdma_wptr_ : compute_wptr_;
  const uint64_t wptr_pa = device_layout::queue_words + (sdma ? 0x108 : 0x8);
  const uint32_t w[2] = {lo32(wptr), hi32(wptr)};
  const uint64_t bell = uint64_t(sdma ? kDoorbellSdma0 : kDoorbellMecRing0) * 8;
  std::string e;
  // `without_bulk`: over control transfers only, while a staging read is armed.
  auto bar_write = [&](int bar, uint64_t off) {
    return without_bulk ? pci_.bar_write_without_bulk(bar, off, w, 2, &e)
                        : pci_.bar_write(bar, off, w, 2, &e);
  };
  // The write pointer's 8 aligned bytes into VRAM, the HDP flush, then the doorbell.
  const auto publish = [&] {
    bool ok = booted_ || fail("not booted");
    if (ok) {
      stats_.vram_bytes_written += 8;
      hdp_dirty_ = true;
      if (!bar_write(kBarVram, wptr_pa)) ok = fail("writing the write pointer: " + e);
    }
    ok = ok && hdp_flush(without_bulk);
    if (ok && !bar_write(kBarDoorbell, bell)) ok = fail("ringing the doorbell: " + e);
    return ok;
  };
  // Publishing the same write pointer twice is harmless (the engine has run to it or will), so a
  // transfer lost on the wire is sent once more, as the teardown's writes are; only a second loss
  // leaves the queue in a state nobody knows (queue_lost_).
  const bool ok = publish() || (booted_ && publish());
  if (ok) kicked_wptr_[sdma] = wptr;
  if (!ok && booted_) queue_lost_[sdma] = true;
  if (!ok) *err = err_;
  return ok;
}

bool device::wait_vram64(uint64_t pa, uint64_t target, unsigned timeout_ms, std::string *err) {
  step_ = "wait";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  uint64_t v = 0;
  for (;;) {
    if (!vram_read(pa, &v, 8)) break;
    if (v >= target) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      fail("the value at VRAM " + hex(pa) + " is " + hex(v) + ", not yet " + hex(target) +
           " after " + std::to_string(timeout_ms) + " ms; " + fault_readout());
      break;
    }
  }
  *err = err_;
  return false;
}

bool device::teardown(std::string *err) {
  // tinygrad AMDev.fini (amdev.py:225-230): SDMA off and reset, the HQD
  // dequeued (reset waves), then SCRATCH_REG6 = 0: the next open may reuse
  // this boot.
  // Every step is tried even after one failed (a transfer lost on the cable), and each register
  // write once more when its transfer failed (they are idempotent; the bridge starts each memory
  // stream afresh): a queue left running keeps fetching. The first failure is the one reported;
  // SCRATCH_REG6 stays 1 after any, so the next open does not trust this boot.
  step_ = "teardown";
  std::string first;
  bool ok = true;
  const auto step = [&](bool done) {
    if (!done && ok) first = err_;
    ok = ok && done;
    return done;
  };
  const auto write = [&](reg r, uint32_t v) { return step(wreg(r, v) || wreg(r, v)); };
  write(regSDMA0_QUEUE0_RB_CNTL, 0);
  write(regSDMA0_QUEUE0_IB_CNTL, 0);
  write(regSDMA0_QUEUE0_DOORBELL, 0);
  write(regGRBM_SOFT_RESET, kSoftResetSdma0);
  write(regGRBM_SOFT_RESET, 0);
  if (write(regGRBM_GFX_CNTL, 1u << 2)) {
    uint32_t active = 1;  // unread: dequeue anyway
    step(rreg(regCP_HQD_ACTIVE, &active) || rreg(regCP_HQD_ACTIVE, &active));
    for (int attempt = 0; attempt < 2 && (active & 1); ++attempt)
      if (step(wreg(regCP_HQD_DEQUEUE_REQUEST, 2) && wreg(regSPI_COMPUTE_QUEUE_RESET, 1) &&
               poll(regCP_HQD_ACTIVE, 1, 0, "compute queue dequeued")))
        active = 0;
    write(regGRBM_GFX_CNTL, 0);
  }
  if (ok) step(wreg(regSCRATCH_REG6, 0));
  booted_ = false;
  if (!ok) *err = err_ = first;
  return ok;
}

}  // namespace capgraph::am
