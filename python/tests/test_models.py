"""Every model of the shared zoo (../shared/zoo beside the repository, when present) compiled by
`capgraph compile` and run through the package, against its committed ONNX Runtime output with the
conformance tolerance (tests/models/models_conformance.sh zoo does the same through the CLI).
Skips (77) without a zoo. Also runs each on 2 threads and through run_into and bound arrays."""
import json
import sys
from pathlib import Path

import numpy as np

import capgraph
from harness import close_enough, compile_onnx, skip

ZOO = Path(__file__).resolve().parents[3] / "shared" / "zoo"


def main() -> int:
    if not ZOO.is_dir():
        skip(f"no model zoo at {ZOO} (it is optional)")
    failures = 0
    for d in sorted(p for p in ZOO.iterdir() if (p / "meta.json").is_file()):
        meta = json.loads((d / "meta.json").read_text())
        shapes = [a for i in meta["inputs"] for a in ("--input-shape", f"{i['name']}={'x'.join(map(str, i['dims']))}")]
        cap = compile_onnx(d / meta["model"], d.name, *shapes)
        feeds = {i["name"]: np.load(d / i["file"]) for i in meta["inputs"]}
        refs = {o["name"]: np.load(d / o["file"]) for o in meta["outputs"]}
        with capgraph.load(cap, threads=2) as m:
            got = m.run(feeds)
            into = {o.name: np.empty(o.shape, o.dtype) for o in m.outputs}
            m.run_into(into, feeds)
            bound = {}
            for t in m.inputs:
                a = capgraph.aligned_empty(t.shape, t.dtype)
                a[...] = feeds[t.name]
                m.bind_input(t.name, a)
            for t in m.outputs:
                bound[t.name] = capgraph.aligned_empty(t.shape, t.dtype)
                m.bind_output(t.name, bound[t.name])
            m.run()
        ok = True
        for name, ref in refs.items():
            for how, result in (("run", got), ("run_into", into), ("bound", bound)):
                good, diff = close_enough(result[name], ref)
                print(f"  {d.name} {name} ({how}): max |a-b| {diff:.3g} (max |ref| {np.abs(ref).max():.3g})")
                ok &= good and result[name].shape == ref.shape
        print(f"{'PASS' if ok else 'FAIL'} {d.name}")
        failures += not ok
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
