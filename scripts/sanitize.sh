#!/usr/bin/env bash
# scripts/sanitize.sh [asan|tsan] [build-dir]: the CPU code under a sanitizer (no CUDA: the
# cpu-only configuration), built with clang-16 into build-dir (default build-asan / build-tsan).
#   asan  AddressSanitizer + UndefinedBehaviorSanitizer (leaks included), every CPU test.
#   tsan  ThreadSanitizer on the tests of the threaded code: the loader's worker pool, the input
#         pipeline's CPU half and the CPU/GPU split, the signal handling and watchdog, watch
#         (data/augment.cpp builds its one portable version under TSan: ifunc resolvers run
#         before TSan's runtime starts).
# Any report fails the run (halt_on_error). GTEST_FILTER narrows either run.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODE=${1:-asan}
BUILD=${2:-$ROOT/build-$MODE}
CXX=${SANITIZE_CXX:-clang++-16}
CC=${SANITIZE_CC:-clang-16}
case $MODE in
  asan) FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
        FILTER=${GTEST_FILTER:-*} ;;
  # The two Signals tests that fork a child running a stuck suite are left out: TSan refuses a
  # thread started after a fork of a threaded process (the child's watchdog).
  tsan) FLAGS="-fsanitize=thread"
        FILTER=${GTEST_FILTER:-Loader*:PipelineSplit*:PipelineProcess*:Signals*:WatchRun*:WatchSignals*:ChildProcess*:-Signals.AStuckRun*:Signals.ASecondSignal*} ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan] [build-dir]" >&2; exit 2 ;;
esac
command -v "$CXX" >/dev/null || { echo "sanitize: $CXX not found (apt-get install clang-16)" >&2; exit 2; }
ARGS=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUBASE_WITH_CUDA=OFF
      "-DCMAKE_C_COMPILER=$CC" "-DCMAKE_CXX_COMPILER=$CXX"
      "-DCMAKE_CXX_FLAGS=$FLAGS -fno-omit-frame-pointer"
      "-DCMAKE_EXE_LINKER_FLAGS=$FLAGS" "-DCMAKE_SHARED_LINKER_FLAGS=$FLAGS")
[[ -d $ROOT/.deps/usr ]] && ARGS+=("-DCMAKE_PREFIX_PATH=$ROOT/.deps/usr")
command -v ninja >/dev/null && [[ ! -f $BUILD/CMakeCache.txt ]] && ARGS+=(-G Ninja)
cmake -S "$ROOT" -B "$BUILD" "${ARGS[@]}" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target unit_tests
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
"$BUILD/tests/unit_tests" --gtest_brief=1 --gtest_filter="$FILTER"
echo "sanitize: $MODE clean ($FILTER)"
