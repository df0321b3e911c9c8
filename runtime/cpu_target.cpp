// Target checks against this CPU. On x86-64 feature bits come from CPUID, and the vector ones
// also need the OS to save their registers (XGETBV/XCR0). On aarch64 they come from the kernel's
// hwcaps (getauxval).
//
// Sources: Intel SDM vol. 2A, CPUID leaves 01h, 07h, 0Dh, 80000001h; Intel SDM vol. 1, 13.2
// (XCR0 bits); AMD APM vol. 3, appendix E; Linux Documentation/arch/arm64/elf_hwcaps.rst.
#include "cpu_target.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace capgraph {

const char *cpu_target_name() {
#if defined(__x86_64__)
  return "cpu-x86_64";
#elif defined(__aarch64__)
  return "cpu-aarch64";
#else
  return "cpu-unknown";
#endif
}

namespace {

#if defined(__x86_64__)
enum reg : unsigned char { eax, ebx, ecx, edx };
// Register state the OS must enable in XCR0 for a feature's instructions to work.
enum os_state : unsigned char { none, ymm, zmm };

struct x86_feature {
  const char *name;  // LLVM spelling
  unsigned leaf, subleaf;
  reg r;
  unsigned char bit;
  os_state state;
};

const x86_feature k_features[] = {
    {"x87", 1, 0, edx, 0, none},
    {"cx8", 1, 0, edx, 8, none},
    {"cmov", 1, 0, edx, 15, none},
    {"mmx", 1, 0, edx, 23, none},
    {"fxsr", 1, 0, edx, 24, none},
    {"sse", 1, 0, edx, 25, none},
    {"sse2", 1, 0, edx, 26, none},
    {"sse3", 1, 0, ecx, 0, none},
    {"pclmul", 1, 0, ecx, 1, none},
    {"ssse3", 1, 0, ecx, 9, none},
    {"fma", 1, 0, ecx, 12, ymm},
    {"cx16", 1, 0, ecx, 13, none},
    {"sse4.1", 1, 0, ecx, 19, none},
    {"sse4.2", 1, 0, ecx, 20, none},
    {"crc32", 1, 0, ecx, 20, none},
    {"movbe", 1, 0, ecx, 22, none},
    {"popcnt", 1, 0, ecx, 23, none},
    {"aes", 1, 0, ecx, 25, none},
    {"xsave", 1, 0, ecx, 26, none},
    {"avx", 1, 0, ecx, 28, ymm},
    {"f16c", 1, 0, ecx, 29, ymm},
    {"rdrnd", 1, 0, ecx, 30, none},
    {"fsgsbase", 7, 0, ebx, 0, none},
    {"bmi", 7, 0, ebx, 3, none},
    {"avx2", 7, 0, ebx, 5, ymm},
    {"bmi2", 7, 0, ebx, 8, none},
    {"avx512f", 7, 0, ebx, 16, zmm},
    {"evex512", 7, 0, ebx, 16, zmm},
    {"avx512dq", 7, 0, ebx, 17, zmm},
    {"rdseed", 7, 0, ebx, 18, none},
    {"adx", 7, 0, ebx, 19, none},
    {"avx512ifma", 7, 0, ebx, 21, zmm},
    {"clflushopt", 7, 0, ebx, 23, none},
    {"clwb", 7, 0, ebx, 24, none},
    {"avx512cd", 7, 0, ebx, 28, zmm},
    {"sha", 7, 0, ebx, 29, none},
    {"avx512bw", 7, 0, ebx, 30, zmm},
    {"avx512vl", 7, 0, ebx, 31, zmm},
    {"avx512vbmi", 7, 0, ecx, 1, zmm},
    {"avx512vbmi2", 7, 0, ecx, 6, zmm},
    {"gfni", 7, 0, ecx, 8, none},
    {"vaes", 7, 0, ecx, 9, ymm},
    {"vpclmulqdq", 7, 0, ecx, 10, ymm},
    {"avx512vnni", 7, 0, ecx, 11, zmm},
    {"avx512bitalg", 7, 0, ecx, 12, zmm},
    {"avx512vpopcntdq", 7, 0, ecx, 14, zmm},
    {"avx512fp16", 7, 0, edx, 23, zmm},
    {"avxvnni", 7, 1, eax, 4, ymm},
    {"avx512bf16", 7, 1, eax, 5, zmm},
    {"xsaveopt", 0xd, 1, eax, 0, none},
    {"xsavec", 0xd, 1, eax, 1, none},
    {"xsaves", 0xd, 1, eax, 3, none},
    {"sahf", 0x80000001, 0, ecx, 0, none},
    {"lzcnt", 0x80000001, 0, ecx, 5, none},
    {"sse4a", 0x80000001, 0, ecx, 6, none},
    {"prfchw", 0x80000001, 0, ecx, 8, none},
    {"xop", 0x80000001, 0, ecx, 11, ymm},
    {"fma4", 0x80000001, 0, ecx, 16, ymm},
    {"64bit", 0x80000001, 0, edx, 29, none},
};

bool os_state_enabled(os_state s) {
  if (s == none) return true;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  const unsigned need = s == ymm ? 0x6u : 0xe6u;  // SSE|AVX, and opmask|ZMM_Hi256|Hi16_ZMM
  return (lo & need) == need;
}

bool feature_present(const std::string &name, bool *known) {
  for (const x86_feature &f : k_features) {
    if (name != f.name) continue;
    *known = true;
    unsigned r[4] = {};
    if (!__get_cpuid_count(f.leaf, f.subleaf, &r[0], &r[1], &r[2], &r[3])) return false;
    return (r[f.r] >> f.bit & 1) && os_state_enabled(f.state);
  }
  *known = false;
  return false;
}
#elif defined(__aarch64__)
struct arm_feature {
  const char *name;  // LLVM spelling
  int hwcap;         // AT_HWCAP or AT_HWCAP2
  unsigned long bit;
};

const arm_feature k_features[] = {
    {"fp-armv8", AT_HWCAP, HWCAP_FP},      {"neon", AT_HWCAP, HWCAP_ASIMD},
    {"aes", AT_HWCAP, HWCAP_AES},          {"sha2", AT_HWCAP, HWCAP_SHA2},
    {"crc", AT_HWCAP, HWCAP_CRC32},        {"lse", AT_HWCAP, HWCAP_ATOMICS},
    {"fullfp16", AT_HWCAP, HWCAP_ASIMDHP}, {"rdm", AT_HWCAP, HWCAP_ASIMDRDM},
    {"rcpc", AT_HWCAP, HWCAP_LRCPC},       {"dotprod", AT_HWCAP, HWCAP_ASIMDDP},
    {"fp16fml", AT_HWCAP, HWCAP_ASIMDFHM}, {"sve", AT_HWCAP, HWCAP_SVE},
    {"sve2", AT_HWCAP2, HWCAP2_SVE2},      {"i8mm", AT_HWCAP2, HWCAP2_I8MM},
    {"bf16", AT_HWCAP2, HWCAP2_BF16},
};

bool feature_present(const std::string &name, bool *known) {
  for (const arm_feature &f : k_features) {
    if (name != f.name) continue;
    *known = true;
    return (getauxval(f.hwcap) & f.bit) != 0;
  }
  *known = false;
  return false;
}
#else
bool feature_present(const std::string &, bool *known) {
  *known = false;
  return false;
}
#endif

}  // namespace

bool cpu_feature_present(const std::string &feature, bool *known) {
  return feature_present(feature, known);
}

capgraph_status cpu_target_check(const char *name, const char *features, std::string *why) {
  if (strcmp(name, cpu_target_name()) != 0) {
    *why = std::string("compiled for target '") + name + "' but this runtime replays '" +
           cpu_target_name() + "' captures";
    return CAPGRAPH_ERR_TARGET;
  }
  const std::string list = features ? features : "";
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(start, end - start);
    start = end + 1;
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (item.empty() || item[0] == '-') continue;  // "-feature": the code avoids it
    const std::string feature = item[0] == '+' ? item.substr(1) : item;
    bool known = false;
    if (!feature_present(feature, &known) && known) {
      *why = "the code requires CPU feature +" + feature + ", which this CPU lacks";
      return CAPGRAPH_ERR_TARGET;
    }
  }
  return CAPGRAPH_OK;
}

}  // namespace capgraph
