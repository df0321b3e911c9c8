// The CLI's commands that live in their own files.
#pragma once
#include <string>

namespace capgraph {

int cmd_inspect(int argc, char **argv);
// "x86_64 znver3 (+avx2,+fma,...)" — what `devices` prints for this CPU.
std::string cpu_host_description();

}  // namespace capgraph
