#!/bin/sh
# replay_overhead_test.sh BIN_DIR CAPGRAPH SANITIZE
# The measuring tools on the 200-tiny-kernel model (tiny_chain_gen), without judging speed (speed is
# for scripts/bench.sh, not for a test on a busy machine): the capture has one launch per layer,
# and every way of replaying it (1 and 2 threads; made for 1 thread and re-split, or made for 2;
# kernels of one unit of work, or split between threads) gives the expected output, computed by the
# generator on its own. A process replaying it stays within weights + arena + 16 MiB (skipped
# under sanitizers, whose shadow memory is counted too).
set -eu
bin=$1 capgraph=$2 sanitize=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/capgraph-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { sed -n "s/.*\"$2\": \([0-9.-]*\).*/\1/p" "$1"; }

# model DIR ROWS: generate, and compile for 1 and for 2 threads.
model() {
  "$bin/tiny_chain_gen" "$work/$1" 200 16 "$2" >/dev/null
  for t in 1 2; do
    "$capgraph" compile "$work/$1/tiny_chain.onnx" -o "$work/$1/t$t.cap" --threads $t >/dev/null ||
      fail "$1: compile for $t threads"
  done
}
model one_unit 1   # each launch is one unit of work
model split 8      # each launch has 2 units: a thread each when split

for m in one_unit split; do
  for cap in t1 t2; do
    for threads in 1 2; do
      name="$m/$cap.cap on $threads thread(s)"
      out=$work/$m/out_${cap}_$threads
      mkdir -p "$out"
      "$bin/replay_overhead" "$work/$m/$cap.cap" --threads $threads --runs 20 --rounds 1 \
        --input "x=$work/$m/input.npy" --output-dir "$out" >"$out/report.json" || fail "$name: replay_overhead"
      launches=$(field "$out/report.json" launches)
      [ "${launches:-0}" -ge 190 ] || fail "$name: $launches launches, expected about 200 (did layers fuse?)"
      for f in replay_us kernels_us overhead_us; do
        [ -n "$(field "$out/report.json" $f)" ] || fail "$name: no $f in $(cat "$out/report.json")"
      done
      "$bin/npy_compare" "$out/y.npy" "$work/$m/expected.npy" >"$out/compare.txt" ||
        fail "$name: wrong output: $(cat "$out/compare.txt")"
      echo "ok: $name: $launches launches, output matches; $(cat "$out/report.json")"
    done
  done
done

if [ "$sanitize" = 1 ] || [ "$sanitize" = ON ] || [ "$sanitize" = TRUE ]; then
  echo "skipped: peak RSS under sanitizers (their shadow memory is resident too)"
  exit 0
fi
for threads in 1 2; do
  "$bin/replay_rss" "$work/one_unit/t1.cap" --threads $threads --runs 50 \
    --input "x=$work/one_unit/input.npy" >"$work/rss.json" || fail "replay_rss"
  peak=$(field "$work/rss.json" peak_rss_kib)
  budget=$(field "$work/rss.json" budget_kib)
  [ -n "$peak" ] && [ -n "$budget" ] || fail "replay_rss printed $(cat "$work/rss.json")"
  [ "$peak" -gt 0 ] && [ "$peak" -le "$budget" ] ||
    fail "peak RSS $peak KiB on $threads thread(s) is over the budget of $budget KiB (weights + arena + 16 MiB)"
  echo "ok: peak RSS $peak KiB <= $budget KiB on $threads thread(s)"
done
