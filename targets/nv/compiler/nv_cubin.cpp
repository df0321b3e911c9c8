#include "nv_cubin.h"

#include <cstring>

#include "error.h"

namespace capgraph {

namespace {

// ELF constants. Source: System V gABI; EM_CUDA = 190 from the ELF machine registry (elf.h).
constexpr uint16_t kEmCuda = 190;
constexpr uint32_t kShtSymtab = 2, kShtNobits = 8;
constexpr uint64_t kShfExecinstr = 0x4;
// e_ident[EI_ABIVERSION] from which the SM sits in e_flags bits 15:8 (nv_plan.md §2.9: CUDA 13
// writes ABI version 8 and 0x06005A04 for sm_90; CUDA 11.8 writes 0x005A055A, SM in bits 7:0).
constexpr uint8_t kAbiSmInBits15To8 = 8;
// .nv.info record formats (the u8 before the attribute code): NVAL, BVAL, HVAL carry no payload
// (a value, if any, is the u16 that follows the code); SVAL is followed by that many bytes.
constexpr uint8_t kEifmtNval = 1, kEifmtHval = 3, kEifmtSval = 4;

struct Section {
  std::string name;
  uint32_t type = 0, link = 0, info = 0;
  uint64_t flags = 0, offset = 0, size = 0, align = 0;
};

struct Record {
  uint8_t format = 0, attr = 0;
  uint16_t value = 0;             // HVAL/BVAL value, or the SVAL payload size
  const uint8_t *data = nullptr;  // SVAL payload
};

class Cubin {
 public:
  explicit Cubin(const std::vector<uint8_t> &d) : d_(d) {}

  template <class T>
  T at(uint64_t off, const std::string &what) const {
    if (off > d_.size() || d_.size() - off < sizeof(T)) bad(what + " lies outside the file");
    T v;
    std::memcpy(&v, d_.data() + off, sizeof v);
    return v;
  }
  [[noreturn]] static void bad(const std::string &why) { throw Error("cubin: " + why); }

  void headers_read(uint32_t sm) {
    static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
    if (d_.size() < 64 || std::memcmp(d_.data(), magic, 4) != 0) bad("not an ELF file");
    if (d_[4] != 2 || d_[5] != 1) bad("not a 64-bit little-endian ELF file");
    uint16_t machine = at<uint16_t>(18, "e_machine");
    if (machine != kEmCuda) bad("ELF machine " + std::to_string(machine) + " is not EM_CUDA (190)");
    uint32_t flags = at<uint32_t>(48, "e_flags");
    sm_ = d_[8] >= kAbiSmInBits15To8 ? (flags >> 8) & 0xff : flags & 0xff;
    if (sm_ != sm)
      bad("built for sm_" + std::to_string(sm_) + ", expected sm_" + std::to_string(sm));
    uint64_t shoff = at<uint64_t>(40, "e_shoff");
    uint16_t shentsize = at<uint16_t>(58, "e_shentsize"), shnum = at<uint16_t>(60, "e_shnum"),
             shstrndx = at<uint16_t>(62, "e_shstrndx");
    if (shentsize != 64) bad("section header size " + std::to_string(shentsize) + " is not 64");
    if (shnum == 0 || shstrndx >= shnum) bad("no section name table");
    if (shoff > d_.size() || (d_.size() - shoff) / 64 < shnum)
      bad("section headers lie outside the file");
    secs_.resize(shnum);
    std::vector<uint32_t> names(shnum);
    for (uint16_t i = 0; i < shnum; i++) {
      uint64_t h = shoff + 64ull * i;
      Section &s = secs_[i];
      names[i] = at<uint32_t>(h, "section name");
      s.type = at<uint32_t>(h + 4, "section type");
      s.flags = at<uint64_t>(h + 8, "section flags");
      s.offset = at<uint64_t>(h + 24, "section offset");
      s.size = at<uint64_t>(h + 32, "section size");
      s.link = at<uint32_t>(h + 40, "section link");
      s.info = at<uint32_t>(h + 44, "section info");
      s.align = at<uint64_t>(h + 48, "section alignment");
      if (s.type != kShtNobits && (s.offset > d_.size() || d_.size() - s.offset < s.size))
        bad("section " + std::to_string(i) + " lies outside the file");
    }
    for (uint16_t i = 0; i < shnum; i++)
      secs_[i].name = string_at(secs_[shstrndx], names[i], "section name");
    for (const Section &s : secs_) {
      if (s.type != kShtSymtab) continue;
      if (s.link >= secs_.size()) bad("symbol table without its string table");
      for (uint64_t o = 0; o + 24 <= s.size; o += 24)
        symbols_.push_back(
            string_at(secs_[s.link], at<uint32_t>(s.offset + o, "symbol"), "symbol name"));
    }
  }

