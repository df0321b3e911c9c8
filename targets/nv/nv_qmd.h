// NVIDIA launch descriptors (QMD, "queue meta data") as data: every field capgraph writes or a fake
// reads, for QMD V03_00 (Ampere/Ada: AMPERE_COMPUTE_B, ADA_COMPUTE_A) and V04_00 (Hopper:
// HOPPER_COMPUTE_A), is one row of nv_qmd_table.cpp with its bit range and the header line it comes
// from. The encoder, the decoder and a future fake NV GPU all use that one table.
//
// Bit ranges are absolute bit numbers in the QMD, as NVIDIA's headers write them: MW(hi:lo) is
// bits lo..hi counted from bit 0 of dword 0. Which version a chip takes: nv_plan.md §0.2 (Mesa NVK
// nak/qmd.rs picks Qmd4_0 from HOPPER_COMPUTE_A on).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nv_chips.h"  // qmd_version

namespace capgraph::nv {

// QMD size in dwords: 64 for V03_00, 96 for V04_00 (nv_plan.md §2.7; clcbc0qmd.h's last V04 field,
// OUTER_STICKY_OVERFLOW, is bit 3071).
uint32_t qmd_dwords(qmd_version v);

// One id per field; a field's vendor name may differ per version (CTA_RASTER_WIDTH in V03 is
// GRID_WIDTH in V04). Indexed fields are listed for index 0, the only one capgraph uses.
enum class qmd_field : uint8_t {
  QMD_GROUP_ID,
  SM_GLOBAL_CACHING_ENABLE,  // V03 only
  QMD_TYPE,                  // V04 only
  INVALIDATE_TEXTURE_HEADER_CACHE,
  INVALIDATE_TEXTURE_SAMPLER_CACHE,
  INVALIDATE_TEXTURE_DATA_CACHE,
  INVALIDATE_SHADER_DATA_CACHE,
  INVALIDATE_INSTRUCTION_CACHE,
  INVALIDATE_SHADER_CONSTANT_CACHE,
  CWD_MEMBAR_TYPE,
  API_VISIBLE_CALL_LIMIT,
  SAMPLER_INDEX,
  QMD_MINOR_VERSION,
  QMD_MAJOR_VERSION,
  GRID_WIDTH,
  GRID_HEIGHT,
  GRID_DEPTH,
  CTA_THREAD_DIMENSION0,
  CTA_THREAD_DIMENSION1,
  CTA_THREAD_DIMENSION2,
  REGISTER_COUNT,
  BARRIER_COUNT,
  SHARED_MEMORY_SIZE,
  MIN_SM_CONFIG_SHARED_MEM_SIZE,
  MAX_SM_CONFIG_SHARED_MEM_SIZE,
  TARGET_SM_CONFIG_SHARED_MEM_SIZE,
  SHADER_LOCAL_MEMORY_LOW_SIZE,
  SHADER_LOCAL_MEMORY_HIGH_SIZE,
  SASS_VERSION,
  PROGRAM_ADDRESS_LOWER,
  PROGRAM_ADDRESS_UPPER,
  PROGRAM_PREFETCH_ADDR_LOWER_SHIFTED,
  PROGRAM_PREFETCH_ADDR_UPPER_SHIFTED,
  PROGRAM_PREFETCH_SIZE,
  PROGRAM_PREFETCH_TYPE,
  CONSTANT_BUFFER0_VALID,
  CONSTANT_BUFFER0_INVALIDATE,
  CONSTANT_BUFFER0_ADDR_LOWER,  // V03: the address; V04: ADDR_LOWER_SHIFTED6 (address >> 6)
  CONSTANT_BUFFER0_ADDR_UPPER,  // V03: bits 48:32; V04: ADDR_UPPER_SHIFTED6
  CONSTANT_BUFFER0_SIZE_SHIFTED4,
  RELEASE0_ENABLE,
  RELEASE0_STRUCTURE_SIZE,
  RELEASE0_PAYLOAD64B,
  RELEASE0_ADDRESS_LOWER,
  RELEASE0_ADDRESS_UPPER,
  RELEASE0_PAYLOAD_LOWER,
  RELEASE0_PAYLOAD_UPPER,
  DEPENDENT_QMD0_ENABLE,
  DEPENDENT_QMD0_ACTION,
  DEPENDENT_QMD0_PREFETCH,
  DEPENDENT_QMD0_POINTER,
  count_,
};

struct qmd_field_desc {
  const char *name;  // the vendor's name in this version, without NVxxC0_QMDVxx_xx_
  uint16_t lo, hi;   // MW(hi:lo); absent fields have name nullptr
  uint16_t line;     // line of the defining header (clc6c0qmd.h for V03, clcbc0qmd.h for V04)
};

// The field's layout in `v`; name == nullptr when the version has no such field.
const qmd_field_desc &qmd_field_info(qmd_version v, qmd_field f);
// The V03 or V04 name of a field, for messages ("GRID_WIDTH").
std::string qmd_field_name(qmd_version v, qmd_field f);

// Writes `value` into the field of `qmd` (qmd_dwords(v) words). Returns an error message (empty on
// success) when the version has no such field or the value does not fit its bits; on error the
// QMD is unchanged.
std::string qmd_set(std::vector<uint32_t> &qmd, qmd_version v, qmd_field f, uint64_t value);
// Reads the field; 0 for a field the version does not have.
uint64_t qmd_get(const std::vector<uint32_t> &qmd, qmd_version v, qmd_field f);

}  // namespace capgraph::nv
