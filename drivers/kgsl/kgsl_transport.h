// The HCQ transport for Qualcomm Adreno GPUs through the KGSL kernel driver (/dev/kgsl-3d0, as on
// comma devices): memory (GPUOBJ_ALLOC + mmap, GPU address = CPU address), one draw context, a
// submission = the words put in a ring buffer and one GPU_COMMAND naming them as an indirect
// buffer, waits on the signal in memory bounded by DEVICE_WAITTIMESTAMP_CTXTID, and imports of
// caller memory (MAP_USER_MEM). Every system call goes through a kgsl_sys (kgsl_sys.h), so a fake
// KGSL can stand behind it. Sources: kgsl_uapi.h; Mesa tu_knl_kgsl.cc and decode/replay.c, tinygrad
// runtime/ops_qcom.py (the order of the calls and the flags: facts only).
#pragma once
#include <memory>
#include <string>

#include "hcq/transport.h"
#include "kgsl_sys.h"

namespace capgraph::kgsl {

constexpr const char *device_path = "/dev/kgsl-3d0";

// Opens "adreno" (or "adreno:0"; a phone has one GPU) through `sys`. `prefix` is the device-name
// prefix for messages ("adreno", "fake-adreno"). Errors say what is missing: no /dev/kgsl-3d0, no
// permission, a failed ioctl.
capgraph_status kgsl_open_with(std::shared_ptr<kgsl_sys> sys, const char *prefix,
                               const char *device, std::unique_ptr<hcq::transport> *out,
                               std::string *err);
// The same through the real system calls.
capgraph_status kgsl_open(const char *device, std::unique_ptr<hcq::transport> *out,
                          std::string *err);

// "a630" for chip id 0x06030001 (core, major, minor digits).
std::string kgsl_chip_name(uint32_t chip_id);

// One line for `capgraph devices`: the GPU found (chip, whether capgraph compiles for it), or why
// there is none.
std::string kgsl_devices_describe(kgsl_sys &sys, const char *prefix = "adreno");

}  // namespace capgraph::kgsl
