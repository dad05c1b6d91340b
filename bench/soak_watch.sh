#!/usr/bin/env bash
# bench/soak_watch.sh [SECONDS] [CHILDREN] [OUTDIR]: `gpubase watch` of a job that forks and
# ends CHILDREN (default 20,000) short-lived processes over about SECONDS (default 120), a long
# run accelerated: watch samples every 0.1 s (its shortest interval) instead of every second,
# and the job's children live LIFE_S (default 2.5) seconds each, so hundreds are alive at any
# time and each is seen by watch's tree scans (every 2 s) before it exits.
# Checks: watch ends with the job's exit code (0) and a readable report; the job forked every
# child; the peak of watch's resident memory (VmRSS, sampled every second) in the last fifth of
# the run is at most RSS_GROWTH_MB (default 8) above its peak in the first RSS_BASE_SHARE
# (default 0.2) of it (watch keeps running aggregates, a downsampled series and the busiest
# processes only, whatever the job forks).
# Writes OUTDIR (default a temporary folder) /run.json, rss.tsv (seconds, KiB), watch.err and
# summary.json; prints a summary line; exit 0 when every check holds, 1 otherwise, 2 on setup
# errors. Environment: GPUBASE (the binary; default $BUILD/apps/gpubase/gpubase, BUILD default
# build), LIFE_S, RSS_GROWTH_MB, RSS_BASE_SHARE. CPU only.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_RUN=${1:-120}
CHILDREN=${2:-20000}
OUT=${3:-$(mktemp -d -t gpubase-soak-watch.XXXXXX)}
OUT=$(realpath -m "$OUT")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GB=${GPUBASE:-$BUILD/apps/gpubase/gpubase}
LIFE_S=${LIFE_S:-2.5}
RSS_GROWTH_MB=${RSS_GROWTH_MB:-8}
RSS_BASE_SHARE=${RSS_BASE_SHARE:-0.2}
export GPUBASE_HOME=$OUT/home
[[ -x $GB ]] || { echo "soak_watch: no $GB (build first, or set GPUBASE)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "soak_watch: needs python3" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT/forked" "$OUT/run.json" "$OUT/summary.json"

# The job: every 0.1 s a tick starts PER_TICK children (each `sleep LIFE_S`), CHILDREN in all,
# then waits for the last of them; it writes how many it started.
TICKS=$(awk -v s="$SECONDS_RUN" -v l="$LIFE_S" 'BEGIN {t = int((s - l) * 10); print (t < 1 ? 1 : t)}')
PER_TICK=$(((CHILDREN + TICKS - 1) / TICKS))
JOB='n=0
while [ "$n" -lt "$1" ]; do
  k=0
  while [ "$k" -lt "$2" ] && [ "$n" -lt "$1" ]; do sleep "$3" & k=$((k + 1)); n=$((n + 1)); done
  sleep 0.1
done
wait
echo "$n" >"$4"'

"$GB" watch -i 0.1 --view none --no-perf --json -o "$OUT/run.json" -- \
  /bin/sh -c "$JOB" job "$CHILDREN" "$PER_TICK" "$LIFE_S" "$OUT/forked" \
  >/dev/null 2>"$OUT/watch.err" &
PID=$!
T0=$(date +%s.%N)
: >"$OUT/rss.tsv"
while kill -0 "$PID" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status" 2>/dev/null)
  [[ -n $rss ]] && awk -v now="$(date +%s.%N)" -v t0="$T0" -v k="$rss" 'BEGIN {printf "%.1f\t%s\n", now - t0, k}' >>"$OUT/rss.tsv"
  sleep 1
done
wait "$PID"
RC=$?
WALL=$(awk -v now="$(date +%s.%N)" -v t0="$T0" 'BEGIN {printf "%.1f", now - t0}')

python3 - "$OUT" "$RC" "$CHILDREN" "$SECONDS_RUN" "$WALL" "$RSS_GROWTH_MB" "$RSS_BASE_SHARE" <<'EOF'
import json, sys
out = sys.argv[1]
rc, children = int(sys.argv[2]), int(sys.argv[3])
seconds, wall, growth_mb, base_share = (float(a) for a in sys.argv[4:8])
rss = [tuple(map(float, l.split("\t"))) for l in open(f"{out}/rss.tsv") if l.strip()]
s = {"seconds_asked": seconds, "wall_s": wall, "children": children, "exit": rc,
     "rss_samples": len(rss), "checks": {}}
failed = []
def check(name, ok, detail):
    s["checks"][name] = {"ok": bool(ok), "detail": detail}
    if not ok:
        failed.append(f"{name}: {detail}")
check("exit", rc == 0, f"watch exit {rc} (the job's)")
try:
    forked = int(open(f"{out}/forked").read())
except (OSError, ValueError):
    forked = None
s["forked"] = forked
check("every_child_forked", forked == children, f"the job started {forked} of {children}")
try:
    run = json.load(open(f"{out}/run.json"))
    keys = {r.get("key"): r for r in run.get("results", [])}
    s["samples"] = keys.get("watch.samples", {}).get("value")
    s["results"] = len(keys)
    check("report", len(keys) > 0, f"{len(keys)} results")
except (OSError, ValueError) as e:
    check("report", False, f"no readable run.json: {e}")
if rss:
    kib = [k for _, k in rss]
    base = kib[:max(1, int(len(kib) * base_share))]
    first, last = max(base), max(kib[-max(1, len(kib) // 5):])
    s["rss_kib"] = {"start": kib[0], "middle": kib[len(kib) // 2], "end": kib[-1],
                    "base_peak": first, "last_fifth_peak": last, "max": max(kib)}
    grew = (last - first) / 1024
    s["rss_growth_mb"] = round(grew, 2)
    check("rss_bounded", grew <= growth_mb, f"peak in the last fifth {last / 1024:.1f} MiB, in the first {base_share:.0%} {first / 1024:.1f} MiB: growth {grew:.2f} MiB (bound {growth_mb})")
else:
    check("rss_bounded", False, "no resident-memory sample")
s["ok"] = not failed
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
r = s.get("rss_kib", {})
print(f"soak_watch: {children} children over {wall:g} s: forked {forked}, {s.get('samples')} samples; "
      f"watch RSS start/middle/end {r.get('start', 0) / 1024:.1f}/{r.get('middle', 0) / 1024:.1f}/"
      f"{r.get('end', 0) / 1024:.1f} MiB (growth {s.get('rss_growth_mb')} MiB): "
      + ("ok" if not failed else "FAILED: " + "; ".join(failed)))
sys.exit(0 if not failed else 1)
EOF
