#!/usr/bin/python3
"""qdq_convert.py IN.onnx OUT.onnx INPUT.npy: a float CNN made QDQ-quantized, the format
quantization tools write (issue 18): every Conv's weight int8 per output channel (symmetric, 7 bits),
its bias int32 (scale = input scale x weight scale), and every tensor a Conv reads or writes
passed through QuantizeLinear -> DequantizeLinear as uint8 per tensor, with ranges calibrated on
INPUT.npy by ONNX Runtime (tests/ort/ort_run.mjs, float32 model, every such tensor made an output).
Uses only the onnx package (Debian's python3-onnx) and node. Exit 77 without the onnx module.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError as e:
    print(f"qdq_convert: SKIP: {e} (install Debian's python3-onnx)")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
ORT_RUN = os.path.join(os.path.dirname(HERE), "ort", "ort_run.mjs")


def file_name(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def ranges_calibrate(model, names, x_path, work):
    """{tensor: (min, max)} from ONNX Runtime on the float model with those tensors as outputs."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    known = {o.name for o in probe.graph.output}
    for n in names:
        if n not in known:
            probe.graph.output.append(helper.make_empty_tensor_value_info(n))
            probe.graph.output[-1].type.tensor_type.elem_type = TensorProto.FLOAT
    path = os.path.join(work, "probe.onnx")
    onnx.save(probe, path)
    input_name = model.graph.input[0].name
    p = subprocess.run(["node", ORT_RUN, path, os.path.join(work, "ranges"), f"{input_name}={x_path}"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"qdq_convert: error: ONNX Runtime failed on the calibration model: {p.stderr.strip()}")
    r = {}
    for n in names:
        a = np.load(os.path.join(work, "ranges", file_name(n) + ".npy"))
        r[n] = (min(float(a.min()), 0.0), max(float(a.max()), 0.0))
    return r


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: qdq_convert.py IN.onnx OUT.onnx INPUT.npy")
    model = onnx.load(sys.argv[1])
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    convs = [n for n in g.node if n.op_type == "Conv" and len(n.input) > 1 and n.input[1] in inits]
    acts = []
    for n in convs:
        for t in (n.input[0], n.output[0]):
            if t not in acts:
                acts.append(t)
    with tempfile.TemporaryDirectory(prefix="qdq_convert.") as work:
        ranges = ranges_calibrate(model, acts, sys.argv[3], work)
    new_inits, qdq_nodes, scale_of = [], [], {}
    # Activations: uint8, per tensor. Consumers read the dequantized copy; the producer is unchanged.
    rename = {}
    for t in acts:
        lo, hi = ranges[t]
        scale = (hi - lo) / 255 if hi > lo else 1.0
        zp = int(np.clip(round(-lo / scale), 0, 255))
        scale_of[t] = scale
        new_inits += [numpy_helper.from_array(np.array(scale, np.float32), t + "_qs"),
                      numpy_helper.from_array(np.array(zp, np.uint8), t + "_qz")]
        qdq_nodes += [helper.make_node("QuantizeLinear", [t, t + "_qs", t + "_qz"], [t + "_q"], name=t + "_Q"),
                      helper.make_node("DequantizeLinear", [t + "_q", t + "_qs", t + "_qz"], [t + "_dq"], name=t + "_DQ")]
        rename[t] = t + "_dq"
    for n in g.node:  # every reader takes the dequantized copy; a graph output stays the float value
        for i, x in enumerate(n.input):
            if x in rename:
                n.input[i] = rename[x]
    # Weights int8 per output channel, bias int32. The weights use 7 bits ([-63, 63]), as ONNX
    # Runtime's own quantizer makes them with reduce_range ("7-bit quantization for better accuracy
    # on non-VNNI CPUs", onnxruntime.quantization): on an AVX2 CPU without VNNI its u8s8 kernels
    # add pairs of uint8 x int8 products with vpmaddubsw, which saturates int16 past 255 x 127 x 2,
    # so the reference drifted from the exact result (regnet_like: 0.03 on an AMD EPYC Zen 3).
    for n in convs:
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        ws = np.maximum(np.abs(w.reshape(w.shape[0], -1)).max(axis=1), 1e-12) / 63
        wq = np.clip(np.round(w / ws.reshape(-1, *[1] * (w.ndim - 1))), -63, 63).astype(np.int8)
        name = n.input[1]
        new_inits += [numpy_helper.from_array(wq, name + "_wq"), numpy_helper.from_array(ws.astype(np.float32), name + "_ws"),
                      numpy_helper.from_array(np.zeros(w.shape[0], np.int8), name + "_wz")]
        qdq_nodes.append(helper.make_node("DequantizeLinear", [name + "_wq", name + "_ws", name + "_wz"], [name + "_wdq"], axis=0, name=name + "_DQ"))
        n.input[1] = name + "_wdq"
        if len(n.input) > 2 and n.input[2] in inits:
            b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float64)
            xs = scale_of[n.input[0][:-len("_dq")]] if n.input[0].endswith("_dq") else 1.0
            bs = (xs * ws).astype(np.float32)
            bq = np.round(b / bs).astype(np.int32)
            bname = n.input[2]
            # int32 takes no zero point (ONNX DequantizeLinear: it is 0).
            new_inits += [numpy_helper.from_array(bq, bname + "_bq"), numpy_helper.from_array(bs, bname + "_bs")]
            qdq_nodes.append(helper.make_node("DequantizeLinear", [bname + "_bq", bname + "_bs"], [bname + "_bdq"], axis=0, name=bname + "_DQ"))
            n.input[2] = bname + "_bdq"
    # Node order: a Q/DQ pair right after its producer (graph inputs' pairs first).
    produced_by = {}
    for q in qdq_nodes:
        produced_by.setdefault(q.input[0], []).append(q)
    nodes = []
    ready = {i.name for i in g.input} | {t.name for t in g.initializer} | {t.name for t in new_inits}
    def emit(node):
        nodes.append(node)
        for o in node.output:
            for q in produced_by.get(o, []):
                emit(q)
    for q in qdq_nodes:  # weight and bias DQs and pairs on graph inputs / initializers
        if q.input[0] in ready:
            emit(q)
    for n in g.node:
        emit(n)
    del g.node[:]
    g.node.extend(nodes)
    used = {x for n in g.node for x in n.input}
    kept = [t for t in g.initializer if t.name in used]  # the float weights and biases replaced
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    if not any(o.domain in ("", "ai.onnx") and o.version >= 13 for o in model.opset_import):
        sys.exit("qdq_convert: error: per-channel DequantizeLinear needs opset 13 or later")
    # (no onnx.checker: tests/model_gen's models leave value_info shapes out, which it rejects)
    onnx.save(model, sys.argv[2])
    print(f"qdq_convert: {len(convs)} Conv quantized (int8 weights per channel, int32 bias), {len(acts)} activations uint8 per tensor")


if __name__ == "__main__":
    main()
