"""What the package's tests share: the build folder, models written with Debian's python3-onnx
and compiled by the build's `capgraph compile`, and the conformance tolerance.

Environment (set by ctest, python/CMakeLists.txt): CAPGRAPH_BUILD, the build folder; PYTHONPATH,
BUILD/python (the package as the build leaves it); CAPGRAPH_LIBRARY for the fake devices' tests.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BUILD = Path(os.environ.get("CAPGRAPH_BUILD", Path(__file__).resolve().parents[2] / "build"))
CLI = BUILD / "cli" / "capgraph"
WORK = Path(tempfile.mkdtemp(prefix="capgraph-py-"))


def close_enough(got: np.ndarray, ref: np.ndarray) -> tuple[bool, float]:
    """tests/tools/npy_compare's rule: max |a-b| <= 1e-3 * max |ref| + 1e-5."""
    diff = float(np.max(np.abs(got.astype(np.float64) - ref.astype(np.float64)), initial=0.0))
    bound = 1e-3 * float(np.max(np.abs(ref), initial=0.0)) + 1e-5
    return diff <= bound, diff


def compile_onnx(onnx_path: Path, name: str, *args: str) -> Path:
    """`capgraph compile` into the test's scratch folder; fails the test with its message."""
    out = WORK / f"{name}.cap"
    r = subprocess.run([str(CLI), "compile", str(onnx_path), "-o", str(out), *args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"capgraph compile {onnx_path} failed:\n{r.stdout}{r.stderr}")
    return out


def three_input_onnx(name: str = "three", shape=(2, 8), cast: str | None = None) -> Path:
    """y = a * b + c and z = relu(a - c) over three float32 inputs of `shape`; `cast` adds an
    output w = Cast(y) to "float16" or "bfloat16" (computed in float32, stored narrow)."""
    import onnx
    from onnx import TensorProto, helper
    vi = lambda n, t=TensorProto.FLOAT: helper.make_tensor_value_info(n, t, list(shape))
    nodes = [helper.make_node("Mul", ["a", "b"], ["ab"]), helper.make_node("Add", ["ab", "c"], ["y"]),
             helper.make_node("Sub", ["a", "c"], ["d"]), helper.make_node("Relu", ["d"], ["z"])]
    outputs = [vi("y"), vi("z")]
    if cast:
        to = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16}[cast]
        nodes.append(helper.make_node("Cast", ["y"], ["w"], to=to))
        outputs.append(vi("w", to))
    graph = helper.make_graph(nodes, name, [vi("a"), vi("b"), vi("c")], outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = WORK / f"{name}.onnx"
    onnx.save(model, str(path))
    return path


def three_input_expected(a, b, c):
    return a * b + c, np.maximum(a - c, 0)


def skip(reason: str) -> None:
    """ctest's skip (SKIP_RETURN_CODE 77), saying why."""
    print(f"SKIPPED: {reason}")
    sys.exit(77)


def monitoring_onnx(name: str = "monitoring", out: Path = WORK) -> Path:
    """A model shaped like openpilot's driver-monitoring model, small: one uint8 luma frame
    "input_img" 1x1x128x256 (the real one is 1440x960) and "calib" 1x3, scaled in the graph,
    three strided Conv+Relu, pooled, and a Gemm head "outputs" 1x84 (face pose, eyes, ...)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = lambda n, *s: numpy_helper.from_array((rng.standard_normal(s) * 0.2).astype(np.float32), n)
    inits = [w("w1", 8, 1, 3, 3), w("w2", 16, 8, 3, 3), w("w3", 32, 16, 3, 3), w("head", 35, 84),
             numpy_helper.from_array(np.array([1 / 255], np.float32), "scale")]
    conv = lambda i, wt, o: [helper.make_node("Conv", [i, wt], [o + "c"], pads=[1, 1, 1, 1], strides=[2, 2]),
                             helper.make_node("Relu", [o + "c"], [o])]
    nodes = [helper.make_node("Cast", ["input_img"], ["f"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["f", "scale"], ["s"]),
             *conv("s", "w1", "r1"), *conv("r1", "w2", "r2"), *conv("r2", "w3", "r3"),
             helper.make_node("GlobalAveragePool", ["r3"], ["g"]),
             helper.make_node("Flatten", ["g"], ["v"]),
             helper.make_node("Concat", ["v", "calib"], ["vc"], axis=1),
             helper.make_node("MatMul", ["vc", "head"], ["outputs"])]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input_img", TensorProto.UINT8, [1, 1, 128, 256]),
         helper.make_tensor_value_info("calib", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("outputs", TensorProto.FLOAT, [1, 84])], inits)
    path = Path(out) / f"{name}.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), str(path))
    return path


def driving_onnx() -> Path:
    """targets/adreno/testdata/comma_model_gen's driving-shaped model (two uint8 camera inputs
    1x12x128x256, desire, features_buffer; plan, lead, pose, hidden_state heads)."""
    out = WORK / "driving"
    out.mkdir(exist_ok=True)
    subprocess.run([str(BUILD / "targets" / "adreno" / "comma_model_gen"), str(out)], check=True)
    return out / "comma.onnx"
