// The KFD transport without a GPU: topology parsing against a sysfs tree written here, the
// plain errors a machine without /dev/kfd gets, and two models sharing a GPU's session in one
// process against a fake KFD at the system-call seam (fake_kfd.h). On a machine with /dev/kfd
// and an AMD GPU one case also opens it for real.
#include "kfd_transport.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "capture_fixture.h"
#include "fake_kfd.h"

using namespace capgraph;
using namespace capgraph::kfd;

namespace {

void node_write(const std::string &root, int n, uint32_t gpu_id, const std::string &properties) {
  const std::string dir = root + "/" + std::to_string(n);
  mkdir(root.c_str(), 0755);
  mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/gpu_id") << gpu_id << "\n";
  std::ofstream(dir + "/properties") << properties;
}

// A CPU node and two GPUs as amdkfd writes them (kfd_topology.c node_show; values from a
// gfx1100 and a gfx942 system).
std::string topology_write() {
  const std::string root = test::temp_path("nodes");
  node_write(root, 0, 0, "cpu_cores_count 16\nsimd_count 0\nmem_banks_count 1\n");
  node_write(root, 1, 53045,
             "cpu_cores_count 0\nsimd_count 192\nlocal_mem_size 25753026560\n"
             "gfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\n"
             "drm_render_minor 128\nhive_id 0\n");
  node_write(root, 2, 8817, "simd_count 1216\ngfx_target_version 90402\ndrm_render_minor 129\n");
  return root;
}

}  // namespace

TEST_CASE("GPU nodes are read from the KFD topology; CPU nodes are skipped") {
  std::vector<gpu_node> gpus;
  std::string err;
  REQUIRE(topology_read(topology_write(), &gpus, &err));
  REQUIRE(gpus.size() == 2);
  CHECK(gpus[0].node == 1);
  CHECK(gpus[0].gpu_id == 53045);
  CHECK(gpus[0].gfx_target_version == 110000);
  CHECK(gpus[0].drm_render_minor == 128);
  CHECK(gpus[0].simd_count == 192);
  CHECK(gpus[0].local_mem_size == 25753026560ull);
  CHECK(gpus[0].vendor_id == 4098);
  CHECK(gpus[1].gfx_target_version == 90402);
  CHECK(gpus[1].drm_render_minor == 129);
}

TEST_CASE("a missing topology means no GPU; a malformed one is an error naming the file") {
  std::vector<gpu_node> gpus;
  std::string err;
  CHECK(topology_read(test::temp_path("absent"), &gpus, &err));
  CHECK(gpus.empty());
  const std::string root = test::temp_path("bad_nodes");
  node_write(root, 0, 1, "simd_count many\n");
  CHECK_FALSE(topology_read(root, &gpus, &err));
  CHECK(err.find(root + "/0/properties: 'simd_count' has the value 'many'") != std::string::npos);
  const std::string root2 = test::temp_path("bad_gpu_id");
  node_write(root2, 3, 1, "simd_count 4\n");
  std::ofstream(root2 + "/3/gpu_id") << "x";
  CHECK_FALSE(topology_read(root2, &gpus, &err));
  CHECK(err.find("/3/gpu_id") != std::string::npos);
}

