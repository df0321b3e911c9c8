// am_firmware — the amdgpu firmware files the AM boot hands to the PSP, read
// from a folder (default /lib/firmware/amdgpu, Debian's firmware-amd-graphics
// package in non-free-firmware) and their container headers checked before
// any byte of them is used. The payloads are AMD's and are never interpreted,
// only located; no AMD firmware is ever committed (tests write their own).
//
// Layouts (little-endian), from Linux drivers/gpu/drm/amd/amdgpu/amdgpu_ucode.h
// (MIT), checks after amdgpu_ucode.c / amdgpu_psp.c:
//   common_firmware_header @0, 32 bytes: u32 size_bytes (the whole file),
//     u32 header_size_bytes, u16 header_version_major/minor,
//     u16 ip_version_major/minor, u32 ucode_version, u32 ucode_size_bytes,
//     u32 ucode_array_offset_bytes (payload offset from the file start),
//     u32 crc32. Linux's amdgpu_ucode_validate accepts a file only when
//     size_bytes equals its length; it does not check crc32, nor do we (the
//     bytes it covers are not documented), but it is kept for logs.
//   psp_firmware_header_v2_0 (the *_sos.bin of MP0 13.x): the common header,
//     u32 psp_fw_bin_count, then that many psp_fw_bin_desc {u32 fw_type,
//     u32 fw_version, u32 offset_bytes, u32 size_bytes} at byte 36 (v2.1 puts
//     u32 psp_aux_fw_bin_index first, descriptors at 40). A bin's bytes start
//     at ucode_array_offset_bytes + offset_bytes (amdgpu_psp.c
//     parse_sos_bin_descriptor). Linux refuses 26 or more descriptors
//     (UCODE_MAX_PSP_PACKAGING).
//   psp_fw_type: 1 SOS, 2 SYS_DRV, 3 KDB, 4 TOC, 5 SPL, 6 RL, 7 SOC_DRV,
//     8 INTF_DRV, 9 DBG_DRV, 10 RAS_DRV, 11 IPKEYMGR_DRV, 12 SPDM_DRV.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::am {

constexpr const char *kFirmwareDirDefault = "/lib/firmware/amdgpu";
constexpr const char *kFirmwareDirEnv = "CAPGRAPH_AMD_FIRMWARE";  // overrides the default folder
constexpr const char *kFirmwarePackage = "firmware-amd-graphics";
constexpr uint32_t kFirmwareCommonHeaderBytes = 32;
constexpr uint32_t kFirmwarePspMaxBins = 26;  // UCODE_MAX_PSP_PACKAGING: count must be below
constexpr uint64_t kFirmwareMaxFileBytes = 16u << 20;  // the largest amdgpu file is < 1 MiB

enum psp_fw_type : uint32_t {
  psp_fw_sos = 1,
  psp_fw_sys_drv = 2,
  psp_fw_kdb = 3,
  psp_fw_toc = 4,
  psp_fw_spl = 5,
  psp_fw_rl = 6,
  psp_fw_soc_drv = 7,
  psp_fw_intf_drv = 8,
  psp_fw_dbg_drv = 9,
  psp_fw_ras_drv = 10,
  psp_fw_ipkeymgr_drv = 11,
  psp_fw_spdm_drv = 12,
};

struct firmware_header {
  uint32_t size_bytes = 0, header_size_bytes = 0;
  uint16_t header_version_major = 0, header_version_minor = 0;
  uint16_t ip_version_major = 0, ip_version_minor = 0;
  uint32_t ucode_version = 0, ucode_size_bytes = 0, ucode_array_offset_bytes = 0, crc32 = 0;
};

// One PSP bin, located: its bytes are file.bytes[offset, offset + size).
struct psp_bin {
  uint32_t fw_type = 0, fw_version = 0;
  uint32_t offset = 0, size = 0;
};

struct firmware_file {
  std::string name;  // "psp_13_0_0_sos.bin"
  std::vector<uint8_t> bytes;
  firmware_header header;
  std::vector<psp_bin> psp_bins;  // *_sos.bin only
  const psp_bin *psp_find(uint32_t fw_type) const;
  // The common header's payload: bytes[ucode_array_offset_bytes, + ucode_size_bytes).
  const uint8_t *ucode() const { return bytes.data() + header.ucode_array_offset_bytes; }
};

// "SOS", "SYS_DRV", ... for messages; "type N" for others.
std::string psp_fw_type_name(uint32_t fw_type);

// The folder to read from: $CAPGRAPH_AMD_FIRMWARE when set and not empty,
// else /lib/firmware/amdgpu.
std::string firmware_dir();

// Checks the headers of a file already in memory. A name ending in
// "_sos.bin" must carry a PSP v2 header with its SOS and SYS_DRV bins (the
// two the bootloader cannot start without). False with a message naming the
// file, the field and its byte offset; *out is then empty.
bool firmware_parse(const std::string &name, std::vector<uint8_t> bytes, firmware_file *out,
                    std::string *err);

// Reads dir/name and parses it. A missing file is an error naming the file,
// the folder, the Debian package and the override variable.
bool firmware_read(const std::string &dir, const std::string &name, firmware_file *out,
                   std::string *err);

// Reads every file of a chip (am_chip.h chip::firmware), stopping at the first error.
bool firmware_read_all(const std::string &dir, const std::vector<std::string> &names,
                       std::vector<firmware_file> *out, std::string *err);

}  // namespace capgraph::am
