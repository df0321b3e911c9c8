// The NVIDIA launch facts of a capture's kernels, for `capgraph inspect` (the hooks of the
// compiler's target table entry, nv_compile.cpp).
#include <cstdio>

#include "capgraph/capture_generated.h"
#include "json_quote.h"

namespace capgraph {

namespace {

std::string line(const char *fmt, const fb::NvKernel *n) {
  char buf[640];
  std::snprintf(buf, sizeof buf, fmt, n->sm(), n->qmd_version(), n->registers(), n->max_registers(),
                n->barriers(), n->shared_bytes(), n->frame_bytes(), n->min_stack_bytes(),
                n->cbank0_bytes(), n->param_offset(), n->param_bytes(), n->block_x(), n->block_y(),
                n->block_z(), (unsigned long long)n->text_offset(),
                (unsigned long long)n->text_size(), n->text_align());
  return buf;
}

}  // namespace

std::string nv_facts_text(const fb::Capture *c) {
  if (!c->kernels()) return "";
  std::string o, ptxas;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::NvKernel *n = k->facts_as_NvKernel();
    if (!n) continue;
    if (o.empty())
      o = "  NVIDIA kernels:\n  " +
          std::string(
              "kernel                                    sm qmd regs maxreg bar shared  local "
              "stack cbank0 param bytes block       "
              "text   size align twin ptx\n");
    if (ptxas.empty() && n->ptxas_version()) ptxas = n->ptxas_version()->str();
    char name[64];
    std::snprintf(name, sizeof name, "  %-40.40s", k->name()->c_str());
    o += name +
         line(" %3u %3u %4u %6u %3u %6u %6u %5u %6u %#5x %5u %3u,%u,%u %#10llx %6llu %5u", n) +
         (k->twin_program() >= 0 ? " yes " : "  no ") + (n->ptx() ? "yes\n" : " no\n");
  }
  if (!o.empty() && !ptxas.empty()) o += "  cubins by ptxas " + ptxas + "\n";
  // The PTX is what fake-nv executes; a capture compiled with CAPGRAPH_NV_NO_PTX=1 has none.
  if (!o.empty()) {
    size_t with = 0, total = 0;
    for (const fb::Kernel *k : *c->kernels())
      if (const fb::NvKernel *n = k->facts_as_NvKernel()) total++, with += n->ptx() != nullptr;
    o += "  PTX carried for " + std::to_string(with) + " of " + std::to_string(total) + " kernels" +
         (with ? " (fake-nv executes it)\n" : " (fake-nv can only run host twins)\n");
  }
  return o;
}

std::string nv_facts_json(const fb::Capture *c) {
  if (!c->kernels()) return "";
  std::string o;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::NvKernel *n = k->facts_as_NvKernel();
    if (!n) continue;
    o += o.empty() ? ",\n \"nv_kernels\": [\n  " : ",\n  ";
    o += "{\"name\": " + json_quote(k->name()->str()) +
         ", \"entry\": " + json_quote(k->entry()->str()) +
         line(
             ", \"sm\": %u, \"qmd_version\": %u, \"registers\": %u, \"max_registers\": %u, "
             "\"barriers\": %u, \"shared_bytes\": %u, "
             "\"frame_bytes\": %u, \"min_stack_bytes\": %u, \"cbank0_bytes\": %u, "
             "\"param_offset\": %u, \"param_bytes\": %u, "
             "\"block\": [%u, %u, %u], \"text_offset\": %llu, \"text_size\": %llu, \"text_align\": "
             "%u",
             n) +
         ", \"ptxas_version\": " + json_quote(n->ptxas_version() ? n->ptxas_version()->str() : "") +
         ", \"ptx_bytes\": " + std::to_string(n->ptx() ? n->ptx()->size() : 0) +
         ", \"twin_entry\": " +
         (k->twin_program() >= 0 && k->twin_entry() ? json_quote(k->twin_entry()->str())
                                                    : std::string("null")) +
         "}";
  }
  return o.empty() ? "" : o + "\n ]";
}

}  // namespace capgraph
