#!/usr/bin/env bash
# c_api_test.sh BUILD_DIR: a C99 program (examples/c) loads a real capture (PaddleOCR cls) through
# libcapgraph_runtime.so and replays it; the classifier's softmax output must sum to 1.
set -uo pipefail
build=$1
assets=${CAPGRAPH_TEST_DEPS:-$build/deps}/ocr-models/package/assets
work=$(mktemp -d /tmp/capgraph-capi.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/cli/capgraph" compile "$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" -o "$work/cls.cap" --input-shape x=1x3x48x192 >/dev/null || exit 1
out=$("$build/examples/capgraph-c-example" "$work/cls.cap") || { echo "FAIL: the C example failed"; exit 1; }
echo "$out"
sum=$(sed -n 's/^output .* 1x2 sum \([0-9.]*\) .*/\1/p' <<<"$out")
[[ -n $sum ]] && awk -v s="$sum" 'BEGIN { exit !(s > 0.999 && s < 1.001) }' || { echo "FAIL: expected a 1x2 softmax summing to 1, got '$sum'"; echo "0 passed, 1 failed"; exit 1; }
echo "1 passed, 0 failed"
