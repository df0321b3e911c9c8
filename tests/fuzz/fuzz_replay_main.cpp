// Without libFuzzer (any compiler): runs a harness's LLVMFuzzerTestOneInput once on each file
// named, or on every file under each directory named. The regression corpora and the seeds are
// replayed this way by ctest (fuzz_regressions), in the normal and the sanitizer builds.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

void file_run(const std::filesystem::path &p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char **argv) {
  size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path p = argv[i];
    if (std::filesystem::is_directory(p)) {
      for (const auto &e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file()) file_run(e.path()), ++files;
    } else if (std::filesystem::is_regular_file(p)) {
      file_run(p), ++files;
    } else {
      fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  printf("%s: %zu inputs ran\n", argv[0], files);
  return 0;
}
