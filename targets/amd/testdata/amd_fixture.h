// AMD GPU captures for the tests, made from the runtime's CPU fixture captures: every kernel gets
// a kernel descriptor in a small, plausible AMDGPU code object (ELF header, 64-byte descriptors,
// an s_endpgm at each 256-aligned entry: never executed, the fake runs the host twins) and keeps
// its CPU kernel as its host twin.
#pragma once
#include "capture_fixture.h"

namespace capgraph::test {

// The code object: descriptor of kernel i at amd_descriptor_offset(i), code at 0x1000 + 256 * i
// (past 59 kernels, from the first 256-byte boundary after the last descriptor).
std::vector<uint8_t> amd_code_object(const std::vector<kernel_spec> &kernels, uint32_t wave = 32);
uint64_t amd_descriptor_offset(uint32_t kernel);

// `cpu` turned into a capture for amd-<chip>: program 0 stays (the twins), the code object is
// appended, every kernel runs [0, work_size) of its (single) launch as its twin range. Kernels
// are wave32, or wave64 for gfx9 chips.
capture_spec amd_spec(const capture_spec &cpu, const char *chip = "gfx1100");

// A chain of `kernels` launches of c_scale (y = x * 1.7 + 0.3) over n floats, ping-ponging
// between two arena buffers, then one copy step: input "x", outputs "y" and "x_copy".
capture_spec scale_chain_spec(uint32_t kernels, int64_t n = 64);

}  // namespace capgraph::test
