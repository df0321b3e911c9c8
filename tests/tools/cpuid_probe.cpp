// cpuid_probe: prints what CPUID tells this process about AVX2 and AVX-512 (the check of
// avx2_only.cpp: tests/tools/avx2_only_test.sh); `cpuid_probe segv` then dereferences null, so
// the test can see that a real fault still kills the process under the preloaded handler;
// `cpuid_probe own-handler` first installs its own SIGSEGV handler (as node does), asks CPUID after
// that and faults: the answer must still be masked and the handler must see the fault (exit 3).
#include <cpuid.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

void on_fault(int) { _exit(3); }

int main(int argc, char **argv) {
  const bool own_handler = argc > 1 && std::strcmp(argv[1], "own-handler") == 0;
  if (own_handler) {
    struct sigaction sa{};
    sa.sa_handler = on_fault;
    sigaction(SIGSEGV, &sa, nullptr);
  }
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid_count(7, 0, a, b, c, d);
  std::printf("avx2 %u avx512f %u avx512vl %u avx512bw %u\n", (b >> 5) & 1, (b >> 16) & 1,
              (b >> 31) & 1, (b >> 30) & 1);
  std::fflush(stdout);
  if (argc > 1 && (own_handler || std::strcmp(argv[1], "segv") == 0)) {
    volatile int *null_pointer = nullptr;
    return *null_pointer;
  }
  return 0;
}
