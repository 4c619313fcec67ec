"""A satellite's link to Home Assistant: each request is one run of a Home Assistant voice pipeline.

The hands-free session stays on the satellite (wake word, endpointing, echo defence, barge-in,
playback); Home Assistant hears the utterance, decides and answers. The link plugs in where the
session turns an utterance into an answer (``assistant/answerer.py``), as its ``HomeAnswerer``:

- ``hear(utterance)`` sends ``run-pipeline`` (from speech to text to speech) with the utterance, cut
  by the satellite's own endpointing, and returns Home Assistant's ``transcript``;
- ``answer()`` gives the session that run's reply: the text Home Assistant will speak (its
  ``synthesize`` event) and its audio of that text, resampled for playback, spoken in place of a TTS;
- ``stop()`` gives the run up.

Runs are answered in order, so each event goes to the oldest run still waiting for its kind. A run
the session gave up (barge-in, its own echo, a stop word) is drained: its reply is never played.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import structlog
from wyoming.asr import Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.pipeline import PipelineStage, RunPipeline
from wyoming.snd import Played
from wyoming.timer import TimerCancelled, TimerFinished, TimerStarted, TimerUpdated
from wyoming.tts import Synthesize

from assistant.audio.protocols import Samples
from assistant.audio.resample import resample
from assistant.respond import Answer
from assistant.wyoming.pcm import WIDTH, Incoming, chunks
from models.protocols import ModelError

log = structlog.get_logger("satellite")

T = TypeVar("T")
Send = Callable[[Event], Awaitable[None]]
MIC_RATE = 16000
PLAY_RATE = 24000  # Home Assistant's speech, at whatever rate its TTS makes it, is resampled to this


@dataclass
class Run:
    """One pipeline run: what Home Assistant has answered so far."""

    number: int
    abandoned: bool = False
    transcript: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    reply: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    audio: asyncio.Queue[Samples | None] = field(default_factory=asyncio.Queue)  # None: its end
    incoming: Incoming = field(default_factory=lambda: Incoming(PLAY_RATE))
    audio_started: bool = False
    done: bool = False  # its audio has ended (or it failed): no more events belong to it
    error: str | None = None

    def fail(self, reason: str) -> None:
        self.error = reason
        for future in (self.transcript, self.reply):
            if not future.done():
                future.set_exception(ModelError(reason))
                future.exception()  # retrieved: a run nobody waits for any more must not warn
        self.audio.put_nowait(None)
        self.done = True


@dataclass
class Timer:
    """A timer Home Assistant set through this satellite."""

    id: str
    name: str | None
    total_seconds: int
    active: bool = True


class HaLink:
    """The satellite's side of the Home Assistant connection; ``attach`` gives it the connection."""

    def __init__(self, timeout_s: float, on_timer_finished: Callable[[Timer], None] | None = None) -> None:
        self.timeout_s = timeout_s
        self.on_timer_finished = on_timer_finished
        self.send: Send | None = None  # the connection of the Home Assistant that runs this satellite
        self.paused = False
        self.runs: deque[Run] = deque()
        self.current: Run | None = None
        self.timers: dict[str, Timer] = {}
        self._numbers = iter(range(1, 1 << 62))

    # -- the connection --------------------------------------------------------------------------
    def attach(self, send: Send) -> None:
        self.send, self.paused = send, False
        log.info("home assistant connected")

    def detach(self, send: Send) -> None:
        if self.send == send:  # the same connection (bound methods are equal, not identical)
            self.send = None
            for run in self.runs:
                run.fail("Home Assistant disconnected")
            self.runs.clear()
            log.warning("home assistant disconnected")

    async def played(self) -> None:
        """The reply has been played to its end (or cut off): Home Assistant may go on."""
        if self.send is not None:
            await self.send(Played().event())

    # -- a request -------------------------------------------------------------------------------
    async def start(self, utterance: Samples) -> Run:
        """Run Home Assistant's pipeline on ``utterance`` (16 kHz mono, cut by the endpointing)."""
        send = self.send
        if send is None:
            raise ModelError("Home Assistant is not connected to this satellite")
        if self.paused:
            raise ModelError("Home Assistant has paused this satellite")
        run = Run(next(self._numbers))
        self.runs.append(run)
        self.current = run
        await send(RunPipeline(start_stage=PipelineStage.ASR, end_stage=PipelineStage.TTS).event())
        await send(AudioStart(rate=MIC_RATE, width=WIDTH, channels=1, timestamp=0).event())
        for chunk in chunks(utterance, MIC_RATE):
            await send(chunk.event())
        await send(AudioStop(timestamp=int(1000 * len(utterance) / MIC_RATE)).event())
        log.info("pipeline run started", run=run.number, utterance_s=round(len(utterance) / MIC_RATE, 2))
        return run

    def abandon(self) -> None:
        """The session gave up the current request: whatever Home Assistant still sends for it is dropped."""
        if self.current is not None and not self.current.done:
            self.current.abandoned = True
            log.info("pipeline run abandoned", run=self.current.number)
        self.current = None

    async def wait(self, run: Run, what: Awaitable[T], stage: str) -> T:
        try:
            return await asyncio.wait_for(what, self.timeout_s)
        except TimeoutError:
            run.fail(f"no {stage} from Home Assistant")
            self._forget(run)
            raise ModelError(f"Home Assistant sent no {stage} within {self.timeout_s:g} s "
                             "(satellite.reply_timeout_s)") from None

    # -- Home Assistant's events -----------------------------------------------------------------
    def receive(self, event: Event) -> None:
        """One event from Home Assistant (pings and describe are the handler's)."""
        if Transcript.is_type(event.type):
            self._first(lambda r: not r.transcript.done(), "transcript", lambda r: r.transcript.set_result(
                Transcript.from_event(event).text or ""))
        elif Synthesize.is_type(event.type):
            self._first(lambda r: not r.reply.done(), "synthesize", lambda r: r.reply.set_result(
                Synthesize.from_event(event).text))
        elif AudioStart.is_type(event.type):
            self._first(lambda r: not r.audio_started, "audio-start", lambda r: self._audio_start(r, event))
        elif AudioChunk.is_type(event.type):
            self._first(lambda r: r.audio_started, "audio-chunk",
                        lambda r: r.audio.put_nowait(r.incoming.read(AudioChunk.from_event(event))))
        elif AudioStop.is_type(event.type):
            self._first(lambda r: r.audio_started, "audio-stop", self._audio_end)
        elif Error.is_type(event.type):
            error = Error.from_event(event)
            log.warning("home assistant reports an error", text=error.text, code=error.code)
            self._first(lambda r: True, "error", lambda r: self._end(r, f"Home Assistant: {error.text}"))
        else:
            self._timer(event)

    def _audio_start(self, run: Run, event: Event) -> None:
        run.incoming.start(AudioStart.from_event(event))
        run.audio_started = True

    def _audio_end(self, run: Run) -> None:
        if (tail := run.incoming.end()).size:
            run.audio.put_nowait(tail)
        run.audio.put_nowait(None)
        run.done = True
        self._forget(run)

    def _end(self, run: Run, reason: str) -> None:
        run.fail(reason)
        self._forget(run)

    def _first(self, waiting: Callable[[Run], bool], kind: str, act: Callable[[Run], None]) -> None:
        """Give the event to the oldest run still waiting for its kind."""
        for run in self.runs:
            if not run.done and waiting(run):
                if run.abandoned and kind in ("synthesize", "audio-start"):
                    log.debug("not to be played: the request was given up", kind=kind, run=run.number)
                act(run)
                return
        log.debug("event for no run", kind=kind)

    def _forget(self, run: Run) -> None:
        """No more events belong to ``run`` (it stays ``current``: its answer may not have been read yet)."""
        if run in self.runs:
            self.runs.remove(run)

    def _timer(self, event: Event) -> None:
        if TimerStarted.is_type(event.type):
            started = TimerStarted.from_event(event)
            self.timers[started.id] = Timer(started.id, started.name, started.total_seconds)
            log.info("timer started", name=started.name, seconds=started.total_seconds)
        elif TimerUpdated.is_type(event.type):
            updated = TimerUpdated.from_event(event)
            if (timer := self.timers.get(updated.id)) is not None:
                timer.active, timer.total_seconds = updated.is_active, updated.total_seconds
        elif TimerCancelled.is_type(event.type):
            self.timers.pop(TimerCancelled.from_event(event).id, None)
        elif TimerFinished.is_type(event.type):
            timer = self.timers.pop(TimerFinished.from_event(event).id, None)
            log.info("timer finished", name=timer.name if timer else None)
            if timer is not None and self.on_timer_finished is not None:
                self.on_timer_finished(timer)
        else:
            log.debug("event ignored", kind=event.type)


