// replay_rss MODEL.cap [--threads T] [--runs N] [--input NAME=FILE.npy]...
// Peak resident memory of a process that loads a capture and replays it N times (default 20), set
// against issue 3's budget: weights + arena + 16 MiB. Prints one JSON line:
//   peak_rss_kib    VmHWM from /proc/self/status (ru_maxrss where /proc is absent): the whole
//                   process, this tool's code and libc included
//   baseline_kib    VmHWM before loading (what the process costs with no model at all)
//   rss_file_kib, rss_anon_kib   RssFile / RssAnon after the runs: file pages (the mapped capture,
//                   the binary, libraries) and anonymous ones (arena, heap, stacks, linked code)
//   weights_bytes, arena_bytes, budget_kib = (weights + arena) / 1024 + 16384
// Exit status 0 whatever the figures: judging them is the caller's business.
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capture_model.h"
#include "model_inputs.h"

using namespace capgraph;

namespace {

// A "Name:   123 kB" line of /proc/self/status, in KiB; -1 if absent.
long status_kib(const char *name) {
  FILE *f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long v = -1;
  const size_t n = std::strlen(name);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, name, n) == 0 && line[n] == ':') {
      v = std::strtol(line + n + 1, nullptr, 10);
      break;
    }
  std::fclose(f);
  return v;
}

long peak_kib() {
  const long hwm = status_kib("VmHWM");
  if (hwm >= 0) return hwm;
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;  // KiB on Linux
}

}  // namespace

int main(int argc, char **argv) {
  std::string path;
  int threads = 1, runs = 20;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : nullptr;
    if ((a == "--threads" || a == "--runs") && value) {
      char *end = nullptr;
      const long v = std::strtol(value, &end, 10);
      if (!*value || *end || v < 1 || v > (a == "--threads" ? 256 : 10000000)) {
        std::fprintf(stderr, "replay_rss: %s: bad value '%s'\n", a.c_str(), value);
        return 2;
      }
      (a == "--threads" ? threads : runs) = int(v);
      ++i;
    } else if (a == "--input" && value) {
      inputs.push_back(value);
      ++i;
    } else if (path.empty() && !a.empty() && a[0] != '-') {
      path = a;
    } else {
      std::fprintf(
          stderr,
          "usage: replay_rss MODEL.cap [--threads T] [--runs N] [--input NAME=FILE.npy]...\n");
      return 2;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "replay_rss: no capture given\n");
    return 2;
  }
  const long baseline = peak_kib();
  capgraph_options opts{threads};
  capgraph_model *m = nullptr;
  char err[1024];
  if (capgraph_load(path.c_str(), &opts, &m, err, sizeof err) != CAPGRAPH_OK) {
    std::fprintf(stderr, "replay_rss: %s\n", err);
    return 1;
  }
  std::string why;
  if (!model_inputs_fill(m, inputs, &why)) {
    std::fprintf(stderr, "replay_rss: %s: %s\n", path.c_str(), why.c_str());
    capgraph_free(m);
    return 1;
  }
  for (int i = 0; i < runs; ++i)
    if (capgraph_run(m) != CAPGRAPH_OK) {
      std::fprintf(stderr, "replay_rss: %s\n", capgraph_error(m));
      capgraph_free(m);
      return 1;
    }
  // The capture was verified at load, so its weights table can be read as is.
  const fb::Capture *c = fb::GetCapture(m->file.data());
  uint64_t weights = 0;
  if (c->weights())
    for (const fb::Weight *w : *c->weights()) weights += w->data()->size();
  const uint64_t arena = m->arena_size;
  std::printf(
      "{\"model\": \"%s\", \"threads\": %d, \"runs\": %d, \"peak_rss_kib\": %ld, "
      "\"baseline_kib\": %ld, \"rss_file_kib\": %ld, \"rss_anon_kib\": %ld, "
      "\"weights_bytes\": %llu, \"arena_bytes\": %llu, \"budget_kib\": %llu}\n",
      path.c_str(), threads, runs, peak_kib(), baseline, status_kib("RssFile"),
      status_kib("RssAnon"), (unsigned long long)weights, (unsigned long long)arena,
      (unsigned long long)((weights + arena) / 1024 + 16384));
  capgraph_free(m);
  return 0;
}
