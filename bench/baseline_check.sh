#!/usr/bin/env bash
# bench/baseline_check.sh OUTDIR: `gpubase baseline` on a GPU host, with the tree already built in
# $BUILD (default: build), and each checklist row beside the standalone command that measures it
# alone. Budget: 7 minutes (420 s, BUDGET_S to change it) for everything below; a part whose
# estimate no longer fits is skipped, and says so, rather than run over. In order:
#   part             estimate  what
#   baseline-quick     100 s   gpubase baseline --quick --json; makes the synthetic set (~20 s of
#                              it; the quick run alone targets <= 90 s with the set made)
#   baseline-full      250 s   gpubase baseline --json, the set cached (target <= 5 minutes)
#   infer-vs-torch      25 s   bench/infer_vs_torch.py: the classic "time 100 forward passes"
#                              PyTorch script with and without torch.cuda.synchronize(), per
#                              precision, beside the full run's infer.* figures
#   standalone-train    45 s   gpubase watch -i 0.5 -- gpubase train --data SET (the full run's
#                              model, precision and feed: decode mode, workers, nvJPEG share),
#                              400 timed steps: the training and data-wait figures from train,
#                              the GPU and CPU rows from watch, in one run
#   standalone-amp     100 s   gpubase amp, its default study (runs only if the budget allows;
#                              with the parts above it does not: ~415 s, reported skipped)
# Expected total: ~420 s (the first four parts); on a slower start the standalone part is the
# one skipped. Then one table row per checklist row: the baseline's figure against the
# standalone figure. Changes no clock, power, persistence or MIG setting.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$(realpath -m "${1:?usage: bench/baseline_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
BUDGET_S=${BUDGET_S:-420}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUTDIR"
# GPUBASE_HOME for the runs: a fresh one (removed at the end: the quick run makes the synthetic
# set) unless BASELINE_HOME=DIR names one to use and keep (its set is reused when unchanged).
if [[ -n ${BASELINE_HOME:-} ]]; then
  HOME_DIR=$(realpath -m "$BASELINE_HOME")
  mkdir -p "$HOME_DIR"
else
  HOME_DIR=$(mktemp -d)
  trap 'rm -rf "$HOME_DIR"' EXIT
fi
export GPUBASE_HOME=$HOME_DIR
cd "$ROOT" || exit 1
T0=$SECONDS
failed=()
: >"$OUTDIR/parts.txt"
# part NAME ESTIMATE_S LIMIT_S CMD...: runs CMD if ESTIMATE_S still fits in the budget, with a
# limit of at most what is left; logs to OUTDIR/NAME.log.
part() {
  local name=$1 estimate=$2 limit=$3; shift 3
  local left=$((BUDGET_S - (SECONDS - T0)))
  if ((estimate > left)); then
    echo "== $name: skipped (needs ~${estimate} s, ${left} s of the ${BUDGET_S}-s budget left)"
    echo "$name skipped - budget" >>"$OUTDIR/parts.txt"
    return 0
  fi
  ((limit > left)) && limit=$left
  echo "== $name ($(date +%T), ~${estimate} s, limit ${limit} s)"
  local t0=$SECONDS rc=0
  timeout --signal=INT --kill-after=15 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1 || rc=$?
  echo "   $name: exit $rc in $((SECONDS - t0)) s (log: $name.log)"
  echo "$name $rc $((SECONDS - t0))" >>"$OUTDIR/parts.txt"
  # 1: a checklist row failed (a finding, not a broken part); 3: no GPU; others: broken
  if [[ $rc -ne 0 && $rc -ne 1 ]]; then failed+=("$name(rc=$rc)"); tail -5 "$OUTDIR/$name.log"; fi
}

if [[ ! -x $GPUBASE ]]; then
  echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max \
  --format=csv,noheader >"$OUTDIR/gpu.txt" 2>&1 || true

part baseline-quick 100 150 "$GPUBASE" baseline --quick --json -o "$OUTDIR/baseline-quick.json" \
  --no-color --no-save
