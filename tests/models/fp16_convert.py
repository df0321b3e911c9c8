#!/usr/bin/python3
"""fp16_convert.py IN.onnx OUT.onnx: the same model stored in float16 (issue 18's float16 model).

Every float32 weight (initializer or Constant node), graph input, output and value_info becomes
float16, and every Cast to float32 casts to float16; what ONNX types as tensor(float) in every
opset stays float32 (Resize's roi and scales, Upsample's scales). A node with a float32 weight
float16 cannot hold (beyond +-65504: PP-OCR det's first BatchNormalization has a variance of
4.8e7) stays float32 with Casts at its edges, as float16 exporters keep such nodes (a "block
list"). Uses only the onnx package (Debian's python3-onnx), as tests/onnx_node does.
Prints what it kept in float32. Exit 77 without the onnx module.
"""
import sys

try:
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
except ImportError as e:
    print(f"fp16_convert: SKIP: {e} (install Debian's python3-onnx)")
    sys.exit(77)

FLOAT16_MAX = 65504.0
# (op, input index) pairs that ONNX types as tensor(float) whatever the data's type.
FLOAT32_INPUTS = {("Resize", 1), ("Resize", 2), ("Upsample", 1)}


def tensor_half(t):
    """A float32 TensorProto as float16 with the same name; other types unchanged."""
    if t.data_type != TensorProto.FLOAT:
        return t
    return numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: fp16_convert.py IN.onnx OUT.onnx")
    model = onnx.load(sys.argv[1])
    g = model.graph
    for n in g.node:
        if n.domain not in ("", "ai.onnx"):
            sys.exit(f"fp16_convert: error: node '{n.name}' ({n.domain}.{n.op_type}) is outside the ONNX domain")
        if any(a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) for a in n.attribute):
            sys.exit(f"fp16_convert: error: node '{n.name}' ({n.op_type}) has a subgraph; not handled")
        for a in n.attribute:  # the model's own Casts to float32 (before the edge Casts are added)
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    weights = {t.name: numpy_helper.to_array(t) for t in g.initializer if t.data_type == TensorProto.FLOAT}
    for n in g.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value" and a.t.data_type == TensorProto.FLOAT:
                    weights[n.output[0]] = numpy_helper.to_array(a.t)
    keep = {n.input[i] for n in g.node for i in range(len(n.input)) if (n.op_type, i) in FLOAT32_INPUTS}
    # Nodes kept in float32: their float32 weights stay, their other inputs and outputs get Casts.
    blocked = [n for n in g.node if n.op_type != "Constant" and any(
        x in weights and weights[x].size and np.abs(weights[x]).max() > FLOAT16_MAX for x in n.input)]
    nodes = []
    for n in g.node:
        if n not in blocked:
            nodes.append(n)
            continue
        print(f"fp16_convert: {n.op_type} '{n.name}' stays float32 (a weight beyond float16's range)")
        for i, x in enumerate(n.input):
            if x in weights:
                keep.add(x)
            elif x:
                nodes.append(helper.make_node("Cast", [x], [x + "_fp32"], to=TensorProto.FLOAT, name=f"{n.name}_in{i}_fp32"))
                n.input[i] = x + "_fp32"
        casts = []
        for i, y in enumerate(n.output):
            if y:
                casts.append(helper.make_node("Cast", [y + "_fp32"], [y], to=TensorProto.FLOAT16, name=f"{n.name}_out{i}_fp16"))
                n.output[i] = y + "_fp32"
        nodes.append(n)
        nodes.extend(casts)
    del g.node[:]
    g.node.extend(nodes)
    for i, t in enumerate(g.initializer):
        if t.name not in keep:
            g.initializer[i].CopyFrom(tensor_half(t))
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Constant" and a.name == "value" and n.output[0] not in keep:
                a.t.CopyFrom(tensor_half(a.t))
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT and v.name not in keep:
            v.type.tensor_type.elem_type = TensorProto.FLOAT16
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[2])


if __name__ == "__main__":
    main()
