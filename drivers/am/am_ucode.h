// am_ucode — the pieces of each gfx11 firmware file the PSP loads with
// LOAD_IP_FW, located through the file's own header (am_firmware checked
// the common one), each offset and size checked against the file length.
// The bytes stay AMD's and are never interpreted.
//
// Which piece is where (Linux amdgpu_ucode.c amdgpu_ucode_init_single_fw,
// the PSP load path; layouts in amdgpu_ucode.h, MIT), in file byte offsets:
//   smu_*.bin   smc header: SMU = the common payload
//               [ucode_array_offset_bytes, + ucode_size_bytes).
//   sdma_*.bin  sdma_firmware_header_v2_0 (major 2): ucode_feature_version
//               @32, ctx_ucode_size_bytes @36, ctx_jt_offset @40,
//               ctx_jt_size @44, ctl_ucode_offset @48, ctl_ucode_size_bytes
//               @52. SDMA_UCODE_TH0 = [ucode_array_offset_bytes, +ctx size);
//               SDMA_UCODE_TH1 = [ctl_ucode_offset, +ctl size).
//   *_mec.bin   gfx_firmware_header_v2_0 (major 2, RS64): ucode_size_bytes
//               @36, ucode_offset_bytes @40, data_size_bytes @44,
//               data_offset_bytes @48, ucode_start_addr_lo/hi @52/@56.
//               RS64_MEC = [ucode_array_offset_bytes, + ucode_size_bytes@36);
//               RS64_MEC_P0_STACK = [data_offset_bytes, + data_size_bytes).
//               ucode_start goes to CP_MEC_RS64_PRGRM_CNTR_START later.
//   *_imu.bin   imu_firmware_header_v1_0 (major 1): imu_iram_ucode_size_bytes
//               @32, imu_dram_ucode_size_bytes @40. IMU_I = [ucode_array_
//               offset_bytes, + iram size); IMU_D follows it directly.
//   *_rlc.bin   rlc_firmware_header_v2_3 (major 2, minor >= 3): RLC_G = the
//               common payload; rlc_iram_ucode_size/offset_bytes @156/@160,
//               rlc_dram_ucode_size/offset_bytes @164/@168, rlcp size/offset
//               @180/@184, rlcv size/offset @196/@200 (v2_0 is 104 bytes,
//               v2_1 adds 13 words, v2_2 4, v2_3 8); offsets from the file
//               start (amdgpu_rlc.c, gfx_v11_0_init_rlcp_rlcv_microcode).
// Only MEC pipe 0's stack is loaded: the AM driver runs one MEC pipe, as
// tinygrad's does (usbgpu_am_plan.md §1.9 lists the same twelve pieces).
// GFX_FW_TYPE values: Linux psp_gfx_if.h enum psp_gfx_fw_type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "am_firmware.h"

namespace capgraph::am {

enum gfx_fw_type : uint32_t {
  gfx_fw_rlc_v = 7,
  gfx_fw_rlc_g = 8,
  gfx_fw_smu = 18,
  gfx_fw_rlc_p = 25,
  gfx_fw_rlc_iram = 26,
  gfx_fw_rlc_dram_boot = 48,
  gfx_fw_imu_i = 68,
  gfx_fw_imu_d = 69,
  gfx_fw_sdma_ucode_th0 = 71,
  gfx_fw_sdma_ucode_th1 = 72,
  gfx_fw_rs64_mec = 89,
  gfx_fw_rs64_mec_p0_stack = 94,
};

// One LOAD_IP_FW payload: file.bytes[offset, offset + size).
struct ucode_piece {
  uint32_t fw_type = 0;
  const char *name = "";  // "RS64_MEC", ... for logs and messages
  uint32_t offset = 0, size = 0;
};

struct ucode_file_pieces {
  std::vector<ucode_piece> pieces;  // in the order tinygrad loads them
  uint64_t mec_ucode_start = 0;     // *_mec.bin only
};

// The pieces of one file, chosen by its name (smu_, sdma_, _mec, _imu, _rlc;
// psp sOS files go through the bootloader instead, see am_firmware.h). False
// with a message naming the file, the header version or the field when the
// header is not the expected one, a piece is empty, or a piece runs past the
// end of the file.
bool ucode_locate(const firmware_file &f, ucode_file_pieces *out, std::string *err);

}  // namespace capgraph::am
