#!/usr/bin/env bash
# The dependency-free runtime's `usb` device over the fake usbfs (issue 32): capgraph-run-fake-usbfs
# (capgraph-run linked with targets/amd/fake/gfx1100/fake_usbfs.*: the sysfs tree and the usbfs
# ioctls, the emulated bridge running our firmware image and the register-model gfx1100 behind
# them) replays captures compiled for amd-gfx1100 through the real usbfs transport, AM driver and
# AM transport. Checks, in order:
#   - neither the shipped capgraph-run, libcapgraph_runtime.so nor the runner needs libusb (ldd);
#     capgraph-run lists `usb` among its devices and, without a bridge, says why there is none;
#   - the small generated CNN on `usb` and `usb:0BADCAFE` matches the CPU; its waits sleep: the
#     transfers of a replay are the same whether the GPU takes 1 ms or 200 ms (the bridge watches
#     the signal, protocol 1.3), and an older image (protocol 1.2) is polled with a growing pause;
#   - no permission, a busy interface, no bridge, and the bridge pulled out mid-replay: each a
#     clear error and a non-zero exit, none hangs;
#   - zoo models from ../shared/zoo (squeezenet1_1 unless CAPGRAPH_ZOO_MODELS names others; "all"
#     every one; "none" none) match ONNX Runtime's outputs and the CPU's.
#   fake_usbfs_e2e.sh BUILD_DIR     exit 77 (skip) without the bridge firmware image (sdcc)
set -uo pipefail
build=${1:?usage: fake_usbfs_e2e.sh BUILD_DIR}
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare
run=$build/runtime/capgraph-run; runner=$build/targets/amd/fake/gfx1100/capgraph-run-fake-usbfs
export CAPGRAPH_BRIDGE_IMAGE=${CAPGRAPH_BRIDGE_IMAGE:-$build/firmware/fw/bridge_fw.img}
[[ -f $CAPGRAPH_BRIDGE_IMAGE ]] || { echo "SKIP: no bridge firmware image ($CAPGRAPH_BRIDGE_IMAGE)"; exit 77; }
source "$repo/tests/tools/e2e_lib.sh"  # zoo_model_args, outputs_compare
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0; passed=0
pass() { echo "PASS $*"; passed=$((passed+1)); }
fail() { echo "FAIL $*"; failures=$((failures+1)); }

# -- no libusb in the shipped binaries or the runner; `usb` listed.
for f in "$run" "$build/runtime/libcapgraph_runtime.so" "$runner"; do
  if ldd "$f" | grep -qi libusb; then fail "ldd $(basename "$f") shows libusb"; else pass "ldd $(basename "$f"): no libusb"; fi
done
devices=$(timeout 60 "$run" --devices 2>&1)
if grep -q '^devices: cpu.* usb' <<< "$devices"; then pass "capgraph-run --devices lists usb"
else fail "capgraph-run --devices does not list usb:"; echo "$devices"; fi
if grep -q '^usb:0badcafe: usb 1-1 add1:ca90' < <(CAPGRAPH_FAKE_USBFS= timeout 60 "$runner" --devices 2>&1)
then pass "capgraph-run-fake-usbfs --devices finds the fake bridge"
else fail "capgraph-run-fake-usbfs --devices:"; CAPGRAPH_FAKE_USBFS= "$runner" --devices; fi

# -- the small CNN: compile for both, replay on the fake.
mkdir -p "$work/gen"
"$build/targets/amd/amd_model_gen" "$work/gen" > /dev/null || { echo "FAIL: amd_model_gen"; exit 1; }
g=$work/gen; in="--input x=$g/input.npy"
"$capgraph" compile "$g/small_cnn.onnx" -o "$work/amd.cap" --target amd-gfx1100 > "$work/log" 2>&1 &&
  "$capgraph" compile "$g/small_cnn.onnx" -o "$work/cpu.cap" > "$work/log" 2>&1 &&
  "$run" "$work/cpu.cap" $in --output-dir "$work/cpu" > /dev/null || { echo "FAIL: compile or cpu run"; cat "$work/log"; exit 1; }

# replay LABEL DEVICE FAULTS [RUNS]: runs the small CNN, keeps the log in $work/LABEL.log.
replay() {
  local t0=$(date +%s%N) rc
  CAPGRAPH_FAKE_USBFS=$3 timeout 120 "$runner" "$work/amd.cap" --device "$2" $in --runs "${4:-1}" \
    --output-dir "$work/$1" > "$work/$1.log" 2>&1
  rc=$?
  echo "  ($1: $(( ($(date +%s%N) - t0) / 1000000 )) ms, exit $rc)"
  return $rc
}
matches() { outputs_compare "$work/$1" "$work/cpu" "probs=cpu p=cpu x_out=cpu" > /dev/null; }
for dev in usb usb:0BADCAFE; do
  if replay "plain_${dev/:/_}" "$dev" "" && matches "plain_${dev/:/_}"; then pass "small_cnn on $dev matches the cpu"
  else fail "small_cnn on $dev"; cat "$work/plain_${dev/:/_}.log"; fi
