"""One small Protocol per model kind.

Every backend declares its sample rate, loads and closes its model, and can stop work in flight.
Audio is float32 mono in [-1, 1]. Streaming calls are pulled one piece at a time from the
backend's worker thread, so cancellation lands between pieces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from models.cores import CoreGate

Samples = npt.NDArray[np.float32]


class ModelError(RuntimeError):
    """A model that is missing, corrupt or failed; the message names the file and the step."""


class Vad(Protocol):
    """Voice activity: how likely is speech in each window of audio?"""

    sample_rate: int
    window_samples: int

    def load(self) -> None: ...

    def close(self) -> None: ...

    def reset(self) -> None:
        """Forget the stream so far (a new, unrelated stream follows)."""
        ...

    async def accept(self, samples: Samples) -> list[float]:
        """Feed audio of any length; one speech probability (0..1) per complete window, in order."""
        ...


class Kws(Protocol):
    """Keyword spotting on the live stream."""

    sample_rate: int

    def load(self) -> None: ...

    def close(self) -> None: ...

    def reset(self) -> None: ...

    async def accept(self, samples: Samples) -> str | None:
        """Feed audio; the keyword heard in it, if any."""
        ...


class Turn(Protocol):
    """End of turn by ear: has the speaker finished, or paused mid-sentence?"""

    sample_rate: int

    def load(self) -> None: ...

    def close(self) -> None: ...

    async def complete(self, samples: Samples) -> float:
        """The probability (0..1) that the speech in ``samples``, ending now, is a finished turn."""
        ...


class Asr(Protocol):
    """Speech to text for one utterance."""

    sample_rate: int

    def load(self) -> None: ...

    def close(self) -> None: ...

    async def transcribe(self, samples: Samples) -> str: ...

    def stop(self) -> None:
        """Abandon the transcription in flight, if the backend can."""
        ...


@runtime_checkable
class Weighing(Protocol):
    """An ASR whose rescoring model can say how likely a transcript is as Mandarin."""

    async def char_logprob(self, text: str) -> float | None:
        """The model's mean log-probability per character of ``text``; None where it cannot weigh it."""
        ...


async def char_logprob(asr: Asr, text: str) -> float | None:
    """How likely ``asr``'s rescoring model finds ``text`` (``Weighing``), or None when it has none."""
    return await asr.char_logprob(text) if isinstance(asr, Weighing) else None


@runtime_checkable
class Reading(Protocol):
    """An ASR that keeps the other readings its beam weighed for the last transcript."""

    async def readings(self, text: str) -> list[str]:
        """The other readings of the transcription that gave ``text``, likeliest first ([] if none)."""
        ...


async def readings(asr: Asr, text: str) -> list[str]:
    """``asr``'s other readings of the utterance transcribed as ``text`` (``Reading``), or []."""
    return await asr.readings(text) if isinstance(asr, Reading) else []


class Rescorer(Protocol):
    """A language model weighing an ASR's hypotheses: how likely each sentence is. Loaded, used and
    closed on the ASR's own worker thread."""

    def load(self) -> None: ...

    def close(self) -> None: ...

    def logprobs(self, texts: Sequence[str]) -> list[float]:
        """Each text's summed log-probability (natural log; -inf for one it cannot weigh)."""
        ...


class TextSource(Protocol):
    """Where a spoken reply's words come from: a chat model, or a reply written already (a tool's
    answer, Home Assistant's). The speech pipeline takes one of these, not a model."""

    def reply(self, text: str) -> AsyncIterator[str]:
        """Stream the reply to the user's ``text`` piece by piece."""
        ...

    def stop(self) -> None:
        """Stop at the next piece."""
        ...


class Llm(TextSource, Protocol):
    """A chat model that streams its reply."""

    def load(self) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Scored:
    """A piece of a reply with the model's confidence in it: the probability the model gave its own
    first choice at the piece's token (the lowest, when the piece took several), 0–1."""

    text: str
    confidence: float


