"""The ASR, LLM and TTS Protocols over the process boundary: what the session holds when the models run
in the worker process.

They are thin: each call is one ``InferenceProcess`` call or stream. Loading starts the worker
(the first of the three to load starts it; the others find it running) and closing ends it. The
conversation history stays here in the main process, so a restarted worker forgets nothing: each
reply and prefill carries it, and the reply guard's amendments land in it as they do in-process.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

from assistant.worker.messages import Kind
from assistant.worker.process import InferenceProcess
from models.chat import History
from models.protocols import Samples, Scored, texts


class _Remote:
    kind: ClassVar[Kind]

    def __init__(self, worker: InferenceProcess) -> None:
        self.worker = worker

    def load(self) -> None:
        self.worker.start()

    def close(self) -> None:
        self.worker.close()

    def stop(self) -> None:
        self.worker.stop(self.kind)



class _Audio(_Remote):
    """A backend with a sample rate: the real one's, known once the worker has loaded it."""

    sample_rate = 0

    def load(self) -> None:
        self.worker.start()
        self.sample_rate = self.worker.rates[self.kind]


class RemoteAsr(_Audio):
    kind = "asr"

    async def transcribe(self, samples: Samples) -> str:
        text: str = await self.worker.call("asr", "transcribe", samples)
        return text

    async def char_logprob(self, text: str) -> float | None:
        """The worker's ASR's ``Weighing`` (None where it has no rescoring model)."""
        value: float | None = await self.worker.call("asr", "char_logprob", text)
        return value

    async def readings(self, text: str) -> list[str]:
        """The worker's ASR's other readings of ``text`` (``Reading``; [] where it keeps none)."""
        found: list[str] = await self.worker.call("asr", "readings", text)
        return found


class RemoteLlm(_Remote):
    kind = "llm"

    def __init__(self, worker: InferenceProcess, history_turns: int) -> None:
        super().__init__(worker)
        self.history = History(history_turns)

    def prefill(self, text: str) -> None:
        self.worker.notify("llm", "prefill", text, self.history.exchanges)

    def prefill_history(self) -> None:
        self.worker.notify("llm", "prefill_history", self.history.exchanges)

    def reply(self, text: str) -> AsyncIterator[str]:
        return texts(self.scored(text))

    def scored(self, text: str) -> AsyncIterator[Scored]:
        """The reply with the worker's LLM's confidence in each piece (1.0 each where it gives none)."""
        return self._scored(text)

    async def _scored(self, text: str) -> AsyncIterator[Scored]:
        said: list[str] = []
        try:
            async for piece in self.worker.stream("llm", "scored", text, self.history.exchanges):
                said.append(piece.text)
                yield piece
        finally:
            self.history.remember(text, "".join(said))


class RemoteTts(_Audio):
    kind = "tts"

    def synthesize(self, text: str) -> AsyncIterator[Samples]:
        return self.worker.stream("tts", "synthesize", text)
