// RDNA3 emulator, decoding: machine words -> rdna3_inst, once per kernel, following control flow
// from the entry. See rdna3_emu.h for what is modelled and the sources; section numbers refer to
// AMD's "RDNA3 Instruction Set Architecture Reference Guide".
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "rdna3_isa.h"

namespace capgraph::amd {
namespace {

const char *const enc_names[] = {"SOP2",   "SOPK", "SOP1", "SOPC",  "SOPP",   "SMEM",
                                 "VOP1",   "VOP2", "VOPC", "VOP3",  "VOP3SD", "FLAT",
                                 "GLOBAL", "DS",   "VOPD", "VOP3P", "MUBUF"};

using op = rdna3_op;

const char *const op_names[] = {
#define OP(name, enc, opcode) #name,
#include "rdna3_ops.inc"
#undef OP
};

using op_facts = rdna3_op_facts;

// opcode -> op, per encoding. VOP3 also holds the VOP1 (0x180 + op), VOP2 (0x100 + op) and VOPC
// (op) instructions in their 64-bit form (ch. 15.3.3 "VOP3").
struct op_tables {
  op t[enc_count][1024];
  op_facts facts[size_t(op::count)];
  op_tables() {
    for (size_t i = 0; i < size_t(op::count); i++) {
      const std::string n = op_names[i];
      op_facts &fa = facts[i];
      const std::string ty = n.substr(n.rfind('_') + 1);
      fa.f32_result = n.find("_f32") != std::string::npos && n.rfind("v_cvt_", 0) != 0 &&
                      n != "v_frexp_exp_i32_f32";
      if (n.rfind("v_cmp", 0) == 0) {
        fa.cmpx = n.rfind("v_cmpx_", 0) == 0;
        const std::string rel =
            n.substr(fa.cmpx ? 7 : 6, n.size() - (fa.cmpx ? 7 : 6) - ty.size() - 1);
        static const char *const rels[] = {"f", "lt", "eq", "le", "gt", "ne", "ge", "t"};
        for (int k = 0; k < 8; k++)
          if (rel == rels[k]) fa.cmp_kind = int8_t(k);
        fa.cmp_type = rel == "class" ? 'c'
                      : ty == "f32"  ? 'f'
                      : ty == "f16"  ? 'e'
                      : ty == "i32"  ? 'i'
                      : ty == "u32"  ? 'u'
                      : ty == "i16"  ? 'h'
                      : ty == "u16"  ? 'w'
                      : ty == "i64"  ? 'I'
                                     : 'U';
      }
      if (n.rfind("global_", 0) == 0 || n.rfind("flat_", 0) == 0 || n.rfind("ds_", 0) == 0) {
        fa.store = n.find("_store_") != std::string::npos;
        fa.sign = ty[0] == 'i';
        fa.bytes = uint8_t(std::atoi(ty.c_str() + 1) / 8);
        if (n.find("_d16_") != std::string::npos)
          fa.d16 = n.find("_d16_hi_") != std::string::npos ? 2 : 1;
      }
    }
    for (auto &e : t)
      for (op &o : e) o = op::count;
    struct row {
      op o;
      rdna3_enc e;
      uint32_t code;
    };
    const row rows[] = {
#define OP(name, enc, opcode) {op::name, enc, opcode},
#include "rdna3_ops.inc"
#undef OP
    };
    for (const row &r : rows) {
      t[r.e][r.code] = r.o;
      if (r.e == VOP3SD) t[VOP3][r.code] = r.o;
      if (r.e == VOP1) t[VOP3][0x180 + r.code] = r.o;
      if (r.e == VOP2) t[VOP3][0x100 + r.code] = r.o;
      if (r.e == VOPC) t[VOP3][r.code] = r.o;
    }
  }
};
const op_tables &tables() {
  static const op_tables t;
  return t;
}

// VOPD opcodes (ch. 15.3.5 "VOPD"; checked with llvm-mc-19): X takes 0-12, Y also 16-18.
op vopd_op(uint32_t code) {
  switch (code) {
    case 0: return op::v_fmac_f32;
    case 1: return op::v_fmaak_f32;
    case 2: return op::v_fmamk_f32;
    case 3: return op::v_mul_f32;
    case 4: return op::v_add_f32;
    case 5: return op::v_sub_f32;
    case 6: return op::v_subrev_f32;
    case 8: return op::v_mov_b32;
    case 9: return op::v_cndmask_b32;
    case 10: return op::v_max_f32;
    case 11: return op::v_min_f32;
    case 12: return op::v_dot2acc_f32_f16;
    case 16: return op::v_add_nc_u32;
    case 17: return op::v_lshlrev_b32;
    case 18: return op::v_and_b32;
  }
  return op::count;  // 7 (mul_dx9_zero) is not emulated
}

std::string hex(uint64_t v) { return rdna3_hex(v); }

bool is_sd(op o) {  // VOP3 forms with a scalar destination in bits 14:8 (VOP3SD)
  switch (o) {
    case op::v_add_co_u32:
    case op::v_sub_co_u32:
    case op::v_subrev_co_u32:
    case op::v_mad_u64_u32:
    case op::v_mad_i64_i32:
    case op::v_div_scale_f32:
    case op::v_add_co_ci_u32:
    case op::v_sub_co_ci_u32:
    case op::v_subrev_co_ci_u32: return true;
    default: return false;
  }
}

bool vopc_op(op o) { return rdna3_is_vopc(o); }
bool is_cmpx(op o) { return vopc_op(o) && std::strncmp(op_names[size_t(o)], "v_cmpx_", 7) == 0; }

// Scalar source codes the emulator knows (ch. 3.6 "Scalar operands", table "SSRC"): SGPRs, VCC,
// NULL, M0, EXEC, integer and float inline constants, SCC, the literal.
bool scalar_code_known(uint32_t c) {
  return c <= 107 || (c >= 124 && c <= 208) || (c >= 240 && c <= 248) || c == 253 || c == 255;
}

// Decodes the instruction at `w` (`avail` dwords readable). false: *why says what.
bool inst_decode(const uint32_t *w, size_t avail, rdna3_inst *in, std::string *why) {
  const op_tables &tb = tables();
  const uint32_t w0 = w[0];
  const uint32_t top6 = w0 >> 26;
  bool has_lit = false;
  auto need = [&](uint32_t n) {
    if (avail < n) {
      *why = "the code ends inside an instruction";
      return false;
    }
    return true;
  };
  auto unknown = [&](rdna3_enc e, uint32_t code) {
    *why =
        std::string("unknown ") + enc_names[e] + " opcode " + hex(code) + " (word " + hex(w0) + ")";
    return false;
  };
  if ((w0 >> 30) == 2) {  // scalar ALU
    const uint32_t top9 = w0 >> 23;
    if (top9 == 0x17d) {
      in->enc = SOP1;
      in->op = tb.t[SOP1][(w0 >> 8) & 0xff];
      if (in->op == op::count) return unknown(SOP1, (w0 >> 8) & 0xff);
      in->dst = (w0 >> 16) & 0x7f;
      in->src[0] = w0 & 0xff;
      has_lit = in->src[0] == 255;
    } else if (top9 == 0x17e) {
      in->enc = SOPC;
      in->op = tb.t[SOPC][(w0 >> 16) & 0x7f];
      if (in->op == op::count) return unknown(SOPC, (w0 >> 16) & 0x7f);
      in->src[0] = w0 & 0xff;
      in->src[1] = (w0 >> 8) & 0xff;
      has_lit = in->src[0] == 255 || in->src[1] == 255;
    } else if (top9 == 0x17f) {
      in->enc = SOPP;
      in->op = tb.t[SOPP][(w0 >> 16) & 0x7f];
      if (in->op == op::count) return unknown(SOPP, (w0 >> 16) & 0x7f);
      in->imm = int16_t(w0 & 0xffff);
    } else if ((w0 >> 28) == 0xb) {
      in->enc = SOPK;
      in->op = tb.t[SOPK][(w0 >> 23) & 0x1f];
      if (in->op == op::count) return unknown(SOPK, (w0 >> 23) & 0x1f);
      in->dst = (w0 >> 16) & 0x7f;
      in->imm = int16_t(w0 & 0xffff);
    } else {
      in->enc = SOP2;
      in->op = tb.t[SOP2][(w0 >> 23) & 0x7f];
      if (in->op == op::count) return unknown(SOP2, (w0 >> 23) & 0x7f);
      in->dst = (w0 >> 16) & 0x7f;
      in->src[0] = w0 & 0xff;
      in->src[1] = (w0 >> 8) & 0xff;
      has_lit = in->src[0] == 255 || in->src[1] == 255;
    }
    for (int i = 0; i < 2; i++)
      if (in->enc != SOPP && in->enc != SOPK && !scalar_code_known(in->src[i])) {
        *why = "scalar operand code " + std::to_string(in->src[i]) + " is not emulated";
        return false;
      }
  } else if ((w0 >> 31) == 0) {  // VOP1, VOPC, VOP2: 32-bit vector forms
    const uint32_t top7 = w0 >> 25;
    in->src[0] = w0 & 0x1ff;
    if (top7 == 0x3f) {
      in->enc = VOP1;
      in->op = tb.t[VOP1][(w0 >> 9) & 0xff];
      if (in->op == op::count) return unknown(VOP1, (w0 >> 9) & 0xff);
      in->dst = (w0 >> 17) & 0xff;
      if (in->op != op::v_readfirstlane_b32) in->dst += 256;
    } else if (top7 == 0x3e) {
      in->enc = VOPC;
      in->op = tb.t[VOPC][(w0 >> 17) & 0xff];
      if (in->op == op::count) return unknown(VOPC, (w0 >> 17) & 0xff);
      in->src[1] = 256 + ((w0 >> 9) & 0xff);
      in->sdst = is_cmpx(in->op) ? 126 : 106;  // e32 compares write VCC, cmpx EXEC (ch. 6.6)
    } else {
      in->enc = VOP2;
      in->op = tb.t[VOP2][(w0 >> 25) & 0x3f];
      if (in->op == op::count) return unknown(VOP2, (w0 >> 25) & 0x3f);
      in->src[1] = 256 + ((w0 >> 9) & 0xff);
      in->dst = 256 + ((w0 >> 17) & 0xff);
      // Carry in and out, and cndmask's selector, are VCC in the 32-bit form.
      in->src[2] = in->op == op::v_fmac_f32 || in->op == op::v_fmac_f16 ? in->dst : 106;
      in->sdst = 106;
      if (in->op == op::v_fmamk_f32 || in->op == op::v_fmaak_f32) has_lit = true;
    }
    if (in->src[0] == 250 || in->src[0] == 233) {
      *why = "DPP (source 0 code " + std::to_string(in->src[0]) + ") is not emulated";
      return false;
    }
    has_lit |= in->src[0] == 255;
    if (in->src[0] < 256 && !scalar_code_known(in->src[0])) {
      *why = "operand code " + std::to_string(in->src[0]) + " is not emulated";
      return false;
    }
  } else if (top6 == 0x35) {  // VOP3, VOP3SD
    if (!need(2)) return false;
    const uint32_t w1 = w[1];
    const uint32_t code = (w0 >> 16) & 0x3ff;
    in->op = tb.t[VOP3][code];
    if (in->op == op::count) return unknown(VOP3, code);
    in->enc = is_sd(in->op) ? VOP3SD : VOP3;
    in->src[0] = w1 & 0x1ff;
    in->src[1] = (w1 >> 9) & 0x1ff;
    in->src[2] = (w1 >> 18) & 0x1ff;
    in->omod = (w1 >> 27) & 3;
    in->neg = (w1 >> 29) & 7;
    in->clamp = (w0 >> 15) & 1;
    in->dst = w0 & 0xff;
    if (in->enc == VOP3SD) {
      in->sdst = (w0 >> 8) & 0x7f;
    } else {
      in->abs = (w0 >> 8) & 7;
      in->opsel = (w0 >> 11) & 0xf;
    }
    if (vopc_op(in->op)) {
      in->sdst = in->dst;  // compares write the SGPR named in the vdst field
    } else if (in->op != op::v_readlane_b32 && in->op != op::v_readfirstlane_b32) {
      in->dst += 256;
    }
    if (in->op == op::v_cndmask_b32 || in->op == op::v_add_co_ci_u32 ||
        in->op == op::v_sub_co_ci_u32 || in->op == op::v_subrev_co_ci_u32) {
      // Selector / carry-in is src2 in the 64-bit form.
    }
    if (in->op == op::v_fmamk_f32 || in->op == op::v_fmaak_f32) {
      *why = "v_fmamk/fmaak in a VOP3 encoding";
      return false;
    }
    for (int i = 0; i < 3; i++) {
      has_lit |= in->src[i] == 255;
      if (in->src[i] < 256 && !scalar_code_known(in->src[i])) {
        *why = "operand code " + std::to_string(in->src[i]) + " is not emulated";
        return false;
      }
    }
    in->dwords = 2;
  } else if ((w0 >> 24) == 0xcc) {  // VOP3P (ch. 15.3.4): only the mixed-precision FMAs
    if (!need(2)) return false;
    const uint32_t w1 = w[1];
    in->enc = VOP3P;
    in->op = tb.t[VOP3P][(w0 >> 16) & 0x7f];
    if (in->op == op::count) return unknown(VOP3P, (w0 >> 16) & 0x7f);
    in->dst = 256 + (w0 & 0xff);
    in->abs = (w0 >> 8) & 7;  // NEG_HI is abs for v_fma_mix*
    in->opsel = (w0 >> 11) & 7;
    in->opsel_hi = uint8_t(((w1 >> 27) & 3) | (((w0 >> 14) & 1) << 2));
    in->clamp = (w0 >> 15) & 1;
    in->neg = (w1 >> 29) & 7;
    in->src[0] = w1 & 0x1ff;
    in->src[1] = (w1 >> 9) & 0x1ff;
    in->src[2] = (w1 >> 18) & 0x1ff;
    for (int i = 0; i < 3; i++) {
      has_lit |= in->src[i] == 255;
      if (in->src[i] < 256 && !scalar_code_known(in->src[i])) {
        *why = "operand code " + std::to_string(in->src[i]) + " is not emulated";
        return false;
      }
    }
    in->dwords = 2;
  } else if (top6 == 0x32) {  // VOPD (ch. 6.5)
    if (!need(2)) return false;
    const uint32_t w1 = w[1];
    in->enc = VOPD;
    in->op = vopd_op((w0 >> 22) & 0xf);
    in->op_y = vopd_op((w0 >> 17) & 0x1f);
    if (in->op == op::count || in->op_y == op::count || uint32_t((w0 >> 22) & 0xf) > 12)
      return unknown(VOPD, (w0 >> 17) & 0x1ff);
    in->src[0] = w0 & 0x1ff;
    in->src[1] = 256 + ((w0 >> 9) & 0xff);
    in->src_y[0] = w1 & 0x1ff;
    in->src_y[1] = 256 + ((w1 >> 9) & 0xff);
    in->dst = 256 + (w1 >> 24);
    // VDSTY's low bit is the opposite of VDSTX's (the two write different VGPR banks).
    in->dst_y = 256 + ((((w1 >> 17) & 0x7f) << 1) | (((w1 >> 24) & 1) ^ 1));
    has_lit = in->src[0] == 255 || in->src_y[0] == 255 || in->op == op::v_fmaak_f32 ||
              in->op == op::v_fmamk_f32 || in->op_y == op::v_fmaak_f32 ||
              in->op_y == op::v_fmamk_f32;
    for (uint16_t s : {in->src[0], in->src_y[0]})
      if (s < 256 && !scalar_code_known(s)) {
        *why = "operand code " + std::to_string(s) + " is not emulated";
        return false;
      }
    in->dwords = 2;
  } else if (top6 == 0x3d) {  // SMEM
    if (!need(2)) return false;
    in->enc = SMEM;
    in->op = tb.t[SMEM][(w0 >> 18) & 0xff];
    if (in->op == op::count) return unknown(SMEM, (w0 >> 18) & 0xff);
    in->src[0] = (w0 & 0x3f) * 2;         // sbase: an SGPR pair
    in->dst = (w0 >> 6) & 0x7f;           // sdata
    in->imm = int32_t(w[1] << 11) >> 11;  // 21-bit signed offset
    in->src[1] = w[1] >> 25;              // soffset (124: none)
    in->dwords = 2;
  } else if (top6 == 0x37) {  // FLAT / GLOBAL (scratch, seg 1, is not emulated)
    if (!need(2)) return false;
    const uint32_t seg = (w0 >> 16) & 3;
    if (seg != 0 && seg != 2) {
      *why = "scratch instructions are not emulated (word " + hex(w0) + ")";
      return false;
    }
    in->enc = seg == 2 ? GLOBAL : FLAT;
    in->op = tb.t[in->enc][(w0 >> 18) & 0x7f];
    if (in->op == op::count) return unknown(rdna3_enc(in->enc), (w0 >> 18) & 0x7f);
    in->imm = seg == 2 ? int32_t(w0 << 19) >> 19 : int32_t(w0 & 0xfff);  // 13-bit signed / 12-bit
    const uint32_t w1 = w[1];
    in->src[0] = 256 + (w1 & 0xff);         // address
    in->src[1] = 256 + ((w1 >> 8) & 0xff);  // store data
    in->src[2] = (w1 >> 16) & 0x7f;         // saddr (124: off)
    in->dst = 256 + (w1 >> 24);
    in->dwords = 2;
  } else if (top6 == 0x36) {  // DS
    if (!need(2)) return false;
    in->enc = DS;
    in->op = tb.t[DS][(w0 >> 18) & 0xff];
    if (in->op == op::count) return unknown(DS, (w0 >> 18) & 0xff);
    if ((w0 >> 17) & 1) {
      *why = "GDS is not emulated";
      return false;
    }
    in->imm = int32_t(w0 & 0xffff);  // offset0 | offset1 << 8
    const uint32_t w1 = w[1];
    in->src[0] = 256 + (w1 & 0xff);
    in->src[1] = 256 + ((w1 >> 8) & 0xff);
    in->src[2] = 256 + ((w1 >> 16) & 0xff);
    in->dst = 256 + (w1 >> 24);
    in->dwords = 2;
  } else if (top6 == 0x38) {  // MUBUF: of it only the cache invalidations (no operands)
    if (!need(2)) return false;
    in->enc = MUBUF;
    in->op = tb.t[MUBUF][(w0 >> 18) & 0xff];
    if (in->op == op::count) return unknown(MUBUF, (w0 >> 18) & 0xff);
    in->dwords = 2;
  } else {
    static const std::map<uint32_t, const char *> other = {
        {0x3a, "MTBUF"}, {0x3c, "MIMG"}, {0x3e, "EXP"}, {0x34, "VINTERP"}};
    auto it = other.find(top6);
    *why = std::string(it != other.end() ? it->second : "unknown") + " instruction (word " +
           hex(w0) + ") is not emulated";
    return false;
  }
  if (has_lit) {
    if (!need(in->dwords + 1u)) return false;
    in->lit = w[in->dwords];
    in->dwords++;
  }
  return true;
}

}  // namespace

const char *rdna3_op_name(rdna3_op o) { return o < op::count ? op_names[size_t(o)] : "?"; }
const char *rdna3_enc_name(rdna3_enc e) { return e < enc_count ? enc_names[e] : "?"; }
const rdna3_op_facts &rdna3_facts(rdna3_op o) { return tables().facts[size_t(o)]; }
std::string rdna3_hex(uint64_t v) {
  char b[24];
  snprintf(b, sizeof b, "0x%llx", (unsigned long long)v);
  return b;
}

bool rdna3_program_decode(const rdna3_dispatch &d, const rdna3_region_find &find,
                          rdna3_program *out, std::string *err) {
  const std::string what = "kernel '" + d.kernel + "': ";
  const rdna3_region r = find(d.code);
  if (!r.cpu || d.code % 4) {
    *err = what + "its code address " + hex(d.code) + " is not in GPU memory or not aligned";
    return false;
  }
  const uint32_t *code = reinterpret_cast<const uint32_t *>(r.cpu + (d.code - r.gpu));
  const uint64_t dwords = (r.gpu + r.size - d.code) / 4;
  // VGPRs granted: (GRANULATED_WORKITEM_VGPR_COUNT + 1) * 8 in wave32 (AMDGPUUsage,
  // compute_pgm_rsrc1 for GFX10+: granule 8 with wave32).
  out->vgprs = ((d.rsrc1 & 0x3f) + 1) * 8;
  out->insts.clear();
  std::map<uint32_t, int32_t> at;  // dword offset -> instruction index
  std::vector<uint32_t> todo{0};
  std::vector<std::pair<int32_t, uint32_t>> fix_next, fix_target;
  while (!todo.empty()) {
    uint32_t pos = todo.back();
    todo.pop_back();
    // Decode straight-line code from pos until an end or a known instruction.
    while (!at.count(pos)) {
      if (pos >= dwords) {
        *err = what + "control reaches offset " + hex(4ull * pos) + ", past the end of its code";
        return false;
      }
      rdna3_inst in;
      std::string why;
      if (!inst_decode(code + pos, dwords - pos, &in, &why)) {
        *err = what + "instruction at offset " + hex(4ull * pos) + ": " + why;
        return false;
      }
      for (uint16_t v :
           {in.src[0], in.src[1], in.src[2], in.dst, in.src_y[0], in.src_y[1], in.dst_y})
        if (v >= 256 + out->vgprs && in.enc != SOP1 && in.enc != SOP2 && in.enc != SOPC &&
            in.enc != SOPK && in.enc != SMEM) {
          *err = what + rdna3_op_name(in.op) + " at offset " + hex(4ull * pos) + " uses v" +
                 std::to_string(v - 256) + " but COMPUTE_PGM_RSRC1 grants " +
                 std::to_string(out->vgprs) + " VGPRs";
          return false;
        }
      in.offset = 4 * pos;
      const int32_t idx = int32_t(out->insts.size());
      at[pos] = idx;
      const uint32_t after = pos + in.dwords;
      const op o = in.op;
      const bool branch = in.enc == SOPP && o >= op::s_branch && o <= op::s_cbranch_execnz;
      if (branch) {
        const int64_t t = int64_t(after) + in.imm;
        if (t < 0) {
          *err = what + "branch at offset " + hex(4ull * pos) + " goes before the entry";
          return false;
        }
        fix_target.push_back({idx, uint32_t(t)});
        todo.push_back(uint32_t(t));
      }
      const bool ends =
          (in.enc == SOPP && (o == op::s_endpgm || o == op::s_branch || o == op::s_code_end)) ||
          o == op::s_setpc_b64;
      out->insts.push_back(in);
      if (ends) break;
      fix_next.push_back({idx, after});
      pos = after;
    }
  }
  for (auto [i, pos] : fix_next) out->insts[size_t(i)].next = at.at(pos);
  for (auto [i, pos] : fix_target) out->insts[size_t(i)].target = at.at(pos);
  return true;
}

}  // namespace capgraph::amd
