# Sourced by the targets' end-to-end scripts (targets/*/…_e2e.sh): the two things they all do the
# same way. Needs $compare (tests/tools/npy_compare, the one output tolerance).

# zoo_model_args DIR: reads DIR/meta.json of ../shared/zoo into zoo_inputs ("--input NAME=FILE
# ..."), zoo_shapes ("--input-shape NAME=AxB ...") and zoo_refs ("OUT=REFERENCE.npy ...", output
# names with the characters `capgraph run` replaces in file names replaced).
zoo_model_args() {
  local dir=$1 lines
  lines=$(node -e "const m=require('$dir/meta.json');
    console.log(m.inputs.map(i=>'--input '+i.name+'=$dir'+i.file).join(' '));
    console.log(m.inputs.map(i=>'--input-shape '+i.name+'='+i.dims.join('x')).join(' '));
    console.log(m.outputs.map(o=>o.name.replace(/[^A-Za-z0-9._-]/g,'_')+'=$dir'+o.file).join(' '))") || return 1
  { read -r zoo_inputs; read -r zoo_shapes; read -r zoo_refs; } <<< "$lines"
}

# outputs_compare DEVICE_DIR CPU_DIR "OUT=REFERENCE.npy|cpu ..." [LABEL] [REL_TOL]: each output the
# device wrote against its reference (unless it is "cpu") and, when CPU_DIR is not empty, against
# the same model run on this CPU. Prints npy_compare's lines prefixed with LABEL; status 1 if any
# differs. REL_TOL (npy_compare's third argument) replaces the float32 tolerance (a float16 capture).
outputs_compare() {
  local dev=$1 cpu=$2 refs=$3 label=${4:+$4 } tol=${5:-} ok=0 r out ref
  for r in $refs; do
    out=${r%%=*}; ref=${r#*=}
    if [[ $ref != cpu ]]; then
      "$compare" "$dev/$out.npy" "$ref" $tol | sed "s/^/  ${label}vs reference: /"; [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=1
    fi
    if [[ -n $cpu ]]; then
      "$compare" "$dev/$out.npy" "$cpu/$out.npy" $tol | sed "s/^/  ${label}vs cpu:       /"; [[ ${PIPESTATUS[0]} -eq 0 ]] || ok=1
    fi
  done
  return $ok
}
