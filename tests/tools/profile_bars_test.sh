#!/usr/bin/env bash
# profile_bars_test.sh BIN_DIR CAPGRAPH: the per-kernel check's parts (issue 17), without judging
# this machine's speed (that is scripts/bench_kernels.sh's job, not a test's on a busy machine):
#  - mem_bw prints sane bandwidths (positive, below 10 TB/s, read on the vector fma_peak reports)
#    and refuses bad arguments;
#  - `capgraph profile --peak --bandwidth` classifies a 3x3 convolution of 64 channels (~130
#    FLOP/B) as compute-bound, a depthwise 3x3 convolution (~2 FLOP/B) as memory-bound and the
#    200 tiny MatMul+Tanh launches of tiny_chain_gen as small, on a stated machine (100 GFLOP/s,
#    10 GB/s: balance 10 FLOP/B) so the classes depend on the captures only; and the same with
#    the measured peak and bandwidth (any real balance is far from both convolutions' intensity);
#  - a step's bytes are what the capture's buffer plan says (output + every bound input once).
set -uo pipefail
bin=$1
capgraph=$2
work=$(mktemp -d /tmp/capgraph-bars.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fail=1; fi; }
json() { node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8')); console.log(o$1)"; }

"$bin/mem_bw" 1 64 >"$work/bw1.json" || { echo "FAIL: mem_bw 1 64"; exit 1; }
"$bin/mem_bw" 2 64 >"$work/bw2.json" || { echo "FAIL: mem_bw 2 64"; exit 1; }
"$bin/fma_peak" 1 >"$work/peak.json" || { echo "FAIL: fma_peak"; exit 1; }
cat "$work/bw1.json" "$work/bw2.json" "$work/peak.json"
for f in bw1 bw2; do
  check "$f: read, copy and triad in (0, 10000) GB/s, 64 MiB buffers" "node -e \"
    const o = JSON.parse(require('fs').readFileSync('$work/$f.json', 'utf8'));
    for (const k of ['read_gbps', 'copy_gbps', 'triad_gbps']) if (!(o[k] > 0 && o[k] < 10000)) process.exit(1);
    if (o.buffer_mib < 63 || o.buffer_mib > 64) process.exit(1);\""
done
check "mem_bw streams the vector fma_peak measures" "[[ \$(json .vector <'$work/bw1.json') == \$(json .vector <'$work/peak.json') ]]"
check "mem_bw 2 says 2 threads" "[[ \$(json .threads <'$work/bw2.json') == 2 ]]"
check "mem_bw 0 is refused" "! '$bin/mem_bw' 0 >/dev/null 2>&1"
check "mem_bw 1 lots is refused" "! '$bin/mem_bw' 1 lots >/dev/null 2>&1"

"$bin/conv_layer_gen" "$work/conv.onnx" 64 64 56 56 3 1 1 relu inner >/dev/null || { echo "FAIL: conv_layer_gen"; exit 1; }
"$bin/conv_layer_gen" "$work/dw.onnx" 64 64 112 112 3 1 64 none first >/dev/null || { echo "FAIL: conv_layer_gen dw"; exit 1; }
"$bin/tiny_chain_gen" "$work" >/dev/null || { echo "FAIL: tiny_chain_gen"; exit 1; }
for m in conv dw; do "$capgraph" compile "$work/$m.onnx" -o "$work/$m.cap" >/dev/null || { echo "FAIL: compile $m"; exit 1; }; done
"$capgraph" compile "$work/tiny_chain.onnx" -o "$work/tiny.cap" >/dev/null || { echo "FAIL: compile tiny_chain"; exit 1; }

# The step with the most FLOPs (the layer under study) must be of class $2; every step of tiny small.
bound_of_largest() {
  node -e "
    const p = JSON.parse(require('fs').readFileSync('$1', 'utf8'));
    const s = p.steps.reduce((a, b) => (b.flops > a.flops ? b : a));
    console.log(s.bound, s.flops, s.bytes);"
}
for machine in stated measured; do
  if [[ $machine == stated ]]; then bars=(--peak 100 --bandwidth 10); else
    bars=(--peak "$(json .gflops <"$work/peak.json")" --bandwidth "$(json .read_gbps <"$work/bw1.json")"); fi
  for m in conv dw tiny; do
    "$capgraph" profile "$work/$m.cap" --threads 1 --runs 3 "${bars[@]}" --json >"$work/$m.$machine.json" ||
      { echo "FAIL: profile $m ($machine)"; fail=1; }
  done
  read -r conv_bound conv_flops conv_bytes < <(bound_of_largest "$work/conv.$machine.json")
  read -r dw_bound dw_flops dw_bytes < <(bound_of_largest "$work/dw.$machine.json")
  check "$machine machine: 3x3 conv 64 -> 64 is compute-bound ($conv_bound)" "[[ $conv_bound == compute ]]"
  check "$machine machine: depthwise 3x3 conv is memory-bound ($dw_bound)" "[[ $dw_bound == memory ]]"
  check "$machine machine: all 200 tiny chain steps are small" "node -e \"
    const p = JSON.parse(require('fs').readFileSync('$work/tiny.$machine.json', 'utf8'));
    if (p.steps.length < 200 || !p.steps.every(s => s.bound === 'small' && s.meets)) process.exit(1);\""
done
# 64 x 64 x 9 x 56 x 56 multiply-adds; bytes at least its input, output and weights in f32.
check "conv: FLOPs ($conv_flops) are 2 x 64 x 64 x 9 x 56 x 56 (+ bias)" "(( conv_flops >= 231211008 && conv_flops < 232000000 ))"
check "conv: bytes ($conv_bytes) cover input, output and weights, once each" \
  "(( conv_bytes >= 2 * 64 * 56 * 56 * 4 + 64 * 64 * 9 * 4 && conv_bytes < 2 * (2 * 64 * 56 * 56 * 4 + 64 * 64 * 9 * 4) ))"
check "dw: bytes ($dw_bytes) cover input and output once each" \
  "(( dw_bytes >= 2 * 64 * 112 * 112 * 4 && dw_bytes < 3 * 64 * 112 * 112 * 4 ))"
check "profile: --peak without --bandwidth is refused" "! '$capgraph' profile '$work/dw.cap' --peak 100 >/dev/null 2>&1"
check "profile: --bandwidth -1 is refused" "! '$capgraph' profile '$work/dw.cap' --peak 100 --bandwidth -1 >/dev/null 2>&1"
check "profile: the table has the bar columns" "'$capgraph' profile '$work/dw.cap' --runs 2 --best-of 2 --peak 100 --bandwidth 10 | grep -q 'below their bar:'"
((fail == 0)) && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
