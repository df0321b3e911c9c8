// The CLI's commands that live in their own files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace capgraph {

int cmd_inspect(int argc, char **argv);
int cmd_profile(int argc, char **argv);
// Writes bytes to path through a temporary file and a rename: a failure leaves no half-written file.
void file_write_atomic(const std::string &path, const std::vector<uint8_t> &bytes);
// A command-line number in [lo, hi], or an Error naming the flag.
int int_arg(const std::string &flag, const std::string &v, int lo, int hi);
// The bytes of a capture file that passed the flatbuffers verifier (and has format version 1),
// or an Error naming the file and the problem.
std::vector<uint8_t> capture_read_verified(const std::string &path);
// "x86_64 znver3 (+avx2,+fma,...)" — what `devices` prints for this CPU.
std::string cpu_host_description();

}  // namespace capgraph
