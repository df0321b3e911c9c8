#!/usr/bin/env bash
# Adreno end to end on the fake KGSL: ONNX -> `capgraph compile --target adreno-a630` (Mesa's ir3
# plus host twins) -> `capgraph run --device fake-adreno` (the real KGSL transport and a6xx packets,
# each dispatch checked by the fake and its machine code run in the ir3 emulator), against the same
# model compiled for and run on this CPU, and against the references where there are any.
#   adreno_e2e.sh small BUILD_DIR  generated models: a 40-layer MatMul+Tanh chain with its
#                                  independently computed output, convolutions, a comma-shaped
#                                  model (two uint8 12x128x256 cameras, desire, feature buffer,
#                                  four heads); the words written per replay of a 1-kernel and a
#                                  40-kernel capture; the golden command stream of a 2-layer chain
#                                  (testdata/tiny_chain2.golden; CAPGRAPH_UPDATE_GOLDEN=1 rewrites
#                                  it); a wedged fake timing out; a chip mismatch; zero-copy inputs;
#                                  wrong machine code planted in the convolution's capture
#                                  (testdata/adreno_miscompile_plant.cpp: a changed operand, a
#                                  dropped (sy), an undecodable word), each named with its kernel
#   adreno_e2e.sh zoo BUILD_DIR    every model of ../shared/zoo (skips, exit 77, without it), vs its
#                                  ONNX Runtime outputs, on fake-adreno:check (the machine code,
#                                  each kernel compared with its host twin);
#                                  CAPGRAPH_ZOO_MODELS="a b" runs those models only
#   adreno_e2e.sh families BUILD_DIR tests/tools/family_gen's models at their "test" size, on their
#                                  own inputs, on fake-adreno:check, vs the same model on this
#                                  CPU in float32 (not a ctest: minutes of emulation; run by hand
#                                  when the float16 calibration changes)
# CAPGRAPH_ADRENO_DEVICE=DEV replays on DEV instead (fake-adreno:twin: the host twins, as before
# the emulator).
# Skips (exit 77) when capgraph was built without Mesa's ir3. Tolerance: tests/tools/npy_compare.
set -uo pipefail
mode=${1:-}; build=${2:-}
[[ -n $mode && -n $build ]] || { echo "usage: adreno_e2e.sh small|zoo|families BUILD_DIR"; exit 2; }
here=$(cd "$(dirname "$0")" && pwd); repo=$(cd "$here/../.." && pwd)
capgraph=$build/cli/capgraph; compare=$build/tests/tools/npy_compare; tools=$build/tests/tools
# zoo_model_args, outputs_compare
source "$repo/tests/tools/e2e_lib.sh"
probe=$build/targets/adreno/adreno_capture_probe
plant=$build/targets/adreno/adreno_miscompile_plant
device=${CAPGRAPH_ADRENO_DEVICE:-$([[ $mode == small ]] && echo fake-adreno || echo fake-adreno:check)}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
failures=0; passed=0
fail() { echo "FAIL $*"; failures=$((failures+1)); }

# Mesa's ir3 is optional at build time: without it the compile says so.
"$tools/tiny_chain_gen" "$work" 1 16 3 > /dev/null || { echo "FAIL: tiny_chain_gen"; exit 1; }
if ! "$capgraph" compile "$work/tiny_chain.onnx" -o "$work/probe.cap" --target adreno-a630 > "$work/log" 2>&1; then
  if grep -q "without Mesa's ir3" "$work/log"; then echo "SKIPPED: capgraph was built without Mesa's ir3"; exit 77; fi
  echo "FAIL: compile for adreno-a630"; cat "$work/log"; exit 1
fi

# The float16 tolerance (the README's): adreno-a630 captures store weights and activations as
# float16 by default (math in float32), so their outputs are compared with the float32 CPU and
# ONNX Runtime at max |a - b| <= 3e-2 x max |reference| + 1e-5; --precision fp32 captures keep
# npy_compare's float32 tolerance (1e-3).
half_tol=3e-2

