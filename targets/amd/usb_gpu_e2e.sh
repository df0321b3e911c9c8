#!/usr/bin/env bash
# `capgraph run --device usb`: a gfx1100 behind a real ASM2464PD running our firmware (libusb).
#   usb_gpu_e2e.sh absent BUILD_DIR  without a bridge: `capgraph devices` says why there is no USB
#                                    GPU, and a run on `usb` and on `usb:SERIAL` fails fast with
#                                    "no capgraph bridge on USB" and a non-zero exit (never hangs).
#                                    Exit 77 (skip) when a bridge running our firmware IS attached.
#   usb_gpu_e2e.sh hw BUILD_DIR      with a board + RX 7900 XTX: the small generated CNN
#                                    (amd_model_gen) replayed on `usb` twice, in two processes (the
#                                    second finds the GPU the first tore down), both matching the
#                                    CPU; cold vs partial boot is asserted by bridge_hw_am, not here.
#                                    Exit 77 (skip) without a bridge running our firmware.
set -uo pipefail
mode=${1:?usage: usb_gpu_e2e.sh absent|hw BUILD_DIR}; build=${2:?usage: usb_gpu_e2e.sh absent|hw BUILD_DIR}
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

devices=$(timeout 60 "$capgraph" devices) || { echo "FAIL: capgraph devices (rc $?)"; exit 1; }
usb_lines=$(grep '^usb' <<< "$devices")
[[ -n $usb_lines ]] || { echo "FAIL: capgraph devices has no usb line:"; echo "$devices"; exit 1; }
echo "$usb_lines"
present=0; grep -q '^usb:[^ ]*: usb ' <<< "$usb_lines" && present=1

mkdir -p "$work/gen"
"$build/targets/amd/amd_model_gen" "$work/gen" > /dev/null || { echo "FAIL: amd_model_gen"; exit 1; }
"$capgraph" compile "$work/gen/small_cnn.onnx" -o "$work/amd.cap" --target amd-gfx1100 > "$work/log" 2>&1 ||
  { echo "FAIL: compile for amd-gfx1100"; cat "$work/log"; exit 1; }
inputs="--input x=$work/gen/input.npy"

if [[ $mode == absent ]]; then
  ((present)) && { echo "SKIP: a bridge running capgraph firmware is attached (this checks its absence)"; exit 77; }
  grep -q '^usb: no capgraph bridge (' <<< "$usb_lines" ||
    { echo "FAIL: capgraph devices does not say why there is no USB GPU"; exit 1; }
  for dev in usb usb:0badcafe; do
    timeout 60 "$capgraph" run "$work/amd.cap" --device $dev $inputs --output-dir "$work/out" > "$work/log" 2>&1
    rc=$?
    ((rc == 124)) && { echo "FAIL: run --device $dev hung (killed after 60 s)"; exit 1; }
    ((rc != 0)) || { echo "FAIL: run --device $dev succeeded without a bridge"; cat "$work/log"; exit 1; }
    grep -q 'no capgraph bridge on USB: ' "$work/log" ||
      { echo "FAIL: run --device $dev: no clear error:"; cat "$work/log"; exit 1; }
    echo "PASS --device $dev without a bridge (rc $rc): $(grep -m1 'no capgraph bridge' "$work/log")"
  done
  exit 0
fi

[[ $mode == hw ]] || { echo "usage: usb_gpu_e2e.sh absent|hw BUILD_DIR"; exit 2; }
((present)) || { echo "SKIP: no bridge running capgraph firmware on USB"; exit 77; }
grep -q '1002:744c' <<< "$usb_lines" || { echo "SKIP: no RX 7900 XTX (1002:744c) behind the bridge"; exit 77; }
"$capgraph" compile "$work/gen/small_cnn.onnx" -o "$work/cpu.cap" > "$work/log" 2>&1 ||
  { echo "FAIL: compile for cpu"; cat "$work/log"; exit 1; }
"$capgraph" run "$work/cpu.cap" $inputs --output-dir "$work/cpu" > /dev/null || { echo "FAIL: replay on cpu"; exit 1; }
for round in 1 2; do
  timeout 300 "$capgraph" run "$work/amd.cap" --device usb $inputs --output-dir "$work/usb$round" > "$work/log" 2>&1 ||
    { echo "FAIL: run $round on usb (rc $?)"; cat "$work/log"; exit 1; }
  for out in probs p x_out; do
    "$compare" "$work/usb$round/$out.npy" "$work/cpu/$out.npy" || { echo "FAIL: run $round: $out differs from cpu"; exit 1; }
  done
  echo "PASS run $round on usb"
done
