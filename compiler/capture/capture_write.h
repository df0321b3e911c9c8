// Writes the capture file: the scheduled program, its compiled code, the memory plan and the
// replay list, in schema/capture.fbs form.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpu_codegen.h"
#include "memory/arena_plan.h"
#include "schedule/kernel.h"
#include "target/target_table.h"

namespace capgraph {

struct CaptureInfo {
  std::string model_name;
  int threads = 1;
  // The environment knobs that changed the output, "NAME=value" (compile.h, k_output_knobs).
  std::vector<std::string> compile_options;
  // Optional reference sample: input and output bytes in Program::inputs/outputs order.
  std::vector<std::vector<uint8_t>> sample_inputs, sample_outputs;
};

// Plans the arena and serialises everything for the target that produced `code` (target
// table): its programs, with the kernels' launch facts and host twins where it has them.
std::vector<uint8_t> capture_build(const Program &p, const TargetCode &code,
                                   const CaptureInfo &info, ArenaPlan *plan_out = nullptr);

// The same for a CPU target's code.
std::vector<uint8_t> capture_build(const Program &p, const CodegenResult &code, const CpuTarget &t,
                                   const CaptureInfo &info, ArenaPlan *plan_out = nullptr);

// Buffer lifetimes in kernel steps, as the planner sees them (inputs/outputs pinned).
std::vector<ArenaRequest> capture_arena_requests(const Program &p, std::vector<int> &arena_buffers);

}  // namespace capgraph
