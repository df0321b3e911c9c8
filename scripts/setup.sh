#!/usr/bin/env bash
# setup.sh [BUILD_DIR]: installs what is missing on Debian 12, then configures and builds capgraph.
# Used by the quick start (demo.sh, test.sh) and CI. Safe to run again: it only installs what is
# missing and rebuilds what changed.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$repo/build}

# Debian packages: the toolchain, LLVM 19 (the compiler's only big dependency), flatbuffers,
# doctest, libusb and SDCC (bridge firmware), qemu-user and the aarch64 cross compiler (aarch64
# captures are tested under emulation), Node.js/npm (ONNX Runtime, the reference in the tests),
# chromium (the `capgraph view` test opens the page headless and screenshots it), clang 19 with
# its sanitizer and libFuzzer runtimes (scripts/sanitize.sh and scripts/fuzz.sh; g++ builds the
# rest), clang-format-19 (ctest format_check holds the tree to .clang-format), ccache (used when present: rebuilds, the Mesa build and the sanitizer build share it),
# python3-onnx (ONNX 1.12 with its backend node-test generators: the `onnx_node` suite makes ONNX's
# own 922 node tests from it, tests/onnx_node/README.md; the Python package's tests write models
# with it), python3-numpy (the one dependency of the Python package, python/).
#
# Progress: each step says what it is, its number, and the time since set-up started; the build
# folds Ninja's [n/N] lines into one updating line on a terminal and prints a plain line every
# 10% otherwise (CI logs). On a fresh 2-core machine the whole set-up takes about 18 minutes: apt
# (~3), Mesa's ir3 (~7; CAPGRAPH_ADRENO=OFF skips it and the Adreno compiler), the build (~8).
packages=(cmake ninja-build g++ pkg-config llvm-19-dev libflatbuffers-dev flatbuffers-compiler doctest-dev
          libusb-1.0-0-dev sdcc qemu-user g++-aarch64-linux-gnu zlib1g-dev libzstd-dev libxml2-dev libedit-dev libffi-dev chromium
          clang-19 libclang-rt-19-dev clang-format-19 ccache python3-onnx python3-numpy)
started=$(date +%s)
# step K TEXT: a step's heading with the time since set-up started.
step() {
  local t=$(( $(date +%s) - started ))
  printf 'setup: [%s/3] %s (at %dm%02ds)\n' "$1" "$2" $((t / 60)) $((t % 60))
}
step 1 "Debian packages"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else
    echo "setup: error: need root or sudo to install: ${missing[*]}" >&2; exit 1
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc)
mkdir -p "$build"
# The Adreno target's compiler half links Mesa's ir3, built once from Debian's mesa source into
# $build/mesa (a few minutes the first time, nothing after). CAPGRAPH_ADRENO=OFF skips it.
adreno=${CAPGRAPH_ADRENO:-ON}
if [[ $adreno != OFF ]]; then
  step 2 "Mesa's ir3 for the Adreno compiler (minutes the first time; CAPGRAPH_ADRENO=OFF skips it)"
  bash "$repo/scripts/mesa_ir3.sh" "$build"
else
  step 2 "Mesa's ir3: skipped (CAPGRAPH_ADRENO=OFF)"
fi
log=$build/build.log
step 3 "building in $build ($jobs jobs; log in $log)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
# build_progress: Ninja's output to the log; its [n/N] to one updating line (a terminal) or a line
# per 10% (not a terminal).
build_progress() {
  local line n total pct shown=-1 t
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    n=${BASH_REMATCH[1]}; total=${BASH_REMATCH[2]}; pct=$((100 * n / total)); t=$(( $(date +%s) - started ))
    if [[ -t 1 ]]; then
      printf '\r  [%d/%d] %3d%%  %dm%02ds ' "$n" "$total" "$pct" $((t / 60)) $((t % 60))
    elif ((pct / 10 > shown)); then
      shown=$((pct / 10)); printf '  [%d/%d] %d%% at %dm%02ds\n' "$n" "$total" "$pct" $((t / 60)) $((t % 60))
    fi
  done
  [[ -t 1 ]] && echo
  return 0
}
: >"$log"
if ! cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPGRAPH_ADRENO="$adreno" "${launcher[@]}" >>"$log" 2>&1 ||
   ! { cmake --build "$build" -j "$jobs" 2>&1; echo "build status $?"; } | build_progress ||
   ! tail -1 "$log" | grep -q "build status 0"; then
  grep -E "error|Error" "$log" | head -20 >&2
  echo "setup: error: the build failed; the whole log is $log" >&2
  exit 1
fi
t=$(( $(date +%s) - started ))
echo "setup: done in $((t / 60))m$((t % 60))s. Python: PYTHONPATH=$build/python python3 -c \"import capgraph\""
