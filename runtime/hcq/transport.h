// The transport seam: how the HCQ core reaches a device. One implementation per driver
// (drivers/: one folder each) or fake device (targets/<family>/fake/). A transport only moves
// bytes, submits commands, rings doorbells and waits; it knows nothing about captures (a fake that
// needs the capture registers a capture_attach hook with its device name, target.h).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"

namespace capgraph::hcq {

// Device memory as both sides see it.
struct memory {
  uint8_t *cpu = nullptr;  // the CPU mapping (nullptr if not CPU-visible)
  uint64_t gpu = 0;        // the GPU virtual address
  uint64_t size = 0;
  uint64_t handle = 0;  // the transport's own
};

enum class memory_kind : uint8_t {
  device,  // fast for the GPU (VRAM); CPU-visible when the transport can (large BAR)
  host,    // system memory both sides see (rings, signals, kernel arguments)
  code,    // like device, executable
};

enum class queue_kind : uint8_t { compute, copy };

struct queue {
  queue_kind kind = queue_kind::compute;
  memory ring;                             // host memory the engine reads commands from
  volatile uint64_t *write_ptr = nullptr;  // the engine reads how far it may go
  volatile uint64_t *read_ptr = nullptr;   // the engine reports how far it got
  uint64_t write_ptr_unit = 4;             // bytes per write-pointer step (dwords, or bytes)
  // Commands may not straddle the ring's end: submit() pads up to it with zero words (which the
  // engine must read as no-ops) when a submission would wrap.
  bool no_wrap = false;
  uint64_t submitted = 0;  // the write pointer submit() last published
  uint64_t handle = 0;     // the transport's own
};

class transport {
 public:
  virtual ~transport() = default;
  // For messages: the device and how it is reached ("null (host memory; ...)").
  virtual std::string name() const = 0;
  // The device's chip as its target names it in a capture's Target.name, after the family prefix
  // (the part after the family's prefix); the target's device_check compares the two.
  virtual std::string chip_name() const = 0;
  // Ticks per second of the clock the engines write as timestamps.
  virtual uint64_t clock_hz() const = 0;

  // Memory: allocated, mapped for the GPU, and (when CPU-visible) for the CPU, in one call.
  virtual capgraph_status alloc(uint64_t size, memory_kind kind, memory *out, std::string *err) = 0;
  virtual void free(memory &m) = 0;
  // Makes the caller's memory [host, host + size) visible to the device without a copy (a camera
  // frame bound as an input), as `out` (out->cpu = host; free() releases the import, not the
  // memory). Page-aligned address and size. Transports that cannot: CAPGRAPH_ERR_ARGUMENT.
  virtual capgraph_status import(void *host, uint64_t size, memory *out, std::string *err) {
    *err = name() + ": cannot use caller memory in place (no import through this transport)";
    return CAPGRAPH_ERR_ARGUMENT;
  }

  virtual capgraph_status queue_create(queue_kind kind, uint64_t ring_bytes, queue *out,
                                       std::string *err) = 0;
  virtual void queue_destroy(queue &q) = 0;
  // Tells the engine the write pointer moved to `write_ptr` (already stored in *q.write_ptr).
  virtual void doorbell(queue &q, uint64_t write_ptr) = 0;
  // Puts `count` command words on the queue and lets the engine run them: by default, into the
  // ring at q.submitted (padding first when q.no_wrap), then the write pointer, then the doorbell.
  // Returns the 32-bit words written to device-visible memory. No allocation.
  virtual uint64_t submit(queue &q, const uint32_t *words, uint64_t count) noexcept;

  // Waits until the 64-bit signal value at `value` reaches `target` (wrap-safe, see signal.h),
  // at most timeout_ns. CAPGRAPH_ERR_TIMEOUT or CAPGRAPH_ERR_DEVICE (a fault the device
  // reported) with *err saying what. Must not allocate on success.
  virtual capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                               std::string *err) = 0;

  // Where a replay's last signal may also raise an interrupt that wakes wait() (a kernel event):
  // write `id` to `mailbox` and raise interrupt `id`. false: no interrupt; wait() polls.
  virtual bool interrupt_target(uint64_t *mailbox, uint32_t *id) { return false; }

  // Whether the caller holds the device alone (on: from the start of a replay, or of a load, to its
  // end). A device several models share (a USB GPU: targets/amd's am_session) serializes them
  // with it, so one model's commands never wait behind another's on a shared engine (a copy that
  // waits for its compute signal holds the engine until its own compute is submitted). Calls
  // nest; no allocation. Default: nothing (each model has its own queues).
  virtual void exclusive(bool on) {}

  // Device memory the CPU cannot map (a GPU behind a USB bridge): alloc() then gives memory::cpu
  // as a host shadow of the device bytes, and the graph moves bytes explicitly: upload() after it
  // writes a shadow range (load: everything; replay: the inputs and the words it patches),
  // download() before it reads one (the outputs after a replay). wait() is handed a pointer into
  // a shadow and polls the device word behind it. false: memory::cpu is the device memory itself
  // and upload/download are never called.
  virtual bool shadowed() const { return false; }
  virtual capgraph_status upload(const memory &m, uint64_t offset, uint64_t size,
                                 std::string *err) {
    return CAPGRAPH_OK;
  }
  virtual capgraph_status download(const memory &m, uint64_t offset, uint64_t size,
                                   std::string *err) {
    return CAPGRAPH_OK;
  }
};

}  // namespace capgraph::hcq
