#include "kfd_topology.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace capgraph::kfd {
namespace {

bool number_parse(const std::string &s, uint64_t *out) {
  if (s.empty()) return false;
  errno = 0;
  char *end = nullptr;
  const unsigned long long v = strtoull(s.c_str(), &end, 10);
  if (errno || *end || s[0] == '-') return false;
  *out = v;
  return true;
}

}  // namespace

bool topology_read(const std::string &root, std::vector<gpu_node> *out, std::string *err) {
  out->clear();
  DIR *dir = opendir(root.c_str());
  if (!dir) return true;  // no KFD: no GPUs
  std::vector<uint32_t> nodes;
  while (const dirent *e = readdir(dir)) {
    uint64_t n;
    if (number_parse(e->d_name, &n) && n < 1u << 20) nodes.push_back(uint32_t(n));
  }
  closedir(dir);
  std::sort(nodes.begin(), nodes.end());
  for (uint32_t n : nodes) {
    const std::string path = root + "/" + std::to_string(n);
    gpu_node g;
    g.node = n;
    uint64_t v = 0;
    {
      std::ifstream f(path + "/gpu_id");
      std::string s;
      if (!(f >> s) || !number_parse(s, &v) || v > UINT32_MAX) {
        *err = path + "/gpu_id: cannot read a number from it";
        return false;
      }
      g.gpu_id = uint32_t(v);
    }
    std::ifstream f(path + "/properties");
    if (!f) {
      *err = path + "/properties: cannot read it";
      return false;
    }
    std::string line;
    while (std::getline(f, line)) {
      std::istringstream words(line);
      std::string key, value;
      if (!(words >> key >> value)) continue;
      if (!number_parse(value, &v)) {
        *err = path + "/properties: '" + key + "' has the value '" + value + "', not a number";
        return false;
      }
      if (key == "gfx_target_version")
        g.gfx_target_version = uint32_t(v);
      else if (key == "drm_render_minor")
        g.drm_render_minor = uint32_t(v);
      else if (key == "simd_count")
        g.simd_count = uint32_t(v);
      else if (key == "local_mem_size")
        g.local_mem_size = v;
      else if (key == "vendor_id")
        g.vendor_id = uint32_t(v);
      else if (key == "device_id")
        g.device_id = uint32_t(v);
    }
    if (g.gpu_id != 0 && g.simd_count != 0) out->push_back(g);
  }
  return true;
}

}  // namespace capgraph::kfd
