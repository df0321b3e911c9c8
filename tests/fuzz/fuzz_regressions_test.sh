#!/usr/bin/env bash
# fuzz_regressions_test.sh BIN_DIR REGRESSIONS_DIR [FLAG]: makes the seed corpora with fuzz_seeds and
# replays them, and every checked-in regression input, through the harness of its kind. Any crash
# or sanitizer report fails the test. FLAG (-runs=0) is given to libFuzzer builds of the harnesses.
set -euo pipefail
bin=$1 regressions=$2 flag=(${3:-})
seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0 "$bin/fuzz_seeds" "$seeds"
for kind in onnx capture npy; do
  test -n "$(ls -A "$seeds/$kind")" || { echo "fuzz_seeds wrote no $kind seeds"; exit 1; }
done
"$bin/fuzz_onnx" "${flag[@]}" "$seeds/onnx" "$regressions/onnx"
"$bin/fuzz_capture" "${flag[@]}" "$seeds/capture" "$regressions/capture"
"$bin/fuzz_capture_rehash" "${flag[@]}" "$seeds/capture" "$regressions/capture_rehash"
"$bin/fuzz_npy" "${flag[@]}" "$seeds/npy" "$regressions/npy"
