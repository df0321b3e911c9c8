// A FAKE KGSL, for tests and `--device fake-adreno`: it sits behind the KGSL transport's
// system-call seam (drivers/kgsl/kgsl_sys.h), so the real transport code (ioctls, mmap, submit,
// waits, imports) runs against it. It answers the ioctls the transport uses with the UAPI's struct
// layouts, gives memory whose GPU address is its CPU address (GPUOBJ_ALLOC with USE_CPU_MAP) or a
// distinct GPU address (MAP_USER_MEM), and executes each GPU_COMMAND's indirect buffers
// synchronously: every packet header is checked (type, reserved bits, both parity bits), every
// opcode and register must be one it knows (adreno_pm4.h), CP_LOAD_STATE6 fills a constant file and
// records the shader, and CP_EXEC_CS checks the state a dispatch needs against the kernel's
// AdrenoKernel facts (shader address, instruction length, footprints, thread size, shared size,
// constant length, system-value registers, NDRANGE and group counts, immediates and parameters
// loaded). Then it runs the dispatch: by default the shader's own machine code in the ir3
// emulator (ir3_emu.h), set up from the registers and the constant file the packets programmed
// (not from the facts, so a packet mistake shows), with every hazard the emulator finds a fault;
// in twin mode the kernel's host twin with the buffer addresses read back out of the constant
// file; in check mode both, naming the first kernel whose results differ. Signals (CP_EVENT_WRITE),
// waits (CP_WAIT_REG_MEM), timestamps (CP_REG_TO_MEM of CP_ALWAYS_ON_COUNTER, host time at 19.2
// MHz) and copies (CP_MEMCPY) act on its memory. A fault stops the command; later waits on the
// context fail (EPROTO), as a GPU fault does on KGSL. Wedged, it accepts commands and never runs or
// retires them, so waits time out. It measures nothing about a real GPU.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adreno_chips.h"
#include "fake_faults.h"
#include "hcq/device_profile.h"
#include "hcq/graph.h"
#include "hcq/host_twins.h"
#include "hcq/target.h"
#include "ir3_decode.h"
#include "ir3_emu.h"
#include "kgsl_sys.h"
#include "kgsl_uapi.h"

namespace capgraph::adreno {

// What CP_EXEC_CS runs: the machine code in the ir3 emulator, the host twin, or the emulator
// checked against the twin (each kernel's written memory compared by runtime/hcq/word_compare.h).
enum class fake_adreno_mode { emulate, twin, check };

class fake_kgsl final : public kgsl::kgsl_sys {
 public:
  explicit fake_kgsl(uint32_t chip_id = adreno::chip_find("a630")->chip_id,
                     fake_adreno_mode mode = fake_adreno_mode::emulate,
                     fake::fault_plan faults = {});
  ~fake_kgsl() override;

  int open(const char *path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void *arg) override;
  void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) override;
  int munmap(void *addr, size_t length) override;
  // The capture and where its programs are, once at load: the capture_attach hook of
  // "fake-adreno"; tests that build a graph themselves pass graph_options_for(fake).
  capgraph_status capture_attach(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                 std::string *err);
  std::string kind() const override { return "fake "; }

  // Test switches and counters.
  void wedge(bool on) { wedged_ = on; }
  void absent(bool on) { absent_ = on; }  // no /dev/kgsl-3d0
  // Profile: keep each dispatch's counts and a630 estimate (a630_estimate.h), and hand them to
  // hcq::device_profile_deliver when the device file closes.
  void profile(bool on) { profile_ = on; }
  // What the emulator counted per kernel since the capture was attached, each dispatch's
  // estimate, and the family's text table (emulate and check modes; twin mode counts nothing).
  hcq::device_profile profile_report() const;
  // Every later write to `reg` stores `value` instead: a damaged command stream, to show the
  // dispatch checks catch it.
  void reg_override(uint32_t reg, uint32_t value) { overrides_[reg] = value; }
  uint64_t dispatches() const { return dispatches_; }
  uint64_t commands() const { return commands_; }
  uint64_t imports() const { return imports_; }
  const std::string &fault() const { return fault_; }
  // What the client holds: GPU objects, imports, contexts, CPU mappings, the open file.
  int64_t live_objects() const;
  // The session's end for the fault counter (fake_faults.h): when the device file closes, or when
  // the transport's open failed before it had one.
  void session_end() { faults_.finish(live_objects()); }
  // "objN+0xOFF" for an address inside the N-th allocation (in allocation order), "userN+0xOFF"
  // inside the N-th import, the number otherwise: dumps that do not depend on where memory landed.
  std::string address_text(uint64_t gpu) const;

 private:
  struct region {
    uint64_t gpu = 0, size = 0;
    uint8_t *cpu = nullptr;
    uint32_t id = 0;     // GPUOBJ id, or 0 for imports
    uint32_t order = 0;  // allocation (or import) number
    bool user = false;   // MAP_USER_MEM
  };

