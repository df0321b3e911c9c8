#!/usr/bin/env bash
# The aarch64 build of the runtime (the comma device's CPU) replaying Adreno captures on the fake
# KGSL under qemu-aarch64, their machine code run by the ir3 emulator built for aarch64: models
# compiled here for adreno-a630 with host twins for aarch64 (CAPGRAPH_TWIN_TARGET=cpu-aarch64, which
# fake-adreno:check compares with), run by the cross-built capgraph-run-fakes, compared with the
# same models on this CPU (and the chain's independently computed output). Two models: a 40-layer
# MatMul+Tanh chain (on fake-adreno and on fake-adreno:check) and the comma-shaped model (uint8
# cameras, desire, features, heads).
# Both in the target's default precision (float16 storage, calibrated on generated inputs), so
# the outputs are compared at the README's float16 tolerance (3e-2 x max |reference|, as
# adreno_e2e.sh does).
# Skips (exit 77) without qemu-aarch64, the aarch64 build or Mesa's ir3.
#   adreno_aarch64_e2e.sh BUILD_DIR
set -uo pipefail
build=${1:-}; [[ -n $build ]] || { echo "usage: adreno_aarch64_e2e.sh BUILD_DIR"; exit 2; }
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare; tools=$build/tests/tools
runner=$build/runtime/aarch64/targets/capgraph-run-fakes
command -v qemu-aarch64 > /dev/null || { echo "SKIPPED: qemu-aarch64 not found; install qemu-user"; exit 77; }
[[ -x $runner ]] || { echo "SKIPPED: no $runner (the aarch64 cross build needs g++-aarch64-linux-gnu)"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$tools/tiny_chain_gen" "$work" 40 16 3 > /dev/null || { echo "FAIL: tiny_chain_gen"; exit 1; }
if ! CAPGRAPH_TWIN_TARGET=cpu-aarch64 "$capgraph" compile "$work/tiny_chain.onnx" -o "$work/chain.cap" --target adreno-a630 > "$work/log" 2>&1; then
  if grep -q "without Mesa's ir3" "$work/log"; then echo "SKIPPED: capgraph was built without Mesa's ir3"; exit 77; fi
  echo "FAIL: compile for adreno-a630"; cat "$work/log"; exit 1
fi
"$build/targets/adreno/comma_model_gen" "$work" &&
  "$tools/npy_random" "$work/imgs.npy" 1x12x128x256 1 uint8 > /dev/null &&
  "$tools/npy_random" "$work/big.npy" 1x12x128x256 2 uint8 > /dev/null &&
  "$tools/npy_random" "$work/desire.npy" 1x8x8 3 > /dev/null &&
  "$tools/npy_random" "$work/features.npy" 1x24x64 4 > /dev/null &&
  CAPGRAPH_TWIN_TARGET=cpu-aarch64 "$capgraph" compile "$work/comma.onnx" -o "$work/comma.cap" --target adreno-a630 > /dev/null &&
  "$capgraph" compile "$work/comma.onnx" -o "$work/comma_cpu.cap" > /dev/null &&
  "$capgraph" compile "$work/tiny_chain.onnx" -o "$work/chain_cpu.cap" > /dev/null || { echo "FAIL: preparing the models"; exit 1; }
failures=0
# run NAME DEVICE CAP CPU_CAP "INPUT_ARGS" "OUT=REF|cpu ..."
run() {
  local name=$1 device=$2 cap=$3 cpu=$4 inputs=$5 refs=$6 d=$work/$1 ok=1 r out ref
  mkdir -p "$d/arm" "$d/cpu"
  if ! qemu-aarch64 -L /usr/aarch64-linux-gnu "$runner" "$cap" --device "$device" $inputs --output-dir "$d/arm" > "$d/log" 2>&1; then
    echo "FAIL $name: replay under qemu-aarch64"; cat "$d/log"; failures=$((failures+1)); return; fi
  "$capgraph" run "$cpu" $inputs --output-dir "$d/cpu" > /dev/null || { echo "FAIL $name: cpu"; failures=$((failures+1)); return; }
  for r in $refs; do
    out=${r%%=*}; ref=${r#*=}
    [[ $ref == cpu ]] && ref=$d/cpu/$out.npy
    "$compare" "$d/arm/$out.npy" "$ref" 3e-2 | sed "s/^/  /"; [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=0
  done
  if ((ok)); then echo "PASS $name on aarch64 (qemu, $device): $(tail -1 "$d/log")"; else echo "FAIL $name"; failures=$((failures+1)); fi
}
run chain fake-adreno "$work/chain.cap" "$work/chain_cpu.cap" "--input x=$work/input.npy" "y=$work/expected.npy y=cpu"
run chain_check fake-adreno:check "$work/chain.cap" "$work/chain_cpu.cap" "--input x=$work/input.npy" "y=$work/expected.npy y=cpu"
run comma fake-adreno "$work/comma.cap" "$work/comma_cpu.cap" \
  "--input input_imgs=$work/imgs.npy --input big_input_imgs=$work/big.npy --input desire=$work/desire.npy --input features_buffer=$work/features.npy" \
  "plan=cpu lead=cpu pose=cpu hidden_state=cpu"
((failures == 0))
