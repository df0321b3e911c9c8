// Writes the capture file: the scheduled program, its compiled code, the memory plan and the
// replay list, in schema/capture.fbs form. It only writes: the memory plan and the thread
// partitions are planned before (capture_plan.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "capture/capture_plan.h"
#include "codegen/cpu_codegen.h"
#include "schedule/kernel.h"
#include "target/target_table.h"

namespace capgraph {

struct CaptureInfo {
  std::string model_name;
  int threads = 1;
  // The environment knobs that may have changed the output, "NAME=value" (knobs.h).
  std::vector<std::string> compile_options;
  // Optional reference sample: input and output bytes in Program::inputs/outputs order.
  std::vector<std::vector<uint8_t>> sample_inputs, sample_outputs;
  bool all_fields = false;  // CompileOptions::all_fields
};

// Serialises the program for the target that produced `code` (target table): its programs,
// with the kernels' launch facts and host twins where it has them, placed and split as `plan`
// says (capture_plan.h).
std::vector<uint8_t> capture_build(const Program &p, const TargetCode &code,
                                   const CapturePlan &plan, const CaptureInfo &info);

// The same for a CPU target's code.
std::vector<uint8_t> capture_build(const Program &p, const CodegenResult &code, const CpuTarget &t,
                                   const CapturePlan &plan, const CaptureInfo &info);

}  // namespace capgraph
