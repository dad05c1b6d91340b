#!/usr/bin/env bash
# scripts/install-deps.sh: installs gpubase's build dependencies from Debian/Ubuntu packages, and
# Fashion-MNIST (dataset-fashion-mnist, in /usr/share/datasets/fashion-mnist) for `gpubase amp`
# and the IDX tests; chromium for the HTML report tests.
# The CUDA toolkit (nvcc, cuBLASLt, cuDNN) is expected under /usr/local/cuda already.
# For hosts without a package registry: scripts/make-deps.sh on a machine that has one, then
# scripts/build.sh on the host (it builds from the .deps/ folder when present).
set -euo pipefail
PACKAGES=(cmake g++ libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libturbojpeg0-dev
          zlib1g-dev dataset-fashion-mnist
          python3-dev pybind11-dev python3-numpy python3-setuptools python3-wheel)
# The fleet end-to-end test (tests/fleet/slurm_mpi_test.sh) starts a local Slurm and runs OpenMPI.
PACKAGES+=(slurm-wlm munge openmpi-bin)
# The HTML report tests render pages in headless Chromium (skipped without it).
# The run history is an SQLite database.
PACKAGES+=(chromium libsqlite3-dev)
# The Prometheus test (tests/prometheus/scrape_test.sh) scrapes `watch --prometheus` with curl
# and checks the text with promtool (in Debian's prometheus package); skipped without them.
PACKAGES+=(curl prometheus)
# scripts/fuzz.sh (libFuzzer) and scripts/sanitize.sh (ASan, UBSan, TSan) build with clang-16.
PACKAGES+=(clang-16 libfuzzer-16-dev)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all packages present"
  exit 0
fi
SUDO=""
[[ $(id -u) -ne 0 ]] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
# python3-torch (CPU build) lets the Python tests check torch tensors too; not every release or
# architecture has it, so it is tried, never required.
if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-torch ||
    echo "install-deps: python3-torch not installed; the Python tests use numpy only"
fi

