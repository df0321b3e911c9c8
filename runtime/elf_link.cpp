// ELF64 relocatable-object linker for kernels. See elf_link.h for what it does and the sources.
//
// Every read of the object is bounds-checked: a capture that passed the flatbuffers verifier can
// still carry any bytes as a program binary, and linking it must fail with a message, not crash.
#include "elf_link.h"

#include <elf.h>
#include <math.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <map>
#include <utility>

namespace capgraph {

const std::vector<elf_import> &elf_runtime_imports() {
  using f1 = float (*)(float);
  using f2 = float (*)(float, float);
  static const std::vector<elf_import> imports = {
      {"memcpy",
       reinterpret_cast<void *>(static_cast<void *(*)(void *, const void *, size_t)>(&::memcpy))},
      {"memset", reinterpret_cast<void *>(static_cast<void *(*)(void *, int, size_t)>(&::memset))},
      {"memmove",
       reinterpret_cast<void *>(static_cast<void *(*)(void *, const void *, size_t)>(&::memmove))},
      {"expf", reinterpret_cast<void *>(static_cast<f1>(&::expf))},
      {"logf", reinterpret_cast<void *>(static_cast<f1>(&::logf))},
      {"powf", reinterpret_cast<void *>(static_cast<f2>(&::powf))},
      {"tanhf", reinterpret_cast<void *>(static_cast<f1>(&::tanhf))},
      {"sqrtf", reinterpret_cast<void *>(static_cast<f1>(&::sqrtf))},
      {"erff", reinterpret_cast<void *>(static_cast<f1>(&::erff))},
      {"sinf", reinterpret_cast<void *>(static_cast<f1>(&::sinf))},
      {"cosf", reinterpret_cast<void *>(static_cast<f1>(&::cosf))},
      {"fmodf", reinterpret_cast<void *>(static_cast<f2>(&::fmodf))},
      {"floorf", reinterpret_cast<void *>(static_cast<f1>(&::floorf))},
      {"ceilf", reinterpret_cast<void *>(static_cast<f1>(&::ceilf))},
      {"roundf", reinterpret_cast<void *>(static_cast<f1>(&::roundf))},
      {"nearbyintf", reinterpret_cast<void *>(static_cast<f1>(&::nearbyintf))},
  };
  return imports;
}

elf_image::elf_image(elf_image &&o) noexcept { *this = std::move(o); }

elf_image &elf_image::operator=(elf_image &&o) noexcept {
  if (this != &o) {
    if (base) munmap(base, size);
    base = std::exchange(o.base, nullptr);
    size = std::exchange(o.size, 0);
    symbols = std::move(o.symbols);
    stub_count = o.stub_count;
    got_count = o.got_count;
    low_mapping = o.low_mapping;
  }
  return *this;
}

elf_image::~elf_image() {
  if (base) munmap(base, size);
}

void *elf_image::symbol_address(const char *name) const { return lookup(name, false); }
void *elf_image::code_address(const char *name) const { return lookup(name, true); }

void *elf_image::lookup(const char *name, bool code_only) const {
  void *local = nullptr;
  for (const elf_symbol &s : symbols) {
    if (s.name != name || (code_only && !s.code)) continue;
    if (s.global) return s.address;
    if (!local) local = s.address;
  }
  return local;
}

namespace {

#if defined(__x86_64__)
constexpr uint16_t k_host_machine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t k_host_machine = EM_AARCH64;
#else
#error "capgraph runtime: kernels are linked for x86-64 or aarch64 only"
#endif

// Kernel objects are small; a cap keeps corrupt sizes (a huge .bss) from reaching mmap and keeps
// every part of the image within reach of 32-bit PC-relative relocations.
constexpr uint64_t k_max_image = uint64_t(1) << 30;
constexpr size_t k_stub_size = 16;
constexpr size_t k_got_entry = 8;

const char *machine_name(uint16_t m) {
  switch (m) {
    case EM_X86_64: return "x86-64";
    case EM_AARCH64: return "aarch64";
    case EM_386: return "i386";
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case 224: return "amdgpu";  // EM_AMDGPU
    default: return "unknown";
  }
}

const char *reloc_name(uint16_t machine, uint32_t type) {
  if (machine == EM_X86_64) {
    // clang-format off
    static const char *const names[] = {
        "NONE", "64", "PC32", "GOT32", "PLT32", "COPY", "GLOB_DAT", "JUMP_SLOT", "RELATIVE",
        "GOTPCREL", "32", "32S", "16", "PC16", "8", "PC8", "DTPMOD64", "DTPOFF64", "TPOFF64",
        "TLSGD", "TLSLD", "DTPOFF32", "GOTTPOFF", "TPOFF32", "PC64", "GOTOFF64", "GOTPC32",
        "GOT64", "GOTPCREL64", "GOTPC64", "GOTPLT64", "PLTOFF64", "SIZE32", "SIZE64",
        "GOTPC32_TLSDESC", "TLSDESC_CALL", "TLSDESC", "IRELATIVE", "RELATIVE64", "39", "40",
        "GOTPCRELX", "REX_GOTPCRELX"};
    // clang-format on
    return type < sizeof(names) / sizeof(names[0]) ? names[type] : "?";
  }
  switch (type) {
    case R_AARCH64_ABS64: return "ABS64";
    case R_AARCH64_ABS32: return "ABS32";
    case R_AARCH64_ABS16: return "ABS16";
    case R_AARCH64_PREL64: return "PREL64";
    case R_AARCH64_PREL32: return "PREL32";
    case R_AARCH64_PREL16: return "PREL16";
    case R_AARCH64_MOVW_UABS_G0: return "MOVW_UABS_G0";
    case R_AARCH64_MOVW_UABS_G0_NC: return "MOVW_UABS_G0_NC";
    case R_AARCH64_MOVW_UABS_G1: return "MOVW_UABS_G1";
    case R_AARCH64_MOVW_UABS_G1_NC: return "MOVW_UABS_G1_NC";
    case R_AARCH64_MOVW_UABS_G2: return "MOVW_UABS_G2";
    case R_AARCH64_MOVW_UABS_G2_NC: return "MOVW_UABS_G2_NC";
    case R_AARCH64_MOVW_UABS_G3: return "MOVW_UABS_G3";
    case R_AARCH64_LD_PREL_LO19: return "LD_PREL_LO19";
    case R_AARCH64_ADR_PREL_LO21: return "ADR_PREL_LO21";
    case R_AARCH64_ADR_PREL_PG_HI21: return "ADR_PREL_PG_HI21";
    case R_AARCH64_ADR_PREL_PG_HI21_NC: return "ADR_PREL_PG_HI21_NC";
    case R_AARCH64_ADD_ABS_LO12_NC: return "ADD_ABS_LO12_NC";
    case R_AARCH64_LDST8_ABS_LO12_NC: return "LDST8_ABS_LO12_NC";
    case R_AARCH64_TSTBR14: return "TSTBR14";
    case R_AARCH64_CONDBR19: return "CONDBR19";
    case R_AARCH64_JUMP26: return "JUMP26";
    case R_AARCH64_CALL26: return "CALL26";
    case R_AARCH64_LDST16_ABS_LO12_NC: return "LDST16_ABS_LO12_NC";
    case R_AARCH64_LDST32_ABS_LO12_NC: return "LDST32_ABS_LO12_NC";
    case R_AARCH64_LDST64_ABS_LO12_NC: return "LDST64_ABS_LO12_NC";
    case R_AARCH64_LDST128_ABS_LO12_NC: return "LDST128_ABS_LO12_NC";
    case R_AARCH64_ADR_GOT_PAGE: return "ADR_GOT_PAGE";
    case R_AARCH64_LD64_GOT_LO12_NC: return "LD64_GOT_LO12_NC";
    case R_AARCH64_LD64_GOTPAGE_LO15: return "LD64_GOTPAGE_LO15";
    default: return type >= 512 && type < 600 ? "TLS relocation" : "?";
  }
}

template <class T>
T load(const uint8_t *p) {
  T v;
  memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
void store(uint8_t *p, T v) {
  memcpy(p, &v, sizeof v);
}

bool in_range(uint64_t offset, uint64_t len, uint64_t size) {
  return offset <= size && len <= size - offset;
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

bool fits_signed(int64_t v, int bits) {
  return v >= -(int64_t(1) << (bits - 1)) && v < (int64_t(1) << (bits - 1));
}

// Which page-aligned part of the image a section goes to; the order is the layout order.
enum part : int { part_none = -1, part_text = 0, part_ro = 1, part_rw = 2 };

struct section {
  Elf64_Shdr h;
  const char *name = "";
  int part = part_none;
  uint64_t offset = 0;  // inside the image
};

struct symbol {
  const char *name = "";
  uint8_t bind = 0, type = 0;
  uint16_t shndx = 0;
  uint64_t value = 0;
  int import = -1;       // index into elf_runtime_imports() for an undefined symbol
  bool usable = false;   // address is meaningful (defined in a loaded section, absolute, import)
  uint64_t address = 0;  // for imports: the function itself
};

struct reloc {
  uint64_t offset;
  uint32_t sym;
  uint32_t type;
  int64_t addend;
};

class linker {
 public:
  linker(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  capgraph_status link(elf_image *out, std::string *err) {
    if (!header_parse() || !sections_parse() || !symbols_parse() || !relocs_scan() ||
        !image_map() || !symbols_resolve() || !stubs_write() || !relocs_apply() ||
        !image_protect()) {
      *err = error_;
      return status_;
    }
    image_.stub_count = stub_of_import_.size();
    image_.got_count = got_.size();
    for (const symbol &s : syms_) {
      if (!s.usable || s.import >= 0 || !*s.name || s.type == STT_SECTION || s.type == STT_FILE)
        continue;
      const bool code = s.shndx < sections_.size() && sections_[s.shndx].part == part_text;
      image_.symbols.push_back(
          {s.name, reinterpret_cast<void *>(s.address), s.bind != STB_LOCAL, code});
    }
    *out = std::move(image_);
    return CAPGRAPH_OK;
  }

 private:
  __attribute__((format(printf, 3, 4))) bool fail(capgraph_status status, const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    status_ = status;
    error_ = buf;
    return false;
  }
  __attribute__((format(printf, 2, 3))) bool bad(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    status_ = CAPGRAPH_ERR_FORMAT;
    error_ = std::string("ELF object: ") + buf;
    return false;
  }

  // A NUL-terminated string inside a string table section, or nullptr.
  const char *string_at(uint32_t strtab, uint64_t offset) const {
    if (strtab >= sections_.size()) return nullptr;
    const Elf64_Shdr &h = sections_[strtab].h;
    if (h.sh_type != SHT_STRTAB || offset >= h.sh_size) return nullptr;
    const char *s = reinterpret_cast<const char *>(data_ + h.sh_offset + offset);
    return memchr(s, 0, h.sh_size - offset) ? s : nullptr;
  }

  bool header_parse() {
    if (size_ < sizeof(Elf64_Ehdr)) return bad("%zu bytes is too short for an ELF header", size_);
    eh_ = load<Elf64_Ehdr>(data_);
    if (memcmp(eh_.e_ident, ELFMAG, SELFMAG) != 0) return bad("no ELF magic number");
    if (eh_.e_ident[EI_CLASS] != ELFCLASS64) return bad("not a 64-bit ELF object");
    if (eh_.e_ident[EI_DATA] != ELFDATA2LSB) return bad("not a little-endian ELF object");
    if (eh_.e_type != ET_REL)
      return bad("ELF type %u is not a relocatable object (ET_REL)", unsigned(eh_.e_type));
    if (eh_.e_machine != k_host_machine)
      return fail(CAPGRAPH_ERR_TARGET, "ELF object is for %s (e_machine %u) but this machine is %s",
                  machine_name(eh_.e_machine), unsigned(eh_.e_machine),
                  machine_name(k_host_machine));
    if (eh_.e_shentsize != sizeof(Elf64_Shdr))
      return bad("section header size %u, expected %zu", unsigned(eh_.e_shentsize),
                 sizeof(Elf64_Shdr));
    return true;
  }

  bool sections_parse() {
    uint64_t count = eh_.e_shnum;
    uint32_t shstrndx = eh_.e_shstrndx;
    if (eh_.e_shoff == 0) return bad("no section header table");
    if (!in_range(eh_.e_shoff, sizeof(Elf64_Shdr), size_))
      return bad("section header table at 0x%llx is outside the object",
                 (unsigned long long)eh_.e_shoff);
    // gABI: with 0xff00 or more sections the real count and string table index live in
    // section 0's sh_size and sh_link.
    const Elf64_Shdr first = load<Elf64_Shdr>(data_ + eh_.e_shoff);
    if (count == 0) count = first.sh_size;
    if (shstrndx == SHN_XINDEX) shstrndx = first.sh_link;
    if (count > (size_ - eh_.e_shoff) / sizeof(Elf64_Shdr))
      return bad("%llu section headers do not fit in the object", (unsigned long long)count);
    sections_.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      section &s = sections_[i];
      s.h = load<Elf64_Shdr>(data_ + eh_.e_shoff + i * sizeof(Elf64_Shdr));
      if (s.h.sh_type != SHT_NOBITS && s.h.sh_type != SHT_NULL &&
          !in_range(s.h.sh_offset, s.h.sh_size, size_))
        return bad("section %llu data (offset 0x%llx, %llu bytes) is outside the object",
                   (unsigned long long)i, (unsigned long long)s.h.sh_offset,
                   (unsigned long long)s.h.sh_size);
    }
    if (shstrndx >= count || sections_[shstrndx].h.sh_type != SHT_STRTAB)
      return bad("section name table index %u is not a string table", shstrndx);
    const long page = sysconf(_SC_PAGESIZE);
    page_ = page > 0 ? uint64_t(page) : 4096;
    for (uint64_t i = 1; i < count; ++i) {
      section &s = sections_[i];
      s.name = string_at(shstrndx, s.h.sh_name);
      if (!s.name) return bad("section %llu has a bad name offset", (unsigned long long)i);
      if (!section_classify(s)) return false;
    }
    return true;
  }

  // Decides whether a section is loaded and where (gABI section types and flags).
  bool section_classify(section &s) {
    const Elf64_Shdr &h = s.h;
    if (!(h.sh_flags & SHF_ALLOC)) return true;
    // Unwind tables, notes and group headers are not needed to run a kernel: nothing here
    // unwinds through kernels or reads notes.
    const bool unwind = strcmp(s.name, ".eh_frame") == 0 ||
                        (eh_.e_machine == EM_X86_64 && h.sh_type == SHT_X86_64_UNWIND);
    if (unwind || h.sh_type == SHT_NOTE || h.sh_type == SHT_GROUP) return true;
    if (h.sh_flags & SHF_TLS)
      return bad("section '%s' holds thread-local storage, which kernels cannot use", s.name);
    if (h.sh_type == SHT_INIT_ARRAY || h.sh_type == SHT_FINI_ARRAY ||
        h.sh_type == SHT_PREINIT_ARRAY)
      return bad("section '%s' holds constructors or destructors, which the runtime does not run",
                 s.name);
    if (h.sh_type != SHT_PROGBITS && h.sh_type != SHT_NOBITS)
      return bad("allocated section '%s' has unsupported type 0x%x", s.name, h.sh_type);
    if ((h.sh_flags & SHF_WRITE) && (h.sh_flags & SHF_EXECINSTR))
      return bad("section '%s' is both writable and executable", s.name);
    const uint64_t align = h.sh_addralign ? h.sh_addralign : 1;
    if ((align & (align - 1)) || align > page_)
      return bad("section '%s' alignment %llu is not a power of two up to the page size", s.name,
                 (unsigned long long)align);
    if (h.sh_size > k_max_image)
      return bad("section '%s' is %llu bytes, more than the %llu the runtime links", s.name,
                 (unsigned long long)h.sh_size, (unsigned long long)k_max_image);
    if (h.sh_flags & SHF_EXECINSTR)
      s.part = part_text;
    else if ((h.sh_flags & SHF_WRITE) || h.sh_type == SHT_NOBITS)
      s.part = part_rw;
    else
      s.part = part_ro;
    return true;
  }

  bool symbols_parse() {
    for (size_t i = 1; i < sections_.size(); ++i) {
      const Elf64_Shdr &h = sections_[i].h;
      if (h.sh_type == SHT_REL)
        return bad("section '%s' uses SHT_REL; x86-64 and aarch64 objects use SHT_RELA",
                   sections_[i].name);
      if (h.sh_type != SHT_SYMTAB) continue;
      if (symtab_) return bad("more than one symbol table");
      symtab_ = uint32_t(i);
    }
    if (!symtab_) return bad("no symbol table (.symtab)");
    const Elf64_Shdr &h = sections_[symtab_].h;
    if (h.sh_entsize != sizeof(Elf64_Sym) || h.sh_size % sizeof(Elf64_Sym))
      return bad("symbol table entry size %llu, expected %zu", (unsigned long long)h.sh_entsize,
                 sizeof(Elf64_Sym));
    const uint64_t count = h.sh_size / sizeof(Elf64_Sym);
    const auto &imports = elf_runtime_imports();
    syms_.resize(count);
    for (uint64_t i = 1; i < count; ++i) {
      const Elf64_Sym e = load<Elf64_Sym>(data_ + h.sh_offset + i * sizeof(Elf64_Sym));
      symbol &s = syms_[i];
      s.name = string_at(h.sh_link, e.st_name);
      if (!s.name) return bad("symbol %llu has a bad name", (unsigned long long)i);
      s.bind = ELF64_ST_BIND(e.st_info);
      s.type = ELF64_ST_TYPE(e.st_info);
      s.shndx = e.st_shndx;
      s.value = e.st_value;
      if (s.type == STT_TLS || s.type == STT_GNU_IFUNC)
        return bad("symbol '%s' is thread-local or an ifunc; kernels cannot use those", s.name);
      if (s.shndx == SHN_COMMON)
        return bad("symbol '%s' is a common symbol; compile kernels with -fno-common", s.name);
      if (s.shndx == SHN_XINDEX)
        return bad("symbol '%s' uses an extended section index (SHN_XINDEX)", s.name);
      if (s.shndx != SHN_UNDEF) continue;
      for (size_t k = 0; k < imports.size(); ++k)
        if (strcmp(imports[k].name, s.name) == 0) s.import = int(k);
      if (s.import < 0 && s.bind != STB_WEAK) {
        std::string known;
        for (const elf_import &imp : imports)
          known += std::string(known.empty() ? "" : " ") + imp.name;
        return bad("undefined symbol '%s' is not provided by the runtime (it provides: %s)", s.name,
                   known.c_str());
      }
    }
    return true;
  }

  bool reloc_read(const Elf64_Shdr &h, uint64_t i, reloc *r) const {
    const Elf64_Rela e = load<Elf64_Rela>(data_ + h.sh_offset + i * sizeof(Elf64_Rela));
    r->offset = e.r_offset;
    r->sym = uint32_t(ELF64_R_SYM(e.r_info));
    r->type = uint32_t(ELF64_R_TYPE(e.r_info));
    r->addend = e.r_addend;
    return r->sym < syms_.size();
  }

  bool is_got_reloc(uint32_t type) const {
    if (eh_.e_machine == EM_X86_64)
      return type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX ||
             type == R_X86_64_REX_GOTPCRELX;
    return type == R_AARCH64_ADR_GOT_PAGE || type == R_AARCH64_LD64_GOT_LO12_NC;
  }

  // Relocations that may point at the import's own address wherever it is; every other kind
  // needs a target near the image, so imports are reached through a stub in the image.
  bool reaches_anywhere(uint32_t type) const {
    if (is_got_reloc(type)) return true;
    if (eh_.e_machine == EM_X86_64) return type == R_X86_64_64 || type == R_X86_64_PC64;
    return type == R_AARCH64_ABS64 || type == R_AARCH64_PREL64;
  }

  bool reloc_supported(uint32_t type) const {
    if (eh_.e_machine == EM_X86_64) {
      switch (type) {
        case R_X86_64_NONE:
        case R_X86_64_64:
        case R_X86_64_PC32:
        case R_X86_64_PLT32:
        case R_X86_64_32:
        case R_X86_64_32S:
        case R_X86_64_PC64:
        case R_X86_64_GOTPCREL:
        case R_X86_64_GOTPCRELX:
        case R_X86_64_REX_GOTPCRELX: return true;
        default: return false;
      }
    }
    switch (type) {
      case R_AARCH64_NONE:
      case 256 /* R_AARCH64_NONE, AAELF64 alternative value */:
      case R_AARCH64_ABS64:
      case R_AARCH64_ABS32:
      case R_AARCH64_PREL64:
      case R_AARCH64_PREL32:
      case R_AARCH64_ADR_PREL_LO21:
      case R_AARCH64_ADR_PREL_PG_HI21:
      case R_AARCH64_ADD_ABS_LO12_NC:
      case R_AARCH64_LDST8_ABS_LO12_NC:
      case R_AARCH64_LDST16_ABS_LO12_NC:
      case R_AARCH64_LDST32_ABS_LO12_NC:
      case R_AARCH64_LDST64_ABS_LO12_NC:
      case R_AARCH64_LDST128_ABS_LO12_NC:
      case R_AARCH64_CALL26:
      case R_AARCH64_JUMP26:
      case R_AARCH64_ADR_GOT_PAGE:
      case R_AARCH64_LD64_GOT_LO12_NC: return true;
      default: return false;
    }
  }

  // Checks every relocation section once and counts what the image needs besides the
  // sections: GOT slots, import stubs, and whether it must sit below 2 GiB.
  bool relocs_scan() {
    for (size_t i = 1; i < sections_.size(); ++i) {
      const section &rs = sections_[i];
      if (rs.h.sh_type != SHT_RELA) continue;
      if (rs.h.sh_info >= sections_.size())
        return bad("relocation section '%s' targets section %u, which does not exist", rs.name,
                   rs.h.sh_info);
      const section &target = sections_[rs.h.sh_info];
      if (target.part == part_none) continue;  // relocates debug info, unwind tables, ...
      if (rs.h.sh_link != symtab_)
        return bad("relocation section '%s' does not use the symbol table", rs.name);
      if (rs.h.sh_entsize != sizeof(Elf64_Rela) || rs.h.sh_size % sizeof(Elf64_Rela))
        return bad("relocation section '%s' has entry size %llu, expected %zu", rs.name,
                   (unsigned long long)rs.h.sh_entsize, sizeof(Elf64_Rela));
      if (target.h.sh_type == SHT_NOBITS)
        return bad("relocation section '%s' patches '%s', which has no contents", rs.name,
                   target.name);
      const uint64_t count = rs.h.sh_size / sizeof(Elf64_Rela);
      for (uint64_t k = 0; k < count; ++k) {
        reloc r;
        if (!reloc_read(rs.h, k, &r))
          return bad("relocation %llu in '%s' names symbol %u, which does not exist",
                     (unsigned long long)k, rs.name, r.sym);
        const symbol &s = syms_[r.sym];
        if (!reloc_supported(r.type))
          return bad(
              "relocation R_%s_%s (type %u) at %s+0x%llx against '%s' is not supported "
              "by the runtime linker",
              eh_.e_machine == EM_X86_64 ? "X86_64" : "AARCH64", reloc_name(eh_.e_machine, r.type),
              r.type, target.name, (unsigned long long)r.offset, s.name);
        if (r.type == R_X86_64_32 || r.type == R_X86_64_32S)
          needs_low_ |= eh_.e_machine == EM_X86_64;
        if (is_got_reloc(r.type)) {
          const int64_t key_addend = eh_.e_machine == EM_AARCH64 ? r.addend : 0;
          got_.emplace(std::make_pair(r.sym, key_addend), got_.size());
        } else if (s.import >= 0 && !reaches_anywhere(r.type)) {
          stub_of_import_.emplace(s.import, stub_of_import_.size());
        }
      }
    }
    return true;
  }

  bool image_map() {
    uint64_t offset = 0;
    for (int p = part_text; p <= part_rw; ++p) {
      offset = align_up(offset, page_);
      part_start_[p] = offset;
      for (section &s : sections_) {
        if (s.part != p) continue;
        offset = align_up(offset, s.h.sh_addralign ? s.h.sh_addralign : 1);
        s.offset = offset;
        offset += s.h.sh_size;
        if (offset > k_max_image)
          return bad("loaded sections exceed %llu bytes", (unsigned long long)k_max_image);
      }
      if (p == part_text) {
        offset = align_up(offset, k_stub_size);
        stubs_offset_ = offset;
        offset += stub_of_import_.size() * k_stub_size;
      } else if (p == part_ro) {
        offset = align_up(offset, k_got_entry);
        got_offset_ = offset;
        offset += got_.size() * k_got_entry;
      }
      part_end_[p] = offset;
    }
    const uint64_t total = align_up(offset ? offset : 1, page_);
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_32BIT
    // R_X86_64_32/32S hold absolute addresses in 32 bits (psABI 4.4): the image must sit in the
    // low 2 GiB, which Linux gives with MAP_32BIT on x86-64.
    if (needs_low_) flags |= MAP_32BIT;
#endif
    void *p = mmap(nullptr, total, PROT_READ | PROT_WRITE, flags, -1, 0);
    if (p == MAP_FAILED)
      return fail(CAPGRAPH_ERR_MEMORY, "cannot map %llu bytes for the kernel image%s: %s",
                  (unsigned long long)total, needs_low_ ? " below 2 GiB" : "", strerror(errno));
    image_.base = static_cast<uint8_t *>(p);
    image_.size = total;
    image_.low_mapping = needs_low_;
    for (const section &s : sections_)
      if (s.part != part_none && s.h.sh_type == SHT_PROGBITS && s.h.sh_size)
        memcpy(image_.base + s.offset, data_ + s.h.sh_offset, s.h.sh_size);
    return true;
  }

  bool symbols_resolve() {
    const auto &imports = elf_runtime_imports();
    const uint64_t base = reinterpret_cast<uint64_t>(image_.base);
    for (size_t i = 1; i < syms_.size(); ++i) {
      symbol &s = syms_[i];
      if (s.shndx == SHN_UNDEF) {
        s.usable = true;  // an unprovided weak symbol resolves to 0 (gABI)
        if (s.import >= 0) s.address = reinterpret_cast<uint64_t>(imports[s.import].address);
      } else if (s.shndx == SHN_ABS) {
        s.usable = true;
        s.address = s.value;
      } else if (s.shndx < sections_.size() && s.shndx < SHN_LORESERVE) {
        const section &sec = sections_[s.shndx];
        if (sec.part == part_none) continue;  // in debug info or unwind tables: never used
        if (s.value > sec.h.sh_size)
          return bad("symbol '%s' value 0x%llx is past the end of section '%s'", s.name,
                     (unsigned long long)s.value, sec.name);
        s.usable = true;
        s.address = base + sec.offset + s.value;
      } else {
        return bad("symbol '%s' is in section %u, which does not exist", s.name, s.shndx);
      }
    }
    return true;
  }

  bool stubs_write() {
    const auto &imports = elf_runtime_imports();
    for (const auto &[import, index] : stub_of_import_) {
      uint8_t *p = image_.base + stubs_offset_ + index * k_stub_size;
      const uint64_t target = reinterpret_cast<uint64_t>(imports[import].address);
      if (eh_.e_machine == EM_X86_64) {
        // jmp *0(%rip) ; .quad target ; int3 int3
        const uint8_t code[6] = {0xff, 0x25, 0, 0, 0, 0};
        memcpy(p, code, sizeof code);
        store<uint64_t>(p + 6, target);
        p[14] = p[15] = 0xcc;
      } else {
        // ldr x16, #8 ; br x16 ; .quad target. x16 (IP0) is the register AAPCS64 reserves for
        // veneers, so a call through it clobbers nothing the caller relies on.
        store<uint32_t>(p, 0x58000050u);
        store<uint32_t>(p + 4, 0xd61f0200u);
        store<uint64_t>(p + 8, target);
      }
    }
    for (const auto &[key, index] : got_) {
      const symbol &s = syms_[key.first];
      if (!s.usable) return bad("GOT entry for '%s', which is not loaded", s.name);
      store<uint64_t>(image_.base + got_offset_ + index * k_got_entry, s.address + key.second);
    }
    return true;
  }

  bool relocs_apply() {
    const uint64_t base = reinterpret_cast<uint64_t>(image_.base);
    for (size_t i = 1; i < sections_.size(); ++i) {
      const section &rs = sections_[i];
      if (rs.h.sh_type != SHT_RELA || sections_[rs.h.sh_info].part == part_none) continue;
      const section &target = sections_[rs.h.sh_info];
      const uint64_t count = rs.h.sh_size / sizeof(Elf64_Rela);
      for (uint64_t k = 0; k < count; ++k) {
        reloc r;
        reloc_read(rs.h, k, &r);
        const symbol &s = syms_[r.sym];
        const uint32_t width = reloc_width(r.type);
        if (!in_range(r.offset, width, target.h.sh_size))
          return bad("relocation %llu in '%s' at offset 0x%llx is outside '%s'",
                     (unsigned long long)k, rs.name, (unsigned long long)r.offset, target.name);
        if (r.sym && !s.usable)
          return bad(
              "relocation at %s+0x%llx refers to '%s', which is in a section that is not "
              "loaded",
              target.name, (unsigned long long)r.offset, s.name);
        uint64_t S = s.address;
        if (s.import >= 0 && !reaches_anywhere(r.type))
          S = base + stubs_offset_ + stub_of_import_.at(s.import) * k_stub_size;
        uint64_t G = 0;
        if (is_got_reloc(r.type)) {
          const int64_t key_addend = eh_.e_machine == EM_AARCH64 ? r.addend : 0;
          G = base + got_offset_ + got_.at({r.sym, key_addend}) * k_got_entry;
        }
        uint8_t *where = image_.base + target.offset + r.offset;
        const uint64_t P = reinterpret_cast<uint64_t>(where);
        const bool ok = eh_.e_machine == EM_X86_64
                            ? reloc_x86_64(r.type, where, P, S, r.addend, G)
                            : reloc_aarch64(r.type, where, P, S, r.addend, G);
        if (!ok) {
          if (!error_.empty()) return false;
          return bad("relocation R_%s_%s at %s+0x%llx against '%s' does not fit (target 0x%llx)",
                     eh_.e_machine == EM_X86_64 ? "X86_64" : "AARCH64",
                     reloc_name(eh_.e_machine, r.type), target.name, (unsigned long long)r.offset,
                     s.name, (unsigned long long)(S + r.addend));
        }
      }
    }
    return true;
  }

  uint32_t reloc_width(uint32_t type) const {
    if (eh_.e_machine == EM_X86_64)
      return type == R_X86_64_NONE ? 0 : type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
    if (type == R_AARCH64_NONE || type == 256) return 0;
    return type == R_AARCH64_ABS64 || type == R_AARCH64_PREL64 ? 8 : 4;
  }

  // System V AMD64 psABI 1.0, section 4.4.1, table 4.10. S symbol, A addend, P place,
  // G + GOT the address of the symbol's GOT entry, L its PLT entry (here: the stub or S).
  static bool reloc_x86_64(uint32_t type, uint8_t *p, uint64_t P, uint64_t S, int64_t A,
                           uint64_t G) {
    switch (type) {
      case R_X86_64_NONE: return true;
      case R_X86_64_64: store<uint64_t>(p, S + A); return true;        // S + A
      case R_X86_64_PC64: store<uint64_t>(p, S + A - P); return true;  // S + A - P
      case R_X86_64_PC32:                                              // S + A - P
      case R_X86_64_PLT32: {                                           // L + A - P
        const int64_t v = int64_t(S + A - P);
        if (!fits_signed(v, 32)) return false;
        store<int32_t>(p, int32_t(v));
        return true;
      }
      case R_X86_64_32: {  // S + A, zero-extended by the instruction
        const uint64_t v = S + A;
        if (v > UINT32_MAX) return false;
        store<uint32_t>(p, uint32_t(v));
        return true;
      }
      case R_X86_64_32S: {  // S + A, sign-extended by the instruction
        const int64_t v = int64_t(S + A);
        if (!fits_signed(v, 32)) return false;
        store<int32_t>(p, int32_t(v));
        return true;
      }
      case R_X86_64_GOTPCREL:   // G + GOT + A - P
      case R_X86_64_GOTPCRELX:  // same, and the linker may relax the instruction (we don't)
      case R_X86_64_REX_GOTPCRELX: {
        const int64_t v = int64_t(G + A - P);
        if (!fits_signed(v, 32)) return false;
        store<int32_t>(p, int32_t(v));
        return true;
      }
      default: return false;
    }
  }

  // AAELF64 section 5.7: tables 5-6 (data), 5-9..5-12 (instructions). Page(x) = x & ~0xfff.
  // GDAT(S + A) is the GOT entry holding S + A; here G is its address.
  bool reloc_aarch64(uint32_t type, uint8_t *p, uint64_t P, uint64_t S, int64_t A, uint64_t G) {
    const uint32_t insn = load<uint32_t>(p);
    auto page = [](uint64_t x) { return x & ~uint64_t(0xfff); };
    // ADR/ADRP: immlo in bits 29-30, immhi in bits 5-23 (Arm ARM C6.2.10, C6.2.11).
    auto adr_set = [&](int64_t imm) {
      store<uint32_t>(p, (insn & ~((3u << 29) | (0x7ffffu << 5))) | (uint32_t(imm & 3) << 29) |
                             (uint32_t((imm >> 2) & 0x7ffff) << 5));
    };
    // ADD (immediate) and LDR/STR (unsigned offset): imm12 in bits 10-21.
    auto imm12_set = [&](uint64_t v) {
      store<uint32_t>(p, (insn & ~(0xfffu << 10)) | (uint32_t(v & 0xfff) << 10));
    };
    auto ldst = [&](uint64_t x, int shift) {
      // The _NC forms skip the overflow check, but an address not aligned to the access size
      // cannot be encoded (the low bits would be dropped), so that is an error.
      if (x & ((uint64_t(1) << shift) - 1)) {
        bad("LDST relocation target 0x%llx is not %d-byte aligned", (unsigned long long)x,
            1 << shift);
        return false;
      }
      imm12_set((x & 0xfff) >> shift);
      return true;
    };
    switch (type) {
      case R_AARCH64_NONE:
      case 256: return true;
      case R_AARCH64_ABS64: store<uint64_t>(p, S + A); return true;       // S + A
      case R_AARCH64_PREL64: store<uint64_t>(p, S + A - P); return true;  // S + A - P
      case R_AARCH64_ABS32: {  // S + A, -2^31 <= X < 2^32
        const int64_t v = int64_t(S + A);
        if (v < INT32_MIN || v > int64_t(UINT32_MAX)) return false;
        store<uint32_t>(p, uint32_t(v));
        return true;
      }
      case R_AARCH64_PREL32: {  // S + A - P, -2^31 <= X < 2^32
        const int64_t v = int64_t(S + A - P);
        if (v < INT32_MIN || v > int64_t(UINT32_MAX)) return false;
        store<uint32_t>(p, uint32_t(v));
        return true;
      }
      case R_AARCH64_ADR_PREL_LO21: {  // S + A - P, -2^20 <= X < 2^20
        const int64_t v = int64_t(S + A - P);
        if (!fits_signed(v, 21)) return false;
        adr_set(v);
        return true;
      }
      case R_AARCH64_ADR_PREL_PG_HI21: {  // Page(S + A) - Page(P), -2^32 <= X < 2^32
        const int64_t v = int64_t(page(S + A) - page(P));
        if (!fits_signed(v, 33)) return false;
        adr_set(v >> 12);
        return true;
      }
      case R_AARCH64_ADD_ABS_LO12_NC: imm12_set(S + A); return true;  // (S + A) & 0xfff
      case R_AARCH64_LDST8_ABS_LO12_NC: return ldst(S + A, 0);
      case R_AARCH64_LDST16_ABS_LO12_NC: return ldst(S + A, 1);
      case R_AARCH64_LDST32_ABS_LO12_NC: return ldst(S + A, 2);
      case R_AARCH64_LDST64_ABS_LO12_NC: return ldst(S + A, 3);
      case R_AARCH64_LDST128_ABS_LO12_NC: return ldst(S + A, 4);
      case R_AARCH64_CALL26:    // S + A - P, -2^27 <= X < 2^27, imm26 = X >> 2
      case R_AARCH64_JUMP26: {  // (imports go through a stub, so S is always in the image)
        const int64_t v = int64_t(S + A - P);
        if (!fits_signed(v, 28) || (v & 3)) return false;
        store<uint32_t>(p, (insn & ~0x3ffffffu) | (uint32_t(v >> 2) & 0x3ffffffu));
        return true;
      }
      case R_AARCH64_ADR_GOT_PAGE: {  // Page(G(GDAT(S + A))) - Page(P)
        const int64_t v = int64_t(page(G) - page(P));
        if (!fits_signed(v, 33)) return false;
        adr_set(v >> 12);
        return true;
      }
      case R_AARCH64_LD64_GOT_LO12_NC: return ldst(G, 3);  // G(GDAT(S + A)) & 0xff8
      default: return false;
    }
  }

  bool image_protect() {
    const int prot[] = {PROT_READ | PROT_EXEC, PROT_READ, PROT_READ | PROT_WRITE};
    for (int p = part_text; p <= part_ro; ++p) {
      const uint64_t len = align_up(part_end_[p] - part_start_[p], page_);
      if (!len) continue;
      uint8_t *start = image_.base + part_start_[p];
#if defined(__aarch64__)
      // Instruction fetch is not coherent with data stores on aarch64 (Arm ARM B2.4.4).
      if (p == part_text)
        __builtin___clear_cache(reinterpret_cast<char *>(start),
                                reinterpret_cast<char *>(start + len));
#endif
      if (mprotect(start, len, prot[p]) != 0)
        return fail(CAPGRAPH_ERR_MEMORY, "cannot protect the kernel image: %s", strerror(errno));
    }
    return true;
  }

  const uint8_t *data_;
  size_t size_;
  Elf64_Ehdr eh_{};
  uint64_t page_ = 4096;
  std::vector<section> sections_;
  std::vector<symbol> syms_;
  uint32_t symtab_ = 0;
  bool needs_low_ = false;
  std::map<std::pair<uint32_t, int64_t>, size_t> got_;  // (symbol, addend) -> slot
  std::map<int, size_t> stub_of_import_;                // import -> stub
  uint64_t part_start_[3] = {}, part_end_[3] = {};
  uint64_t stubs_offset_ = 0, got_offset_ = 0;
  elf_image image_;
  capgraph_status status_ = CAPGRAPH_ERR_FORMAT;
  std::string error_;
};

}  // namespace

capgraph_status elf_link(const uint8_t *data, size_t size, elf_image *out, std::string *err) {
  if (!data && size) {
    *err = "ELF object: no data";
    return CAPGRAPH_ERR_FORMAT;
  }
  linker l(data, size);
  return l.link(out, err);
}

}  // namespace capgraph
