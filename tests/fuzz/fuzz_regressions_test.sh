#!/usr/bin/env bash
# fuzz_regressions_test.sh BIN_DIR REGRESSIONS_DIR [FLAG]: makes the seed corpora with fuzz_seeds and
# replays them, and every checked-in regression input, through the harness of its kind. Any crash
# or sanitizer report fails the test. FLAG (-runs=0) is given to libFuzzer builds of the harnesses.
# A GPU-capture regression NAME with a NAME.expect beside it must also be refused at load with a
# message holding that text (the check its finding added still refuses it).
set -euo pipefail
bin=$1 regressions=$2 flag=(${3:-})
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 "$bin/fuzz_seeds" "$seeds"
for kind in onnx capture gpu npy; do
  test -n "$(ls -A "$seeds/$kind")" || { echo "fuzz_seeds wrote no $kind seeds"; exit 1; }
done
"$bin/fuzz_onnx" "${flag[@]}" "$seeds/onnx" "$regressions/onnx"
"$bin/fuzz_capture" "${flag[@]}" "$seeds/capture" "$regressions/capture"
"$bin/fuzz_capture_rehash" "${flag[@]}" "$seeds/capture" "$regressions/capture_rehash"
"$bin/fuzz_npy" "${flag[@]}" "$seeds/npy" "$regressions/npy"
"$bin/fuzz_gpu_capture" "${flag[@]}" "$seeds/gpu" "$regressions/gpu_capture"
for expect in "$regressions"/gpu_capture/*.expect; do
  [[ -e $expect ]] || continue
  input=${expect%.expect}
  said=$(FUZZ_GPU_VERBOSE=1 "$bin/fuzz_gpu_capture" "${flag[@]}" "$input" 2>&1 | grep '^fuzz_gpu_capture: ' | head -1 || true)
  grep -qF -- "$(cat "$expect")" <<<"$said" ||
    { echo "FAIL: $input: expected a refusal with '$(cat "$expect")'; got: $said"; exit 1; }
  echo "refused as expected: ${input##*/}: ${said#fuzz_gpu_capture: }"
done
