// `--device fake-kfd` (tests only): the runtime's KFD transport (drivers/kfd), unchanged, over the
// fake KFD at its system-call seam (drivers/kfd/fake_kfd.h), with fake-amd's packet engine
// (fake_gpu) behind it running the queues on the memory KFD mapped. One fake KFD and one engine
// per process, as /dev/kfd is: models loaded together share the transport's session per GPU
// (drivers/kfd/README.md), and whatever that gets wrong (a second ACQUIRE_VM, overlapping memory,
// a second event page) fails their loads as KFD would. The fake sees no doorbell store: the
// engine runs at each AMDKFD_IOC_WAIT_EVENTS (a wait spins 100 us first) and on a thread of its
// own every 200 us. A GPU fault shows as a wait's timeout, as on KFD. Fault words
// (fake_faults.h): the system calls at the seam, counted per model from its open to its free.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "amd_hcq.h"
#include "fake_amd.h"
#include "fake_faults.h"
#include "fake_kfd.h"
#include "kfd_transport.h"

namespace capgraph::amd {
namespace {

constexpr uint32_t kGpuId = 4660;  // the fake's one GPU: renderD128, gfx1100

struct kfd_rig {
  kfd::kfd_paths paths;
  std::shared_ptr<kfd::fake_kfd> kfd;
  std::unique_ptr<fake_gpu> engine;
  std::recursive_mutex lock;  // the engine: its hooks run under the fake's lock, attach not
  std::map<uint32_t, uint64_t> queues;      // KFD queue id -> the engine's handle
  fake::fault_counter *counting = nullptr;  // the latest open model's (the sweep loads one)
};

// The topology KFD would show for one RX 7900 XTX (kfd_topology.c node_show's names), in a
// directory of this process; "" when it cannot be written.
std::string topology_write() {
  char dir[] = "/tmp/capgraph_fake_kfd_XXXXXX";
  if (!mkdtemp(dir)) return "";
  const std::string nodes = std::string(dir) + "/nodes", gpu = nodes + "/1";
  mkdir(nodes.c_str(), 0755);
  mkdir(gpu.c_str(), 0755);
  std::ofstream(gpu + "/gpu_id") << kGpuId << "\n";
  std::ofstream(gpu + "/properties")
      << "simd_count 192\nlocal_mem_size 25753026560\ngfx_target_version 110000\n"
         "vendor_id 4098\ndevice_id 29772\ndrm_render_minor 128\n";
  struct stat st;
  return stat((gpu + "/properties").c_str(), &st) == 0 ? nodes : "";
}

kfd_rig *rig(std::string *err) {
  static kfd_rig *r = [] {
    auto *x = new kfd_rig;  // process-wide, never freed: the transport's sessions outlive it all
    x->paths.topology = topology_write();
    x->paths.kfd = "/fake-kfd/kfd";
    x->paths.dri = "/fake-kfd/dri";
    x->kfd = std::make_shared<kfd::fake_kfd>(x->paths.kfd, x->paths.dri,
                                             std::vector<kfd::fake_kfd::gpu>{{kGpuId, 128}});
    x->paths.sys = x->kfd;
    x->engine = std::make_unique<fake_gpu>(*chip_find("gfx1100"));
    fake_gpu *e = x->engine.get();
    std::recursive_mutex *lock = &x->lock;
    kfd::fake_kfd::engine hooks;
    hooks.memory = [e, lock](uint64_t va, uint64_t size, bool mapped) {
      std::lock_guard<std::recursive_mutex> hold(*lock);
      if (mapped)
        e->region_attach(va, size, reinterpret_cast<uint8_t *>(uintptr_t(va)));  // GPU = CPU
      else
        e->region_detach(va);
    };
    hooks.queue = [e, lock, x](uint32_t id, bool compute, uint64_t ring, uint64_t ring_bytes,
                               uint64_t wptr, uint64_t rptr) {
      std::lock_guard<std::recursive_mutex> hold(*lock);
      if (ring_bytes) {
        x->queues[id] =
            e->queue_attach(compute ? hcq::queue_kind::compute : hcq::queue_kind::copy, ring,
                            ring_bytes, reinterpret_cast<volatile uint64_t *>(uintptr_t(wptr)),
                            reinterpret_cast<volatile uint64_t *>(uintptr_t(rptr)));
      } else if (x->queues.count(id)) {
        e->queue_detach(x->queues[id]);
        x->queues.erase(id);
      }
    };
    hooks.run = [e, lock] {
      std::lock_guard<std::recursive_mutex> hold(*lock);
      e->run_queues();
    };
    x->kfd->engine_attach(std::move(hooks));
    // A GPU runs on its own: the engine also runs every 200 us, for the waits that never reach
    // WAIT_EVENTS (a model without an event polls memory; the fake sees no doorbell store).
    std::thread([e, lock] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::lock_guard<std::recursive_mutex> hold(*lock);
        e->run_queues();
      }
    }).detach();
    x->kfd->inject_set([x](const char *what, int default_error) {
      // Not counted: WAIT_EVENTS, whose number depends on whether the engine's thread finished
      // the work within the wait's spin (a sweep needs the same calls in every session). Its
      // failure (the wait naps instead) is drivers_kfd_test's.
      if (!strcmp(what, "ioctl AMDKFD_IOC_WAIT_EVENTS")) return 0;
      int e = 0;  // under the fake's lock, as counting_set's change of x->counting
      return x->counting && x->counting->call(what, default_error, &e) ? e : 0;
    });
    return x;
  }();
  if (r->paths.topology.empty()) {
    *err = "fake-kfd: cannot write its KFD topology under /tmp";
    return nullptr;
  }
  return r;
}

