#include "knobs.h"

#include <cstdlib>
#include <mutex>
#include <set>

namespace capgraph {

namespace {

// Code generation reads knobs from its worker threads.
std::mutex knobs_mutex;
std::set<std::string> &knobs_read() {
  static std::set<std::string> names;
  return names;
}

}  // namespace

const char *knob_get(const char *name) {
  {
    std::lock_guard<std::mutex> lock(knobs_mutex);
    knobs_read().insert(name);
  }
  return getenv(name);
}

std::vector<std::string> knobs_set() {
  std::lock_guard<std::mutex> lock(knobs_mutex);
  std::vector<std::string> set;
  for (const std::string &name : knobs_read())
    if (const char *v = getenv(name.c_str())) set.push_back(name + "=" + v);
  return set;
}

}  // namespace capgraph
