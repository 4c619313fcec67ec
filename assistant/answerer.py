"""Who answers an utterance: the seam where the hands-free session turns speech into a reply.

The session hears a request (wake word, endpointing, echo defence) and speaks the reply; between the
two, an ``Answerer`` hears the utterance and answers it. Here that is the session's own ASR and
``Responder``, the reply spoken by the local TTS (``LocalAnswerer``); on a satellite it is a run of
Home Assistant's voice pipeline, which hears, decides and speaks the reply itself
(``assistant/wyoming/link.py``). What is not a model does not pose as one: the satellite plugs in
here, not as an ASR, an LLM and a TTS.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from assistant.audio.resample import resample
from models.protocols import char_logprob, readings

if TYPE_CHECKING:
    from assistant.audio.protocols import Samples
    from assistant.respond import Answer, Responder
    from models.protocols import Asr


class Answerer(Protocol):
    """Hears an utterance and answers it; every reply of the session goes through one of these."""

    async def hear(self, utterance: Samples, rate: int) -> str:
        """The transcript of ``utterance`` (sampled at ``rate``), as heard."""
        ...

    async def answer(self, text: str, spoken_s: float) -> Answer:
        """Decide and commit the answer to ``text``, the request of the utterance last heard, which
        took ``spoken_s`` seconds to say."""
        ...

    async def answer_ahead(self, text: str, spoken_s: float) -> Answer | None:
        """``answer`` for a request that may not be over yet (the transcript of the speech so far,
        before the endpoint): None if it cannot be answered without acting (a timer set, a device
        switched, a remote run); else committed so that ``retract`` can undo it."""
        ...

    def retract(self) -> None:
        """Undo the last ``answer_ahead``: the speaker went on, and its reply was never heard."""
        ...

    def stop(self) -> None:
        """Give up the utterance in flight: its transcription, or the remote run answering it."""
        ...


class LocalAnswerer:
    """The session's own: its ASR hears, the responder answers (weighing the transcript with the
    ASR's rescoring model and other readings, where it has them), and the local TTS speaks."""

    def __init__(self, asr: Asr, responder: Responder) -> None:
        self.asr, self.responder = asr, responder

    async def hear(self, utterance: Samples, rate: int) -> str:
        return await self.asr.transcribe(resample(utterance, rate, self.asr.sample_rate))

    async def answer(self, text: str, spoken_s: float) -> Answer:
        likely = await char_logprob(self.asr, text)
        others = await readings(self.asr, text)
        return self.responder.answer(text, spoken_s=spoken_s, char_logprob=likely, readings=others)

    async def answer_ahead(self, text: str, spoken_s: float) -> Answer | None:
        likely = await char_logprob(self.asr, text)
        others = await readings(self.asr, text)
        return self.responder.answer_ahead(text, spoken_s=spoken_s, char_logprob=likely, readings=others)

    def retract(self) -> None:
        self.responder.retract()

    def stop(self) -> None:
        self.asr.stop()
