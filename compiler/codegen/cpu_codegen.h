// CPU code generation: kernel IR -> LLVM IR -> optimised native ELF objects (x86-64, aarch64).
//
// Every kernel becomes one function with the runtime's CPU kernel ABI:
//   void entry(void *const *buffers, const int64_t *scalars, int64_t begin, int64_t end)
// buffers[] holds the kernel's distinct buffers (its "slots": the stored buffer first, then the
// loaded ones in order of first use); [begin, end) is a range of work items, each one row of the
// innermost parallel axis, so any static split of the range across threads is valid.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codegen/cpu_target.h"
#include "schedule/kernel.h"

namespace capgraph {

struct CodegenKernel {
  int object = 0;          // which object holds the code
  std::string symbol;      // entry point (identical kernels share one)
  std::vector<int> slots;  // Program buffer index of each slot
  int64_t work_size = 1;   // work items
};

struct CodegenResult {
  std::vector<std::vector<uint8_t>> objects;  // ELF relocatable objects
  std::vector<CodegenKernel> kernels;         // one per Program kernel, same order
  int unique_kernels = 0;
};

// Compiles every kernel of the program; `jobs` objects are built in parallel threads.
CodegenResult cpu_codegen(const Program &p, const CpuTarget &t, int jobs);

// Whether LLVM's loop strength reduction runs on kernel k's code for target t (off for the
// AVX2 window tiles that keep their reduction loops: issue 27, cpu_codegen.cpp).
bool cpu_kernel_strength_reduce(const Kernel &k, const Program &p, const CpuTarget &t);
// The assembly text of every unique kernel of the program (tests look at the machine code).
std::string cpu_codegen_assembly(const Program &p, const CpuTarget &t);

// The distinct buffers of a kernel in slot order.
std::vector<int> kernel_slots(const Kernel &k);
// Number of work items of a kernel (product of its parallel axes but the innermost).
int64_t kernel_work_size(const Kernel &k);

}  // namespace capgraph
