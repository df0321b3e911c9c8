// The Adreno chips capgraph knows, written once: the a630 (Snapdragon 845, the comma three's GPU),
// its chip id as KGSL reports it and the per-chip numbers of Mesa's device table. The compiler
// (adreno_codegen.h: what its schedule plans with, the ids a capture records), the runtime
// (adreno_hcq.cpp: the load-time limits, the magic register, private memory), the KGSL driver
// (drivers/kgsl: which device runs which captures) and the fake KGSL read this one table.
// Dependency-free (the facts layer, targets/add_target.cmake FACTS).
#pragma once
#include <cstdint>
#include <string>

namespace capgraph::adreno {

struct chip {
  const char *name;  // "a630": the part of the capture target after "adreno-"
  // KGSL_PROP_DEVICE_INFO's chip id, (core << 24) | (major << 16) | (minor << 8) | patch; any
  // patch level is the same chip (chip_by_id).
  uint32_t chip_id;
  uint32_t gpu_id;             // Mesa's GPUId (ir3 and its disassembler take it)
  uint32_t shared_bytes;       // cs_shared_mem_size: shared memory one workgroup may allocate
  uint32_t wave_size;          // threadsize_base: a wave (ir3 may double it)
  uint32_t reg_size_vec4;      // the register file of one wave slot, in vec4
  uint32_t instr_cache_units;  // instr_cache_size: 128-byte units CP_LOAD_STATE6 may preload
  uint32_t num_sp_cores;       // SP cores (num_ccu), each with its own private memory
  uint32_t gmem_bytes;         // gmem_size
  uint32_t tpl1_dbg_eco_cntl;  // magic_regs TPL1_DBG_ECO_CNTL
};

const chip *chip_find(const char *name);   // "a630"; nullptr when unknown
const chip *chip_by_id(uint32_t chip_id);  // by core, major and minor (patch ignored)
std::string chip_names();                  // "adreno-a630"

}  // namespace capgraph::adreno
