#!/usr/bin/env bash
# Set up Tingshuo on a fresh Debian/Ubuntu machine: system packages, then a virtualenv in .venv
# with the assistant and its development tools. Safe to run again; it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")"

need_apt=()
dpkg -s libasound2-dev >/dev/null 2>&1 || need_apt+=(libasound2-dev)   # pyalsaaudio builds against it
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
if ((${#need_apt[@]})); then
    echo "setup: installing ${need_apt[*]} with apt-get"
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "setup: Python 3.11 or newer is needed ($python is $("$python" --version 2>&1))" >&2; exit 1; }
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet --progress-bar on -e '.[dev]'
echo "setup: done. Try: .venv/bin/assistant vad ../shared/audio/real/greeting_10s.wav"
