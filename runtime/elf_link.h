// Links one ELF64 relocatable object (ET_REL, as LLVM or GCC emit it for x86-64 or aarch64) into
// this process: the small part of a static linker that kernels need, done once at load.
//
// The object's SHF_ALLOC sections go into one mapping laid out as three page-aligned parts:
//   [text + call stubs] read+exec   [rodata + GOT] read-only   [data + bss] read+write
// Undefined symbols resolve only against the fixed table of runtime-provided functions
// (elf_runtime_imports); anything else is an error naming the symbol.
//
// Sources: System V ABI (gABI) "Object Files" chapter; System V AMD64 psABI 1.0 section 4.4
// (relocation types and formulas); "ELF for the Arm 64-bit Architecture (AArch64)" (AAELF64),
// section 5.7 (relocation types and formulas).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "capgraph_runtime.h"

namespace capgraph {

// Marks a function that calls code elf_link mapped. Clang's -fsanitize=undefined includes
// -fsanitize=function, which checks every indirect call by reading a signature word and a type
// hash in the 8 bytes before the callee's entry. Linked kernels are not compiled with it (and need
// not be compiled by clang), and a kernel at the start of the image has an unmapped page there: the
// check itself faults (SEGV at the caller, on the load from entry - 8). Sources: clang
// UndefinedBehaviorSanitizer docs, -fsanitize=function; clang CodeGen "prologue" 0xc105cafe.
#if defined(__clang__)
#define CAPGRAPH_CALLS_LINKED_CODE __attribute__((no_sanitize("function")))
#else
#define CAPGRAPH_CALLS_LINKED_CODE
#endif

// A function the runtime provides to kernels, by name.
struct elf_import {
  const char *name;
  void *address;
};

// The only functions a kernel may call: memcpy memset memmove expf logf powf tanhf sqrtf erff
// sinf cosf fmodf floorf ceilf roundf nearbyintf.
const std::vector<elf_import> &elf_runtime_imports();

struct elf_symbol {
  std::string name;
  void *address;
  bool global;  // STB_GLOBAL or STB_WEAK
  bool code;    // defined in an executable section
};

// One linked object. Owns its mapping; move-only.
class elf_image {
 public:
  elf_image() = default;
  elf_image(const elf_image &) = delete;
  elf_image &operator=(const elf_image &) = delete;
  elf_image(elf_image &&other) noexcept;
  elf_image &operator=(elf_image &&other) noexcept;
  ~elf_image();

  // Address of a defined symbol (a global one if the name is also used by a local), or nullptr.
  void *symbol_address(const char *name) const;
  // The same, for a symbol in an executable section only (a kernel entry).
  void *code_address(const char *name) const;

  uint8_t *base = nullptr;  // the mapping
  size_t size = 0;
  std::vector<elf_symbol> symbols;  // defined, named symbols
  size_t stub_count = 0;            // import call stubs emitted (for tests)
  size_t got_count = 0;             // GOT entries built (for tests)
  bool low_mapping = false;         // mapped below 2 GiB for R_X86_64_32/32S (for tests)

 private:
  void *lookup(const char *name, bool code_only) const;
};

// Links `data` (not kept after the call) into *out. On failure returns CAPGRAPH_ERR_FORMAT
// (malformed object, unsupported relocation or section, unknown import), CAPGRAPH_ERR_TARGET
// (an object for another machine) or CAPGRAPH_ERR_MEMORY, and describes the problem in *err
// without a file prefix (the caller adds which file and program).
capgraph_status elf_link(const uint8_t *data, size_t size, elf_image *out, std::string *err);

}  // namespace capgraph
