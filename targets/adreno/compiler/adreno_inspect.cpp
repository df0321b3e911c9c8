// The Adreno launch facts of a capture's kernels, for `capgraph inspect` (the hooks of the
// compiler's target table entry, adreno_compile.cpp).
#include <cstdio>

#include "capgraph/capture_generated.h"
#include "json_quote.h"

namespace capgraph {

namespace {

std::string line(const char *fmt, const fb::AdrenoKernel *a) {
  char buf[768];
  std::snprintf(buf, sizeof buf, fmt, a->gpu_id(), a->instr_count(), a->instr_dwords(),
                a->full_regs(), a->half_regs(), a->constlen_vec4(), a->params_offset_vec4(),
                a->params_bytes(), a->immediates() ? a->immediates()->size() : 0u,
                a->shared_memory_bytes(), a->private_memory_bytes(), a->workgroup_size_x(),
                a->workgroup_size_y(), a->workgroup_size_z(), a->grid_x(), a->grid_y(), a->grid_z(),
                a->lanes(), a->double_threadsize() ? 128u : 64u, a->branch_stack());
  return buf;
}

// The images a kernel reads through the texture unit (AdrenoKernel.images): per image its
// parameter, format, size in texels and pitch, "p1:f16:24x64/128"; "-" for none.
std::string images_text(const fb::AdrenoKernel *a) {
  if (!a->images() || !a->images()->size()) return "-";
  std::string o;
  for (const fb::AdrenoImage *m : *a->images()) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%sp%u:%s:%ux%u/%u", o.empty() ? "" : ",", m->slot(),
                  m->format() == 0x62   ? "f16"
                  : m->format() == 0x82 ? "f32"
                                        : "?",
                  m->width(), m->height(), m->pitch());
    o += buf;
  }
  return o;
}

std::string images_json(const fb::AdrenoKernel *a) {
  std::string o = "[";
  if (a->images())
    for (const fb::AdrenoImage *m : *a->images()) {
      char buf[160];
      std::snprintf(buf, sizeof buf,
                    "%s{\"slot\": %u, \"format\": %u, \"width\": %u, \"height\": %u, "
                    "\"pitch\": %u}",
                    o.size() > 1 ? ", " : "", m->slot(), m->format(), m->width(), m->height(),
                    m->pitch());
      o += buf;
    }
  return o + "]";
}

}  // namespace

std::string adreno_facts_text(const fb::Capture *c) {
  if (!c->kernels()) return "";
  std::string o;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel();
    if (!a) continue;
    if (o.empty())
      o = "  Adreno kernels:\n  kernel                                    gpu instrs dwords full "
          "half const param pbytes imm shared private "
          "workgroup    grid              lanes wave bstack tile split twin images\n";
    char name[64];
    std::snprintf(name, sizeof name, "  %-40.40s", k->name()->c_str());
    // The micro tile of a tiled kernel (its shape chosen per kernel: adreno_tile_choice.h).
    char tile[24] = "-";
    if (a->tile_m()) std::snprintf(tile, sizeof tile, "%ux%u", a->tile_m(), a->tile_n());
    // A group reduction's work items per output (group_reduce_parts).
    char split[16] = "-";
    if (a->reduce_split()) std::snprintf(split, sizeof split, "%u", a->reduce_split());
    char tile_col[48];
    std::snprintf(tile_col, sizeof tile_col, " %4s %5s", tile, split);
    o += name +
         line(" %3u %6u %6u %4u %4u %5u %5u %6u %3u %6u %7u %3ux%ux%u %7ux%ux%u %5u %4u %6u", a) +
         tile_col + (k->twin_program() >= 0 ? " yes " : " no  ") + images_text(a) + "\n";
  }
  return o;
}

std::string adreno_facts_json(const fb::Capture *c) {
  if (!c->kernels()) return "";
  std::string o;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::AdrenoKernel *a = k->facts_as_AdrenoKernel();
    if (!a) continue;
    o += o.empty() ? ",\n \"adreno_kernels\": [\n  " : ",\n  ";
    char chip[32];
    std::snprintf(chip, sizeof chip, "%llu", (unsigned long long)a->chip_id());
    o += "{\"name\": " + json_quote(k->name()->str()) +
         ", \"entry\": " + json_quote(k->entry()->str()) + ", \"chip_id\": " + chip +
         line(
             ", \"gpu_id\": %u, \"instr_count\": %u, \"instr_dwords\": %u, \"full_regs\": %u, "
             "\"half_regs\": %u, "
             "\"constlen_vec4\": %u, \"params_offset_vec4\": %u, \"params_bytes\": %u, "
             "\"immediates\": %u, "
             "\"shared_memory_bytes\": %u, \"private_memory_bytes\": %u, \"workgroup_size\": [%u, "
             "%u, %u], \"grid\": [%u, %u, %u], "
             "\"lanes\": %u, \"wave_size\": %u, \"branch_stack\": %u",
             a) +
         ", \"tile\": [" + std::to_string(a->tile_m()) + ", " + std::to_string(a->tile_n()) +
         "], \"reduce_split\": " + std::to_string(a->reduce_split()) +
         ", \"images\": " + images_json(a) + ", \"twin_entry\": " +
         (k->twin_program() >= 0 && k->twin_entry() ? json_quote(k->twin_entry()->str())
                                                    : std::string("null")) +
         "}";
  }
  return o.empty() ? "" : o + "\n ]";
}

}  // namespace capgraph
