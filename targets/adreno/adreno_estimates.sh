#!/usr/bin/env bash
# The tables of targets/adreno/README.md, "Estimated a630 time": every model of ../shared/zoo and
# the comma-shaped model compiled for adreno-a630 and replayed once on fake-adreno:profile (the
# machine code in the ir3 emulator), their counts summed over kernels and the ESTIMATED a630 time
# of the cost model (fake/a630_estimate.h); and the calibration point of adreno_perf.md §6: our 1x1
# 192->64 convolution over 2048 pixels against the published a630 time of driving_vision's (322.55
# us). Prints Markdown; minutes of CPU (not a ctest: the numbers are for the README, the tests of
# the model are a630_estimate_test.cpp and targets_adreno_cli_test).
#   adreno_estimates.sh BUILD_DIR
# CAPGRAPH_ZOO_MODELS="a b" profiles those zoo models only; CAPGRAPH_PRECISION=fp32 compiles the
# models with --precision fp32 (default: the target's, float16 storage, calibrated on the
# generated inputs as a compile without --calibrate is; the kept count in each row's name).
# Each row ends with the roofline (a630_roofline_of: the kernels' FLOPs at the MAD peak, texels,
# unique bytes at DRAM rate) and the kernels' estimate's share of it; CAPGRAPH_KERNEL_TABLES=FILE
# appends every kernel's estimate beside its roofline bound, per model, to FILE.
# The calibration kernel is
# always float32 (the measured point it is held to). Needs node (to read meta.json and the
# profile's JSON) and Mesa's ir3 in the build.
set -uo pipefail
build=${1:?usage: adreno_estimates.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
capgraph=$build/cli/capgraph; tools=$build/tests/tools
zoo=$repo/../shared/zoo
source "$repo/tests/tools/e2e_lib.sh"
command -v node > /dev/null || { echo "adreno_estimates: node is needed"; exit 77; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
precision=${CAPGRAPH_PRECISION:+--precision $CAPGRAPH_PRECISION}

# summary NAME PROFILE.json: one Markdown row of the counts summed over kernels and the estimate.
summary() {
  node -e '
    const p = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
    const sum = (k) => p.kernels.reduce((s, x) => s + (x.counts[k] || 0), 0);
    const by = {};
    for (const k of p.kernels) by[k.bound] = (by[k.bound] || 0) + k.estimated_us;
    const top = Object.entries(by).sort((a, b) => b[1] - a[1]).slice(0, 2)
      .map(([b, us]) => b + " " + (100 * us / p.estimated_total_us).toFixed(0) + "%").join(", ");
    const M = (v) => (v / 1e6).toFixed(1), MB = (v) => (v / 1e6).toFixed(1);
    const disp = p.dispatches.filter((d) => !d.copy).length;
    const roof = p.kernels.reduce((s, k) => s + k.roofline_us, 0),
          kernels_us = p.kernels.reduce((s, k) => s + k.estimated_us, 0);
    console.log("| " + process.argv[1] + " | " + p.kernels.length + " / " + disp + " | " + sum("waves") + " | " +
      M(sum("alu")) + " | " + M(sum("sfu")) + " | " + M(sum("flow")) + " | " + M(sum("memory")) + " | " +
      M(sum("rpt_extra")) + " | " + M(sum("nops")) + " | " + MB(sum("global_load_bytes")) + " / " +
      MB(sum("global_store_bytes")) + " | " + MB(sum("shared_load_bytes") + sum("shared_store_bytes")) + " | " +
      sum("texels") + " | " + sum("barriers") + " | " + M(sum("ss_waits")) + " / " + M(sum("sy_waits")) + " | " +
      (p.estimated_total_us / 1000).toFixed(2) + " | " + top + " | " + (roof / 1000).toFixed(2) + " | " +
      (100 * roof / kernels_us).toFixed(0) + "% |");
  ' "$1" "$2"
  [[ -n ${CAPGRAPH_KERNEL_TABLES:-} ]] && kernel_table "$1" "$2" >> "$CAPGRAPH_KERNEL_TABLES"
}

# kernel_table NAME PROFILE.json: every kernel's estimate beside its roofline bound (Markdown).
kernel_table() {
  node -e '
    const p = JSON.parse(require("fs").readFileSync(process.argv[2], "utf8"));
    console.log("\n### " + process.argv[1] + "\n");
    console.log("| kernel | dispatches | estimated us | bound | roofline us | limit | share of the limit |");
    console.log("|---|---|---|---|---|---|---|");
    for (const k of [...p.kernels].sort((a, b) => b.estimated_us - a.estimated_us))
      console.log("| " + k.name + " | " + k.dispatches + " | " + k.estimated_us.toFixed(1) + " | " + k.bound + " | " +
        k.roofline_us.toFixed(1) + " | " + k.roofline_limit + " | " + (100 * k.roofline_us / k.estimated_us).toFixed(0) + "% |");
  ' "$1" "$2"
}

echo "| model | kernels / dispatches | waves | ALU M | SFU M | flow M | mem M | (rpt) extra M | nops M | global load / store MB | shared MB | texels | barriers | (ss) / (sy) M | **estimated a630 ms** | bound (share of the estimate) | roofline ms | share of the roofline |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
models=${CAPGRAPH_ZOO_MODELS:-$(ls "$zoo" 2>/dev/null)}
# The zoo, then the comma-shaped family model of tests/tools/family_gen (comma_like, its bench
# shapes, with its meta.json and inputs as a zoo model has them).
"$tools/family_gen" "$work/families" bench > /dev/null 2>&1 || echo "| comma_like | family_gen FAILED |"
dirs=()
for name in $models; do dirs+=("$zoo/$name/"); done
[[ -z ${CAPGRAPH_ZOO_MODELS:-} ]] && dirs+=("$work/families/comma_like/")
for dir in "${dirs[@]}"; do
  name=$(basename "$dir")
  [[ -f $dir/meta.json && -f $dir/model.onnx ]] || continue
  # The inputs and their shapes (family_gen's meta.json lists no outputs).
  args=$(node -e "const m=require('${dir}meta.json');
    console.log(m.inputs.map(i=>'--input '+i.name+'=$dir'+i.file).join(' '));
    console.log(m.inputs.map(i=>'--input-shape '+i.name+'='+i.dims.join('x')).join(' '))") ||
    { echo "| $name | reading meta.json failed |"; continue; }
  { read -r zoo_inputs; read -r zoo_shapes; } <<< "$args"
  # shellcheck disable=SC2086
  "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cap" --target adreno-a630 $precision $zoo_shapes \
    > "$work/$name.log" &&
    "$capgraph" profile "$work/$name.cap" --device fake-adreno --json > "$work/$name.json" ||
    { echo "| $name | FAILED |"; continue; }
  summary "$name ($(grep -c 'kept float32' "$work/$name.log") kept float32)" "$work/$name.json"
done
"$build/targets/adreno/comma_model_gen" "$work" > /dev/null &&
  "$capgraph" compile "$work/comma.onnx" -o "$work/comma.cap" --target adreno-a630 $precision > "$work/comma.log" &&
  "$capgraph" profile "$work/comma.cap" --device fake-adreno --json > "$work/comma.json" &&
  summary "comma-shaped (testdata/comma_model_gen.cpp, $(grep -c 'kept float32' "$work/comma.log") kept float32)" "$work/comma.json" ||
  echo "| comma-shaped | FAILED |"

# The calibration kernel: a 1x1 convolution 192 -> 64 over 32 x 64 = 2048 pixels, float32 buffers
# (driving_vision's kernel 672 also adds a residual and a scale and reads float16 images).
echo
"$tools/conv_layer_gen" "$work/conv.onnx" 192 64 32 64 1 1 1 none first > /dev/null &&
  "$capgraph" compile "$work/conv.onnx" -o "$work/conv.cap" --target adreno-a630 --precision fp32 > /dev/null &&
  "$capgraph" profile "$work/conv.cap" --device fake-adreno --json > "$work/conv.json" || { echo "calibration conv FAILED"; exit 1; }
node -e '
  const p = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const k = p.kernels.find((x) => x.kernel === p.dispatches.find((d) => !d.copy).kernel);
  const c = k.counts, flops = 2 * 2048 * 64 * 192;
  console.log("calibration: ours " + k.name + ": " + c.waves + " waves, ALU " + c.alu + ", mem " + c.memory +
    ", global load " + c.global_load_bytes + " B, shared " + (c.shared_load_bytes + c.shared_store_bytes) + " B, bound " + k.bound +
    ": estimated " + k.estimated_us.toFixed(1) + " us = " + (flops / k.estimated_us / 1e3).toFixed(1) + " GFLOP/s (published a630: 322.55 us, 157 GFLOP/s)");
' "$work/conv.json"
