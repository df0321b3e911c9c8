#!/usr/bin/env bash
# profile_test.sh BUILD_DIR: `capgraph profile` on a real capture (PaddleOCR cls) prints one row
# per step of the capture, and its --trace file is valid JSON with one complete event per step,
# laid end to end.
set -uo pipefail
build=$1
assets=${CAPGRAPH_TEST_DEPS:-$build/deps}/ocr-models/package/assets
work=$(mktemp -d /tmp/capgraph-profile.XXXXXX)
trap 'rm -rf "$work"' EXIT
capgraph=$build/cli/capgraph
"$capgraph" compile "$assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" -o "$work/cls.cap" --input-shape x=1x3x48x192 >/dev/null || exit 1
out=$("$capgraph" profile "$work/cls.cap" --runs 3 --threads 2 --trace "$work/trace.json") || { echo "FAIL: profile failed"; exit 1; }
echo "$out" | head -5
steps=$("$capgraph" inspect "$work/cls.cap" --json | node -e "const o=JSON.parse(require('fs').readFileSync(0,'utf8')); console.log(o.steps.length)")
rows=$(grep -cE '^  [0-9]+ ' <<<"$out")
fail=0
[[ $rows -eq $steps ]] || { echo "FAIL: $rows rows for $steps steps"; fail=1; }
node -e "
  const t = JSON.parse(require('fs').readFileSync('$work/trace.json', 'utf8'));
  const ev = t.traceEvents;
  if (ev.length !== $steps) throw new Error('events ' + ev.length + ' != steps $steps');
  for (let i = 0; i < ev.length; i++) {
    if (ev[i].ph !== 'X' || !(ev[i].dur >= 0)) throw new Error('event ' + i + ' is not a complete event');
    if (i && Math.abs(ev[i].ts - (ev[i-1].ts + ev[i-1].dur)) > 1e-3) throw new Error('event ' + i + ' does not follow the previous one');
  }
  if (!(ev.reduce((s, e) => s + e.dur, 0) > 0)) throw new Error('no time recorded');
" || { echo "FAIL: the trace is not what it should be"; fail=1; }
"$capgraph" profile "$work/cls.cap" --runs 0 >/dev/null 2>&1 && { echo "FAIL: --runs 0 accepted"; fail=1; }
((fail == 0)) && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $fail
