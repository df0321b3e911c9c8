// The host twins of a GPU capture's kernels (Kernel.twin_program), linked for this CPU: how a
// fake device (targets/<family>/fake_*) or the null device (targets/null) runs a kernel it is
// asked to dispatch. One twin runs its whole work range [0, twin_work_size) on the calling thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "elf_link.h"
#include "replay.h"

namespace capgraph::hcq {

class host_twins {
 public:
  // Links every kernel's twin (checking the twins were built for a CPU this one can run).
  // Kernels without a twin get none; `who` (the device's name) starts the messages.
  capgraph_status link(const fb::Capture *c, const char *who, std::string *err);
  // Whether kernel `kernel` has a twin.
  bool has(uint32_t kernel) const { return kernel < twins_.size() && twins_[kernel].entry; }
  // Runs kernel `kernel`'s twin over its whole range (has(kernel) must hold).
  void run(uint32_t kernel, void *const *buffers, const int64_t *scalars) const;

 private:
  struct twin {
    kernel_entry entry = nullptr;
    uint64_t work_size = 0;
  };
  std::vector<elf_image> images_;
  std::vector<twin> twins_;  // per kernel
};

}  // namespace capgraph::hcq
