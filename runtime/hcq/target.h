// The target seam: what one device family (a folder under targets/) gives the HCQ core. The core
// records and replays a capture knowing only these hooks, the encoder verbs (encoder.h) and the
// transport (transport.h); it names no vendor.
//
// A target registers itself with the runtime (target_register below), once per device name
// prefix, pairing the transport that reaches its devices with these hooks.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "encoder.h"
#include "transport.h"

namespace capgraph::hcq {

struct target {
  const char *name;  // the family ("null"), for messages
  // The programs that go to device memory (the others are host twins and stay on the host).
  fb::ProgramFormat program_format;
  // Whether a capture's Target.name belongs to this family (its prefix, then a chip).
  bool (*capture_matches)(const char *capture_target);
  // The capture target names this family knows, comma separated, for messages.
  std::string (*capture_names)();
  // Load-time checks of kernel `kernel`'s launch facts (Kernel.facts), run once by capture_verify
  // before anything trusts them. false with *why naming the kernel and the fact.
  bool (*kernel_check)(const fb::Capture *c, uint32_t kernel, std::string *why);
  // Whether the capture's chip is the device's. CAPGRAPH_ERR_TARGET with *why when not.
  capgraph_status (*device_check)(const fb::Capture *c, transport *dev, std::string *why);
  // Kernel `kernel`'s launch facts resolved against its program at program_gpu: everything an
  // exec needs but the per-launch kernargs and groups. Called once per kernel at load.
  capgraph_status (*kernel_resolve)(const fb::Capture *c, uint32_t kernel, uint64_t program_gpu,
                                    dispatch *out, std::string *err);
  // The encoder of a queue kind for the capture's chip.
  std::unique_ptr<encoder> (*encoder_create)(const fb::Capture *c, queue_kind kind,
                                             std::vector<uint32_t> *out);
  // Bytes per step timestamp slot. 8: the clock alone. 16 where the engines write a report
  // (payload, then the clock, as NVIDIA semaphores do): the graph asks for the clock at slot + 8
  // and the encoder may write the slot's first 8 bytes.
  uint32_t stamp_bytes = 8;
  // Optional (nullptr: none): bytes of device memory the capture's kernels share as scratch
  // (private memory, spills); the core allocates it once and passes it in dispatch::scratch.
  uint64_t (*scratch_bytes)(const fb::Capture *c) = nullptr;
  // Whether copy steps are recorded into the compute stream instead of a copy queue: a device
  // whose one context runs one command stream in order (KGSL), where a second queue waiting on
  // the first would wait behind it forever. The same signal/wait handshake then runs in order in
  // the one stream (its signal flushes the caches the copy reads through, its wait lets the copy
  // start only after that), and the encoder's copy() is an engine copy (CP_MEMCPY on Adreno).
  bool copies_in_compute = false;
};

// Opens a transport by device name ("null", "<family>:1" for the second device, ...).
using transport_open_fn = capgraph_status (*)(const char *device, std::unique_ptr<transport> *out,
                                              std::string *err);

// Optional, for devices whose kernels the host runs or checks (the null device, the fakes): called
// once at load with the transport this device's open gave, after the programs are in device
// memory (program_gpu[i]: where program i starts; 0 for host twins). Real devices register none:
// the product seams (transport, the drivers' system-call seams) know nothing of captures.
using capture_attach_fn = capgraph_status (*)(transport *dev, const fb::Capture *c,
                                              const std::vector<uint64_t> &program_gpu,
                                              std::string *err);

// Lines for `capgraph devices`: one per device present ("<prefix>:0: <chip> ..."), or one saying
// why there is none, each ending in a newline.
using devices_describe_fn = std::string (*)();

// Adds a device name prefix: "x" matches "x" and "x:1", not "xy". The runtime's own targets
// register themselves at first use (targets_builtin.cpp, generated from CAPGRAPH_TARGETS);
// programs add fakes (targets/<family>/fake/, through target_devices_register). A prefix
// registered again is replaced.
void target_register(const char *prefix, transport_open_fn open, const target *t,
                     devices_describe_fn describe = nullptr, capture_attach_fn attach = nullptr);

// Every registered device name prefix, in registration order ("amd", "fake-amd", ...).
std::vector<std::string> device_names();

// Every registered prefix's description lines, in registration order ("PREFIX: ..." where the
// prefix's own lines do not start with it).
std::string devices_describe();

// Opens `device`: the transport, the target it runs and (when attach_out is given) its
// capture_attach hook or nullptr. CAPGRAPH_ERR_ARGUMENT naming the known devices when nothing
// matches.
capgraph_status device_open(const char *device, std::unique_ptr<transport> *out,
                            const target **target_out, std::string *err,
                            capture_attach_fn *attach_out = nullptr);

// The registered device prefixes whose target runs captures for `capture_target` ("a, b or c"),
// or "" when none does.
std::string devices_for_capture(const char *capture_target);

}  // namespace capgraph::hcq
