// Device names -> transports. "amd[:N]" is the KFD transport (drivers/kfd); programs add more
// (the CLI and tests add "fake-amd").
#include <cstring>
#include <mutex>

#include "kfd_transport.h"
#include "transport.h"

namespace capgraph::hcq {
namespace {

struct entry {
  std::string prefix;
  transport_open_fn open;
};

std::mutex g_lock;
std::vector<entry> &registry() {
  static std::vector<entry> r{{"amd", &kfd::kfd_open}};
  return r;
}

// "fake-amd" matches "fake-amd" and "fake-amd:gfx1200", not "fake-amdx".
bool matches(const std::string &prefix, const char *device) {
  const size_t n = prefix.size();
  return strncmp(device, prefix.c_str(), n) == 0 && (device[n] == 0 || device[n] == ':');
}

}  // namespace

void transport_register(const char *prefix, transport_open_fn open) {
  std::lock_guard<std::mutex> hold(g_lock);
  for (entry &e : registry())
    if (e.prefix == prefix) {
      e.open = open;
      return;
    }
  registry().push_back({prefix, open});
}

capgraph_status transport_open(const char *device, std::unique_ptr<transport> *out,
                               std::string *err) {
  transport_open_fn open = nullptr;
  std::string known = "cpu";
  {
    std::lock_guard<std::mutex> hold(g_lock);
    for (const entry &e : registry()) {
      known += ", " + e.prefix;
      if (matches(e.prefix, device)) open = e.open;
    }
  }
  if (!open) {
    *err = std::string("unknown device '") + device + "' (known: " + known + ")";
    return CAPGRAPH_ERR_ARGUMENT;
  }
  return open(device, out, err);
}

}  // namespace capgraph::hcq
