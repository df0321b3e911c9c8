#include "codegen/host_run.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include "codegen/cpu_codegen.h"
#include "codegen/cpu_target.h"
#include "elf_link.h"
#include "error.h"
#include "replay.h"

namespace capgraph {

struct HostProgram::Linked {
  std::vector<elf_image> images;      // per object
  std::vector<kernel_entry> entries;  // per kernel
  std::vector<std::vector<void *>> slots;
  CodegenResult code;
};

HostProgram::HostProgram(const Program &p, int jobs) : p_(p), linked_(new Linked) {
  Linked &l = *linked_;
  l.code = cpu_codegen(p, cpu_target_named("cpu"), jobs);
  for (const std::vector<uint8_t> &obj : l.code.objects) {
    elf_image image;
    std::string why;
    if (elf_link(obj.data(), obj.size(), &image, &why) != CAPGRAPH_OK)
      throw Error("internal: the host run could not link its own kernels: " + why);
    l.images.push_back(std::move(image));
  }
  buffers_.resize(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); i++)
    buffers_[i].assign((size_t)(p.buffers[i].numel * dtype_size(p.buffers[i].dtype)), 0);
  constants_reset();
  for (const CodegenKernel &k : l.code.kernels) {
    void *fn = l.images[(size_t)k.object].code_address(k.symbol.c_str());
    if (!fn) throw Error("internal: the host run found no kernel '" + k.symbol + "'");
    l.entries.push_back(reinterpret_cast<kernel_entry>(fn));
    std::vector<void *> s;
    for (int b : k.slots) s.push_back(buffers_[(size_t)b].data());
    l.slots.push_back(std::move(s));
  }
}

HostProgram::~HostProgram() = default;

void HostProgram::constants_reset() {
  for (size_t i = 0; i < p_.buffers.size(); i++) {
    const Buffer &b = p_.buffers[i];
    if (b.kind == Buffer::Kind::constant && b.data.bytes)
      std::memcpy(buffers_[i].data(), b.data.data(),
                  std::min(buffers_[i].size(), b.data.bytes->size()));
  }
}

void HostProgram::run(const std::function<void(size_t)> &after, int threads, size_t first) {
  const Linked &l = *linked_;
  for (size_t i = first; i < l.entries.size(); i++) {
    const int64_t n = l.code.kernels[i].work_size;
    // Any split of the work range is valid (cpu_codegen.h); small ranges are not worth a thread.
    const int64_t t = std::min<int64_t>(std::max(threads, 1), n / 64 + 1);
    std::vector<std::thread> pool;
    for (int64_t j = 1; j < t; j++)
      pool.emplace_back([&, j] {
        kernel_call(l.entries[i], l.slots[i].data(), nullptr, n * j / t, n * (j + 1) / t);
      });
    if (n > 0) kernel_call(l.entries[i], l.slots[i].data(), nullptr, 0, n / t);
    for (std::thread &th : pool) th.join();
    if (after) after(i);
  }
}

}  // namespace capgraph
