// The compiler's one error type: a message a person can act on (which file, node, op, target).
// The CLI catches it, prints it and exits non-zero. (The runtime never throws; see runtime/.)
#pragma once
#include <stdexcept>
#include <string>

namespace capgraph {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace capgraph
