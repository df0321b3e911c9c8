// The compiler pipeline: ONNX file -> capture bytes. One entry point used by the CLI and tests.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/passes.h"
#include "schedule/kernel.h"

namespace capgraph {

struct CompileOptions {
  std::string target = "cpu";
  InputShapes input_shapes;
  InputBindings bound_inputs;  // --bind: graph inputs made compile-time constants (graph_import)
  int threads = 1;             // thread count the static partition is made for
  int jobs = 0;                // code generation threads (0: one per core)
  int64_t fold_limit_bytes =
      kFoldLimitBytes;  // memory constant folding may allocate (graph/passes.h)
  // --precision: "fp16" stores float32 weights and activations as float16 (math stays float32;
  // schedule/half_storage.h), "fp32" keeps them; "" takes the target's default (TargetEntry).
  std::string precision;
  // --calibrate NAME=FILE.npy: the model's own input values for float16's per-tensor fallback
  // (half_calibrate.h); inputs not given get generated values.
  std::map<std::string, Tensor> calibration_inputs;
  // Every table field written, defaults too (FlatBufferBuilder::ForceDefaults): for fuzz seeds, so
  // a byte mutation can reach a field whose compiled value is its default (tests/fuzz).
  bool all_fields = false;
};

struct CompileReport {
  int onnx_nodes = 0, folded_batchnorms = 0, folded_pads = 0, removed_nodes = 0;
  int kernels = 0, unique_kernels = 0, fused = 0, blocked_buffers = 0;
  int operands_fused = 0;     // elementwise producers folded into GPU products' staging (Adreno)
  int input_casts_fused = 0;  // integer-input cast + scale chains folded into products' loads
  std::string precision = "fp32";      // what was used: fp16 or fp32
  int half_buffers = 0;                // float32 buffers stored as float16
  std::vector<std::string> kept_fp32;  // "NAME (reason)": left float32 under fp16
  // The calibration (fp16 only): host runs, the inputs it ran on and the one float16 harmed most
  // ("own" or a generated kind), the worst output's relative difference from float32 with every
  // candidate float16 and after the fallback, and its time.
  int calibration_runs = 0, calibration_inputs = 0;
  std::string calibration_worst_input;
  double calibration_error_all_half = 0, calibration_error = 0, ms_calibrate = 0;
  uint64_t arena_bytes = 0, arena_naive_bytes = 0, weight_bytes = 0, capture_bytes = 0;
  double ms_read = 0, ms_graph = 0, ms_schedule = 0, ms_codegen = 0, ms_write = 0;
};

// Reads, optimises and lowers the model into a scheduled program (no code generation).
Program compile_schedule(const std::string &onnx_path, const CompileOptions &opt,
                         CompileReport *report);

// The whole pipeline. Throws Error with a message naming the file/node/op/target on failure.
std::vector<uint8_t> compile_model(const std::string &onnx_path, const CompileOptions &opt,
                                   CompileReport *report);

}  // namespace capgraph