# check NAME MODEL.onnx "INPUT_ARGS" "SHAPE_ARGS" "OUT_NAME=REFERENCE.npy|cpu ..." [PRECISION]
# (no PRECISION: the target's default, float16 storage)
# With a reference file for every output (the zoo), the CPU run is left out: it is the zoo's own
# conformance test, and compiling every model twice would double this test's time.
check() {
  local name=$1 model=$2 inputs=$3 shapes=$4 refs=$5 precision=${6:-} d=$work/$1 cpu=0 tol
  [[ " $refs" == *=cpu* ]] && cpu=1
  [[ $precision != fp32 ]] && tol=$half_tol || tol=
  mkdir -p "$d/cpu" "$d/gpu"
  if ! "$capgraph" compile "$model" -o "$d/gpu.cap" --target adreno-a630 ${precision:+--precision $precision} $shapes > "$d/compile.log" 2>&1; then
    fail "$name: compile for adreno-a630"; cat "$d/compile.log"; return; fi
  local kept; kept=$(grep -c "kept float32:" "$d/compile.log")
  local start=$(date +%s%N) ms
  if ! "$capgraph" run "$d/gpu.cap" --device "$device" $inputs --output-dir "$d/gpu" > "$d/log" 2>&1; then
    fail "$name: replay on $device"; cat "$d/log"; return; fi
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  if ((cpu)); then
    "$capgraph" compile "$model" -o "$d/cpu.cap" $shapes > /dev/null 2>&1 || { fail "$name: compile for cpu"; return; }
    "$capgraph" run "$d/cpu.cap" $inputs --output-dir "$d/cpu" > /dev/null || { fail "$name: replay on cpu"; return; }
  fi
  local launches; launches=$("$capgraph" inspect "$d/gpu.cap" | sed -n 's/^ *\([0-9]*\) launches.*/\1/p')
  local ok=1
  outputs_compare "$d/gpu" "$( ((cpu)) && echo "$d/cpu")" "$refs" "" "$tol" || ok=0
  if ((ok)); then echo "PASS $name (${precision:-default precision, $kept tensors kept float32}, $launches launches, replay on $device $ms ms)"; passed=$((passed+1)); else fail "$name"; fi
}

