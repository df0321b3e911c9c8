// The null device: host memory is its device memory (a GPU address is the CPU address), its
// queues are rings in that memory, and a doorbell runs every queue synchronously until each is
// idle or blocked on a wait. A dispatch runs the kernel's host twin. Anything it does not know
// (an opcode, an address outside every allocation) is a device error naming it.
#include <sys/mman.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "clock_text.h"
#include "hcq/host_twins.h"
#include "hcq/signal.h"
#include "hcq/wait.h"
#include "null_hcq.h"

namespace capgraph::hcq {
namespace {

class null_device final : public transport {
 public:
  ~null_device() override {
    for (auto &[gpu, size] : regions_) munmap(reinterpret_cast<void *>(gpu), size);
  }

  std::string name() const override { return "null (host memory; kernels run as host twins)"; }
  std::string chip_name() const override { return "null"; }
  uint64_t clock_hz() const override { return 1000000000; }  // host nanoseconds

  capgraph_status alloc(uint64_t size, memory_kind, memory *out, std::string *err) override {
    void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      *err = "null: cannot map " + std::to_string(size) + " bytes";
      return CAPGRAPH_ERR_MEMORY;
    }
    out->cpu = static_cast<uint8_t *>(p);
    out->gpu = reinterpret_cast<uint64_t>(p);
    out->size = size;
    regions_[out->gpu] = size;
    return CAPGRAPH_OK;
  }

  void free(memory &m) override {
    if (regions_.erase(m.gpu)) munmap(m.cpu, m.size);
    m = {};
  }

  capgraph_status queue_create(queue_kind kind, uint64_t ring_bytes, queue *out,
                               std::string *err) override {
    if (ring_bytes < 64 || (ring_bytes & (ring_bytes - 1))) {
      *err = "null: a ring of " + std::to_string(ring_bytes) + " bytes is not a power of two";
      return CAPGRAPH_ERR_ARGUMENT;
    }
    memory ring, ptrs;
    capgraph_status st = alloc(ring_bytes, memory_kind::host, &ring, err);
    if (st != CAPGRAPH_OK) return st;
    if ((st = alloc(4096, memory_kind::host, &ptrs, err)) != CAPGRAPH_OK) return st;
    out->kind = kind;
    out->ring = ring;
    out->write_ptr = reinterpret_cast<volatile uint64_t *>(ptrs.cpu);
    out->read_ptr = reinterpret_cast<volatile uint64_t *>(ptrs.cpu + 8);
    out->write_ptr_unit = 4;
    out->handle = next_queue_++;
    queue_state &qs = queues_[out->handle];
    qs.kind = kind;
    qs.ring = ring;
    qs.ptrs = ptrs;
    return CAPGRAPH_OK;
  }

  void queue_destroy(queue &q) override {
    auto it = queues_.find(q.handle);
    if (it == queues_.end()) return;
    free(it->second.ring);
    free(it->second.ptrs);
    queues_.erase(it);
    q = {};
  }

  void doorbell(queue &, uint64_t) override { run(); }

  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override {
    const auto read = [&](uint64_t *now, std::string *e) {
      if (!fault_.empty()) {
        *e = "null: device error: " + fault_;
        return CAPGRAPH_ERR_DEVICE;
      }
      return wait_read(value, now);
    };
    const capgraph_status st = wait_bounded(target, timeout_ns, read, wait_nap{}, err);
    if (st != CAPGRAPH_ERR_TIMEOUT) return st;
    *err = "null: " + *err;
    for (const auto &[id, q] : queues_)
      if (!q.blocked.empty()) *err += "; a queue is stuck at " + q.blocked;
    return st;
  }

  // The capture, once at load (null_device_attach): its kernels run as their host twins.
  capgraph_status capture_attach(const fb::Capture *c, std::string *err) {
    capture_ = c;
    return twins_.link(c, "null", err);
  }

 private:
  struct queue_state {
    queue_kind kind = queue_kind::compute;
    memory ring, ptrs;
    uint64_t rptr = 0;  // dwords
    bool in_call = false;
    uint64_t call_at = 0, call_pos = 0, call_dwords = 0;
    std::string blocked;  // the wait it is stuck on
  };

  // Host pointer behind [gpu, gpu + size), or nullptr.
  uint8_t *host(uint64_t gpu, uint64_t size) const {
    auto it = regions_.upper_bound(gpu);
    if (it == regions_.begin()) return nullptr;
    --it;
    if (gpu - it->first > it->second || size > it->second - (gpu - it->first)) return nullptr;
    return reinterpret_cast<uint8_t *>(gpu);
  }

  bool raise(const std::string &why) {
    if (fault_.empty()) fault_ = why;
    return false;
  }

  // Runs every queue until none moves.
  void run() {
    for (bool moved = true; moved && fault_.empty();) {
      moved = false;
      for (auto &[id, q] : queues_)
        while (fault_.empty() && step(q)) moved = true;
    }
  }

