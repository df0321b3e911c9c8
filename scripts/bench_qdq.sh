#!/usr/bin/env bash
# bench_qdq.sh [THREADS...]: quantized models beside ONNX Runtime (issue 18's closing note). Makes a
# zoo-like folder and times it with scripts/bench.sh:
#   qdq_conv_relu_conv   op_conformance_test's QDQ model (1x3x8x8: two Convs, uint8 activations,
#                        int8 weights per channel), written out with CAPGRAPH_OP_KEEP
#   regnet_like          tests/tools/family_gen's float CNN (bench size, 1x3x224x224)
#   regnet_like_qdq      the same made QDQ by tests/models/qdq_convert.py (int8 weights per
#                        channel, int32 bias, uint8 activations calibrated by ONNX Runtime)
# RUNS (default 10 here) and OVERHEAD_RUNS pass to bench.sh. Needs a build, node with
# onnxruntime-node and python3-onnx.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD:-$repo/build}
deps=${CAPGRAPH_TEST_DEPS:-$build/deps}
export ORT_DIR=${ORT_DIR:-$deps/ort} RUNS=${RUNS:-10} OVERHEAD_RUNS=${OVERHEAD_RUNS:-200}
work=$(mktemp -d /tmp/capgraph-bench-qdq.XXXXXX)
trap 'rm -rf "$work"' EXIT
zoo=$work/zoo
mkdir -p "$zoo/qdq_conv_relu_conv" "$zoo/regnet_like_qdq"

# The op test's QDQ model: kept on disk by CAPGRAPH_OP_KEEP in the test's temporary folder.
(cd "$repo/tests/e2e" && TMPDIR=$work CAPGRAPH_OP_KEEP=1 CAPGRAPH_OP_CASE=qdq_conv_relu_conv_model \
  "$build/tests/e2e/op_conformance_test" -tc="every op case*" >/dev/null)
cp "$work"/capgraph_op_conformance_*/qdq_conv_relu_conv_model/model.onnx "$zoo/qdq_conv_relu_conv/"
"$build/tests/tools/npy_random" "$zoo/qdq_conv_relu_conv/input_0.npy" 1x3x8x8 1 >/dev/null
echo '{"inputs": [{"name": "x", "file": "input_0.npy", "dims": [1, 3, 8, 8]}]}' >"$zoo/qdq_conv_relu_conv/meta.json"

"$build/tests/tools/family_gen" "$work/families" bench >/dev/null
cp -r "$work/families/regnet_like" "$zoo/"
/usr/bin/python3 "$repo/tests/models/qdq_convert.py" "$zoo/regnet_like/model.onnx" "$zoo/regnet_like_qdq/model.onnx" "$zoo/regnet_like/input_0.npy"
cp "$zoo/regnet_like/input_0.npy" "$zoo/regnet_like/meta.json" "$zoo/regnet_like_qdq/"

"$repo/scripts/bench.sh" "$zoo" "$@"
