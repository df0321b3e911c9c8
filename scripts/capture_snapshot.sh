#!/usr/bin/env bash
# capture_snapshot.sh OUT_DIR [BUILD_DIR] [ZOO_DIR]: compiles every zoo model (../shared/zoo) for
# the targets a refactoring must not change (cpu, amd-gfx1100, nv-sm90, adreno-a630, null) into
# OUT_DIR/<model>.<target>.cap, plus a checksum list OUT_DIR/SHA256SUMS. Two snapshots of the same
# machine compare with `diff A/SHA256SUMS B/SHA256SUMS` (or `cmp` file by file): a restructuring
# that changes no output leaves them identical. Targets this build lacks (no ptxas, no Mesa) are
# skipped and listed. The CPU captures depend on this machine's CPU: compare snapshots taken on one.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:?usage: capture_snapshot.sh OUT_DIR [BUILD_DIR] [ZOO_DIR]}
build=${2:-$repo/build}
zoo=${3:-$repo/../shared/zoo}
capgraph=$build/cli/capgraph
[[ -x $capgraph ]] || { echo "capture_snapshot: no $capgraph (build first)" >&2; exit 1; }
[[ -d $zoo ]] || { echo "capture_snapshot: no zoo at $zoo" >&2; exit 1; }
mkdir -p "$out"
targets=${CAPGRAPH_SNAPSHOT_TARGETS:-cpu amd-gfx1100 nv-sm90 adreno-a630 null}
failed=0
for dir in "$zoo"/*/; do
  [[ -f $dir/model.onnx && -f $dir/meta.json ]] || continue
  model=$(basename "$dir")
  shapes=$(node -e "const m=require('$dir/meta.json');
    console.log(m.inputs.map(i=>'--input-shape '+i.name+'='+i.dims.join('x')).join(' '))") || exit 1
  for t in $targets; do
    cap=$out/$model.$t.cap
    # shellcheck disable=SC2086
    if ! msg=$("$capgraph" compile "$dir/model.onnx" -o "$cap" --target "$t" $shapes 2>&1); then
      echo "capture_snapshot: $model for $t: ${msg##*$'\n'}" >&2
      failed=1
    fi
  done
done
(cd "$out" && sha256sum -- *.cap > SHA256SUMS)
echo "capture_snapshot: $(wc -l < "$out/SHA256SUMS") captures in $out"
exit $failed
