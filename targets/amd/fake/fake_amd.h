// A FAKE AMD GPU, for tests and `--device fake-amd`: it implements the HCQ transport over host
// memory and interprets the PM4 and SDMA packets the runtime writes, decoded with the same
// packet table (amd_packets_table.cpp). It honours signals and waits, checks what a dispatch
// sets (program address, RSRC registers, workgroup size, kernarg pointer) against the capture,
// and runs each dispatch's own machine code in the RDNA3 emulator (rdna3_emu.h) on the host memory
// behind the GPU addresses. Modes (device "fake-amd[:CHIP][:check|:twin][:profile]"):
//   emulate (default)  the emulator runs every dispatch; no host twin is needed
//   check              the emulator runs each dispatch, then the kernel's host twin
//                      (Kernel.twin_program) runs on a copy of the same memory; the first kernel
//                      whose results differ is a device error naming it and the max difference
//   twin               the host twin runs instead of the machine code (the fake's old behaviour)
//   profile            with any mode: per-kernel emulator counts are printed to stderr at the end
// Anything it does not know (an opcode, an instruction, a register range, an address outside
// every allocation) is a device error naming it. It measures nothing about a real GPU's time.
//
// Execution is synchronous: a doorbell runs every queue until each is idle or blocked on a wait.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "amd_chips.h"
#include "amd_packets.h"
#include "elf_link.h"
#include "fake_faults.h"
#include "hcq/device_profile.h"
#include "hcq/graph.h"
#include "hcq/host_twins.h"
#include "hcq/transport.h"
#include "rdna3_emu.h"
#include "replay.h"

namespace capgraph::amd {

enum class fake_mode { emulate, check, twin };

class fake_gpu final : public hcq::transport {
 public:
  explicit fake_gpu(const chip &c, fake_mode mode = fake_mode::emulate, bool profile = false,
                    fake::fault_plan faults = {});
  ~fake_gpu() override;

  std::string name() const override;
  std::string chip_name() const override { return chip_.name; }
  uint64_t clock_hz() const override { return 1000000000; }  // host nanoseconds
  capgraph_status alloc(uint64_t size, hcq::memory_kind kind, hcq::memory *out,
                        std::string *err) override;
  void free(hcq::memory &m) override;
  capgraph_status queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                               std::string *err) override;
  void queue_destroy(hcq::queue &q) override;
  void doorbell(hcq::queue &q, uint64_t write_ptr) override;
  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override;
  // The capture and where its programs are, once at load: the capture_attach hook of
  // "fake-amd"; tests that build a graph themselves pass graph_options_for(gpu).
  // A GPU that runs several models' queues (the gfx1100 model behind the USB bridge) holds one
  // capture per `owner` (the model's transport): attaching again replaces that owner's, and a
  // dispatch finds its kernel among all of them; capture_detach(owner) forgets the owner's (its
  // capture's memory goes when the model is freed).
  capgraph_status capture_attach(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                 std::string *err, const void *owner = nullptr);
  void capture_detach(const void *owner);
  // Like KFD: a mailbox page and event id 1 (the fake counts the interrupts; its waits poll).
  bool interrupt_target(uint64_t *mailbox, uint32_t *id) override;

  // For a device model that owns the memory and the queues (the register-model gfx1100 behind
  // the emulated USB bridge, targets/amd/fake/gfx1100): GPU memory the fake does not own (never
  // freed by it), and a queue whose ring and pointers live in such memory (write pointer in dwords
  // for compute, bytes for copy, as queue_create's). run_queues() is what a doorbell does.
  void region_attach(uint64_t gpu, uint64_t size, uint8_t *cpu);
  void region_detach(uint64_t gpu);  // forgets a region_attach'ed range (its memory is freed)
  uint64_t queue_attach(hcq::queue_kind kind, uint64_t ring_gpu, uint64_t ring_bytes,
                        volatile uint64_t *write_ptr, volatile uint64_t *read_ptr);
  void queue_detach(uint64_t handle) { queues_.erase(handle); }
  void run_queues() { run(); }
  // GPU memory outside every region (the model's SYSTEM pages: the bridge SRAM and its windows,
  // reached by bus-master DMA through its page walk): SDMA COPY_LINEAR and FENCE reach it through
  // this when it is set; false from it (or none set) is a fault naming the address.
  std::function<bool(uint64_t gpu, uint8_t *p, size_t n, bool write)> bus_access;

  // Test switches and counters.
  void wedge(bool on) { wedged_ = on; }  // every WAIT_REG_MEM / POLL_REGMEM stays unsatisfied
  uint64_t dispatches() const { return dispatches_; }
  uint64_t packets() const { return packets_; }
  uint64_t interrupts() const { return interrupts_; }
  uint32_t last_interrupt_id() const { return last_interrupt_id_; }
  const std::string &fault() const { return fault_; }
  // What the client holds: memory from alloc() and queues from queue_create() not given back.
  int64_t live_objects() const { return int64_t(client_memory_.size() + client_queues_.size()); }
  // Host pointer behind [gpu, gpu + size), or nullptr.
  uint8_t *host(uint64_t gpu, uint64_t size) const;
  // What the emulator executed, per kernel of the attached capture (summed over dispatches).
  const std::vector<rdna3_counts> &kernel_counts() const {
    static const std::vector<rdna3_counts> none;
    return cur_ ? cur_->counts : none;
  }
  std::string profile_text() const;  // those counts as a table
  // The counts, each kernel's roofline estimate and the table, for hcq::device_profile_deliver
  // (":profile" hands it over when the device closes).
  hcq::device_profile profile_report() const;

