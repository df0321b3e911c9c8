#!/usr/bin/env bash
# bench.sh [ZOO_DIR] [THREADS...]: capgraph against ONNX Runtime, side by side, on every model of a
# zoo folder (default ../shared/zoo: one folder per model with model.onnx, meta.json, input_<k>.npy).
# For each model and thread count the two are timed in alternation (3 rounds, the best median of
# each side kept), so a busy machine slows both alike. Prints a markdown table: GFLOP per run,
# medians, the ratio capgraph/ORT (below 1 = capgraph faster) and capgraph's % of this CPU's FP32
# peak (measured first with tests/tools/fma_peak). Needs a build (scripts/setup.sh) and
# onnxruntime-node (scripts/fetch_test_deps.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$repo/build}
zoo=${1:-$repo/../shared/zoo}; shift || true
threads=("$@"); ((${#threads[@]})) || threads=(1 2)
export ORT_DIR=${ORT_DIR:-$build/deps/ort}
runs=${RUNS:-20}
capgraph=$build/cli/capgraph
[[ -x $capgraph ]] || { echo "bench: build first (scripts/setup.sh)" >&2; exit 1; }
[[ -d $zoo ]] || { echo "bench: no zoo at $zoo" >&2; exit 1; }
work=$(mktemp -d /tmp/capgraph-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
json() { node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8')); console.log(o$1)"; }

# Peak: one core measured, times the thread count (a multi-thread measurement is at the mercy of
# whatever else runs on the other cores at that instant; the models are timed over many runs).
core_peak=$("$build/tests/tools/fma_peak" 1 | json .gflops)
declare -A peak
for t in "${threads[@]}"; do peak[$t]=$(awk -v p="$core_peak" -v t="$t" 'BEGIN { print p * t }'); done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); FP32 peak: $core_peak GFLOP/s per core (measured) x threads"
echo "date: $(date -u +%Y-%m-%d), runs per timing: $runs, capgraph $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
echo "| model | GFLOP | threads | capgraph ms | ORT ms | ratio | % of peak |"
echo "|---|---|---|---|---|---|---|"
for dir in "$zoo"/*/; do
  name=$(basename "$dir")
  [[ -f $dir/meta.json ]] || continue
  readarray -t ins < <(node -e "const m=require('$dir/meta.json'); for (const i of m.inputs) console.log(i.name+'='+'$dir'+i.file+' '+i.name+'='+i.dims.join('x'))")
  shapes=(); feeds=()
  for l in "${ins[@]}"; do shapes+=(--input-shape "${l##* }"); feeds+=("${l%% *}"); done
  "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cap" "${shapes[@]}" >/dev/null
  gflop=$("$capgraph" inspect "$work/$name.cap" --json | json .flops/1e9)
  for t in "${threads[@]}"; do
    best_cg=1e9; best_ort=1e9
    for round in 1 2 3; do
      cg=$("$capgraph" bench "$work/$name.cap" --runs "$runs" --threads "$t" | json .median_ms)
      ort=$(node "$repo/tests/ort/ort_bench.mjs" "$dir/model.onnx" "$t" "$runs" "${feeds[@]}" | json .ort_median_ms)
      best_cg=$(awk -v a="$best_cg" -v b="$cg" 'BEGIN { print (b < a ? b : a) }')
      best_ort=$(awk -v a="$best_ort" -v b="$ort" 'BEGIN { print (b < a ? b : a) }')
    done
    awk -v n="$name" -v g="$gflop" -v t="$t" -v c="$best_cg" -v o="$best_ort" -v p="${peak[$t]}" \
      'BEGIN { printf "| %s | %.2f | %d | %.2f | %.2f | %.2f | %.0f%% |\n", n, g, t, c, o, c / o, 100 * g / (c / 1000) / p }'
  done
done
