#!/usr/bin/env bash
# scripts/build.sh [build-dir]: configures and builds gpubase (Release, CUDA for sm_90 unless
# CUDA_ARCH is set, e.g. CUDA_ARCH="80;90"). Uses a dependency folder (.deps/, made by
# scripts/make-deps.sh) when one is present, so the same command works on air-gapped hosts.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
ARGS=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-90}")
if [[ -d $ROOT/.deps/usr ]]; then
  ARGS+=("-DCMAKE_PREFIX_PATH=$ROOT/.deps/usr")
  ARGS+=("-DCMAKE_BUILD_RPATH=$ROOT/.deps/usr/lib/x86_64-linux-gnu")
fi
command -v ninja >/dev/null && ARGS+=(-G Ninja)
[[ -f $BUILD/CMakeCache.txt ]] && ARGS=(-DCMAKE_BUILD_TYPE=Release)
cmake -S "$ROOT" -B "$BUILD" "${ARGS[@]}"
cmake --build "$BUILD" -j "$(nproc)"
