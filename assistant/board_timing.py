"""How long each model call takes on an RK3576 board: the table a predicted replay is paced by.

The defaults are published figures where there are any, and derived ones (said so) where there
are none. Every number is a PREDICTION input, not a measurement of ours on a board:

- LLM: RKLLM 1.3.0, Qwen2 0.5B w4a16 on the RK3576: first token 342 ms, 32.6 tokens/s (the published
  RK3576 figures in /work/shared/MEASURED.md; the prompt length behind the 342 ms is not stated). The
  board's configuration loads a w8a8 build, for which no figure is published beside these.
- TTS: Matcha (the s64 acoustic model) 293.6 ms and Vocos 54.7 ms per NPU call, the published build
  that benchmarks/npu_schedule.py replays; its one CPU step, the ISTFT of a window, ≈ 50 ms on an A72
  (the same build, README "Measure on the board"). One call of each per window of the acoustic
  model: 31 phone tokens (64 positions with blanks), ≈ 2 tokens per Chinese character.
- ASR, Smart Turn, VAD, KWS run on the A72 CPUs, and nothing is published for them there. They are
  DERIVED: this machine's measured time (AMD EPYC, 2 threads; /work/shared/MEASURED.md) times a CPU
  factor of 14.6, the published build's Kokoro int8 RTF on the A72s (3.6–4.0, deploy/config.rk3576.toml)
  over Kokoro int8's RTF here (≈ 0.26: decoder 6.1–6.5 ms per 25 ms frame, the front 3–4 % more).
  Whisper base (CTranslate2 int8) took 0.15–0.19 s over a 10 s encoder window here: 0.017 s per
  window-second, × 14.6 = 0.248. Smart Turn v3.2 took ≈ 25 ms a call here: × 14.6 = 0.365 s. The VAD
  (RTF 0.02) and KWS (0.04) desktop-core figures of deploy/config.rk3576.toml, × 14.6.
  The factor is one model's ratio carried over to others (ONNX Runtime and CTranslate2 are both
  int8 matrix code, but not the same code): the least certain line of the table.

A board's own numbers replace them: ``benchmarks/models.py --json FILE`` run on the board writes
the fields it measured, in this table's names; a TOML or JSON file with any subset of the fields
works the same (``rk3576:FILE``).
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from assistant.config import ConfigError

CPU_FACTOR = 14.6  # A72 (RK3576) over this AMD EPYC, from Kokoro int8: 3.8 / 0.26 (see the docstring)
WINDOW_TOKENS = 31  # phone tokens one Matcha s64 call holds: (64 - 1) // 2 with blanks
TOKENS_PER_CHAR = 2  # a Mandarin syllable is an initial and a toned final in the lexicon
NOTES = ("machine", "note")  # keys a timing file may carry besides the fields


@dataclass(frozen=True)
class Timings:
    """Seconds per model call on the board (or per second of audio, where the name says so)."""

    asr_s_per_window_s: float = round(0.017 * CPU_FACTOR, 3)
    """Whisper's time per second of its encoder window (the utterance + 1 s, at least ``asr.window_s``)."""
    turn_s: float = round(0.025 * CPU_FACTOR, 3)
    """One Smart Turn call."""
    llm_first_token_s: float = 0.342
    """From the request to the LLM's first token (prompt evaluation included)."""
    llm_tokens_per_s: float = 32.6
    """The LLM's tokens per second after the first."""
    tts_acoustic_s: float = 0.2936
    """One acoustic-model call (one window of text) on an NPU core."""
    tts_vocoder_s: float = 0.0547
    """One vocoder call (one window's mel) on an NPU core."""
    tts_cpu_s: float = 0.05
    """The CPU's part of one window (the ISTFT)."""
    vad_rtf: float = round(0.02 * CPU_FACTOR, 3)
    """The VAD's compute per second of audio, in the audio pump (not paced: see board_pace)."""
    kws_rtf: float = round(0.04 * CPU_FACTOR, 3)
    """The keyword spotter's, likewise."""
    source: str = "published RK3576 figures; ASR, Smart Turn, VAD, KWS derived (EPYC × 14.6)"
    """Where the numbers came from, for every printed prediction."""

    def asr_s(self, audio_s: float, min_window_s: float) -> float:
        """One transcription of ``audio_s`` seconds with Whisper's window at least ``min_window_s``."""
        return self.asr_s_per_window_s * min(30.0, max(min_window_s, audio_s + 1.0))

    def llm_token_s(self) -> float:
        return 1.0 / self.llm_tokens_per_s


def tts_windows(text: str) -> int:
    """Acoustic-model calls the board's TTS makes for ``text`` (at least one)."""
    tokens = sum(TOKENS_PER_CHAR if "\u4e00" <= ch <= "\u9fff" else 1 for ch in text if not ch.isspace())
    return max(1, math.ceil(tokens / WINDOW_TOKENS))


def load(spec: str) -> Timings:
    """``rk3576`` (the defaults above) or ``rk3576:FILE`` (a TOML or JSON file's fields over them)."""
    board, _, path = spec.partition(":")
    if board != "rk3576":
        raise ConfigError(f"--predict {spec!r}: the board must be rk3576 (rk3576 or rk3576:FILE)")
    return from_file(Path(path)) if path else Timings()


def from_file(path: Path) -> Timings:
    """The defaults with ``path``'s fields over them; a ConfigError naming the file and the field if bad."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"timing file {path}: {exc.strerror or exc}") from None
    try:
        data: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"timing file {path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: "
                          f"{exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"timing file {path}: expected a table of fields, got {type(data).__name__}")
    known = {f.name for f in fields(Timings)} - {"source"}
    unknown = sorted(set(data) - known - set(NOTES))
    if unknown:
        raise ConfigError(f"timing file {path}: unknown field {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    values: dict[str, float] = {}
    for name in sorted(known & set(data)):
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1000:
            raise ConfigError(f"timing file {path}: {name} must be a number of seconds in 0..1000, not {value!r}")
        values[name] = float(value)
    if values.get("llm_tokens_per_s", 1.0) <= 0:
        raise ConfigError(f"timing file {path}: llm_tokens_per_s must be above 0")
    machine = data.get("machine", "")
    where = f"{path.name}" + (f" ({machine})" if machine else "")
    return replace(Timings(), **values, source=f"{where}: {', '.join(values) or 'no fields'}; the rest defaults")