async def texts(scored: AsyncIterator[Scored]) -> AsyncIterator[str]:
    """The pieces' text alone."""
    try:
        async for piece in scored:
            yield piece.text
    finally:
        await scored.aclose()  # type: ignore[attr-defined]


@runtime_checkable
class Confident(Protocol):
    """An LLM that says how sure it was of each piece of its reply."""

    def scored(self, text: str) -> AsyncIterator[Scored]:
        """``reply``, each piece with its confidence; ``stop()`` applies to it as to a reply."""
        ...


def scored_reply(llm: Llm, text: str) -> AsyncIterator[Scored]:
    """The reply to ``text`` with the model's confidence in each piece: its own when it gives one,
    else 1.0 for every piece."""
    return llm.scored(text) if isinstance(llm, Confident) else _sure(llm.reply(text))


async def _sure(pieces: AsyncIterator[str]) -> AsyncIterator[Scored]:
    try:
        async for piece in pieces:
            yield Scored(piece, 1.0)
    finally:
        await pieces.aclose()  # type: ignore[attr-defined]


@runtime_checkable
class Prefill(Protocol):
    """An LLM that can evaluate a likely prompt ahead of the reply (its KV cache then holds it)."""

    def prefill(self, text: str) -> None:
        """Start evaluating the prompt for ``text``; return at once."""
        ...

    def prefill_history(self) -> None:
        """Start evaluating what the next prompt begins with (the conversation as it now is, up to the
        next request); return at once."""
        ...


class Tts(Protocol):
    """Text to speech, streamed in pieces of audio."""

    sample_rate: int

    def load(self) -> None: ...

    def close(self) -> None: ...

    def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Stream the audio of ``text`` piece by piece at ``sample_rate``."""
        ...

    def stop(self) -> None:
        """Stop synthesizing at the next piece."""
        ...


@runtime_checkable
class Voices(Protocol):
    """A TTS with more than one voice to speak with."""

    @property
    def voice(self) -> str: ...

    @property
    def voices(self) -> list[str]: ...

    async def use_voice(self, name: str) -> None:
        """Speak with voice ``name`` from the next ``synthesize`` on (ModelError if there is none)."""
        ...


class WorkerLost(ModelError):
    """The worker process died or stopped answering before the call was done."""


APOLOGY = "我刚才走神了，请再说一遍。"  # said when the worker is lost mid-reply


class Worker(Protocol):
    """The process the ASR, LLM and TTS run in when they are not in the session's own."""

    apology: Samples  # APOLOGY, rendered when the worker started
    rates: dict[str, int]  # each backend's sample rate

    @property
    def pid(self) -> int | None: ...

    @property
    def up(self) -> bool: ...

    def attach(self, publish: Callable[[Any], None]) -> None: ...

    def detach(self) -> None: ...

    def kill(self, reason: str) -> None: ...


@dataclass
class Backends:
    """The models a session uses, one per kind (the KWS only in keyword mode). A satellite has only
    the small ones it runs itself: a remote pipeline hears, answers and speaks in place of the ASR,
    the LLM and the TTS."""

    vad: Vad
    asr: Asr | None = None
    llm: Llm | None = None
    tts: Tts | None = None
    kws: Kws | None = None
    turn: Turn | None = None  # the end-of-turn model, if endpointing uses one
    cores: CoreGate | None = None  # held while a reply's first audio is made (the LLM waits meanwhile)
    worker: Worker | None = None  # the process the ASR, LLM and TTS run in, if not this one
    # a second VAD, on the linear echo canceller's output (``barge_in.double_talk_vad``)
    talk_vad: Vad | None = None

    def all(self) -> list[Vad | Kws | Turn | Asr | Llm | Tts]:
        """Every model present, in loading order."""
        models = (self.vad, self.talk_vad, self.kws, self.turn, self.asr, self.llm, self.tts)
        return [m for m in models if m is not None]
