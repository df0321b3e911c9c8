#!/usr/bin/env bash
# The USB GPU cost report (issue 14): USB transfers and bytes of the bridge open, a cold boot, a
# teardown, a partial boot and one resnet18 replay's I/O (input in, submit + poll, output out) on
# both copy paths, counted by drivers/usb's BridgeCounters against the emulated ASM2464PD running
# our firmware with the register-model gfx1100 behind it, and the projected time (drivers/am
# README, "USB cost": 125 us per transfer as a bound, measured bridge rates). Prints the table.
#   usb_cost.sh [BUILD]   (default build/; builds the test if needed)
# CAPGRAPH_USB_TRANSFER_US=US projects with a per-transfer latency measured on a board
# (`bridge_hw_test latency`) instead of the 125 us bound.
# Then the waits (issue 32): the small generated CNN replayed by capgraph-run-fake-usbfs (the
# runtime's `usb` over the fake usbfs, the emulator on its own thread) with the GPU taking 1 ms and
# 200 ms per submission, on our firmware (the bridge watches the signal, protocol 1.3) and on an
# image without the watch (protocol 1.2: polled with a growing pause): USB transfers per replay and
# per wait, and the replaying thread's CPU time per replay (getrusage RUSAGE_THREAD).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
cmake --build "$build" --target targets_amd_gfx1100_bridge_test > /dev/null
"$build/targets/amd/fake/gfx1100/targets_amd_gfx1100_bridge_test" -tc="the USB cost report*" 2>&1 |
  awk '/MESSAGE: USB cost/ { sub(/.*MESSAGE: /, ""); on = 1 } on && /^$/ { exit } on { print }
       /SKIP:/ { print; exit 77 }'

cmake --build "$build" --target capgraph-run-fake-usbfs capgraph amd_model_gen > /dev/null
runner=$build/targets/amd/fake/gfx1100/capgraph-run-fake-usbfs
export CAPGRAPH_BRIDGE_IMAGE=${CAPGRAPH_BRIDGE_IMAGE:-$build/firmware/fw/bridge_fw.img}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$build/targets/amd/amd_model_gen" "$work" > /dev/null
"$build/cli/capgraph" compile "$work/small_cnn.onnx" -o "$work/amd.cap" --target amd-gfx1100 > /dev/null
# measure FAULTS RUNS: "transfers urbs cpu_ms_per_run"
measure() {
  CAPGRAPH_FAKE_USBFS=stats,$1 "$runner" "$work/amd.cap" --device usb --input x="$work/input.npy" \
    --runs "$2" --output-dir "$work/out" 2>&1 |
    sed -n -e 's/^fake usbfs: \([0-9]*\) transfers (\([0-9]*\) of them.*/T \1 \2/p' \
           -e "s/.*this thread's CPU \([0-9.]*\) ms per run.*/C \1/p" | tr '\n' ' ' |
    awk '{ print $2, $3, $5 }'
}
echo
echo "Waits (small_cnn, 2 waits per replay; per replay: the difference of 6 replays and 1, over 5):"
echo
echo "| firmware | GPU time per submission | transfers per replay | of them bulk IN slept on | host CPU per replay |"
echo "|---|---|---|---|---|"
for fw in watch old_firmware; do
  for ms in 1 200; do
    faults="gpu_ms=$ms"; [[ $fw == old_firmware ]] && faults+=",old_firmware"
    read -r t1 u1 _ <<< "$(measure "$faults" 1)"
    read -r t6 u6 c6 <<< "$(measure "$faults" 6)"
    per=$(( (t6 - t1) / 5 ))
    label=$([[ $fw == watch ]] && echo "ours (protocol 1.3, the bridge watches)" || echo "without the watch (1.2, polled)")
    printf '| %s | %s ms | %s | %s | %s ms |\n' "$label" "$ms" "$per" "$(( (u6 - u1) / 5 ))" "$c6"
  done
done
