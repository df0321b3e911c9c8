// Writes the capture file: the scheduled program, its compiled code, the memory plan and the
// replay list, in schema/capture.fbs form.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/amdgpu_codegen.h"
#include "codegen/cpu_codegen.h"
#include "memory/arena_plan.h"
#include "schedule/kernel.h"

namespace capgraph {

struct CaptureInfo {
  std::string model_name;
  int threads = 1;
  // Optional reference sample: input and output bytes in Program::inputs/outputs order.
  std::vector<std::vector<uint8_t>> sample_inputs, sample_outputs;
};

// Plans the arena and serialises everything. plan_out (optional) receives the plan.
std::vector<uint8_t> capture_build(const Program &p, const CodegenResult &code, const CpuTarget &t, const CaptureInfo &info,
                                   ArenaPlan *plan_out = nullptr);

// An AMD GPU capture's code: code objects with their kernels' launch facts, and the host twins
// (the same Program compiled by cpu_codegen for twin_target; no objects means no twins).
struct AmdCaptureCode {
  AmdTarget target;
  AmdCodegenResult gpu;
  CodegenResult twins;
  CpuTarget twin_target;
};

// The same for an AMD GPU: programs are amdgpu_code_objects, each kernel carries its AmdKernel
// facts and (when present) its twin; launches run one work item per output element on one queue
// (threads = 1, partition [0, work_size]). Every capture is version 1.2 (KernelBounds).
std::vector<uint8_t> capture_build_amd(const Program &p, const AmdCaptureCode &code, const CaptureInfo &info,
                                       ArenaPlan *plan_out = nullptr);

// Buffer lifetimes in kernel steps, as the planner sees them (inputs/outputs pinned).
std::vector<ArenaRequest> capture_arena_requests(const Program &p, std::vector<int> &arena_buffers);

}  // namespace capgraph
