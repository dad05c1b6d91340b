#!/usr/bin/env bash
# scripts/build-wheel.sh [build-dir] [out-dir]: packs the Python module that scripts/build.sh
# built (<build>/python/gpubase) into a wheel for `pip install`, offline: no build isolation, no
# download, nothing but the interpreter the module was built for (its zipfile and hashlib). The
# wheel is tagged for that interpreter and this platform (e.g. cp312-cp312-linux_x86_64); it links
# the host's libjpeg-turbo (or the .deps/ folder's, by rpath) as the build did.
#   bash scripts/build.sh && bash scripts/build-wheel.sh
#   python3 -m pip install --no-index build/wheel/gpubase-*.whl
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
OUT=${2:-$BUILD/wheel}
PKG=$BUILD/python/gpubase
if ! compgen -G "$PKG/_gpubase*.so" >/dev/null; then
  echo "build-wheel: no $PKG/_gpubase*.so: build first (scripts/build.sh; needs python3-dev and" \
       "pybind11-dev)" >&2
  exit 2
fi
PYTHON=$(sed -n 's/^GPUBASE_PYTHON_EXECUTABLE:INTERNAL=//p' "$BUILD/CMakeCache.txt")
VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$BUILD/CMakeCache.txt")
mkdir -p "$OUT"
"$PYTHON" - "$PKG" "$OUT" "${VERSION:-0.0.0}" <<'EOF'
import base64, hashlib, os, sys, sysconfig, zipfile

pkg, out, version = sys.argv[1:4]
so = [f for f in os.listdir(pkg) if f.startswith("_gpubase") and f.endswith(".so")]
abi = so[0].split(".")[1]  # cpython-312-x86_64-linux-gnu
py = "cp%d%d" % sys.version_info[:2]
if not abi.startswith("cpython-%d%d" % sys.version_info[:2]):
    sys.exit("build-wheel: %s was not built for this interpreter (%s)" % (so[0], sys.executable))
plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
tag = "%s-%s-%s" % (py, py, plat)
dist = "gpubase-%s.dist-info" % version
files = {}
for name in sorted(os.listdir(pkg)):
    if name.endswith(".py") or name in so:
        with open(os.path.join(pkg, name), "rb") as f:
            files["gpubase/" + name] = f.read()
files[dist + "/METADATA"] = (
    "Metadata-Version: 2.1\nName: gpubase\nVersion: %s\n"
    "Summary: gpubase's input pipeline as a PyTorch data source (DLPack batches on the GPU)\n"
    "Requires-Python: ==%d.%d.*\nRequires-Dist: numpy\n" % ((version,) + sys.version_info[:2])
).encode()
files[dist + "/WHEEL"] = (
    "Wheel-Version: 1.0\nGenerator: gpubase build-wheel.sh\nRoot-Is-Purelib: false\nTag: %s\n" % tag
).encode()
files[dist + "/top_level.txt"] = b"gpubase\n"
record = []
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append("%s,sha256=%s,%d" % (name, digest, len(data)))
record.append(dist + "/RECORD,,")
files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
wheel = os.path.join(out, "gpubase-%s-%s.whl" % (version, tag))
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
    for name, data in files.items():
        info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, data)
print(wheel)
EOF