  std::string string_at(const Section &table, uint32_t off, const std::string &what) const {
    if (off >= table.size) bad(what + " outside its string table");
    const char *p = (const char *)d_.data() + table.offset + off;
    size_t n = strnlen(p, table.size - off);
    if (n == table.size - off) bad(what + " not terminated");
    return std::string(p, n);
  }

  const Section *section(const std::string &name) const {
    for (const Section &s : secs_)
      if (s.name == name) return &s;
    return nullptr;
  }
  std::string symbol(uint32_t index, const std::string &what) const {
    if (index >= symbols_.size())
      bad(what + " names symbol " + std::to_string(index) + ", which does not exist");
    return symbols_[index];
  }

  std::vector<Record> records(const Section &s) const {
    std::vector<Record> r;
    uint64_t i = 0;
    while (i < s.size) {
      if (s.size - i < 4) bad(s.name + ": truncated attribute record");
      Record rec;
      rec.format = d_[s.offset + i];
      rec.attr = d_[s.offset + i + 1];
      rec.value = at<uint16_t>(s.offset + i + 2, s.name);
      i += 4;
      if (rec.format == kEifmtSval) {
        if (s.size - i < rec.value)
          bad(s.name + ": attribute 0x" + hex(rec.attr) + " runs past its section");
        rec.data = d_.data() + s.offset + i;
        i += rec.value;
      } else if (rec.format < kEifmtNval || rec.format > kEifmtHval) {
        bad(s.name + ": attribute 0x" + hex(rec.attr) + " has unknown format " +
            std::to_string(rec.format));
      }
      r.push_back(rec);
    }
    return r;
  }

  static std::string hex(unsigned v) {
    char b[16];
    snprintf(b, sizeof b, "%02x", v);
    return b;
  }

  uint32_t sm_ = 0;
  std::vector<Section> secs_;
  std::vector<std::string> symbols_;

