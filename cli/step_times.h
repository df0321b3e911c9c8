// Measured time of each step of a capture: what `profile` prints and `view --profile` draws.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph {

// Loads the capture (bytes of `path`, already verified), fills its inputs with seeded random values
// (kernel time does not depend on them), replays it 3 times to warm up, then `runs` timed replays;
// returns each step's median in milliseconds, one per step of the capture (checked). Errors name
// `path`.
std::vector<double> step_median_ms(const std::vector<uint8_t> &capture, const std::string &path,
                                   int runs, int threads);

}  // namespace capgraph
