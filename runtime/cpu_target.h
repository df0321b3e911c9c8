// Whether this machine can run code compiled for a capture's Target: the CPU architecture (from
// the target name) and the CPU features the code requires (from the LLVM feature string).
#pragma once
#include <string>

#include "capgraph_runtime.h"

namespace capgraph {

// "cpu-x86_64" or "cpu-aarch64": the Target.name of captures this runtime can replay.
const char *cpu_target_name();

// CAPGRAPH_OK, or CAPGRAPH_ERR_TARGET with *why naming the other architecture or the first
// required feature ("+avx512f") this CPU lacks. Features this runtime does not know are not
// checked (LLVM host feature strings list dozens; the ones that matter for kernels are known).
capgraph_status cpu_target_check(const char *name, const char *features, std::string *why);

// Whether this CPU has one feature, by its LLVM name without the sign ("avx2"); false for
// features the runtime does not know. *known tells which.
bool cpu_feature_present(const std::string &feature, bool *known);

}  // namespace capgraph
