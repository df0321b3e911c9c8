#!/usr/bin/env bash
# End to end on the fake AMD GPU: ONNX -> `capgraph compile --target amd-gfx1100` -> `capgraph run
# --device fake-amd`, against the same model compiled for and run on this CPU, and against an
# independent reference. The fake runs every kernel's own gfx1100 machine code in its RDNA3
# emulator (rdna3_emu.h), so this checks the whole GPU path: the compiled code, code objects,
# kernel descriptors, kernel arguments, packets, queues, signals.
#   amd_e2e.sh small BUILD_DIR   a small generated CNN (testdata/amd_model_gen.cpp: conv,
#                                     residual add, pools, gemm, softmax, an input passed through),
#                                     vs the CPU; also kernel by kernel against the host twins
#                                     (fake-amd:check), and a planted miscompile
#                                     (testdata/amd_miscompile_plant.cpp) that check mode must catch
#   amd_e2e.sh zoo BUILD_DIR     every model of ../shared/zoo (skips, exit 77, without it), vs
#                                     its committed ONNX Runtime output and the CPU; only the models
#                                     named in CAPGRAPH_ZOO_MODELS (space-separated) when it is set
#                                     (the sanitizer build's subset, see CMakeLists.txt)
# Tolerance: tests/tools/npy_compare (max |a-b| <= 1e-3 * max |ref| + 1e-5).
set -uo pipefail
mode=${1:-}; build=${2:-}
[[ -n $mode && -n $build ]] || { echo "usage: amd_e2e.sh small|zoo BUILD_DIR"; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare
# zoo_model_args, outputs_compare
source "$repo/tests/tools/e2e_lib.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0; passed=0; check_kernels=0

ms() { echo "$(( ($(date +%s%N) - $1) / 1000000 ))"; }

# check NAME MODEL.onnx "INPUT_ARGS" "SHAPE_ARGS" "OUT_NAME=REFERENCE.npy ..."
check() {
  local name=$1 model=$2 inputs=$3 shapes=$4 refs=$5 d=$work/$1 t
  mkdir -p "$d/cpu" "$d/fake"
  t=$(date +%s%N)
  if ! "$capgraph" compile "$model" -o "$d/amd.cap" --target amd-gfx1100 $shapes > "$d/log" 2>&1; then
    echo "FAIL $name: compile for amd-gfx1100"; cat "$d/log"; failures=$((failures+1)); return; fi
  local compile_ms; compile_ms=$(ms "$t")
  "$capgraph" compile "$model" -o "$d/cpu.cap" $shapes > /dev/null 2>&1 || {
    echo "FAIL $name: compile for cpu"; failures=$((failures+1)); return; }
  t=$(date +%s%N)
  if ! "$capgraph" run "$d/amd.cap" --device fake-amd:profile $inputs --output-dir "$d/fake" > "$d/log" 2>&1; then
    echo "FAIL $name: replay on fake-amd"; cat "$d/log"; failures=$((failures+1)); return; fi
  local emulate_ms; emulate_ms=$(ms "$t")
  grep -E '^(kernel|total) ' "$d/log" | sed 's/^/  emulator counts: /'  # fake-amd:profile's table
  local kernels; kernels=$("$capgraph" inspect "$d/amd.cap" | sed -n 's/^ *\([0-9]*\) launches.*/\1/p')
  "$capgraph" run "$d/cpu.cap" $inputs --output-dir "$d/cpu" > /dev/null || {
    echo "FAIL $name: replay on cpu"; failures=$((failures+1)); return; }
  local ok=1
  outputs_compare "$d/fake" "$d/cpu" "$refs" || ok=0
  if ((check_kernels)); then
    if ! "$capgraph" run "$d/amd.cap" --device fake-amd:check $inputs --output-dir "$d/check" > "$d/log" 2>&1; then
      echo "  kernel by kernel against the host twins (fake-amd:check):"; cat "$d/log"; ok=0
    else
      echo "  fake-amd:check: every kernel matches its host twin"
    fi
    # The same through the runtime's own --check (runtime/hcq/graph_check.cpp, any GPU device):
    # each launch alone on the fake (real machine code in the emulator), then its twin.
    if ! "$capgraph" run "$d/amd.cap" --device fake-amd --check $inputs --output-dir "$d/check2" > "$d/log" 2>&1; then
      echo "  run --check:"; cat "$d/log"; ok=0
    else
      echo "  run --device fake-amd --check: $(grep '^check: ' "$d/log")"
    fi
  fi
  if ((ok)); then echo "PASS $name ($kernels launches; amd-gfx1100 compile ${compile_ms} ms; emulated replay ${emulate_ms} ms)"; passed=$((passed+1))
  else echo "FAIL $name"; failures=$((failures+1)); fi
}

case $mode in
  small)
    # `capgraph devices` says plainly whether there is an AMD GPU, and lists the fake.
    devices=$("$capgraph" devices) || { echo "FAIL: capgraph devices"; exit 1; }
    if ! grep -Eq '^amd(:[0-9]+: |: no AMD GPU|: /dev/kfd is present)' <<< "$devices" ||
       ! grep -q '^fake-amd: a fake AMD GPU' <<< "$devices"; then
      echo "FAIL: capgraph devices does not describe the AMD GPUs:"; echo "$devices"; failures=$((failures+1))
    else
      grep -E '^(amd|fake-amd)' <<< "$devices" | sed 's/^/  devices: /'
    fi
    mkdir -p "$work/gen"
    "$build/targets/amd/amd_model_gen" "$work/gen" || { echo "FAIL: amd_model_gen"; exit 1; }
    check_kernels=1
    check small_cnn "$work/gen/small_cnn.onnx" "--input x=$work/gen/input.npy" "" "probs=cpu p=cpu x_out=cpu"
    # A planted miscompile: one VGPR operand changed in the first launch's kernel (checksum fixed).
    # The emulator runs the wrong code, and check mode names the kernel.
    d=$work/small_cnn
    if ! planted=$("$build/targets/amd/amd_miscompile_plant" "$d/amd.cap" "$d/planted.cap"); then
      echo "FAIL: amd_miscompile_plant"; failures=$((failures+1))
    else
      kernel=${planted%% offset *}
      if "$capgraph" run "$d/planted.cap" --device fake-amd:check --input x="$work/gen/input.npy" \
           --output-dir "$d/planted" > "$d/log" 2>&1; then
        echo "FAIL: the planted miscompile ($planted) ran without an error"; failures=$((failures+1))
      elif ! grep -q "check: kernel '$kernel' (kernel [0-9]*) differs from its host twin" "$d/log"; then
        echo "FAIL: the planted miscompile ($planted) was not named:"; cat "$d/log"; failures=$((failures+1))
      else
        echo "PASS planted miscompile ($planted): $(grep -o "check: kernel.*" "$d/log" | head -1)"
        passed=$((passed+1))
      fi
      # And by the runtime's --check on the plain fake (emulator, no twin on the replay path).
      if "$capgraph" run "$d/planted.cap" --device fake-amd --check --input x="$work/gen/input.npy" \
           > "$d/log" 2>&1; then
        echo "FAIL: run --check passed the planted miscompile ($planted)"; failures=$((failures+1))
      elif ! grep -q "check: kernel '$kernel' (kernel [0-9]*, step [0-9]*.*) differs from its host twin" "$d/log"; then
        echo "FAIL: run --check did not name the planted miscompile ($planted):"; cat "$d/log"; failures=$((failures+1))
      else
        echo "PASS run --check names the planted miscompile: $(grep -o "check: kernel.*" "$d/log" | head -1)"
        passed=$((passed+1))
      fi
    fi
    # capgraph profile --device fake-amd: the emulator's counts per kernel and the labelled
    # estimate; the convolutions are tiled (LDS bytes > 0, under 0.5 global bytes per FMA).
    if ! prof=$("$capgraph" profile "$d/amd.cap" --device fake-amd 2>&1); then
      echo "FAIL: capgraph profile --device fake-amd:"; echo "$prof"; failures=$((failures+1))
    elif ! grep -q '^estimate for a 7900 XTX (.*not a measurement): [0-9.]* ms$' <<< "$prof" ||
         ! awk '$1 ~ /^conv/ { n++; if ($(NF-1) == 0 || $(NF-2) >= 0.5) bad++ } END { exit !(n >= 2 && !bad) }' <<< "$prof"; then
      echo "FAIL: capgraph profile --device fake-amd does not show tiled convolutions:"; echo "$prof"; failures=$((failures+1))
    else
      echo "PASS capgraph profile --device fake-amd:"; grep -E '^(conv|total|estimate)' <<< "$prof" | sed 's/^/  /'
      passed=$((passed+1))
    fi
    "$capgraph" profile "$d/amd.cap" --device amd-nonsense > /dev/null 2>&1 &&
      { echo "FAIL: profile --device accepted a device that counts nothing"; failures=$((failures+1)); }
    ;;
  zoo)
    zoo=$repo/../shared/zoo
    [[ -d $zoo ]] || { echo "SKIPPED: no model zoo at $zoo (it is optional)"; exit 77; }
    command -v node > /dev/null || { echo "SKIPPED: node is needed to read the zoo's meta.json"; exit 77; }
    dirs=("$zoo"/*/)
    if [[ -n ${CAPGRAPH_ZOO_MODELS:-} ]]; then
      dirs=()
      for name in $CAPGRAPH_ZOO_MODELS; do
        [[ -f $zoo/$name/meta.json ]] || { echo "FAIL: CAPGRAPH_ZOO_MODELS names $name, which $zoo lacks"; exit 1; }
        dirs+=("$zoo/$name/")
      done
      echo "only the models named in CAPGRAPH_ZOO_MODELS: $CAPGRAPH_ZOO_MODELS"
    fi
    for dir in "${dirs[@]}"; do
      name=$(basename "$dir")
      zoo_model_args "$dir" || { echo "FAIL $name: reading $dir/meta.json"; failures=$((failures+1)); continue; }
      check "$name" "$dir/model.onnx" "$zoo_inputs" "$zoo_shapes" "$zoo_refs"
    done
    ;;
  *) echo "usage: amd_e2e.sh small|zoo BUILD_DIR"; exit 2 ;;
esac
echo "$passed passed, $failures failed"
((failures == 0))
