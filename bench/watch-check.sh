#!/usr/bin/env bash
# bench/watch-check.sh [OUT]: validates `gpubase watch` on a GPU host in one go (~7 min):
#   1. builds, runs the CPU tests;
#   2. a real PyTorch ResNet-50 job (bench/watch_job.py) well-fed (8 loader workers, light
#      augmentation) and starved (1 worker, heavy augmentation), each watched by gpubase with
#      `nvidia-smi dmon -s u -d 1` running side by side; the reports, the dmon comparison
#      (bench/watch_vs_dmon.py) and a trimmed /proc capture of each run for the CPU tests;
#   3. Ctrl-C (SIGINT to gpubase): the job is stopped, the report still written, exit 130;
#   4. the sampler's overhead at 1 s and 100 ms intervals: its own CPU time (watch.sampler.cpu.pct)
#      and, from outside, /usr/bin/time's user+system over the wall time.
# Everything lands in OUT (default out/watch-check).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/out/watch-check}
mkdir -p "$OUT"
WORK=$(mktemp -d)
GB=$ROOT/build/apps/gpubase/gpubase
cd "$ROOT"

echo "== build"
start=$(date +%s)
bash scripts/build.sh build > "$WORK/build.log" 2>&1 || { tail -50 "$WORK/build.log"; exit 1; }
echo "built in $(( $(date +%s) - start )) s"
ctest --test-dir build -LE gpu -j "$(nproc)" --output-on-failure > "$WORK/ctest.txt" 2>&1
echo "cpu tests: $(grep -E 'tests passed|tests failed' "$WORK/ctest.txt")"

run_case() {
  local name=$1; shift
  nvidia-smi dmon -s u -d 1 -o DT > "$WORK/dmon-$name.txt" 2>&1 &
  local dmon=$!
  sleep 2
  "$GB" watch --view line --no-save --series "$WORK/$name.jsonl" --capture "$WORK/cap-$name" \
    --json -o "$WORK/$name.json" -- python3 bench/watch_job.py "$@" \
    > "$WORK/$name.job.txt" 2> "$WORK/$name.live.txt"
  echo "$name: gpubase exit $?"
  sleep 2
  kill "$dmon" 2>/dev/null; wait "$dmon" 2>/dev/null
  "$GB" report --no-color "$WORK/$name.json" > "$OUT/watch-$name.txt"
  cp "$WORK/$name.json" "$OUT/watch-$name.json"
  grep -E "img/s" "$WORK/$name.job.txt" | tail -3
  sed -n '/^Diagnosis/,/^Overall/p' "$OUT/watch-$name.txt"
}

echo "== well-fed and starved ResNet-50 jobs"
run_case fed --workers 8 --seconds 50
run_case starved --workers 1 --heavy-aug --seconds 50
python3 bench/watch_vs_dmon.py fed "$WORK/fed.jsonl" "$WORK/dmon-fed.txt" \
  starved "$WORK/starved.jsonl" "$WORK/dmon-starved.txt" --out "$WORK/dmon-compare.json"

# Six consecutive steps from the middle of each capture, for the CPU tests' fixtures.
for name in fed starved; do
  cap=$WORK/cap-$name
  steps=($(ls "$cap" | grep -E '^[0-9]{6}$' | sort))
  mid=$(( ${#steps[@]} / 2 ))
  mkdir -p "$WORK/fixtures/$name"
  cp "$cap/root_pids" "$WORK/fixtures/$name/"
  for s in "${steps[@]:$mid:6}"; do cp -r "$cap/$s" "$WORK/fixtures/$name/"; done
done
tar -C "$WORK/fixtures" -czf "$OUT/captures.tar.gz" .

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
  /usr/bin/time -f "%e %U %S" -o "$WORK/time-$interval.txt" \
    "$GB" watch -i "$interval" -t 30 --view none --no-save --json -o "$WORK/ovh-$interval.json" \
    -- sleep 60
  python3 - "$WORK/ovh-$interval.json" "$WORK/time-$interval.txt" "$interval" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
own = next(r for r in run["results"] if r["key"] == "watch.sampler.cpu.pct")
e, u, s = map(float, open(sys.argv[2]).read().split()[-3:])
print(f"interval {sys.argv[3]} s: sampler {own['value']:.3f} % of a core (own clock); "
      f"/usr/bin/time {100 * (u + s) / e:.3f} % over {e:.1f} s")
PY
}
overhead 1
overhead 0.1

cp "$WORK/dmon-compare.json" "$OUT/"
tar -C "$WORK" -czf "$OUT/raw.tar.gz" fed.jsonl starved.jsonl dmon-fed.txt dmon-starved.txt \
  fed.live.txt starved.live.txt fed.job.txt starved.job.txt ctest.txt ovh-1.json ovh-0.1.json
rm -rf "$WORK"
