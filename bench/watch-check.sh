#!/usr/bin/env bash
# bench/watch-check.sh [OUT]: validates `gpubase watch` on a GPU host in one go (~7 min):
#   1. builds, runs the CPU tests;
#   2. a real PyTorch ResNet-50 job (bench/watch_job.py) well-fed (FP32, batch 256, 8 loader
#      workers, light augmentation), starved (1 worker, heavy augmentation) and launch-bound
#      (BF16, batch 32), each watched by gpubase with
#      `nvidia-smi dmon -s u -d 1` running side by side; the reports, the dmon comparison
#      (bench/watch_vs_dmon.py) and a trimmed /proc capture of each run for the CPU tests;
#   3. Ctrl-C (SIGINT to gpubase): the job is stopped, the report still written, exit 130;
#   4. the sampler's overhead at 1 s and 100 ms intervals while a training job runs: gpubase's
#      utime+stime from /proc/<pid>/stat over 25 s, and its own figure (watch.sampler.cpu.pct).
# Everything lands in OUT (default out/watch-check). The watched jobs run from a scratch folder
# that links bench/, so the reports name the job, its series and its capture by relative paths.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$(realpath -m "${1:-$ROOT/out/watch-check}")
mkdir -p "$OUT"
WORK=$(mktemp -d)
cd "$ROOT"
BUILD=$(realpath -m "${BUILD:-build}")
GB=$BUILD/apps/gpubase/gpubase
ln -s "$ROOT/bench" "$WORK/bench"

echo "== build"
start=$(date +%s)
bash scripts/build.sh "$BUILD" > "$WORK/build.log" 2>&1 || { tail -50 "$WORK/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
# ONLY=fed,starved runs just those jobs (no tests, Ctrl-C or overhead parts): a short re-check.
ONLY=${ONLY:-}
if [[ -z $ONLY ]]; then
  ctest --test-dir "$BUILD" -LE gpu -j "$(nproc)" --output-on-failure > "$WORK/ctest.txt" 2>&1
  echo "cpu tests: $(grep -E 'tests passed|tests failed' "$WORK/ctest.txt")"
fi
wanted() { [[ -z $ONLY || ",$ONLY," == *",$1,"* ]]; }

run_case() {
  local name=$1; shift
  wanted "$name" || return 0
  nvidia-smi dmon -s u -d 1 -o DT > "$WORK/dmon-$name.txt" 2>&1 &
  local dmon=$!
  sleep 2
  (cd "$WORK" && "$GB" watch --view line --no-save --series "$name.jsonl" --capture "cap-$name" \
    --json -o "$name.json" -- python3 bench/watch_job.py "$@" \
    > "$name.job.txt" 2> "$name.live.txt")
  echo "$name: gpubase exit $?"
  sleep 2
  kill "$dmon" 2>/dev/null; wait "$dmon" 2>/dev/null
  "$GB" report --no-color "$WORK/$name.json" > "$OUT/watch-$name.txt"
  grep -E "img/s" "$WORK/$name.job.txt" | tail -3
  sed -n '/^Diagnosis/,/^Overall/p' "$OUT/watch-$name.txt"
}

echo "== well-fed and starved ResNet-50 jobs"
run_case fed --precision fp32 --workers 8 --batch 256 --seconds 40
run_case starved --workers 1 --heavy-aug --seconds 35
run_case smallbatch --precision bf16 --workers 8 --batch 32 --seconds 30
compare=()
for name in fed starved smallbatch; do
  [[ -s $WORK/$name.jsonl ]] && compare+=("$name" "$WORK/$name.jsonl" "$WORK/dmon-$name.txt")
done
python3 bench/watch_vs_dmon.py "${compare[@]}" --out "$WORK/dmon-compare.json"

# Six consecutive steps from the middle of each capture, for the CPU tests' fixtures.
for name in fed starved smallbatch; do
  cap=$WORK/cap-$name
  [[ -d $cap ]] || continue
  steps=($(ls "$cap" | grep -E '^[0-9]{6}$' | sort))
  mid=$(( ${#steps[@]} / 2 ))
  mkdir -p "$WORK/fixtures/$name"
  cp "$cap/root_pids" "$WORK/fixtures/$name/"
  for s in "${steps[@]:$mid:6}"; do cp -r "$cap/$s" "$WORK/fixtures/$name/"; done
done
tar -C "$WORK/fixtures" -czf "$OUT/captures.tar.gz" .

if [[ -z $ONLY ]]; then
echo "== Ctrl-C: SIGINT to gpubase after 20 s"
"$GB" watch --view none --no-save --json -o "$WORK/sigint.json" -- \
  python3 bench/watch_job.py --workers 4 --seconds 120 > "$WORK/sigint.job.txt" 2>&1 &
pid=$!
sleep 20
kill -INT "$pid"
wait "$pid"
rc=$?
echo "exit $rc (expected 130); report $(test -s "$WORK/sigint.json" && echo written || echo MISSING)"
python3 - "$WORK/sigint.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
print([f["value"] for f in run["environment"] if f["key"] == "watch.exit"])
PY

echo "== overhead"
overhead() {
  local interval=$1
  "$GB" watch -i "$interval" -t 40 --view none --no-save --json -o "$WORK/ovh-$interval.json" \
    --series "$WORK/ovh-$interval.series.csv" -- python3 bench/watch_job.py --workers 4 \
    --seconds 90 > /dev/null 2>&1 &
  local pid=$!
  sleep 8   # past the start-up (and the first 5 s of tree scans every interval)
  local a=$(awk '{print $14 + $15}' /proc/$pid/stat)
  sleep 25
  local b=$(awk '{print $14 + $15}' /proc/$pid/stat)
  wait "$pid"
  python3 - "$WORK/ovh-$interval.json" "$a" "$b" "$interval" "$(getconf CLK_TCK)" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
own = next(r for r in run["results"] if r["key"] == "watch.sampler.cpu.pct")
a, b, tck = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[5])
print(f"interval {sys.argv[4]} s: /proc/<gpubase>/stat utime+stime over 25 s of training: "
      f"{100 * (b - a) / tck / 25:.2f} % of a core; whole run by its own clock "
      f"{own['value']:.2f} % ({own['params'].get('cpu per sample', '')})")
PY
}
overhead 1
overhead 0.1
fi

cp "$WORK/dmon-compare.json" "$OUT/"
(cd "$WORK" && tar -czf "$OUT/raw.tar.gz" $(ls -d {fed,starved,smallbatch}.{json,jsonl,live.txt,job.txt} \
  dmon-*.txt ctest.txt ovh-* 2>/dev/null))
rm -rf "$WORK"
