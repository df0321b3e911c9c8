// The AMD launch facts of a capture's kernels, for `capgraph inspect` (the hooks of the
// compiler's target table entry, amd_compile.cpp).
#include <cstdio>

#include "capgraph/capture_generated.h"
#include "json_quote.h"

namespace capgraph {

namespace {

std::string line(const char *fmt, const fb::Kernel *k, const fb::AmdKernel *a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, a->sgpr_count(), a->vgpr_count(), a->group_segment_size(),
                a->private_segment_size(), a->workgroup_size(), a->wavefront_size(),
                a->kernarg_size(), (unsigned long long)a->descriptor_offset(), a->rsrc1(),
                a->rsrc2(), a->rsrc3(), a->kernel_code_properties());
  return buf;
}

}  // namespace

std::string amd_facts_text(const fb::Capture *c) {
  if (!c->kernels()) return "";
  std::string o;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::AmdKernel *a = k->facts_as_AmdKernel();
    if (!a) continue;
    if (o.empty())
      o = "  AMD kernels:\n  " +
          std::string(
              "kernel                                    sgpr vgpr    LDS scratch   wg wave "
              "kernarg descriptor     rsrc1    rsrc2    rsrc3 props twin\n");
    char name[64];
    std::snprintf(name, sizeof name, "  %-40.40s", k->name()->c_str());
    o += name + line(" %5u %4u %6u %7u %4u %4u %7u %#10llx %08x %08x %08x %5x", k, a) +
         (k->twin_program() >= 0 ? " yes\n" : " no\n");
  }
  return o;
}

std::string amd_facts_json(const fb::Capture *c) {
  if (!c->kernels()) return "";
  std::string o;
  for (const fb::Kernel *k : *c->kernels()) {
    const fb::AmdKernel *a = k->facts_as_AmdKernel();
    if (!a) continue;
    o += o.empty() ? ",\n \"amd_kernels\": [\n  " : ",\n  ";
    o += "{\"name\": " + json_quote(k->name()->str()) +
         ", \"entry\": " + json_quote(k->entry()->str()) +
         line(
             ", \"sgpr_count\": %u, \"vgpr_count\": %u, \"lds_bytes\": %u, \"scratch_bytes\": %u, "
             "\"workgroup_size\": %u, "
             "\"wavefront_size\": %u, \"kernarg_bytes\": %u, \"descriptor_offset\": %llu, "
             "\"rsrc1\": %u, \"rsrc2\": %u, \"rsrc3\": %u, "
             "\"kernel_code_properties\": %u",
             k, a) +
         ", \"twin_entry\": " +
         (k->twin_program() >= 0 && k->twin_entry() ? json_quote(k->twin_entry()->str())
                                                    : std::string("null")) +
         "}";
  }
  return o.empty() ? "" : o + "\n ]";
}

}  // namespace capgraph
