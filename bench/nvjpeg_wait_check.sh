#!/usr/bin/env bash
# bench/nvjpeg_wait_check.sh OUTDIR: which nvJPEG settings make its batched call wait for the
# device, on a GPU host with the tree already built in $BUILD (default: build). Each variant is
# one `gpubase loader --decode gpu` run (16 reader threads, 3 s, ~12 s with start-up): the nvJPEG
# path alone, then beside a busy GPU (stand-in steps, one block spinning on another stream, 3x
# its own batch time, the SMs left free). A decode that overlaps the stand-in step leaves the
# GPU waiting under 10 %; one whose call waits for the device takes turns with it (~25 %).
# Variants (nvJPEG's memory, nvjpegCreateEx's flags, backend):
#   default             gpubase's block caches, NVJPEG_FLAGS_HW_DECODE_NO_PIPELINE, hardware
#   pipelined           the block caches, no flags (the hardware decoder pipelines its batches)
#   driver              nvJPEG's own cudaMalloc / cudaFree, no flags: nvJPEG's defaults
#   memory_pools        driver memory, NVJPEG_FLAGS_ENABLE_MEMORY_POOLS (stream-ordered) only
#   both_flags          driver memory, both flags
#   gpu_hybrid          the default's memory and flags, the GPU_HYBRID backend (CUDA Huffman
#                       decode, no engines)
# Then, for every variant whose decode overlapped, 200 steps of `gpubase train --data --decode
# gpu` (ResNet-50 BF16 b256, ~40 s each): does the nvJPEG path then feed the model's rate? The
# set: SET=DIR, else 2,048 synthetic JPEGs in a scratch folder (~3 s). VARIANTS="a b" runs only
# those. Prints one row per variant; JSON and logs under OUTDIR. Changes no clock, power,
# persistence or MIG setting.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$(realpath -m "${1:?usage: bench/nvjpeg_wait_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0
[[ -x $GPUBASE ]] || { echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1; }
mkdir -p "$OUTDIR"
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
if [[ -z ${SET:-} ]]; then
  SET=$SCRATCH/synth-2048
  "$GPUBASE" dataset synth --out "$SET" --images 2048 --classes 100 -q || exit 1
fi
# settings NAME: "MEMORY FLAGS BACKEND" of a variant.
settings() {
  case $1 in
    default) echo "pooled - auto" ;;
    pipelined) echo "pooled none auto" ;;
    driver) echo "driver none auto" ;;
    memory_pools) echo "driver memory_pools auto" ;;
    both_flags) echo "driver no_pipeline,memory_pools auto" ;;
    gpu_hybrid) echo "pooled - gpu_hybrid" ;;
    *) return 1 ;;
  esac
}
failed=0
overlapped=()
for name in ${VARIANTS:-default pipelined driver memory_pools both_flags gpu_hybrid}; do
  read -r memory flags backend <<<"$(settings "$name")" || { echo "VARIANTS: unknown $name"; exit 2; }
  [[ $flags == - ]] && flags=
  echo "== $name ($(date +%T))"
  if ! GPUBASE_NVJPEG_MEMORY=$memory GPUBASE_NVJPEG_FLAGS=$flags timeout -k 10 90 "$GPUBASE" loader \
      --data "$SET" --decode gpu --workers 1 --gpu-workers 16 --seconds 3 --nvjpeg-backend "$backend" \
      --json -o "$OUTDIR/loader-$name.json" >"$OUTDIR/loader-$name.log" 2>&1; then
    echo "   loader failed"; tail -4 "$OUTDIR/loader-$name.log"; failed=1; continue
  fi
  grep -h "images/s (\|beside a busy GPU" "$OUTDIR/loader-$name.log" | sed 's/^/  /'
  grep -q "overlaps the step" "$OUTDIR/loader-$name.log" && overlapped+=("$name")
done
for name in "${overlapped[@]}"; do
  read -r memory flags backend <<<"$(settings "$name")"
  [[ $flags == - ]] && flags=
  [[ $backend == auto ]] || continue  # train picks the backend itself (auto)
  echo "== train, $name ($(date +%T))"
  GPUBASE_NVJPEG_MEMORY=$memory GPUBASE_NVJPEG_FLAGS=$flags timeout -k 10 150 "$GPUBASE" train \
    --data "$SET" --model resnet50 --precision bf16 --workers 16 --steps 200 --decode gpu \
    --json -o "$OUTDIR/train-$name.json" >"$OUTDIR/train-$name.log" 2>&1 || { echo "   train failed"; failed=1; }
  grep -h "images/s (" "$OUTDIR/train-$name.log" | tail -1 | sed 's/^/  /'
done

python3 - "$OUTDIR" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
def params(r):
    return {p["name"]: p.get("value", p.get("text")) for p in r.get("params", [])}
print("\nvariant        images/s alone  call ms alone  beside: GPU waited  call ms  decode")
for path in sorted(glob.glob(os.path.join(out, "loader-*.json"))):
    name = os.path.basename(path)[len("loader-"):-len(".json")]
    with open(path) as f:
        doc = json.load(f)
    alone = beside = None
    for r in doc.get("results", []):
        if r.get("key") == "loader.gpu_decode.images_per_s":
            alone = r
        if r.get("key") == "loader.gpu_decode.beside_step.data_wait.pct":
            beside = r
    if not alone or alone.get("value") is None:
        print(f"{name:14s} -")
        continue
    pa, pb = params(alone), params(beside or {})
    print(f"{name:14s} {alone['value']:>14,.0f}  {pa.get('decode_host_ms_per_batch') or 0:13.2f}  "
          f"{(beside or {}).get('value') or 0:17.1f} %  {pb.get('decode_host_ms_per_batch') or 0:7.2f}  {pb.get('decode', '-')}")
for path in sorted(glob.glob(os.path.join(out, "train-*.json"))):
    name = os.path.basename(path)[len("train-"):-len(".json")]
    with open(path) as f:
        doc = json.load(f)
    got = {}
    for r in doc.get("results", []):
        k = r.get("key", "")
        if k.startswith("train.") and k.endswith(".images_per_s"):
            got["images_per_s"] = r.get("value")
            got.update(params(r))
        if k.startswith("train.") and k.endswith(".data_wait_pct"):
            got["wait"] = r.get("value")
    print(f"train {name}: {got.get('images_per_s') or 0:,.0f} images/s, data wait {got.get('wait') or 0:.1f} %, "
          f"nvJPEG call {got.get('decode_host_ms_per_batch') or 0:.2f} ms a batch")
PY
exit $failed
