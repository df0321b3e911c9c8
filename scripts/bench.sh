#!/usr/bin/env bash
# bench.sh [ZOO_DIR] [THREADS...]: capgraph against ONNX Runtime, side by side, on every model of a
# zoo folder (default ../shared/zoo: one folder per model with model.onnx, meta.json, input_<k>.npy).
# For each model and thread count the two are timed in alternation (3 rounds, the best median of
# each side kept), so a busy machine slows both alike. Prints three markdown tables:
#  1. speed: GFLOP per run, medians, the ratio capgraph/ORT (below 1 = capgraph faster) and
#     capgraph's % of this CPU's FP32 peak (measured first with tests/tools/fma_peak);
#  2. memory and compile time: the median of 3 compiles (no tuning), weights and arena (capgraph
#     inspect), issue 3's budget weights + arena + 16 MiB, and the peak resident memory of a process
#     replaying the capture (tests/tools/replay_rss: VmHWM) and of one running ONNX Runtime
#     (tests/ort/ort_bench.mjs: node's maxRSS, node itself included), medians of the 3 rounds;
#  3. replay overhead on 200 tiny kernels (tests/tools/tiny_chain_gen: 200 MatMul+Tanh layers,
#     which cannot fuse): tests/tools/replay_overhead's replay time minus the same kernels called
#     directly in a tight loop, medians of 5 rounds, for captures made for 1 thread (split by the
#     runtime) and for the thread count itself (the compiler's partition).
# TARGET=NAME compiles for that CPU target (default cpu: this machine; cpu-x86_64 is AVX2 only).
# AVX2_ONLY=1 times both sides as on an AVX2-only x86-64 CPU on an AVX-512 one: fma_peak, capgraph
# and ONNX Runtime run with tests/tools/libavx2_only.so preloaded (CPUID faulting hides AVX-512, so
# ONNX Runtime's MLAS picks its AVX2 kernels and fma_peak measures 256-bit FMAs) and glibc's
# AVX-512 string functions off; TARGET defaults to cpu-x86_64 (strict x86-64-v3) there.
# Needs a build (scripts/setup.sh) and onnxruntime-node and the OCR models
# (scripts/fetch_test_deps.sh; in $CAPGRAPH_TEST_DEPS or build/deps).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$repo/build}
zoo=${1:-$repo/../shared/zoo}; shift || true
threads=("$@"); ((${#threads[@]})) || threads=(1 2)
deps=${CAPGRAPH_TEST_DEPS:-$build/deps}
export ORT_DIR=${ORT_DIR:-$deps/ort}
runs=${RUNS:-20}
overhead_runs=${OVERHEAD_RUNS:-2000}
capgraph=$build/cli/capgraph
replay_rss=$build/tests/tools/replay_rss
for tool in "$capgraph" "$replay_rss" "$build/tests/tools/replay_overhead" "$build/tests/tools/tiny_chain_gen" "$build/tests/tools/npy_random"; do
  [[ -x $tool ]] || { echo "bench: $tool is missing: build first (scripts/setup.sh)" >&2; exit 1; }
done
[[ -d $zoo ]] || { echo "bench: no zoo at $zoo" >&2; exit 1; }
masked=()
if [[ ${AVX2_ONLY:-0} == 1 ]]; then
  [[ -f $build/tests/tools/libavx2_only.so ]] || { echo "bench: AVX2_ONLY=1 needs $build/tests/tools/libavx2_only.so (x86-64 Linux build)" >&2; exit 1; }
  grep -qw cpuid_fault /proc/cpuinfo || { echo "bench: AVX2_ONLY=1 needs CPUID faulting (cpuid_fault in /proc/cpuinfo), which this machine lacks" >&2; exit 1; }
  masked=(env LD_PRELOAD="$build/tests/tools/libavx2_only.so"
    GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD,-AVX512_VNNI,-AVX512_BF16,-AVX512_FP16)
  TARGET=${TARGET:-cpu-x86_64}
fi
work=$(mktemp -d /tmp/capgraph-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
json() { node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8')); console.log(o$1)"; }

# PP-OCRv4 rec (the SVTR transformer: 3-D activations, attention MatMuls) is not in the zoo; it is
# in the OCR models the tests fetch. It is timed beside the zoo from a zoo-like folder made here
# (seeded random input: speed only, the OCR conformance test checks its outputs).
rec=$deps/ocr-models/package/assets/ch_PP-OCRv4_rec_infer.onnx
if [[ -f $rec ]]; then
  mkdir -p "$work/extra/ch_PP-OCRv4_rec_infer"
  ln -s "$rec" "$work/extra/ch_PP-OCRv4_rec_infer/model.onnx"
  "$build/tests/tools/npy_random" "$work/extra/ch_PP-OCRv4_rec_infer/input_0.npy" 1x3x48x320 1 >/dev/null
  echo '{"inputs": [{"name": "x", "file": "input_0.npy", "dims": [1, 3, 48, 320]}]}' >"$work/extra/ch_PP-OCRv4_rec_infer/meta.json"
else
  echo "bench: no PP-OCRv4 rec at $rec (scripts/fetch_test_deps.sh): timing the zoo only" >&2
fi

# Peak: one core measured, times the thread count (a multi-thread measurement is at the mercy of
# whatever else runs on the other cores at that instant; the models are timed over many runs).
"${masked[@]}" "$build/tests/tools/fma_peak" 1 >"$work/peak.json"  # to a file first: node must not start while it measures
core_peak=$(json .gflops <"$work/peak.json")
vector=$(json .vector <"$work/peak.json")
declare -A peak
for t in "${threads[@]}"; do peak[$t]=$(awk -v p="$core_peak" -v t="$t" 'BEGIN { print p * t }'); done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); FP32 peak: $core_peak GFLOP/s per core (measured on $vector vectors) x threads; capgraph target: ${TARGET:-cpu}${masked:+; AVX2_ONLY: CPUID masked to AVX2 for fma_peak, capgraph and ONNX Runtime}"
echo "date: $(date -u +%Y-%m-%d), runs per timing: $runs, capgraph $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?')"
echo
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
declare -a memory_rows
: >"$work/rss_node"
echo "| model | GFLOP | threads | capgraph ms | ORT ms | ratio | % of peak |"
echo "|---|---|---|---|---|---|---|"
for dir in "$zoo"/*/ "$work"/extra/*/; do
  name=$(basename "$dir")
  [[ -f $dir/meta.json ]] || continue
  readarray -t ins < <(node -e "const m=require('$dir/meta.json'); for (const i of m.inputs) console.log(i.name+'='+'$dir'+i.file+' '+i.name+'='+i.dims.join('x'))")
  shapes=(); feeds=(); inputs=()
  for l in "${ins[@]}"; do shapes+=(--input-shape "${l##* }"); feeds+=("${l%% *}"); inputs+=(--input "${l%% *}"); done
  compile_s=$(for i in 1 2 3; do
    start=$(date +%s%N)
    "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cap" --target "${TARGET:-cpu}" "${shapes[@]}" >/dev/null
    awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { print (b - a) / 1e9 }'
  done | median)
  "$capgraph" inspect "$work/$name.cap" --json >"$work/$name.json"
  gflop=$(json .flops/1e9 <"$work/$name.json")
  weights=$(json .weight_bytes <"$work/$name.json")
  arena=$(json .arena_bytes <"$work/$name.json")
  rss_cg=(); rss_ort=(); rss_node=()
  for t in "${threads[@]}"; do
    best_cg=1e9; best_ort=1e9
    : >"$work/rss_cg"; : >"$work/rss_ort"
    for round in 1 2 3; do
      # Output to a file first: parsing through a pipe would start node while the runs are timed.
      "${masked[@]}" "$capgraph" bench "$work/$name.cap" --runs "$runs" --threads "$t" >"$work/cg.json"
      cg=$(json .median_ms <"$work/cg.json")
      "${masked[@]}" node "$repo/tests/ort/ort_bench.mjs" "$dir/model.onnx" "$t" "$runs" "${feeds[@]}" >"$work/ort.json"
      ort=$(json .ort_median_ms <"$work/ort.json")
      json .ort_peak_rss_kib <"$work/ort.json" >>"$work/rss_ort"
      json .node_rss_kib <"$work/ort.json" >>"$work/rss_node"
      "$replay_rss" "$work/$name.cap" --threads "$t" --runs 3 "${inputs[@]}" | json .peak_rss_kib >>"$work/rss_cg"
      best_cg=$(awk -v a="$best_cg" -v b="$cg" 'BEGIN { print (b < a ? b : a) }')
      best_ort=$(awk -v a="$best_ort" -v b="$ort" 'BEGIN { print (b < a ? b : a) }')
    done
    rss_cg+=("$(mib "$(median <"$work/rss_cg")")"); rss_ort+=("$(mib "$(median <"$work/rss_ort")")")
    awk -v n="$name" -v g="$gflop" -v t="$t" -v c="$best_cg" -v o="$best_ort" -v p="${peak[$t]}" \
      'BEGIN { printf "| %s | %.2f | %d | %.2f | %.2f | %.2f | %.0f%% |\n", n, g, t, c, o, c / o, 100 * g / (c / 1000) / p }'
  done
  budget=$(awk -v w="$weights" -v a="$arena" 'BEGIN { printf "%.1f", (w + a) / 1048576 + 16 }')
  worst=$(printf '%s\n' "${rss_cg[@]}" | sort -g | tail -1)
  within=$(awk -v r="$worst" -v b="$budget" 'BEGIN { print (r <= b ? "yes" : "NO") }')
  memory_rows+=("$(IFS=/; awk -v n="$name" -v c="$compile_s" -v w="$weights" -v a="$arena" -v b="$budget" \
    -v r="${rss_cg[*]}" -v o="${rss_ort[*]}" -v ok="$within" \
    'BEGIN { printf "| %s | %.2f | %.1f | %.1f | %s | %s | %s | %s |", n, c, w / 1048576, a / 1048576, b, r, ok, o }')")
done

echo
echo "Memory and compile time (threads $(IFS=/; echo "${threads[*]}"); MiB = 2^20 bytes; node alone takes $(mib "$(median <"$work/rss_node")") MiB of ORT's figure):"
echo
echo "| model | compile s | weights MiB | arena MiB | budget MiB | capgraph peak RSS MiB | within budget | ORT peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${memory_rows[@]}"

# Replay overhead on 200 tiny kernels: one unit of work each (1x16: no thread can share it) and two
# units (8x16: a runtime re-split for several threads keeps such tiny launches on thread 0; the
# compiler's partition for 2 threads gives each thread a unit, so every launch is followed by a
# barrier).
echo
echo "Replay overhead, 200 tiny kernels (replay minus the kernels' own time; medians of 5 rounds of $overhead_runs replays):"
echo
echo "| kernels | capture made for | threads | replay us | kernels us | overhead us | per step ns |"
echo "|---|---|---|---|---|---|---|"
for rows in 1 8; do
  "$build/tests/tools/tiny_chain_gen" "$work/tiny$rows" 200 16 "$rows" >/dev/null
  for t in "${threads[@]}"; do
    made_for=(1); [[ $t == 1 ]] || made_for+=("$t")
    for made in "${made_for[@]}"; do
      cap=$work/tiny$rows/t$made.cap
      [[ -f $cap ]] || "$capgraph" compile "$work/tiny$rows/tiny_chain.onnx" -o "$cap" --threads "$made" >/dev/null
      "$build/tests/tools/replay_overhead" "$cap" --threads "$t" --runs "$overhead_runs" --rounds 5 \
        --input "x=$work/tiny$rows/input.npy" >"$work/overhead.json"
      o=$(cat "$work/overhead.json")
      printf '| 200 MatMul+Tanh %sx16 | %s thread(s) | %s | %s | %s | %s | %s |\n' "$rows" "$made" "$t" \
        "$(json .replay_us <<<"$o")" "$(json .kernels_us <<<"$o")" "$(json .overhead_us <<<"$o")" "$(json .overhead_per_step_ns <<<"$o")"
    done
  done
done
