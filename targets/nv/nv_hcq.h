// The NVIDIA target of the HCQ core (runtime/hcq/target.h), for the chips of nv_chips.h: the checks
// and resolution of a capture's NvKernel facts into a dispatch, the verbs as push-buffer methods
// and QMDs (nv_methods.h, nv_qmd.h), the GPFIFO submission both NV transports share, and the
// registration of "nv" (the RM/UVM transport, drivers/nv).
//
// How the verbs map (nv_plan.md §2.6): exec writes the launch's QMD beside its constant bank 0
// (in the kernel-argument block) and either chains it to the previous QMD (DEPENDENT_QMD0: it is
// scheduled when that grid ends, so kernel-to-kernel order costs no method) or sends it with
// SEND_PCAS_A + SEND_SIGNALING_PCAS2_B; a timestamp after a launch is that QMD's release semaphore
// (a four-word report: payload, then the clock); other signals and timestamps are host semaphore
// releases with RELEASE_WFI; waits are host ACQ_CIRC_GEQ; copies go to the copy engine.
// Semaphore reports are 16 bytes (payload at +0, clock at +8), so timestamp(addr) also writes the 8
// bytes before addr (target::stamp_bytes = 16).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "hcq/encoder.h"
#include "hcq/target.h"
#include "hcq/transport.h"
#include "nv_chips.h"
#include "nv_qmd.h"

namespace capgraph::nv {

// Fixed GPU windows every channel sets once (SET_SHADER_SHARED/LOCAL_MEMORY_WINDOW): above 2^47,
// where no allocation of this runtime lies (user CPU addresses end below 2^47); Hopper needs the
// shared window 4 GiB aligned (Mesa NVK nvk_queue.c: "shared memory window needs 4GB alignment on
// hopper+").
constexpr uint64_t kSharedWindow = 1ull << 47, kLocalWindow = (1ull << 47) + (1ull << 32);

// What an NV dispatch carries in hcq::dispatch::facts.
struct nv_dispatch {
  uint64_t program = 0;  // GPU address of the kernel's first instruction
  uint32_t text_size = 0;
  uint32_t cbank0_bytes = 0;  // constant bank 0 (the start of the kernel-argument block)
  uint32_t qmd_offset = 0;    // the QMD's offset in the block (256-aligned: SEND_PCAS_A holds >> 8)
  uint32_t registers = 0, barriers = 0, shared_bytes = 0;
  uint32_t block_x = 1;
};

// A call (an indirect push buffer) in a word stream for an NV queue: this header, then the GP
// entry's two words. SEC_OP 6 is one the host class does not use for methods (clc56f.h defines
// SEC_OP 0-5 and 7); it never reaches a GPU: nv_gpfifo_submit turns it into a GP entry of its own.
constexpr uint32_t kCallToken = 6u << 29;
// Words a method header covers (itself and its data); 0 for a header this code never writes.
uint32_t push_words(uint32_t header);

// Puts a word stream on an NV queue: each run of methods is copied into the queue's push ring
// and gets a GP entry, each call token becomes one; then GPPut moves and `ring` rings the
// doorbell. Returns the 32-bit words written to device-visible memory; *error is set (and nothing
// submitted) when the words are not a method stream or do not fit the push ring.
struct gpfifo {
  volatile uint32_t *entries = nullptr;  // the GPFIFO ring, two words per entry
  uint32_t count = 0;                    // entries
  volatile uint32_t *gp_put = nullptr;   // USERD GPPut
  uint32_t put = 0;
  volatile uint32_t *push = nullptr;  // the push ring (CPU)
  uint64_t push_gpu = 0, push_dwords = 0, push_pos = 0;
};
uint64_t nv_gpfifo_submit(gpfifo &f, const uint32_t *words, uint64_t count, std::string *error);

}  // namespace capgraph::nv

namespace capgraph::hcq {
extern const target nv_target;
std::unique_ptr<encoder> nv_encoder(const nv::chip &chip, queue_kind kind,
                                    std::vector<uint32_t> *out);
const nv::chip *nv_capture_chip(const char *target_name);
}  // namespace capgraph::hcq
