#include "nv_qmd.h"

namespace capgraph::nv {

std::string qmd_field_name(qmd_version v, qmd_field f) {
  const qmd_field_desc &d = qmd_field_info(v, f);
  std::string version = v == qmd_version::V03_00 ? "QMD V03_00" : "QMD V04_00";
  return d.name ? version + " " + d.name
                : version + " field " + std::to_string((int)f) + " (not in this version)";
}

std::string qmd_set(std::vector<uint32_t> &qmd, qmd_version v, qmd_field f, uint64_t value) {
  const qmd_field_desc &d = qmd_field_info(v, f);
  if (!d.name) return qmd_field_name(v, f);
  if (qmd.size() != qmd_dwords(v))
    return "QMD of " + std::to_string(qmd.size()) + " dwords, expected " +
           std::to_string(qmd_dwords(v));
  unsigned width = d.hi - d.lo + 1;
  if (width < 64 && value >> width)
    return qmd_field_name(v, f) + ": value " + std::to_string(value) + " does not fit " +
           std::to_string(width) + " bits";
  for (unsigned bit = 0; bit < width; bit++) {
    unsigned at = d.lo + bit;
    uint32_t mask = 1u << (at % 32);
    if ((value >> bit) & 1)
      qmd[at / 32] |= mask;
    else
      qmd[at / 32] &= ~mask;
  }
  return "";
}

uint64_t qmd_get(const std::vector<uint32_t> &qmd, qmd_version v, qmd_field f) {
  const qmd_field_desc &d = qmd_field_info(v, f);
  if (!d.name || qmd.size() != qmd_dwords(v)) return 0;
  uint64_t value = 0;
  for (unsigned bit = 0; bit <= (unsigned)(d.hi - d.lo); bit++) {
    unsigned at = d.lo + bit;
    value |= (uint64_t)((qmd[at / 32] >> (at % 32)) & 1) << bit;
  }
  return value;
}

}  // namespace capgraph::nv
