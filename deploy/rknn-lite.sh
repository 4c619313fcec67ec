#!/usr/bin/env bash
# Install rknn-toolkit-lite2 from PyPI into a venv, at the version of the board's librknnrt.so (they
# must match: `assistant doctor` checks), or 2.3.2 — the version that worked on the RK3576 — when the
# runtime is not installed yet.
#
#   deploy/rknn-lite.sh .venv/bin/python          ($TINGSHUO_RKNNRT: the runtime, else /usr/lib/librknnrt.so)
#   deploy/rknn-lite.sh --print                   the version it would install
set -euo pipefail
die() { echo "rknn-lite: $*" >&2; exit 1; }
runtime=${TINGSHUO_RKNNRT:-/usr/lib/librknnrt.so}
version=2.3.2
if [ -f "$runtime" ]; then
    found=$(grep -a -o -m1 -E 'librknnrt version: [0-9]+\.[0-9]+\.[0-9]+' "$runtime" | head -1 || true)
    [ -z "$found" ] || version=${found##* }
fi
if [ "${1:-}" = --print ]; then echo "$version"; exit 0; fi
python=${1:?usage: rknn-lite.sh PYTHON | --print}
have=$("$python" -c 'import importlib.metadata as m; print(m.version("rknn-toolkit-lite2"))' 2>/dev/null || true)
[ "$have" = "$version" ] && exit 0
echo "setup: installing rknn-toolkit-lite2 $version from PyPI (librknnrt: $([ -f "$runtime" ] && echo "$runtime" || echo "not installed yet"))"
"$python" -m pip install --quiet "rknn-toolkit-lite2==$version" ||
    die "pip found no rknn-toolkit-lite2 $version for $("$python" --version 2>&1) on $(uname -m) (its wheels: aarch64, cp37-cp312)"
