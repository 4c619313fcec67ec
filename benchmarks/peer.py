"""The pipecat peer of ``benchmarks/turn.py``: its spec, its run in pipecat's own venv, its numbers.

``benchmarks/pipecat_peer.py`` is the bot (it runs in the venv that ``benchmarks/pipecat-venv.sh``
makes, ``~/.cache/tingshuo/pipecat-venv`` or ``$TINGSHUO_PIPECAT_PYTHON``); this side, in Tingshuo's
venv, names the same model files the configuration uses, the same recordings and the same end of
speech, and reads back one JSON line per recording: when the turn ended, the transcript came, the LLM
wrote its first text and the first reply audio came, in seconds from the start of the recording.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from assistant import backends, config
from models.chat import prompt
from models.manifest import by_name

ROOT = Path(__file__).resolve().parent.parent
BOT = ROOT / "benchmarks" / "pipecat_peer.py"
VENV_PYTHON = Path("~/.cache/tingshuo/pipecat-venv/bin/python").expanduser()
TIMEOUT_S = 180  # a recording of the benchmark takes about 15 s; the first one loads the models


def python() -> Path | None:
    """The pipecat venv's Python, or None where it is not installed."""
    found = Path(os.environ.get("TINGSHUO_PIPECAT_PYTHON", VENV_PYTHON))
    return found if found.is_file() else None


def spec(cfg: config.Config, clips: list[tuple[str, Path, float]], lead_s: float, tail_s: float) -> dict[str, Any]:
    """What the bot is given: the recordings (name, file, end of speech in the padded stream) and the
    configuration's own Whisper, LLM GGUF, Kokoro file, voice, system prompt and reply length."""
    assets = backends.assets_for(cfg)
    gguf = by_name(cfg.llm.model).files[0]
    return {
        "clips": [{"name": name, "path": str(path), "speech_end": round(end, 3)} for name, path, end in clips],
        "lead_s": lead_s, "tail_s": tail_s,
        "whisper": str(assets.folder(cfg.asr.model)),
        "llm": str(assets.path(cfg.llm.model, gguf.name)),
        "kokoro": str(assets.path("kokoro-v1.0-int8", "kokoro-v1.0.int8.onnx")),
        "voice": cfg.tts.voice,
        "voice_file": str(assets.path("kokoro-zh-voices", f"{cfg.tts.voice}.bin")),
        "system_prompt": prompt(cfg.llm.system_prompt)[0],
        "max_tokens": cfg.llm.max_tokens,
        "threads": cfg.llm.threads,
    }


def run(python_: Path, given: dict[str, Any]) -> list[dict[str, Any]]:
    """The bot over the spec's recordings, one record each (in order)."""
    with tempfile.TemporaryDirectory(prefix="peer-") as folder:
        path = Path(folder) / "spec.json"
        path.write_text(json.dumps(given, ensure_ascii=False), encoding="utf-8")
        # the bot as pipecat runs it: without the assistant's own numpy setting (assistant/__init__.py)
        env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_NUM_THREADS"}
        done = subprocess.run([str(python_), str(BOT), str(path)], capture_output=True, text=True, env=env,
                              timeout=TIMEOUT_S * len(given["clips"]), check=False)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise RuntimeError(f"the pipecat peer ended with {done.returncode}: {tail[0]}")
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def parts(record: dict[str, Any]) -> dict[str, float | None]:
    """The bot's turn in turn.py's columns, from the last voiced sample. Its transcript can come
    before the turn ends (pipecat transcribes at the VAD's stop and waits for Smart Turn), so the
    ASR column may be negative; its first text is the LLM's first token (pipecat speaks whole
    sentences), and its TTS column runs from that token to the first audio. Each is the first after
    the end of speech (a request with a pause in it may have been answered in part before)."""
    end = record["speech_end"]

    def first(key: str, after: float | None) -> float | None:
        """The first time ``key`` happened at or after ``after``."""
        if after is None:
            return None
        return next((float(t) for t in record.get(key, []) if t >= after), None)

    turn_end = first("turn_end", end - 0.05)  # as turn.py's endpoint: the one after the end of speech
    heard = first("transcript_at", end - 0.05)
    text = first("llm_text", turn_end)
    audio = first("first_audio", turn_end)

    def span(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else round(b - a, 3)

    started = None if turn_end is None or heard is None else max(turn_end, heard)
    return {"endpoint_wait": span(end, turn_end), "asr_after_endpoint": span(turn_end, heard),
            "llm_first_clause": span(started, text), "tts_first_audio": span(text, audio),
            "total": span(end, audio)}


def say(message: str) -> None:
    print(f"turn.py: {message}", file=sys.stderr)
