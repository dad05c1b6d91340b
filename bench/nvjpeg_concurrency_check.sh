#!/usr/bin/env bash
# bench/nvjpeg_concurrency_check.sh OUTDIR: the nvJPEG input pipeline under many reader workers,
# on a GPU host with the tree already built in $BUILD (default: build). About 90 s:
#   1. the nvJPEG paths' GPU tests (ctest -L gpu -R 'Nvjpeg|LoaderSplitGpu'; among them the CPU
#      header verdict against nvJPEG's own parse and nvjpegDecodeBatchedSupported)       ~25 s
#   2. three trials of gpubase loader --decode both --workers 16 --gpu-workers 16 --seconds 5:
#      each measures the GPU path alone with 16 reader threads and then the CPU/GPU split (15
#      workers, one core left to the consumer), 5 s each; every run must end by itself
#      (limit 45 s)                                                                    3 x ~20 s
#   3. Ctrl-C 4 s into a --decode both run: the process must end within 10 s of it        ~6 s
# A run that does not end is reported HUNG (ended with SIGKILL). Prints the GPU path's and the
# split's images/s per trial and their medians against the GPU path's 22,054 images/s measured
# before the nvJPEG handle lock (quoted: bench/NOTES.md b1, same host, 5-s trials) and
# 16,155-16,824 with the lock. Logs and JSON under OUTDIR. Changes no clock, power,
# persistence or MIG setting.
set -u
OUTDIR=$(realpath -m "${1:?usage: bench/nvjpeg_concurrency_check.sh OUTDIR}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUTDIR"
[ -x "$GPUBASE" ] || { echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1; }
fails=0
t_start=$SECONDS
# part NAME LIMIT CMD...: runs CMD with SIGINT at LIMIT s and SIGKILL 10 s later.
part() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1 || rc=$?
  local verdict=ok
  # 1: a figure below its target (a finding, not a broken run)
  if [ "$rc" = 137 ]; then verdict=HUNG; elif [ "$rc" != 0 ] && [ "$rc" != 1 ]; then verdict="FAILED rc=$rc"; fi
  [ "$verdict" = ok ] || fails=$((fails + 1))
  printf '%-10s %-14s %4d s\n' "$name" "$verdict" $((SECONDS - t0))
}
part gpu-test 60 ctest --test-dir "$BUILD" -L gpu -R 'Nvjpeg|LoaderSplitGpu' --output-on-failure --timeout 50
grep -E '^(4:|gray)' "$OUTDIR/gpu-test.log" | sed 's/^/  /' || true
for i in 1 2 3; do
  part "trial-$i" 45 "$GPUBASE" loader --decode both --workers 16 --gpu-workers 16 --seconds 5 \
    --json -o "$OUTDIR/trial-$i.json" --no-color
done
# Ctrl-C: sent at 4 s, the run must end (any status but a kill) within 10 s.
t0=$SECONDS
rc=0
timeout --signal=INT --kill-after=10 4 "$GPUBASE" loader --decode both --workers 15 --seconds 30 \
  >"$OUTDIR/ctrl-c.log" 2>&1 || rc=$?
if [ "$rc" = 137 ]; then
  echo "ctrl-c     HUNG           $((SECONDS - t0)) s  (SIGINT did not end it)"; fails=$((fails + 1))
else
  echo "ctrl-c     ok (rc=$rc)     $((SECONDS - t0)) s"
fi
python3 - "$OUTDIR" "$fails" <<'PY' || echo "summary failed (python3?)"
import json, os, statistics, sys
out, fails = sys.argv[1], int(sys.argv[2])
BEFORE_LOCK = 22054  # quoted: bench/NOTES.md b1 (GPU path, same H200 host, before the lock)
rows = {"loader.gpu_decode.images_per_s": [], "loader.split.images_per_s": [],
        "loader.cpu.w16.images_per_s": []}
for i in (1, 2, 3):
    try:
        run = json.load(open(os.path.join(out, f"trial-{i}.json")))
    except Exception as e:
        print(f"trial {i}: no JSON ({e})")
        continue
    got = {r["key"]: r for r in run.get("results", []) if r.get("key") in rows}
    parts = []
    for k in rows:
        r = got.get(k)
        v = r.get("value") if r else None
        if v is not None:
            rows[k].append(v)
        parts.append(f"{k.split('.')[1]} {v:,.0f}" if v is not None else
                     f"{k.split('.')[1]} {(r or {}).get('status', 'missing')} {(r or {}).get('reason', '')[:60]}")
    print(f"trial {i}: " + ", ".join(parts) + " images/s")
summary = {"failures": fails}
for k, v in rows.items():
    if v:
        summary[k] = {"median": statistics.median(v), "trials": v}
g = rows["loader.gpu_decode.images_per_s"]
if g:
    m = statistics.median(g)
    print(f"GPU path, 16 readers: median {m:,.0f} images/s = {m / BEFORE_LOCK:.2f}x the "
          f"{BEFORE_LOCK:,} before the lock (quoted, NOTES b1); with the lock 16,155-16,824")
s = rows["loader.split.images_per_s"]
if s:
    print(f"split (15 workers): median {statistics.median(s):,.0f} images/s "
          f"(with the lock: 7,067-7,211 at 2-s trials, NOTES b1)")
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=1)
PY
echo "failures: $fails in $((SECONDS - t_start)) s (logs in $OUTDIR)"
[ "$fails" = 0 ]
