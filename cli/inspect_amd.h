// The AMD GPU launch facts of a capture's kernels (schema AmdKernel), for `capgraph inspect`.
#pragma once
#include <string>

namespace capgraph {

namespace fb {
struct Capture;
}

// A table of every kernel's registers, LDS, scratch and workgroup, or "" when no kernel has AMD
// facts.
std::string inspect_amd_text(const fb::Capture *c);
// `,\n "amd_kernels": [...]` to close the inspect --json object with, or "" when no kernel has AMD
// facts.
std::string inspect_amd_json(const fb::Capture *c);

}  // namespace capgraph
