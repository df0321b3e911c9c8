// Environment knobs that change what the compiler emits (experiments: layouts, tiling, strategy).
// Every getenv whose value can change a capture goes through knob_get, which remembers the name;
// compile_model records each remembered knob that is set into the capture
// (Capture.compile_options, shown by `capgraph inspect` as "compiled with"), so a capture says how
// it was made, and a new knob is recorded without being listed anywhere.
//
// Read with plain getenv, and not recorded, because they do not change the output: the knobs
// that only print (CAPGRAPH_DEBUG_TILE, CAPGRAPH_DEBUG_LAYOUT, CAPGRAPH_DEBUG_CODEGEN,
// CAPGRAPH_DUMP_IR, CAPGRAPH_DUMP_NIR) and the tool lookup of the NVIDIA target (CAPGRAPH_PTXAS,
// PATH, CUDA_PATH, TMPDIR: which ptxas runs, as which LLVM is linked, is the build's choice, not an
// option).
#pragma once
#include <string>
#include <vector>

namespace capgraph {

// getenv(name), remembering that this process's output may depend on `name`.
const char *knob_get(const char *name);

// "NAME=value" for every knob read so far in this process that is set now, sorted by name.
std::vector<std::string> knobs_set();

}  // namespace capgraph
