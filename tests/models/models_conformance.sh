#!/usr/bin/env bash
# models_conformance.sh MODE BUILD_DIR
#   MODE ocr:     PaddleOCR det/cls/rec (pretrained, from the npm package in $CAPGRAPH_TEST_DEPS) on
#                 seeded random inputs, against ONNX Runtime run on the same inputs.
#   MODE zoo:     every model in ../shared/zoo (when present) on its committed input, against its
#                 committed ONNX Runtime output. Exit 77 (skipped) without a zoo.
#   MODE families: the wider benchmark set of tests/tools/family_gen (grouped convolutions, channel
#                 shuffle, MobileNetV3, Inception, DenseNet, the comma-shaped model with uint8
#                 inputs), at its small "test" size, against ONNX Runtime on the same inputs;
#                 regnet_like, shufflenet_like and comma_like also as cpu-aarch64 captures under
#                 qemu-aarch64 when it and the aarch64 capgraph-run are there.
#   MODE aarch64: PaddleOCR cls and rec compiled with --target cpu-aarch64 and replayed by the
#                 aarch64 build of capgraph-run under qemu-aarch64, against ONNX Runtime.
# Tolerance everywhere: max |a-b| <= 1e-3 * max |ref| + 1e-5 per output (tests/tools/npy_compare).
set -uo pipefail
mode=$1; build=$2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
deps=${CAPGRAPH_TEST_DEPS:-$build/deps}
export ORT_DIR=${ORT_DIR:-$deps/ort}
capgraph=$build/cli/capgraph
work=$(mktemp -d /tmp/capgraph-models.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0; passed=0

# check NAME ONNX SHAPE [TARGET RUNNER...]: compile, replay, compare with ONNX Runtime.
check() {
  local name=$1 onnx=$2 shape=$3 target=${4:-cpu}; shift 4 2>/dev/null || shift $#
  local runner=("$@")
  local d=$work/$name; mkdir -p "$d/ort" "$d/cg"
  "$build/tests/tools/npy_random" "$d/in.npy" "$shape" 7 || { echo "FAIL $name: npy_random"; failures=$((failures+1)); return; }
  node "$repo/tests/ort/ort_run.mjs" "$onnx" "$d/ort" "x=$d/in.npy" >/dev/null || { echo "FAIL $name: ONNX Runtime could not run it"; failures=$((failures+1)); return; }
  "$capgraph" compile "$onnx" -o "$d/m.cap" --input-shape "x=$shape" --target "$target" | sed 's/^/  /' || { echo "FAIL $name: compile"; failures=$((failures+1)); return; }
  if ((${#runner[@]})); then
    "${runner[@]}" "$d/m.cap" --input "x=$d/in.npy" --output-dir "$d/cg" | sed 's/^/  /' || { echo "FAIL $name: replay"; failures=$((failures+1)); return; }
  else
    "$capgraph" run "$d/m.cap" --input "x=$d/in.npy" --output-dir "$d/cg" | sed 's/^/  /' || { echo "FAIL $name: replay"; failures=$((failures+1)); return; }
  fi
  local ok=1
  for ref in "$d"/ort/*.npy; do
    "$build/tests/tools/npy_compare" "$d/cg/$(basename "$ref")" "$ref" | sed 's/^/  /'
    [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=0
  done
  if ((ok)); then echo "PASS $name"; passed=$((passed+1)); else echo "FAIL $name"; failures=$((failures+1)); fi
}

assets=$deps/ocr-models/package/assets
case $mode in
  ocr|aarch64)
    [[ -f $assets/ch_PP-OCRv4_det_infer.onnx ]] || { echo "FAIL: PaddleOCR models missing in $assets (run scripts/fetch_test_deps.sh)"; exit 1; }
    command -v node >/dev/null || { echo "FAIL: node is needed to run ONNX Runtime"; exit 1; }
    ;;
esac
case $mode in
  ocr)
    check det "$assets/ch_PP-OCRv4_det_infer.onnx" 1x3x320x320
    check cls "$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" 1x3x48x192
    check rec "$assets/ch_PP-OCRv4_rec_infer.onnx" 1x3x48x320
    ;;
  aarch64)
    runner=$build/runtime/aarch64/capgraph-run
    command -v qemu-aarch64 >/dev/null || { echo "SKIPPED: qemu-aarch64 not found (Debian package qemu-user)"; exit 77; }
    [[ -x $runner ]] || { echo "SKIPPED: no aarch64 capgraph-run at $runner (needs g++-aarch64-linux-gnu)"; exit 77; }
    check cls_aarch64 "$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" 1x3x48x192 cpu-aarch64 qemu-aarch64 -L /usr/aarch64-linux-gnu "$runner"
    check rec_aarch64 "$assets/ch_PP-OCRv4_rec_infer.onnx" 1x3x48x320 cpu-aarch64 qemu-aarch64 -L /usr/aarch64-linux-gnu "$runner"
    check det_aarch64 "$assets/ch_PP-OCRv4_det_infer.onnx" 1x3x96x128 cpu-aarch64 qemu-aarch64 -L /usr/aarch64-linux-gnu "$runner"
    ;;
  zoo)
    zoo=$repo/../shared/zoo
    [[ -d $zoo ]] || { echo "SKIPPED: no model zoo at $zoo (it is optional)"; exit 77; }
    for dir in "$zoo"/*/; do
      name=$(basename "$dir"); d=$work/$name; mkdir -p "$d/cg"
      # meta.json lists inputs/outputs with names, files and dims (see the zoo's README)
      readarray -t ins < <(node -e "const m=require('$dir/meta.json'); for (const i of m.inputs) console.log(i.name+'='+'$dir'+i.file+' '+i.name+'='+i.dims.join('x'))")
      readarray -t outs < <(node -e "const m=require('$dir/meta.json'); for (const o of m.outputs) console.log(o.name.replace(/[^A-Za-z0-9._-]/g,'_')+' '+o.file)")
      args=(); shapes=()
      for l in "${ins[@]}"; do args+=(--input "${l%% *}"); shapes+=(--input-shape "${l##* }"); done
      start=$(date +%s.%N)
      if ! "$capgraph" compile "$dir/model.onnx" -o "$d/m.cap" "${shapes[@]}" | sed 's/^/  /'; then echo "FAIL $name: compile"; failures=$((failures+1)); continue; fi
      if ! "$capgraph" run "$d/m.cap" "${args[@]}" --output-dir "$d/cg" | sed 's/^/  /'; then echo "FAIL $name: replay"; failures=$((failures+1)); continue; fi
      ok=1
      for l in "${outs[@]}"; do
        "$build/tests/tools/npy_compare" "$d/cg/${l%% *}.npy" "$dir/${l##* }" | sed 's/^/  /'
        [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=0
      done
      if ((ok)); then echo "PASS $name"; passed=$((passed+1)); else echo "FAIL $name"; failures=$((failures+1)); fi
    done
    ;;
  families)
    command -v node >/dev/null || { echo "FAIL: node is needed to run ONNX Runtime"; exit 1; }
    "$build/tests/tools/family_gen" "$work/families" test || { echo "FAIL: family_gen"; exit 1; }
    for dir in "$work"/families/*/; do
      name=$(basename "$dir"); d=$work/$name; mkdir -p "$d/cg" "$d/ort"
      readarray -t ins < <(node -e "const m=require('$dir/meta.json'); for (const i of m.inputs) console.log(i.name+'='+'$dir'+i.file+' '+i.name+'='+i.dims.join('x'))")
      args=(); shapes=(); feeds=()
      for l in "${ins[@]}"; do args+=(--input "${l%% *}"); shapes+=(--input-shape "${l##* }"); feeds+=("${l%% *}"); done
      node "$repo/tests/ort/ort_run.mjs" "$dir/model.onnx" "$d/ort" "${feeds[@]}" >/dev/null || { echo "FAIL $name: ONNX Runtime could not run it"; failures=$((failures+1)); continue; }
      if ! "$capgraph" compile "$dir/model.onnx" -o "$d/m.cap" "${shapes[@]}" | sed 's/^/  /'; then echo "FAIL $name: compile"; failures=$((failures+1)); continue; fi
      if ! "$capgraph" run "$d/m.cap" "${args[@]}" --output-dir "$d/cg" | sed 's/^/  /'; then echo "FAIL $name: replay"; failures=$((failures+1)); continue; fi
      ok=1
      for ref in "$d"/ort/*.npy; do
        "$build/tests/tools/npy_compare" "$d/cg/$(basename "$ref")" "$ref" | sed 's/^/  /'
        [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=0
      done
      if ((ok)); then echo "PASS $name"; passed=$((passed+1)); else echo "FAIL $name"; failures=$((failures+1)); fi
      # The grouped-conv blocks, the reorders and the matvec head on NEON too, under qemu.
      case $name in regnet_like|shufflenet_like|comma_like) ;; *) continue ;; esac
      runner=$build/runtime/aarch64/capgraph-run
      if ! command -v qemu-aarch64 >/dev/null || [[ ! -x $runner ]]; then echo "  (no qemu-aarch64 or aarch64 capgraph-run: $name not run on aarch64)"; continue; fi
      mkdir -p "$d/a64"
      if ! "$capgraph" compile "$dir/model.onnx" -o "$d/a64.cap" --target cpu-aarch64 | sed 's/^/  /'; then echo "FAIL ${name}_aarch64: compile"; failures=$((failures+1)); continue; fi
      if ! qemu-aarch64 -L /usr/aarch64-linux-gnu "$runner" "$d/a64.cap" "${args[@]}" --output-dir "$d/a64" | sed 's/^/  /'; then echo "FAIL ${name}_aarch64: replay"; failures=$((failures+1)); continue; fi
      ok=1
      for ref in "$d"/ort/*.npy; do
        "$build/tests/tools/npy_compare" "$d/a64/$(basename "$ref")" "$ref" | sed 's/^/  /'
        [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=0
      done
      if ((ok)); then echo "PASS ${name}_aarch64"; passed=$((passed+1)); else echo "FAIL ${name}_aarch64"; failures=$((failures+1)); fi
    done
    ;;
  *) echo "usage: models_conformance.sh ocr|zoo|families|aarch64 BUILD_DIR"; exit 2 ;;
esac
echo "$passed passed, $failures failed"
((failures == 0))
