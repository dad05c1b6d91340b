#!/usr/bin/env bash
# bench/fleet_check.sh OUTDIR: the fleet features on a GPU host, in about two minutes on one H200
# (the tree already built in $BUILD, default build/):
#   1. probe --devices all --quick: one run file per GPU (OUTDIR/runs/<host>-gpu<i>.json)
#   2. probe --devices all --quick --concurrent: each GPU alone, then all at once
#      (probe.concurrent.*: which GPUs slow down together; with one GPU the "together" pass is
#      the GPU alone again, so the changes are the run-to-run noise)
#   3. gpubase fleet merge of the runs of 1 (terminal, JSON, HTML)
# Prints a compact summary; logs and JSON under OUTDIR. Never changes clocks, power, persistence
# or MIG; NCCL_NVLS_ENABLE=0 for everything it starts.
set -uo pipefail
OUT=${1:?usage: bench/fleet_check.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
GB=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT/runs" "$OUT/concurrent"
[[ -x $GB ]] || { echo "fleet_check: $GB not built"; exit 2; }
t0=$SECONDS
status=0

step() {  # step NAME CMD...: runs CMD with a 150 s limit, logs to OUT/NAME.log, prints its exit
  local name=$1; shift
  local s=$SECONDS
  timeout 150 "$@" >"$OUT/$name.out" 2>"$OUT/$name.log"
  local rc=$?
  printf '%-22s exit %-3s %4s s\n' "$name" "$rc" "$((SECONDS - s))"
  return $rc
}

step probe-devices "$GB" probe --devices all --quick --json -o "$OUT/runs/%N-gpu%g.json"
rc=$?; [[ $rc -le 1 ]] || status=1
step probe-concurrent "$GB" probe --devices all --quick --concurrent --json \
  -o "$OUT/concurrent/%N-gpu%g.json"
rc=$?; [[ $rc -le 1 ]] || status=1
step fleet-merge "$GB" fleet merge --limit 0 "$OUT/runs"
step fleet-merge-json "$GB" fleet merge --json -o "$OUT/fleet.json" "$OUT/runs"
step fleet-merge-html "$GB" fleet merge --html -o "$OUT/fleet.html" "$OUT/runs"

python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
for path in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    run = json.load(open(path))
    facts = {f["key"]: f["value"] for f in run["environment"]}
    res = {r["key"]: r for r in run["results"]}
    def v(k):
        r = res.get(k)
        return "%.1f" % r["value"] if r and r.get("value") is not None else "n/a"
    print("%s: %s %s host %s rank %s  bf16 %s TFLOP/s  copy %s GB/s  h2d %s GB/s" % (
        os.path.basename(path), facts.get("gpu.name"), facts.get("gpu.uuid"),
        facts.get("run.host"), facts.get("run.rank", "-"), v("probe.gemm.bf16.tflops"),
        v("probe.memory.copy.gbps"), v("probe.pcie.h2d.pinned.gbps")))
for path in sorted(glob.glob(os.path.join(out, "concurrent", "*.json"))):
    run = json.load(open(path))
    for r in run["results"]:
        if r["key"] == "probe.concurrent.worst_change.pct":
            print("%s: together vs alone: %s" % (os.path.basename(path), r.get("reason")))
try:
    m = json.load(open(os.path.join(out, "fleet.json")))
    print("fleet merge: %d GPUs, %d groups, %d flagged" % (m["gpus"], len(m["groups"]),
                                                          m["flagged_count"]))
    for g in m["flagged"][:5]:
        print("  flagged %s GPU %s: %s" % (g["host"], g["gpu_index"],
                                           "; ".join(p["evidence"] for p in g["problems"])))
except (OSError, ValueError, KeyError) as e:
    print("fleet merge: no report (%s)" % e)
PY
echo "fleet_check: $((SECONDS - t0)) s, outputs in $OUT"
exit $status
