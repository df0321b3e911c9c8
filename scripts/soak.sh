#!/usr/bin/env bash
# soak.sh [DIVISOR] [DEVICE...]: the long runs of issue 30 (a benchmark, not a test). Two models
# are replayed alternately in one process per device: 100000 replays on the CPU and 2000 on each
# fake device, each count divided by DIVISOR (default 1). For each device it prints resident
# memory, open file descriptors and mappings after the first replay of each model, after the last
# and after both are freed (they must be equal at start and end), and the latency percentiles of
# each model over ten slices of its runs in order (a drift shows as a trend). Flat: the process's
# own memory (RssAnon), descriptors and mappings equal at start and end; RssShmem (fake-nv's device
# memory, first touched as its 4 MiB push buffers fill) is shown beside it. scripts/soak.py is
# the driver (the Python package over the C API; /usr/bin/python3 with NumPy).
#   scripts/soak.sh                 # the issue's counts
#   scripts/soak.sh 10              # a tenth of them
#   scripts/soak.sh 1 cpu fake-nv   # some devices
# Models: the "test" shapes of tests/tools/family_gen's shufflenet_like and mobilenetv3_like (zoo
# models' operators on small frames), or, with CAPGRAPH_SOAK_ZOO=DIR (e.g. ../shared/zoo), that
# zoo's mobilenet_v2 and squeezenet1_1. Devices: cpu; fake-amd, fake-adreno and fake-nv in their
# `:twin` mode (the transport, the packets, the fake's memory and queues as in emulation, each
# kernel run as its host twin: 2000 emulated replays of a zoo-sized model would take hours);
# fake-usb (the emulated USB bridge running our firmware, the AM driver, kernels in the RDNA3
# emulator) replays two small models, the generated CNN of targets/amd and a tiny_chain of 4
# layers of width 64, which share the one GPU's session (the second load joins the first's:
# targets/amd/amd_usb.h). Environment: BUILD (build directory, default build/), CAPGRAPH_SOAK_OUT
# (where the JSON lines go, default a temporary directory that is kept and named).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
divisor=${1:-1}
shift || true
devices=("$@")
((${#devices[@]})) || devices=(cpu fake-amd fake-adreno fake-nv fake-usb)
build=${BUILD:-$repo/build}
capgraph=$build/cli/capgraph
lib=$build/targets/libcapgraph_runtime_fakes.so
for f in "$capgraph" "$lib" "$build/tests/tools/family_gen" "$build/tests/tools/tiny_chain_gen"; do
  [[ -e $f ]] || { echo "soak: $f is missing: build first" >&2; exit 1; }
done
out=${CAPGRAPH_SOAK_OUT:-$(mktemp -d /tmp/capgraph-soak.XXXXXX)}
mkdir -p "$out"
echo "soak: $(date -u +%FT%TZ), load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; results in $out"

if [[ -n ${CAPGRAPH_SOAK_ZOO:-} ]]; then
  models=("$CAPGRAPH_SOAK_ZOO/mobilenet_v2/model.onnx" "$CAPGRAPH_SOAK_ZOO/squeezenet1_1/model.onnx")
else
  "$build/tests/tools/family_gen" "$out/families" test >/dev/null
  models=("$out/families/shufflenet_like/model.onnx" "$out/families/mobilenetv3_like/model.onnx")
fi
mkdir -p "$out/usb" "$out/usb_chain"
"$build/targets/amd/amd_model_gen" "$out/usb" >/dev/null
"$build/tests/tools/tiny_chain_gen" "$out/usb_chain" 4 64 1 >/dev/null

target_of() {
  case $1 in
    cpu) echo cpu ;;
    fake-amd* | fake-usb*) echo amd-gfx1100 ;;
    fake-adreno*) echo adreno-a630 ;;
    fake-nv*) echo nv-sm90 ;;
    *) echo "soak: no target for device $1" >&2; return 1 ;;
  esac
}

for dev in "${devices[@]}"; do
  target=$(target_of "$dev")
  runs=$((2000 / divisor)) spec=$dev srcs=("${models[@]}")
  # Before the start figures: the fakes' device memory is first touched as their rings advance
  # (fake-adreno's settles after ~1500 replays of two models, fake-usb's after ~700; malloc's
  # bytes in use are flat from the start; see soak.py's figures()).
  warmup=$((2000 / divisor))
  case $dev in
    cpu) runs=$((100000 / divisor)) warmup=100 ;;
    fake-usb) srcs=("$out/usb/small_cnn.onnx" "$out/usb_chain/tiny_chain.onnx") ;;
    *:*) ;;
    *) spec=$dev:twin ;;
  esac
  caps=()
  for i in 0 1; do
    caps+=("$out/${dev%%:*}.$i.cap")
    nice -n 10 "$capgraph" compile "${srcs[$i]}" -o "${caps[$i]}" --target "$target" >"$out/compile.log" 2>&1 ||
      { echo "soak: compiling ${srcs[$i]} for $target failed:" >&2; cat "$out/compile.log" >&2; exit 1; }
  done
  echo "soak: $spec: $runs replays of ${caps[*]##*/}, alternately"
  CAPGRAPH_BRIDGE_IMAGE=${CAPGRAPH_BRIDGE_IMAGE:-$build/cli/bridge_fw.img} \
  CAPGRAPH_LIBRARY=$lib PYTHONPATH=$repo/python /usr/bin/python3 "$repo/scripts/soak.py" \
    "$spec" "$runs" "$warmup" 10 "${caps[@]}" | tee "$out/$dev.json"
done

# The summary: flat or not (RssAnon, descriptors, mappings equal at start and end), and the first and
# last slice's median latency per model.
/usr/bin/python3 - "$out" "${devices[@]}" <<'EOF'
import json, sys
out, devices = sys.argv[1], sys.argv[2:]
print(f"{'device':<18}{'runs':>7}{'s':>7}  {'RSS KiB start/end (anon, shmem)':<44}{'heap bytes':<18}{'fds':<8}{'maps':<10}flat  p50 us first->last slice, per model")
bad = 0
for d in devices:
    r = json.load(open(f"{out}/{d}.json"))
    s, e = r["start"], r["end"]
    flat = all(s[k] == e[k] for k in ("anon_kib", "fds", "maps"))
    bad += not flat
    p50 = "; ".join(f"{m['windows'][0]['p50']}->{m['windows'][-1]['p50']}" for m in r["models"])
    rss = f"{s['rss_kib']}/{e['rss_kib']} ({s['anon_kib']}/{e['anon_kib']}, {s['shmem_kib']}/{e['shmem_kib']})"
    heap = f"{s['heap_bytes']}/{e['heap_bytes']}"
    print(f"{r['device']:<18}{r['runs']:>7}{r['seconds']:>7}  {rss:<44}{heap:<18}{s['fds']}/{e['fds']:<5}{s['maps']}/{e['maps']:<6}"
          f"{'yes' if flat else 'NO':<6}{p50}")
sys.exit(1 if bad else 0)
EOF
