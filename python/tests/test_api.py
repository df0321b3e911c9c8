"""The package on the CPU: descriptions, results, run_into, zero-copy binding, float16 and
bfloat16, profile, and every kind of bad input raising capgraph.Error with the runtime's message."""
import os
import subprocess
import sys
import unittest

import numpy as np

import capgraph
from harness import (WORK, close_enough, compile_onnx, three_input_expected, three_input_onnx)

rng = np.random.default_rng(7)


def setUpModule():
    global THREE, HALF, BF16
    THREE = compile_onnx(three_input_onnx("three"), "three")
    HALF = compile_onnx(three_input_onnx("half", cast="float16"), "half")
    BF16 = compile_onnx(three_input_onnx("bf16", cast="bfloat16"), "bf16")


def feeds(shape=(2, 8)):
    return {n: rng.standard_normal(shape).astype(np.float32) for n in "abc"}


class Describe(unittest.TestCase):
    def test_inputs_and_outputs(self):
        with capgraph.load(THREE) as m:
            self.assertEqual([(t.name, t.shape, t.dtype) for t in m.inputs],
                             [(n, (2, 8), np.float32) for n in "abc"])
            self.assertEqual([t.name for t in m.outputs], ["y", "z"])
            self.assertEqual(m.inputs[0].nbytes, 64)
        with capgraph.load(HALF) as m:
            self.assertEqual(m.outputs[2].dtype, np.float16)
        with capgraph.load(BF16) as m:
            self.assertEqual(m.outputs[2].dtype, capgraph.bfloat16)


class Run(unittest.TestCase):
    def test_results_are_copies_and_correct(self):
        with capgraph.load(THREE, threads=1) as m:
            f = feeds()
            out = m.run(**f)
            y, z = three_input_expected(f["a"], f["b"], f["c"])
            np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(out["z"], z)
            again = m.run(a=f["c"], b=f["b"], c=f["a"])  # the first result is not overwritten
            np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-6)
            self.assertFalse(np.allclose(again["y"], out["y"]))
            self.assertTrue(out["y"].flags.owndata)
            # A mapping, for names that are not identifiers; non-contiguous arrays are fine.
            f2 = {k: np.asfortranarray(v) for k, v in feeds().items()}
            np.testing.assert_allclose(m.run(f2)["y"], three_input_expected(**f2)[0], rtol=1e-5, atol=1e-6)

    def test_run_into_writes_the_callers_arrays(self):
        with capgraph.load(THREE) as m:
            y = np.full((2, 8), np.nan, np.float32)
            before = y.ctypes.data
            f = feeds()
            self.assertIsNone(m.run_into({"y": y}, **f))
            self.assertEqual(y.ctypes.data, before)
            np.testing.assert_allclose(y, three_input_expected(**f)[0], rtol=1e-5, atol=1e-6)

    def test_float16_and_bfloat16_outputs(self):
        f = feeds()
        y = three_input_expected(**f)[0]
        with capgraph.load(HALF) as m:
            w = m.run(**f)["w"]
            self.assertEqual(w.dtype, np.float16)
            np.testing.assert_array_equal(w, y.astype(np.float16))  # both round to nearest even
        with capgraph.load(BF16) as m:
            w = m.run(**f)["w"]
            self.assertEqual(w.dtype, capgraph.bfloat16)
            np.testing.assert_array_equal(w.view(np.uint16),
                                          capgraph.bfloat16_from_float32(y).view(np.uint16))
            ok, diff = close_enough(capgraph.bfloat16_to_float32(w), y)
            self.assertLess(diff, 2 ** -7 * np.abs(y).max() + 1e-30)

    def test_bfloat16_conversions(self):
        x = np.array([1.0, 1.00390625, 1.01171875, -2.5, np.inf, np.nan], np.float32)
        b = capgraph.bfloat16_from_float32(x)
        # 1+2^-8 is halfway and rounds to even (1.0); 1+3*2^-8 rounds up to 1+2^-6.
        np.testing.assert_array_equal(capgraph.bfloat16_to_float32(b)[:5],
                                      np.array([1.0, 1.0, 1.015625, -2.5, np.inf], np.float32))
        self.assertTrue(np.isnan(capgraph.bfloat16_to_float32(b)[5]))

    def test_profile_names_every_step(self):
        with capgraph.load(THREE) as m:
            m.run(**feeds())
            steps = m.profile(runs=3)
            self.assertGreater(len(steps), 0)
            self.assertEqual([s.index for s in steps], list(range(len(steps))))
            for s in steps:
                self.assertTrue(s.name)
                self.assertGreaterEqual(s.ms, 0.0)


