// Runs a scheduled program on this machine's CPU at compile time, kernel by kernel: the program
// compiled by cpu_codegen for "cpu" and linked into this process by the runtime's elf_link (no
// capture, no arena: one allocation per buffer). What the compiler uses it for: measuring what a
// storage choice does to the model's values (schedule/half_calibrate.h) before choosing it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "schedule/kernel.h"

namespace capgraph {

class HostProgram {
 public:
  // Compiles and links p (kept by reference: it must outlive this object). `jobs` threads compile.
  HostProgram(const Program &p, int jobs);
  ~HostProgram();
  HostProgram(const HostProgram &) = delete;
  HostProgram &operator=(const HostProgram &) = delete;

  // Every buffer's bytes (numel x dtype size); constants hold the program's weights, the rest 0.
  std::vector<std::vector<uint8_t>> &buffers() { return buffers_; }
  // Copies the weights back into their buffers (after a run rounded them).
  void constants_reset();
  // Runs every kernel from `first` on in order, each one's work range split over `threads`
  // threads; after kernel i, after(i) (which may change any buffer).
  void run(const std::function<void(size_t kernel)> &after, int threads = 1, size_t first = 0);

 private:
  struct Linked;
  const Program &p_;
  std::unique_ptr<Linked> linked_;
  std::vector<std::vector<uint8_t>> buffers_;
};

}  // namespace capgraph
