// The C API (capgraph_runtime.h): load = verify, map weights, allocate the arena, link the
// programs, build the command list, start the threads; run = replay.
#include "capgraph_runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>

#include "capture_model.h"
#include "capture_verify.h"

namespace capgraph {

mapped_bytes mapped_zeroed(uint64_t size) {
  if (size > SIZE_MAX / 2) return nullptr;
  const size_t length = size ? size_t(size) : 1;  // a zero-size arena still has an address
  void *p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return mapped_bytes(static_cast<uint8_t *>(p), mapping_free{length});
}

}  // namespace capgraph

using namespace capgraph;

namespace {

void error_copy(const std::string &msg, char *err, size_t err_len) {
  if (err && err_len) snprintf(err, err_len, "%s", msg.c_str());
}

void tensors_copy(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorInfo>> *list,
                  std::vector<model_tensor> *out) {
  for (const fb::TensorInfo *t : *list)
    out->push_back({t->name()->str(), capgraph_dtype(t->dtype()),
                    std::vector<int64_t>(t->shape()->begin(), t->shape()->end()), t->offset(),
                    t->size()});
}

// On a GPU: verify for it, open the device, record the capture into its queues.
capgraph_status model_build_hcq(capgraph_model *m, const char *device, std::string *err) {
  const std::string &label = m->label;
  // The device first: an unknown or absent device is the problem to report, whatever the file.
  std::string why;
  const hcq::target *t = nullptr;
  hcq::capture_attach_fn attach = nullptr;
  capgraph_status st = hcq::device_open(device, &m->device, &t, &why, &attach);
  if (st != CAPGRAPH_OK) {
    *err = label + ": " + why;
    return st;
  }
  const fb::Capture *c = nullptr;
  load_limits limits;
  if ((st = load_limits_from_env(&limits, &why)) != CAPGRAPH_OK) {
    *err = label + ": " + why;
    return st;
  }
  if ((st = capture_verify(m->file.data(), m->file.size(), label.c_str(), &c, err, t, &limits)) !=
      CAPGRAPH_OK)
    return st;
  // A replay's bound: 10 s unless CAPGRAPH_TIMEOUT_MS says otherwise (1 ms to 1 hour).
  hcq::graph_options opt;
  if (const char *ms = getenv("CAPGRAPH_TIMEOUT_MS")) {
    char *end = nullptr;
    const unsigned long long v = strtoull(ms, &end, 10);
    if (!*ms || *end || v < 1 || v > 3600000) {
      *err = label + ": CAPGRAPH_TIMEOUT_MS must be 1 to 3600000 milliseconds, not '" + ms + "'";
      return CAPGRAPH_ERR_ARGUMENT;
    }
    opt.timeout_ns = v * 1000000ull;
  }
  if (attach) {
    hcq::transport *dev = m->device.get();
    opt.capture_attach = [attach, dev](const fb::Capture *c, const std::vector<uint64_t> &at,
                                       std::string *why) { return attach(dev, c, at, why); };
  }
  if ((st = hcq::graph::build(m->device.get(), t, c, label.c_str(), opt, &m->graph, err)) !=
      CAPGRAPH_OK)
    return st;
  m->arena_size = c->arena_size();
  m->arena_base = m->graph->arena();
  tensors_copy(c->inputs(), &m->inputs);
  tensors_copy(c->outputs(), &m->outputs);
  return CAPGRAPH_OK;
}

bool device_is_cpu(const char *device) { return !device || strcmp(device, "cpu") == 0; }

// Everything after the bytes are in memory. `m->file` holds them.
capgraph_status model_build(capgraph_model *m, int32_t threads, const char *device,
                            std::string *err) {
  if (!device_is_cpu(device)) return model_build_hcq(m, device, err);
  const std::string &label = m->label;
  const fb::Capture *c = nullptr;
  load_limits limits;
  uint64_t timeout_ns = 0;
  std::string why;
  capgraph_status st = load_limits_from_env(&limits, &why);
  if (st == CAPGRAPH_OK) st = replay_timeout_from_env(&timeout_ns, &why);
  if (st != CAPGRAPH_OK) {
    *err = label + ": " + why;
    return st;
  }
  st = capture_verify(m->file.data(), m->file.size(), label.c_str(), &c, err, nullptr, &limits);
  if (st != CAPGRAPH_OK) return st;
  if (threads == 0) threads = int32_t(c->threads());

  m->arena_size = c->arena_size();
  if (!(m->arena = mapped_zeroed(m->arena_size))) {
    *err = label + ": cannot allocate the arena (" + std::to_string(m->arena_size) + " bytes)";
    return CAPGRAPH_ERR_MEMORY;
  }
  if (c->weights())
    for (const fb::Weight *w : *c->weights()) {
      const uint8_t *data = w->data()->data();
      if (reinterpret_cast<uintptr_t>(data) % 64 != 0) {
        // The schema aligns weights to 64; a writer that did not still loads, at the cost of
        // one copy.
        mapped_bytes copy = mapped_zeroed(w->data()->size());
        if (!copy) {
          *err = label + ": cannot allocate a copy of weight '" +
                 (w->name() ? w->name()->str() : "") + "'";
          return CAPGRAPH_ERR_MEMORY;
        }
        memcpy(copy.get(), data, w->data()->size());
        data = copy.get();
        m->weight_copies.push_back(std::move(copy));
      }
      m->weights.push_back(data);
    }

  if (c->programs())
    for (uint32_t i = 0; i < c->programs()->size(); ++i) {
      const auto *bin = c->programs()->Get(i)->binary();
      elf_image image;
      std::string why;
      st = elf_link(bin->data(), bin->size(), &image, &why);
      if (st != CAPGRAPH_OK) {
        *err = label + ": program " + std::to_string(i) + ": " + why;
        return st;
      }
      m->programs.push_back(std::move(image));
    }
  std::vector<kernel_entry> kernels;
  if (c->kernels())
    for (uint32_t i = 0; i < c->kernels()->size(); ++i) {
      const fb::Kernel *k = c->kernels()->Get(i);
      const elf_image &image = m->programs[k->program()];
      void *entry = image.code_address(k->entry()->c_str());
      if (!entry) {
        *err = label + ": kernel " + std::to_string(i) + " '" + k->name()->str() +
               "': entry symbol '" + k->entry()->str() +
               (image.symbol_address(k->entry()->c_str()) ? "' is not code in program "
                                                          : "' is not defined in program ") +
               std::to_string(k->program());
        return CAPGRAPH_ERR_FORMAT;
      }
      kernels.push_back(reinterpret_cast<kernel_entry>(entry));
    }

  tensors_copy(c->inputs(), &m->inputs);
  tensors_copy(c->outputs(), &m->outputs);
  m->arena_base = m->arena.get();
  replay_plan_build(c, m->arena.get(), m->weights, kernels, threads, &m->plan);
  if (threads > 1) {
    try {
      m->pool = std::make_unique<thread_pool>(threads, timeout_ns);
    } catch (const std::system_error &e) {
      *err =
          label + ": cannot start " + std::to_string(threads - 1) + " worker threads: " + e.what();
      return CAPGRAPH_ERR_MEMORY;
    }
  }
  return CAPGRAPH_OK;
}

template <class Fill>
capgraph_status model_load(const char *label, const capgraph_options *opts, const char *device,
                           capgraph_model **out, char *err, size_t err_len, Fill fill) {
  if (!out) {
    error_copy("capgraph_load: out is NULL", err, err_len);
    return CAPGRAPH_ERR_ARGUMENT;
  }
  *out = nullptr;
  const int32_t threads = opts ? opts->threads : 0;
  if (threads < 0 || threads > int32_t(k_max_threads)) {
    error_copy(std::string(label) + ": threads " + std::to_string(threads) +
                   " is not in 0 (the capture's count) to " + std::to_string(k_max_threads),
               err, err_len);
    return CAPGRAPH_ERR_ARGUMENT;
  }
  std::string msg;
  capgraph_status st;
  capgraph_model *m = nullptr;
  try {
    m = new capgraph_model;
    m->label = label;
    st = fill(m, &msg);
    if (st == CAPGRAPH_OK) st = model_build(m, threads, device, &msg);
  } catch (const std::bad_alloc &) {
    msg = std::string(label) + ": out of memory while loading";
    st = CAPGRAPH_ERR_MEMORY;
  } catch (const std::exception &e) {  // nothing else is expected; never let one cross the C API
    msg = std::string(label) + ": " + e.what();
    st = CAPGRAPH_ERR_MEMORY;
  }
  if (st != CAPGRAPH_OK) {
    delete m;
    error_copy(msg, err, err_len);
    return st;
  }
  *out = m;
  return CAPGRAPH_OK;
}

capgraph_status tensor_get(capgraph_model *m, const std::vector<model_tensor> &list,
                           const char *kind, int32_t index, capgraph_tensor *out) {
  if (!m) return CAPGRAPH_ERR_ARGUMENT;
  if (!out || index < 0 || size_t(index) >= list.size()) {
    try {
      m->error = !out ? m->label + ": capgraph_" + kind + ": out is NULL"
                      : m->label + ": " + kind + " index " + std::to_string(index) +
                            " is out of range (" + std::to_string(list.size()) + " " + kind + "s)";
    } catch (...) {  // no memory for the message: the status still says what happened
    }
    return CAPGRAPH_ERR_ARGUMENT;
  }
  const model_tensor &t = list[size_t(index)];
  out->name = t.name.c_str();
  out->dtype = t.dtype;
  out->rank = int32_t(t.shape.size());
  for (int i = 0; i < CAPGRAPH_MAX_RANK; ++i)
    out->shape[i] = size_t(i) < t.shape.size() ? t.shape[size_t(i)] : 0;
  out->size_bytes = size_t(t.size);
  const std::vector<void *> &bound = &list == &m->inputs ? m->inputs_bound : m->outputs_bound;
  out->data = size_t(index) < bound.size() && bound[size_t(index)] ? bound[size_t(index)]
                                                                   : m->arena_base + t.offset;
  return CAPGRAPH_OK;
}

capgraph_status tensor_bind(capgraph_model *m, std::vector<model_tensor> &list,
                            std::vector<void *> &bound, const char *kind, int32_t index, void *data,
                            size_t size_bytes) {
  if (!m) return CAPGRAPH_ERR_ARGUMENT;
  try {
    if (index < 0 || size_t(index) >= list.size()) {
      m->error = m->label + ": capgraph_bind_" + kind + ": index " + std::to_string(index) +
                 " is out of range (" + std::to_string(list.size()) + " " + kind + "s)";
      return CAPGRAPH_ERR_ARGUMENT;
    }
    const model_tensor &t = list[size_t(index)];
    const std::string what = m->label + ": capgraph_bind_" + kind + " '" + t.name + "': ";
    if (data && (uintptr_t(data) % 4096 || size_bytes % 4096 || size_bytes < t.size)) {
      m->error = what +
                 "the buffer must be page-aligned (4096 bytes) in address and size and hold its " +
                 std::to_string(t.size) + " bytes (" + std::to_string(size_bytes) + " given)";
      return CAPGRAPH_ERR_ARGUMENT;
    }
    if (!m->graph) {
      // The CPU: the plan's pointers into the tensor move to the caller's buffer (page-aligned as
      // on a GPU, so one program binds the same buffers on either). A copy step that reaches
      // past the tensor's edge, or a kernel writing a larger buffer of which it is a slice, could
      // not follow it.
      const int64_t step = replay_plan_straddles(m->plan, t.offset, t.size);
      if (step >= 0) {
        const bool copy = !m->plan.steps[size_t(step)].entry;
        m->error = what + (copy ? "a copy step" : "a kernel") + " (step " + std::to_string(step) +
                   ") reads or writes it together with other arena bytes; use capgraph_run and " +
                   "copy instead";
        return CAPGRAPH_ERR_ARGUMENT;
      }
      replay_plan_rebase(&m->plan, t.offset, t.size,
                         data ? static_cast<uint8_t *>(data) : m->arena_base + t.offset);
      bound.resize(list.size(), nullptr);
      bound[size_t(index)] = data;
      return CAPGRAPH_OK;
    }
    std::string why;
    const capgraph_status st = m->graph->bind(t.offset, t.size, data, size_bytes, &why);
    if (st != CAPGRAPH_OK) {
      m->error = what + why;
      return st;
    }
    bound.resize(list.size(), nullptr);
    bound[size_t(index)] = data;
    return CAPGRAPH_OK;
  } catch (...) {
    return CAPGRAPH_ERR_MEMORY;
  }
}

int32_t tensor_find(const capgraph_model *m, const std::vector<model_tensor> &list,
                    const char *name) {
  if (!m || !name) return -1;
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return int32_t(i);
  return -1;
}

// A CPU replay's result: a thread that did not reach a barrier in time leaves the pool broken (it
// may still be running a kernel in the arena), so the failure sticks.
capgraph_status cpu_replay_status(capgraph_model *m, bool finished) {
  if (finished) return CAPGRAPH_OK;
  m->sticky = CAPGRAPH_ERR_TIMEOUT;
  try {
    m->error = m->label + ": a replay thread did not finish its step within " +
               std::to_string(m->pool ? m->pool->timeout_ns() / 1000000 : 0) +
               " ms (CAPGRAPH_TIMEOUT_MS); the model cannot run again";
  } catch (...) {  // no memory for the message: the status still says what happened
  }
  return CAPGRAPH_ERR_TIMEOUT;
}

// One GPU replay. A device that timed out or faulted is in an unknown state: the failure sticks,
// and every later run reports it.
capgraph_status graph_replay(capgraph_model *m) {
  const capgraph_status st = m->graph->replay(&m->error);
  if (st != CAPGRAPH_OK) {
    m->sticky = st;
    m->error = m->label + ": " + m->error;
  }
  return st;
}

}  // namespace

