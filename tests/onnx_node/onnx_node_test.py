#!/usr/bin/python3
"""ONNX's own backend node tests through `capgraph compile` and `capgraph run` (issue 18).

onnx_node_test.py CAPGRAPH WORK_DIR EXPECTED_REFUSALS [--jobs N] [--only GLOB] [--write-refusals FILE]

Generates the node tests with the installed onnx package (Debian's python3-onnx 1.12 ships the
generators: the same thing `backend-test-tools generate-data` does), converts each test's
`test_data_set_0/{input,output}_N.pb` to .npy with onnx.numpy_helper, then compiles every model for
this machine's CPU, runs it and compares: floats with allclose(rtol 1e-3, atol 1e-5) (NaN where
the reference has NaN), integers and booleans exactly, and the same shape and dtype.

Each test ends as one of
  pass      the outputs match
  refused   compile or run exited non-zero with an error message (a clean refusal); a refusal
            saying a graph input must be known at compile time is first retried with that
            input bound to the test's value (`capgraph compile --bind NAME=FILE.npy`)
  mismatch  it ran but an output differs (or is missing, or has another shape or dtype)
  crash     killed by a signal, timed out, or exited non-zero without saying why
A refusal listed in EXPECTED_REFUSALS (one `test_name  reason` per line) is fine; any other
refusal, every mismatch and every crash fails the suite: no entry of the list lets a test
differ. A listed test that now passes is reported (exit status unchanged) so the list can
shrink. Exit 77 (skip) when the onnx module is missing, saying which package provides it.
"""
import argparse
import concurrent.futures
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import time

try:
    import numpy as np
    # onnx 1.12's generators still use the aliases NumPy 1.24 removed; they meant the builtins.
    for alias, builtin in (("float", float), ("int", int), ("bool", bool), ("object", object)):
        if alias not in np.__dict__:
            setattr(np, alias, builtin)
    import onnx
    from onnx import numpy_helper
except ImportError as e:
    print(f"onnx_node: SKIP: {e} (install Debian's python3-onnx: scripts/setup.sh does)")
    sys.exit(77)

RTOL, ATOL = 1e-3, 1e-5
STEP_TIMEOUT_S = 120


def data_generate(data_dir):
    """Writes DATA/node/<test>/ once per onnx version (a stamp file says which)."""
    stamp = os.path.join(data_dir, "generated-by-onnx-" + onnx.__version__)
    if os.path.exists(stamp):
        return
    shutil.rmtree(data_dir, ignore_errors=True)
    os.makedirs(data_dir)
    from onnx.backend.test.cmd_tools import generate_data
    generate_data(argparse.Namespace(output=data_dir, op_type=None))
    node = os.path.join(data_dir, "node")
    for test in os.listdir(node):
        npy_convert(os.path.join(node, test))
    open(stamp, "w").close()


def npy_convert(test_dir):
    """input_N.pb / output_N.pb → <graph input or output name>.npy in in/ and ref/."""
    # input_N.pb is graph.input[N] (the generator's numbering); only tensors convert: sequences,
    # maps and optionals are left out and the compile refuses such a model.
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    ds = os.path.join(test_dir, "test_data_set_0")
    for kind, values, sub in (("input", model.graph.input, "in"), ("output", model.graph.output, "ref")):
        os.makedirs(os.path.join(test_dir, sub), exist_ok=True)
        for i, v in enumerate(values):
            name = v.name
            pb = os.path.join(ds, f"{kind}_{i}.pb")
            if not os.path.exists(pb) or not v.type.HasField("tensor_type"):
                continue
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            arr = numpy_helper.to_array(t)
            if arr.dtype == object:  # strings: no .npy capgraph reads; the compile refuses them
                continue
            np.save(os.path.join(test_dir, sub, file_name(name) + ".npy"), arr)


