#!/usr/bin/env bash
# bench_shapes.sh [THREADS...]: the shape sweep of issue 27. Every point of
# tests/tools/shape_sweep_gen (single convolutions over input channels 1-320, output channels
# 8-1000, kernels 1-7, strides 1-2, dense / depthwise / grouped, float and uint8 inputs with a
# Cast/Sub/Div in front, NHWC models transposed in the graph, odd spatial sizes; matrix products
# with 1, 2 or 8 rows and odd K / N) is compiled, checked against ONNX Runtime (outputs within the
# conformance tolerance, tests/tools/npy_compare) and timed beside it: capgraph `bench` and ONNX
# Runtime (tests/ort/ort_bench.mjs) alternate ROUNDS times (default 2), the best median of each
# kept. Each point's roofline bound is max(FLOP / peak, bytes / bandwidth), from fma_peak (one
# core x threads) and mem_bw's streaming read, both measured first; "bytes" are the point's
# input as stored, its weights and its output, each once (meta.json). A point meets the bar of
# issue 27 when it is within 2x of ONNX Runtime or at >= 30% of its roofline bound.
# Prints a markdown table (one row per point and thread count, the misses marked) and a summary:
# the geometric mean of the ratios, the worst ratios, the misses, and the largest compile time.
# TARGET (default cpu), RUNS (per timing, default 20), ROUNDS, BUILD, SET (sweep, or quick: six
# points), ONLY (a regular expression on point names), CHECK=0 (skip the output check), PEAK /
# BANDWIDTH (GFLOP/s per core, GB/s: replace the measurements, e.g. quiet figures on a loaded
# machine), AVX2_ONLY=1 (as bench.sh: CPUID masked to AVX2 for fma_peak, capgraph and ONNX Runtime,
# TARGET cpu-x86_64). Needs a build (scripts/setup.sh) and onnxruntime-node
# (scripts/fetch_test_deps.sh; in $CAPGRAPH_TEST_DEPS or build/deps).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$repo/build}
threads=("$@"); ((${#threads[@]})) || threads=(1)
deps=${CAPGRAPH_TEST_DEPS:-$build/deps}
export ORT_DIR=${ORT_DIR:-$deps/ort}
runs=${RUNS:-20}
rounds=${ROUNDS:-2}
capgraph=$build/cli/capgraph
tools=$build/tests/tools
for tool in "$capgraph" "$tools/fma_peak" "$tools/mem_bw" "$tools/shape_sweep_gen" "$tools/npy_compare"; do
  [[ -x $tool ]] || { echo "bench_shapes: $tool is missing: build first (scripts/setup.sh)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "bench_shapes: needs node (ONNX Runtime, JSON)" >&2; exit 1; }
[[ -d $ORT_DIR/node_modules/onnxruntime-node ]] ||
  { echo "bench_shapes: no onnxruntime-node in $ORT_DIR (scripts/fetch_test_deps.sh)" >&2; exit 1; }
masked=()
if [[ ${AVX2_ONLY:-0} == 1 ]]; then
  [[ -f $tools/libavx2_only.so ]] || { echo "bench_shapes: AVX2_ONLY=1 needs $tools/libavx2_only.so" >&2; exit 1; }
  grep -qw cpuid_fault /proc/cpuinfo || { echo "bench_shapes: AVX2_ONLY=1 needs CPUID faulting (cpuid_fault in /proc/cpuinfo)" >&2; exit 1; }
  masked=(env LD_PRELOAD="$tools/libavx2_only.so"
    GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX512_VNNI,-AVX512_BF16,-AVX512_FP16)
  TARGET=${TARGET:-cpu-x86_64}
fi
target=${TARGET:-cpu}
work=$(mktemp -d /tmp/capgraph-shapes.XXXXXX)
trap 'rm -rf "$work"' EXIT
json() { node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8')); console.log(o$1)"; }

# The machine first, on its own (no compile or node running beside it).
"${masked[@]}" "$tools/fma_peak" 1 >"$work/peak.json"
core_peak=${PEAK:-$(json .gflops <"$work/peak.json")}
vector=$(json '.vector + " (" + o.lanes + " float lanes)"' <"$work/peak.json")
declare -A peak bandwidth
for t in "${threads[@]}"; do
  "$tools/mem_bw" "$t" >"$work/bw$t.json"
  bandwidth[$t]=${BANDWIDTH:-$(json .read_gbps <"$work/bw$t.json")}
  peak[$t]=$(awk -v p="$core_peak" -v t="$t" 'BEGIN { print p * t }')
done
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); vectors: $vector; capgraph target: $target${masked:+; AVX2_ONLY: CPUID masked to AVX2}"
for t in "${threads[@]}"; do
  echo "  $t thread(s): FP32 peak ${peak[$t]} GFLOP/s${PEAK:+ (given by PEAK)}, memory bandwidth ${bandwidth[$t]} GB/s${BANDWIDTH:+ (given by BANDWIDTH)}"
done
echo "date: $(date -u +%Y-%m-%d), load average at start: $load, runs per timing: $runs, best of $rounds alternating rounds, capgraph $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo

"$tools/shape_sweep_gen" "$work/points" "${SET:-sweep}" >/dev/null
: >"$work/rows"
for dir in "$work"/points/*/; do
  name=$(basename "$dir")
  [[ -z ${ONLY:-} || $name =~ $ONLY ]] || continue
  dims=$(json '.inputs[0].dims.join("x")' <"$dir/meta.json")
  flops=$(json .flops <"$dir/meta.json")
  bytes=$(json .bytes <"$dir/meta.json")
  start=$(date +%s%N)
  if ! "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cap" --target "$target" --input-shape "x=$dims" \
       >"$work/compile.log" 2>&1; then
    echo "$name compile-failed" >&2; sed 's/^/  /' "$work/compile.log" >&2
    echo "$name 0 $flops $bytes 0 0 0 compile-failed" >>"$work/rows"
    continue
  fi
  compile_s=$(awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f", (b - a) / 1e9 }')
  check=-
  if [[ ${CHECK:-1} != 0 ]]; then
    rm -rf "$work/out_cg" "$work/out_ort"
    "${masked[@]}" "$capgraph" run "$work/$name.cap" --input "x=$dir/input_0.npy" --output-dir "$work/out_cg" >/dev/null
    "${masked[@]}" node "$repo/tests/ort/ort_run.mjs" "$dir/model.onnx" "$work/out_ort" "x=$dir/input_0.npy" >/dev/null
    if "$tools/npy_compare" "$work/out_cg/y.npy" "$work/out_ort/y.npy" >"$work/compare.log" 2>&1; then check=ok
    else check=DIFFERS; sed 's/^/  /' "$work/compare.log" >&2; echo "$name: output differs from ONNX Runtime" >&2; fi
  fi
  for t in "${threads[@]}"; do
    best_cg=1e9; best_ort=1e9
    for ((r = 0; r < rounds; r++)); do
      "${masked[@]}" "$capgraph" bench "$work/$name.cap" --runs "$runs" --threads "$t" >"$work/cg.json"
      best_cg=$(awk -v a="$best_cg" -v b="$(json .median_ms <"$work/cg.json")" 'BEGIN { print (b < a ? b : a) }')
      "${masked[@]}" node "$repo/tests/ort/ort_bench.mjs" "$dir/model.onnx" "$t" "$runs" "x=$dir/input_0.npy" >"$work/ort.json"
      best_ort=$(awk -v a="$best_ort" -v b="$(json .ort_median_ms <"$work/ort.json")" 'BEGIN { print (b < a ? b : a) }')
    done
    echo "$name $t $flops $bytes $best_cg $best_ort $compile_s $check ${peak[$t]} ${bandwidth[$t]}" >>"$work/rows"
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo

node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").filter(l => l).map(l => l.split(" "));
console.log("| point | threads | MFLOP | MB moved | capgraph ms | ORT ms | ratio | GFLOP/s | roofline ms | % of roofline | bound | compile s | output | bar |");
console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
const ratios = [], misses = [], failed = [];
let worst_compile = [0, ""];
for (const [name, t, flops, bytes, cg, ort, compile, check, peak, bw] of rows) {
  if (check === "compile-failed") { failed.push(name); console.log(`| ${name} | | | | compile failed | | | | | | | | | MISS |`); continue; }
  const f = +flops, b = +bytes, c = +cg, o = +ort;
  const t_compute = f / (+peak * 1e6), t_memory = b / (+bw * 1e6);
  const ideal = Math.max(t_compute, t_memory), share = ideal / c, ratio = c / o;
  const meets = (ratio <= 2 || share >= 0.3) && check !== "DIFFERS";
  ratios.push(ratio);
  if (!meets) misses.push(`${name} (${t} thread(s): ${ratio.toFixed(2)}x ORT, ${(100 * share).toFixed(0)}% of roofline${check === "DIFFERS" ? ", output differs" : ""})`);
  if (+compile > worst_compile[0]) worst_compile = [+compile, name];
  console.log(`| ${name} | ${t} | ${(f / 1e6).toFixed(1)} | ${(b / 1e6).toFixed(2)} | ${c.toFixed(3)} | ${o.toFixed(3)} | ${ratio.toFixed(2)} | ` +
              `${(f / c / 1e6).toFixed(1)} | ${ideal.toFixed(3)} | ${(100 * share).toFixed(0)}% | ${t_compute >= t_memory ? "compute" : "memory"} | ` +
              `${compile} | ${check} | ${meets ? "ok" : "MISS"} |`);
}
const geo = Math.exp(ratios.reduce((a, r) => a + Math.log(r), 0) / Math.max(1, ratios.length));
const sorted = rows.filter(r => r[7] !== "compile-failed").map(r => [+r[4] / +r[5], r[0], r[1]]).sort((a, b) => b[0] - a[0]);
console.log(`\n${ratios.length} timings: geometric mean of capgraph / ORT ${geo.toFixed(2)}; worst: ` +
            sorted.slice(0, 5).map(([r, n, t]) => `${n} (${t}t) ${r.toFixed(2)}`).join(", "));
console.log(`largest compile: ${worst_compile[0].toFixed(2)} s (${worst_compile[1]})`);
console.log(`below the bar (> 2x ORT and < 30% of roofline, or wrong): ${misses.length + failed.length}` +
            (misses.length + failed.length ? "\n  " + misses.concat(failed.map(n => n + " (compile failed)")).join("\n  ") : ""));
process.exit(misses.length + failed.length ? 3 : 0);
' "$work/rows"
