#!/usr/bin/env bash
# The pipecat peer's own virtualenv, for benchmarks/turn.py (never Tingshuo's: the assistant does not
# depend on pipecat). Run it after ./setup.sh, from the repository:
#
#   benchmarks/pipecat-venv.sh            # ~/.cache/tingshuo/pipecat-venv (or $TINGSHUO_PIPECAT_VENV)
#
# It installs pipecat-ai 1.14.0 with the extras a local bot on Tingshuo's models needs (silero VAD and
# Smart Turn v3 come inside it; faster-whisper; the OpenAI client; kokoro-onnx with espeak-ng's data)
# and llama-cpp-python's OpenAI-compatible server, built for this CPU by deploy/llama-build.sh (the
# wheel ./setup.sh built is reused: seconds, not a compile). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${TINGSHUO_PIPECAT_VENV:-$HOME/.cache/tingshuo/pipecat-venv}
python=${PYTHON:-python3}
die() { echo "pipecat-venv: $*" >&2; exit 1; }

[ -x "$venv/bin/python" ] || "$python" -m venv "$venv" || die "$python -m venv $venv failed"
"$venv/bin/python" -m pip install --quiet --upgrade pip
echo "pipecat-venv: llama-cpp-python for this CPU"
bash deploy/llama-build.sh "$venv/bin/python"
echo "pipecat-venv: pipecat-ai 1.14.0 and llama-cpp-python's server"
"$venv/bin/python" -m pip install --quiet --progress-bar on "pipecat-ai[silero,whisper,openai,kokoro]==1.14.0" \
    "llama-cpp-python[server]==0.3.36" || die "pip install of pipecat-ai failed"
"$venv/bin/python" -c "import pipecat, llama_cpp.server, kokoro_onnx, faster_whisper" ||
    die "the venv at $venv cannot import pipecat's pieces"
echo "pipecat-venv: done ($venv). benchmarks/turn.py runs the peer beside Tingshuo now."
