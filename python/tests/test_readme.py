"""The README's Python section, run as written (issue 29's copy-paste test): its first shell block
is run with bash from a scratch folder where `build` is this build, and what Python prints must be
the output block that follows it in the README, line for line (numbers within 1e-4: another CPU's
vector width may round the last digits differently). Skips (77) without the Adreno test model
generator the block uses (a build with CAPGRAPH_ADRENO=OFF)."""
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import skip

REPO = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")


def blocks_after(text: str, heading: str) -> list[tuple[str, str]]:
    """The fenced blocks (info string, body) of the section under `heading`."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```(\w*)\n(.*?)^```$", section, flags=re.M | re.S)


def same(got: str, want: str) -> bool:
    if got == want:
        return True
    gn, wn = NUMBER.findall(got), NUMBER.findall(want)
    if NUMBER.sub("#", got) != NUMBER.sub("#", want) or len(gn) != len(wn):
        return False
    return all(abs(float(a) - float(b)) <= 1e-4 for a, b in zip(gn, wn))


def main() -> int:
    build = Path(os.environ["CAPGRAPH_BUILD"])
    if not (build / "targets/adreno/comma_model_gen").is_file():
        skip("no build/targets/adreno/comma_model_gen (a build without Adreno)")
    blocks = blocks_after((REPO / "README.md").read_text(), "## Python")
    script = next(body for info, body in blocks if info == "sh")
    expected = blocks[[b for _, b in blocks].index(script) + 1][1]
    with tempfile.TemporaryDirectory() as scratch:
        (Path(scratch) / "build").symlink_to(build)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "CAPGRAPH_LIBRARY")}
        # The block's `python3` is this test's Python (Debian's, with NumPy), whatever else PATH
        # puts first (a pyenv shim on a developer's machine).
        env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
        run = subprocess.run(["bash", "-e", "-c", script], cwd=scratch, env=env, text=True,
                             capture_output=True, timeout=600)
    print(run.stdout, run.stderr, sep="\n")
    if run.returncode != 0:
        print(f"FAIL: the README's block exited {run.returncode}")
        return 1
    want = expected.splitlines()
    # The README shows what Python prints; before it, `capgraph compile` reports (4 lines).
    lines = run.stdout.splitlines()
    report, got = lines[:-len(want)], lines[-len(want):]
    if len(report) != 4 or not report[0].startswith("compiled "):
        print(f"FAIL: expected the compile report, then the README's output; got {lines[:6]}")
        return 1
    bad = [(g, w) for g, w in zip(got, want) if not same(g, w)]
    if len(got) != len(want) or bad:
        print(f"FAIL: {len(got)} lines printed, the README shows {len(want)}; differing: {bad[:3]}")
        return 1
    print(f"PASS: the README's Python block printed its {len(want)} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
