// The chip table. Sources: ../shared/research/nv_plan.md §2.5 (g_gpu_class_list.c rows for GA102,
// AD102, GH100: compute, copy, GPFIFO and usermode classes), §0.2 (QMD version); the carve-out
// maxima: 100 KB on GA10x/AD10x, 228 KB on GH100 (CUDA C++ Programming Guide, "Shared Memory" per
// compute capability 8.6/8.9/9.0).
#include "nv_chips.h"

#include <cstring>

namespace capgraph::nv {
namespace {

constexpr chip kChips[] = {
    {"sm86", 86, "Ampere GA10x", 0xC7C0, 0xC7B5, 0xC56F, 0xC461, qmd_version::V03_00, 100},
    {"sm89", 89, "Ada AD10x", 0xC9C0, 0xC7B5, 0xC56F, 0xC461, qmd_version::V03_00, 100},
    {"sm90", 90, "Hopper GH100", 0xCBC0, 0xC8B5, 0xC86F, 0xC661, qmd_version::V04_00, 228},
};

}  // namespace

const chip *chip_find(const char *name) {
  for (const chip &c : kChips)
    if (strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

const chip *chip_by_compute_class(uint32_t cls) {
  for (const chip &c : kChips)
    if (c.compute_class == cls) return &c;
  return nullptr;
}

const chip *chips_all(unsigned *count) {
  *count = unsigned(sizeof(kChips) / sizeof(kChips[0]));
  return kChips;
}

std::string chip_names() {
  std::string s;
  for (const chip &c : kChips) s += std::string(s.empty() ? "nv-" : ", nv-") + c.name;
  return s;
}

}  // namespace capgraph::nv
