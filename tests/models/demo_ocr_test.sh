#!/usr/bin/env bash
# demo_ocr_test.sh BUILD_DIR: the quick start's main job end to end. Compiles PaddleOCR det and
# rec, renders two lines of text, and checks that capgraph-ocr finds two regions and reads exactly
# the rendered words back.
set -uo pipefail
build=$1
assets=${CAPGRAPH_TEST_DEPS:-$build/deps}/ocr-models/package/assets
work=$(mktemp -d /tmp/capgraph-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$build/cli/capgraph" compile "$assets/ch_PP-OCRv4_det_infer.onnx" -o "$work/det.cap" --input-shape x=1x3x128x352 || exit 1
"$build/cli/capgraph" compile "$assets/ch_PP-OCRv4_rec_infer.onnx" -o "$work/rec.cap" --input-shape x=1x3x48x320 || exit 1
out=$("$build/examples/capgraph-ocr" --det "$work/det.cap" --rec "$work/rec.cap" --keys "$assets/ppocr_keys_v1.txt" --text "CAPGRAPH 2026|RUNS ON CPU") || exit 1
echo "$out"
fail=0
grep -q '2 text region(s)' <<<"$out" || { echo "FAIL: expected 2 text regions"; fail=1; }
grep -q 'text 1 .*"CAPGRAPH 2026"' <<<"$out" || { echo "FAIL: line 1 not read as CAPGRAPH 2026"; fail=1; }
grep -q 'text 2 .*"RUNS ON CPU"' <<<"$out" || { echo "FAIL: line 2 not read as RUNS ON CPU"; fail=1; }
((fail == 0)) && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
