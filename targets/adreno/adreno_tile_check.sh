#!/usr/bin/env bash
# Checks the code generator's per-kernel shape choice (compiler/adreno_tile_choice.h: a static
# a630 cost model over the tile plan) against the emulator's estimate (fake/a630_estimate.h): a
# model compiled with every candidate shape forced for every tiled kernel (CAPGRAPH_ADRENO_TILE)
# and as chosen, each replayed once on fake-adreno:profile. Prints per tiled kernel the
# estimator's microseconds in each shape, the shape chosen and the best one, then the totals:
# the model in each forced shape, as chosen, and with each kernel's best shape (the bound a perfect
# choice would reach). Estimates, not measurements. Minutes of CPU; not a ctest.
#   adreno_tile_check.sh BUILD_DIR MODEL.onnx [compile arguments...]
# e.g. adreno_tile_check.sh build ../shared/zoo/mobilenet_v2/model.onnx --precision fp16
set -uo pipefail
build=${1:?usage: adreno_tile_check.sh BUILD_DIR MODEL.onnx [compile arguments...]}
model=${2:?usage: adreno_tile_check.sh BUILD_DIR MODEL.onnx [compile arguments...]}
shift 2
capgraph=$build/cli/capgraph
command -v node > /dev/null || { echo "adreno_tile_check: node is needed"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
shapes=${CAPGRAPH_TILE_SHAPES:-"128:4x4 64:4x4 128:8x4 128:8x8 256:8x8"}
for s in chosen $shapes; do
  f=${s//:/_}; f=$work/${f//\//_}
  start=$(date +%s.%N)
  if [[ $s == chosen ]]; then
    "$capgraph" compile "$model" -o "$f.cap" --target adreno-a630 "$@" > "$f.log" 2>&1
  else
    CAPGRAPH_ADRENO_TILE=$s "$capgraph" compile "$model" -o "$f.cap" --target adreno-a630 "$@" > "$f.log" 2>&1
  fi || { echo "compile ($s) FAILED:"; tail -3 "$f.log"; exit 1; }
  end=$(date +%s.%N)
  echo "compile $s: $(node -e "console.log(($end - $start).toFixed(1))") s wall" >&2
  "$capgraph" profile "$f.cap" --device fake-adreno --json > "$f.json" ||
    { echo "profile ($s) FAILED"; exit 1; }
  "$capgraph" inspect --json "$f.cap" > "$f.inspect.json" || exit 1
done
node -e '
  const fs = require("fs"), dir = process.argv[1], shapes = process.argv[2].split(" ");
  const load = (s) => {
    const base = dir + "/" + s.replace(/[:\/]/g, "_");
    const p = JSON.parse(fs.readFileSync(base + ".json", "utf8"));
    const ins = fs.readFileSync(base + ".inspect.json", "utf8");
    // The capture kernels in order: "G:MxN" for tiled ones, "" for the others.
    const tile = [...ins.matchAll(/"workgroup_size": \[(\d+),[^{}]*?"tile": \[(\d+), (\d+)\]/g)]
      .map((m) => (m[2] === "0" ? "" : m[1] + ":" + m[2] + "x" + m[3]));
    const us = {}, name = {};
    for (const k of p.kernels) us[k.kernel] = k.estimated_us, name[k.kernel] = k.name;
    return { total: p.estimated_total_us, us, name, tile };
  };
  const all = ["chosen", ...shapes].map(load), chosen = all[0];
  const tiled = Object.keys(chosen.us).filter((i) => chosen.tile[i]);
  console.log("| kernel | " + shapes.join(" | ") + " | chosen | best |");
  console.log("|---|" + shapes.map(() => "---|").join("") + "---|---|");
  let best_total = chosen.total, worse = 0;
  for (const i of tiled) {
    const v = all.slice(1).map((r) => r.us[i]);
    const bi = v.reduce((b, x, j) => (x < v[b] ? j : b), 0);
    best_total -= chosen.us[i] - v[bi];
    if (chosen.us[i] > v[bi] * 1.05) worse++;
    console.log("| " + i + " " + chosen.name[i].slice(0, 32) + " | " + v.map((x) => x.toFixed(1)).join(" | ") +
      " | " + chosen.tile[i] + " " + chosen.us[i].toFixed(1) + " | " + shapes[bi] + " |");
  }
  console.log("\n" + tiled.length + " tiled kernels; the choice is more than 5% above the best shape for " + worse);
  console.log("estimated total ms: " + shapes.map((s, i) => s + " " + (all[i + 1].total / 1e3).toFixed(2)).join(", ") +
    ", chosen " + (chosen.total / 1e3).toFixed(2) + ", best per kernel " + (best_total / 1e3).toFixed(2));
' "$work" "$shapes"
