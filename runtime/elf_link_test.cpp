// elf_link: real objects from GCC, llc and llvm-mc are linked and their code is run; damaged
// objects are refused with a message and never crash the linker.
#include "elf_link.h"

#include <doctest/doctest.h>
#include <elf.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>

#include "capture_fixture.h"

using namespace capgraph;
using kernel_fn = void (*)(void *const *, const int64_t *, int64_t, int64_t);

namespace {

#if defined(__x86_64__)
constexpr uint16_t k_other_machine = EM_AARCH64;
#else
constexpr uint16_t k_other_machine = EM_X86_64;
#endif

elf_image link_ok(const std::vector<uint8_t> &obj) {
  elf_image image;
  std::string err;
  const capgraph_status st = elf_link(obj.data(), obj.size(), &image, &err);
  INFO(err);
  REQUIRE(st == CAPGRAPH_OK);
  return image;
}

std::string link_error(const std::vector<uint8_t> &obj, capgraph_status expected) {
  elf_image image;
  std::string err;
  CHECK(elf_link(obj.data(), obj.size(), &image, &err) == expected);
  CHECK(image.base == nullptr);
  return err;
}

// A linked kernel, called without clang's function-type check (see CAPGRAPH_CALLS_LINKED_CODE).
struct linked_kernel {
  kernel_fn fn;
  CAPGRAPH_CALLS_LINKED_CODE void operator()(void *const *buffers, const int64_t *scalars,
                                             int64_t begin, int64_t end) const {
    fn(buffers, scalars, begin, end);
  }
};

linked_kernel kernel(const elf_image &image, const char *name) {
  void *p = image.symbol_address(name);
  INFO(name);
  REQUIRE(p != nullptr);
  return {reinterpret_cast<kernel_fn>(p)};
}

// Permissions of the mapping that holds `address`, from /proc/self/maps ("r-xp").
std::string mapping_permissions(const void *address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  while (std::getline(maps, line)) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (sscanf(line.c_str(), "%lx-%lx %7s", &lo, &hi, perms) == 3 && a >= lo && a < hi)
      return perms;
  }
  return "";
}

Elf64_Shdr section_header(const std::vector<uint8_t> &obj, size_t i) {
  Elf64_Ehdr eh;
  memcpy(&eh, obj.data(), sizeof eh);
  Elf64_Shdr sh;
  memcpy(&sh, obj.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
  return sh;
}

// Rewrites the type of the first relocation that applies to an executable section.
void first_text_reloc_retype(std::vector<uint8_t> &obj, uint32_t type) {
  Elf64_Ehdr eh;
  memcpy(&eh, obj.data(), sizeof eh);
  for (size_t i = 0; i < eh.e_shnum; ++i) {
    const Elf64_Shdr sh = section_header(obj, i);
    if (sh.sh_type != SHT_RELA || !(section_header(obj, sh.sh_info).sh_flags & SHF_EXECINSTR))
      continue;
    Elf64_Rela r;
    memcpy(&r, obj.data() + sh.sh_offset, sizeof r);
    r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), type);
    memcpy(obj.data() + sh.sh_offset, &r, sizeof r);
    return;
  }
  FAIL("no relocation for an executable section");
}

void bytes_replace(std::vector<uint8_t> &obj, const std::string &from, const std::string &to) {
  REQUIRE(from.size() == to.size());
  auto it = std::search(obj.begin(), obj.end(), from.begin(), from.end());
  REQUIRE(it != obj.end());
  std::copy(to.begin(), to.end(), it);
}

}  // namespace

TEST_CASE("C kernels from the C compiler link and compute") {
  const std::vector<uint8_t> obj = test::kernel_object("kernels_c.o");
  REQUIRE(!obj.empty());
  const elf_image image = link_ok(obj);
  const int n = 37;
  std::vector<float> a(n), b(n), y(n), e(n);
  for (int i = 0; i < n; ++i) a[i] = float(i) - 3, b[i] = float(i) * 0.5f;
  static const float table[8] = {1.0f, 0.5f, 0.25f, 2.0f, 3.0f, -1.0f, 0.125f, 4.0f};

  void *add_args[] = {a.data(), b.data(), y.data()};
  kernel(image, "c_add_table")(add_args, nullptr, 0, n);
  for (int i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(a[i] + b[i] * table[i & 7]));

  void *scale_args[] = {a.data(), y.data()};
  kernel(image, "c_scale")(scale_args, nullptr, 5, n);  // a sub-range, as one thread would
  for (int i = 5; i < n; ++i) CHECK(y[i] == doctest::Approx(a[i] * 1.7f + 0.3f));

  void *exp_args[] = {b.data(), e.data()};
  kernel(image, "c_exp")(exp_args, nullptr, 0, n);
  for (int i = 0; i < n; ++i) CHECK(e[i] == doctest::Approx(std::exp(b[i])).epsilon(1e-6));

  std::vector<float> dst(40, -1.0f), src(40);
  for (int i = 0; i < 40; ++i) src[i] = float(i);
  const int64_t row = 4;
  void *copy_args[] = {src.data(), dst.data()};
  kernel(image, "c_copy_rows")(copy_args, &row, 2, 7);  // rows 2..6 only
  for (int i = 0; i < 40; ++i) CHECK(dst[i] == (i >= 8 && i < 28 ? src[i] : -1.0f));

  // .data starts at 3 and .bss at 0, and both are writable memory of this image.
  int64_t out[2] = {};
  void *count_args[] = {out};
  kernel(image, "c_count")(count_args, nullptr, 0, 1);
  CHECK(out[0] == 4);
  CHECK(out[1] == 2);
  kernel(image, "c_count")(count_args, nullptr, 0, 1);
  CHECK(out[0] == 5);
  CHECK(out[1] == 4);
}