part baseline-full 250 330 "$GPUBASE" baseline --json -o "$OUTDIR/baseline-full.json" \
  --no-color --no-save
if command -v python3 >/dev/null && python3 -c "import torch, torchvision" 2>/dev/null; then
  part infer-vs-torch 25 60 python3 bench/infer_vs_torch.py --json "$OUTDIR/infer-vs-torch.json"
else
  echo "== infer-vs-torch: skipped (no PyTorch + torchvision)"
fi

# The standalone training run: the full run's model, precision and feed (else the quick run's).
SET=$GPUBASE_HOME/datasets/baseline-synth-2048
FEED_ARGS=$(python3 - "$OUTDIR" <<'PY'
import json, os, re, sys
for name in ("baseline-full.json", "baseline-quick.json"):
    try:
        run = json.load(open(os.path.join(sys.argv[1], name)))
    except Exception:
        continue
    for r in run.get("results", []):
        k = r.get("key", "")
        if not (k.startswith("train.") and k.endswith(".data_wait_pct")):
            continue
        p = {q["name"]: q.get("value", q.get("text")) for q in r.get("params", [])}
        args = ["--model", str(p.get("model", "resnet50")), "--precision", str(p.get("precision", "bf16")),
                "--decode", str(p.get("decode", "cpu"))]
        m = re.search(r"(\d+) workers", str(p.get("data", "")))
        if m:
            args += ["--workers", m.group(1)]
        if p.get("decode") == "both" and p.get("gpu_share_pct"):
            args += ["--gpu-share", "%.3f" % (float(p["gpu_share_pct"]) / 100)]
        print(" ".join(args))
        sys.exit(0)
print("--model resnet50 --precision bf16 --decode cpu")
PY
)
echo "   standalone feed: $FEED_ARGS"
if [[ -d $SET ]]; then
  # shellcheck disable=SC2086
  part standalone-train 45 90 "$GPUBASE" watch -i 0.5 --view none --no-cuda-activity --no-save \
    --json -o "$OUTDIR/standalone-watch.json" -- \
    "$GPUBASE" train --data "$SET" $FEED_ARGS --steps 400 --warmup 20 \
    --json -o "$OUTDIR/standalone-train.json"
else
  echo "== standalone-train: skipped (no synthetic set: the baseline runs did not make it)"
fi
part standalone-amp 100 150 "$GPUBASE" amp --json -o "$OUTDIR/standalone-amp.json"

echo
echo "== summary ($((SECONDS - T0)) s of the ${BUDGET_S}-s budget)"
python3 - "$OUTDIR" <<'PY' || echo "summary failed (python3 missing?)"
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except Exception:
        return None
def results(run):
    return {r.get("key"): r for r in (run or {}).get("results", [])}
def fmt(r, unit=True):
    if not r:
        return "-"
    v = r.get("value")
    if v is None:
        return f"{r.get('status', '?')}: {r.get('reason', '')[:50]}"
    return f"{v:,.1f}" + (f" {r.get('unit', '')}" if unit else "")
quick, full = load("baseline-quick.json"), load("baseline-full.json")
for tag, run in (("baseline --quick", quick), ("baseline", full)):
    if not run:
        print(f"{tag}: no JSON")
        continue
    print(f"{tag}: wall {run.get('duration_s', 0):.0f} s")
    for r in run.get("results", []):
        k = r.get("key", "")
        if k.startswith("baseline.stage."):
            p = {q["name"]: q.get("value", q.get("text")) for q in r.get("params", [])}
            v = r.get("value")
            print(f"  stage {k.split('.')[2]:7s} {('%.1f s' % v) if v is not None else '-':>8s}"
                  f" (expected {p.get('expected_s')}) {r.get('status')} {r.get('reason', '')[:70]}")
    for f in run.get("environment", []):
        if f.get("key") in ("baseline.train.feed", "baseline.quick"):
            print(f"  {f['key']}: {f.get('value')}")
    for c in run.get("checklist", []):
        print(f"  row {c.get('id'):13s} {c.get('status'):8s} {c.get('measured', '-')}")
        if c.get("status") not in ("pass", "skipped") and c.get("advice"):
            print(f"      advice: {c['advice'][:160]}")