class HomeAnswerer:
    """The satellite's answerer: Home Assistant hears each utterance in a run of its pipeline, and
    answers with its reply's text and audio."""

    def __init__(self, link: HaLink) -> None:
        self.link = link

    async def hear(self, utterance: Samples, rate: int) -> str:
        run = await self.link.start(resample(utterance, rate, MIC_RATE))
        return await self.link.wait(run, run.transcript, "transcript")

    async def answer(self, text: str, spoken_s: float) -> Answer:
        """The run that heard ``text``: its reply, spoken in Home Assistant's voice (Home Assistant
        has decided already; ``spoken_s`` is for an answerer that weighs the request)."""
        run = self.link.current
        if run is None:
            raise ModelError("no Home Assistant pipeline run to answer from")
        return Answer(RunText(self.link, run), text, None, voice=RunSpeech(self.link, run))

    async def answer_ahead(self, text: str, spoken_s: float) -> Answer | None:
        """Nothing ahead: Home Assistant decides and acts in the same run that heard the request
        (and a satellite hears each request once, at its endpoint)."""
        return None

    def retract(self) -> None: ...

    def stop(self) -> None:
        self.link.abandon()


class RunText:
    """The text a run answered with: the reply's text source (nothing to stop: the answerer gives the run up)."""

    def __init__(self, link: HaLink, run: Run) -> None:
        self.link, self.run = link, run

    def stop(self) -> None: ...

    async def reply(self, text: str) -> AsyncIterator[str]:
        yield await self.link.wait(self.run, self.run.reply, "reply")


class RunSpeech:
    """A run's audio of its reply, piece by piece as it arrives: the reply's voice, which says that
    one reply only (the session speaks it whole)."""

    sample_rate = PLAY_RATE

    def __init__(self, link: HaLink, run: Run) -> None:
        self.link, self.run = link, run

    def stop(self) -> None: ...

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        run = self.run
        while (piece := await self.link.wait(run, run.audio.get(), "audio")) is not None:
            yield piece
        if run.error is not None:
            raise ModelError(run.error)
