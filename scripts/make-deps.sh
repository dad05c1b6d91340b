#!/usr/bin/env bash
# scripts/make-deps.sh [folder]: for GPU hosts without a package registry. On a Debian/Ubuntu
# machine that has one, downloads gpubase's dependency packages and unpacks them into a folder
# (default .deps/) that travels with the source tree. scripts/build.sh then builds from it
# (CMAKE_PREFIX_PATH and an rpath point there); Fashion-MNIST lands in
# .deps/usr/share/datasets/fashion-mnist, where `gpubase amp` (run from the tree), the tests and
# scripts/gpu-check.sh find it. Nothing is installed system-wide.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/.deps}
PACKAGES=(libcli11-dev nlohmann-json3-dev libfmt-dev libfmt9 libgtest-dev
          libturbojpeg0-dev libturbojpeg0 libjpeg62-turbo-dev libjpeg62-turbo
          libsqlite3-dev libsqlite3-0 zlib1g-dev zlib1g dataset-fashion-mnist
          pybind11-dev)  # header-only; the Python headers come from the host's python3-dev
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
(cd "$WORK" && apt-get download "${PACKAGES[@]}")
mkdir -p "$DEST"
for deb in "$WORK"/*.deb; do dpkg -x "$deb" "$DEST"; done
# Debian's dev symlinks are absolute in a few packages; make them relative to the folder.
find "$DEST" -type l | while read -r link; do
  target=$(readlink "$link")
  if [[ $target == /* && -e $DEST$target ]]; then
    ln -sfr "$DEST$target" "$link"
  fi
done
echo "make-deps: unpacked ${#PACKAGES[@]} packages into $DEST"