TEST_CASE("without /dev/kfd, opening and listing say so plainly") {
  kfd_paths paths;
  paths.kfd = test::temp_path("no_kfd");
  paths.topology = topology_write();
  std::unique_ptr<hcq::transport> t;
  std::string err;
  CHECK(kfd_open_at(paths, "amd", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err == "no AMD GPU: " + paths.kfd + " is absent (no amdgpu driver or no AMD GPU)");
  CHECK(t == nullptr);
  CHECK(kfd_devices_describe(paths) ==
        "no AMD GPU: " + paths.kfd + " is absent (no amdgpu driver or no AMD GPU)\n");
  CHECK(kfd_open_at(paths, "amd:x", &t, &err) == CAPGRAPH_ERR_ARGUMENT);
  CHECK(err.find("expected amd or amd:N") != std::string::npos);
}

TEST_CASE("a /dev/kfd that is not KFD fails on its version query, not later") {
  // A regular file stands in for the device: the ioctl fails and the error names the file.
  kfd_paths paths;
  paths.kfd = test::temp_path("fake_kfd");
  std::ofstream(paths.kfd) << "";
  paths.topology = topology_write();
  std::unique_ptr<hcq::transport> t;
  std::string err;
  CHECK(kfd_open_at(paths, "amd", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find(paths.kfd + ": AMDKFD_IOC_GET_VERSION failed") != std::string::npos);
  // Listing reads the topology only.
  const std::string list = kfd_devices_describe(paths);
  CHECK(list.find("amd:0: gfx1100 (RDNA3), 192 SIMDs, 24560 MiB VRAM, renderD128, kfd node 1") !=
        std::string::npos);
  CHECK(list.find("amd:1: gfx942 (CDNA3)") != std::string::npos);
}

TEST_CASE("on a machine with an AMD GPU, the real transport opens and allocates") {
  struct stat st;
  if (stat("/dev/kfd", &st) != 0) {
    MESSAGE("skipped: /dev/kfd is absent (no AMD GPU here)");
    return;
  }
  std::unique_ptr<hcq::transport> t;
  std::string err;
  const capgraph_status s = kfd_open("amd", &t, &err);
  INFO(err);
  REQUIRE(s == CAPGRAPH_OK);
  hcq::memory m;
  REQUIRE(t->alloc(4096, hcq::memory_kind::host, &m, &err) == CAPGRAPH_OK);
  m.cpu[0] = 42;
  CHECK(m.cpu[0] == 42);
  t->free(m);
}

// --- Two models in one process, against the fake KFD at the system-call seam (fake_kfd.h) ---

namespace {

// The paths of topology_write() (GPU ids 53045 on renderD128 and 8817 on renderD129) served by a
// fake KFD of their own: a process of its own, as far as the transport's sessions go.
struct fake_process {
  kfd_paths paths;
  std::shared_ptr<fake_kfd> kfd;
  fake_process() {
    paths.kfd = test::temp_path("kfd_seam");
    paths.topology = topology_write();
    paths.dri = "/fake/dri";
    kfd = std::make_shared<fake_kfd>(paths.kfd, paths.dri,
                                     std::vector<fake_kfd::gpu>{{53045, 128}, {8817, 129}});
    paths.sys = kfd;
  }
  std::unique_ptr<hcq::transport> open(const char *device = "amd") {
    std::unique_ptr<hcq::transport> t;
    std::string err;
    const capgraph_status st = kfd_open_at(paths, device, &t, &err);
    INFO(err);
    REQUIRE(st == CAPGRAPH_OK);
    return t;
  }
};

bool overlap_free(const std::vector<std::pair<uint64_t, uint64_t>> &r) {
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t j = i + 1; j < r.size(); ++j)
      if (r[i].first < r[j].first + r[j].second && r[j].first < r[i].first + r[i].second)
        return false;
  return true;
}

// One model's share of work: memory written and read back, a compute and a copy queue rung.
void model_step(hcq::transport &t, uint8_t tag) {
  std::string err;
  hcq::memory m;
  REQUIRE(t.alloc(3 * 4096, hcq::memory_kind::device, &m, &err) == CAPGRAPH_OK);
  memset(m.cpu, tag, m.size);
  hcq::queue compute, copy;
  REQUIRE(t.queue_create(hcq::queue_kind::compute, 0x10000, &compute, &err) == CAPGRAPH_OK);
  REQUIRE(t.queue_create(hcq::queue_kind::copy, 0x10000, &copy, &err) == CAPGRAPH_OK);
  t.doorbell(compute, tag);
  t.doorbell(copy, tag + 1u);
  *copy.write_ptr = 7;  // a signal already reached: the bounded wait returns at once
  CHECK(t.wait(copy.write_ptr, 7, 1000000, &err) == CAPGRAPH_OK);
  CHECK((m.cpu[0] == tag && m.cpu[m.size - 1] == tag));
  t.queue_destroy(copy);
  t.queue_destroy(compute);
  t.free(m);
}

}  // namespace

TEST_CASE("the fake KFD refuses what Linux refuses: a second DRM file, a second event page") {
  // What each load did before the session: its own /dev/kfd and render node, and ACQUIRE_VM.
  fake_process p;
  fake_kfd &k = *p.kfd;
  const int kfd1 = k.open(p.paths.kfd.c_str(), O_RDWR), kfd2 = k.open(p.paths.kfd.c_str(), O_RDWR);
  const std::string render = p.paths.dri + "/renderD128";
  const int drm1 = k.open(render.c_str(), O_RDWR), drm2 = k.open(render.c_str(), O_RDWR);
  kfd_ioctl_acquire_vm_args vm{};
  vm.gpu_id = 53045;
  vm.drm_fd = uint32_t(drm1);
  CHECK(k.ioctl(kfd1, AMDKFD_IOC_ACQUIRE_VM, &vm) == 0);
  CHECK(k.ioctl(kfd2, AMDKFD_IOC_ACQUIRE_VM, &vm) == 0);  // the same file: accepted
  vm.drm_fd = uint32_t(drm2);
  CHECK(k.ioctl(kfd2, AMDKFD_IOC_ACQUIRE_VM, &vm) == -1);  // the same process via another fd
  CHECK(errno == EBUSY);
  CHECK(k.refused().find("second DRM file: Device or resource busy") != std::string::npos);
  // Closing every fd does not unbind the VM: a new render-node file is still refused.
  for (int fd : {kfd1, kfd2, drm1, drm2}) CHECK(k.close(fd) == 0);
  const int kfd3 = k.open(p.paths.kfd.c_str(), O_RDWR), drm3 = k.open(render.c_str(), O_RDWR);
  vm.drm_fd = uint32_t(drm3);
  CHECK(k.ioctl(kfd3, AMDKFD_IOC_ACQUIRE_VM, &vm) == -1);
  CHECK(errno == EBUSY);
}

TEST_CASE("a GPU whose VM another DRM file holds is refused at open, naming EBUSY") {
  fake_process p;
  fake_kfd &k = *p.kfd;
  // Another runtime in the process (HIP, say) took the GPU first, with its own files.
  const int kfd = k.open(p.paths.kfd.c_str(), O_RDWR);
  const int drm = k.open((p.paths.dri + "/renderD128").c_str(), O_RDWR);
  kfd_ioctl_acquire_vm_args vm{};
  vm.gpu_id = 53045;
  vm.drm_fd = uint32_t(drm);
  REQUIRE(k.ioctl(kfd, AMDKFD_IOC_ACQUIRE_VM, &vm) == 0);
  const int fds_before = k.now().open_fds;
  std::unique_ptr<hcq::transport> t;
  std::string err;
  CHECK(kfd_open_at(p.paths, "amd", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("AMDKFD_IOC_ACQUIRE_VM for /fake/dri/renderD128 failed: Device or resource "
                 "busy (this process's VM on that GPU is bound to another DRM file") !=
        std::string::npos);
  CHECK(k.now().open_fds == fds_before + 1);  // its /dev/kfd stays (the process's); no render fd
  // The other GPU is free.
  CHECK(kfd_open_at(p.paths, "amd:1", &t, &err) == CAPGRAPH_OK);
}

TEST_CASE("two models in one process share the GPU's KFD session; each frees its own") {
  fake_process p;
  std::unique_ptr<hcq::transport> a = p.open(), b = p.open();
  fake_kfd::counts c = p.kfd->now();
  CHECK(c.kfd_opens == 1);  // /dev/kfd, a render node and the VM: once
  CHECK(c.drm_opens == 1);
  CHECK(c.acquire_vm == 1);
  CHECK(c.event_pages == 1);
  CHECK(c.events == 2);  // one signal event per model, in the one page
  uint64_t mailbox_a, mailbox_b;
  uint32_t id_a, id_b;
  REQUIRE(a->interrupt_target(&mailbox_a, &id_a));
  REQUIRE(b->interrupt_target(&mailbox_b, &id_b));
  CHECK(id_a != id_b);
  CHECK(mailbox_b - mailbox_a == 8ull * (id_b - id_a));
  CHECK(p.kfd->refused() == "");

  // Interleaved: each model's memory and queues live while the other's are made and used.
  std::string err;
  hcq::memory ma, mb;
  hcq::queue qa, qb;
  REQUIRE(a->alloc(4096, hcq::memory_kind::host, &ma, &err) == CAPGRAPH_OK);
  REQUIRE(b->alloc(4096, hcq::memory_kind::host, &mb, &err) == CAPGRAPH_OK);
  REQUIRE(a->queue_create(hcq::queue_kind::compute, 0x10000, &qa, &err) == CAPGRAPH_OK);
  REQUIRE(b->queue_create(hcq::queue_kind::compute, 0x10000, &qb, &err) == CAPGRAPH_OK);
  for (int i = 0; i < 3; ++i) {
    model_step(*a, uint8_t(10 + i));
    model_step(*b, uint8_t(20 + i));
  }
  CHECK(overlap_free(p.kfd->ranges()));
  CHECK(p.kfd->now().doorbell_maps == 1);  // one doorbell page for the process's queues
  CHECK(p.kfd->refused() == "");

  // Free one, the other goes on.
  a->queue_destroy(qa);
  a->free(ma);
  a.reset();
  CHECK(p.kfd->now().events == 1);
  model_step(*b, 30);
  b->queue_destroy(qb);
  b->free(mb);
  b.reset();
  c = p.kfd->now();
  CHECK(c.memory == 1);  // the event page: KFD keeps it for the process (freeing it is EPERM)
  CHECK(c.queues == 0);
  CHECK(c.events == 0);
  CHECK(c.open_fds == 2);  // /dev/kfd and the render node, kept for the process

  // Free both and reload: the kept session, no second ACQUIRE_VM (which KFD would refuse).
  std::unique_ptr<hcq::transport> again = p.open();
  CHECK(again->interrupt_target(&mailbox_a, &id_a));
  model_step(*again, 40);
  c = p.kfd->now();
  CHECK(c.kfd_opens == 1);
  CHECK(c.acquire_vm == 1);
  CHECK(c.event_pages == 1);
  CHECK(p.kfd->refused() == "");
}

TEST_CASE("two threads' models on one GPU session allocate and queue at once without overlap") {
  fake_process p;
  std::unique_ptr<hcq::transport> a = p.open(), b = p.open();
  std::atomic<int> failures{0};
  const auto run = [&](hcq::transport *t, uint8_t tag) {
    for (int i = 0; i < 100; ++i) {
      std::string err;
      hcq::memory m;
      hcq::queue q;
      if (t->alloc(2 * 4096, hcq::memory_kind::device, &m, &err) != CAPGRAPH_OK ||
          t->queue_create(hcq::queue_kind::copy, 0x1000, &q, &err) != CAPGRAPH_OK) {
        ++failures;
        return;
      }
      memset(m.cpu, tag, m.size);
      t->doorbell(q, uint64_t(i));
      if (m.cpu[4095] != tag) ++failures;
      t->queue_destroy(q);
      t->free(m);
    }
  };
  std::thread ta(run, a.get(), uint8_t(1)), tb(run, b.get(), uint8_t(2));
  ta.join();
  tb.join();
  CHECK(failures == 0);
  CHECK(p.kfd->refused() == "");  // no overlap, no unknown handle, no second VM
  a.reset();
  b.reset();
  const fake_kfd::counts c = p.kfd->now();
  CHECK(c.memory == 1);  // the event page only
  CHECK(c.queues == 0);
  CHECK(c.acquire_vm == 1);
}

TEST_CASE("a second GPU in the process shares /dev/kfd, binds its own VM, and polls") {
  fake_process p;
  std::unique_ptr<hcq::transport> a = p.open("amd"), b = p.open("amd:1");
  const fake_kfd::counts c = p.kfd->now();
  CHECK(c.kfd_opens == 1);
  CHECK(c.drm_opens == 2);
  CHECK(c.acquire_vm == 2);
  CHECK(c.event_pages == 1);  // the process's one page went with GPU 0's session
  uint64_t mailbox;
  uint32_t id;
  CHECK(a->interrupt_target(&mailbox, &id));
  CHECK_FALSE(b->interrupt_target(&mailbox, &id));  // so amd:1's waits poll
  model_step(*a, 1);
  model_step(*b, 2);
  CHECK(overlap_free(p.kfd->ranges()));
  CHECK(p.kfd->refused() == "");
}

TEST_CASE(
    "a failed step of a shared session's setup leaves nothing behind, and a later load works") {
  fake_process p;
  std::unique_ptr<hcq::transport> t;
  std::string err;
  // ACQUIRE_VM fails: the render node is closed, no session is kept, the next load binds.
  p.kfd->fail_once(AMDKFD_IOC_ACQUIRE_VM, ENOMEM);
  CHECK(kfd_open_at(p.paths, "amd", &t, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("AMDKFD_IOC_ACQUIRE_VM for /fake/dri/renderD128 failed: Cannot allocate "
                 "memory") != std::string::npos);
  CHECK(p.kfd->now().open_fds == 1);  // /dev/kfd only
  // The first event fails: its page is freed, not kept; that model polls, the next one sets it.
  p.kfd->fail_once(AMDKFD_IOC_CREATE_EVENT, ENOMEM);
  std::unique_ptr<hcq::transport> a = p.open();
  uint64_t mailbox;
  uint32_t id;
  CHECK_FALSE(a->interrupt_target(&mailbox, &id));
  CHECK(p.kfd->now().memory == 0);
  std::unique_ptr<hcq::transport> b = p.open();
  CHECK(b->interrupt_target(&mailbox, &id));
  CHECK(p.kfd->now().event_pages == 1);
  // A queue KFD refuses gives back the memory made for it.
  p.kfd->fail_once(AMDKFD_IOC_CREATE_QUEUE, ENOMEM);
  hcq::queue q;
  CHECK(a->queue_create(hcq::queue_kind::compute, 0x10000, &q, &err) == CAPGRAPH_ERR_DEVICE);
  CHECK(err.find("AMDKFD_IOC_CREATE_QUEUE failed: Cannot allocate memory") != std::string::npos);
  CHECK(p.kfd->now().memory == 1);  // the event page only
  model_step(*a, 5);
  // A failed WAIT_EVENTS: the wait naps instead, and still sees its signal.
  p.kfd->fail_once(AMDKFD_IOC_WAIT_EVENTS, EIO);
  hcq::memory m;
  REQUIRE(b->alloc(4096, hcq::memory_kind::host, &m, &err) == CAPGRAPH_OK);
  volatile uint64_t *signal = reinterpret_cast<volatile uint64_t *>(m.cpu);
  *signal = 0;
  std::thread later([signal] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    *signal = 3;
  });
  CHECK(b->wait(signal, 3, 2000000000ull, &err) == CAPGRAPH_OK);
  later.join();
  b->free(m);
  const fake_kfd::counts c = p.kfd->now();
  CHECK(c.acquire_vm == 1);  // the one that bound (an injected failure is not counted)
  CHECK(c.drm_opens == 2);
  CHECK(c.open_fds == 2);
  CHECK(p.kfd->refused() == "");
}