  int ioctl_body(unsigned long request, void *arg);
  bool command_run(const kgsl::gpu_command &c);
  bool ib_run(uint64_t gpu, uint64_t dwords, int depth);
  bool type7(uint32_t opcode, const uint32_t *p, uint32_t n, int depth);
  bool load_state(const uint32_t *p, uint32_t n);
  bool load_tex_state(uint32_t type, uint32_t src, uint32_t dst, uint32_t units, uint64_t from,
                      uint32_t n);
  void tex_state_reset();
  bool dispatch(uint32_t gx, uint32_t gy, uint32_t gz);
  bool kernel_emulate(uint32_t k, const uint32_t groups[3]);
  // A binding a kernel writes, and its bytes before the dispatch (check mode).
  struct written_span {
    uint64_t gpu = 0;
    uint8_t *cpu = nullptr;
    std::vector<uint8_t> before;
  };
  bool kernel_check(uint32_t k, std::vector<written_span> &spans, void **bufs, int64_t *scalars);
  uint8_t *host(uint64_t gpu, uint64_t size) const;  // nullptr outside every region
  bool write32(uint64_t gpu, uint32_t v);
  bool raise(const std::string &why);  // records the first fault; returns false
  uint64_t clock() const;

  uint32_t chip_id_;
  fake_adreno_mode mode_;
  fake::fault_counter faults_;
  std::map<void *, size_t> mapped_;  // the client's CPU mappings of GPU objects
  std::map<uint32_t, uint32_t> overrides_;
  bool wedged_ = false, absent_ = false;
  int fd_ = -1;
  std::map<uint64_t, region> regions_;    // by GPU address
  std::map<uint32_t, uint64_t> objects_;  // GPUOBJ id -> GPU address
  uint32_t next_id_ = 1, allocations_ = 0, imports_n_ = 0;
  std::map<uint32_t, uint32_t> contexts_;  // id -> flags
  uint32_t next_context_ = 1;
  uint32_t queued_ = 0, retired_ = 0;
  bool faulted_ = false;
  std::string fault_;
  // Engine state for one command.
  uint32_t regs_[0x10000] = {};
  std::vector<bool> written_ = std::vector<bool>(0x10000);
  uint32_t consts_[256 * 4] = {};
  std::vector<bool> const_loaded_ = std::vector<bool>(256);
  uint64_t shader_loaded_ = 0;
  // SB6_CS_TEX state loaded in this command (since the last CS_STATE invalidate): texture
  // descriptors (ST6_CONSTANTS) and samplers (ST6_SHADER) by slot, and where each load read them.
  std::vector<ir3_image> textures_ = std::vector<ir3_image>(16);
  std::vector<std::array<uint32_t, 4>> samplers_ = std::vector<std::array<uint32_t, 4>>(16);
  std::vector<bool> texture_loaded_ = std::vector<bool>(16),
                    sampler_loaded_ = std::vector<bool>(16);
  uint64_t textures_from_ = 0, samplers_from_ = 0;
  bool textures_check(uint32_t k, const fb::AdrenoKernel *a, const std::vector<uint64_t> &gpus,
                      ir3_dispatch *d);
  std::vector<ir3_image> dispatch_textures_;  // what textures_check handed the emulator
  bool compute_marker_ = false;
  // Attached capture.
  const fb::Capture *capture_ = nullptr;
  std::map<uint64_t, uint32_t> kernel_at_;  // program GPU address -> first kernel using it
  hcq::host_twins twins_;
  // Decoded shaders by SP_CS_OBJ_START (decoded at their first dispatch).
  std::map<uint64_t, std::vector<ir3_instr>> programs_;
  uint64_t dispatches_ = 0, commands_ = 0, imports_ = 0;
  // Profile (emulate and check modes): per kernel since capture_attach, and the timeline.
  bool profile_ = false, profile_delivered_ = false;
  std::vector<std::string> kernel_names_;  // copied at attach: the capture may go first
  std::vector<ir3_counts> kernel_counts_;
  std::vector<uint64_t> kernel_dispatches_;
  std::vector<double> kernel_us_, kernel_top_us_;
  std::vector<std::string> kernel_bound_;  // of its longest dispatch
  // The roofline (a630_roofline_of): each kernel's FLOPs per launch (the capture's Launch.flops;
  // one dispatch per launch) and the unique bytes its dispatches touched, summed.
  std::vector<double> kernel_launch_flops_, kernel_unique_bytes_;
  std::vector<hcq::profile_dispatch> timeline_;
};

// Adds "fake-adreno" to the devices hcq::device_open knows: a fake a630 behind the real KGSL
// transport, running kernels' machine code in the ir3 emulator. Words after the name, in any
// order: ":twin" runs host twins instead, ":check" runs the emulator and compares each kernel with
// its host twin; ":wedge" never finishes a command (so does CAPGRAPH_FAKE_ADRENO_WEDGE=1);
// ":a640" reports chip 0x06040001 (for the chip check); ":profile" hands the emulator's counts
// and the estimated a630 time per kernel to hcq::device_profile_deliver when it closes.
void fake_adreno_register();

// The fake behind the last device fake_adreno_register's open created (tests read its counters).
std::shared_ptr<fake_kgsl> fake_adreno_last();

// Graph options that hand the capture to `fake` at load (for tests that open the transport over
// a fake themselves and call hcq::graph::build).
hcq::graph_options graph_options_for(const std::shared_ptr<fake_kgsl> &fake);

}  // namespace capgraph::adreno
