#!/usr/bin/python3
"""soak.py DEVICE RUNS WARMUP WINDOWS CAP_A [CAP_B]: the long run of issue 30 on one device
(scripts/soak.sh runs it per device). Loads the captures, replays them alternately WARMUP times,
then RUNS times in all (A, B, A, B, ...; A alone when one is given) through the Python package
over the C API, and prints one JSON line: the process's resident memory (VmRSS and its parts),
open file descriptors (/proc/self/fd) and mappings (/proc/self/maps lines) after the warm-up (start),
after the last (end) and after both models are freed (closed), and per model the latency
percentiles (p50, p90, p99, max in microseconds) over WINDOWS equal slices of its runs in order,
so a drift shows as a trend across the slices. Inputs are random (fixed seed). Latencies go into
arrays allocated before the start figures: what the soak measures does not grow the process."""
import ctypes
import gc
import json
import os
import sys
import time

import numpy as np

import capgraph


def status_kib(name: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return -1


class _mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                               "fsmblks", "uordblks", "fordblks", "keepcost")]


# One libc handle for the whole run: a ctypes.CDLL made per call defines a new function-pointer
# class each time, which only the cyclic collector frees, so the end figures counted the start's
# uncollected class (+1760 bytes on every device, the same with 0 replays as with 100,000).
_libc = ctypes.CDLL("libc.so.6")
_libc.mallinfo2.restype = _mallinfo2


def heap_in_use() -> int:
    """Bytes malloc has handed out and not had back (glibc mallinfo2: uordblks + hblkhd)."""
    m = _libc.mallinfo2()
    return int(m.uordblks + m.hblkhd)


def figures() -> dict:
    """VmRSS and its parts: RssAnon (the heap, stacks; also fake-usb's calloc'ed VRAM), RssShmem
    (fake-nv's device memory, memfd pages), RssFile (code, the mapped captures). A fake's device
    memory is touched for the first time as its rings advance (fake-nv's push buffers are 4 MiB
    per channel), which is growth of the fake's GPU, not of the process's own memory."""
    gc.collect()  # what is garbage already is not the process's memory
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    return {"rss_kib": status_kib("VmRSS"), "anon_kib": status_kib("RssAnon"),
            "shmem_kib": status_kib("RssShmem"), "heap_bytes": heap_in_use(),
            "fds": len(os.listdir("/proc/self/fd")),
            "maps": maps}


def feeds_for(model: capgraph.Model, rng: np.random.Generator) -> dict:
    out = {}
    for t in model.inputs:
        if np.issubdtype(t.dtype, np.floating):
            out[t.name] = rng.standard_normal(t.shape).astype(t.dtype)
        else:
            out[t.name] = rng.integers(0, 4, t.shape).astype(t.dtype)
    return out


def windows_of(us: np.ndarray, n: int) -> list:
    rows = []
    for part in np.array_split(us, max(1, min(n, us.size))):
        if not part.size:
            continue
        p50, p90, p99 = np.percentile(part, [50, 90, 99])
        rows.append({"runs": int(part.size), "p50": round(float(p50), 1), "p90": round(float(p90), 1),
                     "p99": round(float(p99), 1), "max": round(float(part.max()), 1)})
    return rows


def main() -> int:
    if len(sys.argv) not in (6, 7):
        print(__doc__, file=sys.stderr)
        return 2
    device, runs, warmup, windows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    caps = sys.argv[5:]
    rng = np.random.default_rng(30)
    models = [capgraph.load(c, device=device) for c in caps]
    feeds = [feeds_for(m, rng) for m in models]
    n = len(models)
    per = [(runs + n - 1 - i) // n for i in range(n)]  # A gets the odd one
    lat = [np.empty(n, np.float64) for n in per]
    for a in lat:  # its pages touched now: filling them later would grow the process (800 KB)
        a.fill(0.0)
    for i in range(max(warmup, n)):  # lazily built state (pools, uploads), first-touched rings
        models[i % n].run(feeds[i % n])
    figures()  # its own first use (ctypes' libc handle, the dict) is not the run's growth
    start = figures()
    t_start = time.monotonic()
    clock = time.perf_counter_ns
    done = [0] * n
    for i in range(runs):
        k = i % n
        t0 = clock()
        models[k].run(feeds[k])
        lat[k][done[k]] = (clock() - t0) / 1000.0
        done[k] += 1
    seconds = time.monotonic() - t_start
    end = figures()
    for m in models:
        m.close()
    closed = figures()
    report = {
        "device": device, "runs": runs, "warmup": max(warmup, n), "seconds": round(seconds, 1), "start": start, "end": end,
        "closed": closed,
        "models": [{"capture": os.path.basename(c), "runs": int(n), "windows": windows_of(l, windows)}
                   for c, n, l in zip(caps, per, lat)],
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
