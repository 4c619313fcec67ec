"""Scripted stand-ins for the models a test is not about. They live here only and never ship."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from assistant.audio.protocols import Samples
from assistant.clock import SampleClock

ROOT = Path(__file__).resolve().parent.parent


class ScriptedAsr:
    """Answers each utterance with the next scripted text; keeps what it was given.

    Audio that extends the previous call's audio is the same utterance heard again (a speculative
    transcription, then the final one): it gets the same text, and ``heard`` keeps the longer audio.
    """

    sample_rate = 16000

    def __init__(self, *texts: str, fail: Exception | None = None) -> None:
        self.texts = list(texts)
        self.fail = fail
        self.heard: list[Samples] = []
        self.calls = 0
        self._last_text = ""

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None: ...

    async def transcribe(self, samples: Samples) -> str:
        self.calls += 1
        again = bool(self.heard) and 0 < len(self.heard[-1]) <= len(samples) and np.array_equal(
            samples[:len(self.heard[-1])], self.heard[-1])
        if again:
            self.heard[-1] = samples
        else:
            self.heard.append(samples)
        if not again:  # taken at the call: a speculation cancelled at the await below still heard it
            self._last_text = self.texts.pop(0) if self.texts else ""
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        return self._last_text


class WeighingAsr(ScriptedAsr):
    """A ``ScriptedAsr`` with a rescoring model's likelihood per character for some texts (``Weighing``)."""

    def __init__(self, *texts: str, likely: dict[str, float]) -> None:
        super().__init__(*texts)
        self.likely = likely
        self.weighed: list[str] = []

    async def char_logprob(self, text: str) -> float | None:
        self.weighed.append(text)
        return self.likely.get(text)


class ScriptedLlm:
    """Streams scripted replies a few characters at a time; ``hang`` never answers."""

    def __init__(self, *replies: str, hang: bool = False) -> None:
        self.replies = list(replies)
        self.hang = hang
        self.asked: list[str] = []
        self.stops = 0
        self.cancelled = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None:
        self.stops += 1

    async def reply(self, text: str) -> AsyncIterator[str]:
        self.asked.append(text)
        try:
            if self.hang:
                await asyncio.Event().wait()
            answer = self.replies.pop(0) if self.replies else "好的。"
            for i in range(0, len(answer), 3):
                await asyncio.sleep(0)
                yield answer[i:i + 3]
        except asyncio.CancelledError:
            self.cancelled += 1
            raise


class ToneTts:
    """'Speaks' a quiet tone lasting ``seconds_per_char`` per character, in 0.5 s pieces."""

    def __init__(self, sample_rate: int = 24000, seconds_per_char: float = 0.25,
                 source: Callable[[int], Samples] | None = None) -> None:
        self.sample_rate = sample_rate
        self.seconds_per_char = seconds_per_char
        self.source = source
        self.stops = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None:
        self.stops += 1

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        n = int(len(text) * self.seconds_per_char * self.sample_rate)
        t = np.arange(n) / self.sample_rate
        audio = self.source(n) if self.source else (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
        piece = self.sample_rate // 2
        for i in range(0, n, piece):
            await asyncio.sleep(0)
            yield audio[i:i + piece]


class ScriptedTurn:
    """A turn model that always answers ``p`` (or raises ``error``), and keeps how much it heard. With a
    ``clock``, each call takes ``seconds`` of that session time (a model slowed by a loaded CPU)."""

    sample_rate = 16000

    def __init__(self, p: float, error: Exception | None = None, *, clock: SampleClock | None = None,
                 seconds: float = 0.0) -> None:
        self.p = p
        self.error = error
        self.clock = clock
        self.seconds = seconds
        self.heard: list[int] = []
        self.answered = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    async def complete(self, samples: Samples) -> float:
        self.heard.append(len(samples))
        if self.clock is not None:
            started = self.clock.now()
            while self.clock.now() < started + self.seconds:  # noqa: ASYNC110 - the sample clock has no event
                await asyncio.sleep(0)
        if self.error is not None:
            raise self.error
        self.answered += 1
        return self.p


class ScriptedKws:
    """Hears ``keyword`` when the stream passes each of ``at_s`` seconds."""

    sample_rate = 16000

    def __init__(self, keyword: str, *at_s: float) -> None:
        self.keyword = keyword
        self.at = [int(s * self.sample_rate) for s in at_s]
        self.fed = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def reset(self) -> None: ...

    async def accept(self, samples: Samples) -> str | None:
        before, self.fed = self.fed, self.fed + len(samples)
        if any(before < a <= self.fed for a in self.at):
            return self.keyword
        return None


class PacedTts:
    """A TTS whose compute takes session time: each piece is ready ``rtf`` x its audio length after
    the call began, on the replay's sample clock — so overlap and gaps are deterministic."""

    def __init__(self, clock: SampleClock, rtf: float, sample_rate: int = 24000,
                 seconds_per_char: float = 0.25) -> None:
        self.clock = clock
        self.rtf = rtf
        self.sample_rate = sample_rate
        self.seconds_per_char = seconds_per_char
        self.calls: list[tuple[str, float, float]] = []  # (text, started, finished) in session seconds
        self.stops = 0

    def load(self) -> None: ...

    def close(self) -> None: ...

    def stop(self) -> None:
        self.stops += 1

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        started = self.clock.now()
        seconds = len(text) * self.seconds_per_char
        while self.clock.now() < started + seconds * self.rtf:  # noqa: ASYNC110 - the sample clock has no event
            await asyncio.sleep(0)
        self.calls.append((text, started, self.clock.now()))
        t = np.arange(int(seconds * self.sample_rate)) / self.sample_rate
        yield (0.1 * np.sin(2 * np.pi * 200 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32)


class FixedClock:
    """The tools' and the responder's ``now``: a fixed moment (a Sunday afternoon in Shanghai) that a
    test moves by hand (``clock.t += timedelta(...)``)."""

    def __init__(self, t: datetime | None = None) -> None:
        self.t = t or datetime(2026, 11, 29, 14, 0, tzinfo=ZoneInfo("Asia/Shanghai"))

    def __call__(self) -> datetime:
        return self.t


@contextmanager
def configured_responder(folder: Path, reply: str, *overrides: str) -> Iterator[tuple[Any, ScriptedLlm, FixedClock]]:
    """The responder of the repository's config.toml (with ``overrides``), real tools on a store in
    ``folder``, a fixed clock, and an LLM that always says ``reply``."""
    from assistant.config import load
    from assistant.respond import for_config
    from assistant.tools.answers import Tools
    from assistant.tools.store import Store

    store = Store(folder / "t.sqlite3")
    clock = FixedClock()
    llm = ScriptedLlm(reply)
    try:
        yield for_config(load(ROOT / "config.toml", list(overrides)), llm, Tools(store, clock), now=clock), llm, clock
    finally:
        store.close()