done

# -- waits that sleep: 3 replays with the GPU taking 1 ms and 200 ms per submission.
transfers() { sed -n 's/^fake usbfs: \([0-9]*\) transfers.*/\1/p' "$work/$1.log"; }
cpu_ms() { sed -n 's/.*this thread.s CPU \([0-9.]*\) ms per run.*/\1/p' "$work/$1.log"; }
ok=1
for ms in 1 200; do replay "watch$ms" usb "stats,gpu_ms=$ms" 3 && matches "watch$ms" || ok=0; done
t1=$(transfers watch1); t200=$(transfers watch200)
echo "  transfers for load + 3 replays: GPU 1 ms $t1, 200 ms $t200; host CPU per replay $(cpu_ms watch1) / $(cpu_ms watch200) ms"
if ((ok)) && [[ -n $t1 && -n $t200 ]] && (( t200 - t1 <= 6 && t1 - t200 <= 6 )); then
  pass "waits sleep: the transfers do not grow with the GPU's time ($t1 vs $t200)"
else fail "waits: transfers $t1 (1 ms) vs $t200 (200 ms)"; cat "$work/watch200.log"; fi
if replay old200 usb "stats,old_firmware,gpu_ms=200" 3 && matches old200; then
  t_old=$(transfers old200)
  echo "  firmware without the watch (protocol 1.2), GPU 200 ms: $t_old transfers; host CPU per replay $(cpu_ms old200) ms"
  if (( t_old > t200 )); then pass "older firmware: polled with a growing pause, outputs match"
  else fail "older firmware: $t_old transfers, not more than the watch's $t200 (no polling?)"; fi
else fail "older firmware replay"; cat "$work/old200.log"; fi

# -- errors: each clear, non-zero, bounded.
# expect_error LABEL FAULTS PATTERN [RUNS]
expect_error() {
  if replay "$1" usb "$2" "${4:-1}"; then fail "$1: succeeded"; cat "$work/$1.log"; return; fi
  if grep -q "$3" "$work/$1.log"; then pass "$1: $(grep -m1 "$3" "$work/$1.log" | cut -c1-200)"
  else fail "$1: no clear error (wanted '$3'):"; cat "$work/$1.log"; fi
}
expect_error no_permission deny "70-capgraph-bridge.rules"
expect_error busy busy "in use"
expect_error absent absent "no capgraph bridge on USB: no ASM2464PD attached"
# Load (boot, upload) takes ~1120 transfers, a replay of this model ~50: pulled out in replay ~6.
expect_error unplugged "unplug=1400" "device gone (unplugged" 20

# -- zoo models (the emulated bridge and RDNA3 emulator take a while per model).
zoo=$repo/../shared/zoo
if [[ -d $zoo ]] && command -v node > /dev/null; then
  names=${CAPGRAPH_ZOO_MODELS:-squeezenet1_1}
  [[ $names == none ]] && names=""
  [[ $names == all ]] && names=$(cd "$zoo" && for d in */; do [[ -f $d/meta.json ]] && echo "${d%/}"; done)
  for name in $names; do
    dir=$zoo/$name/ d=$work/zoo_$name
    [[ -f $dir/meta.json ]] || { echo "SKIPPED $name: not in $zoo"; continue; }
    zoo_model_args "$dir" || { fail "$name: reading $dir/meta.json"; continue; }
    mkdir -p "$d"
    if ! "$capgraph" compile "$dir/model.onnx" -o "$d/amd.cap" --target amd-gfx1100 $zoo_shapes > "$d/log" 2>&1 ||
       ! "$capgraph" compile "$dir/model.onnx" -o "$d/cpu.cap" $zoo_shapes > "$d/log" 2>&1 ||
       ! "$run" "$d/cpu.cap" $zoo_inputs --output-dir "$d/cpu" > "$d/log" 2>&1; then
      fail "$name: compile or cpu run"; cat "$d/log"; continue
    fi
    t0=$(date +%s%N)
    if CAPGRAPH_FAKE_USBFS= timeout 600 "$runner" "$d/amd.cap" --device usb $zoo_inputs --output-dir "$d/usb" > "$d/log" 2>&1 &&
       outputs_compare "$d/usb" "$d/cpu" "$zoo_refs"; then
      pass "$name on usb (fake usbfs) matches ONNX Runtime and the cpu ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
    else fail "$name on usb (fake usbfs)"; cat "$d/log"; fi
  done
else
  echo "SKIPPED zoo models: no model zoo at $zoo or no node"
fi
echo "$passed passed, $failures failed"
((failures == 0))
