#!/usr/bin/env bash
# sanitize.sh [CTEST_ARGS...]: the sanitizer job. Builds the whole tree with clang 19 under
# ASan+UBSan (and libFuzzer's coverage instrumentation: the same build directory, build-fuzz/, is
# then the one scripts/fuzz.sh runs, so CI compiles the tree once for both), then runs the whole
# ctest suite there. Also the check that the tree builds with clang as well as with g++. The test
# dependencies are taken from build/deps (scripts/test.sh fetches them) unless
# CAPGRAPH_TEST_DEPS says otherwise.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${FUZZ_BUILD:-$repo/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}
deps=${CAPGRAPH_TEST_DEPS:-$repo/build/deps}
for tool in clang-19 clang++-19; do
  command -v $tool >/dev/null || { echo "sanitize: error: $tool is needed (apt-get install clang-19 libclang-rt-19-dev)" >&2; exit 1; }
done
# The Adreno compiler links Mesa's ir3: here the validating variant, built by scripts/mesa_ir3.sh
# into this build directory (gcc, not instrumented; asserts and nir_validate_shader compiled in),
# so the Adreno tests run sanitized and every kernel's NIR is validated before ir3 sees it (release
# ir3 checks nothing: malformed NIR from our emitter once crashed it only in this clang build).
# CAPGRAPH_SANITIZE_MESA=0 leaves Mesa out (the Adreno end-to-end tests then skip and say so).
mesa=()
if [[ ${CAPGRAPH_SANITIZE_MESA:-1} != 0 ]]; then
  t_mesa=$SECONDS
  CAPGRAPH_MESA_VALIDATE=1 "$repo/scripts/mesa_ir3.sh" "$build" ||
    { echo "sanitize: error: the validating Mesa build failed (CAPGRAPH_SANITIZE_MESA=0 goes on without Mesa)" >&2; exit 1; }
  echo "sanitize: validating Mesa ready in $((SECONDS - t_mesa)) s"
  mesa=(-DCAPGRAPH_MESA_DIR="$build/mesa" -DCAPGRAPH_ADRENO=ON)
else
  mesa=(-DCAPGRAPH_ADRENO=OFF)
fi
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# This build has debug info, for which ccache hashes the working directory by default: a clone
# at another path (every CI run) would never hit the cache. Paths in its debug info are not used.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
start=$SECONDS
mkdir -p "$build"
log=$build/build.log
echo "sanitize: building in $build with clang-19, ASan+UBSan ($jobs jobs; log in $log)"
# The aarch64 cross-build runs under qemu-user, where ASan's shadow memory does not work: the
# release build (scripts/test.sh) tests it.
if ! { cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAPGRAPH_FUZZ=ON \
         -DCAPGRAPH_AARCH64_TEST=OFF -DCAPGRAPH_TEST_DEPS="$deps" \
         -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "${mesa[@]}" "${launcher[@]}" &&
       cmake --build "$build" -j "$jobs"; } >"$log" 2>&1; then
  grep -E "error" "$log" | head -20 >&2
  echo "sanitize: error: the build failed; the whole log is $log" >&2
  exit 1
fi
echo "sanitize: built in $((SECONDS - start)) s"
t0=$SECONDS
cd "$build"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Without arguments: every test. targets_amd_e2e_zoo replays only a subset of the zoo here
# (targets/amd/CMakeLists.txt: the whole zoo through the RDNA3 emulator does not finish within its
# 900 s limit under ASan on 2 cores; the release job runs all of it). Pass CTEST_ARGS to choose
# otherwise (e.g. -E '_models_compile$' leaves out the tests that only compile the zoo for GPUs,
# amdgpu_, nvptx_ and adreno_models_compile: mostly time in the uninstrumented LLVM back ends).
# Without arguments the two Adreno tests that compile the whole zoo through ir3 are left out here
# (targets_adreno_e2e_zoo, adreno_models_compile: ~460 s of ASan test time on 2 cores, mostly in
# the uninstrumented LLVM and ir3 back ends; the release job runs both); every other Adreno test
# runs, its NIR through the validating Mesa, the ir3 emulator on small shapes
# (targets_adreno_e2e_small, ir3_emu_test, ir3_emu_kernels_test): targets_adreno_e2e_zoo is also
# the heavy emulator test (every zoo model's machine code at full shapes, ~460 s in the release
# build alone); keep such tests out of this run. The op-conformance rows of the GPU families
# (op_conformance_amd, _nv, _adreno: ~370 s of release test time, several times that under ASan,
# mostly in the back ends and the emulators) are left to the release job too; the CPU row
# (op_conformance_test) and the null family's (op_conformance_null: the vendor-neutral HCQ core)
# run here, and each family's runtime half runs under ASan in its targets_<family>_e2e_small.
# targets_nv_e2e_zoo executes every zoo model's PTX in the interpreter (~300 s in the release build
# on 2 cores, PP-OCRv4 det alone ~115 s): release job only, as the Adreno zoo.
(($#)) || set -- -E '^(targets_(adreno|nv)_e2e_zoo|adreno_models_compile|op_conformance_(amd|nv|adreno))$'
status=0
ctest --output-on-failure -j "$jobs" "$@" || status=$?
echo "sanitize: ctest took $((SECONDS - t0)) s (exit $status)"
exit $status
