#!/usr/bin/env bash
# bench/cupti_check.sh OUTDIR: checks on a GPU host (tree already built in $BUILD, default
# build/) what `gpubase watch` sees inside a job through the CUDA-activity injection library.
# About 7 minutes on one H200:
#   1. the GPU tests: a small CUDA program with known work watched with the injection (exact
#      bytes and kernel calls, an error exit, a SIGKILL, the off switch)            ~40 s
#   2. the corpus of bench/cuda_jobs.py (9 PyTorch jobs, ~12 s each) under watch; each job's
#      findings against the one it must get: a confusion table job x finding          ~3.5 min
#   3. ground truth: 4 jobs time their own data wait (a separate run, GPU synced at every
#      step); watch.cuda.data_wait.pct of the corpus run must be within 3 points     ~1.3 min
#   4. overhead: eager ResNet-50 batch 256 under watch without and with the injection,
#      interleaved twice; images/s with / without                                   ~1.5 min
# Writes OUTDIR/{gpu_tests.log, corpus/*.json, gt/*.json, overhead/*.json, summary.json,
# confusion.md} and prints a compact summary. Never touches clocks, power or MIG.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:?usage: bench/cupti_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GB=$BUILD/apps/gpubase/gpubase
SECONDS_PER_JOB=${SECONDS_PER_JOB:-12}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT/corpus" "$OUT/gt" "$OUT/overhead"
cd "$ROOT" || exit 1
[[ -x $GB ]] || { echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1; }
[[ -f $BUILD/apps/gpubase/libgpubase_cuda_inject.so ]] ||
  echo "warning: libgpubase_cuda_inject.so not built: every watch.cuda figure will be skipped"
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

step "1. GPU tests (CudaActivity.*)"
timeout 180 "$BUILD/tests/gpu_tests" --gtest_filter='CudaActivity.*' > "$OUT/gpu_tests.log" 2>&1
echo "gpu tests: rc=$? ($(grep -c '^\[       OK' "$OUT/gpu_tests.log") ok," \
     "$(grep -c '^\[  FAILED' "$OUT/gpu_tests.log") failed lines)"

python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null ||
  { echo "no PyTorch with CUDA: corpus, ground truth and overhead skipped"; exit 0; }

watch_job() {  # watch_job OUT.json [watch options] -- job args
  local out=$1; shift
  timeout $(( SECONDS_PER_JOB + 90 )) "$GB" watch --json -o "$out" -q --interval 0.5 "$@" \
    > /dev/null 2> "${out%.json}.log"
}

step "2. corpus"
JOBS=$(python3 bench/cuda_jobs.py --list | python3 -c "import json,sys; print(' '.join(json.load(sys.stdin)))")
for job in $JOBS; do
  watch_job "$OUT/corpus/$job.json" -- python3 bench/cuda_jobs.py --job "$job" --seconds "$SECONDS_PER_JOB"
  echo "  $job: rc=$?"
done

step "3. ground truth (the jobs time their own data wait)"
for job in well_fed starved_worker many_workers pageable; do
  timeout $(( SECONDS_PER_JOB + 60 )) python3 bench/cuda_jobs.py --job "$job" \
    --seconds "$SECONDS_PER_JOB" --ground-truth "$OUT/gt/$job.json" > "$OUT/gt/$job.log" 2>&1
  echo "  $job: rc=$?"
done

step "4. overhead: ResNet-50 b256 eager, without / with the injection, interleaved"
for round in 1 2; do
  watch_job "$OUT/overhead/off-$round.json" --no-cuda-activity -- python3 bench/cuda_jobs.py \
    --job resnet50 --seconds "$SECONDS_PER_JOB" --stats "$OUT/overhead/off-$round.stats.json"
  watch_job "$OUT/overhead/on-$round.json" -- python3 bench/cuda_jobs.py \
    --job resnet50 --seconds "$SECONDS_PER_JOB" --stats "$OUT/overhead/on-$round.stats.json"
done

step "summary"
python3 - "$OUT" <<'PY'
import json, os, subprocess, sys
out = sys.argv[1]
expected = json.loads(subprocess.check_output([sys.executable, "bench/cuda_jobs.py", "--list"]))

def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None

def value(run, key):
    for r in (run or {}).get("results", []):
        if r.get("key") == key:
            return r.get("value"), r.get("reason", "")
    return None, "absent"

summary = {"corpus": {}, "ground_truth": {}, "overhead": {}}
ids = set()
for job in expected:
    run = load(f"{out}/corpus/{job}.json")
    got = [f["id"] for f in (run or {}).get("findings", []) if f["status"] in ("warn", "fail", "pass")]
    ids.update(got)
    ok = any(e in got for e in expected[job])
    dw, why = value(run, "watch.cuda.data_wait.pct")
    busy, _ = value(run, "watch.cuda.busy.pct")
    summary["corpus"][job] = {"expected_any_of": expected[job], "got": got, "hit": ok,
                              "data_wait_pct": dw, "cuda_busy_pct": busy,
                              "cuda_reason": why if dw is None else ""}
cols = sorted(ids)
lines = ["| job | must get (any of) | " + " | ".join(cols) + " | hit |",
         "|---|---|" + "---|" * len(cols) + "---|"]
for job, c in summary["corpus"].items():
    cells = ["**x**" if i in c["got"] and i in c["expected_any_of"] else ("x" if i in c["got"] else "")
             for i in cols]
    lines.append(f"| {job} | {', '.join(c['expected_any_of'])} | " + " | ".join(cells) +
                 f" | {'yes' if c['hit'] else 'NO'} |")
open(f"{out}/confusion.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
hits = sum(c["hit"] for c in summary["corpus"].values())
print(f"corpus: {hits} of {len(expected)} jobs got their finding")

print("ground truth: data wait, the job's own timing vs watch.cuda.data_wait.pct")
for job in ("well_fed", "starved_worker", "many_workers", "pageable"):
    gt = load(f"{out}/gt/{job}.json")
    dw = summary["corpus"].get(job, {}).get("data_wait_pct")
    row = {"ground_truth_pct": gt and gt["data_wait_pct"], "watch_pct": dw}
    if gt and dw is not None:
        row["diff_points"] = dw - gt["data_wait_pct"]
        row["within_3"] = abs(row["diff_points"]) <= 3
    summary["ground_truth"][job] = row
    fmt = lambda v: "-" if v is None else f"{v:.1f}"
    print(f"  {job:15s} truth {fmt(row['ground_truth_pct'])} %  watch {fmt(dw)} %  "
          f"diff {fmt(row.get('diff_points'))}  {'ok' if row.get('within_3') else 'MISS'}")

rates = {"off": [], "on": []}
for mode in rates:
    for r in (1, 2):
        s = load(f"{out}/overhead/{mode}-{r}.stats.json")
        if s:
            rates[mode].append(s["images_per_s"])
summary["overhead"] = {"images_per_s": rates}
if rates["off"] and rates["on"]:
    ratio = (sum(rates["on"]) / len(rates["on"])) / (sum(rates["off"]) / len(rates["off"]))
    summary["overhead"]["with_over_without"] = ratio
    print(f"overhead: ResNet-50 b256 {rates['off']} img/s without, {rates['on']} with: "
          f"ratio {ratio:.3f} (target >= 0.97)")
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
PY
step "done"
