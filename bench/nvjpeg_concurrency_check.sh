#!/usr/bin/env bash
# bench/nvjpeg_concurrency_check.sh OUTDIR: the nvJPEG input pipeline under many reader workers,
# on a GPU host with the tree already built in $BUILD (default: build). About 60-90 s.
#   1. the nvJPEG paths' GPU tests (ctest -L gpu -R 'Nvjpeg|LoaderSplitGpu')
#   2. gpubase loader --decode gpu  --workers 16, three times (each must finish; limit 40 s)
#   3. gpubase loader --decode both --workers 15, three times (same)
#   4. Ctrl-C 4 s into a --decode both run: the process must end within 10 s of it
# A run that does not end is reported HUNG (ended with SIGKILL). Logs under OUTDIR.
set -u
OUTDIR=${1:?usage: bench/nvjpeg_concurrency_check.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUTDIR"
[ -x "$GPUBASE" ] || { echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1; }
fails=0
# part NAME LIMIT CMD...: runs CMD with SIGINT at LIMIT s and SIGKILL 10 s later.
part() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1 || rc=$?
  local verdict=ok
  if [ "$rc" = 137 ]; then verdict=HUNG; elif [ "$rc" != 0 ]; then verdict="FAILED rc=$rc"; fi
  [ "$verdict" = ok ] || fails=$((fails + 1))
  printf '%-14s %-14s %4d s  %s\n' "$name" "$verdict" $((SECONDS - t0)) \
    "$(grep -m1 -o '[0-9.,]* images/s' "$OUTDIR/$name.log" || true)"
}
part gpu-test 120 ctest --test-dir "$BUILD" -L gpu -R 'Nvjpeg|LoaderSplitGpu' --output-on-failure --timeout 100
for i in 1 2 3; do
  part "gpu-$i" 40 "$GPUBASE" loader --decode gpu --workers 16 --seconds 2
  part "both-$i" 40 "$GPUBASE" loader --decode both --workers 15 --seconds 2
done
# Ctrl-C: sent at 4 s, the run must end (any status but a kill) within 10 s.
t0=$SECONDS
rc=0
timeout --signal=INT --kill-after=10 4 "$GPUBASE" loader --decode both --workers 15 --seconds 30 \
  >"$OUTDIR/ctrl-c.log" 2>&1 || rc=$?
if [ "$rc" = 137 ]; then
  echo "ctrl-c         HUNG           $((SECONDS - t0)) s  (SIGINT did not end it)"; fails=$((fails + 1))
else
  echo "ctrl-c         ok (rc=$rc)     $((SECONDS - t0)) s"
fi
echo "{\"failures\": $fails}" >"$OUTDIR/summary.json"
echo "failures: $fails (logs in $OUTDIR)"
[ "$fails" = 0 ]
