// The CLI's commands that live in their own files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "json_quote.h"

namespace capgraph {

namespace fb {
struct Capture;
}
namespace hcq {
struct device_profile;
}

int cmd_inspect(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_view(int argc, char **argv);
// What `inspect --json` prints for the capture read from `path` (cli/README.md, "inspect --json");
// `view` embeds the same document in its page.
std::string inspect_json(const std::string &path, const fb::Capture *c);
// Writes bytes to path through a temporary file and a rename: a failure leaves no half-written
// file.
void file_write_atomic(const std::string &path, const std::vector<uint8_t> &bytes);
// The value after the flag argv[i] (advancing i), or an Error saying the flag needs one.
std::string arg_value(int &i, int argc, char **argv);
// A command-line number in [lo, hi], or an Error naming the flag.
int int_arg(const std::string &flag, const std::string &v, int lo, int hi);
// The bytes of a capture file that passed the runtime's first look (capture_preamble_check: a
// format version this build reads, the flatbuffers layout), or an Error naming the file and the
// problem.
std::vector<uint8_t> capture_read_verified(const std::string &path);
// One replay of the capture at `path` on `device` opened with ":profile" (a fake that emulates
// the machine code), and what it handed over: its counts and estimated times (profile.cpp).
hcq::device_profile device_profile_run(const std::string &path, const std::string &device);
// The kernels of a device profile as a JSON array: kernel, name, dispatches, estimated_us, bound,
// counts (`profile --device --json` and the view's page).
std::string device_profile_kernels_json(const hcq::device_profile &p);
// "x86_64 znver3 (+avx2,+fma,...)" — what `devices` prints for this CPU.
std::string cpu_host_description();

}  // namespace capgraph