// The model whose device calls are counted from now on (nullptr: none).
void counting_set(kfd_rig *r, fake::fault_counter *c) {
  r->kfd->run_locked([&] { r->counting = c; });
}

// Stops counting into `faults` and ends its session: what it leaves is what the fake holds beyond
// what it held at the model's open (exact when no other model allocated or freed meanwhile, as in
// the sweeps: one model at a time, beside an idle one).
void counting_end(kfd_rig *r, fake::fault_counter &faults, int live_before) {
  r->kfd->run_locked([&] {
    if (r->counting == &faults) r->counting = nullptr;
  });
  faults.finish(r->kfd->now().client_objects - live_before);
}

// The KFD transport of one model, and its capture in the engine (forgotten with the model).
// Its device calls (the system calls at the seam, fake_faults.h) are counted from the open to the
// close; what it leaves behind is what the fake holds then beyond what it held at the open.
class fake_kfd_transport final : public hcq::transport {
 public:
  fake_kfd_transport(kfd_rig *r, std::unique_ptr<hcq::transport> kfd,
                     std::unique_ptr<fake::fault_counter> faults, int live_before)
      : rig_(r), kfd_(std::move(kfd)), faults_(std::move(faults)), live_before_(live_before) {}
  ~fake_kfd_transport() override {
    {
      std::lock_guard<std::recursive_mutex> hold(rig_->lock);
      rig_->engine->capture_detach(this);
    }
    kfd_.reset();
    counting_end(rig_, *faults_, live_before_);
  }
  capgraph_status attach(const fb::Capture *c, const std::vector<uint64_t> &at, std::string *err) {
    std::lock_guard<std::recursive_mutex> hold(rig_->lock);
    return rig_->engine->capture_attach(c, at, err, this);
  }

  std::string name() const override { return "fake-kfd (" + kfd_->name() + ")"; }
  std::string chip_name() const override { return kfd_->chip_name(); }
  uint64_t clock_hz() const override { return rig_->engine->clock_hz(); }  // the engine's stamps
  capgraph_status alloc(uint64_t size, hcq::memory_kind kind, hcq::memory *out,
                        std::string *err) override {
    return kfd_->alloc(size, kind, out, err);
  }
  void free(hcq::memory &m) override { kfd_->free(m); }
  capgraph_status queue_create(hcq::queue_kind kind, uint64_t ring_bytes, hcq::queue *out,
                               std::string *err) override {
    return kfd_->queue_create(kind, ring_bytes, out, err);
  }
  void queue_destroy(hcq::queue &q) override { kfd_->queue_destroy(q); }
  void doorbell(hcq::queue &q, uint64_t write_ptr) override { kfd_->doorbell(q, write_ptr); }
  capgraph_status wait(const volatile uint64_t *value, uint64_t target, uint64_t timeout_ns,
                       std::string *err) override {
    return kfd_->wait(value, target, timeout_ns, err);
  }
  bool interrupt_target(uint64_t *mailbox, uint32_t *id) override {
    return kfd_->interrupt_target(mailbox, id);
  }

 private:
  kfd_rig *rig_;
  std::unique_ptr<hcq::transport> kfd_;
  std::unique_ptr<fake::fault_counter> faults_;
  int live_before_;
};

capgraph_status fake_kfd_open(const char *device, std::unique_ptr<hcq::transport> *out,
                              std::string *err) {
  fake::fault_plan plan;
  for (const char *p = strchr(device, ':'); p; p = strchr(p + 1, ':')) {
    const char *end = strchr(p + 1, ':');
    const std::string word(p + 1, end ? size_t(end - p - 1) : strlen(p + 1));
    std::string why;
    if (!fake::fault_word(word, &plan, &why))
      why = "'" + word + "' is not one of " + fake::fault_words_usage;
    if (!why.empty()) {
      *err = "fake-kfd: " + why;
      return CAPGRAPH_ERR_ARGUMENT;
    }
  }
  kfd_rig *r = rig(err);
  if (!r) return CAPGRAPH_ERR_DEVICE;
  auto faults = std::make_unique<fake::fault_counter>("fake-kfd", plan);
  const int live_before = r->kfd->now().client_objects;
  counting_set(r, faults.get());
  std::unique_ptr<hcq::transport> t;
  const capgraph_status st = kfd::kfd_open_at(r->paths, "amd", &t, err);
  if (st != CAPGRAPH_OK) {
    *err = "fake-kfd: " + *err;
    counting_end(r, *faults, live_before);
    return st;
  }
  *out = std::make_unique<fake_kfd_transport>(r, std::move(t), std::move(faults), live_before);
  return CAPGRAPH_OK;
}

}  // namespace

void fake_kfd_register() {
  hcq::target_register(
      "fake-kfd", &fake_kfd_open, &hcq::amd_target,
      [] {
        return std::string(
            "fake-kfd: the `amd` device's KFD transport over a fake /dev/kfd (one per process, "
            "models share its session), kernels in fake-amd's RDNA3 emulator; measures no "
            "time\n");
      },
      [](hcq::transport *dev, const fb::Capture *c, const std::vector<uint64_t> &at,
         std::string *err) { return static_cast<fake_kfd_transport *>(dev)->attach(c, at, err); });
}

}  // namespace capgraph::amd
