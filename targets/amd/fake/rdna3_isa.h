// Internal to the RDNA3 emulator (rdna3_decode.cpp, rdna3_emu.cpp): the encodings and what
// execution needs to know about each instruction. Sources as in rdna3_emu.h.
#pragma once
#include <cstdint>
#include <string>

#include "rdna3_emu.h"

namespace capgraph::amd {

// Microcode formats (ISA guide ch. 15). VOP3SD is VOP3 with a scalar destination.
enum rdna3_enc : uint8_t {
  SOP2,
  SOPK,
  SOP1,
  SOPC,
  SOPP,
  SMEM,
  VOP1,
  VOP2,
  VOPC,
  VOP3,
  VOP3SD,
  FLAT,
  GLOBAL,
  DS,
  VOPD,
  VOP3P,
  MUBUF,
  enc_count
};
const char *rdna3_enc_name(rdna3_enc e);

// What execution needs to know about an op, worked out once from its name.
struct rdna3_op_facts {
  bool cmpx = false, f32_result = false, store = false, sign = false;
  int8_t cmp_kind = -1;  // 0 f, 1 lt, 2 eq, 3 le, 4 gt, 5 ne, 6 ge, 7 t (integer compares)
  char cmp_type =
      0;  // 'f' f32, 'e' f16, 'c' class, 'i'/'u' 32-bit, 'h'/'w' i16/u16, 'I'/'U' i64/u64
  uint8_t bytes = 0;  // memory instructions: bytes per lane
  uint8_t d16 = 0;    // D16 memory instructions: 1 the low 16 bits of the VGPR, 2 the high 16
};
const rdna3_op_facts &rdna3_facts(rdna3_op o);

inline bool rdna3_is_vopc(rdna3_op o) {
  return o >= rdna3_op::v_cmp_f_f32 && o <= rdna3_op::v_cmpx_class_f32;
}

std::string rdna3_hex(uint64_t v);

}  // namespace capgraph::amd
