// The transport seam: how the HCQ core reaches a device. One implementation per driver
// (drivers/kfd: the amdgpu kernel driver; targets/amd/fake_amd: a fake GPU over host memory).
// A transport only moves bytes and rings doorbells; it knows nothing about captures except the
// one hook fakes need (capture_attach).
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
  uint64_t handle = 0;     // the transport's own
};

enum class memory_kind : uint8_t {
  device,  // fast for the GPU (VRAM); CPU-visible when the transport can (large BAR)
  host,    // system memory both sides see (rings, signals, kernel arguments)
  code,    // like device, executable
};

enum class queue_kind : uint8_t { compute, copy };

struct queue {
  queue_kind kind = queue_kind::compute;
  memory ring;                            // host memory the engine reads commands from
  volatile uint64_t *write_ptr = nullptr; // the engine reads how far it may go
  volatile uint64_t *read_ptr = nullptr;  // the engine reports how far it got
  uint64_t write_ptr_unit = 4;            // bytes per write-pointer step (compute: dwords; SDMA: bytes)
  uint64_t handle = 0;                    // the transport's own
};

class transport {
 public:
  virtual ~transport() = default;
  // "fake-amd (gfx1100)", "kfd node 1 (gfx1100, /dev/dri/renderD128)"
  virtual std::string name() const = 0;
  // KFD's gfx_target_version of the device (110000 for gfx1100).
  virtual uint32_t gfx_target_version() const = 0;
  // Ticks per second of the clock the engines write as timestamps.
  virtual uint64_t clock_hz() const = 0;

  // Memory: allocated, mapped for the GPU, and (when CPU-visible) for the CPU, in one call.
  virtual capgraph_status alloc(uint64_t size, memory_kind kind, memory *out, std::string *err) = 0;
  virtual void free(memory &m) = 0;

  virtual capgraph_status queue_create(queue_kind kind, uint64_t ring_bytes, queue *out,
                                       std::string *err) = 0;
  virtual void queue_destroy(queue &q) = 0;
  // Tells the engine the write pointer moved to `write_ptr` (already stored in *q.write_ptr).
  virtual void doorbell(queue &q, uint64_t write_ptr) = 0;

  // Register access, for transports that have it (PCI BAR, USB bridge). KFD does not.
  virtual capgraph_status mmio_read(uint32_t offset, uint32_t *value, std::string *err) {
    *err = name() + ": no register access through this transport";
    return CAPGRAPH_ERR_DEVICE;
  }
  virtual capgraph_status mmio_write(uint32_t offset, uint32_t value, std::string *err) {
    *err = name() + ": no register access through this transport";
    return CAPGRAPH_ERR_DEVICE;
  }

  // Waits until the 64-bit signal value at `value` reaches `target` (wrap-safe, see signal.h),
  // at most timeout_ns. CAPGRAPH_ERR_TIMEOUT or CAPGRAPH_ERR_DEVICE (a fault the device
  // reported) with *err saying what. Must not allocate on success.
  virtual capgraph_status wait(const volatile uint64_t *value, uint64_t target,
                               uint64_t timeout_ns, std::string *err) = 0;

  // Where a replay's last signal may also raise an interrupt that wakes wait() (KFD events):
  // write `id` to `mailbox` and raise interrupt `id`. false: no interrupt; wait() polls.
  virtual bool interrupt_target(uint64_t *mailbox, uint32_t *id) { return false; }

  // Called once at load after the programs are in device memory (program_gpu[i] is where
  // program i starts). Real devices need nothing; a fake GPU links the kernels' host twins here.
  virtual capgraph_status capture_attach(const fb::Capture *c,
                                         const std::vector<uint64_t> &program_gpu,
                                         std::string *err) {
    return CAPGRAPH_OK;
  }
};

// Opens a transport by device name ("amd", "amd:1" for the second GPU, "fake-amd", ...).
using transport_open_fn = capgraph_status (*)(const char *device, std::unique_ptr<transport> *out,
                                              std::string *err);
// Devices a program adds (the CLI and the tests add "fake-amd"); "amd" is built in.
void transport_register(const char *prefix, transport_open_fn open);
// CAPGRAPH_ERR_ARGUMENT naming the known devices when nothing matches `device`.
capgraph_status transport_open(const char *device, std::unique_ptr<transport> *out,
                               std::string *err);

}  // namespace capgraph::hcq
