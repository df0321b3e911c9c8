// The encoder seam: the six verbs a queue understands, written as one target's packets into a
// word buffer. The graph records with these verbs only; targets/ know the packets (target.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::hcq {

// One kernel launch as the target resolved it at load (target::kernel_resolve): the core fills
// kernargs and groups per launch and lays out the kernel-argument blocks from kernarg_size and
// kernarg_align; `facts` is the target's own payload (program address, registers, ...), which
// only its encoder reads.
struct dispatch {
  uint64_t kernargs = 0;        // GPU address of the kernel-argument block (per launch)
  uint32_t groups = 0;          // workgroups (x) (per launch)
  uint32_t workgroup_size = 1;  // work-items per workgroup (x)
  uint32_t kernarg_size = 0;    // bytes of the kernel-argument block
  uint32_t kernarg_align = 16;  // its alignment (at least 16)
  // Where in the block the core writes the buffer addresses and scalars (NVIDIA: the parameters'
  // offset in constant bank 0; the target's encoder owns the bytes before and after them).
  uint32_t kernarg_offset = 0;
  // The block's CPU mapping while recording (per launch), for targets whose launch descriptor
  // lives in memory beside the arguments (NVIDIA's QMD); encoders of others ignore it.
  uint8_t *kernargs_cpu = nullptr;
  // GPU address of the capture's scratch memory (target::scratch_bytes), 0 when none.
  uint64_t scratch = 0;
  alignas(8) uint8_t facts[64] = {};

  template <class T>
  T &facts_as() {
    static_assert(sizeof(T) <= sizeof(facts) && alignof(T) <= 8, "a target's facts fit 64 bytes");
    return *reinterpret_cast<T *>(facts);
  }
  template <class T>
  const T &facts_as() const {
    static_assert(sizeof(T) <= sizeof(facts) && alignof(T) <= 8, "a target's facts fit 64 bytes");
    return *reinterpret_cast<const T *>(facts);
  }
};

class encoder {
 public:
  explicit encoder(std::vector<uint32_t> *out) : out_(out) {}
  virtual ~encoder() = default;
  virtual void exec(const dispatch &d) = 0;
  virtual void copy(uint64_t dst, uint64_t src, uint64_t size) = 0;
  // Writes `value` (and the clock, where the engine has one) to the signal at `addr`, after
  // everything before it finished and its writes are visible to other engines and the CPU.
  virtual void signal(uint64_t addr, uint64_t value) = 0;
  // Waits until the low 32 bits of the signal value at `addr` are >= value (engines compare
  // 32 bits: signals waited on by a device are reset before each replay so they stay small).
  virtual void wait(uint64_t addr, uint32_t value) = 0;
  // Later work starts after earlier work finished, and sees its writes.
  virtual void barrier() = 0;
  // After everything before: writes `id` to `mailbox` and raises host interrupt `id` (which
  // wakes a transport's wait; see transport::interrupt_target).
  virtual void interrupt(uint64_t mailbox, uint32_t id) = 0;
  // Writes the engine's 64-bit clock to `addr`.
  virtual void timestamp(uint64_t addr) = 0;
  // Runs `dwords` of commands recorded at `addr` (an indirect buffer). Not every engine can.
  virtual void call(uint64_t addr, uint64_t dwords) = 0;
  // The first problem met while encoding ("" if none): a verb this engine lacks, a value too
  // large for its field. Checked once after recording.
  virtual const std::string &error() const = 0;

  std::vector<uint32_t> &words() { return *out_; }

 protected:
  std::vector<uint32_t> *out_;
};

}  // namespace capgraph::hcq
