#!/usr/bin/python3
"""qdq_model_test.py BUILD_DIR: issue 18's QDQ-quantized model made by the tests. family_gen's
regnet_like (test size) is made QDQ by qdq_convert.py (int8 per-channel weights, int32 bias,
uint8 activations calibrated by ONNX Runtime), then capgraph's output is compared with ONNX
Runtime running the same QDQ model: compiled for the host, for the AVX2-only cpu-x86_64 target,
and for cpu-aarch64 replayed under qemu-aarch64 when the aarch64 capgraph-run is built.

Tolerance (README, quantized models): max |a-b| <= 2e-3 * max |ref| + 1e-5 and the same argmax
(measured 2.5e-7; the quantization itself moves the output by 1.3% of max |ref| from the float
model, so a capgraph that skipped QuantizeLinear/DequantizeLinear would fail).
ONNX Runtime fuses DequantizeLinear -> Conv -> QuantizeLinear into integer kernels that round
once per layer; capgraph computes the dequantized float graph, so an activation that lands on a
rounding boundary may take the next uint8 step (one scale) and carry it to the output.
Needs node with onnxruntime-node (CAPGRAPH_TEST_DEPS) and python3-onnx; exit 77 only when the
onnx module is absent (the same rule as tests/onnx_node).
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
RTOL = 2e-3


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)}\n{p.stdout}{p.stderr}")
    return p.stdout


def main():
    build = sys.argv[1]
    try:
        import numpy as np
        import onnx  # noqa: F401 (qdq_convert.py needs it)
    except ImportError as e:
        print(f"SKIPPED: {e} (install Debian's python3-onnx)")
        return 77
    deps = os.environ.get("CAPGRAPH_TEST_DEPS", os.path.join(build, "deps"))
    os.environ.setdefault("ORT_DIR", os.path.join(deps, "ort"))
    capgraph = os.path.join(build, "cli", "capgraph")
    with tempfile.TemporaryDirectory(prefix="capgraph-qdq.") as work:
        run([os.path.join(build, "tests", "tools", "family_gen"), work, "test"])
        src = os.path.join(work, "regnet_like")
        qdq = os.path.join(work, "regnet_like_qdq.onnx")
        x = os.path.join(src, "input_0.npy")
        print(run([sys.executable, os.path.join(HERE, "qdq_convert.py"), os.path.join(src, "model.onnx"), qdq, x]), end="")
        run(["node", os.path.join(REPO, "tests", "ort", "ort_run.mjs"), qdq, os.path.join(work, "ort"), "x=" + x])
        # The host's CPU, the AVX2-only x86-64 target, and aarch64 (NEON: frintn rounds the fake
        # quantization) under qemu when qemu-aarch64 and the aarch64 capgraph-run are built.
        runs = [("host", [], [capgraph, "run"]), ("cpu-x86_64", ["--target", "cpu-x86_64"], [capgraph, "run"])]
        a64 = os.path.join(build, "runtime", "aarch64", "capgraph-run")
        if shutil.which("qemu-aarch64") and os.access(a64, os.X_OK):
            runs.append(("cpu-aarch64", ["--target", "cpu-aarch64"], ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", a64]))
        else:
            print("(no qemu-aarch64 or aarch64 capgraph-run: the cpu-aarch64 capture is not run)")
        failures = checks = 0
        for name, target, runner in runs:
            cap = os.path.join(work, name + ".cap")
            out = os.path.join(work, "cg_" + name)
            run([capgraph, "compile", qdq, "-o", cap] + target)
            run(runner + [cap, "--input", "x=" + x, "--output-dir", out])
            for f in sorted(os.listdir(os.path.join(work, "ort"))):
                ref = np.load(os.path.join(work, "ort", f))
                got = np.load(os.path.join(out, f))
                checks += 1
                if got.shape != ref.shape or got.dtype != ref.dtype:
                    print(f"FAIL {name} {f}: {got.dtype}{got.shape}, ONNX Runtime gives {ref.dtype}{ref.shape}")
                    failures += 1
                    continue
                d = float(np.abs(got - ref).max())
                tol = RTOL * float(np.abs(ref).max()) + 1e-5
                same = got.reshape(got.shape[0], -1).argmax(1).tolist() == ref.reshape(ref.shape[0], -1).argmax(1).tolist()
                ok = d <= tol and same
                print(f"{'PASS' if ok else 'FAIL'} regnet_like QDQ {name} {f}: max |a-b| {d:.4g} (<= {tol:.4g}), argmax {'equal' if same else 'differs'}")
                failures += not ok
        print(f"{checks - failures} passed, {failures} failed")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