def file_name(name):
    """The name `capgraph run` gives an output's file (DESIGN.md: outside [A-Za-z0-9._-] → _)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def message(out):
    lines = [l for l in out.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else ""


def step(cmd):
    """(status, text): status is 'ok', 'refused' or 'crash'."""
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=STEP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "crash", f"timed out after {STEP_TIMEOUT_S} s: {' '.join(cmd)}"
    text = p.stdout + p.stderr
    if p.returncode == 0:
        return "ok", text
    if p.returncode < 0 or p.returncode >= 128:
        return "crash", f"exit status {p.returncode}: {message(text)}"
    if "error" not in text.lower():
        return "crash", f"exit status {p.returncode} without an error message"
    return "refused", message(text)


def bf16_round(x):
    """float32 -> bfloat16 bits, round to nearest even (NaN kept a quiet NaN)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    quiet = ((bits >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(x), quiet, rounded)


def reference_superseded(name, test_dir):
    """{output file: array} where ONNX itself has since replaced this test's expected data, else {}.

    Cast float32 -> bfloat16: onnx 1.12's generator (onnx/backend/test/case/node/cast.py) makes the
    expected output by dropping the low 16 bits (truncation); current ONNX makes it with
    `astype(ml_dtypes.bfloat16)`, round to nearest even (onnx/onnx cast.py at ef9275c), as ONNX
    Runtime and capgraph do. Used only when the data is the truncated kind, so a newer onnx's data
    is compared as it is; the comparison stays exact."""
    if name not in ("test_cast_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16_expanded"):
        return {}
    x = np.load(os.path.join(test_dir, "in", "input.npy"))
    ref = np.load(os.path.join(test_dir, "ref", "output.npy"))
    truncated = (x.view(np.uint32) >> 16).astype(np.uint16)
    if ref.dtype != np.uint16 or not np.array_equal(ref, truncated):
        return {}
    return {"output.npy": bf16_round(x)}


def outputs_compare(ref_dir, out_dir, padded_rows=False, superseded=None):
    """'' when every reference output matches, else what differs. With padded_rows (NonMaxSuppression
    on run-time boxes), an output of more rows than the reference passes when its first rows are the
    reference's and every later element is -1: capgraph gives a static bound on the row count."""
    for f in sorted(os.listdir(ref_dir)):
        ref = (superseded or {}).get(f)
        if ref is None:
            ref = np.load(os.path.join(ref_dir, f))
        path = os.path.join(out_dir, f)
        if not os.path.exists(path):
            return f"output {f} was not written"
        got = np.load(path)
        if got.dtype != ref.dtype:
            return f"output {f}: dtype {got.dtype}, expected {ref.dtype}"
        if padded_rows and got.ndim == 2 and ref.ndim == 2 and got.shape[1] == ref.shape[1] and got.shape[0] > ref.shape[0]:
            if not np.all(got[ref.shape[0]:] == -1):
                return f"output {f}: rows after the first {ref.shape[0]} are not all -1"
            got = got[:ref.shape[0]]
        if got.shape != ref.shape:
            return f"output {f}: shape {got.shape}, expected {ref.shape}"
        if ref.dtype.kind == "f":
            ok = np.isclose(got, ref, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            ok = got == ref
        if not np.all(ok):
            bad = np.argwhere(~ok)
            i = tuple(bad[0])
            return f"output {f}: {len(bad)} of {ref.size} elements differ, first at {list(i)}: {got[i]} vs {ref[i]}"
    return ""


def test_run(capgraph, test_dir, work_dir):
    name = os.path.basename(test_dir)
    out = os.path.join(work_dir, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    cap = os.path.join(out, "model.cap")
    in_dir = os.path.join(test_dir, "in")
    inputs = {f[:-4]: os.path.join(in_dir, f) for f in sorted(os.listdir(in_dir))}
    # A refusal naming a graph input that must be known at compile time (a shape, scale or axes
    # given as an input) is retried with that input bound (`--bind`), as a user would.
    bound = {}
    while True:
        cmd = [capgraph, "compile", os.path.join(test_dir, "model.onnx"), "-o", cap]
        for k, v in bound.items():
            cmd += ["--bind", f"{k}={v}"]
        status, text = step(cmd)
        m = re.search(r"\('([^']*)'\) must be known at compile time", text) if status == "refused" else None
        # A value computed from model inputs is named with them: "depends on the model's inputs ('a', 'b')".
        via = re.search(r"depends on the model's inputs \(('[^)]*')\)", text) if m else None
        names = re.findall(r"'([^']*)'", via.group(1)) if via else [m.group(1)] if m else []
        if not names or any(k not in inputs or k in bound for k in names):
            break
        for k in names:
            bound[k] = inputs[k]
    if status != "ok":
        return name, status, text
    cmd = [capgraph, "run", cap, "--output-dir", os.path.join(out, "out")]
    for k, v in inputs.items():
        if k not in bound:
            cmd += ["--input", f"{k}={v}"]
    status, text = step(cmd)
    if status != "ok":
        return name, status, text
    diff = outputs_compare(os.path.join(test_dir, "ref"), os.path.join(out, "out"), name.startswith("test_nonmaxsuppression"),
                           reference_superseded(name, test_dir))
    shutil.rmtree(out, ignore_errors=True)
    return (name, "mismatch", diff) if diff else (name, "pass", "")


def refusals_read(path):
    expected = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 1)
            if len(parts) != 2:
                sys.exit(f"onnx_node: error: {path}:{n}: expected 'test_name  reason', got '{line}'")
            if parts[0] in expected:
                sys.exit(f"onnx_node: error: {path}:{n}: {parts[0]} is listed twice")
            expected[parts[0]] = parts[1]
    return expected


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("capgraph")
    ap.add_argument("work_dir")
    ap.add_argument("expected_refusals")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="*", help="run only the tests whose name matches this glob")
    ap.add_argument("--write-refusals", help="write every refusal seen, with capgraph's message, to this file")
    a = ap.parse_args()
    t0 = time.time()
    data_dir = os.path.join(a.work_dir, "data")
    data_generate(data_dir)
    expected = refusals_read(a.expected_refusals)
    node = os.path.join(data_dir, "node")
    tests = sorted(t for t in os.listdir(node) if fnmatch.fnmatch(t, a.only))
    unknown = sorted(set(expected) - set(os.listdir(node)))
    run_dir = os.path.join(a.work_dir, "run")
    results = []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for r in ex.map(lambda t: test_run(a.capgraph, os.path.join(node, t), run_dir), tests):
            results.append(r)
    counts = {"pass": 0, "refused": 0, "mismatch": 0, "crash": 0}
    failures, now_passing = [], []
    for name, status, text in results:
        counts[status] += 1
        if status == "pass" and name in expected:
            now_passing.append(name)
        elif status == "refused" and name not in expected:
            failures.append(f"UNEXPECTED REFUSAL {name}: {text}")
        elif status in ("mismatch", "crash"):
            failures.append(f"{status.upper()} {name}: {text}")
    if a.write_refusals:
        with open(a.write_refusals, "w") as f:
            for name, status, text in results:
                if status in ("refused", "mismatch"):
                    f.write(f"{name}  {text}\n")
    for line in failures:
        print(line)
    for name in now_passing:
        print(f"NOW PASSING (remove it from {os.path.basename(a.expected_refusals)}): {name}")
    for name in unknown:
        print(f"NOTE: {name} is listed in {os.path.basename(a.expected_refusals)} but onnx {onnx.__version__} has no such test")
    print(f"onnx_node: {len(tests)} tests (onnx {onnx.__version__}): {counts['pass']} pass, {counts['refused']} refused "
          f"({len([r for r in results if r[1] == 'refused' and r[0] in expected])} expected), {counts['mismatch']} mismatch, "
          f"{counts['crash']} crash; {len(now_passing)} listed refusals now pass; {time.time() - t0:.0f} s with {a.jobs} jobs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
