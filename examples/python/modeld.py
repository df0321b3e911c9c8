"""A model daemon shaped like openpilot's modeld, on capgraph's Python package.

usage: modeld.py DRIVING.cap MONITORING.cap [--device cpu|adreno|fake-adreno] [--frames N] [--hz 20]

Two captures on one device: a driving model (two stacked uint8 camera inputs, desire,
features_buffer; plan, lead, pose, hidden_state heads: targets/adreno/testdata/comma_model_gen)
and a driver-monitoring model (one uint8 frame and calib). Every input and output is bound once,
zero-copy, to page-aligned arrays; each frame the "camera" writes the new image into those arrays
in place (the older frame of the stack shifts down, as modeld keeps two frames), hidden_state is
shifted into features_buffer, and both models run. The loop is paced at --hz; at the end it prints
per-frame latency percentiles and how many frames missed the budget (1/hz: 50 ms at 20 Hz).

fake-adreno lives in the test library: CAPGRAPH_LIBRARY=build/targets/libcapgraph_runtime_fakes.so.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import capgraph


def bind_all(m: capgraph.Model) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Page-aligned arrays bound in place of every input and output, once."""
    ins, outs = {}, {}
    for t in m.inputs:
        ins[t.name] = capgraph.aligned_empty(t.shape, t.dtype)
        ins[t.name][...] = 0
        m.bind_input(t.name, ins[t.name])
    for t in m.outputs:
        outs[t.name] = capgraph.aligned_empty(t.shape, t.dtype)
        m.bind_output(t.name, outs[t.name])
    return ins, outs


def camera_write(stack: np.ndarray, frame: np.ndarray) -> None:
    """The newest frame into the top half of a 2-frame stack, the previous one moved down."""
    half = stack.shape[1] // 2
    stack[:, :half] = stack[:, half:]
    stack[:, half:] = frame


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("driving")
    ap.add_argument("monitoring")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--frames", type=int, default=100)
    ap.add_argument("--hz", type=float, default=20.0)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    try:
        driving = capgraph.load(a.driving, a.device)
        monitoring = capgraph.load(a.monitoring, a.device)
        d_in, d_out = bind_all(driving)
        m_in, m_out = bind_all(monitoring)
    except capgraph.Error as e:
        print(f"modeld: {e}", file=sys.stderr)
        return 1
    # What the cameras deliver: a few frames per camera, cycled (YUV420 as 6 planes per frame).
    road = [rng.integers(0, 256, d_in["input_imgs"][:, 6:].shape, np.uint8) for _ in range(4)]
    wide = [rng.integers(0, 256, d_in["big_input_imgs"][:, 6:].shape, np.uint8) for _ in range(4)]
    face = [rng.integers(0, 256, m_in["input_img"].shape, np.uint8) for _ in range(4)]
    m_in["calib"][...] = [[0.01, -0.02, 0.0]]
    budget = 1.0 / a.hz
    latency, driving_ms, monitoring_ms = [], [], []
    missed = 0
    next_tick = time.perf_counter()
    try:
        for i in range(a.frames):
            start = time.perf_counter()
            camera_write(d_in["input_imgs"], road[i % 4])
            camera_write(d_in["big_input_imgs"], wide[i % 4])
            m_in["input_img"][...] = face[i % 4]
            d_in["desire"][0, :-1] = d_in["desire"][0, 1:]
            d_in["desire"][0, -1] = np.eye(8, dtype=np.float32)[i % 8]
            t0 = time.perf_counter()
            driving.run()
            t1 = time.perf_counter()
            monitoring.run()
            t2 = time.perf_counter()
            # The policy's memory: hidden_state shifted into features_buffer, in place.
            fb = d_in["features_buffer"]
            fb[0, :-1] = fb[0, 1:]
            fb[0, -1] = d_out["hidden_state"][0]
            end = time.perf_counter()
            latency.append((end - start) * 1e3)
            driving_ms.append((t1 - t0) * 1e3)
            monitoring_ms.append((t2 - t1) * 1e3)
            late = start - next_tick  # a frame that starts late has eaten into its budget
            missed += end - start + max(late, 0.0) > budget
            next_tick += budget
            time.sleep(max(0.0, next_tick - time.perf_counter()))
    except capgraph.Error as e:
        print(f"modeld: frame {i}: {e}", file=sys.stderr)
        return 1
    p = lambda q: float(np.percentile(latency, q))
    print(f"modeld: device {a.device}, {a.frames} frames at {a.hz:g} Hz, "
          f"{len(d_in) + len(d_out) + len(m_in) + len(m_out)} arrays bound zero-copy")
    print(f"latency ms per frame: p50 {p(50):.2f}  p90 {p(90):.2f}  p99 {p(99):.2f}  "
          f"max {max(latency):.2f}  (driving median {np.median(driving_ms):.2f}, "
          f"monitoring median {np.median(monitoring_ms):.2f})")
    print(f"missed the {budget * 1e3:g} ms budget: {missed} of {a.frames} frames")
    print("plan[:4] " + " ".join(f"{v:.4f}" for v in d_out["plan"][0, :4]) +
          ", monitoring outputs[:4] " + " ".join(f"{v:.4f}" for v in m_out["outputs"][0, :4]))
    driving.close()
    monitoring.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
