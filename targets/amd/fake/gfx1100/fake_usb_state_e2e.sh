#!/usr/bin/env bash
# The GPU behind the USB bridge outlives the driver's process: `capgraph run --device fake-usb`
# processes sharing CAPGRAPH_FAKE_USB_STATE (targets/amd/fake/gfx1100/fake_usb.cpp) must show a cold boot,
# then partial boots, each replay matching the first; a process that ends without the teardown
# (CAPGRAPH_FAKE_USB_NO_TEARDOWN=1, as when it is killed) leaves the GPU dirty and the next run
# resets it (mode 1) and boots cold; a truncated state file is refused with its path; no file (a
# power cycle) is a cold boot again.
#   fake_usb_state_e2e.sh BUILD_DIR
# Exit 77 (skip) without the bridge firmware image (sdcc).
set -uo pipefail
build=${1:?usage: fake_usb_state_e2e.sh BUILD_DIR}
capgraph=$build/cli/capgraph
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export CAPGRAPH_FAKE_USB_STATE=$work/gpu.state
fail() { echo "FAIL: $*"; exit 1; }

"$build/targets/amd/amd_model_gen" "$work" > /dev/null || fail "amd_model_gen"
"$capgraph" compile "$work/small_cnn.onnx" -o "$work/a.cap" --target amd-gfx1100 > "$work/log" 2>&1 ||
  { cat "$work/log"; fail "compile"; }

# run N EXPECTED_BOOT: one process; its boot line must say EXPECTED_BOOT, its output equal run 1's.
run() {
  "$capgraph" run "$work/a.cap" --device fake-usb --input "x=$work/input.npy" --output-dir "$work/o$1" \
    > "$work/log$1" 2>&1
  local rc=$?
  if ((rc != 0)) && grep -q "no bridge firmware image" "$work/log$1"; then echo "SKIPPED: $(cat "$work/log$1")"; exit 77; fi
  ((rc == 0)) || { cat "$work/log$1"; fail "run $1"; }
  grep -q "^fake-usb usb .*($2)\$" "$work/log$1" || { cat "$work/log$1"; fail "run $1 is not a '$2'"; }
  if [[ $1 != 1 ]]; then
    for f in "$work"/o1/*.npy; do cmp -s "$f" "$work/o$1/$(basename "$f")" || fail "run $1: $(basename "$f") differs from run 1"; done
  fi
  echo "PASS run $1: $2"
}

run 1 "cold boot"
[[ -s $CAPGRAPH_FAKE_USB_STATE ]] || fail "no state file after run 1"
devices=$("$capgraph" devices) || fail "capgraph devices"
grep -q "^fake-usb: .*$CAPGRAPH_FAKE_USB_STATE, present" <<< "$devices" || { echo "$devices"; fail "capgraph devices does not show the state file"; }
run 2 "partial boot"
run 3 "partial boot"
CAPGRAPH_FAKE_USB_NO_TEARDOWN=1 run 4 "partial boot"
run 5 "cold boot after a mode-1 reset"
run 6 "partial boot"

# Cut short: refused, with the path and what to do; nothing replayed.
head -c 4000 "$CAPGRAPH_FAKE_USB_STATE" > "$work/cut" && mv "$work/cut" "$CAPGRAPH_FAKE_USB_STATE"
if "$capgraph" run "$work/a.cap" --device fake-usb --input "x=$work/input.npy" --output-dir "$work/o7" > "$work/log7" 2>&1; then
  fail "a truncated state file was accepted"
fi
grep -q "state file $CAPGRAPH_FAKE_USB_STATE .*truncated or corrupt; delete it" "$work/log7" || { cat "$work/log7"; fail "truncated state: unclear error"; }
echo "PASS truncated state file refused: $(tail -1 "$work/log7")"

rm -f "$CAPGRAPH_FAKE_USB_STATE"
run 8 "cold boot"
echo "all passed"
