"""Whisper (CTranslate2, via faster-whisper) speech recognition for Mandarin.

Decoding is pinned to Chinese with beam 1, and an initial prompt in Simplified Chinese keeps the
output from drifting into Traditional characters; what still slips through is converted with
OpenCC (t2s). Segments are pulled one at a time on the backend's thread, so ``stop()`` lands
between segments.

``hotwords`` (the command vocabulary) go into Whisper's prompt as context, so 待办 is more likely
than 待半. A transcript Whisper itself doubts — mean token log-probability below
``min_avg_logprob``, or a no-speech probability above ``max_no_speech_prob`` — is returned empty,
so the assistant asks again instead of answering something that was not said.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import structlog

from models.protocols import ModelError, Samples
from models.worker import Worker

log = structlog.get_logger("asr")

PROMPT = "以下是普通话的句子。"


class WhisperAsr:
    """The ``Asr`` protocol on a CTranslate2 Whisper model folder (model.bin, config, tokenizer)."""

    sample_rate = 16000

    def __init__(self, model_dir: Path, *, threads: int = 2, compute_type: str = "int8", beam_size: int = 1,
                 language: str = "zh", initial_prompt: str = PROMPT, hotwords: str = "",
                 min_avg_logprob: float = float("-inf"), max_no_speech_prob: float = 1.0) -> None:
        self.model_dir = model_dir
        self.threads = threads
        self.compute_type = compute_type
        self.beam_size = beam_size
        self.language = language
        self.initial_prompt = initial_prompt
        self.hotwords = hotwords
        self.min_avg_logprob = min_avg_logprob
        self.max_no_speech_prob = max_no_speech_prob
        self.last_scores: tuple[float, float] | None = None  # (mean log-prob, no-speech prob) of the last run
        self._worker = Worker("asr")
        self._model: Any = None
        self._t2s: Any = None
        self._stop = threading.Event()

    def load(self) -> None:
        self._worker.call(self._load)

    def _load(self) -> None:
        try:
            import opencc
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise ModelError(f"asr: faster-whisper or opencc is not installed ({exc})") from None
        try:
            self._model = WhisperModel(str(self.model_dir), device="cpu", compute_type=self.compute_type,
                                       cpu_threads=self.threads, local_files_only=True)
        except Exception as exc:  # CTranslate2 raises RuntimeError/ValueError on a bad folder
            raise ModelError(f"asr: cannot load Whisper from {self.model_dir}: {exc}") from None
        self._t2s = opencc.OpenCC("t2s")

    def close(self) -> None:
        self._worker.close()
        self._model = None

    def stop(self) -> None:
        self._stop.set()

    async def transcribe(self, samples: Samples) -> str:
        self._stop.clear()
        return await self._worker.run(self._transcribe, samples)

    def _transcribe(self, samples: Samples) -> str:
        if self._model is None:
            raise ModelError("asr: used before load()")
        segments, _ = self._model.transcribe(
            samples, language=self.language, beam_size=self.beam_size, initial_prompt=self.initial_prompt,
            condition_on_previous_text=False, vad_filter=False, without_timestamps=True,
            hotwords=self.hotwords or None,
            temperature=0.0)  # no sampling fallback: the same audio always gives the same text (replays)
        texts, logprobs, no_speech = [], [], 0.0
        for segment in segments:  # decoding happens as the generator is advanced
            texts.append(segment.text.strip())
            logprobs.append(segment.avg_logprob)
            no_speech = max(no_speech, segment.no_speech_prob)
            if self._stop.is_set():
                break
        text = str(self._t2s.convert("".join(texts)))
        mean = sum(logprobs) / len(logprobs) if logprobs else 0.0
        self.last_scores = (mean, no_speech)
        if _echoes_prompt(text, self.initial_prompt) or _echoes_hotwords(text, self.hotwords):
            return ""
        if text and (mean < self.min_avg_logprob or no_speech > self.max_no_speech_prob):
            log.info("transcript too uncertain: asking again", text=text, avg_logprob=round(mean, 2),
                     no_speech_prob=round(no_speech, 2))
            return ""
        return text


def _echoes_prompt(text: str, prompt: str) -> bool:
    """Whisper's known failure on audio it cannot make out: it "hears" its own initial prompt."""
    core = "".join(ch for ch in text if ch.isalnum())
    return bool(core) and bool(prompt) and core in "".join(ch for ch in prompt if ch.isalnum())


def _echoes_hotwords(text: str, hotwords: str) -> bool:
    """Whisper reciting its hot-word list rather than a word of it (提醒待办闹钟 from a cough)."""
    core = "".join(ch for ch in text if ch.isalnum())
    words = hotwords.split()
    return bool(core) and core in "".join(words) and not any(core in word for word in words)
