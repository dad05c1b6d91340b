#!/usr/bin/env bash
# bench/feed_check.sh OUTDIR: the training run fed by each decode path, side by side, on a GPU
# host with the tree already built in $BUILD (default: build). ResNet-50 BF16 batch 256, 300
# timed steps, 16 CPU workers or nvJPEG reader threads, each run under bench/thread_sampler.py
# from the line "warming up" on:
#   cpu         the CPU decode workers                                                  ~40 s
#   gpu         nvJPEG alone                                                            ~45 s
#   gpu-block   nvJPEG alone, GPUBASE_CUDA_WAIT=block (a CUDA wait that spins shows
#               as system and user time under auto, as sleep under block)             ~45 s
#   gpu-driver  nvJPEG alone, GPUBASE_NVJPEG_MEMORY=driver (its buffers freed to the driver,
#               as before the pooled default)                                          ~45 s
#   gpu-pipelined  nvJPEG alone, GPUBASE_NVJPEG_FLAGS=none (the hardware decoder pipelines
#               its batches, nvJPEG's default: its call then waits for the device)       ~45 s
#   both        the CPU/GPU split, its share balanced from both paths' rates          ~50 s
# ~25 s of each run is the model's build. Then `gpubase loader --decode gpu --workers 1` (one CPU
# point, 5 s) for the same path
# with the GPU otherwise idle (~15 s). The set: SET=DIR, else 2,048 synthetic ImageNet-like JPEGs
# made in a scratch folder (~3 s; the baseline's own set, 100 classes). RUNS="cpu gpu" runs only
# those (default: cpu gpu gpu-block both). Prints one row per run:
# images/s and x the cpu run, the step and its GPU work, the data wait, the launching thread's
# CPU (its own clock), nvJPEG's host stage and GPU span per batch under training, and the main
# thread's state from the sampler. JSON and logs under OUTDIR (no dataset: it stays small enough
# to bring back). Changes no clock, power, persistence or MIG setting.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$(realpath -m "${1:?usage: bench/feed_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
STEPS=${STEPS:-300}
export NCCL_NVLS_ENABLE=0
[[ -x $GPUBASE ]] || { echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1; }
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
if [[ -z ${SET:-} ]]; then
  SET=$SCRATCH/synth-2048
  "$GPUBASE" dataset synth --out "$SET" --images 2048 --classes 100 -q || exit 1
fi
failed=0
# run NAME WAIT DECODE [MEMORY]: one training run under the thread sampler.
run() {
  local name=$1 wait=$2 decode=$3 memory=${4:-pooled} flags=${5:-} rc=0
  echo "== $name ($(date +%T))"
  GPUBASE_CUDA_WAIT=$wait GPUBASE_NVJPEG_MEMORY=$memory GPUBASE_NVJPEG_FLAGS=$flags timeout -k 10 180 python3 "$ROOT/bench/thread_sampler.py" \
    --mark "warming up" --json "$OUTDIR/$name-threads.json" -- \
    "$GPUBASE" train --data "$SET" --model resnet50 --precision bf16 --workers 16 \
    --steps "$STEPS" --decode "$decode" --json -o "$OUTDIR/$name.json" \
    >"$OUTDIR/$name.log" 2>&1 || rc=$?
  [[ $rc -eq 0 ]] || { echo "   rc=$rc"; tail -5 "$OUTDIR/$name.log"; failed=1; }
}
for name in ${RUNS:-cpu gpu gpu-block both}; do
  case $name in
    cpu) run cpu auto cpu ;;
    gpu) run gpu auto gpu ;;
    gpu-block) run gpu-block block gpu ;;
    gpu-driver) run gpu-driver auto gpu driver ;;
    gpu-pipelined) run gpu-pipelined auto gpu pooled none ;;
    both) run both auto both ;;
    *) echo "RUNS: unknown run $name (cpu, gpu, gpu-block, gpu-driver, gpu-pipelined, both)"; exit 2 ;;
  esac
