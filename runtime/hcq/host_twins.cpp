#include "hcq/host_twins.h"

#include "cpu_target.h"

namespace capgraph::hcq {

capgraph_status host_twins::link(const fb::Capture *c, const char *who, std::string *err) {
  const uint32_t nprograms = c->programs() ? c->programs()->size() : 0;
  twins_.assign(c->kernels() ? c->kernels()->size() : 0, twin{});
  images_.clear();
  std::vector<int64_t> linked(nprograms, -1);  // program -> images_ index
  bool any = false;
  for (uint32_t k = 0; k < twins_.size(); ++k) any |= c->kernels()->Get(k)->twin_program() >= 0;
  if (!any) return CAPGRAPH_OK;
  if (!c->twin_target() || !c->twin_target()->name()) {
    *err = std::string(who) + ": the capture has host twins but no twin_target";
    return CAPGRAPH_ERR_FORMAT;
  }
  std::string why;
  capgraph_status st = cpu_target_check(
      c->twin_target()->name()->c_str(),
      c->twin_target()->features() ? c->twin_target()->features()->c_str() : "", &why);
  if (st != CAPGRAPH_OK) {
    *err = std::string(who) + ": the host twins cannot run here: " + why;
    return st;
  }
  images_.reserve(nprograms);
  for (uint32_t k = 0; k < twins_.size(); ++k) {
    const fb::Kernel *kern = c->kernels()->Get(k);
    const int32_t p = kern->twin_program();
    if (p < 0) continue;
    if (uint32_t(p) >= nprograms) {
      *err = std::string(who) + ": kernel '" + kern->name()->str() + "': twin program " +
             std::to_string(p) + " does not exist";
      return CAPGRAPH_ERR_FORMAT;
    }
    if (linked[size_t(p)] < 0) {
      const auto *bin = c->programs()->Get(uint32_t(p))->binary();
      elf_image image;
      if ((st = elf_link(bin->data(), bin->size(), &image, &why)) != CAPGRAPH_OK) {
        *err = std::string(who) + ": twin program " + std::to_string(p) + ": " + why;
        return st;
      }
      linked[size_t(p)] = int64_t(images_.size());
      images_.push_back(std::move(image));
    }
    const elf_image &image = images_[size_t(linked[size_t(p)])];
    const char *entry = kern->twin_entry() ? kern->twin_entry()->c_str() : "";
    void *fn = image.code_address(entry);
    if (!fn) {
      *err = std::string(who) + ": kernel '" + kern->name()->str() + "': twin entry '" + entry +
             "' is not code in program " + std::to_string(p);
      return CAPGRAPH_ERR_FORMAT;
    }
    twins_[k] = {reinterpret_cast<kernel_entry>(fn), kern->twin_work_size()};
  }
  return CAPGRAPH_OK;
}

void host_twins::run(uint32_t kernel, void *const *buffers, const int64_t *scalars) const {
  const twin &t = twins_[kernel];
  if (t.work_size) kernel_call(t.entry, buffers, scalars, 0, int64_t(t.work_size));
}

}  // namespace capgraph::hcq
