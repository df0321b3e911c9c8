// The NVIDIA GPU launch facts of a capture's kernels (schema NvKernel), for `capgraph inspect`.
#pragma once
#include <string>

namespace capgraph {

namespace fb {
struct Capture;
}

// A table of every kernel's SM, registers, shared and local memory, constant bank 0 and block,
// with the ptxas that made the cubins, or "" when no kernel has NVIDIA facts.
std::string inspect_nv_text(const fb::Capture *c);
// `,\n "nv_kernels": [...]` to close the inspect --json object with, or "" when no kernel has
// NVIDIA facts.
std::string inspect_nv_json(const fb::Capture *c);

}  // namespace capgraph