 private:
  const std::vector<uint8_t> &d_;
};

uint32_t u32_of(const Record &r, size_t at) {
  uint32_t v;
  std::memcpy(&v, r.data + at, 4);
  return v;
}

// An SVAL record's payload must be `n` bytes: the layouts above are fixed.
void sval_need(const Record &r, uint16_t n, const std::string &where) {
  if (r.format != kEifmtSval || r.value != n)
    Cubin::bad(where + ": attribute 0x" + Cubin::hex(r.attr) + " is not the expected " +
               std::to_string(n) + "-byte record");
}

}  // namespace

std::map<std::string, NvKernelFacts> nv_cubin_read(const std::vector<uint8_t> &cubin, uint32_t sm) {
  Cubin c(cubin);
  c.headers_read(sm);
  // Per-function facts of the shared .nv.info section, by symbol name.
  std::map<std::string, uint32_t> regcount, frame, min_stack, max_stack;
  if (const Section *info = c.section(".nv.info")) {
    for (const Record &r : c.records(*info)) {
      std::map<std::string, uint32_t> *to = nullptr;
      switch ((Eiattr)r.attr) {
        case Eiattr::regcount: to = &regcount; break;
        case Eiattr::frame_size: to = &frame; break;
        case Eiattr::min_stack_size: to = &min_stack; break;
        case Eiattr::max_stack_size: to = &max_stack; break;
        default: continue;  // attributes we have no use for
      }
      sval_need(r, 8, ".nv.info");
      (*to)[c.symbol(u32_of(r, 0), ".nv.info attribute 0x" + Cubin::hex(r.attr))] = u32_of(r, 4);
    }
  }
  std::map<std::string, NvKernelFacts> out;
  const std::string prefix = ".nv.info.";
  for (const Section &s : c.secs_) {
    if (s.name.rfind(prefix, 0) != 0) continue;
    const std::string k = s.name.substr(prefix.size());
    const std::string where = "kernel " + k;
    auto need = [&](const std::string &name) -> const Section & {
      const Section *x = c.section(name);
      if (!x) Cubin::bad(where + ": no section " + name);
      return *x;
    };
    NvKernelFacts f;
    f.sm = c.sm_;
    const Section &text = need(".text." + k);
    if (!(text.flags & kShfExecinstr) || text.type == kShtNobits)
      Cubin::bad(where + ": .text." + k + " is not executable code");
    f.text_offset = text.offset;
    f.text_size = text.size;
    f.text_align = (uint32_t)text.align;
    f.cbank0_bytes = (uint32_t)need(".nv.constant0." + k).size;
    if (const Section *sh = c.section(".nv.shared." + k)) f.shared_bytes = (uint32_t)sh->size;
    auto per_function = [&](const std::map<std::string, uint32_t> &m, uint32_t *to, bool required,
                            const char *what) {
      auto it = m.find(k);
      if (it != m.end())
        *to = it->second;
      else if (required)
        Cubin::bad(where + ": .nv.info has no " + what);
    };
    per_function(regcount, &f.registers, true, "EIATTR_REGCOUNT");
    per_function(frame, &f.frame_bytes, false, "");
    per_function(min_stack, &f.min_stack_bytes, false, "");
    per_function(max_stack, &f.max_stack_bytes, false, "");
    // sm_86 cubins repeat the register count in the code section's sh_info bits 31:24.
    uint32_t text_regs = text.info >> 24;
    if (text_regs != 0 && text_regs != f.registers)
      Cubin::bad(where + ": .text." + k + " says " + std::to_string(text_regs) +
                 " registers, EIATTR_REGCOUNT " + std::to_string(f.registers));
    bool have_cbank = false;
    int32_t cbank_param_size = -1;
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> params;  // ordinal -> (offset, size)
    for (const Record &r : c.records(s)) {
      switch ((Eiattr)r.attr) {
        case Eiattr::param_cbank: {
          sval_need(r, 8, s.name);
          uint32_t v = u32_of(r, 4);
          f.param_offset = v & 0xffff;
          f.param_bytes = v >> 16;
          have_cbank = true;
          break;
        }
        case Eiattr::cbank_param_size: cbank_param_size = r.value; break;
        case Eiattr::kparam_info: {
          sval_need(r, 12, s.name);
          uint32_t ord_off = u32_of(r, 4), flags = u32_of(r, 8);
          uint32_t ordinal = ord_off & 0xffff, offset = ord_off >> 16, size = flags >> 18;
          if (!params.emplace(ordinal, std::make_pair(offset, size)).second)
            Cubin::bad(where + ": parameter " + std::to_string(ordinal) + " described twice");
          break;
        }
        case Eiattr::reqntid:
          sval_need(r, 12, s.name);
          for (int i = 0; i < 3; i++) f.reqntid[i] = u32_of(r, 4 * i);
          break;
        case Eiattr::max_threads:
          sval_need(r, 12, s.name);
          for (int i = 0; i < 3; i++) f.max_threads[i] = u32_of(r, 4 * i);
          break;
        case Eiattr::maxreg_count: f.max_registers = r.value; break;
        case Eiattr::num_barriers:
          f.barriers = r.format == kEifmtSval ? (r.value >= 4 ? u32_of(r, 0) : 0) : r.value;
          break;
        case Eiattr::crs_stack_size:
          sval_need(r, 4, s.name);
          f.crs_stack_bytes = u32_of(r, 0);
          break;
        default: break;
      }
    }
    if (!have_cbank)
      Cubin::bad(where + ": no EIATTR_PARAM_CBANK: where its parameters go is unknown");
    if (cbank_param_size >= 0 && (uint32_t)cbank_param_size != f.param_bytes)
      Cubin::bad(where + ": EIATTR_CBANK_PARAM_SIZE " + std::to_string(cbank_param_size) +
                 " disagrees with EIATTR_PARAM_CBANK's " + std::to_string(f.param_bytes));
    if ((uint64_t)f.param_offset + f.param_bytes > f.cbank0_bytes)
      Cubin::bad(where + ": parameters [" + std::to_string(f.param_offset) + ", +" +
                 std::to_string(f.param_bytes) + ") lie outside its " +
                 std::to_string(f.cbank0_bytes) + "-byte constant bank 0");
    f.param_count = (uint32_t)params.size();
    uint32_t expect = 0;
    for (const auto &[ordinal, os] : params) {
      if (ordinal != expect++)
        Cubin::bad(where + ": parameter " + std::to_string(expect - 1) + " is not described");
      if ((uint64_t)os.first + os.second > f.param_bytes)
        Cubin::bad(where + ": parameter " + std::to_string(ordinal) + " lies outside the " +
                   std::to_string(f.param_bytes) + " parameter bytes");
      f.param_offsets.push_back(os.first);
      f.param_sizes.push_back(os.second);
    }
    out[k] = f;
  }
  if (out.empty()) Cubin::bad("no kernels (no .nv.info.<kernel> section)");
  return out;
}

}  // namespace capgraph
