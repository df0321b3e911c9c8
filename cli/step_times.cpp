#include "cli/step_times.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "capgraph/capture_generated.h"
#include "capgraph_runtime.h"
#include "error.h"

namespace capgraph {

std::vector<double> step_median_ms(const std::vector<uint8_t> &capture, const std::string &path,
                                   int runs, int threads) {
  capgraph_options opts{threads};
  capgraph_model *m = nullptr;
  char err[1024] = {0};
  if (capgraph_load_memory(capture.data(), capture.size(), &opts, &m, err, sizeof err) !=
      CAPGRAPH_OK) {
    std::string msg = err;  // "<memory>: ..." -> "PATH: ..."
    if (msg.rfind("<memory>: ", 0) == 0) msg = msg.substr(10);
    throw Error(path + ": " + msg);
  }
  struct Free {
    capgraph_model *m;
    ~Free() { capgraph_free(m); }
  } free_at_exit{m};
  std::mt19937 rng(1);
  for (int i = 0; i < capgraph_num_inputs(m); i++) {
    capgraph_tensor t;
    capgraph_input(m, i, &t);
    if (t.dtype == CAPGRAPH_F32)
      for (size_t j = 0; j < t.size_bytes / 4; j++)
        ((float *)t.data)[j] = std::uniform_real_distribution<float>(-1, 1)(rng);
    else
      std::memset(t.data, 0, t.size_bytes);
  }
  if (runs < 1) throw Error("internal: step_median_ms needs at least one run");
  const size_t n = (size_t)capgraph_num_steps(m);
  const size_t in_file = fb::GetCapture(capture.data())->steps()->size();
  if (n != in_file)
    throw Error(path + ": internal: the runtime has " + std::to_string(n) + " steps, the file " +
                std::to_string(in_file));
  for (int i = 0; i < 3; i++)
    if (capgraph_run(m) != CAPGRAPH_OK) throw Error(path + ": replay failed: " + capgraph_error(m));
  std::vector<std::vector<uint64_t>> samples(n);
  std::vector<uint64_t> step_ns(n);
  for (int r = 0; r < runs; r++) {
    if (capgraph_run_timed(m, step_ns.data(), n) != CAPGRAPH_OK)
      throw Error(path + ": replay failed: " + capgraph_error(m));
    for (size_t s = 0; s < n; s++) samples[s].push_back(step_ns[s]);
  }
  std::vector<double> median_ms(n);
  for (size_t s = 0; s < n; s++) {
    std::sort(samples[s].begin(), samples[s].end());
    median_ms[s] = samples[s][samples[s].size() / 2] / 1e6;
  }
  return median_ms;
}

}  // namespace capgraph
