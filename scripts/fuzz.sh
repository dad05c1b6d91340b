#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [build-dir]: fuzzes every parser a user's file reaches (tests/fuzz:
# gbpack, tar, idx, jpeg, run_json) with libFuzzer, SECONDS (default 60) of wall time each.
# Builds the CPU code with clang-16, AddressSanitizer and UndefinedBehaviorSanitizer (no CUDA)
# into build-dir (default build-fuzz), writes the seed corpora (fuzz_seeds: valid files and
# their edge-value variants), keeps the growing corpus in build-dir/corpus/<target>, and keeps
# any input that crashes, leaks, hangs (over 10 s) or allocates over 1 GiB. Exit 1 when one was
# found. Prints, per target, the inputs run, the CPU time spent and the crashes kept.
# Environment:
#   FUZZ_JOBS=N     targets fuzzed at once (default 1; each target is one process on one core)
#   FUZZ_KEEP=tree  (default) a kept input is copied into tests/fuzz/regressions/<target>/,
#                   where the unit tests replay it (FuzzRegressions.*)
#   FUZZ_KEEP=build a kept input stays in build-dir/crashes/<target>/ and is printed as base64
#                   (CI, where the tree is a throwaway clone: docs/reliability.md says how to
#                   add it to tests/fuzz/regressions)
# Needs clang-16 and libfuzzer-16-dev (scripts/install-deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${1:-60}
BUILD=$(realpath -m "${2:-$ROOT/build-fuzz}")
JOBS=${FUZZ_JOBS:-1}
KEEP=${FUZZ_KEEP:-tree}
TARGETS=(gbpack tar idx jpeg run_json)
CC=${FUZZ_CC:-clang-16}
CXX=${FUZZ_CXX:-clang++-16}
[[ $KEEP == tree || $KEEP == build ]] || { echo "fuzz: FUZZ_KEEP is tree or build" >&2; exit 2; }
command -v "$CXX" >/dev/null || { echo "fuzz: $CXX not found (apt-get install clang-16 libfuzzer-16-dev)" >&2; exit 2; }

FLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all"
ARGS=(-DCMAKE_BUILD_TYPE=Debug -DGPUBASE_WITH_CUDA=OFF -DGPUBASE_FUZZ=ON
      "-DCMAKE_C_COMPILER=$CC" "-DCMAKE_CXX_COMPILER=$CXX" "-DCMAKE_CXX_FLAGS=$FLAGS"
      "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined")
[[ -d $ROOT/.deps/usr ]] && ARGS+=("-DCMAKE_PREFIX_PATH=$ROOT/.deps/usr")
command -v ninja >/dev/null && [[ ! -f $BUILD/CMakeCache.txt ]] && ARGS+=(-G Ninja)
cmake -S "$ROOT" -B "$BUILD" "${ARGS[@]}" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target fuzz_seeds "${TARGETS[@]/#/fuzz_}"

SEEDS=$BUILD/seeds
rm -rf "$SEEDS"
"$BUILD/tests/fuzz/fuzz_seeds" "$SEEDS"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz_one TARGET: runs it for SECONDS_EACH; its exit code and CPU seconds go to
# build-dir/fuzz-TARGET.rc and .time, its output to .log.
fuzz_one() {
  local t=$1 log=$BUILD/fuzz-$1.log
  mkdir -p "$BUILD/corpus/$t" "$BUILD/artifacts/$t"
  local rc=0
  TIMEFORMAT="%U %S"
  { time "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="$BUILD/artifacts/$t/" "$BUILD/corpus/$t" "$SEEDS/$t" >"$log" 2>&1 ||
      rc=$? ; } 2>"$log.time"
  echo "$rc" >"$log.rc"
}

for t in "${TARGETS[@]}"; do
  rm -f "$BUILD/fuzz-$t.log.rc"
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n || true; done
  fuzz_one "$t" &
done
wait

found=0
summary=()
for t in "${TARGETS[@]}"; do
  log=$BUILD/fuzz-$t.log
  rc=$(cat "$log.rc" 2>/dev/null || echo 1)
  read -r user sys <"$log.time" || { user=0; sys=0; }
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  files=$(find "$BUILD/corpus/$t" -type f | wc -l)
  kept=0
  for a in "$BUILD/artifacts/$t"/*; do
    [[ -f $a ]] || continue
    name=$(basename "$a")
    if [[ $KEEP == tree ]]; then
      mkdir -p "$ROOT/tests/fuzz/regressions/$t"
      cp "$a" "$ROOT/tests/fuzz/regressions/$t/"
      echo "fuzz: $t: kept $name in tests/fuzz/regressions/$t (log: $log)" >&2
    else
      mkdir -p "$BUILD/crashes/$t"
      cp "$a" "$BUILD/crashes/$t/"
      echo "fuzz: $t: $name kept in $BUILD/crashes/$t (log: $log); its bytes, base64:" >&2
      base64 -w 76 "$a" >&2
      echo "fuzz: to replay it in the unit tests: base64 -d > tests/fuzz/regressions/$t/$name" >&2
      tail -n 40 "$log" >&2
    fi
    rm -f "$a"
    kept=$((kept + 1))
  done
  if ((rc != 0 || kept > 0)); then found=1; fi
  summary+=("$(printf '%-9s %10s inputs  %7.1f s CPU  corpus %5d  crashes %d  (exit %d)' \
    "$t" "$runs" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" "$files" "$kept" "$rc")")
done
echo "fuzz: ${SECONDS_EACH} s per target, ${JOBS} at once"
printf '%s\n' "${summary[@]}"
exit "$found"
