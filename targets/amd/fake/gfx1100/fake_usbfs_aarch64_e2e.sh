#!/usr/bin/env bash
# The aarch64 build of capgraph-run-fake-usbfs (the comma device's CPU; runtime/CMakeLists.txt's
# cross build) under qemu-aarch64: the runtime's `usb` device over the fake usbfs, the emulated
# bridge running our firmware image and the register-model gfx1100 all built for aarch64. The small
# generated CNN, compiled here for amd-gfx1100, replayed there and compared with this CPU; the
# aarch64 capgraph-run and runner need no libusb (readelf NEEDED), and capgraph-run lists `usb`.
# CAPGRAPH_ZOO_MODELS="a b" also replays those models of ../shared/zoo there against ONNX Runtime's
# outputs (squeezenet1_1 takes ~100 s under qemu on a loaded 2-core machine: not run by default).
# Skips (exit 77) without qemu-aarch64, the aarch64 build or the bridge firmware image (sdcc).
#   fake_usbfs_aarch64_e2e.sh BUILD_DIR
set -uo pipefail
build=${1:?usage: fake_usbfs_aarch64_e2e.sh BUILD_DIR}
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare
arm=$build/runtime/aarch64; runner=$arm/targets/amd/fake/gfx1100/capgraph-run-fake-usbfs
export CAPGRAPH_BRIDGE_IMAGE=${CAPGRAPH_BRIDGE_IMAGE:-$build/firmware/fw/bridge_fw.img}
command -v qemu-aarch64 > /dev/null || { echo "SKIPPED: qemu-aarch64 not found; install qemu-user"; exit 77; }
[[ -x $runner ]] || { echo "SKIPPED: no $runner (the aarch64 cross build needs g++-aarch64-linux-gnu)"; exit 77; }
[[ -f $CAPGRAPH_BRIDGE_IMAGE ]] || { echo "SKIPPED: no bridge firmware image ($CAPGRAPH_BRIDGE_IMAGE)"; exit 77; }
source "$repo/tests/tools/e2e_lib.sh"  # zoo_model_args, outputs_compare
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
qemu() { qemu-aarch64 -L /usr/aarch64-linux-gnu "$@"; }
failures=0
for f in "$arm/capgraph-run" "$runner"; do
  if readelf -d "$f" | grep NEEDED | grep -qi libusb; then echo "FAIL $(basename "$f") (aarch64) needs libusb"; failures=$((failures+1))
  else echo "PASS $(basename "$f") (aarch64): no libusb among $(readelf -d "$f" | grep -c NEEDED) NEEDED"; fi
done
if qemu "$arm/capgraph-run" --devices 2>&1 | grep -q '^devices: cpu.* usb'; then echo "PASS capgraph-run (aarch64) lists usb"
else echo "FAIL capgraph-run (aarch64) --devices:"; qemu "$arm/capgraph-run" --devices; failures=$((failures+1)); fi

"$build/targets/amd/amd_model_gen" "$work" > /dev/null &&
  "$capgraph" compile "$work/small_cnn.onnx" -o "$work/amd.cap" --target amd-gfx1100 > /dev/null &&
  "$capgraph" compile "$work/small_cnn.onnx" -o "$work/cpu.cap" > /dev/null &&
  "$capgraph" run "$work/cpu.cap" --input x="$work/input.npy" --output-dir "$work/cpu" > /dev/null ||
  { echo "FAIL: preparing the model"; exit 1; }
t0=$(date +%s%N)
if CAPGRAPH_FAKE_USBFS=stats qemu "$runner" "$work/amd.cap" --device usb --input x="$work/input.npy" \
     --output-dir "$work/arm" > "$work/log" 2>&1 &&
   outputs_compare "$work/arm" "$work/cpu" "probs=cpu p=cpu x_out=cpu"; then
  echo "PASS small_cnn on usb (aarch64 under qemu, fake usbfs; $(( ($(date +%s%N) - t0) / 1000000 )) ms): $(grep -E '^(load|fake usbfs)' "$work/log" | tr '\n' ' ')"
else
  echo "FAIL small_cnn on usb (aarch64 under qemu)"; cat "$work/log"; failures=$((failures+1))
fi
zoo=$repo/../shared/zoo
for name in ${CAPGRAPH_ZOO_MODELS:-}; do
  dir=$zoo/$name/ d=$work/zoo_$name
  [[ -f $dir/meta.json ]] && command -v node > /dev/null || { echo "SKIPPED $name: not in $zoo (or no node)"; continue; }
  zoo_model_args "$dir" || { echo "FAIL $name: reading $dir/meta.json"; failures=$((failures+1)); continue; }
  t0=$(date +%s%N)
  if "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cap" --target amd-gfx1100 $zoo_shapes > /dev/null &&
     qemu "$runner" "$work/$name.cap" --device usb $zoo_inputs --output-dir "$d" > "$work/log" 2>&1 &&
     outputs_compare "$d" "" "$zoo_refs"; then
    echo "PASS $name on usb (aarch64 under qemu, fake usbfs; $(( ($(date +%s%N) - t0) / 1000000 )) ms)"
  else echo "FAIL $name on usb (aarch64 under qemu)"; cat "$work/log"; failures=$((failures+1)); fi
done
((failures == 0))
