// Mesa's NIR validator as the Adreno code generator's check, with the shape of the bug it caught:
// the staging step of the tiled kernels (adreno_nir_emit.cpp) once put a phi's else value after
// the if and the phi behind other instructions. Release ir3 does not validate its input; it
// compiled that NIR with g++'s argument order and crashed in ir3_calc_liveness_for with clang's.
//
// Only a validating Mesa (scripts/mesa_ir3.sh with CAPGRAPH_MESA_VALIDATE=1, the sanitizer job's)
// has the validator compiled in; elsewhere these cases say so and skip. With it, every kernel of
// every test (adreno_codegen_test, the Adreno end-to-end tests) goes through the validator too.
// Compiled only with Mesa, with Mesa's definitions (compiler/CMakeLists.txt).
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "adreno_codegen.h"
#include "nir.h"
#include "nir_builder.h"

using namespace capgraph;

namespace {

bool validator_present() {
  if (adreno_nir_validated()) return true;
  MESSAGE(
      "SKIPPED: the linked Mesa does not validate NIR (release variant; CAPGRAPH_MESA_VALIDATE=1 "
      "scripts/mesa_ir3.sh "
      "builds the validating one, as scripts/sanitize.sh does)");
  return false;
}

// if (local_id.x < 8) v = 1.0 else v = 0.0; then a shared-memory address, as the staging step
// has them. `well_formed`: the zero in the else block and the phi first after the if; otherwise
// the old order (zero after the if, the address before the phi).
nir_shader *staging_phi_build(bool well_formed) {
  static const nir_shader_compiler_options options{};
  nir_builder b = nir_builder_init_simple_shader(MESA_SHADER_COMPUTE, &options, "staging_phi");
  nir_def *id = nir_channel(&b, nir_load_local_invocation_id(&b), 0);
  nir_if *nif = nir_push_if(&b, nir_ult_imm(&b, id, 8));
  nir_def *v = nir_imm_float(&b, 1);
  nir_push_else(&b, nif);
  nir_def *zero = well_formed ? nir_imm_float(&b, 0) : nullptr;
  nir_pop_if(&b, nif);
  nir_def *at = nullptr;
  if (!well_formed) {
    at = nir_ishl_imm(&b, id, 2);
    zero = nir_imm_float(&b, 0);
  }
  nir_def *phi = nir_if_phi(&b, v, zero);
  if (well_formed) at = nir_ishl_imm(&b, id, 2);
  nir_fadd(&b, phi, nir_u2f32(&b, at));  // both used, as the store uses them
  return b.shader;
}

struct ChildResult {
  bool finished = false;
  int status = 0;
  std::string err;
};

// Runs the validator over the old staging phi in a child process (NIR's validator aborts the
// process it fails in), collecting its stderr; bounded: a child that takes over 30 s is killed.
ChildResult malformed_validate_in_child() {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    signal(SIGABRT, SIG_DFL);  // die of the abort, not through doctest's crash report
    nir_shader *s = staging_phi_build(false);
    nir_validate_shader(s, "adreno_nir_validate_test");
    nir_validate_ssa_dominance(s, "adreno_nir_validate_test");
    _exit(0);  // the validator accepted it: the parent fails the test
  }
  close(fds[1]);
  ChildResult r;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  char buf[4096];
  for (;;) {
    int left = (int)std::chrono::duration_cast<std::chrono::milliseconds>(
                   deadline - std::chrono::steady_clock::now())
                   .count();
    if (left <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, left) <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n <= 0) break;  // EOF: the child is gone
    r.err.append(buf, (size_t)n);
  }
  close(fds[0]);
  while (std::chrono::steady_clock::now() < deadline) {
    pid_t w = waitpid(pid, &r.status, WNOHANG);
    if (w == pid) {
      r.finished = true;
      return r;
    }
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &r.status, 0);
  return r;
}

}  // namespace

TEST_CASE("Mesa's NIR validator accepts the staging phi as the emitter now builds it") {
  if (!validator_present()) return;
  nir_shader *s = staging_phi_build(true);
  nir_validate_shader(s, "adreno_nir_validate_test");  // aborts the test on an error
  nir_validate_ssa_dominance(s, "adreno_nir_validate_test");
  ralloc_free(s);
  CHECK(true);
}

TEST_CASE("Mesa's NIR validator refuses the staging phi the emitter used to build") {
  if (!validator_present()) return;
  ChildResult r = malformed_validate_in_child();
  INFO("validator output: " << r.err.substr(0, 2000));
  REQUIRE(r.finished);
  CHECK(WIFSIGNALED(r.status));
  CHECK(WTERMSIG(r.status) == SIGABRT);
  CHECK(r.err.find("NIR validation failed") != std::string::npos);
}
