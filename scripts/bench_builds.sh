#!/usr/bin/env bash
# bench_builds.sh OLD_CAPGRAPH NEW_CAPGRAPH [ZOO_DIR]: two capgraph builds side by side. Each build
# compiles every model of the zoo (default ../shared/zoo) for TARGET (default cpu-x86_64) and
# replays its own capture with its own `capgraph bench`, 1 thread (THREADS), RUNS runs (default
# 30), ROUNDS interleaved rounds (default 3), best median of each. AVX2_ONLY=1 runs both under
# tests/tools/libavx2_only.so (as on an AVX2-only CPU; scripts/bench.sh). Used for issue 17's
# "no model slower on AVX2 than before": the build before the issue against today's.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
old=${1:?usage: bench_builds.sh OLD_CAPGRAPH NEW_CAPGRAPH [ZOO_DIR]}
new=${2:?usage: bench_builds.sh OLD_CAPGRAPH NEW_CAPGRAPH [ZOO_DIR]}
zoo=${3:-$repo/../shared/zoo}
target=${TARGET:-cpu-x86_64} threads=${THREADS:-1} runs=${RUNS:-30} rounds=${ROUNDS:-3}
for b in "$old" "$new"; do [[ -x $b ]] || { echo "bench_builds: $b is not an executable" >&2; exit 1; }; done
[[ -d $zoo ]] || { echo "bench_builds: no zoo at $zoo" >&2; exit 1; }
masked=()
if [[ ${AVX2_ONLY:-0} == 1 ]]; then
  lib=${BUILD:-$repo/build}/tests/tools/libavx2_only.so
  [[ -f $lib ]] || { echo "bench_builds: AVX2_ONLY=1 needs $lib" >&2; exit 1; }
  masked=(env LD_PRELOAD="$lib" GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512VL,-AVX512BW,-AVX512DQ,-AVX512CD)
fi
work=$(mktemp -d /tmp/capgraph-builds.XXXXXX)
trap 'rm -rf "$work"' EXIT
median_of() { node -e "console.log(JSON.parse(require('fs').readFileSync(0,'utf8')).median_ms)"; }
echo "target $target, $threads thread(s), best of $rounds interleaved rounds of $runs runs${masked:+, AVX2_ONLY}"
echo "| model | old ms | new ms | new/old |"
echo "|---|---|---|---|"
for dir in "$zoo"/*/; do
  name=$(basename "$dir")
  [[ -f $dir/meta.json ]] || continue
  readarray -t shapes < <(node -e "const m=require('$dir/meta.json'); for (const i of m.inputs) console.log('--input-shape\n'+i.name+'='+i.dims.join('x'))")
  if ! "$old" compile "$dir/model.onnx" -o "$work/old.cap" --target "$target" "${shapes[@]}" >/dev/null 2>"$work/err"; then
    echo "| $name | old build cannot compile it: $(head -c 120 "$work/err") | | |"; continue
  fi
  "$new" compile "$dir/model.onnx" -o "$work/new.cap" --target "$target" "${shapes[@]}" >/dev/null
  best_old=1e9 best_new=1e9
  for ((r = 0; r < rounds; r++)); do
    "${masked[@]}" "$old" bench "$work/old.cap" --runs "$runs" --threads "$threads" >"$work/o.json"
    "${masked[@]}" "$new" bench "$work/new.cap" --runs "$runs" --threads "$threads" >"$work/n.json"
    best_old=$(awk -v a="$best_old" -v b="$(median_of <"$work/o.json")" 'BEGIN { print (b < a ? b : a) }')
    best_new=$(awk -v a="$best_new" -v b="$(median_of <"$work/n.json")" 'BEGIN { print (b < a ? b : a) }')
  done
  awk -v n="$name" -v o="$best_old" -v m="$best_new" 'BEGIN { printf "| %s | %.2f | %.2f | %.2f |\n", n, o, m, m / o }'
done
