// The Adreno (a6xx) HCQ target: the encoder writing the HCQ verbs as a6xx CP packets (one compute
// dispatch of an ir3 kernel = its registers, its shader and constants through CP_LOAD_STATE6 and
// CP_EXEC_CS), the load-time checks of AdrenoKernel facts, and the registration of device "adreno"
// (KGSL, drivers/kgsl). The whole launch list is recorded once into an indirect buffer by the HCQ
// core (runtime/hcq/graph.cpp); a replay submits one command calling it.
#pragma once
#include <cstdint>

#include "hcq/target.h"

namespace capgraph::adreno {

extern const hcq::target adreno_target;

// What an Adreno dispatch carries in hcq::dispatch::facts.
struct adreno_dispatch {
  uint64_t shader = 0;  // GPU address of the kernel's ir3 program (SP_CS_OBJ_START)
  uint32_t kernel = 0;  // its index in the capture (the encoder reads its AdrenoKernel)
};

// The capture's chip id check: whether the device chip `device_chip` ("a630") runs captures for
// `capture_target` ("adreno-a630"); *why names both when not.
bool adreno_chip_matches(const char *capture_target, const std::string &device_chip,
                         const std::string &device_name, std::string *why);

}  // namespace capgraph::adreno
