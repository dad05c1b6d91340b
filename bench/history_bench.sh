#!/usr/bin/env bash
# bench/history_bench.sh [RUNS]: times `gpubase history` and `gpubase compare` over RUNS saved
# runs (default 10,000) in a scratch data folder: each run is the committed H200 probe run
# (bench/results/h200-probe-v4.json, 61 results) with its raw samples, params and telemetry
# left out, its time, GPU (8 UUIDs), host (8 names) and figures varied. Prints the time of the
# first use (the import of every file into the index) and of the queries after it: wall time and
# CPU time (user + sys), and `gpubase --version` as the cost of starting the process at all.
# Needs python3 and a built gpubase ($BUILD, default build/).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
RUNS=${1:-10000}
HOME_DIR=$(mktemp -d)
trap 'rm -rf "$HOME_DIR"' EXIT
python3 - "$ROOT/bench/results/h200-probe-v4.json" "$HOME_DIR/runs" "$RUNS" <<'PY'
import copy, json, os, random, sys
src, out, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
base = json.load(open(src))
for r in base["results"]:
    r["samples"] = []; r["params"] = []; r["telemetry"] = None
rng = random.Random(1)
for i in range(n):
    run = copy.deepcopy(base)
    day, sec = divmod(i * 600, 86400)
    run["started_at"] = "2026-%02d-%02dT%02d:%02d:%02dZ" % (1 + day // 28 % 12, 1 + day % 28, sec // 3600, sec // 60 % 60, sec % 60)
    gpu = i % 8
    run["environment"] = [f for f in run["environment"] if f["key"] not in ("gpu.uuid", "run.host")]
    run["environment"] += [{"key": "gpu.uuid", "label": "UUID", "value": "GPU-%08d" % gpu},
                           {"key": "run.host", "label": "host", "value": "node%02d" % (gpu % 8)}]
    for r in run["results"]:
        if r.get("value") is not None:
            r["value"] *= rng.gauss(1.0, 0.01)
    json.dump(run, open(os.path.join(out, "probe-%05d.json" % i), "w"))
PY
G=$BUILD/apps/gpubase/gpubase
# "wall W s, cpu C s" for one command.
t() {
  python3 - "$HOME_DIR" "$@" <<'PY'
import os, resource, subprocess, sys, time
env = dict(os.environ, GPUBASE_HOME=sys.argv[1])
t0 = time.monotonic()
subprocess.run(sys.argv[2:], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
wall = time.monotonic() - t0
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print("wall %.3f s, cpu %.3f s" % (wall, ru.ru_utime + ru.ru_stime))
PY
}
echo "runs: $RUNS ($(du -sh "$HOME_DIR/runs" | cut -f1) of run files)"
echo "gpubase --version (process start):   $(t "$G" --version)"
echo "first use, imports every run:        $(t "$G" history)"
echo "history (newest 20):                 $(t "$G" history)"
echo "history --key (all runs):            $(t "$G" history --key probe.gemm.bf16.tflops -n 0)"
echo "history --gpu --key:                 $(t "$G" history --gpu GPU-00000003 --key probe.gemm.bf16.tflops -n 0)"
echo "compare --last:                      $(t "$G" compare --last || true)"
echo "compare A B (two files):             $(t "$G" compare probe-00001.json probe-00009.json || true)"
