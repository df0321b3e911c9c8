#!/usr/bin/env bash
# fault_sweep.sh DEVICE BUILD_DIR: the fault sweep of one fake device (README.md). A two-layer
# tiny_chain model compiled for the device's target; then
#  1. `capgraph run --device DEVICE:count`: exactly one "device calls: K" line on stderr, K as the
#     in-process sweep counts;
#  2. fault_sweep: every device call (or the device's sample) failed in turn through the C API;
#  3. through the CLI, in fresh processes, a failure in the load and one in the replay: non-zero
#     exit naming the failure, the output file of an earlier run intact and nothing else written,
#     and the next run succeeds.
# Exit 77 (skip) for fake-usb without the bridge firmware image (sdcc).
set -uo pipefail
device=${1:?usage: fault_sweep.sh DEVICE BUILD_DIR}
build=${2:?usage: fault_sweep.sh DEVICE BUILD_DIR}
capgraph=$build/cli/capgraph
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The sample: every call, except on fake-usb (about 500 transfers through the 8051 emulator per
# session, a cold boot 1142): every 7th call of its partial boot + replay + teardown there
# (CAPGRAPH_FAULT_EVERY; the sanitizer build sets 19), each failure followed by a clean session
# (after a failure mid-boot that one resets the GPU and boots cold).
sweep_args=()
case $device in
  fake-amd|fake-kfd|fake-usb) target=amd-gfx1100 ;;
  fake-adreno) target=adreno-a630 ;;
  fake-nv) target=nv-sm90 ;;
  *) fail "unknown device $device" ;;
esac
[[ $device == fake-usb ]] && sweep_args=(--every "${CAPGRAPH_FAULT_EVERY:-7}")
[[ $device != fake-usb && -n ${CAPGRAPH_FAULT_EVERY:-} ]] && sweep_args=(--every "$CAPGRAPH_FAULT_EVERY")

"$build/tests/tools/tiny_chain_gen" "$work" 2 16 1 > /dev/null || fail "tiny_chain_gen"
"$capgraph" compile "$work/tiny_chain.onnx" -o "$work/m.cap" --target $target > "$work/log" 2>&1 ||
  { cat "$work/log"; fail "compile for $target"; }
# fault_sweep is not beside the CLI, where fake-usb looks for the bridge firmware image.
if [[ -z ${CAPGRAPH_BRIDGE_IMAGE:-} && -f $build/cli/bridge_fw.img ]]; then
  export CAPGRAPH_BRIDGE_IMAGE=$build/cli/bridge_fw.img
fi
run() { "$capgraph" run "$work/m.cap" --input x="$work/input.npy" "$@"; }

# 1. :count
run --device "$device:count" > "$work/out" 2> "$work/err"
rc=$?
if ((rc != 0)) && grep -q "no bridge firmware image" "$work/err"; then
  echo "SKIPPED: $(cat "$work/err")"; exit 77
fi
((rc == 0)) || { cat "$work/err"; fail "run --device $device:count"; }
count_lines=$(grep -c '^device calls: ' "$work/err")
((count_lines == 1)) || { cat "$work/err"; fail "$device:count printed $count_lines 'device calls' lines"; }
calls=$(sed -n 's/^device calls: \([0-9]*\)$/\1/p' "$work/err")

# 2. The sweep through the C API.
t0=$(date +%s%N)
"$build/tests/faults/fault_sweep" "$work/m.cap" "$device" "$work/input.npy" "$work/expected.npy" \
  "${sweep_args[@]}" > "$work/sweep" 2>&1 || { cat "$work/sweep"; fail "fault_sweep $device"; }
t1=$(date +%s%N)
cat "$work/sweep"
first=$(sed -n 's/.*the process.s first session: \([0-9]*\) calls$/\1/p' "$work/sweep")
[[ $first == "$calls" ]] || fail "$device:count said $calls device calls, the sweep's first session $first"
before_free=$(sed -n 's/.*(load + replay \([0-9]*\),.*/\1/p' "$work/sweep")
echo "fault_sweep $device: $(( (t1 - t0) / 1000000 )) ms"

# 3. Through the CLI, each in a fresh process with an earlier output in the output folder: a
# failure in the load (call 2) and one in the replay (the last call before capgraph_free of the
# swept session); on fake-usb, whose sweep above runs partial boots, CAPGRAPH_FAULT_COLD (6;
# the sanitizer build 3) more spread over the cold boot a fresh process makes.
points=(2 "$before_free")
if [[ $device == fake-usb ]]; then
  cold=${CAPGRAPH_FAULT_COLD:-6}
  for ((i = 1; i <= cold; i++)); do points+=($(( calls * i / (cold + 1) ))); done
fi
mkdir -p "$work/out_dir"
run --device "$device" --output-dir "$work/out_dir" > /dev/null 2>&1 || fail "a clean run of $device"
cp "$work/out_dir/y.npy" "$work/y_before.npy"
for n in "${points[@]}"; do
  t0=$(date +%s%N)
  CAPGRAPH_TIMEOUT_MS=2000 run --device "$device:fail=$n" --output-dir "$work/out_dir" \
    > "$work/out" 2> "$work/err"
  rc=$?
  t1=$(date +%s%N)
  ms=$(( (t1 - t0) / 1000000 ))
  if ((rc == 0)); then
    # A call the driver recovers from (a retry, or polling instead of an interrupt) is allowed to
    # succeed, with the right output.
    "$build/tests/tools/npy_compare" "$work/out_dir/y.npy" "$work/expected.npy" > /dev/null ||
      fail "$device:fail=$n succeeded with a wrong output"
    echo "PASS $device:fail=$n through the CLI: recovered (${ms} ms)"
  else
    ((rc < 128)) || { cat "$work/err"; fail "$device:fail=$n: killed by signal $((rc - 128))"; }
    grep -q 'error: ' "$work/err" || { cat "$work/err"; fail "$device:fail=$n: no error message"; }
    cmp -s "$work/out_dir/y.npy" "$work/y_before.npy" || fail "$device:fail=$n changed the earlier output"
    echo "PASS $device:fail=$n through the CLI: exit $rc in ${ms} ms: $(grep 'error: ' "$work/err" | head -1 | cut -c1-160)"
  fi
  extra=$(ls -A "$work/out_dir" | grep -vx 'y.npy')
  [[ -z $extra ]] || fail "$device:fail=$n left files in the output folder: $extra"
  # The next process finds the device working.
  run --device "$device" --output-dir "$work/out_dir" > "$work/out" 2>&1 ||
    { cat "$work/out"; fail "the run after $device:fail=$n"; }
  "$build/tests/tools/npy_compare" "$work/out_dir/y.npy" "$work/expected.npy" > /dev/null ||
    fail "the run after $device:fail=$n: wrong output"
done
echo "PASS fault sweep of $device"
