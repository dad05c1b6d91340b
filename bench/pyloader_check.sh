#!/usr/bin/env bash
# bench/pyloader_check.sh OUTDIR: `import gpubase` on a GPU host whose tree is built in $BUILD
# (default build; scripts/build.sh builds the module when pybind11 and the Python headers are
# there): the GPU tests of the binding (tests/python/test_loader_gpu.py), then
# bench/pyloader_vs_torch.py -- ResNet-50 and MobileNetV2 training fed by the torch DataLoader
# vs gpubase.Loader (cpu, both), and the loader alone from Python vs the C++ `gpubase loader` --
# on a synthetic ImageNet-like ImageFolder. About 3-4 minutes on an H200 host with 16 cores.
# Changes no clock, power, persistence or MIG setting.
# Writes OUTDIR/gpu-tests.log, OUTDIR/pyloader.json, OUTDIR/bench.log; prints a summary.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: bench/pyloader_check.sh OUTDIR}
BUILD=${BUILD:-$ROOT/build}
[[ $BUILD = /* ]] || BUILD=$ROOT/$BUILD
export NCCL_NVLS_ENABLE=0
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export GPUBASE_BIN=$BUILD/apps/gpubase/gpubase
PYTHON=$(sed -n 's/^GPUBASE_PYTHON_EXECUTABLE:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
PYTHON=${PYTHON:-python3}
mkdir -p "$OUT"
if ! compgen -G "$BUILD/python/gpubase/_gpubase*.so" >/dev/null; then
  echo "pyloader-check: skipped: no Python module in $BUILD/python/gpubase (pybind11 or the" \
       "Python headers were not found at configure time)" | tee "$OUT/summary.txt"
  exit 1
fi
start=$(date +%s)

echo "== GPU tests of the binding" >&2
(cd "$ROOT/tests/python" && timeout 240 "$PYTHON" -m unittest -v test_loader_gpu) \
  >"$OUT/gpu-tests.log" 2>&1
tests_rc=$?
tail -4 "$OUT/gpu-tests.log" >&2

echo "== synthetic ImageFolder (4,096 ImageNet-like JPEGs, 100 classes)" >&2
DATA=$OUT/set
if [[ ! -d $DATA ]]; then
  "$GPUBASE_BIN" dataset synth --out "$DATA" --images 4096 --classes 100 >"$OUT/synth.log" 2>&1
fi

echo "== training loop and loader alone" >&2
timeout 300 "$PYTHON" "$ROOT/bench/pyloader_vs_torch.py" --data "$DATA" --gpubase "$GPUBASE_BIN" \
  --out "$OUT/pyloader.json" >"$OUT/bench-table.md" 2>"$OUT/bench.log"
bench_rc=$?
rm -rf "$DATA"

{
  echo "pyloader-check: GPU tests $([[ $tests_rc == 0 ]] && echo passed || echo "FAILED (rc $tests_rc)")," \
       "bench rc $bench_rc, $(( $(date +%s) - start )) s"
  grep -E "^Ran|^OK|^FAILED" "$OUT/gpu-tests.log"
  cat "$OUT/bench-table.md"
} | tee "$OUT/summary.txt"
[[ $tests_rc == 0 && $bench_rc == 0 ]]
