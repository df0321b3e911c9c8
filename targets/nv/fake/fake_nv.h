// A FAKE NVIDIA GPU behind the RM/UVM ioctl seam (drivers/nv/nv_sys.h), for tests and
// `--device fake-nv`: the real transport (drivers/nv/nv_transport.cpp) runs its whole sequence
// against it. The fake answers what that transport calls, and refuses anything else by name:
//   RM: NV_ESC_CHECK_VERSION_STR (the driver version is selectable, to test the refusal of
//       unknown branches), CARD_INFO, RM_ALLOC of the classes a GA102 / AD102 / GH100 offers
//       (handles, parents and parameter sizes checked as escape.c / alloc_free.c / control.c do),
//       RM_CONTROL (parameter sizes checked), RM_MAP_MEMORY + mmap of a registered device fd;
//   UVM: INITIALIZE, MM_INITIALIZE, REGISTER_GPU(_VASPACE), REGISTER_CHANNEL, external ranges and
//       mappings (the only way GPU addresses come to exist here).
// The doorbell runs the channels: GP entries, push-buffer method headers, host semaphores (release
// with timestamps, ACQ_CIRC_GEQ that stalls and resumes), compute methods (SET_OBJECT, windows,
// SEND_PCAS_A + SEND_SIGNALING_PCAS2_B), QMDs (V03_00 on sm86/89, V04_00 on sm90, read with the
// same field table the encoder writes with) checked against the capture's NvKernel facts, release
// semaphores and dependent-QMD chains, and copy-engine copies and semaphores. Each launch executes
// the kernel's PTX (the capture carries it beside the cubin) in the PTX interpreter
// (ptx_exec.h), its parameters read from the constant bank 0 the QMD points at, its grid and block
// from the QMD, its shared and local windows from the channel; `:twin` runs the kernel's host
// twin instead (on the same parameters), `:check` both, naming the first kernel whose written
// words differ (fake_nv_ptx.cpp). It measures no time and runs no SASS.
// Device names: "fake-nv[:sm86|:sm89|:sm90][:twin|:check][:profile][:wedge][:driver=VERSION]"
// (default sm90, 580.142); wedge: doorbells are ignored (a hung GPU: waits time out within their
// bound); profile: each kernel's interpreter counts are kept for `capgraph profile`.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fake_faults.h"
#include "hcq/device_profile.h"
#include "hcq/host_twins.h"
#include "nv_hcq.h"
#include "nv_sys.h"
#include "ptx_exec.h"

namespace capgraph::nv {

// What a launch runs: the PTX in the interpreter, the host twin, or both compared.
enum class fake_nv_mode { ptx, twin, check };

class fake_rm final : public nv_sys {
 public:
  fake_rm(const chip &c, std::string version, bool wedged, fake_nv_mode mode = fake_nv_mode::ptx,
          fake::fault_plan faults = {});
  ~fake_rm() override;

  int open(const char *path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void *arg) override;
  void *mmap(void *addr, size_t length, int prot, int flags, int fd, off_t offset) override;
  int munmap(void *addr, size_t length) override;
  void doorbell_write(volatile uint32_t *at, uint32_t token) override;
  // The capture and where its programs are, once at load (the device's capture_attach hook,
  // registered with "fake-nv"; tests that build a graph themselves pass it in graph_options).
  capgraph_status capture_attach(const fb::Capture *c, const std::vector<uint64_t> &program_gpu,
                                 std::string *err);
  std::string fault() const override { return fault_; }
  std::string what() const override;

  // What happened, for the tests.
  const std::vector<std::string> &calls() const { return calls_; }  // ioctl names in order
  uint64_t launches() const { return launches_; }
  uint64_t chained() const { return chained_; }  // launches reached through DEPENDENT_QMD0
  uint64_t gp_entries() const { return gp_entries_; }
  uint64_t live_objects() const { return objects_.size(); }
  // Everything the client holds: RM objects, open files, CPU mappings made through the seam.
  int64_t client_live() const { return int64_t(objects_.size() + fds_.size() + host_maps_.size()); }
  // The first QMDs launched (up to 32), field by field, for golden tests.
  const std::string &qmd_log() const { return qmd_log_; }
  // The interpreter's counts per kernel (index in the capture) since capture_attach.
  const std::map<uint32_t, ptx_counts> &kernel_counts() const { return counts_; }
  fake_nv_mode mode() const { return mode_; }
  // ":profile": the counts and the H100 estimate per kernel go to hcq::device_profile_deliver
  // when the fake goes (the model is freed).
  void profile(bool on) { profile_ = on; }
  hcq::device_profile profile_report() const;

