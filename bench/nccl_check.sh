#!/usr/bin/env bash
# bench/nccl_check.sh OUTDIR: the GPU-to-GPU features on a GPU host, about 60 s on one H200 (the
# tree already built in $BUILD, default build/):
#   1. the GPU tests of the collectives' kernels and of the probe's p2p and nccl sections
#      (gpu_tests --gtest_filter, ~15 s)
#   2. probe --devices all --only p2p,nccl: the P2P matrix rows and the full NCCL size sweep,
#      one run file per GPU (OUTDIR/runs/), printed as nccl-tests prints its table (~10 s)
#   3. probe --devices all --quick: every section, the new ones included (~25 s)
#   4. with WITH_BASELINE=1 only: baseline --devices all --quick (about 100 s more per GPU)
# Prints a compact summary; logs and JSON under OUTDIR. Never changes clocks, power, persistence
# or MIG; NCCL_NVLS_ENABLE=0 for everything it starts (gpubase forces it too).
set -uo pipefail
OUT=${1:?usage: bench/nccl_check.sh OUTDIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
GB=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT/runs" "$OUT/quick" "$OUT/baseline"
[[ -x $GB ]] || { echo "nccl_check: $GB not built"; exit 2; }
t0=$SECONDS
status=0

step() {  # step NAME LIMIT_S CMD...: runs CMD, logs to OUT/NAME.{out,log}, prints its exit
  local name=$1 limit=$2; shift 2
  local s=$SECONDS
  timeout "$limit" "$@" >"$OUT/$name.out" 2>"$OUT/$name.log"
  local rc=$?
  printf '%-22s exit %-3s %4s s\n' "$name" "$rc" "$((SECONDS - s))"
  return $rc
}

step gpu-tests 120 "$BUILD/tests/gpu_tests" \
  --gtest_filter='CollectiveKernels.*:ProbeP2p.*:ProbeNccl.*'
rc=$?; [[ $rc -eq 0 ]] || status=1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED  \]|Skipped|no NCCL' "$OUT/gpu-tests.out" | head -20

step probe-p2p-nccl 120 "$GB" probe --devices all --only p2p,nccl --json \
  -o "$OUT/runs/%N-gpu%g.json"
rc=$?; [[ $rc -le 1 ]] || status=1
step probe-quick 150 "$GB" probe --devices all --quick --json -o "$OUT/quick/%N-gpu%g.json"
rc=$?; [[ $rc -le 1 ]] || status=1
if [[ ${WITH_BASELINE:-0} == 1 ]]; then
  step baseline-quick 600 "$GB" baseline --devices all --quick --no-save --json \
    -o "$OUT/baseline/%N-gpu%g.json"
  rc=$?; [[ $rc -le 1 ]] || status=1
fi

python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]

def results(path):
    run = json.load(open(path))
    return run, {r["key"]: r for r in run["results"]}

def param(r, name):
    for p in r.get("params", []):
        if p.get("name") == name:
            return p.get("value", p.get("text"))
    return None

for path in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    run, res = results(path)
    facts = {f["key"]: f.get("value") for f in run["environment"]}
    print("== %s: %s %s" % (os.path.basename(path), facts.get("gpu.name"), facts.get("gpu.uuid")))
    for k, r in res.items():
        if k.startswith("probe.p2p.") and (k.endswith("_gbps") or k.endswith("latency_us")):
            val = "%.2f %s" % (r["value"], r["unit"]) if r.get("value") is not None else "-"
            print("  %-36s %-14s %-8s %s" % (k, val, r.get("status"), param(r, "link") or ""))
    if "probe.nccl.version" in facts:
        print("  NCCL %s, ranks on GPUs %s, NVLS %s" % (facts.get("probe.nccl.version"),
              facts.get("probe.nccl.devices"), facts.get("probe.nccl.nvls")))
    for c in ("allreduce", "allgather", "reducescatter"):
        rows = [r for k, r in res.items() if k.startswith("probe.nccl.%s." % c) and k.count(".") == 4]
        if not rows:
            h = res.get("probe.nccl.%s.busbw_gbps" % c)
            if h: print("  %s: %s %s" % (c, h.get("status"), h.get("reason")))
            continue
        print("  %-14s %12s %12s %10s %10s %10s %s" % (c, "size(B)", "count", "time(us)",
              "algbw", "busbw", "check"))
        for r in sorted(rows, key=lambda r: param(r, "bytes") or 0):
            if r.get("value") is None:
                print("  %-14s %12s %s %s" % ("", param(r, "bytes"), r.get("status"), r.get("reason")))
                continue
            print("  %-14s %12d %12d %10.1f %10.2f %10.2f %s" % ("", param(r, "bytes"),
                  param(r, "count_per_rank"), param(r, "time_us"), param(r, "algbw_gbps"),
                  r["value"], "ok" if str(param(r, "check")).startswith("every") else param(r, "check")))
        h = res.get("probe.nccl.%s.busbw_gbps" % c)
        if h: print("  headline busbw: %s (%s)" % (h.get("status"), h.get("reason")))
for path in sorted(glob.glob(os.path.join(out, "quick", "*.json"))):
    run, res = results(path)
    bad = [k for k, r in res.items() if r.get("status") == "fail"]
    print("quick probe %s: %d results, failed: %s, run %.1f s" % (os.path.basename(path),
          len(res), ", ".join(bad) or "none", run.get("duration_s", 0)))
for path in sorted(glob.glob(os.path.join(out, "baseline", "*.json"))):
    run, res = results(path)
    print("baseline %s: %d results, run %.1f s" % (os.path.basename(path), len(res),
          run.get("duration_s", 0)))
PY
echo "nccl_check: $((SECONDS - t0)) s, outputs in $OUT"
exit $status
