// NVIDIA GPU captures for the tests, made from the runtime's CPU fixture captures: every kernel
// gets NvKernel facts and 256 bytes of "code" in a small stand-in cubin (never executed: the fake
// runs the host twins), and keeps its CPU kernel as its host twin.
#pragma once
#include "capture_fixture.h"

namespace capgraph::test {

// `cpu` turned into a capture for nv-<chip> ("sm90", "sm89", "sm86"): program 0 stays (the twins),
// the cubin is appended, kernel i's code is at 0x1000 + 256 * i, every kernel runs [0, work_size)
// of its (single) launch as its twin range, constant bank 0 as ptxas lays it out for the chip.
capture_spec nv_spec(const capture_spec &cpu, const char *chip = "sm90");

}  // namespace capgraph::test
