// The null target (README.md). Everything a target gives the HCQ core (runtime/hcq/target.h) in its
// smallest complete form:
//   - an encoder: the HCQ verbs as "null packets", a header word (opcode << 16 | body words)
//     and the body, which the null device below interprets;
//   - its launch facts: NullKernel in the capture (schema/capture.fbs), resolved at load into the
//     dispatch payload (null_dispatch);
//   - a transport (null_device.cpp): host memory as device memory (GPU address = CPU address),
//     rings with doorbells, bounded waits; each dispatch runs the kernel's host twin.
// A real target replaces the packets with its hardware's, the device with its driver (drivers/).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "hcq/encoder.h"
#include "hcq/target.h"

namespace capgraph::hcq {

extern const target null_target;

// The opcodes of the null packets. Bodies (64-bit values as low word, high word):
enum class null_op : uint16_t {
  exec = 1,       // code(2) kernargs(2) groups(1)
  copy = 2,       // dst(2) src(2) size(2)
  signal = 3,     // addr(2) value(2): the clock to addr + 8, then value to addr
  wait = 4,       // addr(2) value(1): blocks until the low 32 bits at addr are >= value
  barrier = 5,    // (none): the null device runs in order; kept so the stream shows it
  interrupt = 6,  // mailbox(2) id(1)
  timestamp = 7,  // addr(2)
  call = 8,       // addr(2) dwords(2): runs the words recorded at addr
};
constexpr uint32_t null_header(null_op op, uint32_t body) { return uint32_t(op) << 16 | body; }

// What a null dispatch carries in dispatch::facts.
struct null_dispatch {
  uint64_t code = 0;  // GPU address of the kernel's word in its null_code program
};

// Transport for "null": the null device (null_device.cpp), and its capture_attach hook (the
// device runs each kernel as its host twin, so it needs the capture at load).
capgraph_status null_device_open(const char *device, std::unique_ptr<transport> *out,
                                 std::string *err);
capgraph_status null_device_attach(transport *dev, const fb::Capture *c,
                                   const std::vector<uint64_t> &program_gpu, std::string *err);

}  // namespace capgraph::hcq
