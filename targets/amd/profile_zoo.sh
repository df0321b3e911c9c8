#!/usr/bin/env bash
# profile_zoo.sh BUILD_DIR [ZOO_DIR]: the GPU schedule's before/after table (targets/amd/README.md).
# For every model of the zoo (default ../shared/zoo), compiles it for amd-gfx1100 twice: with the
# naive lowering (CAPGRAPH_GPU_NO_TILE=1: one work item per output element) and with the tiled
# schedule (compiler/codegen/gpu_tile.h); replays each once with `capgraph profile --device
# fake-amd`, whose RDNA3 emulator counts what the machine code executed, and prints a Markdown
# table: global bytes loaded per FMA and FMA share of VALU instructions over all kernels and over
# the convolutions (kernels named conv*: the issue's acceptance counts those), the 7900 XTX
# roofline estimate (an estimate, not a measurement) and the host seconds the emulation took.
set -uo pipefail
build=${1:?usage: profile_zoo.sh BUILD_DIR [ZOO_DIR]}
repo=$(cd "$(dirname "$0")/../.." && pwd)
zoo=${2:-$repo/../shared/zoo}
capgraph=$build/cli/capgraph
[[ -x $capgraph ]] || { echo "no $capgraph"; exit 2; }
[[ -d $zoo ]] || { echo "no zoo at $zoo"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# summary LOG: "B/FMA FMA% conv_B/FMA conv_FMA% est_ms" from the profile table. Columns, from
# the right: est_us LDS_B load_B/FMA store_B load_B waits SALU FMA_lanes FMA% VALU waves.
summary() {
  awk '
    /^estimate for a 7900 XTX/ { est = $(NF-1) }
    NF >= 12 && $(NF-10) ~ /^[0-9]+$/ && $1 != "total" {
      valu = $(NF-9); fma = $(NF-8) * valu / 100; lanes = $(NF-7); load = $(NF-4)
      V += valu; F += fma; L += lanes; B += load
      if ($1 ~ /^conv/) { cV += valu; cF += fma; cL += lanes; cB += load }
    }
    END {
      printf "%.2f %.1f %.2f %.1f %.3f\n", L ? B / L : 0, V ? 100 * F / V : 0, cL ? cB / cL : 0, cV ? 100 * cF / cV : 0, est
    }' "$1"
}

echo "| model | B/FMA naive -> tiled | FMA % of VALU naive -> tiled | conv B/FMA naive -> tiled | conv FMA % naive -> tiled | 7900 XTX estimate ms naive -> tiled | emulation s naive -> tiled |"
echo "|---|---|---|---|---|---|---|"
for dir in "$zoo"/*/; do
  name=$(basename "$dir")
  [[ -f $dir/model.onnx && -f $dir/meta.json ]] || continue
  shapes=$(node -e "const m=require('$dir/meta.json'); console.log(m.inputs.map(i=>'--input-shape '+i.name+'='+i.dims.join('x')).join(' '))")
  row=()
  for mode in naive tiled; do
    env=()
    [[ $mode == naive ]] && env=(CAPGRAPH_GPU_NO_TILE=1)
    if ! env "${env[@]}" "$capgraph" compile "$dir/model.onnx" -o "$work/$name.$mode.cap" --target amd-gfx1100 $shapes > "$work/log" 2>&1; then
      echo "| $name | compile failed ($mode) |"; cat "$work/log" >&2; continue 2
    fi
    t=$(date +%s%N)
    if ! "$capgraph" profile "$work/$name.$mode.cap" --device fake-amd > "$work/$name.$mode.txt" 2>&1; then
      echo "| $name | replay failed ($mode) |"; cat "$work/$name.$mode.txt" >&2; continue 2
    fi
    secs=$(awk -v ns=$(( $(date +%s%N) - t )) 'BEGIN { printf "%.1f", ns / 1e9 }')
    row+=("$(summary "$work/$name.$mode.txt") $secs")
    rm -f "$work/$name.$mode.cap"
  done
  read -r nb nf ncb ncf ne ns <<< "${row[0]}"
  read -r tb tf tcb tcf te ts <<< "${row[1]}"
  echo "| $name | $nb -> $tb | $nf -> $tf | $ncb -> $tcb | $ncf -> $tcf | $ne -> $te | $ns -> $ts |"
done
