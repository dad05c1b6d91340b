#!/usr/bin/env bash
# scripts/test.sh [build-dir]: builds everything (CUDA code included) and runs the CPU tests.
# GPU tests carry the label "gpu" and run with scripts/gpu-check.sh on a GPU host.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
"$ROOT/scripts/build.sh" "$BUILD"
ctest --test-dir "$BUILD" -LE gpu --output-on-failure -j "$(nproc)"