done
echo "== loader, nvJPEG alone with the GPU idle, then beside a busy GPU ($(date +%T))"
timeout -k 10 120 "$GPUBASE" loader --data "$SET" --decode gpu --workers 1 --gpu-workers 16 --seconds 5 \
  --json -o "$OUTDIR/loader-gpu.json" >"$OUTDIR/loader-gpu.log" 2>&1 || { echo "   loader failed"; failed=1; }

python3 - "$OUTDIR" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None
def figures(run):
    got = {}
    for r in (run or {}).get("results", []):
        k = r.get("key", "")
        if not k.startswith("train."):
            continue
        field = k.rsplit(".", 1)[-1]
        if k.endswith(".data_wait_pct"):
            field = "data_wait_pct"
        got[field] = r.get("value")
        for p in r.get("params", []):
            if "value" in p and isinstance(p["value"], (int, float)):
                got.setdefault(p["name"], p["value"])
    return got
def main_state(threads):
    rows = (threads or {}).get("main_by_second", [])[2:-1]  # leave out the first and last second
    if not rows:
        return "-"
    user = sum(r["user_pct"] for r in rows) / len(rows)
    sys_ = sum(r["sys_pct"] for r in rows) / len(rows)
    states = {}
    for r in rows:
        for k, v in r["states"].items():
            states[k.split(" ")[0]] = states.get(k.split(" ")[0], 0) + v / len(rows)
    top = max(states, key=states.get)
    return f"user {user:.0f} sys {sys_:.0f}, {top} {100 * states[top]:.0f} %"
def num(v, fmt="{:,.1f}"):
    return "-" if v is None else fmt.format(v)
base = figures(load("cpu.json")).get("images_per_s")
print("\nrun        images/s   x cpu  step ms (GPU)   data wait  launch thread  nvJPEG host / GPU ms  main thread (sampler)")
for name in ("cpu", "gpu", "gpu-block", "gpu-driver", "gpu-pipelined", "both"):
    f = figures(load(f"{name}.json"))
    ips = f.get("images_per_s")
    ratio = ips / base if ips and base else None
    print(f"{name:10s} {num(ips, '{:>8,.0f}')}  {num(ratio, '{:5.2f}')}  "
          f"{num(f.get('step_ms'), '{:5.1f}')} ({num(f.get('gpu_step_ms'), '{:4.1f}')})  "
          f"{num(f.get('data_wait_pct'), '{:8.2f}')} %  {num(f.get('launch_thread_cpu_pct'), '{:9.1f}')} %  "
          f"{num(f.get('decode_host_ms_per_batch'), '{:8.2f}')} / {num(f.get('decode_gpu_ms_per_batch'), '{:5.2f}')}  "
          f"   {main_state(load(f'{name}-threads.json'))}")
loader = load("loader-gpu.json")
for r in (loader or {}).get("results", []):
    if r.get("key") == "loader.gpu_decode.images_per_s":
        p = {q["name"]: q.get("value", q.get("text")) for q in r.get("params", [])}
        print(f"\nloader, nvJPEG alone, GPU idle: {r.get('value') or 0:,.0f} images/s, host stage "
              f"{p.get('decode_host_ms_per_batch') or 0:.2f} ms, GPU span {p.get('decode_ms_per_batch') or 0:.2f} ms a batch")
    if r.get("key") == "loader.gpu_decode.beside_step.data_wait.pct":
        p = {q["name"]: q.get("value", q.get("text")) for q in r.get("params", [])}
        print(f"loader, nvJPEG beside a busy GPU ({p.get('step_ms') or 0:.1f}-ms one-block steps): GPU waited "
              f"{r.get('value') or 0:.1f} %, host stage {p.get('decode_host_ms_per_batch') or 0:.2f} ms a batch: {p.get('decode')}")
PY
exit $failed
