#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [build-dir]: fuzzes every parser a user's file reaches (tests/fuzz:
# gbpack, tar, idx, jpeg, run_json) with libFuzzer, SECONDS (default 60) of wall time each.
# Builds the CPU code with clang-16, AddressSanitizer and UndefinedBehaviorSanitizer (no CUDA)
# into build-dir (default build-fuzz), writes the seed corpora (fuzz_seeds: valid files and
# their edge-value variants), keeps the growing corpus in build-dir/corpus/<target>, and copies
# any input that crashes, leaks, hangs (over 10 s) or allocates over 1 GiB into
# tests/fuzz/regressions/<target>/, where the unit tests replay it. Exit 1 when one was found.
# Needs clang-16 and libfuzzer-16-dev (scripts/install-deps.sh).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SECONDS_EACH=${1:-60}
BUILD=${2:-$ROOT/build-fuzz}
TARGETS=(gbpack tar idx jpeg run_json)
CC=${FUZZ_CC:-clang-16}
CXX=${FUZZ_CXX:-clang++-16}
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
found=0
summary=()
for t in "${TARGETS[@]}"; do
  corpus=$BUILD/corpus/$t
  artifacts=$BUILD/artifacts/$t
  mkdir -p "$corpus" "$artifacts"
  log=$BUILD/fuzz-$t.log
  set +e
  TIMEFORMAT="%U %S"
  { time "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -timeout=10 \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$corpus" "$SEEDS/$t" >"$log" 2>&1 ; } 2>"$log.time"
  rc=$?
  set -e
  read -r user sys <"$log.time"
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  files=$(find "$corpus" -type f | wc -l)
  kept=0
  for a in "$artifacts"/*; do
    [[ -f $a ]] || continue
    mkdir -p "$ROOT/tests/fuzz/regressions/$t"
    cp "$a" "$ROOT/tests/fuzz/regressions/$t/"
    echo "fuzz: $t: kept $(basename "$a") in tests/fuzz/regressions/$t (log: $log)" >&2
    rm -f "$a"
    kept=$((kept + 1))
  done
  if ((rc != 0 || kept > 0)); then found=1; fi
  summary+=("$(printf '%-9s %10s inputs  %7.1f s CPU  corpus %5d  crashes %d  (exit %d)' \
    "$t" "$runs" "$(awk -v u="$user" -v s="$sys" 'BEGIN{print u+s}')" "$files" "$kept" "$rc")")
done
echo "fuzz: ${SECONDS_EACH} s per target"
printf '%s\n' "${summary[@]}"
exit "$found"
