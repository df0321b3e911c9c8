// What a device that runs kernels' machine code in an emulator (a fake, targets/<family>/fake/)
// counted while a capture ran on it, and the time it ESTIMATES the hardware it stands for would
// take from those counts: what `capgraph profile --device DEV` prints (as text or --json) and
// `capgraph view --device DEV` draws. A device opened with the word ":profile" hands one to
// device_profile_deliver when it closes; a program that wants it (the CLI) sets the sink first,
// else its text goes to stderr. The counters and the cost model are the family's; this shape is
// all the CLI knows, so it names no family. Header only: the shipped runtime neither fills nor
// reads one.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace capgraph::hcq {

struct profile_count {
  std::string name;  // the family's counter name ("alu", "global_load_bytes", ...)
  double value = 0;
};

struct profile_kernel {
  uint32_t kernel = 0;  // index into Capture.kernels
  std::string name;
  uint64_t dispatches = 0;
  std::vector<profile_count> counts;  // summed over its dispatches
  double estimated_us = 0;            // summed over its dispatches
  std::string bound;                  // what limits the estimate most ("issue", "dram"; may be "")
  // The work's time at the hardware's limit, summed over its dispatches, and which limit ("alu",
  // "texel", "dram"); 0 and "" where the family's model has none.
  double roofline_us = 0;
  std::string roofline_limit;
};

// One dispatch or copy, in the order the device ran them (a timeline).
struct profile_dispatch {
  static constexpr uint32_t kCopy = 0xffffffffu;
  uint32_t kernel = kCopy;  // index into Capture.kernels, or kCopy
  double estimated_us = 0;
};

struct device_profile {
  std::string device;    // "fake-adreno"
  std::string hardware;  // what the estimate stands for ("Adreno 630 at 675 MHz")
  std::string model;     // how the estimate is made, one line, and where it is documented
  std::vector<profile_kernel> kernels;       // each kernel that ran, by kernel index
  std::vector<profile_dispatch> dispatches;  // may be empty: the device keeps no timeline
  double estimated_total_us = 0;             // the estimates of every dispatch and copy, added
  std::string text;                          // the family's own table, for a person
};

using device_profile_sink = std::function<void(device_profile &&)>;

inline device_profile_sink &device_profile_sink_slot() {
  static device_profile_sink sink;
  return sink;
}

// Where profiles go from now on (an empty function: back to stderr).
inline void device_profile_sink_set(device_profile_sink sink) {
  device_profile_sink_slot() = std::move(sink);
}

// Called by a device when it closes, if it was opened with ":profile".
inline void device_profile_deliver(device_profile &&p) {
  if (device_profile_sink_slot())
    device_profile_sink_slot()(std::move(p));
  else
    std::fputs(p.text.c_str(), stderr);
}

}  // namespace capgraph::hcq
