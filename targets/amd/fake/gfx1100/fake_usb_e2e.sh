#!/usr/bin/env bash
# `capgraph run --device fake-usb`: the USB GPU path end to end (bridge host library, PCIe walk,
# AM cold boot, the AM transport's uploads/ring/polls/downloads) on the emulated bridge running our
# firmware image with the register-model gfx1100 behind it, whose queues run the kernels' own
# gfx1100 code in fake-amd's RDNA3 emulator. Each model is compiled for amd-gfx1100 and for the
# CPU; the fake-usb outputs must match the CPU's and, for zoo models, ONNX Runtime's.
#   fake_usb_e2e.sh BUILD_DIR   the small generated CNN (targets/amd/testdata/amd_model_gen.cpp),
#                               then squeezenet1_1 and the PP-OCR cls model from ../shared/zoo
#                               when it is there (skipped without); CAPGRAPH_ZOO_MODELS=all: every
#                               zoo model
# Exit 77 (skip) without the bridge firmware image (sdcc).
set -uo pipefail
build=${1:?usage: fake_usb_e2e.sh BUILD_DIR}
repo=$(cd "$(dirname "$0")/../../../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare
# zoo_model_args, outputs_compare
source "$repo/tests/tools/e2e_lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0; passed=0

devices=$("$capgraph" devices) || { echo "FAIL: capgraph devices"; exit 1; }
grep -q '^fake-usb: a fake gfx1100 behind the emulated USB bridge' <<< "$devices" ||
  { echo "FAIL: capgraph devices does not list fake-usb:"; echo "$devices"; exit 1; }

# check NAME MODEL.onnx "INPUT_ARGS" "SHAPE_ARGS" "OUT=REFERENCE.npy|cpu ..."
check() {
  local name=$1 model=$2 inputs=$3 shapes=$4 refs=$5 d=$work/$1 t0 t1
  mkdir -p "$d"
  "$capgraph" compile "$model" -o "$d/amd.cap" --target amd-gfx1100 $shapes > "$d/log" 2>&1 ||
    { echo "FAIL $name: compile for amd-gfx1100"; cat "$d/log"; failures=$((failures+1)); return; }
  "$capgraph" compile "$model" -o "$d/cpu.cap" $shapes > "$d/log" 2>&1 ||
    { echo "FAIL $name: compile for cpu"; cat "$d/log"; failures=$((failures+1)); return; }
  t0=$(date +%s%N)
  "$capgraph" run "$d/amd.cap" --device fake-usb $inputs --output-dir "$d/usb" > "$d/log" 2>&1
  local rc=$?
  t1=$(date +%s%N)
  if ((rc != 0)); then
    if grep -q "no bridge firmware image" "$d/log"; then echo "SKIPPED: $(cat "$d/log")"; exit 77; fi
    echo "FAIL $name: replay on fake-usb"; cat "$d/log"; failures=$((failures+1)); return
  fi
  "$capgraph" run "$d/cpu.cap" $inputs --output-dir "$d/cpu" > /dev/null ||
    { echo "FAIL $name: replay on cpu"; failures=$((failures+1)); return; }
  local ok=1
  outputs_compare "$d/usb" "$d/cpu" "$refs" || ok=0
  if ((ok)); then echo "PASS $name on fake-usb (cold boot, load, replay, teardown: $(( (t1 - t0) / 1000000 )) ms)"; passed=$((passed+1))
  else echo "FAIL $name"; failures=$((failures+1)); fi
}

mkdir -p "$work/gen"
"$build/targets/amd/amd_model_gen" "$work/gen" || { echo "FAIL: amd_model_gen"; exit 1; }
check small_cnn "$work/gen/small_cnn.onnx" "--input x=$work/gen/input.npy" "" "probs=cpu p=cpu x_out=cpu"

# --check over the USB bridge (device memory not CPU-mapped: the arena is read back over the
# transport after each launch, runtime/hcq/graph_check.cpp): every launch against its host twin,
# then a planted miscompile (amd_miscompile_plant: one VGPR operand of the first kernel) named.
d=$work/small_cnn
if [[ -f $d/amd.cap ]]; then
  if ! "$capgraph" run "$d/amd.cap" --device fake-usb --check --input x="$work/gen/input.npy" \
       > "$d/check.log" 2>&1 || ! grep -q '^check: ' "$d/check.log"; then
    echo "FAIL: run --device fake-usb --check"; cat "$d/check.log"; failures=$((failures+1))
  else
    echo "PASS run --device fake-usb --check: $(grep '^check: ' "$d/check.log")"; passed=$((passed+1))
  fi
  if planted=$("$build/targets/amd/amd_miscompile_plant" "$d/amd.cap" "$d/planted.cap"); then
    kernel=${planted%% offset *}
    if "$capgraph" run "$d/planted.cap" --device fake-usb --check --input x="$work/gen/input.npy" \
         > "$d/check.log" 2>&1; then
      echo "FAIL: fake-usb --check passed the planted miscompile ($planted)"; failures=$((failures+1))
    elif ! grep -q "check: kernel '$kernel' (kernel [0-9]*, step [0-9]*.*) differs from its host twin" "$d/check.log"; then
      echo "FAIL: fake-usb --check did not name the planted miscompile ($planted):"; cat "$d/check.log"
      failures=$((failures+1))
    else
      echo "PASS fake-usb --check names the planted miscompile: $(grep -o "check: kernel.*" "$d/check.log" | head -1)"
      passed=$((passed+1))
    fi
  else
    echo "FAIL: amd_miscompile_plant"; failures=$((failures+1))
  fi
fi

zoo=$repo/../shared/zoo
if [[ -d $zoo ]] && command -v node > /dev/null; then
  # CAPGRAPH_ZOO_MODELS="a b" picks models, "all" every model of the zoo (minutes: the emulated
  # bridge and the RDNA3 emulator); the test runs the two smallest.
  names=${CAPGRAPH_ZOO_MODELS:-squeezenet1_1 ch_ppocr_mobile_v2.0_cls_infer}
  [[ $names == all ]] && names=$(cd "$zoo" && for d in */; do [[ -f $d/meta.json ]] && echo "${d%/}"; done)
  for name in $names; do
    dir=$zoo/$name/
    [[ -f $dir/meta.json ]] || { echo "SKIPPED $name: not in $zoo"; continue; }
    zoo_model_args "$dir" || { echo "FAIL $name: reading $dir/meta.json"; failures=$((failures+1)); continue; }
    check "$name" "$dir/model.onnx" "$zoo_inputs" "$zoo_shapes" "$zoo_refs"
  done
else
  echo "SKIPPED zoo models: no model zoo at $zoo or no node"
fi
echo "$passed passed, $failures failed"
((failures == 0))
