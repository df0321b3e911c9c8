"""No leak over 10,000 runs: run(), run_into() and bound runs of a 3-input model, measured with
tracemalloc (Python allocations still alive) and the process's resident set (/proc/self/statm,
which also sees the runtime's C++ allocations)."""
import os
import sys
import tracemalloc
import unittest

import numpy as np

import capgraph
from harness import compile_onnx, three_input_onnx

RUNS = 10_000
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE


class NoLeak(unittest.TestCase):
    def test_ten_thousand_runs(self):
        cap = compile_onnx(three_input_onnx("leak", shape=(4, 64)), "leak")
        feeds = {n: np.ones((4, 64), np.float32) for n in "abc"}
        with capgraph.load(cap) as m:
            y = np.empty((4, 64), np.float32)
            bound = capgraph.aligned_empty((4, 64), np.float32)
            modes = {"run": lambda: m.run(**feeds), "run_into": lambda: m.run_into({"y": y}, **feeds),
                     "bound": lambda: m.run(**feeds)}
            for name, step in modes.items():
                if name == "bound":
                    m.bind_output("y", bound)
                for _ in range(1000):  # warm: caches, NumPy's free lists, the allocator's arenas
                    step()
                tracemalloc.start()
                rss0 = rss_bytes()
                snap0 = tracemalloc.take_snapshot()
                for _ in range(RUNS):
                    step()
                grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(snap0, "filename"))
                tracemalloc.stop()
                rss = rss_bytes() - rss0
                print(f"{name}: {RUNS} runs, tracemalloc +{grown} B, RSS +{rss} B")
                # A leak of even 8 bytes per run would be 80 KB here.
                self.assertLess(grown, 16 * 1024, name)
                self.assertLess(rss, 256 * 1024, name)
            np.testing.assert_array_equal(bound, np.full((4, 64), 2.0, np.float32))
        # Load and close, repeatedly: the model's memory comes back.
        for _ in range(50):
            capgraph.load(cap).close()
        rss0 = rss_bytes()
        for _ in range(500):
            with capgraph.load(cap) as m:
                m.run(**feeds)
        self.assertLess(rss_bytes() - rss0, 1024 * 1024)


if __name__ == "__main__":
    unittest.main(verbosity=2)