# Each row: the full baseline's figure against the standalone command's (else the quick run's).
base = results(full or quick)
base_tag = "baseline" if full else "baseline --quick"
train, watch, amp = results(load("standalone-train.json")), results(load("standalone-watch.json")), results(load("standalone-amp.json"))
tkey = next((k for k in base if k and k.startswith("train.") and k.endswith(".images_per_s")), None)
wkey = tkey[:-len("images_per_s")] + "data_wait_pct" if tkey else None
print(f"\n| checklist row | {base_tag} | standalone | standalone command |")
print("|---|---|---|---|")
rows = [
    ("training images/s", tkey, train, tkey, "gpubase train --data (same feed)"),
    ("data loading %", wkey, train, wkey, "gpubase train --data"),
    ("GPU utilization %", "watch.gpu.util.pct", watch, "watch.gpu.util.pct", "gpubase watch -- gpubase train --data"),
    ("CPU busiest core %", "watch.cpu.busiest_core.pct", watch, "watch.cpu.busiest_core.pct", "gpubase watch -- gpubase train --data"),
    ("AMP accuracy loss", "amp.accuracy_loss.pct", amp, "amp.accuracy_loss.pct", "gpubase amp (default study)"),
]
for label, bk, other, ok, cmd in rows:
    b = base.get(bk) if bk else None
    o = other.get(ok) if (ok and other) else None
    note = "" if other else " (not run: see the parts above)"
    print(f"| {label} | {fmt(b)} | {fmt(o)}{note} | {cmd} |")
def param(r, name):
    for q in (r or {}).get("params", []):
        if q.get("name") == name:
            return q.get("value", q.get("text"))
    return None
def num(v):
    return "-" if v is None else f"{v:,.1f} %"
# Where the busiest core's time goes: the thread that launches the steps (its own clock over the
# timed steps) and the busiest thread the sampler saw.
skey = tkey[:-len("images_per_s")] + "step_ms" if tkey else None
print(f"| launching thread CPU (timed steps) | {num(param(base.get(skey), 'launch_thread_cpu_pct'))} "
      f"| {num(param(train.get(skey), 'launch_thread_cpu_pct'))} | gpubase train --data |")
bt, wt = base.get("watch.job.busiest_thread.cpu.pct"), watch.get("watch.job.busiest_thread.cpu.pct")
print(f"| busiest thread | {fmt(bt)} {param(bt, 'thread') or ''} | {fmt(wt)} {param(wt, 'thread') or ''} "
      f"| gpubase watch -- gpubase train --data |")
if not amp:
    print("| AMP accuracy loss (quoted) | | -0.10 points, noise band +/-0.21 (quoted: bench/NOTES.md a1, "
          "`gpubase amp` default study on the H200, 2026-12-02) | gpubase amp not run here (budget) |")
inf = load("infer-vs-torch.json")
if inf:
    for row in inf.get("rows", []):
        p = row["precision"]
        r = base.get(f"infer.resnet50.{p}.b{row['batch']}.images_per_s")
        ours = r.get("value") if r else None
        line = (f"| inference {p} b{row['batch']} | {fmt(r)} | classic+sync {row['classic_sync_images_per_s']:,.0f},"
                f" no sync {row['classic_nosync_images_per_s']:,.0f} ({row['nosync_inflation']:.2f}x inflated),"
                f" events {row['events_images_per_s']:,.0f}")
        if p == "fp32-default":
            line += "; PyTorch's default FP32 runs its convolutions in TF32: no gpubase counterpart"
        if ours:
            line += f"; ours / classic+sync = {ours / row['classic_sync_images_per_s']:.2f}x (target >= 1.0)"
        print(line + " | bench/infer_vs_torch.py |")
PY
if [[ ${#failed[@]} -gt 0 ]]; then echo "FAILED parts: ${failed[*]}"; exit 1; fi
echo "all parts ran or were skipped for the budget"