  // One packet of `q` (from its call, if it is in one). false: idle, blocked or faulted.
  bool step(queue_state &q) {
    const uint32_t *words;
    uint64_t avail, mask;
    if (q.in_call) {
      if (q.call_pos >= q.call_dwords) {
        q.in_call = false;
        return true;
      }
      words = reinterpret_cast<const uint32_t *>(q.call_at) + q.call_pos;
      avail = q.call_dwords - q.call_pos;
      mask = ~0ull;
    } else {
      const uint64_t wptr = *reinterpret_cast<volatile uint64_t *>(q.ptrs.cpu);
      if (q.rptr >= wptr) return false;
      words = reinterpret_cast<const uint32_t *>(q.ring.cpu);
      avail = wptr - q.rptr;
      mask = q.ring.size / 4 - 1;  // ring sizes are powers of two
    }
    const uint64_t at = q.in_call ? 0 : q.rptr;
    const auto word = [&](uint64_t i) { return words[(at + i) & mask]; };
    const auto u64 = [&](uint64_t i) { return uint64_t(word(i)) | uint64_t(word(i + 1)) << 32; };
    const uint32_t header = word(0), body = header & 0xffff;
    if (body + 1 > avail)
      return raise("a packet (header " + hex(header) + ") runs past the end of its commands");
    bool done = true;
    switch (null_op(header >> 16)) {
      case null_op::exec: done = exec(u64(1), u64(3), word(5)); break;
      case null_op::copy: {
        const uint64_t size = u64(5);
        uint8_t *dst = host(u64(1), size), *src = host(u64(3), size);
        if (!dst || !src)
          return raise("copy of " + std::to_string(size) + " bytes from " + hex(u64(3)) + " to " +
                       hex(u64(1)) + " leaves device memory");
        memmove(dst, src, size);
        break;
      }
      case null_op::signal:
        if (!write64(u64(1) + 8, now_ns()) || !write64(u64(1), u64(3))) return false;
        break;
      case null_op::wait: {
        const uint8_t *p = host(u64(1), 4);
        if (!p) return raise("wait on " + hex(u64(1)) + ", outside device memory");
        uint32_t v;
        memcpy(&v, p, 4);
        if (v < word(3)) {
          q.blocked = "a wait for " + hex(u64(1)) + " >= " + std::to_string(word(3)) +
                      " (it holds " + std::to_string(v) + ")";
          return false;
        }
        q.blocked.clear();
        break;
      }
      case null_op::barrier: break;
      case null_op::interrupt: {
        uint8_t *p = host(u64(1), 4);
        if (!p) return raise("interrupt mailbox " + hex(u64(1)) + " is outside device memory");
        const uint32_t id = word(3);
        memcpy(p, &id, 4);
        break;
      }
      case null_op::timestamp:
        if (!write64(u64(1), now_ns())) return false;
        break;
      case null_op::call:
        if (q.in_call) return raise("a call inside a call");
        if (!host(u64(1), 4 * u64(3)))
          return raise("call of " + hex(u64(1)) + ", outside device memory");
        q.in_call = true;
        q.call_at = u64(1);
        q.call_pos = 0;
        q.call_dwords = u64(3);
        q.rptr += 1 + body;  // the ring moves past the call now; the call runs next
        return true;
      default: return raise("unknown packet header " + hex(header));
    }
    if (!done) return false;
    if (q.in_call)
      q.call_pos += 1 + body;
    else
      q.rptr += 1 + body;
    return true;
  }

  bool write64(uint64_t addr, uint64_t v) {
    uint8_t *p = host(addr, 8);
    if (!p) return raise("write to " + hex(addr) + ", outside device memory");
    __atomic_store_n(reinterpret_cast<uint64_t *>(p), v, __ATOMIC_RELEASE);
    return true;
  }

  // The kernel whose word lies at `code`, with the buffers and scalars of its argument block.
  bool exec(uint64_t code, uint64_t kernargs, uint32_t groups) {
    const uint8_t *word = host(code, 4);
    if (!word || !capture_) return raise("exec: code address " + hex(code) + " is not loaded code");
    uint32_t kernel;
    memcpy(&kernel, word, 4);
    if (!capture_->kernels() || kernel >= capture_->kernels()->size())
      return raise("exec: code address " + hex(code) + " names kernel " + std::to_string(kernel) +
                   ", which the capture lacks");
    const fb::Kernel *k = capture_->kernels()->Get(kernel);
    const uint32_t nb = k->num_buffers(), ns = k->num_scalars();
    const uint8_t *args = host(kernargs, 8ull * (nb + ns));
    if (!args)
      return raise("exec of '" + k->name()->str() + "': kernargs " + hex(kernargs) +
                   " are outside device memory");
    if (!twins_.has(kernel))
      return raise("exec of '" + k->name()->str() + "': no host twin to run");
    if (!groups) return true;
    void *buffers[64];
    int64_t scalars[64];
    if (nb > 64 || ns > 64)
      return raise("exec of '" + k->name()->str() + "': more than 64 buffers or scalars");
    for (uint32_t b = 0; b < nb; ++b) {
      uint64_t gpu;
      memcpy(&gpu, args + 8 * b, 8);
      if (!(buffers[b] = host(gpu, 0)))
        return raise("exec of '" + k->name()->str() + "': buffer " + std::to_string(b) + " at " +
                     hex(gpu) + " is outside device memory");
    }
    if (ns) memcpy(scalars, args + 8 * nb, 8ull * ns);
    twins_.run(kernel, buffers, ns ? scalars : nullptr);
    return true;
  }

  std::map<uint64_t, uint64_t> regions_;  // gpu (= cpu) address -> size
  std::map<uint64_t, queue_state> queues_;
  uint64_t next_queue_ = 1;
  const fb::Capture *capture_ = nullptr;
  host_twins twins_;
  std::string fault_;
};

}  // namespace

capgraph_status null_device_open(const char *device, std::unique_ptr<transport> *out,
                                 std::string *err) {
  if (strcmp(device, "null") != 0) {
    *err = std::string("null: the null device has no units or chips ('") + device + "')";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  *out = std::make_unique<null_device>();
  return CAPGRAPH_OK;
}

capgraph_status null_device_attach(transport *dev, const fb::Capture *c,
                                   const std::vector<uint64_t> &, std::string *err) {
  // null_device_open made it: the null device is the transport itself.
  return static_cast<null_device *>(dev)->capture_attach(c, err);
}

}  // namespace capgraph::hcq
