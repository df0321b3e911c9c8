#!/usr/bin/env bash
# End to end on the fake NVIDIA GPU: ONNX -> `capgraph compile --target nv-sm90` and `nv-sm86`
# (LLVM NVPTX -> ptxas -> cubins) -> `capgraph run --device fake-nv:<chip>`, against the same model
# on this CPU and against an independent reference. The fake runs the real RM/UVM transport over a
# fake driver, decodes the GPFIFO, methods and QMDs, checks every QMD against the cubin's facts and
# executes each launch's PTX in the PTX interpreter (fake/ptx_exec.h): this checks the compile
# (ptxas accepts the PTX, the facts), the code LLVM generated, the encoder and the transport, not
# the SASS (no GPU here). sm90 executes PTX for every model (one of them also under --check, kernel
# by kernel against the host twins); sm86 executes PTX for $NV_SM86_PTX (three small models by
# default) and runs host twins (fake-nv:sm86:twin) for the rest, to keep the suite's time down.
#   nv_e2e.sh small BUILD_DIR   a small generated CNN (targets/amd/testdata/amd_model_gen.cpp)
#   nv_e2e.sh zoo BUILD_DIR     every model of ../shared/zoo (skips, exit 77, without it)
# Skips (exit 77) without ptxas (CAPGRAPH_PTXAS, PATH, /usr/local/cuda/bin/ptxas).
# Tolerance: tests/tools/npy_compare (max |a-b| <= 1e-3 * max |ref| + 1e-5).
set -uo pipefail
mode=${1:-}; build=${2:-}
[[ -n $mode && -n $build ]] || { echo "usage: nv_e2e.sh small|zoo BUILD_DIR"; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare
# zoo_model_args, outputs_compare
source "$repo/tests/tools/e2e_lib.sh"
if ! command -v ptxas > /dev/null && [[ ! -x /usr/local/cuda/bin/ptxas && -z ${CAPGRAPH_PTXAS:-} ]]; then
  echo "SKIPPED: no ptxas (CUDA toolkit) on this machine, so nothing compiles for nv-sm*"; exit 77
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0; passed=0
chips=${NV_CHIPS:-"sm90 sm86"}
sm86_ptx=${NV_SM86_PTX:-"ch_ppocr_mobile_v2.0_cls_infer squeezenet1_1 mobilenet_v2 small_cnn"}
check_model=${NV_CHECK_MODEL:-squeezenet1_1}

# check NAME MODEL.onnx "INPUT_ARGS" "SHAPE_ARGS" "OUT_NAME=REFERENCE.npy ..."
check() {
  local name=$1 model=$2 inputs=$3 shapes=$4 refs=$5 d=$work/$1 chip
  mkdir -p "$d/cpu"
  "$capgraph" compile "$model" -o "$d/cpu.cap" $shapes > /dev/null 2>&1 || { echo "FAIL $name: compile for cpu"; failures=$((failures+1)); return; }
  "$capgraph" run "$d/cpu.cap" $inputs --output-dir "$d/cpu" > /dev/null || { echo "FAIL $name: replay on cpu"; failures=$((failures+1)); return; }
  for chip in $chips; do
    local t=$(date +%s%N) ok=1
    mkdir -p "$d/$chip"
    if ! "$capgraph" compile "$model" -o "$d/$chip.cap" --target nv-$chip $shapes > "$d/log" 2>&1; then
      echo "FAIL $name: compile for nv-$chip"; tail -5 "$d/log"; failures=$((failures+1)); continue; fi
    local compile_ms=$(( ($(date +%s%N) - t) / 1000000 ))
    local device=fake-nv:$chip how="PTX executed"
    if [[ $chip == sm86 && " $sm86_ptx " != *" $name "* ]]; then device=fake-nv:$chip:twin how="host twins"; fi
    t=$(date +%s%N)
    if ! "$capgraph" run "$d/$chip.cap" --device $device $inputs --output-dir "$d/$chip" > "$d/log" 2>&1; then
      echo "FAIL $name: replay on $device"; cat "$d/log"; failures=$((failures+1)); continue; fi
    local run_ms=$(( ($(date +%s%N) - t) / 1000000 ))
    if [[ $chip == sm90 && $name == "$check_model" ]]; then
      if ! "$capgraph" run "$d/$chip.cap" --device fake-nv:$chip --check $inputs > "$d/log" 2>&1; then
        echo "FAIL $name: --check on fake-nv:$chip"; cat "$d/log"; failures=$((failures+1)); continue; fi
      how="$how, --check: $(grep -o '[0-9]* launches match their host twins' "$d/log")"
    fi
    local kernels; kernels=$("$capgraph" inspect "$d/$chip.cap" | sed -n 's/^ *\([0-9]*\) launches.*/\1/p')
    outputs_compare "$d/$chip" "$d/cpu" "$refs" "$chip" || ok=0
    if ((ok)); then echo "PASS $name nv-$chip on $device ($how; $kernels launches; compile ${compile_ms} ms, replay ${run_ms} ms)"; passed=$((passed+1))
    else echo "FAIL $name nv-$chip"; failures=$((failures+1)); fi
  done
}

case $mode in
  small)
    devices=$("$capgraph" devices) || { echo "FAIL: capgraph devices"; exit 1; }
    if ! grep -Eq '^nv(:[0-9]+ |: )' <<< "$devices" || ! grep -q '^fake-nv: a fake NVIDIA GPU' <<< "$devices"; then
      echo "FAIL: capgraph devices does not describe the NVIDIA GPUs:"; echo "$devices"; failures=$((failures+1))
    else
      grep -E '^(nv|fake-nv)' <<< "$devices" | sed 's/^/  devices: /'
    fi
    mkdir -p "$work/gen"
    "$build/targets/amd/amd_model_gen" "$work/gen" || { echo "FAIL: amd_model_gen"; exit 1; }
    check small_cnn "$work/gen/small_cnn.onnx" "--input x=$work/gen/input.npy" "" "probs=cpu p=cpu x_out=cpu"
    ;;
  zoo)
    zoo=$repo/../shared/zoo
    [[ -d $zoo ]] || { echo "SKIPPED: no model zoo at $zoo (it is optional)"; exit 77; }
    command -v node > /dev/null || { echo "SKIPPED: node is needed to read the zoo's meta.json"; exit 77; }
    for dir in "$zoo"/*/; do
      name=$(basename "$dir")
      [[ -n ${NV_MODELS:-} && " $NV_MODELS " != *" $name "* ]] && continue
      zoo_model_args "$dir" || { echo "FAIL $name: reading $dir/meta.json"; failures=$((failures+1)); continue; }
      check "$name" "$dir/model.onnx" "$zoo_inputs" "$zoo_shapes" "$zoo_refs"
    done
    ;;
  *) echo "usage: nv_e2e.sh small|zoo BUILD_DIR"; exit 2 ;;
esac
echo "$passed passed, $failures failed"
((failures == 0))