# planted WHAT DEVICE "INPUT_ARGS" PATTERN: the convolution's capture with one wrong instruction
# planted (adreno_miscompile_plant WHAT; checksums fixed, so only running it can tell), replayed
# on DEVICE (with "--check": the runtime's check on plain fake-adreno), must fail with an error
# matching PATTERN, where KERNEL stands for the planted kernel's name.
planted() {
  local what=$1 dev=$2 inputs=$3 pattern=$4 d=$work/conv out kernel extra=
  [[ -f $d/gpu.cap ]] || return
  if ! out=$("$plant" "$what" "$d/gpu.cap" "$d/$what.cap"); then fail "adreno_miscompile_plant $what"; return; fi
  kernel=${out%% instruction *}; pattern=${pattern//KERNEL/$kernel}
  [[ $dev == *--check ]] && dev=${dev% --check} extra=--check
  if "$capgraph" run "$d/$what.cap" --device "$dev" $extra $inputs --output-dir "$d/$what" > "$d/log" 2>&1; then
    fail "planted $what ($out) ran on $dev${extra:+ $extra} without an error"
  elif ! grep -q "$pattern" "$d/log"; then
    fail "planted $what ($out) on $dev${extra:+ $extra}: no error matching '$pattern'"; cat "$d/log"
  else
    echo "PASS planted $what on $dev${extra:+ $extra} ($out): $(grep -o "$pattern.*" "$d/log" | head -1)"; passed=$((passed+1))
  fi
}

case $mode in
  small)
    devices=$("$capgraph" devices) || { echo "FAIL: capgraph devices"; exit 1; }
    grep -qE '^adreno(:0)?: ' <<< "$devices" && grep -q '^fake-adreno:0: fake Adreno a630 (chip 0x6030001' <<< "$devices" ||
      fail "capgraph devices does not say what it found for adreno: $devices"
    g=$work/gen; mkdir -p "$g"
    "$tools/tiny_chain_gen" "$g" 40 16 3 > /dev/null || { echo "FAIL: tiny_chain_gen"; exit 1; }
    check tiny_chain "$g/tiny_chain.onnx" "--input x=$g/input.npy" "" "y=$g/expected.npy y=cpu"
    "$tools/conv_layer_gen" "$g/conv.onnx" 3 16 20 20 3 1 1 relu first > /dev/null &&
      "$tools/npy_random" "$g/conv_x.npy" 1x3x20x20 5 > /dev/null || { echo "FAIL: conv_layer_gen"; exit 1; }
    check conv "$g/conv.onnx" "--input x=$g/conv_x.npy" "" "y=cpu"
    # Every candidate shape of the tiled kernels (compiler/adreno_tile_choice.h), forced for a
    # 16 -> 32 channel convolution in float16 storage, computes the CPU's numbers, its machine code
    # checked kernel by kernel against the host twin (fake-adreno:check).
    "$tools/conv_layer_gen" "$g/conv16.onnx" 16 32 12 12 3 1 1 relu first > /dev/null &&
      "$tools/npy_random" "$g/conv16_x.npy" 1x16x12x12 6 > /dev/null || { echo "FAIL: conv_layer_gen 16"; exit 1; }
    for shape in 128:4x4 128:8x4 128:8x8 256:8x8; do
      CAPGRAPH_ADRENO_TILE=$shape device=fake-adreno:check \
        check "conv16_tile_$shape" "$g/conv16.onnx" "--input x=$g/conv16_x.npy" "" "y=cpu" fp16
    done
    # The window path of float16 depthwise convolutions (compiler/adreno_nir_emit.h,
    # adreno_window_lanes): every lane count forced in turn and the estimate's own choice, 3 x 3
    # at stride 1 and 2 (padded rows and columns at every border, odd and even element
    # positions) and 5 x 5 over 14 x 14, on fake-adreno:check (machine code vs host twin kernel
    # by kernel, outputs vs the CPU).
    "$tools/conv_layer_gen" "$g/dw3.onnx" 16 16 6 112 3 1 16 relu inner > /dev/null &&
      "$tools/conv_layer_gen" "$g/dw3s2.onnx" 16 16 6 112 3 2 16 none inner > /dev/null &&
      "$tools/conv_layer_gen" "$g/dw5.onnx" 16 16 14 14 5 1 16 swish inner > /dev/null &&
      "$tools/npy_random" "$g/dw_x.npy" 1x8x6x112 7 > /dev/null &&
      "$tools/npy_random" "$g/dw5_x.npy" 1x8x14x14 8 > /dev/null || { echo "FAIL: conv_layer_gen dw"; exit 1; }
    for lanes in 4 7 8 14 16 chosen; do
      CAPGRAPH_ADRENO_WINDOW=${lanes/chosen/} device=fake-adreno:check \
        check "dw3_window_$lanes" "$g/dw3.onnx" "--input x=$g/dw_x.npy" "" "y=cpu" fp16
    done
    for lanes in 4 8 chosen; do
      CAPGRAPH_ADRENO_WINDOW=${lanes/chosen/} device=fake-adreno:check \
        check "dw3s2_window_$lanes" "$g/dw3s2.onnx" "--input x=$g/dw_x.npy" "" "y=cpu" fp16
    done
    for lanes in 7 14; do
      CAPGRAPH_ADRENO_WINDOW=$lanes device=fake-adreno:check \
        check "dw5_window_$lanes" "$g/dw5.onnx" "--input x=$g/dw5_x.npy" "" "y=cpu" fp16
    done
    # Weights as images (issue 28): a 1x1 convolution (64 -> 96 channels over 14x14) whose weight
    # qualifies (compiler/adreno_nir_emit.h, adreno_image_operand), in each image shape forced,
    # float16 and float32 storage, on fake-adreno:check (the isaml in the emulator, each kernel
    # against its host twin); inspect names the image; its facts damaged in the file are refused
    # at load and its texture registers damaged in the stream are faults (adreno_capture_probe).
    "$tools/conv_layer_gen" "$g/pw.onnx" 64 96 14 14 1 1 1 relu first > /dev/null &&
      "$tools/npy_random" "$g/pw_x.npy" 1x64x14x14 7 > /dev/null || { echo "FAIL: conv_layer_gen pw"; exit 1; }
    for prec in fp16 fp32; do
      [[ $prec == fp16 ]] && view="f16:16x96/128" || view="f32:16x96/256"
      for shape in 128:4x4+img 128:8x8+img 256:8x8+img; do
        CAPGRAPH_ADRENO_TILE=$shape device=fake-adreno:check \
          check "pw_${prec}_$shape" "$g/pw.onnx" "--input x=$g/pw_x.npy" "" "y=cpu" $prec
        [[ -f $work/pw_${prec}_$shape/gpu.cap ]] || continue
        if "$capgraph" inspect "$work/pw_${prec}_$shape/gpu.cap" | grep -q "p[0-9]*:$view"; then passed=$((passed+1))
        else fail "pw_${prec}_$shape: inspect does not show the image $view"; "$capgraph" inspect "$work/pw_${prec}_$shape/gpu.cap" | grep -A3 "Adreno kernels"; fi
      done
    done
    if [[ -f "$work/pw_fp16_128:8x8+img/gpu.cap" ]]; then
      "$probe" images "$work/pw_fp16_128:8x8+img/gpu.cap" > "$work/log" 2>&1 && { echo "PASS image facts and texture state: $(tail -1 "$work/log")"; passed=$((passed+1)); } ||
        { fail "image facts and texture state"; cat "$work/log"; }
    fi
    # Left to choose (the default precision), what the cost model picked for it.
    check pw "$g/pw.onnx" "--input x=$g/pw_x.npy" "" "y=cpu"
    [[ -f $work/pw/gpu.cap ]] && echo "  pw's kernels chose: $("$capgraph" inspect "$work/pw/gpu.cap" | grep -A2 "Adreno kernels" | tail -2 | awk '{print $NF}' | tr '\n' ' ')"

    # The machine code runs: wrong code planted in it is named with its kernel, by fake-adreno:check
    # (the twin disagrees), the runtime's --check, the hazard checker and the decoder.
    conv_in="--input x=$g/conv_x.npy"
    planted operand fake-adreno:check "$conv_in" "check: kernel 'KERNEL' (kernel [0-9]*) differs from its host twin"
    planted operand "fake-adreno --check" "$conv_in" "check: kernel 'KERNEL' (kernel [0-9]*, step [0-9]*.*) differs from its host twin"
    planted sync fake-adreno "$conv_in" "kernel [0-9]* 'KERNEL': hazard missing_sy at [0-9]* ("
    planted unknown fake-adreno "$conv_in" "ir3 decoder: kernel [0-9]* 'KERNEL': instruction 0 (0xffffffff_ffffffff) does not decode"
    "$build/targets/adreno/comma_model_gen" "$g" || { echo "FAIL: comma_model_gen"; exit 1; }
    "$tools/npy_random" "$g/imgs.npy" 1x12x128x256 1 uint8 > /dev/null &&
      "$tools/npy_random" "$g/big.npy" 1x12x128x256 2 uint8 > /dev/null &&
      "$tools/npy_random" "$g/desire.npy" 1x8x8 3 > /dev/null &&
      "$tools/npy_random" "$g/features.npy" 1x24x64 4 > /dev/null || { echo "FAIL: npy_random"; exit 1; }
    check comma "$g/comma.onnx" \
      "--input input_imgs=$g/imgs.npy --input big_input_imgs=$g/big.npy --input desire=$g/desire.npy --input features_buffer=$g/features.npy" \
      "" "plan=cpu lead=cpu pose=cpu hidden_state=cpu"
    # The float32 path is still there (and the model is refused nothing in float16).
    check comma_fp32 "$g/comma.onnx" \
      "--input input_imgs=$g/imgs.npy --input big_input_imgs=$g/big.npy --input desire=$g/desire.npy --input features_buffer=$g/features.npy" \
      "" "plan=cpu lead=cpu pose=cpu hidden_state=cpu" fp32
    # Zero-copy: caller buffers bound as inputs and outputs give the same outputs.
    if [[ -f $work/comma/gpu.cap ]]; then
      "$probe" bind "$work/comma/gpu.cap" > "$work/log" 2>&1 && { echo "PASS zero-copy binding: $(tail -1 "$work/log")"; passed=$((passed+1)); } ||
        { fail "zero-copy binding"; cat "$work/log"; }
    fi

    # A damaged register in the recorded stream is caught by the fake's dispatch checks.
    if [[ -f $work/conv/gpu.cap ]]; then
      "$probe" tamper "$work/conv/gpu.cap" > "$work/log" 2>&1 && { echo "PASS damaged streams: $(tail -1 "$work/log")"; passed=$((passed+1)); } ||
        { fail "damaged streams"; cat "$work/log"; }
    fi

    # The words a replay writes do not depend on the number of kernels.
    mkdir -p "$g/one" && "$tools/tiny_chain_gen" "$g/one" 1 16 3 > /dev/null || fail "tiny_chain_gen"
    "$capgraph" compile "$g/one/tiny_chain.onnx" -o "$g/one.cap" --target adreno-a630 > /dev/null 2>&1 &&
      w1=$("$probe" words "$g/one.cap") && w40=$("$probe" words "$work/tiny_chain/gpu.cap") || { fail "words probe"; w1=; w40=; }
    if [[ -n $w1 && ${w1##* words } == "${w40##* words }" && ${w1%% dispatches*} != "${w40%% dispatches*}" ]]; then
      echo "PASS words per replay: $w1 / $w40"; passed=$((passed+1))
    else fail "words per replay differ with the kernel count: '$w1' vs '$w40'"; fi

    # The golden command stream of a 2-layer chain.
    mkdir -p "$g/two" && "$tools/tiny_chain_gen" "$g/two" 2 16 3 > /dev/null &&
      "$capgraph" compile "$g/two/tiny_chain.onnx" -o "$g/two.cap" --target adreno-a630 > /dev/null 2>&1 &&
      "$probe" dump "$g/two.cap" > "$g/two.txt" || fail "dump probe"
    golden=$here/testdata/tiny_chain2.golden
    if [[ -n ${CAPGRAPH_UPDATE_GOLDEN:-} ]]; then cp "$g/two.txt" "$golden"; echo "wrote $golden"; fi
    if diff -u "$golden" "$g/two.txt" > "$work/diff"; then echo "PASS golden command stream ($(wc -l < "$golden") lines)"; passed=$((passed+1))
    else fail "the command stream differs from $golden"; head -40 "$work/diff"; fi

    # A wedged GPU: a timeout error within its bound, never a hang.
    start=$(date +%s%N)
    if CAPGRAPH_TIMEOUT_MS=300 timeout 20 "$capgraph" run "$g/one.cap" --device fake-adreno:wedge \
         --input x=$g/one/input.npy --output-dir "$work/wedge" > "$work/log" 2>&1; then fail "a wedged fake-adreno run succeeded"
    else
      ms=$(( ($(date +%s%N) - start) / 1000000 ))
      if grep -q "timed out after 300 ms" "$work/log" && ((ms < 10000)); then echo "PASS wedge: timed out in $ms ms"; passed=$((passed+1))
      else fail "wedge: no timeout error within its bound ($ms ms)"; cat "$work/log"; fi
    fi
    # Another chip: refused naming both.
    if "$capgraph" run "$g/one.cap" --device fake-adreno:a640 --input x=$g/one/input.npy --output-dir "$work/x" > "$work/log" 2>&1 ||
       ! grep -q "adreno-a630" "$work/log" || ! grep -q "a640" "$work/log"; then fail "chip mismatch not refused by name"; cat "$work/log"
    else echo "PASS chip mismatch: $(tail -1 "$work/log")"; passed=$((passed+1)); fi
    # An Adreno capture on the CPU is refused, naming the devices that run it.
    if "$capgraph" run "$g/one.cap" --input x=$g/one/input.npy --output-dir "$work/x" > "$work/log" 2>&1 ||
       ! grep -q "run it with --device adreno" "$work/log"; then fail "an adreno capture on the cpu was not refused"; cat "$work/log"
    else passed=$((passed+1)); fi
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
    echo "replaying on $device"
    for dir in "${dirs[@]}"; do
      [[ -f $dir/meta.json && -f $dir/model.onnx ]] || { echo "SKIP $(basename "$dir"): no model"; continue; }
      name=$(basename "$dir")
      zoo_model_args "$dir" || { echo "FAIL $name: reading $dir/meta.json"; failures=$((failures+1)); continue; }
      # The target's default precision: float16 storage with the tensors it would spoil kept
      # float32, calibrated on the generated inputs only (no --calibrate: what a user who gives
      # no input gets), compared with ONNX Runtime on the zoo's real input.
      check "$name" "$dir/model.onnx" "$zoo_inputs" "$zoo_shapes" "$zoo_refs"
    done
    ;;
  families)
    command -v node > /dev/null || { echo "SKIPPED: node is needed to read family_gen's meta.json"; exit 77; }
    "$tools/family_gen" "$work/families" test > /dev/null || { echo "FAIL: family_gen"; exit 1; }
    echo "replaying on $device"
    for dir in "$work"/families/*/; do
      name=$(basename "$dir")
      args=$(node -e "const m=require('${dir}meta.json');
        console.log(m.inputs.map(i=>'--input '+i.name+'=$dir'+i.file).join(' '));
        console.log(m.inputs.map(i=>'--input-shape '+i.name+'='+i.dims.join('x')).join(' '))") ||
        { fail "$name: reading meta.json"; continue; }
      { read -r fam_inputs; read -r fam_shapes; } <<< "$args"
      # family_gen's meta.json names no outputs: the float32 CPU run writes them, the references.
      mkdir -p "$work/$name.cpu"
      "$capgraph" compile "$dir/model.onnx" -o "$work/$name.cpu.cap" $fam_shapes > /dev/null 2>&1 &&
        "$capgraph" run "$work/$name.cpu.cap" $fam_inputs --output-dir "$work/$name.cpu" > /dev/null ||
        { fail "$name: the cpu run"; continue; }
      fam_refs=$(cd "$work/$name.cpu" && for f in *.npy; do printf '%s=%s ' "${f%.npy}" "$work/$name.cpu/$f"; done)
      check "$name" "$dir/model.onnx" "$fam_inputs" "$fam_shapes" "$fam_refs"
    done
    ;;
  *) echo "usage: adreno_e2e.sh small|zoo|families BUILD_DIR"; exit 2 ;;
esac
echo "$passed passed, $failures failed"
((failures == 0))
