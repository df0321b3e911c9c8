#!/usr/bin/env bash
# two_models.sh DEVICE BUILD_DIR: two models on one device in one process (two_models.cpp): two
# tiny_chain models of different shapes compiled for the device's target, loaded together and
# replayed interleaved, freed in turn, loaded again; on fake-usb also every call of the second
# load failed in turn while the first stays loaded (CAPGRAPH_FAULT_EVERY: a sample). DEVICE `usb`
# is the runtime's usbfs device over the fake usbfs. Exit 77 (skip) without the bridge firmware
# image (sdcc).
set -uo pipefail
device=${1:?usage: two_models.sh DEVICE BUILD_DIR}
build=${2:?usage: two_models.sh DEVICE BUILD_DIR}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
case $device in
  fake-amd* | fake-kfd | fake-usb* | usb) target=amd-gfx1100 ;;
  fake-adreno*) target=adreno-a630 ;;
  fake-nv*) target=nv-sm90 ;;
  *) fail "unknown device $device" ;;
esac
if [[ -z ${CAPGRAPH_BRIDGE_IMAGE:-} && -f $build/cli/bridge_fw.img ]]; then
  export CAPGRAPH_BRIDGE_IMAGE=$build/cli/bridge_fw.img
fi
if [[ $device == fake-usb* || $device == usb ]] && [[ ! -f ${CAPGRAPH_BRIDGE_IMAGE:-/nonexistent} ]]; then
  echo "SKIPPED: no bridge firmware image (sdcc)"; exit 77
fi
# A: 2 layers of width 16; B: 3 layers of width 24, 2 rows (other buffers, other kernels).
for m in "a 2 16 1" "b 3 24 2"; do
  set -- $m
  mkdir -p "$work/$1"
  "$build/tests/tools/tiny_chain_gen" "$work/$1" "$2" "$3" "$4" > /dev/null || fail "tiny_chain_gen $m"
  "$build/cli/capgraph" compile "$work/$1/tiny_chain.onnx" -o "$work/$1/m.cap" --target $target \
    > "$work/log" 2>&1 || { cat "$work/log"; fail "compile $1 for $target"; }
done
args=()
[[ -n ${CAPGRAPH_FAULT_EVERY:-} ]] && args=(--every "$CAPGRAPH_FAULT_EVERY")
t0=$(date +%s%N)
"$build/tests/faults/two_models" "$device" "$work/a" "$work/b" "${args[@]}" 2> "$work/err" ||
  { cat "$work/err"; fail "two_models $device"; }
echo "two_models $device: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
