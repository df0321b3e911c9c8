#include "amdgpu_code_object.h"

#include <llvm/BinaryFormat/ELF.h>
#include <llvm/BinaryFormat/MsgPackDocument.h>
#include <llvm/Object/ELF.h>
#include <llvm/Support/AMDHSAKernelDescriptor.h>
#include <llvm/Support/Error.h>

#include <cstring>

#include "amd_hcq.h"  // the runtime's kernel-descriptor layout (targets/amd), checked below
#include "error.h"

namespace capgraph {

namespace {

using Elf = llvm::object::ELFFile<llvm::object::ELF64LE>;
namespace E = llvm::ELF;

constexpr uint64_t kPage = 4096;  // p_align of our PT_LOAD segments

uint64_t align_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

template <typename T>
T take(llvm::Expected<T> v, const std::string &what) {
  if (!v) throw Error("AMDGPU code object: " + what + ": " + llvm::toString(v.takeError()));
  return std::move(*v);
}

Elf elf_open(const std::vector<uint8_t> &bytes, const std::string &what) {
  return take(Elf::create(llvm::StringRef((const char *)bytes.data(), bytes.size())), what);
}

template <typename T>
void put(std::vector<uint8_t> &out, uint64_t at, const T &v) {
  if (at + sizeof(T) > out.size()) out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

struct OutSection {
  uint32_t in_index;  // section index in the input object
  std::string name;
  uint64_t addr = 0;  // = file offset
  uint32_t type, flags;
  uint64_t align;
  std::vector<uint8_t> data;
};

}  // namespace

namespace {

uint32_t string_add(std::string &tab, const std::string &s) {
  uint32_t off = (uint32_t)tab.size();
  tab += s;
  tab += '\0';
  return off;
}

// amdgpu_link's steps over one relocatable object, in the order amdgpu_link runs them.
class AmdgpuLink {
 public:
  explicit AmdgpuLink(const Elf &in)
      : in(in), eh(in.getHeader()), sections(take(in.sections(), "section table")) {}

  // Allocated sections in three groups, in this order: notes, read-only data, code.
  void sections_collect() {
    out_of.assign(sections.size(), -1);
    for (int group = 0; group < 3; group++)
      for (size_t i = 0; i < sections.size(); i++) {
        const auto &s = sections[i];
        if (!(s.sh_flags & E::SHF_ALLOC)) continue;  // symbols, strings, relocations, comments
        std::string name = take(in.getSectionName(s), "section name").str();
        if (s.sh_type == E::SHT_NOBITS || (s.sh_flags & E::SHF_WRITE))
          throw Error("AMDGPU link: section " + name +
                      " holds writable data; kernels may not have any");
        int g = s.sh_type == E::SHT_NOTE ? 0 : (s.sh_flags & E::SHF_EXECINSTR) ? 2 : 1;
        if (g != group) continue;
        auto bytes = take(in.getSectionContents(s), "contents of " + name);
        out_of[i] = (int)out_secs.size();
        out_secs.push_back({(uint32_t)i, name, 0, s.sh_type, (uint32_t)s.sh_flags,
                            std::max<uint64_t>(s.sh_addralign, 1),
                            std::vector<uint8_t>(bytes.begin(), bytes.end())});
      }
  }

  // Layout: headers, then the read-only segment, then code from the next page.
  void sections_place() {
    uint64_t at = sizeof(E::Elf64_Ehdr) + kPhdrs * sizeof(E::Elf64_Phdr);
    ro_end = at;
    bool first_text = true;
    for (OutSection &o : out_secs) {
      if ((o.flags & E::SHF_EXECINSTR) && first_text) {
        at = align_up(at, kPage);
        text_begin = at;
        first_text = false;
      }
      at = align_up(at, o.align);
      o.addr = at;
      at += o.data.size();
      if (o.type == E::SHT_NOTE) {
        if (!note_begin) note_begin = o.addr;
        note_end = at;
      }
      if (!(o.flags & E::SHF_EXECINSTR)) ro_end = at;
    }
    if (first_text) throw Error("AMDGPU link: the object has no code");
    text_end = at;
  }

