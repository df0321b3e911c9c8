// What a loaded model holds (the opaque capgraph_model of the C API). Everything is decided at
// load; capgraph_run only replays `plan`.
#pragma once
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "capgraph_runtime.h"
#include "capture_file.h"
#include "elf_link.h"
#include "hcq/graph.h"
#include "hcq/host_twins.h"
#include "hcq/target.h"
#include "hcq/transport.h"
#include "replay.h"
#include "thread_pool.h"

namespace capgraph {

struct model_tensor {
  std::string name;
  capgraph_dtype dtype;
  std::vector<int64_t> shape;
  uint64_t offset;  // in the arena
  uint64_t size;    // bytes
};

// Page-aligned, zero-filled anonymous memory. Pages are zeroed by the kernel when first touched,
// so a large arena costs nothing at load and only what is used at run time.
struct mapping_free {
  size_t size = 0;
  void operator()(uint8_t *p) const { munmap(p, size); }
};
using mapped_bytes = std::unique_ptr<uint8_t, mapping_free>;
// nullptr if the memory cannot be had.
mapped_bytes mapped_zeroed(uint64_t size);

}  // namespace capgraph

struct capgraph_model {
  std::string label;  // the file name (or "<memory>"), first word of every message
  std::string error;  // last error message
  capgraph_status sticky = CAPGRAPH_OK;  // a failure that makes every later run fail

  capgraph::capture_file file;  // weights are used in place from here when aligned
  capgraph::mapped_bytes arena;
  uint64_t arena_size = 0;
  std::vector<capgraph::mapped_bytes> weight_copies;  // weights that were not 64-byte aligned
  std::vector<const uint8_t *> weights;               // address of each weight blob
  std::vector<capgraph::elf_image> programs;
  std::vector<capgraph::model_tensor> inputs, outputs;
  // Caller memory bound in place of an input or output (capgraph_bind_*), or nullptr.
  std::vector<void *> inputs_bound, outputs_bound;
  capgraph::replay_plan plan;
  uint8_t *arena_base = nullptr;  // where inputs/outputs are: `arena`, or the GPU arena's mapping
  // On a GPU (runtime/hcq): the device, and the capture recorded into its queues. The graph is
  // declared after the device so it goes first.
  std::unique_ptr<capgraph::hcq::transport> device;
  std::unique_ptr<capgraph::hcq::graph> graph;
  std::unique_ptr<capgraph::hcq::host_twins> twins;  // linked at the first capgraph_run_check
  std::unique_ptr<capgraph::thread_pool> pool;       // declared last: stops before the rest goes
};
