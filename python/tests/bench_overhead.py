"""run() overhead over the C API's replay, for a 3-input model (issue 29: <= 20 us per call).

usage: bench_overhead.py [CALLS]   (CAPGRAPH_BUILD, PYTHONPATH as for the tests)

Compiles y = a*b + c, z = relu(a - c) for two sizes of its three float32 inputs, times the C
replay with `capgraph bench` (a C loop around capgraph_run), then each Python way of running it
(run with 3 arrays, run_into, run with every array bound), median per call, and prints the
difference. Not a ctest (timings on a shared machine are not pass/fail); figures go to README.
"""
import json
import subprocess
import sys
import time

import numpy as np

import capgraph
from harness import CLI, compile_onnx, three_input_onnx


def median_us(fn, calls):
    for _ in range(calls // 10):
        fn()
    t = np.empty(calls)
    clock = time.perf_counter_ns
    for i in range(calls):
        t0 = clock()
        fn()
        t[i] = clock() - t0
    return float(np.median(t)) / 1e3


def main():
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    cpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    print(next((l.split(":", 1)[1].strip() for l in cpu.splitlines() if l.startswith("Model name")), "?"))
    for shape in ((2, 8), (1, 3, 64, 64)):
        tag = "x".join(map(str, shape))
        cap = compile_onnx(three_input_onnx(f"bench_{tag}", shape=shape), f"bench_{tag}")
        r = subprocess.run([str(CLI), "bench", str(cap), "--runs", str(calls), "--threads", "1"],
                           capture_output=True, text=True, check=True)
        c_us = json.loads(r.stdout)["median_ms"] * 1e3
        feeds = {n: np.ones(shape, np.float32) for n in "abc"}
        with capgraph.load(cap, threads=1) as m:
            y = np.empty(shape, np.float32)
            ways = {"run(a=, b=, c=)": lambda: m.run(**feeds),
                    "run_into({y}, a=, b=, c=)": lambda: m.run_into({"y": y}, **feeds)}
            for name, fn in ways.items():
                us = median_us(fn, calls)
                print(f"{tag:>10} {name:<26} {us:7.2f} us/call, C replay {c_us:6.2f} us, "
                      f"overhead {us - c_us:6.2f} us")
            for t in m.inputs + m.outputs:
                a = capgraph.aligned_empty(t.shape, t.dtype)
                a[...] = 1
                (m.bind_input if t in m.inputs else m.bind_output)(t.name, a)
            us = median_us(m.run, calls)
            print(f"{tag:>10} {'run() all bound':<26} {us:7.2f} us/call, C replay {c_us:6.2f} us, "
                  f"overhead {us - c_us:6.2f} us")


if __name__ == "__main__":
    main()
