#!/usr/bin/env bash
# scripts/gpu-check.sh [out-dir]: the one script for a GPU host. Builds (Release, sm_90 unless
# CUDA_ARCH is set), runs the GPU tests (ctest -L gpu), then the probe (full and --quick) and
# the side-by-side PyTorch comparison. SKIP_PROBE=1 leaves out the probe parts. Leaves JSON results in out-dir (default $OUT or ./out).
# Budget: under 10 minutes on an H200 (build ~3 min, tests ~1 min, probes ~75 s, torch ~60 s).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${1:-${OUT:-$ROOT/out}}
BUILD=${BUILD:-$ROOT/build-gpu}
mkdir -p "$OUTDIR"
status=0
step() { echo; echo "== $* =="; }

step build
"$ROOT/scripts/build.sh" "$BUILD" >"$OUTDIR/build.log" 2>&1 || { tail -50 "$OUTDIR/build.log"; exit 1; }
grep -E "warning" "$OUTDIR/build.log" | head -20
GPUBASE=$BUILD/apps/gpubase/gpubase

step "GPU tests"
ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 300 \
  --output-junit "$OUTDIR/gpu-tests.xml" 2>&1 | tail -40 || status=1

if [[ -z ${SKIP_PROBE:-} ]]; then
step "probe (full)"
TIMEFORMAT="probe wall %R s"
time "$GPUBASE" probe --json -o "$OUTDIR/probe.json" || status=1
"$GPUBASE" report "$OUTDIR/probe.json" --no-color >"$OUTDIR/probe.txt"
cat "$OUTDIR/probe.txt"

step "probe --quick"
TIMEFORMAT="probe --quick wall %R s"
time "$GPUBASE" probe --quick --quiet --json -o "$OUTDIR/probe-quick.json" || status=1

step "Ctrl-C during a run keeps what was measured"
timeout --preserve-status -s INT 6 "$GPUBASE" probe --json -o "$OUTDIR/interrupted.json"
rc=$?
echo "exit code after SIGINT: $rc (expected 130)"
[[ $rc == 130 ]] || status=1
grep -c '"key": "probe\.' "$OUTDIR/interrupted.json" | sed 's/^/results kept: /'

step "baseline --quick (saved under a scratch GPUBASE_HOME)"
GPUBASE_HOME=$(mktemp -d) "$GPUBASE" baseline --quick --quiet --no-color | tail -25
[[ ${PIPESTATUS[0]} -le 1 ]] || status=1

fi  # SKIP_PROBE

step "loader: worker sweep on the built-in synthetic set, then the data-wait share on the GPU"
GPUBASE_HOME=$(mktemp -d) "$GPUBASE" loader --seconds 3 --no-color --json -o "$OUTDIR/loader.json" \
  && "$GPUBASE" report --no-color "$OUTDIR/loader.json" | sed -n '/^Loader/,/^Baseline/p' \
  || status=1

if command -v python3 >/dev/null && python3 -c "import torch" 2>/dev/null; then
  if [[ -z ${SKIP_PROBE:-} ]]; then
    step "side by side with PyTorch"
    python3 "$ROOT/bench/probe_vs_torch.py" --gpubase "$OUTDIR/probe.json" \
      --out "$OUTDIR/bench-vs-torch.json" || status=1
  fi
  step "loader side by side with the torch DataLoader (2,000 synthetic ImageNet-like JPEGs)"
  synth=$(mktemp -d)/synth
  "$GPUBASE" dataset synth --out "$synth" --images 2000 --classes 20 -q \
    && python3 "$ROOT/bench/loader_vs_torch.py" --gpubase "$GPUBASE" --data "$synth" \
         --workers "1,$(nproc)" --seconds 8 --out "$OUTDIR/loader-vs-torch.json" || status=1
fi
exit $status
