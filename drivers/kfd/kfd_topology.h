// The GPUs KFD (the amdgpu kernel driver's compute interface) reports, read from its topology in
// sysfs: /sys/class/kfd/kfd/topology/nodes/<n>/{gpu_id,properties}. CPU nodes (no SIMDs, gpu_id 0)
// are skipped. Sources: Linux drivers/gpu/drm/amd/amdkfd/kfd_topology.c (node_show: one
// "name value" pair per line of `properties`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph::kfd {

struct gpu_node {
  uint32_t node = 0;                // topology node number
  uint32_t gpu_id = 0;              // what KFD ioctls name the GPU by
  uint32_t gfx_target_version = 0;  // 110000 for gfx1100
  uint32_t drm_render_minor = 0;    // /dev/dri/renderD<minor>
  uint32_t simd_count = 0;
  uint64_t local_mem_size = 0;  // bytes of VRAM (0 when the node does not say)
  uint32_t vendor_id = 0, device_id = 0;
};

// Reads every GPU node under `root` (the topology "nodes" folder), in node order. A missing root
// gives an empty list and true; an unreadable or malformed node gives false and *err naming it.
bool topology_read(const std::string &root, std::vector<gpu_node> *out, std::string *err);

constexpr const char *topology_root = "/sys/class/kfd/kfd/topology/nodes";

}  // namespace capgraph::kfd
