// libFuzzer: ONNX bytes through the whole compiler front end: the protobuf reader, import, shape
// inference, constant folding, lowering, fusion, layouts and scheduling (compile_schedule), but no
// LLVM code generation (slow, and not where hostile bytes are parsed). A model may be refused with
// capgraph::Error; anything else (a crash, a sanitizer report, a leak, an input that runs past
// -timeout or past -rss_limit_mb) is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "compile.h"
#include "error.h"

namespace {

// compile_schedule reads a path: the bytes go to one in-memory file, named through /proc.
int model_fd() {
  static const int fd = [] {
    const int f = memfd_create("fuzz_onnx", 0);
    if (f < 0) {
      perror("memfd_create");
      abort();
    }
    return f;
  }();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const int fd = model_fd();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size)) abort();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  capgraph::CompileOptions opt;
  try {
    capgraph::compile_schedule(path, opt, nullptr);
  } catch (const capgraph::Error &) {  // refused with a message: the expected outcome
  } catch (const std::bad_alloc &) {   // the compiler's own limits say no (CLI: exit 1)
  }
  return 0;
}
