// The KFD transport without a GPU: topology parsing against a sysfs tree written here, and the
// plain errors a machine without /dev/kfd gets. On a machine with /dev/kfd and an AMD GPU the
// last case also opens it for real.
#include "kfd_transport.h"

#include <doctest/doctest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "capture_fixture.h"

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
