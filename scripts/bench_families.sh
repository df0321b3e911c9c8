#!/usr/bin/env bash
# bench_families.sh [THREADS...]: the wider benchmark set of issue 17 beside ONNX Runtime. Writes
# the family models (tests/tools/family_gen: grouped convolutions, channel shuffle, MobileNetV3,
# Inception, DenseNet, the comma-shaped model with two uint8 camera inputs, a temporal input and heads of 4955 and 528)
# at their benchmark size into a scratch folder and runs scripts/bench.sh on it (same tables,
# same alternation; TARGET, RUNS and BUILD as there).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$repo/build}
gen=$build/tests/tools/family_gen
[[ -x $gen ]] || { echo "bench_families: $gen is missing: build first (scripts/setup.sh)" >&2; exit 1; }
work=$(mktemp -d /tmp/capgraph-families.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$gen" "$work" bench
"$repo/scripts/bench.sh" "$work" "$@"
