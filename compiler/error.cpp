#include "error.h"

namespace capgraph {

// The key function: see error.h.
Error::~Error() = default;

}  // namespace capgraph