TEST_CASE("the image is W^X: text read+exec, rodata read-only, data writable") {
  const elf_image image = link_ok(test::kernel_object("kernels_c.o"));
  CHECK(mapping_permissions(image.symbol_address("c_scale")) == "r-xp");
  CHECK(mapping_permissions(image.symbol_address("c_calls")) == "rw-p");
  CHECK(mapping_permissions(image.symbol_address("c_zero")) == "rw-p");
  // k_table is local in .rodata; its symbol is kept by GCC. Only "not writable" is checked:
  // qemu-user reports read-only pages as r-x.
  if (void *table = image.symbol_address("k_table")) {
    const std::string perms = mapping_permissions(table);
    CHECK(perms.substr(0, 2) == "r-");
  }
}

TEST_CASE("LLVM kernels (llc, static and PIC) link and compute") {
  if (!test::have_llc()) {
    MESSAGE("skipped: llc was not found when configuring");
    return;
  }
  for (const char *name : {"kernels_ll_static.o", "kernels_ll_pic.o"}) {
    CAPTURE(name);
    const elf_image image = link_ok(test::kernel_object(name));
    const int n = 64;
    std::vector<float> x(n), y(n, 0.0f);
    for (int i = 0; i < n; ++i) x[i] = float(i) * 0.25f - 4.0f;
    void *args[] = {x.data(), y.data()};

    kernel(image, "ll_affine4")(args, nullptr, 0, n / 4);
    const float mul[4] = {0.5f, 1.5f, -2.0f, 3.25f};
    for (int i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(x[i] * mul[i % 4] + 0.1f));

    kernel(image, "ll_tables")(args, nullptr, 0, n);
    for (int i = 0; i < n; ++i)
      CHECK(y[i] == x[i] + float((i & 7) + 1) + float(10 * ((i & 3) + 1)));

    kernel(image, "ll_exp")(args, nullptr, 0, n);
    for (int i = 0; i < n; ++i) CHECK(y[i] == doctest::Approx(std::exp(x[i])).epsilon(1e-6));

    std::fill(y.begin(), y.end(), -1.0f);
    kernel(image, "ll_copy")(args, nullptr, 8, 20);
    for (int i = 0; i < n; ++i) CHECK(y[i] == (i >= 8 && i < 20 ? x[i] : -1.0f));

    kernel(image, "ll_dispatch")(args, nullptr, 0, n);
    for (int i = 0; i < n; ++i) CHECK(y[i] == (i % 2 ? x[i] + 100.0f : x[i] * 2.0f));

    kernel(image, "ll_switch")(args, nullptr, 0, n);
    for (int i = 0; i < n; ++i) {
      const float v = x[i];
      const float expect[6] = {v + 1.0f, v * 3.0f, v - 7.0f, -v, v * v, v + 0.25f};
      CHECK(y[i] == expect[i % 6]);
    }
    CHECK(image.got_count >= 1);   // ll_gtable is reached through the GOT
    CHECK(image.stub_count >= 2);  // expf and memcpy
  }
}

TEST_CASE("every supported relocation type resolves to the right address") {
  if (!test::have_llvm_mc()) {
    MESSAGE("skipped: llvm-mc was not found when configuring");
    return;
  }
  const elf_image image = link_ok(test::kernel_object("relocs.o"));
#if defined(__x86_64__)
  const int probes = 10;
  CHECK(image.low_mapping);  // R_X86_64_32 and 32S need the image below 2 GiB
#else
  const int probes = 15;
#endif
  std::vector<uint64_t> out(16, 0);
  void *args[] = {out.data()};
  kernel(image, "reloc_probe")(args, nullptr, 0, 1);
  for (int k = 0; k < probes; ++k) {
    CAPTURE(k);
    CHECK(out[k] == 0x1000u + uint64_t(k));
  }
  CHECK(image.stub_count == 2);  // memset, memmove (memcpy is reached through the GOT)
  CHECK(image.got_count == 2);   // probe_global, memcpy
}