 private:
  struct object {
    uint32_t cls = 0, parent = 0;
    int memfd = -1;
    uint64_t size = 0;
    uint8_t *host = nullptr;  // the fake's own view of a memory object
    uint32_t flags = 0;       // vaspace flags
    bool scheduled = false;   // channel groups
  };
  struct mapping {
    uint64_t size;
    uint8_t *host;
    uint32_t memory;
  };
  struct channel {
    uint32_t handle = 0, group = 0, token = 0;
    uint64_t ring = 0, userd = 0;  // GPU addresses
    uint32_t entries = 0, gp_get = 0;
    uint32_t engine = 0;     // the compute or copy class allocated under it
    uint32_t bound[8] = {};  // SET_OBJECT per subchannel
    // Resume point inside the current GP entry (a stalled acquire).
    uint64_t at = 0;                           // dwords done in the current entry
    uint32_t method = 0, subch = 0, left = 0;  // the current header's next method and words left
    // Method state.
    uint64_t sem_addr = 0, sem_payload = 0, pcas = 0;
    uint64_t shared_window = ~0ull, local_window = ~0ull;
    uint64_t ce_in = 0, ce_out = 0, ce_sem = 0;
    uint32_t ce_len = 0, ce_lines = 1, ce_payload = 0;
    std::string blocked;
  };

  int ioctl_body(int fd, unsigned long request, void *arg);
  int rm(unsigned nr, size_t size, void *arg);
  int uvm(unsigned long request, void *arg);
  uint32_t rm_alloc(void *arg);
  uint32_t rm_control(void *arg);
  uint32_t handle_new(uint32_t wanted);
  const object *find(uint32_t handle, uint32_t cls) const;
  uint8_t *host(uint64_t gpu, uint64_t size) const;
  bool raise(const std::string &why);
  void run();
  bool channel_run(channel &ch);  // false: stalled or faulted
  bool method(channel &ch, uint32_t subch, uint32_t offset, uint32_t data);
  bool qmd_launch(channel &ch, uint64_t qmd);
  bool qmd_one(channel &ch, uint64_t qmd, uint64_t *next);
  bool semaphore_write(uint64_t addr, uint64_t payload, bool wide, bool stamp);
  // fake_nv_ptx.cpp: the kernel's modules parsed at attach; one launch run as the mode says.
  bool ptx_attach(std::string *err);
  struct launch_args {
    uint32_t kernel;
    const uint8_t *cbank;  // constant bank 0 as the QMD points at it
    uint32_t grid[3], block[3];
    uint64_t shared_bytes;
    uint64_t shared_window, local_window;
  };
  bool kernel_run(const launch_args &a);
  bool kernel_check(const launch_args &a, const std::vector<void *> &bufs,
                    const std::vector<int64_t> &scalars);
  uint64_t clock() const;

  // The injected failure (fake_faults.h) for call `what`: true when the plan fails it, errno set.
  bool fault_inject(const std::string &what, int default_error);

  const chip &chip_;
  std::string version_;
  bool wedged_;
  fake::fault_counter faults_;
  std::map<uintptr_t, size_t> host_maps_;  // CPU mappings made through mmap(), by address
  std::map<int, int> fds_;                 // fake fd -> kind (1 ctl, 2 device, 3 uvm)
  std::map<int, uint32_t> registered_,
      pending_map_;  // device fd -> ctl fd; device fd -> memory to map
  int next_fd_ = 1000;
  std::map<uint32_t, object> objects_;
  uint32_t client_ = 0, next_handle_ = 0xcaf00000;
  bool version_checked_ = false, uvm_ready_ = false, gpu_registered_ = false,
       vaspace_registered_ = false;
  std::map<uint64_t, uint64_t> ranges_;   // UVM external ranges: base -> length
  std::map<uint64_t, mapping> maps_;      // UVM mappings: base -> memory
  std::map<uint32_t, channel> channels_;  // by handle
  uint8_t *usermode_cpu_ = nullptr;
  uint32_t usermode_memory_ = 0;
  std::vector<std::string> calls_;
  std::string fault_;
  // The attached capture.
  const fb::Capture *capture_ = nullptr;
  std::vector<uint64_t> program_gpu_;
  hcq::host_twins twins_;
  fake_nv_mode mode_;
  std::vector<ptx_module> modules_;         // one per distinct PTX text
  std::vector<const ptx_kernel *> ptx_of_;  // per capture kernel
  std::map<uint32_t, ptx_counts> counts_;
  std::map<uint32_t, uint64_t> dispatches_;
  std::vector<std::string> kernel_names_;
  std::vector<hcq::profile_dispatch> timeline_;
  bool profile_ = false;
  uint64_t launches_ = 0, chained_ = 0, gp_entries_ = 0;
  std::string qmd_log_;
};

// A word stream for an NV queue as text, one method per line with its fields (from the method
// table), for golden tests and debugging; words it cannot read are marked ERROR.
std::string push_text(const chip &c, const uint32_t *words, size_t count);
// A QMD's non-zero fields, one per line.
std::string qmd_text(qmd_version v, const std::vector<uint32_t> &qmd);

// Adds "fake-nv" to the devices hcq::device_open knows.
void fake_nv_register();

}  // namespace capgraph::nv