  // Symbols: resolved to addresses; undefined ones are an error (nothing is linked in).
  void symbols_read() {
    const Elf::Elf_Shdr *symtab = nullptr;
    for (const auto &s : sections)
      if (s.sh_type == E::SHT_SYMTAB) symtab = &s;
    if (!symtab) throw Error("AMDGPU link: the object has no symbol table");
    syms = take(in.symbols(symtab), "symbols");
    strtab = take(in.getStringTableForSymtab(*symtab), "symbol names");
    for (size_t i = 1; i < syms.size(); i++)  // refuse undefined symbols even if unused
      if (syms[i].st_shndx == E::SHN_UNDEF) sym_addr(i);
  }

  // Relocations. Only PC-relative ones: they need no loader, since the whole object moves as one.
  // Source: AMDGPUUsage "Relocation Records": REL32 = S+A-P (32 bits), REL64 = S+A-P,
  // REL32_LO = (S+A-P) & 0xFFFFFFFF, REL32_HI = (S+A-P) >> 32.
  void relocations_apply() {
    for (const auto &rs : sections) {
      if (rs.sh_type == E::SHT_REL)
        throw Error("AMDGPU link: SHT_REL relocations are not supported");
      if (rs.sh_type != E::SHT_RELA || rs.sh_info >= sections.size() || out_of[rs.sh_info] < 0)
        continue;
      OutSection &target = out_secs[out_of[rs.sh_info]];
      for (const auto &r : take(in.relas(rs), "relocations of " + target.name))
        relocation_apply(target, r);
    }
  }

  // The output: headers, sections, then a symbol table, its strings and the section names.
  std::vector<uint8_t> output() {
    std::vector<uint8_t> out(text_end, 0);
    for (const OutSection &o : out_secs)
      std::memcpy(out.data() + o.addr, o.data.data(), o.data.size());
    std::string strings(1, '\0'), shstr(1, '\0');
    uint32_t first_global = 0;
    const std::vector<E::Elf64_Sym> out_syms = symbols_out(strings, &first_global);
    uint64_t symtab_off = align_up(out.size(), 8);
    out.resize(symtab_off);
    for (const E::Elf64_Sym &s : out_syms) put(out, out.size(), s);
    uint64_t strtab_off = out.size();
    out.insert(out.end(), strings.begin(), strings.end());

    std::vector<E::Elf64_Shdr> shdrs = section_headers(shstr);
    uint32_t symtab_index = (uint32_t)shdrs.size();
    auto plain = [&](const std::string &name, uint32_t type, uint64_t off, uint64_t size,
                     uint64_t align) {
      E::Elf64_Shdr h;
      std::memset(&h, 0, sizeof h);
      h.sh_name = string_add(shstr, name);
      h.sh_type = type;
      h.sh_offset = off;
      h.sh_size = size;
      h.sh_addralign = align;
      shdrs.push_back(h);
      return &shdrs.back();
    };
    E::Elf64_Shdr *sh =
        plain(".symtab", E::SHT_SYMTAB, symtab_off, out_syms.size() * sizeof(E::Elf64_Sym), 8);
    sh->sh_link = symtab_index + 1;
    sh->sh_info = first_global;
    sh->sh_entsize = sizeof(E::Elf64_Sym);
    plain(".strtab", E::SHT_STRTAB, strtab_off, strings.size(), 1);
    uint32_t shstr_index = (uint32_t)shdrs.size();
    plain(".shstrtab", E::SHT_STRTAB, 0, 0, 1);  // placed below, once every name is in
    shdrs.back().sh_offset = out.size();
    shdrs.back().sh_size = shstr.size();
    out.insert(out.end(), shstr.begin(), shstr.end());
    uint64_t shoff = align_up(out.size(), 8);
    out.resize(shoff);
    for (const E::Elf64_Shdr &h : shdrs) put(out, out.size(), h);
    headers_write(out, shoff, (uint16_t)shdrs.size(), (uint16_t)shstr_index);
    return out;
  }

