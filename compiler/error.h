// The compiler's one error type: a message a person can act on (which file, node, op, target).
// The CLI catches it, prints it and exits non-zero. (The runtime never throws; see runtime/.)
#pragma once
#include <stdexcept>
#include <string>

namespace capgraph {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
  // Defined out of line (error.cpp, built with RTTI) so Error's vtable and type info are emitted
  // once, there. The LLVM-facing files are built with -fno-rtti; inline, each of them emitted its
  // own vtable copy without type info, and when the linker kept one of those, typeid/dynamic_cast
  // on an Error broke (UBSan's vptr check reported every e.what()).
  ~Error() override;
};

}  // namespace capgraph
