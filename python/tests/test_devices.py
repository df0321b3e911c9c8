"""The package on fake-adreno (the fake KGSL running the a630 machine code in the ir3 emulator,
from the test library libcapgraph_runtime_fakes.so through CAPGRAPH_LIBRARY), and
examples/python/modeld.py on cpu and fake-adreno. Skips (77) without the test library or without
Mesa's ir3 in the compiler (CAPGRAPH_ADRENO=OFF)."""
import os
import subprocess
import sys
import unittest
from pathlib import Path

import numpy as np

import capgraph
from harness import (compile_onnx, driving_onnx, monitoring_onnx, skip,
                     three_input_expected, three_input_onnx)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "modeld.py"


def adreno_compile(onnx_path, name):
    return compile_onnx(onnx_path, name, "--target", "adreno-a630")


class FakeAdreno(unittest.TestCase):
    def test_run_bind_check(self):
        cap = adreno_compile(three_input_onnx("three_a630"), "three_a630")
        rng = np.random.default_rng(1)
        f = {n: rng.standard_normal((2, 8)).astype(np.float32) for n in "abc"}
        with capgraph.load(cap, device="fake-adreno") as m:
            out = m.run(**f)
            y, z = three_input_expected(**f)
            np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["z"], z, rtol=1e-5, atol=1e-6)
            # Imported once (MAP_USER_MEM on a device), read and written where they are.
            a = capgraph.aligned_empty((2, 8), np.float32)
            yb = capgraph.aligned_empty((2, 8), np.float32)
            m.bind_input("a", a)
            m.bind_output("y", yb)
            for k in range(2):
                a[...] = rng.standard_normal((2, 8))
                yb[...] = np.nan
                m.run(b=f["b"], c=f["c"])
                np.testing.assert_allclose(yb, three_input_expected(a, f["b"], f["c"])[0],
                                           rtol=1e-5, atol=1e-6)
            with self.assertRaises(capgraph.Error) as cm:  # the runtime's own refusal
                m.check()
            self.assertIn("unbind it first", str(cm.exception))
            m.bind_input("a", None)
            m.bind_output("y", None)
            m.run(**f)
            self.assertIn("launches match their host twins", m.check())
        with self.assertRaises(capgraph.Error) as cm:
            capgraph.load(compile_onnx(three_input_onnx("three_cpu"), "three_cpu"), device="fake-adreno")
        self.assertIn("compiled for", str(cm.exception))


class ModelDaemon(unittest.TestCase):
    def run_example(self, device, target, frames):
        drv = compile_onnx(driving_onnx(), f"driving_{target}", "--target", target)
        mon = compile_onnx(monitoring_onnx(), f"monitoring_{target}", "--target", target)
        r = subprocess.run([sys.executable, str(EXAMPLE), str(drv), str(mon), "--device", device,
                            "--frames", str(frames)], capture_output=True, text=True)
        print(r.stdout + r.stderr)
        self.assertEqual(r.returncode, 0)
        self.assertIn(f"modeld: device {device}, {frames} frames at 20 Hz, 11 arrays bound", r.stdout)
        self.assertRegex(r.stdout, r"latency ms per frame: p50 [0-9.]+  p90 [0-9.]+  p99 [0-9.]+")
        self.assertRegex(r.stdout, rf"missed the 50 ms budget: \d+ of {frames} frames")
        self.assertNotIn("nan", r.stdout)

    def test_cpu(self):
        self.run_example("cpu", "cpu", 20)

    def test_fake_adreno(self):
        self.run_example("fake-adreno", "adreno-a630", 2)


if __name__ == "__main__":
    lib = os.environ.get("CAPGRAPH_LIBRARY", "")
    if not lib.endswith("libcapgraph_runtime_fakes.so") or not Path(lib).is_file():
        skip(f"CAPGRAPH_LIBRARY must name the test library libcapgraph_runtime_fakes.so (is '{lib}')")
    try:  # a build without Mesa's ir3 (CAPGRAPH_ADRENO=OFF) refuses the target by name
        adreno_compile(three_input_onnx("probe"), "probe")
    except AssertionError as e:
        skip(f"this build cannot compile for adreno-a630: {e}")
    unittest.main(verbosity=2)
