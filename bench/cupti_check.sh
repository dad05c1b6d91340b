#!/usr/bin/env bash
# bench/cupti_check.sh MODE OUTDIR: checks on a GPU host (tree already built in $BUILD, default
# build/) what `gpubase watch` sees inside a job through the CUDA-activity injection library.
# Two modes, each about 7 minutes on one H200 (the estimate is printed at the start, from the
# job lengths and ~8 s of start-up per Python job; JOB_S, TRUTH_S, OVER_S, BUSY_S change them):
#
#   corpus  1. the GPU tests (CudaActivity.*): a small CUDA program with known work    ~40 s
#           2. the corpus of bench/cuda_jobs.py (9 PyTorch jobs, JOB_S=28 s of loop each,
#              ~39 s with start-up and exit) under watch; each job's findings against the one
#              it must get: the confusion table job x finding (OUTDIR/confusion.md), whether
#              each job ended by itself, its judged window and its NVTX ranges       ~5.9 min
#   truth   1. ground truth: well fed, one starved worker, many workers, pin_memory=False
#              time their own data wait (time in next(loader_iter) after the GPU finished the
#              previous step, from per-step CUDA events read after the loop; TRUTH_SYNC=1: all
#              the time in next() with the GPU synchronized at every step instead), over the
#              steady window; TRUTH_S=15 s of loop), each in a run of its own, right
#              followed by the same job under watch (watch.cuda.data_wait.pct must be within
#              3 points; back to back, so a job whose share drifts between runs -- many_workers
#              on a small set -- is compared with its neighbour). CORPUS=DIR (a corpus OUTDIR)
#              takes the watched runs from there instead                   ~3.5 min
#           2. overhead: eager ResNet-50 b256 under watch without / with the injection,
#              interleaved OVER_ROUNDS=2 times, 0 for none (>= 97 %); the same step as one CUDA graph, the same
#              way (>= 99 %); OVER_S=10 s of loop each                                ~2.8 min
#           3. GPU busy cross-check: a duty-cycle job (GEMM bursts, host sleeps) under watch
#              against CUDA events in the same run, and the PyTorch profiler's kernel time in
#              a run of its own (within 2 points)                                      ~46 s
#
# The jobs' files (sync_disk's samples, many_workers' JPEGs) are made once in OUTDIR/data (or
# DATA=DIR) and reused. Writes OUTDIR/{gpu_tests.log, corpus/, gt/, overhead/, busy/,
# summary-MODE.json, confusion.md}. Never touches clocks, power or MIG.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-}
[[ $MODE == corpus || $MODE == truth ]] || { echo "usage: bench/cupti_check.sh corpus|truth OUTDIR"; exit 2; }
OUT=$(realpath -m "${2:?usage: bench/cupti_check.sh corpus|truth OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GB=$BUILD/apps/gpubase/gpubase
JOB_S=${JOB_S:-28}      # loop seconds of a corpus job (plus ~8 s start-up, ~3 s exit)
TRUTH_S=${TRUTH_S:-15}  # loop seconds of a ground-truth job
OVER_S=${OVER_S:-10}    # loop seconds of an overhead run (after ~3 s of warm-up steps)
OVER_ROUNDS=${OVER_ROUNDS:-2}  # interleaved off/on pairs per overhead job (0: no overhead step)
BUSY_S=${BUSY_S:-15}    # loop seconds of the duty-cycle runs
STARTUP_S=8             # python + torch + torchvision import, model build (estimate)
DATA=$(realpath -m "${DATA:-$OUT/data}")
TRUTH_SYNC=${TRUTH_SYNC:-0}  # truth: 1 = the reference synchronizes the GPU at every step
CORPUS=${CORPUS:-}  # truth: watched runs from a corpus OUTDIR's corpus/ (default: run here)
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
cd "$ROOT" || exit 1
[[ -x $GB ]] || { echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1; }
[[ -f $BUILD/apps/gpubase/libgpubase_cuda_inject.so ]] ||
  echo "warning: libgpubase_cuda_inject.so not built: every watch.cuda figure will be skipped"
GT_JOBS="well_fed starved_worker many_workers pageable"
have_corpus() {
  [[ -n $CORPUS ]] || return 1
  for j in $GT_JOBS; do [[ -s $CORPUS/$j.json ]] || return 1; done
}

if [[ $MODE == corpus ]]; then
  est=$(( 40 + 10 + 9 * (STARTUP_S + JOB_S + 3) ))
else
  per_gt=$(( STARTUP_S + TRUTH_S + 3 ))
  est=$(( 10 + 4 * per_gt + 4 * OVER_ROUNDS * (STARTUP_S + OVER_S + 3) + 2 * (STARTUP_S + BUSY_S) ))
  have_corpus || est=$(( est + 4 * per_gt ))
fi
echo "cupti_check $MODE: expected about $(( est / 60 )) min $(( est % 60 )) s (JOB_S=$JOB_S," \
     "TRUTH_S=$TRUTH_S, OVER_S=$OVER_S, BUSY_S=$BUSY_S, ~${STARTUP_S} s start-up per job)"
t0=$(date +%s)
step() { echo "== $* ($(( $(date +%s) - t0 )) s)"; }

# watch_job OUT.json LOOP_S [watch options] -- job args. watch ends a job that outlives its loop
# by 25 s (SIGINT, then SIGTERM after 5 s); `timeout` is the last resort.
watch_job() {
  local out=$1 loop=$2; shift 2
  timeout $(( loop + 60 )) "$GB" watch --json -o "$out" -q --interval 0.5 --no-save \
    --duration $(( loop + STARTUP_S + 25 )) --grace 5 "$@" > /dev/null 2> "${out%.json}.log"
}

if [[ $MODE == corpus ]]; then
  step "1. GPU tests (CudaActivity.*)"
  timeout 180 "$BUILD/tests/gpu_tests" --gtest_filter='CudaActivity.*' > "$OUT/gpu_tests.log" 2>&1
  echo "gpu tests: rc=$? ($(grep -c '^\[       OK' "$OUT/gpu_tests.log") ok," \
       "$(grep -c '^\[  FAILED' "$OUT/gpu_tests.log") failed lines)"
fi

python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null ||
  { echo "no PyTorch with CUDA: the PyTorch jobs are skipped"; exit 0; }
step "data for the jobs (made once in $DATA)"
python3 bench/cuda_jobs.py --make-data "$DATA" || echo "  making the data failed"

if [[ $MODE == corpus ]]; then
  step "2. corpus: 9 jobs under watch, ${JOB_S} s of loop each"
  mkdir -p "$OUT/corpus"
  JOBS=$(python3 bench/cuda_jobs.py --list | python3 -c "import json,sys; print(' '.join(json.load(sys.stdin)))")
  for job in $JOBS; do
    s=$(date +%s)
    watch_job "$OUT/corpus/$job.json" "$JOB_S" -- python3 bench/cuda_jobs.py --job "$job" \
      --seconds "$JOB_S" --data "$DATA"
    echo "  $job: rc=$? ($(( $(date +%s) - s )) s)"
  done
else
  step "1. ground truth: 4 jobs time their own data wait ($( (( TRUTH_SYNC )) && echo "GPU synced at each step" || echo "per-step events")), ${TRUTH_S} s each"
  mkdir -p "$OUT/gt"
  reuse=0
  if have_corpus; then
    reuse=1
    echo "  the watched runs: $CORPUS"
  else
    CORPUS=$OUT/gt/watched
    mkdir -p "$CORPUS"
  fi
  truth_opt=(); (( TRUTH_SYNC )) && truth_opt=(--truth-sync)
  for job in $GT_JOBS; do
    timeout $(( TRUTH_S + 60 )) python3 bench/cuda_jobs.py --job "$job" --seconds "$TRUTH_S" \
      --data "$DATA" --ground-truth "$OUT/gt/$job.json" "${truth_opt[@]}" > "$OUT/gt/$job.log" 2>&1
    echo "  $job (self-timed): rc=$?"
    (( reuse )) && continue
    watch_job "$CORPUS/$job.json" "$TRUTH_S" -- python3 bench/cuda_jobs.py --job "$job" \
      --seconds "$TRUTH_S" --data "$DATA"
    echo "  $job (watched, right after): rc=$?"
  done

  (( OVER_ROUNDS > 0 )) &&
    step "2. overhead: without / with the injection, interleaved, ${OVER_S} s each"
  mkdir -p "$OUT/overhead"
  for job in resnet50 resnet50_graph; do
    for (( round = 1; round <= OVER_ROUNDS; round++ )); do
      for mode in off on; do
        opt=(); [[ $mode == off ]] && opt=(--no-cuda-activity)
        watch_job "$OUT/overhead/$job-$mode-$round.json" "$OVER_S" "${opt[@]}" -- python3 \
          bench/cuda_jobs.py --job "$job" --seconds "$OVER_S" \
          --stats "$OUT/overhead/$job-$mode-$round.stats.json"
        echo "  $job $mode $round: rc=$?"
      done
    done
  done

  step "3. GPU busy: duty-cycle job under watch (CUDA events) and under the PyTorch profiler"
  mkdir -p "$OUT/busy"
  watch_job "$OUT/busy/watched.json" "$BUSY_S" -- python3 bench/cuda_jobs.py --job duty_cycle \
    --seconds "$BUSY_S" --stats "$OUT/busy/events.json"
  echo "  watched: rc=$?"
  timeout $(( BUSY_S + 60 )) python3 bench/cuda_jobs.py --job duty_cycle --seconds "$BUSY_S" \
    --profile "$OUT/busy/profiler.json" > "$OUT/busy/profiler.log" 2>&1
  echo "  profiler: rc=$?"
fi

step "summary"
python3 - "$MODE" "$OUT" "$CORPUS" "$OVER_ROUNDS" <<'PY'
import json, subprocess, sys
mode, out, corpus, over_rounds = sys.argv[1:4] + [int(sys.argv[4])]
expected = json.loads(subprocess.check_output([sys.executable, "bench/cuda_jobs.py", "--list"]))

def load(p):
    try:
        return json.load(open(p))
    except Exception:
        return None

def result(run, key):
    for r in (run or {}).get("results", []):
        if r.get("key") == key:
            return r
    return {}

def value(run, key):
    return result(run, key).get("value")

def param(run, key, name):
    for p in result(run, key).get("params", []):
        if p.get("name") == name:
            return p.get("text")
    return None

def fact(run, key):
    for f in (run or {}).get("environment", []):
        if f.get("key") == key:
            return f.get("value")
    return None

def fmt(v, d=1):
    return "-" if v is None else f"{v:.{d}f}"

summary = {}
if mode == "corpus":
    rows, ids = {}, set()
    for job in expected:
        run = load(f"{out}/corpus/{job}.json")
        got = [f["id"] for f in (run or {}).get("findings", []) if f["status"] in ("warn", "fail", "pass")]
        ids.update(got)
        ended = fact(run, "watch.exit") or "no run file"
        nvtx = []
        for i in range(1, 9):
            r = result(run, f"watch.cuda.nvtx.top{i}.pct")
            if r.get("value") is not None:
                nvtx.append(f"{param(run, f'watch.cuda.nvtx.top{i}.pct', 'name')} "
                            f"{r['value']:.0f}%")
        rows[job] = {"expected_any_of": expected[job], "got": got,
                     "hit": any(e in got for e in expected[job]),
                     "ended": ended, "by_itself": "exited with code 0" in ended and "stopped" not in ended,
                     "window_s": value(run, "watch.window.s"), "startup_s": value(run, "watch.startup.s"),
                     "over": param(run, "watch.window.s", "over"),
                     "cuda_busy_pct": value(run, "watch.cuda.busy.pct"),
                     "cuda_covers": param(run, "watch.cuda.busy.pct", "covers"),
                     "nvml_util_pct": value(run, "watch.gpu.util.pct"),
                     "data_wait_pct": value(run, "watch.cuda.data_wait.pct"),
                     "kernels": value(run, "watch.cuda.kernels.count"), "nvtx": nvtx}
    cols = sorted(ids)
    lines = ["| job | must get (any of) | " + " | ".join(cols) + " | hit |",
             "|---|---|" + "---|" * len(cols) + "---|"]
    for job, c in rows.items():
        cells = ["**x**" if i in c["got"] and i in c["expected_any_of"] else ("x" if i in c["got"] else "")
                 for i in cols]
        lines.append(f"| {job} | {', '.join(c['expected_any_of'])} | " + " | ".join(cells) +
                     f" | {'yes' if c['hit'] else 'NO'} |")
    open(f"{out}/confusion.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"corpus: {sum(c['hit'] for c in rows.values())} of {len(expected)} jobs got their finding")
    print("job: judged window / start-up, GPU busy CUDA / NVML, data wait, kernels, ended; NVTX")
    for job, c in rows.items():
        print(f"  {job:15s} {fmt(c['window_s'], 0)} s / {fmt(c['startup_s'], 0)} s, "
              f"{fmt(c['cuda_busy_pct'])} / {fmt(c['nvml_util_pct'])} %, dw {fmt(c['data_wait_pct'])} %, "
              f"{fmt(c['kernels'], 0)} kernels, {'ok' if c['by_itself'] else 'ENDED: ' + c['ended']}; "
              f"{', '.join(c['nvtx']) or 'no NVTX'}")
    summary["corpus"] = rows
else:
    print("ground truth: the job's own data wait (steady window) vs watch.cuda.data_wait.pct")
    gt_rows = {}
    for job in ("well_fed", "starved_worker", "many_workers", "pageable"):
        gt = load(f"{out}/gt/{job}.json")
        run = load(f"{corpus}/{job}.json")
        dw = value(run, "watch.cuda.data_wait.pct")
        row = {"ground_truth_pct": gt and gt["data_wait_pct"],
               "ground_truth_method": gt and gt.get("method"), "watch_pct": dw,
               "watch_over": param(run, "watch.cuda.busy.pct", "covers"), "watched_run": f"{corpus}/{job}.json"}
        if gt and dw is not None:
            row["diff_points"] = dw - gt["data_wait_pct"]
            row["within_3"] = abs(row["diff_points"]) <= 3
        gt_rows[job] = row
        print(f"  {job:15s} truth {fmt(row['ground_truth_pct'])} %  watch {fmt(dw)} %  "
              f"diff {fmt(row.get('diff_points'))}  {'ok' if row.get('within_3') else 'MISS'}"
              f"  ({row['ground_truth_method'] or 'no reference'})")
        if gt and gt.get("judged_waits_ms") is not None:
            # The reference's own run: how many steps it judged and how soon its first step
            # ended, the first check when it and watch disagree.
            w = gt["judged_waits_ms"]
            covered = sum(max(0.0, min(t1, e) - t0) for t0, t1, e in w if e is not None)
            inside = sum(t1 - t0 for t0, t1, _ in w)
            print(f"      reference run: {gt['steps']} steps, {len(w)} judged, first step done "
                  f"{fmt(gt.get('first_step_done_s'))} s into the loop; {fmt(inside / 1e3)} s "
                  f"in next(), {fmt(covered / 1e3)} s of it with the previous step still on the GPU")
    summary["ground_truth"] = gt_rows
    summary["overhead"] = {}
    for job, target in (("resnet50", 0.97), ("resnet50_graph", 0.99)) if over_rounds else ():
        rates = {"off": [], "on": []}
        for m in rates:
            for r in range(1, over_rounds + 1):
                s = load(f"{out}/overhead/{job}-{m}-{r}.stats.json")
                if s:
                    rates[m].append(round(s["images_per_s"], 1))
        row = {"images_per_s": rates, "target": target}
        if rates["off"] and rates["on"]:
            row["with_over_without"] = (sum(rates["on"]) / len(rates["on"])) / (sum(rates["off"]) / len(rates["off"]))
            print(f"overhead {job}: {rates['off']} img/s without, {rates['on']} with: ratio "
                  f"{row['with_over_without']:.3f} (target >= {target})")
        else:
            print(f"overhead {job}: missing runs {rates}")
        summary["overhead"][job] = row
    run = load(f"{out}/busy/watched.json")
    ev = load(f"{out}/busy/events.json") or {}
    pr = load(f"{out}/busy/profiler.json") or {}
    busy = value(run, "watch.cuda.busy.pct")
    row = {"watch_pct": busy, "events_pct": ev.get("busy_events_pct"),
           "profiler_pct": pr.get("busy_profiler_pct"),
           "watch_covers": param(run, "watch.cuda.busy.pct", "covers")}
    for ref in ("events_pct", "profiler_pct"):
        if busy is not None and row[ref] is not None:
            row[ref.replace("_pct", "_diff_points")] = busy - row[ref]
    print(f"GPU busy: watch {fmt(busy)} %, CUDA events (same run) {fmt(row['events_pct'])} %, "
          f"PyTorch profiler (own run) {fmt(row['profiler_pct'])} % (target: within 2 points)")
    summary["busy"] = row
json.dump(summary, open(f"{out}/summary-{mode}.json", "w"), indent=1)
PY
step "done"
