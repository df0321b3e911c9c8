// The Adreno (a6xx) launch facts of a capture's kernels (schema AdrenoKernel), for `capgraph
// inspect`.
#pragma once
#include <string>

namespace capgraph {

namespace fb {
struct Capture;
}

// A table of every kernel's registers, constants, memory and dispatch shape, or "" when no kernel
// has Adreno facts.
std::string inspect_adreno_text(const fb::Capture *c);
// `,\n "adreno_kernels": [...]` to close the inspect --json object with, or "" when no kernel has
// Adreno facts.
std::string inspect_adreno_json(const fb::Capture *c);

}  // namespace capgraph
