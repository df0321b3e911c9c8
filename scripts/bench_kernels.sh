#!/usr/bin/env bash
# bench_kernels.sh [THREADS...]: the per-kernel check of issue 17. Every kernel of the wider
# benchmark set (tests/tools/family_gen, bench size) and of the zoo (ZOO, default ../shared/zoo;
# ZOO= to skip it) must reach >= 30% of this CPU's FP32 peak, or, when memory-bound, >= 50% of the
# measured memory bandwidth. Measures both first (tests/tools/fma_peak on one core x threads;
# tests/tools/mem_bw's streaming read at each thread count, buffers well beyond the LLC), then
# compiles each model and runs `capgraph profile --peak --bandwidth --json --best-of PROFILES` at
# each thread count (default 1 2). A step is compute-bound when its FLOP per byte reaches the
# machine balance (peak / bandwidth), memory-bound below it, and "small" when even the ideal
# time is under 2 us (launch cost dominates: cli/step_bounds.h). Bytes: the output's stored bytes
# plus the whole size of every other bound buffer (inputs, weights), each once.
# Prints per model: steps, time, share of the time in steps below their bar and in small steps;
# then every step below its bar, largest time share first; SMALL=1 also lists the small steps.
# TARGET (default cpu), RUNS (per profile, default 20), PROFILES (default 3), BUILD, MEM_MIB
# (mem_bw's buffer size) as you like; FAMILIES=0 skips the family set. PEAK (GFLOP/s per core)
# and BANDWIDTH (GB/s, used at every thread count) replace the measurements, e.g. with figures
# taken on a quiet machine when this one is busy (a loaded core measures a lower peak, which
# makes every bar easier).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$repo/build}
zoo=${ZOO-$repo/../shared/zoo}
threads=("$@"); ((${#threads[@]})) || threads=(1 2)
runs=${RUNS:-20}
profiles=${PROFILES:-3}
capgraph=$build/cli/capgraph
for tool in "$capgraph" "$build/tests/tools/fma_peak" "$build/tests/tools/mem_bw" "$build/tests/tools/family_gen"; do
  [[ -x $tool ]] || { echo "bench_kernels: $tool is missing: build first (scripts/setup.sh)" >&2; exit 1; }
done
command -v node >/dev/null || { echo "bench_kernels: needs node (to read the JSON)" >&2; exit 1; }
work=$(mktemp -d /tmp/capgraph-kernels.XXXXXX)
trap 'rm -rf "$work"' EXIT
json() { node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8')); console.log(o$1)"; }

# The machine first, on its own (no compile or node running beside it).
"$build/tests/tools/fma_peak" 1 >"$work/peak.json"
core_peak=${PEAK:-$(json .gflops <"$work/peak.json")}
vector=$(json .vector <"$work/peak.json")
declare -A peak bandwidth
for t in "${threads[@]}"; do
  "$build/tests/tools/mem_bw" "$t" ${MEM_MIB:+"$MEM_MIB"} >"$work/bw$t.json"
  bandwidth[$t]=${BANDWIDTH:-$(json .read_gbps <"$work/bw$t.json")}
  peak[$t]=$(awk -v p="$core_peak" -v t="$t" 'BEGIN { print p * t }')
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); FP32 peak $core_peak GFLOP/s per core ($vector${PEAK:+, given by PEAK}); capgraph target: ${TARGET:-cpu}${BANDWIDTH:+; bandwidth given by BANDWIDTH}"
for t in "${threads[@]}"; do
  echo "  $t thread(s): peak ${peak[$t]} GFLOP/s, memory bandwidth ${bandwidth[$t]} GB/s (read; $(json '.copy_gbps + " copy, " + o.triad_gbps + " triad, buffers " + o.buffer_mib + " MiB, LLC " + o.llc_mib + " MiB"' <"$work/bw$t.json")), balance $(awk -v p="${peak[$t]}" -v b="${bandwidth[$t]}" 'BEGIN { printf "%.1f", p / b }') FLOP/B"
done
echo "date: $(date -u +%Y-%m-%d), runs per profile: $runs, best of $profiles profiles, capgraph $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo

dirs=()
if [[ ${FAMILIES:-1} != 0 ]]; then
  "$build/tests/tools/family_gen" "$work/families" bench >/dev/null
  dirs+=("$work"/families/*/)
fi
if [[ -n $zoo ]]; then
  [[ -d $zoo ]] || { echo "bench_kernels: no zoo at $zoo (ZOO= to skip it)" >&2; exit 1; }
  dirs+=("$zoo"/*/)
fi
for dir in "${dirs[@]}"; do
  name=$(basename "$dir")
  [[ -f $dir/meta.json ]] || continue
  readarray -t shapes < <(node -e "const m=require('$dir/meta.json'); for (const i of m.inputs) console.log('--input-shape\n'+i.name+'='+i.dims.join('x'))")
  "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cap" --target "${TARGET:-cpu}" "${shapes[@]}" >/dev/null
  for t in "${threads[@]}"; do
    "$capgraph" profile "$work/$name.cap" --threads "$t" --runs "$runs" --best-of "$profiles" \
      --peak "${peak[$t]}" --bandwidth "${bandwidth[$t]}" --json >"$work/$name.t$t.json"
    echo "$name $work/$name.t$t.json" >>"$work/profiles"
  done
done

SMALL=${SMALL:-0} node -e '
const fs = require("fs");
const rows = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(l => l.split(" "));
const misses = [], small = [];
console.log("| model | threads | steps | sum of step ms | below bar: steps | below bar: % of time | small: steps | small: % of time |");
console.log("|---|---|---|---|---|---|---|---|");
for (const [name, file] of rows) {
  const p = JSON.parse(fs.readFileSync(file, "utf8"));
  let miss_ms = 0, miss_n = 0, small_ms = 0, small_n = 0;
  for (const s of p.steps) {
    const row = Object.assign({ model: name, threads: p.threads, share: p.total_ms > 0 ? s.ms / p.total_ms : 0 }, s);
    if (s.bound === "small") { small_n++; small_ms += s.ms; small.push(row); }
    else if (!s.meets) { miss_n++; miss_ms += s.ms; misses.push(row); }
  }
  const pc = x => (p.total_ms > 0 ? 100 * x / p.total_ms : 0).toFixed(1);
  console.log(`| ${name} | ${p.threads} | ${p.steps.length} | ${p.total_ms.toFixed(3)} | ${miss_n} | ${pc(miss_ms)}% | ${small_n} | ${pc(small_ms)}% |`);
}
const table = (title, list) => {
  console.log("\n" + title + "\n");
  console.log("| model | threads | step | kernel | first ONNX node | ms | share | GFLOP/s | % peak | GB/s | % bw | FLOP/B | bound |");
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
  list.sort((a, b) => b.share - a.share);
  for (const s of list)
    console.log(`| ${s.model} | ${s.threads} | ${s.step} | ${s.kernel} | ${s.onnx} | ${s.ms.toFixed(4)} | ${(100 * s.share).toFixed(1)}% | ` +
                `${s.gflops.toFixed(1)} | ${(100 * s.peak_share).toFixed(0)}% | ${s.gbps.toFixed(1)} | ${(100 * s.bandwidth_share).toFixed(0)}% | ` +
                `${s.intensity.toFixed(2)} | ${s.bound} |`);
};
table(`Below their bar (${misses.length} steps; compute-bound < 30% of peak, memory-bound < 50% of bandwidth), largest time share first:`, misses);
if (process.env.SMALL === "1") table(`Small steps (${small.length}: ideal time under 2 us, launch cost dominates):`, small);
' "$work/profiles"
