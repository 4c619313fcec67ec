"""What a state is given: the members of the session that the states and the reply use.

The session builds the states, so it imports them; were the states to name ``Session`` in return,
even only for type hints, the two would import each other. They name these Protocols instead, and
``Session`` satisfies them structurally (mypy checks it where the session hands itself to each state,
``tests/test_context.py`` that no member is missing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

    from assistant.answerer import Answerer
    from assistant.audio.history import AudioHistory
    from assistant.audio.protocols import AudioSink, Samples
    from assistant.clock import SampleClock
    from assistant.config import Config
    from assistant.events import EventBus
    from assistant.phrase_cache import PhraseCache
    from assistant.respond import Answer, Responder
    from assistant.tools.answers import Tools
    from models.protocols import Backends
    from states.echo_defence import EchoDefence
    from states.inputs import Input, Requester
    from states.outcome import Outcome


class TurnReply(Protocol):
    """The reply in flight, as the states see it through the context (``states/reply.py``'s Reply)."""

    answer: Answer | None  # once decided
    first_audio: asyncio.Future[int]  # the session sample where its first audio was queued
    done: asyncio.Future[Outcome]  # how it ended, set once

    @property
    def first_audio_sample(self) -> int | None:
        """``first_audio``'s sample, or None before it."""
        ...

    def commit(self) -> None:
        """A reply prepared ahead: the endpoint confirmed its words; it may play (else nothing)."""
        ...

    async def interrupt(self) -> None:
        """End the reply now: cancel, clear the sink, wait for silence, report the interruption."""
        ...

    def continued_by(self, onset: int) -> int | None:
        """Where the request this reply answers began, if speech starting at ``onset`` goes on with it."""
        ...

    def timing(self, onset: int) -> dict[str, float]:
        """How long after the request and after the first audio speech began at ``onset`` (seconds)."""
        ...


class TurnContext(Protocol):
    """The shared context of the states and the reply: config, clock, bus, audio, models, the turn."""

    cfg: Config
    clock: SampleClock
    bus: EventBus
    sink: AudioSink
    models: Backends
    echo: EchoDefence
    history: AudioHistory  # what the states hear: the microphone through AEC3
    answerer: Answerer  # hears each request and answers it
    responder: Responder | None  # the local answerer's, with its memory of the conversation; None on a satellite
    tools: Tools | None
    phrase_cache: PhraseCache | None
    vad_window: int  # samples per VAD window
    # set by thinking (handed over by listening when prepared ahead), or by speaking for a reminder;
    # cleared when left
    reply: TurnReply | None
    unsaid: str | None  # a reminder whose announcement the worker's loss cut off

    async def fire(self, cause: Input) -> bool:
        """Fire an input now. Only the pump (and the state code it calls) may do this."""
        ...

    def post(self, cause: Input, owner: Requester | None = None) -> None:
        """Put an input in the mailbox, fired before the next chunk; dropped if ``owner`` has stopped."""
        ...

    def request_text(self, heard: str) -> str:
        """What was asked in transcript ``heard``: without the wake word at its front (keyword mode)."""
        ...

    def new_turn(self) -> None:
        """A request begins (listening entered): log lines carry its turn_id until idle."""
        ...

    def end_turn(self) -> None:
        """The turn is over (idle entered)."""
        ...

    def can_speak(self) -> bool:
        """The TTS is there to say something (not while its worker process restarts)."""
        ...

    def heard(self, start: int, stop: int) -> Samples:
        """The speech ``[start, stop)`` as the ASR should hear it."""
        ...

    def is_noise(self, onset: int) -> bool:
        """Is the speech onset at ``onset`` a sudden flat-spectrum noise? (Published when it is.)"""
        ...
