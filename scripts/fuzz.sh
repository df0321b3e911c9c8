#!/usr/bin/env bash
# fuzz.sh [SECONDS] [HARNESS...]: builds the libFuzzer harnesses of tests/fuzz with clang 19
# (ASan+UBSan, in build-fuzz/, a build directory of their own), makes fresh seed corpora with
# fuzz_seeds, and runs each harness for SECONDS (default 60) on one core. Exit status 1 if any
# harness found a crash, a sanitizer report, a leak, a timeout (-timeout, seconds per input) or an
# out-of-memory (-rss_limit_mb); the reproducer is left in build-fuzz/findings/HARNESS/.
#   scripts/fuzz.sh              # the CI smoke: 60 s each
#   scripts/fuzz.sh 3600 fuzz_capture   # a campaign: one harness for an hour
# Corpora grow in build-fuzz/corpus/HARNESS/ and are reused by the next run. Environment:
# FUZZ_BUILD (build directory), FUZZ_JOBS (build jobs), FUZZ_TIMEOUT (seconds per input, 10),
# FUZZ_RSS_MB (memory limit, 2048).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
shift || true
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(fuzz_onnx fuzz_capture fuzz_capture_rehash fuzz_npy)
build=${FUZZ_BUILD:-$repo/build-fuzz}
jobs=${FUZZ_JOBS:-$(nproc)}

for tool in clang-19 clang++-19; do
  command -v $tool >/dev/null || { echo "fuzz: error: $tool is needed (apt-get install clang-19 libclang-rt-19-dev)" >&2; exit 1; }
done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
start=$SECONDS
echo "fuzz: building ${harnesses[*]} in $build"
log=$build/build.log
mkdir -p "$build"
if ! { cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAPGRAPH_FUZZ=ON \
         -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 "${launcher[@]}" &&
       cmake --build "$build" -j "$jobs" --target fuzz_seeds "${harnesses[@]}"; } >"$log" 2>&1; then
  grep -E "error" "$log" | head -20 >&2
  echo "fuzz: error: the build failed; the whole log is $log" >&2
  exit 1
fi
echo "fuzz: built in $((SECONDS - start)) s"

seeds=$build/seeds
rm -rf "$seeds"
# fuzz_seeds is instrumented too; its own leaks are not what is being fuzzed.
ASAN_OPTIONS=detect_leaks=0 "$build/tests/fuzz/fuzz_seeds" "$seeds"
seed_dir() {
  case $1 in
    fuzz_onnx) echo "$seeds/onnx" ;;
    fuzz_capture | fuzz_capture_rehash) echo "$seeds/capture" ;;
    fuzz_npy) echo "$seeds/npy" ;;
  esac
}
dict_of() {
  case $1 in
    fuzz_onnx) echo "$repo/tests/fuzz/onnx.dict" ;;
    fuzz_capture | fuzz_capture_rehash) echo "$repo/tests/fuzz/capture.dict" ;;
    fuzz_npy) echo "$repo/tests/fuzz/npy.dict" ;;
  esac
}

failed=()
for h in "${harnesses[@]}"; do
  corpus=$build/corpus/$h findings=$build/findings/$h
  mkdir -p "$corpus" "$findings"
  regressions=$repo/tests/fuzz/regressions/${h#fuzz_}
  echo "fuzz: $h for $seconds s"
  t0=$SECONDS
  set +e
  # The first corpus directory receives what is new; the seeds and regressions are read too.
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/tests/fuzz/$h" "$corpus" "$(seed_dir "$h")" "$regressions" \
    -dict="$(dict_of "$h")" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" \
    -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$findings/" >"$build/$h.log" 2>&1
  rc=$?
  set -e
  stats=$(grep -E "^stat::(number_of_executed_units|peak_rss_mb)|cov: " "$build/$h.log" | tail -3 | tr '\n' ' ')
  echo "fuzz: $h exit $rc in $((SECONDS - t0)) s: $stats"
  if ((rc != 0)); then
    failed+=("$h")
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==" "$build/$h.log" | head -10 >&2
    echo "fuzz: $h found something: log $build/$h.log, reproducer in $findings/" >&2
  fi
done
echo "fuzz: done in $((SECONDS - start)) s"
if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
