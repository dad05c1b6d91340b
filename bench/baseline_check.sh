#!/usr/bin/env bash
# bench/baseline_check.sh OUTDIR: `gpubase baseline` on a GPU host, with the tree already built in
# $BUILD (default: build). Runs, each part logged and timed, a failure in one never stopping
# the others:
#   1. the baseline GPU test (ctest -L gpu -R BaselineGpu): training under the in-process watch
#   2. gpubase baseline --quick --json             (target <= 90 s on an H200)
#   3. gpubase baseline --json                     (target <= 5 minutes; time per stage)
#   4. bench/infer_vs_torch.py: the classic "time 100 forward passes" PyTorch script, with and
#      without torch.cuda.synchronize(), against CUDA-event timing; beside the full run's
#      inference stage (infer.*: target >= 1.0x the classic script with synchronize)
# then prints one summary line per figure. Both baseline runs share one scratch GPUBASE_HOME:
# the quick run makes the synthetic set (its time is in the log), the full run reuses it.
# About 6.5 minutes on an H200 (GPU tests ~0.5, quick ~1.5, full ~4, PyTorch ~0.3). Changes no clock, power, persistence or MIG setting.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$(realpath -m "${1:?usage: bench/baseline_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUTDIR"
HOME_DIR=$(mktemp -d)
trap 'rm -rf "$HOME_DIR"' EXIT
export GPUBASE_HOME=$HOME_DIR
cd "$ROOT" || exit 1
failed=()
part() {  # part NAME LIMIT_S CMD...: runs CMD with a time limit, logs to OUTDIR/NAME.log
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date +%T), limit ${limit} s)"
  local t0=$SECONDS rc=0
  timeout --signal=INT --kill-after=20 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1 || rc=$?
  echo "   $name: exit $rc in $((SECONDS - t0)) s (log: $name.log)"
  echo "$name $rc $((SECONDS - t0))" >>"$OUTDIR/parts.txt"
  # 1: a checklist row failed (a finding, not a broken part); 3: no GPU; others: broken
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then failed+=("$name(rc=$rc)"); tail -5 "$OUTDIR/$name.log"; fi
}
: >"$OUTDIR/parts.txt"

if [[ ! -x $GPUBASE ]]; then
  echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max \
  --format=csv,noheader >"$OUTDIR/gpu.txt" 2>&1 || true

part gpu-test 240 ctest --test-dir "$BUILD" -L gpu -R 'BaselineGpu' --output-on-failure \
  --timeout 200
part baseline-quick 240 "$GPUBASE" baseline --quick --json -o "$OUTDIR/baseline-quick.json" \
  --no-color
part baseline-full 420 "$GPUBASE" baseline --json -o "$OUTDIR/baseline-full.json" --no-color
if command -v python3 >/dev/null && python3 -c "import torch, torchvision" 2>/dev/null; then
  part infer-vs-torch 120 python3 bench/infer_vs_torch.py --json "$OUTDIR/infer-vs-torch.json"
else
  echo "== infer-vs-torch: skipped (no PyTorch + torchvision)"
fi

echo
echo "== summary"
python3 - "$OUTDIR" <<'PY' || echo "summary failed (python3 missing?)"
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    try:
        with open(p) as f:
            return json.load(f)
    except Exception as e:
        print(f"{name}: not readable ({e})")
        return None
for name in ("baseline-quick.json", "baseline-full.json"):
    run = load(name)
    if not run:
        continue
    tag = name.replace(".json", "")
    print(f"{tag}: wall {run.get('duration_s', 0):.0f} s")
    for r in run.get("results", []):
        k = r.get("key", "")
        v = r.get("value")
        if k.startswith("baseline.stage."):
            exp = next((p.get("value") for p in r.get("params", []) if p.get("name") == "expected_s"), None)
            print(f"  stage {k.split('.')[2]:7s} {('%.0f s' % v) if v is not None else '-':>7s}"
                  f" (expected {exp}) {r.get('status')} {r.get('reason', '')[:80]}")
    keys = ["loader.cpu.knee.workers", "loader.gpu_decode.images_per_s", "loader.cpu.best.images_per_s", "loader.split.images_per_s",
            "watch.gpu.util.pct", "watch.cpu.busiest_core.pct", "amp.accuracy_loss.pct",
            "amp.seed_spread.points"]
    for r in run.get("results", []):
        k = r.get("key", "")
        if k in keys or k.startswith("infer.") or (k.startswith("train.") and (k.endswith("images_per_s") or k.endswith("data_wait_pct"))):
            v = r.get("value")
            print(f"  {k}: {v if v is None else round(v, 2)} {r.get('unit', '')} {r.get('status')}")
    for c in run.get("checklist", []):
        print(f"  row {c.get('id'):13s} {c.get('status'):8s} {c.get('measured', '-')}")
inf = load("infer-vs-torch.json")
full = load("baseline-full.json") or {}
ours = {}
for r in full.get("results", []):
    k = r.get("key", "")
    if k.startswith("infer.") and r.get("value") is not None:
        ours[k.split(".")[2]] = r["value"]
if inf:
    for row in inf.get("rows", []):
        p = row["precision"]
        line = (f"  inference {p:5s} b{row['batch']}: torch events {row['events_images_per_s']:.0f} img/s,"
                f" classic+sync {row['classic_sync_images_per_s']:.0f}, classic no sync"
                f" {row['classic_nosync_images_per_s']:.0f} ({row['nosync_inflation']:.2f}x inflated)")
        if p in ours:
            line += f"; gpubase {ours[p]:.0f} = {ours[p] / row['classic_sync_images_per_s']:.2f}x classic+sync (target >= 1.0)"
        print(line)
PY
if [[ ${#failed[@]} -gt 0 ]]; then echo "FAILED parts: ${failed[*]}"; exit 1; fi
echo "all parts ran"