extern "C" {

capgraph_status capgraph_load(const char *path, const capgraph_options *opts, capgraph_model **out,
                              char *err, size_t err_len) {
  return capgraph_load_device(path, nullptr, opts, out, err, err_len);
}

capgraph_status capgraph_load_device(const char *path, const char *device,
                                     const capgraph_options *opts, capgraph_model **out, char *err,
                                     size_t err_len) {
  if (!path) {
    if (out) *out = nullptr;
    error_copy("capgraph_load: path is NULL", err, err_len);
    return CAPGRAPH_ERR_ARGUMENT;
  }
  return model_load(path, opts, device, out, err, err_len,
                    [&](capgraph_model *m, std::string *msg) { return m->file.map(path, msg); });
}

capgraph_status capgraph_load_memory(const void *data, size_t size, const capgraph_options *opts,
                                     capgraph_model **out, char *err, size_t err_len) {
  if (!data && size) {
    if (out) *out = nullptr;
    error_copy("capgraph_load_memory: data is NULL", err, err_len);
    return CAPGRAPH_ERR_ARGUMENT;
  }
  return model_load(
      "<memory>", opts, nullptr, out, err, err_len,
      [&](capgraph_model *m, std::string *msg) { return m->file.copy(data, size, msg); });
}

int32_t capgraph_num_inputs(const capgraph_model *m) { return m ? int32_t(m->inputs.size()) : 0; }
int32_t capgraph_num_outputs(const capgraph_model *m) { return m ? int32_t(m->outputs.size()) : 0; }

int32_t capgraph_input_index(const capgraph_model *m, const char *name) {
  return m ? tensor_find(m, m->inputs, name) : -1;
}
int32_t capgraph_output_index(const capgraph_model *m, const char *name) {
  return m ? tensor_find(m, m->outputs, name) : -1;
}

capgraph_status capgraph_input(capgraph_model *m, int32_t index, capgraph_tensor *out) {
  return m ? tensor_get(m, m->inputs, "input", index, out) : CAPGRAPH_ERR_ARGUMENT;
}
capgraph_status capgraph_output(capgraph_model *m, int32_t index, capgraph_tensor *out) {
  return m ? tensor_get(m, m->outputs, "output", index, out) : CAPGRAPH_ERR_ARGUMENT;
}

capgraph_status capgraph_bind_input(capgraph_model *m, int32_t index, void *data,
                                    size_t size_bytes) {
  return m ? tensor_bind(m, m->inputs, m->inputs_bound, "input", index, data, size_bytes)
           : CAPGRAPH_ERR_ARGUMENT;
}
capgraph_status capgraph_bind_output(capgraph_model *m, int32_t index, void *data,
                                     size_t size_bytes) {
  return m ? tensor_bind(m, m->outputs, m->outputs_bound, "output", index, data, size_bytes)
           : CAPGRAPH_ERR_ARGUMENT;
}

int32_t capgraph_num_steps(const capgraph_model *m) {
  if (!m) return 0;
  return m->graph ? int32_t(m->graph->steps()) : (int32_t)m->plan.steps.size();
}

const char *capgraph_step_name(const capgraph_model *m, int32_t index) {
  if (!m || index < 0 || index >= capgraph_num_steps(m)) return nullptr;
  // Verified at load: every launch names a kernel that exists and has a name; the file stays
  // mapped for the model's life.
  const fb::Capture *c = fb::GetCapture(m->file.data());
  const fb::Step *s = c->steps()->Get(uint32_t(index));
  if (s->kind() == fb::StepKind::copy) return "copy";
  return c->kernels()->Get(s->launch()->kernel())->name()->c_str();
}

capgraph_status capgraph_run_timed(capgraph_model *m, uint64_t *step_ns, size_t count) {
  if (!m) return CAPGRAPH_ERR_ARGUMENT;
  const size_t steps = size_t(capgraph_num_steps(m));
  if (!step_ns || count < steps) {
    m->error = "capgraph_run_timed: room for " + std::to_string(steps) + " step times is needed";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  if (m->sticky != CAPGRAPH_OK) return m->sticky;
  if (m->graph) {
    const capgraph_status st = graph_replay(m);
    if (st == CAPGRAPH_OK)
      m->graph->step_times(step_ns);  // the engines' timestamps after each step
    return st;
  }
  return cpu_replay_status(m, replay_run_timed(m->plan, m->pool.get(), step_ns));
}

capgraph_status capgraph_run(capgraph_model *m) {
  if (!m) return CAPGRAPH_ERR_ARGUMENT;
  // A replay that failed (device lost, timeout; on the CPU a thread that never reached a
  // barrier) sets `sticky`, and every later run reports it instead of replaying on a broken
  // device or pool.
  if (m->sticky != CAPGRAPH_OK) return m->sticky;
  if (m->graph) return graph_replay(m);
  return cpu_replay_status(m, replay_run(m->plan, m->pool.get()));
}

capgraph_status capgraph_run_check(capgraph_model *m, char *report, size_t report_len) {
  if (!m) return CAPGRAPH_ERR_ARGUMENT;
  if (m->sticky != CAPGRAPH_OK) return m->sticky;
  if (!m->graph) {
    m->error = m->label +
               ": --check compares a GPU's kernels with their host twins; on the CPU the "
               "capture's kernels are what runs";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  try {
    const fb::Capture *c = fb::GetCapture(m->file.data());
    if (!m->twins) {
      auto twins = std::make_unique<hcq::host_twins>();
      std::string why;
      const capgraph_status st = twins->link(c, m->label.c_str(), &why);
      if (st != CAPGRAPH_OK) {
        m->error = why;
        return st;
      }
      m->twins = std::move(twins);
    }
    hcq::check_result r;
    std::string why;
    const capgraph_status st = m->graph->check(c, *m->twins, &r, &why);
    if (st != CAPGRAPH_OK) {
      // A device that timed out or faulted is in an unknown state.
      if (st == CAPGRAPH_ERR_TIMEOUT || st == CAPGRAPH_ERR_DEVICE) m->sticky = st;
      m->error = m->label + ": " + why;
      return st;
    }
    char figures[160];
    if (r.differs) {
      const fb::Kernel *k = c->kernels()->Get(r.kernel);
      const fb::Launch *l = c->steps()->Get(r.step)->launch();
      std::string nodes;
      if (l->source_nodes())
        for (const auto *n : *l->source_nodes()) nodes += (nodes.empty() ? "" : ", ") + n->str();
      snprintf(figures, sizeof figures,
               "%llu words differ, max |device - twin| %.6g, tolerance %.3g",
               (unsigned long long)r.words_differ, r.max_diff, r.tolerance);
      m->error =
          m->label + ": check: kernel '" + k->name()->str() + "' (kernel " +
          std::to_string(r.kernel) + ", step " + std::to_string(r.step) +
          (nodes.empty() ? "" : ", ONNX nodes " + nodes) +
          ") differs from its host twin: " + figures +
          (r.outside_outputs ? "; it changed memory outside its outputs (first at arena byte " +
                                   std::to_string(r.first_offset) + ")"
                             : ", first at arena byte " + std::to_string(r.first_offset));
      return CAPGRAPH_ERR_MISMATCH;
    }
    snprintf(figures, sizeof figures, "%u launches match their host twins", r.launches_checked);
    std::string line = figures;
    if (r.launches_unchecked)
      line += " (" + std::to_string(r.launches_unchecked) + " launches have no twin: not compared)";
    error_copy(line, report, report_len);
    return CAPGRAPH_OK;
  } catch (const std::bad_alloc &) {
    m->error = m->label + ": out of memory for --check (it keeps a host copy of the arena)";
    return CAPGRAPH_ERR_MEMORY;
  }
}

const char *capgraph_error(const capgraph_model *m) { return m ? m->error.c_str() : ""; }

const char *capgraph_status_name(capgraph_status s) {
  // A C caller may pass any int; in C++ a value outside the enumerators' range is not a valid
  // capgraph_status, and loading it as one is undefined (UBSan -fsanitize=enum). Read it as an int.
  static_assert(sizeof(capgraph_status) == sizeof(int));
  int code;
  std::memcpy(&code, &s, sizeof code);
  switch (code) {
    case CAPGRAPH_OK: return "ok";
    case CAPGRAPH_ERR_IO: return "io error";
    case CAPGRAPH_ERR_FORMAT: return "format error";
    case CAPGRAPH_ERR_VERSION: return "version error";
    case CAPGRAPH_ERR_TARGET: return "target error";
    case CAPGRAPH_ERR_ARGUMENT: return "argument error";
    case CAPGRAPH_ERR_DEVICE: return "device error";
    case CAPGRAPH_ERR_TIMEOUT: return "timeout";
    case CAPGRAPH_ERR_MEMORY: return "out of memory";
    case CAPGRAPH_ERR_MISMATCH: return "mismatch";
  }
  return "unknown status";
}

void capgraph_free(capgraph_model *m) {
  // A pool that timed out may have a thread still inside a kernel, writing the arena and reading
  // the code: freeing them under it would turn a hang into memory corruption. Such a model is
  // freed once its threads have stopped (waiting a second for them), else left allocated (and its
  // threads running) for the life of the process.
  if (m && m->pool && m->pool->broken() && !m->pool->workers_stopped_wait(1'000'000'000ull)) return;
  delete m;
}

}  // extern "C"
