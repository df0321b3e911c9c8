#!/usr/bin/env bash
# The USB GPU cost report (issue 14): USB transfers and bytes of the bridge open, a cold boot, a
# teardown, a partial boot and one resnet18 replay's I/O (input in, submit + poll, output out) on
# both copy paths, counted by drivers/usb's BridgeCounters against the emulated ASM2464PD running
# our firmware with the register-model gfx1100 behind it, and the projected time (drivers/am
# README, "USB cost": 125 us per transfer as a bound, measured bridge rates). Prints the table.
#   usb_cost.sh [BUILD]   (default build/; builds the test if needed)
# CAPGRAPH_USB_TRANSFER_US=US projects with a per-transfer latency measured on a board
# (`bridge_hw_test latency`) instead of the 125 us bound.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$repo/build}
cmake --build "$build" --target targets_amd_gfx1100_bridge_test > /dev/null
"$build/targets/amd/fake/gfx1100/targets_amd_gfx1100_bridge_test" -tc="the USB cost report*" 2>&1 |
  awk '/MESSAGE: USB cost/ { sub(/.*MESSAGE: /, ""); on = 1 } on && /^$/ { exit } on { print }
       /SKIP:/ { print; exit 77 }'