class Bind(unittest.TestCase):
    def test_bound_arrays_are_used_in_place(self):
        with capgraph.load(THREE) as m:
            a, b, c = (capgraph.aligned_empty((2, 8), np.float32) for _ in range(3))
            y = capgraph.aligned_empty((2, 8), np.float32)
            for arr in (a, b, c, y):
                self.assertEqual(arr.ctypes.data % 4096, 0)
            m.bind_input("a", a), m.bind_input("b", b), m.bind_input("c", c)
            m.bind_output("y", y)
            for frame in range(3):
                # Refilled in place: nothing given to run(), the arrays are the model's memory.
                for arr in (a, b, c):
                    arr[...] = rng.standard_normal((2, 8))
                y[...] = np.nan
                out = m.run()
                expected = three_input_expected(a, b, c)[0]
                np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)  # written where it is
                np.testing.assert_array_equal(out["y"], y)
            # Unbound: the arena again, and the old output array no longer written.
            m.bind_output("y", None)
            y[...] = -1
            f = feeds()
            m.bind_input("a", None), m.bind_input("b", None), m.bind_input("c", None)
            out = m.run(**f)
            np.testing.assert_allclose(out["y"], three_input_expected(**f)[0], rtol=1e-5, atol=1e-6)
            self.assertTrue((y == -1).all())

    def test_aligned_empty(self):
        for shape, dtype in (((1, 3, 5), np.float16), (1, np.uint8), ((4097,), np.int8)):
            arr = capgraph.aligned_empty(shape, dtype)
            self.assertEqual(arr.ctypes.data % 4096, 0)
            self.assertEqual(arr.dtype, np.dtype(dtype))
            self.assertTrue(arr.flags.c_contiguous)


class Errors(unittest.TestCase):
    def assertError(self, fn, *words, status="argument error"):
        with self.assertRaises(capgraph.Error) as cm:
            fn()
        for w in words:
            self.assertIn(w, str(cm.exception))
        self.assertEqual(cm.exception.status, status)
        return cm.exception

    def test_bad_inputs(self):
        with capgraph.load(THREE) as m:
            f = feeds()
            self.assertError(lambda: m.run(**f, x=f["a"]), "no input 'x'", "'a', 'b', 'c'")
            self.assertError(lambda: m.run(a=f["a"], b=f["b"]), "'c' not given")
            self.assertError(lambda: m.run(a=f["a"], b=f["b"], c=f["c"][:1]),
                             "input 'c' is float32 [1, 8], the capture's is float32 [2, 8]")
            self.assertError(lambda: m.run(a=f["a"].astype(np.float64), b=f["b"], c=f["c"]),
                             "input 'a' is float64")
            self.assertError(lambda: m.run(a=[1.0] * 16, b=f["b"], c=f["c"]), "numpy.ndarray")
            y = np.zeros((2, 8), np.float32)
            y.flags.writeable = False
            self.assertError(lambda: m.run_into({"y": y}, **f), "read-only")
            self.assertError(lambda: m.run_into({"q": y}, **f), "no output 'q'")
            unaligned = np.zeros(4096 + 8, np.uint8)[8:8 + 64].view(np.float32).reshape(2, 8)
            if unaligned.ctypes.data % 4096:
                self.assertError(lambda: m.bind_input("a", unaligned), "start on a page",
                                 "aligned_empty")
            self.assertError(lambda: m.bind_output("nope", y), "no output 'nope'")
            self.assertError(lambda: m.bind_input("a", capgraph.aligned_empty((8, 2), np.float32)),
                             "the capture's is float32 [2, 8]")
            self.assertError(m.check, "host twins")  # the runtime's own message
            self.assertError(lambda: m.profile(runs=0), "runs must be")
            np.testing.assert_allclose(m.run(**f)["y"], three_input_expected(**f)[0], rtol=1e-5, atol=1e-6)
        self.assertError(lambda: m.run(**f), "the model is closed")
        self.assertError(m.check, "the model is closed")
        m.close()  # again: nothing

    def test_bad_files_and_options(self):
        self.assertError(lambda: capgraph.load(WORK / "missing.cap"), "missing.cap", "cannot open",
                         status="io error")
        data = THREE.read_bytes()
        damaged = WORK / "damaged.cap"
        damaged.write_bytes(data[: len(data) // 2])
        self.assertError(lambda: capgraph.load(damaged), "damaged.cap", status="format error")
        flipped = bytearray(data)
        flipped[0:8] = b"\xff" * 8
        damaged.write_bytes(bytes(flipped))
        self.assertError(lambda: capgraph.load(damaged), "damaged.cap", status="format error")
        self.assertError(lambda: capgraph.load(THREE, device="no-such-device"), "no-such-device")
        self.assertError(lambda: capgraph.load(THREE, threads=0), "threads must be")
        self.assertError(lambda: capgraph.load(THREE, device=3), "device must be")

    def test_missing_library_is_an_error_not_a_crash(self):
        code = ("import capgraph\ntry:\n    capgraph.load('x.cap')\nexcept capgraph.Error as e:\n"
                "    print('Error:', e)\n")
        env = dict(os.environ, CAPGRAPH_LIBRARY=str(WORK / "nowhere.so"))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("nowhere.so: no such file", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