TEST_CASE("damaged objects are refused with a message") {
  const std::vector<uint8_t> good = test::kernel_object("kernels_c.o");
  REQUIRE(good.size() > 64);

  CHECK(link_error({}, CAPGRAPH_ERR_FORMAT).find("too short") != std::string::npos);
  std::vector<uint8_t> obj = good;
  obj[1] = 'X';
  CHECK(link_error(obj, CAPGRAPH_ERR_FORMAT).find("no ELF magic") != std::string::npos);
  obj = good;
  obj[EI_CLASS] = ELFCLASS32;
  CHECK(link_error(obj, CAPGRAPH_ERR_FORMAT).find("64-bit") != std::string::npos);
  obj = good;
  obj[EI_DATA] = ELFDATA2MSB;
  CHECK(link_error(obj, CAPGRAPH_ERR_FORMAT).find("little-endian") != std::string::npos);
  obj = good;
  obj[16] = ET_DYN;
  CHECK(link_error(obj, CAPGRAPH_ERR_FORMAT).find("ET_REL") != std::string::npos);

  obj = good;
  memcpy(obj.data() + 18, &k_other_machine, 2);
  const std::string machine = link_error(obj, CAPGRAPH_ERR_TARGET);
  CHECK(machine.find(k_other_machine == EM_AARCH64 ? "is for aarch64" : "is for x86-64") !=
        std::string::npos);

  obj = good;
#if defined(__x86_64__)
  first_text_reloc_retype(obj, R_X86_64_TPOFF32);
  CHECK(link_error(obj, CAPGRAPH_ERR_FORMAT).find("R_X86_64_TPOFF32 (type 23)") !=
        std::string::npos);
#else
  first_text_reloc_retype(obj, R_AARCH64_MOVW_UABS_G0);
  CHECK(link_error(obj, CAPGRAPH_ERR_FORMAT).find("R_AARCH64_MOVW_UABS_G0 (type 263)") !=
        std::string::npos);
#endif

  obj = good;
  bytes_replace(obj, std::string("expf\0", 5), std::string("expz\0", 5));
  const std::string import = link_error(obj, CAPGRAPH_ERR_FORMAT);
  CHECK(import.find("undefined symbol 'expz' is not provided by the runtime") != std::string::npos);
  CHECK(import.find("memcpy") != std::string::npos);  // and says what is provided

  const elf_image image = link_ok(good);
  CHECK(image.symbol_address("no_such_kernel") == nullptr);
}

TEST_CASE("truncated objects never link and never crash") {
  for (const char *name : {"kernels_c.o", "kernels_ll_pic.o", "relocs.o"}) {
    const std::vector<uint8_t> good = test::kernel_object(name);
    if (good.empty()) continue;
    CAPTURE(name);
    for (size_t len = 0; len < good.size(); ++len) {
      std::vector<uint8_t> cut(good.begin(), good.begin() + long(len));
      elf_image image;
      std::string err;
      // Section headers sit at the end of GCC and LLVM objects: any cut loses them.
      CHECK(elf_link(cut.data(), cut.size(), &image, &err) != CAPGRAPH_OK);
      CHECK(!err.empty());
    }
  }
}

TEST_CASE("objects with flipped bytes link or fail, never crash") {
  // Only linking: a flipped byte inside machine code still links and must not be run.
  std::mt19937 rng(1234);
  for (const char *name : {"kernels_c.o", "kernels_ll_static.o", "relocs.o"}) {
    const std::vector<uint8_t> good = test::kernel_object(name);
    if (good.empty()) continue;
    CAPTURE(name);
    size_t refused = 0;
    for (size_t pos = 0; pos < good.size(); ++pos) {
      std::vector<uint8_t> bad = good;
      bad[pos] ^= uint8_t(1u << (rng() % 8));
      elf_image image;
      std::string err;
      if (elf_link(bad.data(), bad.size(), &image, &err) != CAPGRAPH_OK) {
        ++refused;
        CHECK(!err.empty());
      }
    }
    for (int round = 0; round < 2000; ++round) {
      std::vector<uint8_t> bad = good;
      for (int k = 0; k < 8; ++k) bad[rng() % bad.size()] = uint8_t(rng());
      elf_image image;
      std::string err;
      elf_link(bad.data(), bad.size(), &image, &err);
    }
    CHECK(refused > 0);
  }
}
