// What one PTX arithmetic, logic, comparison or conversion instruction computes for one lane, from
// its sources' bits (the interpreter's lanes call it; ptx_exec.cpp has the memory and control
// instructions). Semantics from NVIDIA's "Parallel Thread Execution ISA" 8.5, each instruction's
// section ("Integer Arithmetic", "Floating-Point", "Comparison and Selection", "Logic and Shift",
// "Data Movement and Conversion: cvt", "Half Precision Floating-Point").
#pragma once
#include <cstdint>
#include <string>

#include "ptx_parse.h"

namespace capgraph::nv {

// `src` holds the instruction's sources (already read as bits, at most 4); the result is the
// destination's bits (a predicate is 0 or 1). False with `*why` for a type/modifier combination it
// does not model (the caller names the instruction and kernel).
bool ptx_alu(const ptx_instr &in, const uint64_t *src, uint64_t *dst, std::string *why);

// Whether the instruction is one ptx_alu computes (not memory or control).
bool ptx_alu_handles(ptx_op op);

// The class the profile counts it in.
enum class ptx_class : uint8_t { int_alu, fp32, fp64, fp16, sfu, convert, control, memory };
ptx_class ptx_class_of(const ptx_instr &in);

// IEEE binary16 <-> binary32, round to nearest even (cvt.rn.f16.f32) and exact widening.
uint16_t ptx_f32_to_f16(float f);
float ptx_f16_to_f32(uint16_t h);

}  // namespace capgraph::nv