 private:
  static constexpr int kPhdrs = 3;  // PT_LOAD read-only, PT_LOAD code, PT_NOTE

  const Elf &in;
  const Elf::Elf_Ehdr &eh;
  const Elf::Elf_Shdr_Range sections;
  std::vector<OutSection> out_secs;
  std::vector<int> out_of;  // per input section: its index in out_secs, or -1 (not loaded)
  uint64_t ro_end = 0, note_begin = 0, note_end = 0, text_begin = 0, text_end = 0;
  Elf::Elf_Sym_Range syms;
  llvm::StringRef strtab;

  std::string sym_name(const Elf::Elf_Sym &sym) const {
    return take(sym.getName(strtab), "symbol name").str();
  }
  uint64_t sym_addr(size_t i) const {
    const auto &sym = syms[i];
    if (sym.st_shndx == E::SHN_UNDEF)
      throw Error("AMDGPU link: undefined symbol '" + sym_name(sym) +
                  "' (kernels may call nothing)");
    if (sym.st_shndx == E::SHN_ABS) return sym.st_value;
    if (sym.st_shndx >= sections.size() || out_of[sym.st_shndx] < 0)
      throw Error("AMDGPU link: symbol '" + sym_name(sym) + "' is in a section that is not loaded");
    return out_secs[out_of[sym.st_shndx]].addr + sym.st_value;
  }

  void relocation_apply(OutSection &target, const Elf::Elf_Rela &r) {
    uint32_t type = r.getType(false);
    if (type == E::R_AMDGPU_NONE) return;
    uint32_t si = r.getSymbol(false);
    if (si == 0 || si >= syms.size())
      throw Error("AMDGPU link: a relocation in " + target.name + " has no symbol");
    int64_t v = (int64_t)(sym_addr(si) + r.r_addend - (target.addr + r.r_offset));
    size_t width = type == E::R_AMDGPU_REL64 ? 8 : 4;
    if (r.r_offset + width > target.data.size())
      throw Error("AMDGPU link: a relocation lies outside " + target.name);
    uint8_t *w = target.data.data() + r.r_offset;
    switch (type) {
      case E::R_AMDGPU_REL64: std::memcpy(w, &v, 8); break;
      case E::R_AMDGPU_REL32:
      case E::R_AMDGPU_REL32_LO: {
        uint32_t lo = (uint32_t)(uint64_t)v;
        std::memcpy(w, &lo, 4);
        break;
      }
      case E::R_AMDGPU_REL32_HI: {
        uint32_t hi = (uint32_t)((uint64_t)v >> 32);
        std::memcpy(w, &hi, 4);
        break;
      }
      default:
        throw Error("AMDGPU link: relocation type " + std::to_string(type) + " against '" +
                    sym_name(syms[si]) + "' in " + target.name +
                    " is not supported (it would need the loader to patch the code object)");
    }
  }

  // The loaded symbols at their addresses, locals first as ELF requires (*first_global: the
  // index of the first global); their names go into `strings`.
  std::vector<E::Elf64_Sym> symbols_out(std::string &strings, uint32_t *first_global) const {
    std::vector<E::Elf64_Sym> out_syms(1);
    std::memset(&out_syms[0], 0, sizeof(E::Elf64_Sym));
    for (int pass = 0; pass < 2; pass++) {  // locals first, as ELF requires
      if (pass == 1) *first_global = (uint32_t)out_syms.size();
      for (size_t i = 1; i < syms.size(); i++) {
        const auto &sym = syms[i];
        bool local = sym.getBinding() == E::STB_LOCAL;
        if (local != (pass == 0) || sym.getType() == E::STT_SECTION || sym.getType() == E::STT_FILE)
          continue;
        bool loaded = sym.st_shndx == E::SHN_ABS ||
                      (sym.st_shndx < sections.size() && out_of[sym.st_shndx] >= 0);
        if (!loaded) continue;  // e.g. in debug sections, which are not kept
        E::Elf64_Sym o;
        std::memset(&o, 0, sizeof o);
        o.st_name = string_add(strings, sym_name(sym));
        o.st_info = sym.st_info;
        o.st_other = sym.st_other;
        o.st_shndx = sym.st_shndx == E::SHN_ABS ? (uint16_t)E::SHN_ABS
                                                : (uint16_t)(out_of[sym.st_shndx] + 1);
        o.st_value = sym_addr(i);
        o.st_size = sym.st_size;
        out_syms.push_back(o);
      }
    }
    return out_syms;
  }

