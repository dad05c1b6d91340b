#!/usr/bin/env bash
# bench/lazy_cublaslt_check.sh OUTDIR: cuBLASLt opened on first use (gpu/cublaslt_lazy) checked on
# a GPU host, with the tree already built in $BUILD (default: build). Each part is logged under
# OUTDIR and timed; a failure in one never stops the others:
#   1. start-up: `gpubase --version` five times (wall, user, sys, peak RSS), that libcublasLt is
#      not a DT_NEEDED library of gpubase, and the dynamic linker's statistics (LD_DEBUG)
#   2. the GEMM GPU tests (gpu_tests: FillUniform, GemmLt*, GemmValidation, ProbeGemm, NnLinear):
#      every GEMM through the forwarders, checked against the CPU reference
#   3. gpubase probe --quick --only env,gemm --json: every precision's figure, and the cuBLASLt
#      version fact read through the forwarder
#   4. the same with GPUBASE_CUBLASLT_LIBRARY pointing at a missing file: every GEMM case must be
#      "skipped" with the loader's reason, the probe must still finish
# then prints a compact summary. About 45 s on an H200 (start-up ~2, tests ~20, probe ~15,
# missing library ~5). Changes no clock, power, persistence or MIG setting.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=$(realpath -m "${1:?usage: bench/lazy_cublaslt_check.sh OUTDIR}")
BUILD=$(realpath -m "${BUILD:-$ROOT/build}")
GPUBASE=$BUILD/apps/gpubase/gpubase
GPU_TESTS=$BUILD/tests/gpu_tests
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUTDIR"
HOME_DIR=$(mktemp -d)
trap 'rm -rf "$HOME_DIR"' EXIT
export GPUBASE_HOME=$HOME_DIR
cd "$ROOT" || exit 1
failed=()
part() {  # part NAME LIMIT_S CMD...: runs CMD with a time limit, logs to OUTDIR/NAME.log
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date +%T), limit ${limit} s)"
  local t0=$SECONDS rc=0
  timeout --signal=INT --kill-after=10 "$limit" "$@" >"$OUTDIR/$name.log" 2>&1 || rc=$?
  echo "   $name: exit $rc in $((SECONDS - t0)) s (log: $name.log)"
  echo "$name $rc $((SECONDS - t0))" >>"$OUTDIR/parts.txt"
  if [[ $rc -ne 0 ]]; then failed+=("$name(rc=$rc)"); tail -5 "$OUTDIR/$name.log"; fi
}
: >"$OUTDIR/parts.txt"
if [[ ! -x $GPUBASE ]]; then
  echo "no gpubase in $BUILD (build first: bash scripts/build.sh $BUILD)"; exit 1
fi

# 1. start-up
{
  echo "DT_NEEDED of gpubase:"
  readelf -d "$GPUBASE" | grep NEEDED
  for i in 1 2 3 4 5; do
    /usr/bin/time -f "version: wall %e s, user %U s, sys %S s, peak %M KB" "$GPUBASE" --version \
      2>&1 >/dev/null
  done
  echo "LD_DEBUG=statistics:"
  LD_DEBUG=statistics "$GPUBASE" --version 2>&1 >/dev/null
} >"$OUTDIR/startup.log" 2>&1
if readelf -d "$GPUBASE" | grep -q 'libcublasLt'; then
  failed+=("startup(libcublasLt is still DT_NEEDED)")
fi

# 2. GEMM GPU tests
if [[ -x $GPU_TESTS ]]; then
  part gemm_tests 40 "$GPU_TESTS" --gtest_brief=1 \
    --gtest_filter='FillUniform*:GemmLt*:GemmValidation*:ProbeGemm*:NnLinear*'
else
  echo "no gpu_tests in $BUILD: part 2 left out"; failed+=("gemm_tests(not built)")
fi

# 3. the probe's GEMM section with cuBLASLt found
part probe_gemm 40 "$GPUBASE" probe --quick --only env,gemm --json -o "$OUTDIR/probe_gemm.json"
# 4. the same with cuBLASLt missing: skipped with the reason, not a failed start
part probe_gemm_missing 20 env GPUBASE_CUBLASLT_LIBRARY=/nonexistent/libcublasLt.so.13 \
  "$GPUBASE" probe --quick --only env,gemm --json \
  -o "$OUTDIR/probe_gemm_missing.json"

echo
echo "== summary"
grep '^version:' "$OUTDIR/startup.log" | sed 's/^/  /'
grep -E 'total startup time|time needed for relocation' "$OUTDIR/startup.log" | sed 's/^ *[0-9]*: */  ld.so: /'
python3 - "$OUTDIR" <<'PY' || failed+=("summary")
import json, os, sys
out = sys.argv[1]
ok = True
def load(name):
    p = os.path.join(out, name)
    try:
        return json.load(open(p))
    except Exception as e:
        print("  %s: unreadable (%s)" % (name, e)); return None
run = load("probe_gemm.json")
if run:
    facts = {f["key"]: f.get("value") for f in run.get("environment", [])}
    print("  cuBLASLt fact: %s" % facts.get("cublaslt.version"))
    for r in run["results"]:
        if r["key"].startswith("probe.gemm.") and ".sustained." not in r["key"]:
            v = r.get("value")
            print("  %-36s %-8s %s" % (r["key"], r["status"], "%.1f %s" % (v, r["unit"]) if v is not None else r.get("reason", "")))
    if not any(r["key"].startswith("probe.gemm.") and r.get("value") for r in run["results"]):
        print("  FAIL: no GEMM figure with cuBLASLt present"); ok = False
miss = load("probe_gemm_missing.json")
if miss:
    gemm = [r for r in miss["results"] if r["key"].startswith("probe.gemm.")]
    reasons = {r.get("reason", "") for r in gemm}
    print("  missing library: %d GEMM results, statuses %s" % (len(gemm), sorted({r["status"] for r in gemm})))
    for reason in sorted(reasons)[:2]:
        print("    reason: %s" % reason)
    if not gemm or any(r["status"] != "skipped" or "not found" not in r.get("reason", "") for r in gemm):
        print("  FAIL: GEMM cases not all skipped with the loader's reason"); ok = False
sys.exit(0 if ok else 1)
PY
if [[ ${#failed[@]} -gt 0 ]]; then echo "FAILED: ${failed[*]}"; exit 1; fi
echo "all parts passed"
