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
# own 922 node tests from it, tests/onnx_node/README.md; nothing else uses Python).
packages=(cmake ninja-build g++ pkg-config llvm-19-dev libflatbuffers-dev flatbuffers-compiler doctest-dev
          libusb-1.0-0-dev sdcc qemu-user g++-aarch64-linux-gnu zlib1g-dev libzstd-dev libxml2-dev libedit-dev libffi-dev chromium
          clang-19 libclang-rt-19-dev clang-format-19 ccache python3-onnx)
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
  bash "$repo/scripts/mesa_ir3.sh" "$build"
fi
log=$build/build.log
echo "setup: building in $build ($jobs jobs; log in $log)"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if ! { cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPGRAPH_ADRENO="$adreno" "${launcher[@]}" &&
       cmake --build "$build" -j "$jobs"; } >"$log" 2>&1; then
  grep -E "error|Error" "$log" | head -20 >&2
  echo "setup: error: the build failed; the whole log is $log" >&2
  exit 1
fi