  // The null section header, then one per loaded section (names into `shstr`).
  std::vector<E::Elf64_Shdr> section_headers(std::string &shstr) const {
    std::vector<E::Elf64_Shdr> shdrs(1);
    std::memset(&shdrs[0], 0, sizeof(E::Elf64_Shdr));
    for (const OutSection &o : out_secs) {
      E::Elf64_Shdr h;
      std::memset(&h, 0, sizeof h);
      h.sh_name = string_add(shstr, o.name);
      h.sh_type = o.type;
      h.sh_flags = o.flags;
      h.sh_addr = h.sh_offset = o.addr;
      h.sh_size = o.data.size();
      h.sh_addralign = o.align;
      shdrs.push_back(h);
    }
    return shdrs;
  }

  // The ELF header and the program headers, at the start of `out`.
  void headers_write(std::vector<uint8_t> &out, uint64_t shoff, uint16_t shnum,
                     uint16_t shstrndx) const {
    E::Elf64_Ehdr h;
    // e_ident (class, data, OS ABI = HSA, ABI version) and e_flags (the processor)
    std::memcpy(&h, &eh, sizeof h);
    h.e_type = E::ET_DYN;
    h.e_entry = 0;
    h.e_phoff = sizeof(E::Elf64_Ehdr);
    h.e_shoff = shoff;
    h.e_ehsize = sizeof(E::Elf64_Ehdr);
    h.e_phentsize = sizeof(E::Elf64_Phdr);
    h.e_phnum = kPhdrs;
    h.e_shentsize = sizeof(E::Elf64_Shdr);
    h.e_shnum = shnum;
    h.e_shstrndx = shstrndx;
    put(out, 0, h);
    auto phdr = [&](int i, uint32_t type, uint32_t flags, uint64_t off, uint64_t end,
                    uint64_t align) {
      E::Elf64_Phdr p;
      p.p_type = type;
      p.p_flags = flags;
      p.p_offset = p.p_vaddr = p.p_paddr = off;
      p.p_filesz = p.p_memsz = end - off;
      p.p_align = align;
      put(out, sizeof(E::Elf64_Ehdr) + i * sizeof(E::Elf64_Phdr), p);
    };
    phdr(0, E::PT_LOAD, E::PF_R, 0, ro_end, kPage);
    phdr(1, E::PT_LOAD, E::PF_R | E::PF_X, text_begin, text_end, kPage);
    phdr(2, E::PT_NOTE, E::PF_R, note_begin, note_end, 4);
  }
};

}  // namespace

std::vector<uint8_t> amdgpu_link(const std::vector<uint8_t> &relocatable) {
  Elf in = elf_open(relocatable, "reading the relocatable object");
  const auto &eh = in.getHeader();
  if (eh.e_type != E::ET_REL || eh.e_machine != E::EM_AMDGPU)
    throw Error("AMDGPU link: input is not an AMDGPU relocatable object");
  AmdgpuLink link(in);
  link.sections_collect();
  link.sections_place();
  link.symbols_read();
  link.relocations_apply();
  return link.output();
}

namespace {

// The kernels of the AMDHSA metadata note (msgpack), by name.
struct NoteKernel {
  std::string symbol;
  uint64_t kernarg_size = 0, kernarg_align = 0, group = 0, priv = 0, sgprs = 0, vgprs = 0, wave = 0,
           max_wg = 0;
  bool dynamic_stack = false;
  std::vector<uint64_t> reqd_wg;
};

uint64_t note_uint(llvm::msgpack::MapDocNode &m, const char *key, const std::string &kernel) {
  auto it = m.find(key);
  if (it == m.end())
    throw Error("AMDGPU code object: kernel " + kernel + ": metadata has no " + key);
  llvm::msgpack::DocNode &n = it->second;
  if (n.getKind() == llvm::msgpack::Type::UInt) return n.getUInt();
  if (n.getKind() == llvm::msgpack::Type::Int && n.getInt() >= 0) return (uint64_t)n.getInt();
  throw Error("AMDGPU code object: kernel " + kernel + ": metadata " + key +
              " is not a non-negative integer");
}

std::map<std::string, NoteKernel> note_kernels(const Elf &elf, const AmdTarget &t) {
  std::map<std::string, NoteKernel> r;
  int notes = 0;
  for (const auto &ph : take(elf.program_headers(), "program headers")) {
    if (ph.p_type != E::PT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : elf.notes(ph, err)) {
      if (note.getName() != "AMDGPU" || note.getType() != E::NT_AMDGPU_METADATA) continue;
      notes++;
      llvm::ArrayRef<uint8_t> desc = note.getDesc(4);
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(llvm::StringRef((const char *)desc.data(), desc.size()), false) ||
          !doc.getRoot().isMap())
        throw Error("AMDGPU code object: the AMDHSA metadata note is not valid msgpack");
      auto &root = doc.getRoot().getMap();
      auto tgt = root.find("amdhsa.target");
      std::string want = "amdgcn-amd-amdhsa--" + t.cpu;
      if (tgt == root.end() || !tgt->second.isString() ||
          tgt->second.getString().str().rfind(want, 0) != 0 ||
          (tgt->second.getString().size() > want.size() &&
           tgt->second.getString()[want.size()] != ':'))
        throw Error("AMDGPU code object: metadata amdhsa.target is not " + want);
      auto ks = root.find("amdhsa.kernels");
      if (ks == root.end() || !ks->second.isArray())
        throw Error("AMDGPU code object: metadata has no amdhsa.kernels");
      for (auto &kn : ks->second.getArray()) {
        if (!kn.isMap()) throw Error("AMDGPU code object: an amdhsa.kernels entry is not a map");
        auto &m = kn.getMap();
        auto name = m.find(".name"), sym = m.find(".symbol");
        if (name == m.end() || sym == m.end() || !name->second.isString() ||
            !sym->second.isString())
          throw Error("AMDGPU code object: a kernel's metadata has no .name or .symbol");
        std::string kname = name->second.getString().str();
        NoteKernel k;
        k.symbol = sym->second.getString().str();
        k.kernarg_size = note_uint(m, ".kernarg_segment_size", kname);
        k.kernarg_align = note_uint(m, ".kernarg_segment_align", kname);
        k.group = note_uint(m, ".group_segment_fixed_size", kname);
        k.priv = note_uint(m, ".private_segment_fixed_size", kname);
        k.sgprs = note_uint(m, ".sgpr_count", kname);
        k.vgprs = note_uint(m, ".vgpr_count", kname);
        k.wave = note_uint(m, ".wavefront_size", kname);
        k.max_wg = note_uint(m, ".max_flat_workgroup_size", kname);
        auto ds = m.find(".uses_dynamic_stack");
        k.dynamic_stack = ds != m.end() && ds->second.getKind() == llvm::msgpack::Type::Boolean &&
                          ds->second.getBool();
        auto rw = m.find(".reqd_workgroup_size");
        if (rw != m.end() && rw->second.isArray())
          for (auto &v : rw->second.getArray())
            k.reqd_wg.push_back(v.getKind() == llvm::msgpack::Type::UInt ? v.getUInt() : 0);
        if (!r.emplace(kname, k).second)
          throw Error("AMDGPU code object: kernel " + kname + " appears twice in the metadata");
      }
    }
    if (err) throw Error("AMDGPU code object: bad note: " + llvm::toString(std::move(err)));
  }
  if (notes != 1)
    throw Error(
        "AMDGPU code object: expected one AMDHSA metadata note in a PT_NOTE segment, found " +
        std::to_string(notes));
  return r;
}

uint32_t read32(const std::vector<uint8_t> &b, uint64_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

}  // namespace

std::map<std::string, AmdKernelFacts> amdgpu_code_object_read(const std::vector<uint8_t> &bytes,
                                                              const AmdTarget &t) {
  Elf elf = elf_open(bytes, "reading");
  const auto &eh = elf.getHeader();
  if (eh.e_type != E::ET_DYN || eh.e_machine != E::EM_AMDGPU ||
      eh.e_ident[E::EI_OSABI] != E::ELFOSABI_AMDGPU_HSA)
    throw Error("AMDGPU code object: not an HSA code object (ELF64 ET_DYN, EM_AMDGPU, OS ABI HSA)");
  // Loaded image == file: every PT_LOAD has p_vaddr == p_offset and p_memsz == p_filesz, inside the
  // file.
  auto phdrs = take(elf.program_headers(), "program headers");
  auto exec_contains = [&](uint64_t a) {
    for (const auto &ph : phdrs)
      if (ph.p_type == E::PT_LOAD && (ph.p_flags & E::PF_X) && a >= ph.p_vaddr &&
          a < ph.p_vaddr + ph.p_memsz)
        return true;
    return false;
  };
  for (const auto &ph : phdrs)
    if (ph.p_type == E::PT_LOAD && (ph.p_vaddr != ph.p_offset || ph.p_memsz != ph.p_filesz ||
                                    ph.p_offset + ph.p_filesz > bytes.size()))
      throw Error(
          "AMDGPU code object: a PT_LOAD segment is not laid out as in the file (the runtime "
          "copies the file as it is)");
  std::map<std::string, uint64_t> sym_addr;
  for (const auto &s : take(elf.sections(), "section table")) {
    if (s.sh_type != E::SHT_SYMTAB) continue;
    auto syms = take(elf.symbols(&s), "symbols");
    llvm::StringRef strtab = take(elf.getStringTableForSymtab(s), "symbol names");
    for (size_t i = 1; i < syms.size(); i++) {
      std::string name = take(syms[i].getName(strtab), "symbol name").str();
      if (syms[i].st_shndx == E::SHN_UNDEF)
        throw Error("AMDGPU code object: undefined symbol '" + name + "'");
      sym_addr[name] = syms[i].st_value;
    }
  }

  namespace D = llvm::amdhsa;
  std::map<std::string, AmdKernelFacts> r;
  for (const auto &[name, nk] : note_kernels(elf, t)) {
    auto fail = [&](const std::string &what) {
      throw Error("AMDGPU code object: kernel " + name + ": " + what);
    };
    auto kd = sym_addr.find(nk.symbol);
    if (kd == sym_addr.end()) fail("no descriptor symbol " + nk.symbol);
    if (kd->second % 64 || kd->second + sizeof(D::kernel_descriptor_t) > bytes.size())
      fail("descriptor " + nk.symbol + " is misplaced");
    AmdKernelFacts f;
    f.descriptor_offset = kd->second;
    uint64_t at = kd->second;
    uint32_t group = read32(bytes, at + D::GROUP_SEGMENT_FIXED_SIZE_OFFSET),
             priv = read32(bytes, at + D::PRIVATE_SEGMENT_FIXED_SIZE_OFFSET),
             kernarg = read32(bytes, at + D::KERNARG_SIZE_OFFSET);
    int64_t entry;
    std::memcpy(&entry, bytes.data() + at + D::KERNEL_CODE_ENTRY_BYTE_OFFSET_OFFSET, 8);
    f.rsrc3 = read32(bytes, at + D::COMPUTE_PGM_RSRC3_OFFSET);
    f.rsrc1 = read32(bytes, at + D::COMPUTE_PGM_RSRC1_OFFSET);
    f.rsrc2 = read32(bytes, at + D::COMPUTE_PGM_RSRC2_OFFSET);
    std::memcpy(&f.kernel_code_properties, bytes.data() + at + D::KERNEL_CODE_PROPERTIES_OFFSET, 2);
    uint16_t preload;
    std::memcpy(&preload, bytes.data() + at + D::KERNARG_PRELOAD_OFFSET, 2);

    // The descriptor and the note must tell the same story.
    if (group != nk.group)
      fail("descriptor LDS " + std::to_string(group) + " != metadata " + std::to_string(nk.group));
    if (priv != nk.priv)
      fail("descriptor scratch " + std::to_string(priv) + " != metadata " +
           std::to_string(nk.priv));
    if (kernarg != nk.kernarg_size)
      fail("descriptor kernarg size " + std::to_string(kernarg) + " != metadata " +
           std::to_string(nk.kernarg_size));
    unsigned wave =
        (f.kernel_code_properties & D::KERNEL_CODE_PROPERTY_ENABLE_WAVEFRONT_SIZE32) ? 32 : 64;
    if (wave != nk.wave || wave != t.wavefront_size)
      fail("wavefront size: descriptor " + std::to_string(wave) + ", metadata " +
           std::to_string(nk.wave) + ", target " + std::to_string(t.wavefront_size));
    uint32_t blocks = AMDHSA_BITS_GET(f.rsrc1, D::COMPUTE_PGM_RSRC1_GRANULATED_WORKITEM_VGPR_COUNT);
    uint64_t want_blocks =
        (std::max<uint64_t>(nk.vgprs, 1) + t.vgpr_granule - 1) / t.vgpr_granule - 1;
    if (blocks != want_blocks)
      fail("descriptor VGPR blocks " + std::to_string(blocks) +
           " do not fit metadata .vgpr_count " + std::to_string(nk.vgprs));
    if (priv > 0 && !(f.rsrc2 & D::COMPUTE_PGM_RSRC2_ENABLE_PRIVATE_SEGMENT))
      fail("uses scratch but the descriptor does not enable the private segment");
    if (preload) fail("uses kernarg preloading, which the capture's ABI does not describe");
    if (nk.dynamic_stack) fail("uses a dynamic stack: its scratch size is unknown at compile time");
    if (!exec_contains(kd->second + entry))
      fail("descriptor code entry does not point into executable code");
    auto fn = sym_addr.find(name);
    if (fn == sym_addr.end() || fn->second != kd->second + entry)
      fail("descriptor code entry is not the kernel's symbol");
    if (nk.max_wg < t.workgroup_size)
      fail("max workgroup size " + std::to_string(nk.max_wg) + " < " +
           std::to_string(t.workgroup_size));
    if (!nk.reqd_wg.empty() && (nk.reqd_wg.size() != 3 || nk.reqd_wg[0] != t.workgroup_size ||
                                nk.reqd_wg[1] != 1 || nk.reqd_wg[2] != 1))
      fail("required workgroup size is not " + std::to_string(t.workgroup_size) + "x1x1");
    f.group_segment_size = group;
    f.private_segment_size = priv;
    f.kernarg_size = kernarg;
    f.kernarg_align = (uint32_t)nk.kernarg_align;
    f.sgpr_count = (uint32_t)nk.sgprs;
    f.vgpr_count = (uint32_t)nk.vgprs;
    f.wavefront_size = wave;
    f.workgroup_size = t.workgroup_size;
    r[name] = f;
  }
  return r;
}

}  // namespace capgraph

// The runtime and the fake GPU decode descriptors with targets/amd's one description of the
// layout; it must be LLVM's, which writes them.
namespace amd_kd = llvm::amdhsa;
static_assert(capgraph::hcq::kd_size == sizeof(amd_kd::kernel_descriptor_t));
static_assert(capgraph::hcq::kd_code_entry_offset == amd_kd::KERNEL_CODE_ENTRY_BYTE_OFFSET_OFFSET);
static_assert(capgraph::hcq::kd_rsrc3 == amd_kd::COMPUTE_PGM_RSRC3_OFFSET);
static_assert(capgraph::hcq::kd_rsrc1 == amd_kd::COMPUTE_PGM_RSRC1_OFFSET);
static_assert(capgraph::hcq::kd_rsrc2 == amd_kd::COMPUTE_PGM_RSRC2_OFFSET);
static_assert(capgraph::hcq::kd_kernel_code_properties == amd_kd::KERNEL_CODE_PROPERTIES_OFFSET);
