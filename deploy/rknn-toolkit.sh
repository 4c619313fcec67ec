#!/usr/bin/env bash
# Install Rockchip's rknn-toolkit2 2.5.0 from PyPI into its own venv, for `assistant npu build` on an
# x86_64 PC. It pins numpy <= 1.26.4, onnx <= 1.18 and torch <= 2.4.0, which must never enter the
# assistant's own .venv, so it gets a venv of its own:
#
#   deploy/rknn-toolkit.sh [PYTHON]      PYTHON: a Python 3.10-3.12 (default: the first found on PATH)
#   deploy/rknn-toolkit.sh --print       the venv's python (installed or not)
#
# Where: $TINGSHUO_RKNN_TOOLKIT, else ${XDG_CACHE_HOME:-~/.cache}/tingshuo/rknn-toolkit2; the venv is
# its venv/. The wheels are downloaded first (pip's own progress bar), then installed from that folder,
# so the download size is measured; the folder is removed afterwards. The measured cost (download,
# disk, minutes) goes to install.json beside the venv.
#
# torch: PyPI's only Linux x86_64 torch wheels are the CUDA builds, which pull ~2.5 GB of nvidia-*
# wheels (the CPU-only builds live on PyTorch's own index, not on PyPI). The toolkit imports torch,
# so it is installed for real; 2.4.0 is the newest the toolkit accepts.
set -euo pipefail
die() { echo "rknn-toolkit: $*" >&2; exit 1; }

TOOLKIT=2.5.0
TORCH=2.4.0
root=${TINGSHUO_RKNN_TOOLKIT:-${XDG_CACHE_HOME:-$HOME/.cache}/tingshuo/rknn-toolkit2}
venv=$root/venv
if [ "${1:-}" = --print ]; then echo "$venv/bin/python"; exit 0; fi

[ "$(uname -m)" = x86_64 ] || die "rknn-toolkit2 $TOOLKIT has wheels for x86_64 only (this is $(uname -m)); build on a PC"
python=${1:-}
if [ -z "$python" ]; then
    for candidate in python3.12 python3.11 python3.10; do
        if command -v "$candidate" >/dev/null && "$candidate" -c 'import venv' 2>/dev/null; then
            python=$candidate; break
        fi
    done
fi
[ -n "$python" ] || die "no Python 3.10-3.12 found (rknn-toolkit2 $TOOLKIT has wheels for cp310-cp312); pass one: $0 /path/to/python3.11"
minor=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")') ||
    die "$python does not run"
case "$minor" in 3.10|3.11|3.12) ;; *) die "$python is Python $minor; rknn-toolkit2 $TOOLKIT needs 3.10-3.12" ;; esac

if [ -x "$venv/bin/python" ] && "$venv/bin/python" - <<EOF 2>/dev/null
import importlib.metadata as m, sys
sys.exit(0 if m.version("rknn-toolkit2") == "$TOOLKIT" and m.version("torch").startswith("$TORCH") else 1)
EOF
then
    echo "rknn-toolkit: rknn-toolkit2 $TOOLKIT with torch $TORCH is already in $venv"
    exit 0
fi

mkdir -p "$root"
wheels=$root/wheels
trap 'rm -rf "$wheels"' EXIT
start=$(date +%s)
echo "rknn-toolkit: creating $venv with $python (Python $minor)"
"$python" -m venv --clear "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade "pip>=24"
echo "rknn-toolkit: downloading rknn-toolkit2 $TOOLKIT, torch $TORCH (the CUDA build: PyPI has no CPU-only one) and their dependencies"
"$venv/bin/python" -m pip download --progress-bar on --dest "$wheels" \
    "rknn-toolkit2==$TOOLKIT" "torch==$TORCH" "numpy==1.26.4" ||
    die "pip could not download rknn-toolkit2 $TOOLKIT and its dependencies from PyPI"
downloaded=$(du -sb "$wheels" | cut -f1)
count=$(find "$wheels" -name '*.whl' | wc -l)
echo "rknn-toolkit: downloaded $count wheels, $((downloaded / 1000000)) MB; installing"
"$venv/bin/python" -m pip install --no-index --find-links "$wheels" \
    "rknn-toolkit2==$TOOLKIT" "torch==$TORCH" "numpy==1.26.4" || die "pip could not install the downloaded wheels"
"$venv/bin/python" -c 'from rknn.api import RKNN' || die "rknn-toolkit2 installed but does not import"
disk=$(du -sb "$venv" | cut -f1)
seconds=$(( $(date +%s) - start ))
cat > "$root/install.json" <<EOF
{"rknn_toolkit2": "$TOOLKIT", "torch": "$TORCH", "python": "$minor", "wheels": $count,
 "download_bytes": $downloaded, "venv_bytes": $disk, "seconds": $seconds}
EOF
echo "rknn-toolkit: done in ${seconds} s: $((downloaded / 1000000)) MB downloaded, $((disk / 1000000)) MB on disk ($venv)"
