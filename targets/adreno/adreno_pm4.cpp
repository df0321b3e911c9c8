#include "adreno_pm4.h"

#include <cstdio>

#include "clock_text.h"

namespace capgraph::adreno {
namespace {

struct named {
  uint32_t value;
  const char *name;
};

constexpr named opcodes[] = {
    {CP_NOP, "CP_NOP"},
    {CP_WAIT_MEM_WRITES, "CP_WAIT_MEM_WRITES"},
    {CP_WAIT_FOR_IDLE, "CP_WAIT_FOR_IDLE"},
    {CP_EXEC_CS, "CP_EXEC_CS"},
    {CP_LOAD_STATE6_FRAG, "CP_LOAD_STATE6_FRAG"},
    {CP_WAIT_REG_MEM, "CP_WAIT_REG_MEM"},
    {CP_REG_TO_MEM, "CP_REG_TO_MEM"},
    {CP_INDIRECT_BUFFER, "CP_INDIRECT_BUFFER"},
    {CP_EVENT_WRITE, "CP_EVENT_WRITE"},
    {CP_SET_MARKER, "CP_SET_MARKER"},
    {CP_MEMCPY, "CP_MEMCPY"},
};

// Every register a packet may write, with the members of the blocks written together.
constexpr named regs[] = {
    {CP_ALWAYS_ON_COUNTER, "CP_ALWAYS_ON_COUNTER"},
    {SP_CS_CTRL_REG0, "SP_CS_CTRL_REG0"},
    {SP_CS_CTRL_REG1, "SP_CS_CTRL_REG1"},
    {SP_CS_BRANCH_COND, "SP_CS_BRANCH_COND"},
    {SP_CS_OBJ_FIRST_EXEC_OFFSET, "SP_CS_OBJ_FIRST_EXEC_OFFSET"},
    {SP_CS_OBJ_START, "SP_CS_OBJ_START"},
    {SP_CS_OBJ_START + 1, "SP_CS_OBJ_START_HI"},
    {SP_CS_PVT_MEM_PARAM, "SP_CS_PVT_MEM_PARAM"},
    {SP_CS_PVT_MEM_ADDR, "SP_CS_PVT_MEM_ADDR"},
    {SP_CS_PVT_MEM_ADDR + 1, "SP_CS_PVT_MEM_ADDR_HI"},
    {SP_CS_PVT_MEM_SIZE, "SP_CS_PVT_MEM_SIZE"},
    {SP_CS_TEX_COUNT, "SP_CS_TEX_COUNT"},
    {SP_CS_CONFIG, "SP_CS_CONFIG"},
    {SP_CS_INSTRLEN, "SP_CS_INSTRLEN"},
    {SP_CS_PVT_MEM_HW_STACK_OFFSET, "SP_CS_PVT_MEM_HW_STACK_OFFSET"},
    {SP_CS_IBO_COUNT, "SP_CS_IBO_COUNT"},
    {SP_MODE_CONTROL, "SP_MODE_CONTROL"},
    {SP_PERFCTR_ENABLE, "SP_PERFCTR_ENABLE"},
    {SP_TP_MODE_CNTL, "SP_TP_MODE_CNTL"},
    {TPL1_DBG_ECO_CNTL, "TPL1_DBG_ECO_CNTL"},
    {HLSQ_CONTROL_2_REG, "HLSQ_CONTROL_2_REG"},
    {HLSQ_CONTROL_2_REG + 1, "HLSQ_CONTROL_3_REG"},
    {HLSQ_CONTROL_2_REG + 2, "HLSQ_CONTROL_4_REG"},
    {HLSQ_CONTROL_2_REG + 3, "HLSQ_CONTROL_5_REG"},
    {HLSQ_CS_CNTL, "HLSQ_CS_CNTL"},
    {HLSQ_CS_NDRANGE_0, "HLSQ_CS_NDRANGE_0"},
    {HLSQ_CS_NDRANGE_0 + 1, "HLSQ_CS_NDRANGE_1"},
    {HLSQ_CS_NDRANGE_0 + 2, "HLSQ_CS_NDRANGE_2"},
    {HLSQ_CS_NDRANGE_0 + 3, "HLSQ_CS_NDRANGE_3"},
    {HLSQ_CS_NDRANGE_0 + 4, "HLSQ_CS_NDRANGE_4"},
    {HLSQ_CS_NDRANGE_0 + 5, "HLSQ_CS_NDRANGE_5"},
    {HLSQ_CS_NDRANGE_0 + 6, "HLSQ_CS_NDRANGE_6"},
    {HLSQ_CS_CNTL_0, "HLSQ_CS_CNTL_0"},
    {HLSQ_CS_CNTL_1, "HLSQ_CS_CNTL_1"},
    {HLSQ_CS_KERNEL_GROUP_X, "HLSQ_CS_KERNEL_GROUP_X"},
    {HLSQ_CS_KERNEL_GROUP_X + 1, "HLSQ_CS_KERNEL_GROUP_Y"},
    {HLSQ_CS_KERNEL_GROUP_X + 2, "HLSQ_CS_KERNEL_GROUP_Z"},
    {HLSQ_INVALIDATE_CMD, "HLSQ_INVALIDATE_CMD"},
};

const char *name_of(const named *table, size_t n, uint32_t v) {
  for (size_t i = 0; i < n; ++i)
    if (table[i].value == v) return table[i].name;
  return "";
}

}  // namespace

packet packet_decode(uint32_t h) {
  packet p;
  switch (h >> 28) {
    case 4:
      p.count = h & 0x7f;
      p.reg_or_opcode = (h >> 8) & 0x3ffff;
      if (h & (1u << 26))
        p.why = "type-4 header " + hex(h) + ": reserved bit 26 set";
      else if (((h >> 7) & 1) != odd_parity_bit(p.count))
        p.why = "type-4 header " + hex(h) + ": wrong count parity";
      else if (((h >> 27) & 1) != odd_parity_bit(p.reg_or_opcode))
        p.why = "type-4 header " + hex(h) + ": wrong register parity";
      else
        p.kind = packet::type4;
      break;
    case 7:
      p.count = h & 0x3fff;
      p.reg_or_opcode = (h >> 16) & 0x7f;
      if (h & (1u << 14) || h & (0xfu << 24))
        p.why = "type-7 header " + hex(h) + ": reserved bits set";
      else if (((h >> 15) & 1) != odd_parity_bit(p.count))
        p.why = "type-7 header " + hex(h) + ": wrong count parity";
      else if (((h >> 23) & 1) != odd_parity_bit(p.reg_or_opcode))
        p.why = "type-7 header " + hex(h) + ": wrong opcode parity";
      else
        p.kind = packet::type7;
      break;
    default: p.why = "word " + hex(h) + " is not a type-4 or type-7 packet header";
  }
  return p;
}

const char *opcode_name(uint32_t op) { return name_of(opcodes, std::size(opcodes), op); }
const char *reg_name(uint32_t r) { return name_of(regs, std::size(regs), r); }
bool reg_known(uint32_t r) { return *reg_name(r) != 0; }

std::string pm4_text(const std::vector<uint32_t> &w, std::string (*address)(uint64_t, void *),
                     void *ctx) {
  std::string o;
  const auto addr = [&](size_t i) { return address(uint64_t(w[i + 1]) << 32 | w[i], ctx); };
  for (size_t i = 0; i < w.size();) {
    const packet p = packet_decode(w[i]);
    if (p.kind == packet::bad || i + 1 + p.count > w.size()) {
      o += "BAD " + (p.why.empty() ? "packet runs past the end" : p.why) + "\n";
      break;
    }
    const size_t b = i + 1;  // payload
    if (p.kind == packet::type4) {
      for (uint32_t k = 0; k < p.count; ++k) {
        const uint32_t r = p.reg_or_opcode + k;
        const bool address_reg = r == SP_CS_OBJ_START;
        o += std::string(k ? "   " : "") + "REG " + reg_name(r) + " = " +
             (address_reg && k + 1 < p.count ? addr(b + k) : hex(w[b + k])) + "\n";
        if (address_reg && k + 1 < p.count) ++k;
      }
    } else {
      o += opcode_name(p.reg_or_opcode);
      if (!*opcode_name(p.reg_or_opcode)) o += "opcode " + hex(p.reg_or_opcode);
      switch (p.reg_or_opcode) {
        case CP_LOAD_STATE6_FRAG: {
          const uint32_t d = w[b];
          o += " dst " + std::to_string(d & 0x3fff) + " type " + std::to_string((d >> 14) & 3) +
               " src " + std::to_string((d >> 16) & 3) + " block " + hex((d >> 18) & 0xf) +
               " units " + std::to_string(d >> 22);
          if (((d >> 16) & 3) == SS6_INDIRECT)
            o += " from " + addr(b + 1);
          else
            for (uint32_t k = 3; k < p.count; ++k) o += " " + hex(w[b + k]);
          break;
        }
        case CP_EVENT_WRITE:
          o += " event " + hex(w[b] & 0xff);
          if (p.count >= 4) o += " to " + addr(b + 1) + " value " + hex(w[b + 3]);
          break;
        case CP_WAIT_REG_MEM:
          o += " func " + std::to_string(w[b] & 7) + " at " + addr(b + 1) + " ref " +
               hex(w[b + 3]) + " mask " + hex(w[b + 4]);
          break;
        case CP_REG_TO_MEM: o += " reg " + hex(w[b] & 0x3ffff) + " to " + addr(b + 1); break;
        case CP_INDIRECT_BUFFER: o += " " + addr(b) + " dwords " + std::to_string(w[b + 2]); break;
        case CP_MEMCPY:
          o += " dwords " + std::to_string(w[b]) + " from " + addr(b + 1) + " to " + addr(b + 3);
          break;
        default:
          for (uint32_t k = 0; k < p.count; ++k) o += " " + hex(w[b + k]);
      }
      o += "\n";
    }
    i = b + p.count;
  }
  return o;
}

}  // namespace capgraph::adreno
