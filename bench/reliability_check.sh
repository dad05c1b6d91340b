#!/usr/bin/env bash
# bench/reliability_check.sh OUTDIR: the CPU/GPU split under signals, on a GPU host with the tree
# built in $BUILD (default build), in about 90 s:
#   1. a synthetic ImageNet-like set (4,000 images, 100 classes; `gpubase dataset synth`);
#   2. `gpubase loader --data SET --workers 1,16 --seconds 5 --decode both` under a 60 s limit:
#      it must end by itself (exit 0); if it stops making progress, the limit sends SIGTERM and
#      the run must end within the stop timeout (GPUBASE_STOP_TIMEOUT_S=10) with exit 130 and
#      its report; a run that outlives that too is killed and recorded as deaf to signals, with
#      every thread's kernel wait channel and stack from /proc for the diagnosis;
#   3. the same loader run with SIGTERM sent 8 s in (mid CPU sweep): exit 130 and a report.
# Writes OUTDIR/summary.json, each run's JSON report and stderr. Sets NCCL_NVLS_ENABLE=0 and
# changes no clock, power or MIG setting.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:?usage: bench/reliability_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GB=$BUILD/apps/gpubase/gpubase
export NCCL_NVLS_ENABLE=0 GPUBASE_STOP_TIMEOUT_S=10 GPUBASE_HOME="$OUT/home"
mkdir -p "$OUT"
SET=$OUT/synth-4000
[[ -x $GB ]] || { echo "reliability_check: no $GB (build first)" >&2; exit 2; }

"$GB" dataset synth --out "$SET" --images 4000 --classes 100 -q >/dev/null 2>"$OUT/synth.err" ||
  { echo "synth failed: $(tail -1 "$OUT/synth.err")"; exit 1; }

# run NAME LIMIT_S TERM_AT_S ARGS...: the loader with SIGTERM at TERM_AT_S (0: only at LIMIT_S);
# SIGKILL 15 s after the SIGTERM. Prints a JSON object for the summary.
run() {
  local name=$1 limit=$2 term_at=$3; shift 3
  local t0=$(date +%s%3N) sent_term="" deaf=false
  "$GB" loader --json -o "$OUT/$name.json" "$@" 2>"$OUT/$name.err" &
  local pid=$!
  local deadline=$(( (term_at != 0 ? term_at : limit) * 1000 ))
  while kill -0 "$pid" 2>/dev/null; do
    local ms=$(( $(date +%s%3N) - t0 ))
    if [[ -z $sent_term ]] && (( ms >= deadline )); then
      kill -TERM "$pid"; sent_term=$ms
    fi
    if [[ -n $sent_term ]] && (( ms >= sent_term + 15000 )); then
      deaf=true
      for t in /proc/$pid/task/*; do
        echo "== $(cat "$t/comm" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
        cat "$t/stack" 2>/dev/null
      done > "$OUT/$name.stuck-threads.txt"
      kill -KILL "$pid"
    fi
    sleep 0.2
  done
  wait "$pid"; local rc=$?
  local took=$(( $(date +%s%3N) - t0 ))
  local report=false
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$OUT/$name.json" 2>/dev/null && report=true
  printf '{"name":"%s","exit":%d,"ms":%d,"sigterm_at_ms":%s,"deaf_to_sigterm":%s,"report":%s}' \
    "$name" "$rc" "$took" "${sent_term:-null}" "$deaf" "$report"
  echo "$name: exit $rc after $((took / 1000)) s (SIGTERM at ${sent_term:-no} ms, deaf $deaf, report $report)" >&2
}

a=$(run split-hang 60 0 --data "$SET" --workers 1,16 --seconds 5 --decode both)
b=$(run split-sigterm 40 8 --data "$SET" --workers 1,16 --seconds 5 --decode both)
echo "{\"runs\":[$a,$b]}" > "$OUT/summary.json"
echo "reliability_check: $OUT/summary.json"
grep -q '"deaf_to_sigterm":true' "$OUT/summary.json" && exit 1
exit 0
