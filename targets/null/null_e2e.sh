#!/usr/bin/env bash
# The null target end to end: ONNX -> `capgraph compile --target null` -> `capgraph run --device
# null`, against the same model compiled for and run on this CPU. The null device runs each
# kernel's host twin, so this checks the target seam (the compiler's target table, the capture's
# KernelFacts, the HCQ core's recording, submission, signals and waits through the null encoder
# and transport), not any GPU code. It is the proof that runtime/hcq names no vendor.
#   null_e2e.sh small BUILD_DIR   generated models (tests/tools: a 40-layer MatMul+Tanh chain with
#                                 its independently computed output, and convolution layers)
#   null_e2e.sh zoo BUILD_DIR     every model of ../shared/zoo (skips, exit 77, without it), vs
#                                 the CPU and its committed ONNX Runtime output
# Tolerance: tests/tools/npy_compare (the one output tolerance, runtime/npy.h).
set -uo pipefail
mode=${1:-}; build=${2:-}
[[ -n $mode && -n $build ]] || { echo "usage: null_e2e.sh small|zoo BUILD_DIR"; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare; tools=$build/tests/tools
# zoo_model_args, outputs_compare
source "$repo/tests/tools/e2e_lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0; passed=0

# check NAME MODEL.onnx "INPUT_ARGS" "SHAPE_ARGS" "OUT_NAME=REFERENCE.npy|cpu ..."
check() {
  local name=$1 model=$2 inputs=$3 shapes=$4 refs=$5 d=$work/$1
  mkdir -p "$d/cpu" "$d/null"
  if ! "$capgraph" compile "$model" -o "$d/null.cap" --target null $shapes > "$d/log" 2>&1; then
    echo "FAIL $name: compile for null"; cat "$d/log"; failures=$((failures+1)); return; fi
  "$capgraph" compile "$model" -o "$d/cpu.cap" $shapes > /dev/null 2>&1 || {
    echo "FAIL $name: compile for cpu"; failures=$((failures+1)); return; }
  if ! "$capgraph" run "$d/null.cap" --device null $inputs --output-dir "$d/null" > "$d/log" 2>&1; then
    echo "FAIL $name: replay on null"; cat "$d/log"; failures=$((failures+1)); return; fi
  "$capgraph" run "$d/cpu.cap" $inputs --output-dir "$d/cpu" > /dev/null || {
    echo "FAIL $name: replay on cpu"; failures=$((failures+1)); return; }
  local kernels; kernels=$("$capgraph" inspect "$d/null.cap" | sed -n 's/^ *\([0-9]*\) launches.*/\1/p')
  local ok=1
  outputs_compare "$d/null" "$d/cpu" "$refs" || ok=0
  # --check (any GPU device): each launch against its host twin. The null device runs the twins
  # themselves, so every launch must match exactly.
  if ! "$capgraph" run "$d/null.cap" --device null --check $inputs > "$d/log" 2>&1 ||
     ! grep -q "^check: $kernels launches match their host twins" "$d/log"; then
    echo "  run --device null --check:"; cat "$d/log"; ok=0
  fi
  # A null capture run on the CPU is refused, naming the device that runs it.
  if "$capgraph" run "$d/null.cap" $inputs --output-dir "$d/x" > "$d/log" 2>&1 ||
     ! grep -q "compiled for null; run it with --device null" "$d/log"; then
    echo "  a null capture on the cpu was not refused as it should be:"; cat "$d/log"; ok=0
  fi
  if ((ok)); then echo "PASS $name ($kernels launches)"; passed=$((passed+1))
  else echo "FAIL $name"; failures=$((failures+1)); fi
}

case $mode in
  small)
    devices=$("$capgraph" devices) || { echo "FAIL: capgraph devices"; exit 1; }
    grep -q '^null: the null device' <<< "$devices" || {
      echo "FAIL: capgraph devices does not list the null device:"; echo "$devices"; failures=$((failures+1)); }
    g=$work/gen; mkdir -p "$g"
    "$tools/tiny_chain_gen" "$g" 40 16 3 > /dev/null || { echo "FAIL: tiny_chain_gen"; exit 1; }
    check tiny_chain "$g/tiny_chain.onnx" "--input x=$g/input.npy" "" "y=$g/expected.npy"
    "$tools/conv_layer_gen" "$g/conv.onnx" 3 16 20 20 3 1 1 relu first > /dev/null &&
      "$tools/npy_random" "$g/conv_x.npy" 1x3x20x20 5 > /dev/null || { echo "FAIL: conv_layer_gen"; exit 1; }
    check conv "$g/conv.onnx" "--input x=$g/conv_x.npy" "" "y=cpu"
    "$tools/conv_layer_gen" "$g/dw.onnx" 16 16 12 12 3 2 16 swish > /dev/null &&
      "$tools/npy_random" "$g/dw_x.npy" 1x8x12x12 6 > /dev/null || { echo "FAIL: conv_layer_gen"; exit 1; }
    check depthwise "$g/dw.onnx" "--input x=$g/dw_x.npy" "" "y=cpu"
    ;;
  zoo)
    zoo=$repo/../shared/zoo
    [[ -d $zoo ]] || { echo "SKIPPED: no model zoo at $zoo (it is optional)"; exit 77; }
    command -v node > /dev/null || { echo "SKIPPED: node is needed to read the zoo's meta.json"; exit 77; }
    for dir in "$zoo"/*/; do
      [[ -f $dir/meta.json && -f $dir/model.onnx ]] || { echo "SKIP $(basename "$dir"): no model"; continue; }
      name=$(basename "$dir")
      zoo_model_args "$dir" || { echo "FAIL $name: reading $dir/meta.json"; failures=$((failures+1)); continue; }
      check "$name" "$dir/model.onnx" "$zoo_inputs" "$zoo_shapes" "$zoo_refs"
    done
    ;;
  *) echo "usage: null_e2e.sh small|zoo BUILD_DIR"; exit 2 ;;
esac
echo "$passed passed, $failures failed"
((failures == 0))
