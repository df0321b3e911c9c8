// avx2_only: an LD_PRELOAD library that makes this process see an AVX2-only x86-64 CPU, so the
// AVX2 paths of capgraph and of ONNX Runtime can be timed side by side on an AVX-512 machine
// (issue 17: "no model slower on an AVX2-only target"; scripts/bench.sh AVX2_ONLY=1).
//
// How: Linux's CPUID faulting (arch_prctl(ARCH_SET_CPUID, 0), x86 since Linux 4.12, needs the
// `cpuid_fault` flag in /proc/cpuinfo; KVM emulates it for guests) makes every CPUID instruction
// of the process raise SIGSEGV. The handler runs the real CPUID (faulting off for that one
// instruction), clears the AVX-512, AMX and AVX-VNNI bits, writes the result into the trapped
// context's registers and steps over the 2-byte instruction. Software that picks its kernels by
// CPUID (ONNX Runtime's MLAS, LLVM's host detection, V8) then picks AVX2 ones; nothing prevents
// a program from executing AVX-512 instructions anyway, so this is a feature mask, not an
// emulator. glibc reads CPUID in ld.so before this library loads: mask its string functions with
// GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,... (the script does).
// Sources: Linux Documentation/arch/x86 (arch_prctl ARCH_GET_CPUID/ARCH_SET_CPUID, 0x1011/0x1012,
// "the setting is reset on execve"); Intel SDM vol. 2A CPUID leaf 07H (EBX bits 16 AVX512F,
// 17 DQ, 21 IFMA, 26-28 PF/ER/CD, 30 BW, 31 VL; ECX 1 VBMI, 6 VBMI2, 11 VNNI, 12 BITALG,
// 14 VPOPCNTDQ; EDX 2-3 4VNNIW/4FMAPS, 8 VP2INTERSECT, 22/24/25 AMX, 23 FP16; subleaf 1 EAX 4
// AVX-VNNI, 5 AVX512_BF16).
// A program that installs its own SIGSEGV handler (node does, for WebAssembly traps, and does not
// pass other faults on) would lose the CPUID trap: sigaction() and signal() for SIGSEGV are
// interposed, so the program's handler is kept beside ours and called for every fault that is not
// a CPUID instruction, and a default action still kills the process.
// AVX2_ONLY_VERBOSE=1 prints the number of CPUID instructions trapped at exit.
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kArchGetCpuid = 0x1011;
constexpr int kArchSetCpuid = 0x1012;
volatile sig_atomic_t trapped = 0;
bool masking = false;
struct sigaction program_action{};  // what the program believes is installed for SIGSEGV

using sigaction_fn = int (*)(int, const struct sigaction *, struct sigaction *);
sigaction_fn real_sigaction() {
  static auto fn = reinterpret_cast<sigaction_fn>(dlsym(RTLD_NEXT, "sigaction"));
  return fn;
}

void cpuid_real(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  asm volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(subleaf));
}

void cpuid_mask(uint32_t leaf, uint32_t subleaf, uint32_t r[4]) {
  if (leaf != 7) return;
  if (subleaf == 0) {
    r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
              (1u << 30) | (1u << 31));
    r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
    r[3] &=
        ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) | (1u << 25));
  } else if (subleaf == 1) {
    r[0] &= ~((1u << 4) | (1u << 5));
  }
}

void on_segv(int sig, siginfo_t *info, void *context) {
  auto *uc = static_cast<ucontext_t *>(context);
  auto *rip = reinterpret_cast<const uint8_t *>(uc->uc_mcontext.gregs[REG_RIP]);
  // A CPUID fault is a kernel-sent SIGSEGV at a CPUID instruction (0F A2).
  if (info->si_code != SI_KERNEL || rip[0] != 0x0f || rip[1] != 0xa2) {
    if (program_action.sa_flags & SA_SIGINFO) {
      program_action.sa_sigaction(sig, info, context);
    } else if (program_action.sa_handler == SIG_IGN && info->si_code <= 0) {
      // sent by kill/raise and ignored by the program: nothing happens, as without us
    } else if (program_action.sa_handler != SIG_IGN && program_action.sa_handler != SIG_DFL) {
      program_action.sa_handler(sig);
    } else {
      struct sigaction dfl{};  // the default action: die by SIGSEGV, as without us
      dfl.sa_handler = SIG_DFL;
      real_sigaction()(SIGSEGV, &dfl, nullptr);
      raise(SIGSEGV);
    }
    return;
  }
  const auto leaf = static_cast<uint32_t>(uc->uc_mcontext.gregs[REG_RAX]);
  const auto subleaf = static_cast<uint32_t>(uc->uc_mcontext.gregs[REG_RCX]);
  uint32_t r[4];
  syscall(SYS_arch_prctl, kArchSetCpuid, 1);
  cpuid_real(leaf, subleaf, r);
  syscall(SYS_arch_prctl, kArchSetCpuid, 0);
  cpuid_mask(leaf, subleaf, r);
  uc->uc_mcontext.gregs[REG_RAX] = r[0];  // CPUID zero-extends into the 64-bit registers
  uc->uc_mcontext.gregs[REG_RBX] = r[1];
  uc->uc_mcontext.gregs[REG_RCX] = r[2];
  uc->uc_mcontext.gregs[REG_RDX] = r[3];
  uc->uc_mcontext.gregs[REG_RIP] += 2;
  trapped = trapped + 1;
}

void report() {
  if (const char *v = getenv("AVX2_ONLY_VERBOSE"); v && *v == '1')
    fprintf(stderr, "avx2_only: %d CPUID instruction(s) trapped and masked in pid %d\n",
            static_cast<int>(trapped), getpid());
}

__attribute__((constructor)) void avx2_only_start() {
  if (syscall(SYS_arch_prctl, kArchGetCpuid, 0) < 0) {
    fprintf(stderr,
            "avx2_only: this kernel or CPU has no CPUID faulting (arch_prctl ARCH_GET_CPUID: %s); "
            "refusing to run unmasked\n",
            strerror(errno));
    _exit(97);
  }
  struct sigaction sa{};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  if (!real_sigaction() || real_sigaction()(SIGSEGV, &sa, &program_action) != 0 ||
      syscall(SYS_arch_prctl, kArchSetCpuid, 0) != 0) {
    fprintf(stderr, "avx2_only: cannot turn CPUID faulting on (%s); refusing to run unmasked\n",
            strerror(errno));
    _exit(97);
  }
  masking = true;
  atexit(report);
}

}  // namespace

// The interposed entry points: SIGSEGV stays ours; the program's handler is kept and chained.
extern "C" int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (sig != SIGSEGV || !masking) return real_sigaction()(sig, act, old);
  if (old) *old = program_action;
  if (act) program_action = *act;
  return 0;
}

extern "C" sighandler_t signal(int sig, sighandler_t handler) {
  struct sigaction act{}, old{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}
