#!/usr/bin/env bash
# fuzz.sh [SECONDS] [HARNESS...]: builds the libFuzzer harnesses of tests/fuzz with clang 19
# (ASan+UBSan, in build-fuzz/, the build directory scripts/sanitize.sh uses too), makes fresh seed
# corpora with fuzz_seeds, and runs each harness in turn for SECONDS (default 60) on one core.
# At the end it prints one line per harness: exit status, executions, coverage (libFuzzer's cov:
# edges and ft: features), corpus size and peak RSS. Exit status 1 if any harness found a crash, a
# sanitizer report, a leak, a timeout (-timeout, seconds per input) or an out-of-memory
# (-rss_limit_mb); the reproducer is left in build-fuzz/findings/HARNESS/.
#   scripts/fuzz.sh 30                  # the CI smoke (.ci/run): 30 s each
#   scripts/fuzz.sh 1800                # the campaign of issue 16: 30 minutes each
#   scripts/fuzz.sh 3600 fuzz_capture   # one harness for an hour
# Corpora grow in build-fuzz/corpus/HARNESS/ and are reused by the next run. Environment:
# FUZZ_BUILD (build directory), FUZZ_JOBS (build jobs), FUZZ_TIMEOUT (seconds per input, 10),
# FUZZ_RSS_MB (memory limit, 2048).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
seconds=${1:-60}
shift || true
harnesses=("$@")
((${#harnesses[@]})) || harnesses=(fuzz_onnx fuzz_capture fuzz_capture_rehash fuzz_npy fuzz_gpu_capture)
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
    fuzz_gpu_capture) echo "$seeds/gpu" ;;
  esac
}
dict_of() {
  case $1 in
    fuzz_onnx) echo "$repo/tests/fuzz/onnx.dict" ;;
    fuzz_capture | fuzz_capture_rehash | fuzz_gpu_capture) echo "$repo/tests/fuzz/capture.dict" ;;
    fuzz_npy) echo "$repo/tests/fuzz/npy.dict" ;;
  esac
}

# fuzz_stats LOG: executions, coverage and corpus from libFuzzer's log: its final stat:: lines
# (-print_final_stats) and the last status line ("#N ... cov: C ft: F corp: K/SIZE ... rss: R").
fuzz_stats() {
  awk '
    / cov: / { for (i = 1; i < NF; i++) { if ($i == "cov:") cov = $(i + 1); if ($i == "ft:") ft = $(i + 1)
                                          if ($i == "corp:") corp = $(i + 1) } }
    /^stat::number_of_executed_units:/ { execs = $2 }
    /^stat::average_exec_per_sec:/ { rate = $2 }
    /^stat::peak_rss_mb:/ { rss = $2 }
    END { printf "execs %s exec/s %s cov %s ft %s corpus %s rss_mb %s\n",
                 execs ? execs : "?", rate ? rate : "?", cov ? cov : "?", ft ? ft : "?",
                 corp ? corp : "?", rss ? rss : "?" }' "$1"
}

failed=() summary=()
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
  stats=$(fuzz_stats "$build/$h.log")
  summary+=("$(printf '%-20s %4s %6s %s' "$h" "$rc" "$((SECONDS - t0))" "$stats")")
  echo "fuzz: $h exit $rc in $((SECONDS - t0)) s: $stats"
  if ((rc != 0)); then
    failed+=("$h")
    grep -E "ERROR|SUMMARY|runtime error|==[0-9]+==" "$build/$h.log" | head -10 >&2
    echo "fuzz: $h found something: log $build/$h.log, reproducer in $findings/" >&2
  fi
done
echo "fuzz: done in $((SECONDS - start)) s; $seconds s per harness:"
printf 'fuzz: %-20s %4s %6s %s\n' harness exit secs "executions, coverage (edges, features), corpus (inputs/bytes), peak RSS"
for line in "${summary[@]}"; do echo "fuzz: $line"; done
if ((${#failed[@]})); then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
