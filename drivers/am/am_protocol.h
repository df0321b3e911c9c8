// am_protocol — the message formats the AM boot speaks with the GPU's
// firmware engines, shared by the driver and the fake GPU: the PSP (MP0)
// bootloader mailbox and KM ring, and the SMU (MP1) message mailbox.
//
// Sources (Linux drivers/gpu/drm/amd/amdgpu/psp_gfx_if.h, MIT; the same in
// tinygrad autogen am/am.py; the protocol as tinygrad's AM_PSP / AM_SMU run
// it, ip.py:182-248 and 562-706, shared/research/usbgpu_am_plan.md §1.4-1.5):
// - Bootloader: wait C2PMSG_35 bit 31 (ready), put the component in a 1 MiB
//   aligned buffer, C2PMSG_36 = its address >> 20, C2PMSG_35 = command.
//   enum psp_bootloader_cmd: LOAD_SYSDRV 0x10000, LOAD_SOSDRV 0x20000,
//   LOAD_KEY_DATABASE 0x80000, LOAD_SOCDRV 0xB0000, LOAD_DBGDRV 0xC0000,
//   LOAD_INTFDRV 0xD0000, LOAD_RASDRV 0xE0000, LOAD_TOS_SPL_TABLE 0x10000000.
//   The sOS is alive when C2PMSG_81 != 0.
// - KM ring: C2PMSG_69/70 ring address lo/hi, 71 size, 64 = ring type << 16
//   (PSP_RING_TYPE__KM 2); ready when C2PMSG_64 & 0x8000FFFF == 0x80000000;
//   GFX_CTRL_CMD_ID_DESTROY_RINGS 0x30000 to 64. C2PMSG_67 = write pointer
//   in dwords. Each submission is a 64-byte psp_gfx_rb_frame at the write
//   pointer: cmd_buf_addr_lo @0, hi @4, cmd_buf_size @8, fence_addr_lo @12,
//   hi @16, fence_value @20. The command is a 1024-byte psp_gfx_cmd_resp:
//   cmd_id @8, the command union @28 (load_ip_fw: fw_phy_addr_lo/hi, fw_size,
//   fw_type; load_toc: toc_phy_addr_lo/hi, toc_size; setup_tmr:
//   buf_phy_addr_lo/hi, buf_size, flags (bit 1 virt_phy_addr),
//   system_phy_addr_lo/hi), the response @864: status @864, tmr_size @880.
//   GFX_CMD_ID: SETUP_TMR 5, LOAD_IP_FW 6, LOAD_TOC 32, AUTOLOAD_RLC 33.
// - SMU: C2PMSG_90 = 0 (response), 82 = argument, 66 = message; done when
//   90 == 1 (SMU_RESP_OK); the answer is read back from 82. The debug
//   channel (mode-1 reset on MP0 13.0.0) uses 75 (message), 53 (argument),
//   54 (response). Message ids, Linux smu_v13_0_0_ppsmc.h: GetSmuVersion 0x2,
//   EnableAllSmuFeatures 0x6, SetDriverDramAddrHigh 0xE, Low 0xF,
//   SetSoftMinByFreq 0x19, SetSoftMaxByFreq 0x1A; debug Mode1Reset 2
//   (DEBUGSMC_MSG_Mode1Reset, smu_v13_0_0_ppt.c).
// - Scratch registers: a finished AM boot leaves SCRATCH_REG7 = 0xA0000008
//   and SCRATCH_REG6 = 1 while the session runs, 0 after a clean teardown
//   (tinygrad amdev.py:168-197, 225-230; our own values, same meaning).
#pragma once

#include <cstdint>

namespace capgraph::am {

enum psp_bl_cmd : uint32_t {
  psp_bl_load_sysdrv = 0x10000,
  psp_bl_load_sosdrv = 0x20000,
  psp_bl_load_key_database = 0x80000,
  psp_bl_load_socdrv = 0xB0000,
  psp_bl_load_dbgdrv = 0xC0000,
  psp_bl_load_intfdrv = 0xD0000,
  psp_bl_load_rasdrv = 0xE0000,
  psp_bl_load_tos_spl_table = 0x10000000,
};
constexpr uint32_t kPspBlReady = 0x80000000u;
constexpr uint32_t kPspRingTypeKm = 2;
constexpr uint32_t kPspCtrlDestroyRings = 0x30000;
constexpr uint32_t kPspRingReadyMask = 0x8000FFFFu;

enum psp_gfx_cmd : uint32_t {
  psp_cmd_setup_tmr = 5,
  psp_cmd_load_ip_fw = 6,
  psp_cmd_load_toc = 32,
  psp_cmd_autoload_rlc = 33,
};

constexpr uint32_t kPspFrameBytes = 64;
constexpr uint32_t kPspFrameCmdLo = 0, kPspFrameCmdHi = 4, kPspFrameCmdSize = 8,
                   kPspFrameFenceLo = 12, kPspFrameFenceHi = 16, kPspFrameFenceValue = 20;
constexpr uint32_t kPspCmdBytes = 1024;
constexpr uint32_t kPspCmdId = 8, kPspCmdArgs = 28, kPspRespStatus = 864, kPspRespTmrSize = 880;
constexpr uint32_t kPspTmrMaxBytes = 0x1300000;  // tinygrad's max_tmr_size (19 MiB)
constexpr uint32_t kPspTmrFlagVirtPhyAddr = 2;

enum smu_msg : uint32_t {
  smu_get_version = 0x2,
  smu_enable_all_features = 0x6,
  smu_set_driver_dram_addr_high = 0xE,
  smu_set_driver_dram_addr_low = 0xF,
  smu_set_soft_min_by_freq = 0x19,
  smu_set_soft_max_by_freq = 0x1A,
};
constexpr uint32_t kSmuRespOk = 1;
constexpr uint32_t kSmuDebugMode1Reset = 2;

constexpr uint32_t kAmBootMagic = 0xA0000008u;  // SCRATCH_REG7 after an AM boot

// Doorbell slots (64-bit each, byte offset = index * 8 in BAR2... in dwords
// index * 2): compute ring 0 is AMDGPU_NAVI10_DOORBELL_MEC_RING0 = 3, SDMA
// engine 0 is 0x100 (amdgpu_doorbell.h; tinygrad ip.py setup_ring / SDMA).
constexpr uint32_t kDoorbellMecRing0 = 3;
constexpr uint32_t kDoorbellSdma0 = 0x100;

}  // namespace capgraph::am
