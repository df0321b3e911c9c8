// The bytes of a capture, held for the model's lifetime: a read-only private mapping of the file,
// or a 64-byte aligned copy of caller memory. Weights are used in place from here, so both forms
// keep Weight.data's 64-byte alignment (a mapping starts on a page).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "capgraph_runtime.h"

namespace capgraph {

class capture_file {
 public:
  capture_file() = default;
  capture_file(const capture_file &) = delete;
  capture_file &operator=(const capture_file &) = delete;
  ~capture_file();

  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }

  // Maps `path`. CAPGRAPH_ERR_IO with *err naming the file and the reason.
  capgraph_status map(const char *path, std::string *err);
  // Copies `size` bytes into owned aligned memory. CAPGRAPH_ERR_MEMORY on failure.
  capgraph_status copy(const void *data, size_t size, std::string *err);

 private:
  void release();
  uint8_t *data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // length of the mapping, or 0 when data_ is heap memory
};

}  // namespace capgraph
