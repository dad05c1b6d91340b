#!/usr/bin/env bash
# bench/soak_loader.sh SECONDS [OUTDIR]: the CPU loader for SECONDS over an ImageFolder in which
# exactly 1 % of the files are bad, checking that nothing leaks and every bad file is counted.
#   1. `gpubase dataset synth` makes IMAGES (default 1,000) JPEGs in 10 classes; every 100th
#      file (sorted by path) is then damaged, in turn: cut before its scan data (truncated),
#      a valid start-of-image marker followed by garbage (not a JPEG), a frame header of zero
#      height (corrupt). Each is refused by the first decode that reads it, whatever the crop.
#   2. `gpubase loader --data SET --decode cpu --workers WORKERS (default 1) --batch BATCH
#      (default 256) --seconds SECONDS --json`, with the default bad-sample policy (substitute
#      the next good sample, count it); the process's resident memory (VmRSS) is sampled every
#      RSS_EVERY_S (default 10) seconds.
#   3. Checks: the run ends by itself with exit 0; `bad_samples` (distinct files found bad)
#      equals the number of damaged files; `substituted` (timed positions filled by a
#      substitute) equals the epochs timed x the damaged files, give or take the two partial
#      epochs at the window's ends; the peak of resident memory in the last fifth of the run is
#      at most RSS_GROWTH_MB (default 8) above its peak in the first RSS_BASE_SHARE (default
#      0.2) of it (the slots, the workers' scratch and the known-bad bitmap are all in place
#      after the first epoch; a short run needs a larger share to be past the start-up).
# Writes OUTDIR (default a temporary folder) /run.json, rss.tsv (seconds, KiB), stderr.log and
# summary.json; prints a summary line; exit 0 when every check holds, 1 otherwise, 2 on setup
# errors. Environment: GPUBASE (the binary; default $BUILD/apps/gpubase/gpubase, BUILD default
# build), IMAGES, SCALE (synth's image scale, default 0.5), BATCH, WORKERS, RSS_EVERY_S,
# RSS_GROWTH_MB, RSS_BASE_SHARE. CPU only.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_RUN=${1:?usage: bench/soak_loader.sh SECONDS [OUTDIR]}
OUT=${2:-$(mktemp -d -t gpubase-soak-loader.XXXXXX)}
OUT=$(realpath -m "$OUT")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GB=${GPUBASE:-$BUILD/apps/gpubase/gpubase}
IMAGES=${IMAGES:-1000}
SCALE=${SCALE:-0.5}
BATCH=${BATCH:-256}
WORKERS=${WORKERS:-1}
RSS_EVERY_S=${RSS_EVERY_S:-10}
RSS_GROWTH_MB=${RSS_GROWTH_MB:-8}
RSS_BASE_SHARE=${RSS_BASE_SHARE:-0.2}
export GPUBASE_HOME=$OUT/home
[[ -x $GB ]] || { echo "soak_loader: no $GB (build first, or set GPUBASE)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "soak_loader: needs python3" >&2; exit 2; }
((IMAGES >= 100 && IMAGES % 100 == 0)) || { echo "soak_loader: IMAGES must be a multiple of 100" >&2; exit 2; }
mkdir -p "$OUT"
SET=$OUT/set
rm -rf "$SET" "$OUT/run.json" "$OUT/summary.json"

"$GB" dataset synth --out "$SET" --images "$IMAGES" --classes 10 --scale "$SCALE" -q \
  >/dev/null 2>"$OUT/synth.err" || { echo "soak_loader: synth failed: $(tail -1 "$OUT/synth.err")" >&2; exit 2; }

# Damage every 100th file; print how many.
BAD=$(python3 - "$SET" <<'EOF'
import pathlib, sys
files = sorted(p for p in pathlib.Path(sys.argv[1]).rglob("*") if p.is_file())
bad = 0
for i, p in enumerate(files):
    if i % 100 != 50:
        continue
    b = bytearray(p.read_bytes())
    kind = bad % 3
    if kind == 0:    # truncated: cut before the scan data (start-of-scan marker FF DA)
        b = b[:b.index(b"\xff\xda")]
    elif kind == 1:  # not a JPEG past its start-of-image marker
        b = b[:4] + bytes([0x5A]) * (len(b) - 4)
    else:            # a frame of zero height (SOF0/SOF2: FF C0/C2, length, precision, height)
        sof = min(i for i in (b.find(b"\xff\xc0"), b.find(b"\xff\xc2")) if i >= 0)
        b[sof + 5] = 0
        b[sof + 6] = 0
    p.write_bytes(bytes(b))
    bad += 1
print(bad)
EOF
) || { echo "soak_loader: could not damage the set" >&2; exit 2; }

"$GB" loader --data "$SET" --decode cpu --workers "$WORKERS" --batch "$BATCH" --seconds "$SECONDS_RUN" --json \
  -o "$OUT/run.json" 2>"$OUT/stderr.log" &
PID=$!
T0=$(date +%s.%N)
: >"$OUT/rss.tsv"
while kill -0 "$PID" 2>/dev/null; do
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$PID/status" 2>/dev/null)
  [[ -n $rss ]] && awk -v now="$(date +%s.%N)" -v t0="$T0" -v k="$rss" 'BEGIN {printf "%.1f\t%s\n", now - t0, k}' >>"$OUT/rss.tsv"
  sleep "$RSS_EVERY_S"
done
wait "$PID"
RC=$?

python3 - "$OUT" "$RC" "$IMAGES" "$BAD" "$WORKERS" "$SECONDS_RUN" "$RSS_GROWTH_MB" "$RSS_BASE_SHARE" <<'EOF'
import json, sys
out = sys.argv[1]
rc, images, bad, workers = (int(a) for a in sys.argv[2:6])
seconds, growth_mb, base_share = (float(a) for a in sys.argv[6:9])
rss = [tuple(map(float, l.split("\t"))) for l in open(f"{out}/rss.tsv") if l.strip()]
s = {"seconds": seconds, "workers": workers, "images": images, "bad_files": bad, "exit": rc,
     "rss_samples": len(rss), "checks": {}}
failed = []
def check(name, ok, detail):
    s["checks"][name] = {"ok": bool(ok), "detail": detail}
    if not ok:
        failed.append(f"{name}: {detail}")
check("exit", rc == 0, f"exit {rc}")
point = None
try:
    run = json.load(open(f"{out}/run.json"))
    for r in run.get("results", []):
        if r.get("key") == f"loader.cpu.w{workers}.images_per_s":
            point = r
except (OSError, ValueError) as e:
    check("report", False, f"no readable run.json: {e}")
if point is not None:
    params = {p["name"]: p.get("value") for p in point.get("params", [])}
    timed, found, subst = params.get("images_timed"), params.get("bad_samples"), params.get("substituted")
    epochs = timed / images if timed else 0
    s.update({"images_per_s": point.get("value"), "images_timed": timed, "epochs_timed": round(epochs, 2),
              "bad_samples": found, "substituted": subst})
    check("every_bad_file_counted", found == bad, f"bad_samples {found}, damaged files {bad}")
    expected = epochs * bad
    check("substituted_once_per_epoch", subst is not None and abs(subst - expected) <= 2 * bad,
          f"substituted {subst}, epochs timed {epochs:.2f} x {bad} bad = {expected:.1f} (+- {2 * bad})")
elif "report" not in s["checks"]:
    check("report", False, f"no loader.cpu.w{workers}.images_per_s result")
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
print(f"soak_loader: {seconds:g} s, {workers} worker(s), {images} images ({bad} bad): "
      f"{s.get('images_timed')} images timed ({s.get('epochs_timed')} epochs), bad_samples {s.get('bad_samples')}, "
      f"substituted {s.get('substituted')}; RSS start/middle/end {r.get('start', 0) / 1024:.1f}/"
      f"{r.get('middle', 0) / 1024:.1f}/{r.get('end', 0) / 1024:.1f} MiB (growth {s.get('rss_growth_mb')} MiB): "
      + ("ok" if not failed else "FAILED: " + "; ".join(failed)))
sys.exit(0 if not failed else 1)
EOF
