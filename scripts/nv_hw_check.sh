#!/usr/bin/env bash
# What to run on a machine with an NVIDIA GPU (driver 580, CUDA toolkit, PyTorch; no network, may
# lack LLVM 19). Two steps, so the compiler need not run there:
#   scripts/nv_hw_check.sh prepare OUT [ZOO]   here (LLVM 19 + ptxas): builds, compiles every zoo
#                                               model for nv-sm90 (NV_TARGET=nv-sm86 etc. for another
#                                               GPU) into OUT/<model>.cap, copies the zoo's inputs
#                                               and references beside them
#   scripts/nv_hw_check.sh run OUT              on the GPU machine: builds the runtime alone
#                                               (-DCAPGRAPH_COMPILER=OFF), prints the machine, runs
#                                               `capgraph-run --device nv` on each capture against
#                                               the references (numpy, same tolerance as
#                                               tests/tools/npy_compare), times 200 replays each and
#                                               the same torchvision models in PyTorch (eager with
#                                               cuDNN, and CUDA graphs), and prints one table
# Exit 1 if any model fails to load, replay or match. Sources for what to look at first on the
# machine: ../shared/research/nv_plan.md §7.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-}; out=${2:-}
[[ -n $mode && -n $out ]] || { sed -n 2,16p "$0"; exit 2; }
target=${NV_TARGET:-nv-sm90}

case $mode in
  prepare)
    zoo=${3:-$repo/../shared/zoo}
    build=${BUILD:-$repo/build}
    [[ -x $build/cli/capgraph ]] || cmake --build "$build" -j2 --target capgraph || exit 1
    mkdir -p "$out"
    for dir in "$zoo"/*/; do
      name=$(basename "$dir")
      shapes=$(node -e "const m=require('$dir/meta.json'); console.log(m.inputs.map(i=>'--input-shape '+i.name+'='+i.dims.join('x')).join(' '))")
      echo "compile $name for $target"
      "$build/cli/capgraph" compile "$dir/model.onnx" -o "$out/$name.cap" --target "$target" $shapes || exit 1
      mkdir -p "$out/$name"
      cp "$dir"/meta.json "$dir"/*.npy "$out/$name/"
    done
    cp "$0" "$out/"
    echo "now copy $out and this tree to the GPU machine and run: scripts/nv_hw_check.sh run $out"
    ;;
  run)
    echo "== machine"; date -u
    cat /proc/driver/nvidia/version 2>/dev/null | head -2
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
    ls -l /dev/nvidia* 2>&1 | head -8
    build=${BUILD:-$repo/build-hw}
    echo "== build (runtime only)"
    cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAPGRAPH_COMPILER=OFF > "$build.log" 2>&1 &&
      cmake --build "$build" -j"$(nproc)" --target capgraph-run >> "$build.log" 2>&1 || { tail -20 "$build.log"; exit 1; }
    run=$build/runtime/capgraph-run
    echo "== devices"
    "$run" "$(ls "$out"/*.cap | head -1)" --device nv --runs 1 --output-dir /tmp/nv_hw_probe 2>&1 | tail -3
    failures=0
    rows=""
    for cap in "$out"/*.cap; do
      name=$(basename "$cap" .cap); d=$out/$name
      ins=$(python3 -c "import json;m=json.load(open('$d/meta.json'));print(' '.join('--input %s=$d/%s'%(i['name'],i['file']) for i in m['inputs']))")
      rm -rf "/tmp/nv_hw/$name"; mkdir -p "/tmp/nv_hw/$name"
      if ! log=$("$run" "$cap" --device nv $ins --runs 200 --output-dir "/tmp/nv_hw/$name" 2>&1); then
        echo "FAIL $name: $log" | tail -3; failures=$((failures+1)); continue; fi
      median=$(sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' <<< "$log")
      if python3 - "$d" "/tmp/nv_hw/$name" <<'PY'
import json, os, sys, numpy as np
d, o = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(d, 'meta.json')))
ok = True
for out in m['outputs']:
    name = ''.join(c if c.isalnum() or c in '._-' else '_' for c in out['name'])
    a, r = np.load(os.path.join(o, name + '.npy')), np.load(os.path.join(d, out['file']))
    diff, ref = float(np.abs(a.astype(np.float64) - r).max()), float(np.abs(r).max())
    good = a.shape == r.shape and diff <= 1e-3 * ref + 1e-5
    ok &= good
    print('  %s %s: max |a-b| = %g, max |ref| = %g' % ('MATCH' if good else 'DIFFER', name, diff, ref))
sys.exit(0 if ok else 1)
PY
      then echo "PASS $name (median ${median} ms over 200 replays)"; rows+="$name $median"$'\n'
      else echo "FAIL $name: outputs differ from the reference"; failures=$((failures+1)); fi
    done
    echo "== PyTorch on the same GPU (fp32, batch 1, TF32 off; eager with cuDNN, and CUDA graphs)"
    torch_rows=$(python3 - <<'PY' 2>&1
import time, torch, torchvision
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
def median(f, n=200):
    for _ in range(20): f()
    torch.cuda.synchronize(); ts = []
    for _ in range(n):
        t = time.perf_counter(); f(); torch.cuda.synchronize(); ts.append(1e3 * (time.perf_counter() - t))
    return sorted(ts)[n // 2]
for name in ['resnet18', 'mobilenet_v2', 'efficientnet_b0']:
    m = getattr(torchvision.models, name)().cuda().eval()
    x = torch.randn(1, 3, 224, 224, device='cuda')
    with torch.no_grad():
        eager = median(lambda: m(x))
        s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3): m(x)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g): y = m(x)
        graph = median(lambda: g.replay())
    print(name, '%.4f' % eager, '%.4f' % graph)
PY
)
    echo "$torch_rows"
    echo "== table (median ms per inference; comma-shaped model: capgraph only, no PyTorch definition here)"
    printf "%-32s %12s %14s %16s\n" model capgraph torch_eager torch_cudagraph
    while read -r name ms; do
      [[ -z $name ]] && continue
      t=$(grep "^$name " <<< "$torch_rows" || true)
      printf "%-32s %12s %14s %16s\n" "$name" "$ms" "$(awk '{print $2}' <<< "$t")" "$(awk '{print $3}' <<< "$t")"
    done <<< "$rows"
    echo "$failures failed"
    ((failures == 0))
    ;;
  *) sed -n 2,16p "$0"; exit 2 ;;
esac
