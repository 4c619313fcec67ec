"""The closed set of events a session emits, the bus that carries them, and the JSONL recorder.

Events are frozen dataclasses named for what has happened. The bus stamps each with session time
(from the sample clock, never the wall clock) and hands it to subscribers synchronously, so a
control event such as ``BargeIn`` never waits behind queued audio or text.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol

import structlog

log = structlog.get_logger("events")


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"

    def fields(self) -> dict[str, Any]:
        """The payload with JSON names (a trailing underscore, as in ``from_``, is dropped)."""
        return {f.name.rstrip("_"): getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class StateChanged(Event):
    type: ClassVar[str] = "state_changed"
    from_: str
    to: str
    trigger: str


@dataclass(frozen=True)
class WakeDetected(Event):
    type: ClassVar[str] = "wake_detected"
    keyword: str


@dataclass(frozen=True)
class WakeRejected(Event):
    """The keyword spotter fired but the second stage (the ASR on the wake window) did not hear it."""

    type: ClassVar[str] = "wake_rejected"
    keyword: str
    heard: str


@dataclass(frozen=True)
class SpeechStarted(Event):
    type: ClassVar[str] = "speech_started"


@dataclass(frozen=True)
class SpeechEnded(Event):
    """The endpoint was decided (the event's time); ``speech_end_t`` is the last voiced sample before it."""

    type: ClassVar[str] = "speech_ended"
    audio_s: float
    speech_end_t: float


@dataclass(frozen=True)
class Preempted(Event):
    """A reply was prepared on the speculative transcript before the endpoint; at the endpoint it was
    ``used`` (the same words: its events, kept until then, follow with their own times) or dropped
    (the speaker went on). ``ahead_s``: how long before the endpoint it was started."""

    type: ClassVar[str] = "preempted"
    used: bool
    stage: str  # how far it had got: asr, tool, reply (the LLM and TTS), playback (all of it ready)
    ahead_s: float


@dataclass(frozen=True)
class Transcript(Event):
    type: ClassVar[str] = "transcript"
    text: str


@dataclass(frozen=True)
class ToolAnswered(Event):
    """The request was a frequent command, answered by an offline tool instead of the LLM."""

    type: ClassVar[str] = "tool_answered"
    intent: str


@dataclass(frozen=True)
class ReplyText(Event):
    type: ClassVar[str] = "reply_text"
    text: str


@dataclass(frozen=True)
class LlmFirstToken(Event):
    type: ClassVar[str] = "llm_first_token"


@dataclass(frozen=True)
class TextChunk(Event):
    """A chunk of the reply is complete (normalized, as it will be spoken) and goes to the TTS."""

    type: ClassVar[str] = "text_chunk"
    text: str


@dataclass(frozen=True)
class TtsChunk(Event):
    type: ClassVar[str] = "tts_chunk"
    text: str
    audio_s: float
    synth_s: float


@dataclass(frozen=True)
class PlaybackStarted(Event):
    type: ClassVar[str] = "playback_started"


@dataclass(frozen=True)
class ChunkQueued(Event):
    """A chunk's audio went to the sink; ``gap_s`` is how long the sink had run dry before it."""

    type: ClassVar[str] = "chunk_queued"
    index: int
    audio_s: float
    gap_s: float


@dataclass(frozen=True)
class PlaybackFinished(Event):
    type: ClassVar[str] = "playback_finished"
    interrupted: bool


@dataclass(frozen=True)
class BargeIn(Event):
    type: ClassVar[str] = "barge_in"
    reason: str


@dataclass(frozen=True)
class EchoIgnored(Event):
    """A layer of the echo defence acted: what the assistant heard of itself was not taken as the user.

    ``layer`` is ``echo_window`` (speech muted right after playback started), ``leak`` (a barge-in
    refused: what AEC3 let through was the reply's own echo), ``transcript`` (an
    utterance matching the assistant's own words) or ``own_words`` (a wake or stop word that is in
    the reply being spoken).
    """

    type: ClassVar[str] = "echo_ignored"
    layer: str
    detail: str


@dataclass(frozen=True)
class EchoCancelled(Event):
    """The echo canceller's account of a session, published when the session ends."""

    type: ClassVar[str] = "echo_cancelled"
    chunks: int
    echo_chunks: int
    acted_chunks: int
    erle_db: float | None
    # the linear canceller's double-talk test (None when it is off): windows it marked as the user
    # over the reply, and whether it learnt the room at all (if not, it could mark none)
    double_talk_windows: int | None = None
    linear_learnt: bool | None = None
    room_recalled: bool | None = None  # did it start from the room memory (None: no memory kept, as in a replay)


@dataclass(frozen=True)
class NoiseRejected(Event):
    """A speech onset refused as noise: a sudden energy rise with a flat spectrum."""

    type: ClassVar[str] = "noise_rejected"
    flatness: float
    rise_db: float


@dataclass(frozen=True)
class WorkerStarted(Event):
    """The inference worker process (ASR, LLM, TTS) has loaded its models and answers."""

    type: ClassVar[str] = "worker_started"
    pid: int


@dataclass(frozen=True)
class WorkerLost(Event):
    """The inference worker died or stopped answering; calls in flight failed, a restart follows."""

    type: ClassVar[str] = "worker_lost"
    reason: str


@dataclass(frozen=True)
class WorkerRestarted(Event):
    """A new worker answers after one was lost: why it was lost and how long there was none."""

    type: ClassVar[str] = "worker_restarted"
    reason: str
    down_s: float


@dataclass(frozen=True)
class Error(Event):
    type: ClassVar[str] = "error"
    stage: str
    message: str


class Clock(Protocol):
    def now(self) -> float: ...


Subscriber = Callable[[float, Event], None]


class EventBus:
    """One bus per session: publish stamps session time and calls every subscriber at once."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._subscribers: list[Subscriber] = []
        self._waiters: list[tuple[Callable[[Event], bool], asyncio.Future[Event]]] = []

    def subscribe(self, fn: Subscriber) -> None:
        self._subscribers.append(fn)

    def publish(self, event: Event, at: float | None = None) -> None:
        """Stamp ``event`` with the session time (or ``at``, when it happened if published later) and
        hand it to every subscriber and waiter."""
        t = self.clock.now() if at is None else at
        log.debug(event.type, t=round(t, 3), **event.fields())
        for fn in self._subscribers:
            fn(t, event)
        still_waiting = []
        for match, fut in self._waiters:
            if fut.done():
                continue
            if match(event):
                fut.set_result(event)
            else:
                still_waiting.append((match, fut))
        self._waiters = still_waiting

    def wait_for(self, match: Callable[[Event], bool]) -> asyncio.Future[Event]:
        """A future resolved by the next event that ``match`` accepts (bound it with a timeout)."""
        fut: asyncio.Future[Event] = asyncio.get_running_loop().create_future()
        self._waiters.append((match, fut))
        return fut


class Publisher(Protocol):
    """What publishes a reply's events: the session's bus, or a ``Held`` in front of it."""

    clock: Clock

    def publish(self, event: Event) -> None: ...


class Held:
    """The events and effects of a reply prepared before the user has finished: while ``holding``, kept
    in order (each event stamped with when it happened) until the reply is committed (``release``:
    each published, each effect run) or dropped (``drop``). Not holding, they pass straight through."""

    def __init__(self, bus: EventBus, holding: bool = True) -> None:
        self.bus, self.clock = bus, bus.clock
        self.holding = holding
        self._kept: list[Callable[[], None]] = []

    def publish(self, event: Event) -> None:
        if self.holding:
            at = self.clock.now()
            self._kept.append(lambda: self.bus.publish(event, at=at))
        else:
            self.bus.publish(event)

    def later(self, effect: Callable[[], None]) -> None:
        """Run ``effect`` now, or once released if holding."""
        if self.holding:
            self._kept.append(effect)
        else:
            effect()

    def release(self) -> None:
        self.holding = False
        kept, self._kept = self._kept, []
        for effect in kept:
            effect()

    def drop(self) -> None:
        self._kept.clear()


def to_record(t: float, event: Event) -> dict[str, Any]:
    """The JSONL form: session time in seconds (to the millisecond), type, then the payload."""
    return {"t": round(t, 3), "type": event.type, **event.fields()}


class JsonlRecorder:
    """Writes one JSON object per line and flushes it, so a crash loses no recorded event."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] = path.open("w", encoding="utf-8")

    def __call__(self, t: float, event: Event) -> None:
        self._file.write(json.dumps(to_record(t, event), ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()