 private:
  struct region {
    uint64_t gpu, size;
    uint8_t *cpu;
    bool owned = true;  // false: region_attach'ed, the caller's memory
  };
  struct queue_state {
    hcq::queue_kind kind = hcq::queue_kind::compute;
    uint64_t ring_gpu = 0, ptrs_gpu = 0, ring_dwords = 0;
    volatile uint64_t *write_ptr = nullptr, *read_ptr = nullptr;
    uint64_t unit = 4;  // bytes per write-pointer step
    uint64_t rptr = 0;  // in write-pointer units
    bool in_ib = false;
    uint64_t ib_gpu = 0, ib_pos = 0, ib_dwords = 0;
    std::string blocked;  // the wait it is stuck on
  };

  // alloc() without counting a device call (the fake's own rings, pointers and mailbox).
  capgraph_status alloc_region(uint64_t size, hcq::memory *out, std::string *err);
  // The injected failure (fake_faults.h) of transport call `what`: true when the plan fails it,
  // *err then says so as the KFD transport would (`ioctl`: the KFD call it stands for).
  bool fault_inject(const char *what, const char *ioctl, int default_error, std::string *err);
  void run();
  bool queue_advance(queue_state &q);
  bool execute(queue_state &q, const decoded &p);  // false: blocked (or faulted)
  bool pm4(queue_state &q, const decoded &p);
  bool sdma(queue_state &q, const decoded &p);
  bool dispatch(uint32_t dim_x, uint32_t dim_y, uint32_t dim_z, uint32_t initiator);
  bool kernel_emulate(uint32_t k, uint32_t groups);  // the machine code, in the emulator
  // The host twin on a copy of the memory the buffers live in, compared with what the emulator
  // wrote there; `emulated` holds those regions after the emulator ran.
  bool kernel_check(uint32_t k, const std::vector<size_t> &regions,
                    const std::vector<std::vector<uint8_t>> &before, void **bufs, int64_t *scalars);
  rdna3_region region_find(uint64_t gpu) const;
  bool mem_compare(uint64_t addr, uint32_t mask, uint32_t ref, uint32_t func, const char *what,
                   queue_state &q);
  bool write32(uint64_t addr, uint32_t v);
  bool write64(uint64_t addr, uint64_t v);
  bool raise(const std::string &why);  // records the first fault; returns false
  uint64_t clock() const;

  const chip &chip_;
  fake_mode mode_;
  bool profile_;
  fake::fault_counter faults_;
  std::set<uint64_t> client_memory_, client_queues_;  // live_objects()
  std::vector<region> regions_;
  uint64_t next_gpu_ = 0x100000000ull;  // a GPU address space distinct from host pointers
  std::map<uint64_t, queue_state> queues_;
  uint64_t next_queue_ = 1;
  uint32_t sh_[0x400] = {};  // SH registers from sh_reg_base
  // Attached captures
  struct attached_capture {
    const void *owner = nullptr;
    const fb::Capture *capture = nullptr;
    std::vector<uint64_t> program_gpu;
    hcq::host_twins twins;             // the reference (check and twin modes)
    std::vector<rdna3_counts> counts;  // per kernel
  };
  std::vector<std::unique_ptr<attached_capture>> attached_;
  attached_capture *cur_ = nullptr;  // the one whose kernel is dispatched (else the last attached)
  std::map<uint64_t, rdna3_program> programs_;  // decoded once per code address
  bool wedged_ = false;
  uint64_t dispatches_ = 0, packets_ = 0, interrupts_ = 0;
  uint32_t last_interrupt_id_ = 0;
  hcq::memory mailbox_;
  std::string fault_;
};

// Adds "fake-amd" and "fake-amd:<chip>" (default gfx1100) to the devices hcq::device_open knows.
// The capture_attach hook (hcq/target.h) of a device whose transport is a fake_gpu: "fake-amd"
// registers it; so does a test that registers a fake_gpu of its own under another name.
capgraph_status fake_amd_attach(hcq::transport *dev, const fb::Capture *c,
                                const std::vector<uint64_t> &program_gpu, std::string *err);

// Graph options that hand the capture to `gpu` at load (for tests that call hcq::graph::build).
hcq::graph_options graph_options_for(fake_gpu &gpu, hcq::graph_options o = {});

void fake_amd_register();  // and fake_kfd_register()
// "fake-kfd": the KFD transport over a fake /dev/kfd, this engine behind it (fake_kfd_device.cpp).
void fake_kfd_register();

}  // namespace capgraph::amd
