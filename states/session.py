"""The session: the model the state machine drives, and the audio pump that drives it.

One task, ``run()``, reads the microphone, cleans it of the assistant's own playback (echo
cancellation against what the speaker played), runs the VAD and the keyword spotter on each chunk,
hands the chunk to the current state and checks the watchdog. It is the only task that fires the
machine's inputs (``states/inputs.py``): a concurrent trigger would cancel the task running a
transition (that is how ``transitions``' AsyncMachine works), so the reply tasks ``post()`` theirs to
the session's one mailbox, stamped with the session sample, and the pump fires them in order before
the next chunk.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import structlog

from assistant import respond
from assistant.answerer import Answerer, LocalAnswerer
from assistant.audio.history import AudioHistory
from assistant.audio.protocols import AudioSink, AudioSource, Samples
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.events import EventBus, NoiseRejected, StateChanged
from assistant.phrase_cache import PhraseCache
from assistant.text.wake import strip_wake_words
from models.protocols import Backends, ModelError
from states import machine
from states.context import TurnReply
from states.echo_defence import EchoDefence
from states.idle import Idle
from states.inputs import Input, Posted, Requester, Start, Watchdog
from states.listening import Listening
from states.noise_guard import NoiseGuard
from states.speaking import Speaking
from states.state import State, VadWindow
from states.talk_ear import TalkEar
from states.thinking import Thinking

if TYPE_CHECKING:
    from pathlib import Path

    from assistant.tools.answers import Tools

log = structlog.get_logger("session")


Tap = Callable[[Samples, Samples], None]  # (microphone chunk as captured, what the speaker played meanwhile)


class Session:
    """Shared context of the states (a ``TurnContext``): config, clock, bus, audio, models; and the audio pump."""

    state: str  # assigned by the machine only

    def __init__(self, cfg: Config, clock: SampleClock, bus: EventBus, source: AudioSource,
                 sink: AudioSink, backends: Backends, phrase_cache: PhraseCache | None = None,
                 tap: Tap | None = None, tools: Tools | None = None,
                 now: Callable[[], datetime] | None = None, responder: respond.Responder | None = None,
                 answerer: Answerer | None = None, room: Path | None = None) -> None:
        if cfg.wake.mode == "keyword" and backends.kws is None:
            raise ModelError("wake.mode is 'keyword' but no keyword-spotting backend is configured")
        self.cfg, self.clock, self.bus = cfg, clock, bus
        self.source, self.sink, self.models = source, sink, backends
        self.phrase_cache = phrase_cache
        self.tap = tap
        self.tools = tools
        self.now = now or (lambda: datetime.now().astimezone())  # local wall time, for the tools
        self.responder, self.answerer = self._answerer(answerer, responder, backends)
        self.noise_guard = NoiseGuard(cfg.audio.sample_rate) if cfg.vad.noise_guard else None
        rate = cfg.audio.sample_rate
        held = int((cfg.listening.max_utterance_s + 5) * rate)
        self.history = AudioHistory(held)  # what the states hear: the microphone through AEC3
        self.vad_window = backends.vad.window_samples
        self.echo = EchoDefence(cfg, clock, bus, held, self.vad_window, room)
        talk_vad = backends.talk_vad if cfg.barge_in.double_talk_vad else None
        self.talk_ear = TalkEar(talk_vad, self.echo, rate, self.vad_window)
        self.turn_id = ""
        self._turns = itertools.count(1)
        self._vad_windows = 0
        self._mailbox: deque[Posted] = deque()
        self.reply: TurnReply | None = None
        self.unsaid: str | None = None  # a reminder whose announcement the worker's loss cut off
        self.heartbeat: Callable[[], None] | None = None  # called once per chunk: the pump is alive
        self.state_since = 0
        self._without_worker = 0  # samples of the current state spent while the worker restarted
        self.states: dict[str, State] = {
            s.name: s for s in (Idle(self), Listening(self), Thinking(self), Speaking(self))}
        machine.attach(self)

    def _answerer(self, answerer: Answerer | None, responder: respond.Responder | None,
                  backends: Backends) -> tuple[respond.Responder | None, Answerer]:
        """Who answers: ``answerer`` if given (a remote pipeline, with its own memory of the
        conversation), else the ASR here and ``responder`` (by default the configured one)."""
        if answerer is not None:
            return responder, answerer
        if backends.asr is None:
            raise ModelError("no ASR to hear requests with, and no answerer to hear them instead")
        responder = responder or respond.for_config(self.cfg, backends.llm, self.tools, self.now)
        return responder, LocalAnswerer(backends.asr, responder)

    # -- called by the machine ------------------------------------------------------------------
    def follow_up_enabled(self, _: Any) -> bool:
        return self.cfg.dialog.follow_up_s > 0

    async def leave_state(self, event: Any) -> None:
        await self.states[event.transition.source].exit(event.transition.dest)

    async def state_changed(self, event: Any) -> None:
        source, dest, cause = event.transition.source, event.transition.dest, event.kwargs["cause"]
        self.state_since = self.clock.samples
        self._without_worker = 0
        self.bus.publish(StateChanged(from_=source, to=dest, trigger=cause.trigger))
        await self.states[dest].enter(cause)

    # -- used by the states ---------------------------------------------------------------------
    async def fire(self, cause: Input) -> bool:
        """Fire an input now. Only the pump (and the state code it calls) may do this."""
        ok: bool = await self.trigger(cause.trigger, cause=cause)  # type: ignore[attr-defined]
        # The machine runs state callbacks in child tasks, so a turn started there is bound here,
        # in the pump's own context, which every later task of the turn inherits.
        if self.turn_id:
            structlog.contextvars.bind_contextvars(turn_id=self.turn_id)
        else:
            structlog.contextvars.unbind_contextvars("turn_id")
        if not ok:
            log.debug("input ignored", trigger=cause.trigger)
        return ok

    def post(self, cause: Input, owner: Requester | None = None) -> None:
        """Put an input in the mailbox, for the pump to fire before the next chunk (from any task of
        the loop). It is stamped with the session sample; an input from an ``owner`` that has been
        stopped meanwhile (an interrupted reply) is dropped unfired."""
        self._mailbox.append(Posted(self.clock.samples, cause, owner))

    def request_text(self, heard: str) -> str:
        """What was asked in transcript ``heard``: without the wake word at its front (keyword mode)."""
        if self.cfg.wake.mode == "keyword":
            return strip_wake_words(heard, self.cfg.wake.keywords)
        return heard

    def new_turn(self) -> None:
        """A request begins (listening entered): log lines carry its turn_id until idle."""
        self.turn_id = f"t{next(self._turns)}"
        structlog.contextvars.bind_contextvars(turn_id=self.turn_id)

    def end_turn(self) -> None:
        self.turn_id = ""

    # -- the pump -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Pump the microphone through the machine until the source ends."""
        if self.models.worker is not None:
            self.models.worker.attach(self.bus.publish)
        await self.states[self.state].enter(Start())
        try:
            async for mic in self.source.chunks():
                played = self.sink.reference.take(len(mic))
                if self.tap is not None:
                    self.tap(mic, played)
                chunk = self.echo.clean(mic, played)
                self.history.append(chunk)
                windows = self._windows(await self.models.vad.accept(chunk), await self.talk_ear.hear())
                keyword = await self.models.kws.accept(chunk) if self.models.kws is not None else None
                await self._fire_posted()
                state = self.states[self.state]
                if keyword:
                    await state.on_keyword(keyword)
                    state = self.states[self.state]
                await state.on_audio(chunk, windows)
                await self._check_watchdog(len(chunk))
                if self.heartbeat is not None:
                    self.heartbeat()
        finally:
            await self.states[self.state].exit("stop")
            if self.models.worker is not None:
                self.models.worker.detach()
            if (cancelled := self.echo.cancelled()) is not None:
                self.bus.publish(cancelled)
            self.echo.close()

    def _windows(self, probs: list[float], linear: list[float]) -> list[VadWindow]:
        out = []
        for i, prob in enumerate(probs):
            self._vad_windows += 1
            end = self._vad_windows * self.vad_window
            out.append(VadWindow(end=end, prob=prob, talk=self.echo.talk(end),
                                 linear=linear[i] if i < len(linear) else 0.0))
        return out

    # -- noise ----------------------------------------------------------------------------------
    def can_speak(self) -> bool:
        """The TTS is there to say something (not while its worker process restarts)."""
        return self.models.worker is None or self.models.worker.up

    def heard(self, start: int, stop: int) -> Samples:
        """The speech ``[start, stop)`` as the ASR should hear it (see ``EchoDefence.heard``)."""
        return self.echo.heard(self.history, start, stop)

    def is_noise(self, onset: int) -> bool:
        """Is the speech onset at ``onset`` a sudden flat-spectrum noise? (Published when it is.)"""
        if self.noise_guard is None:
            return False
        rate = self.cfg.audio.sample_rate
        # A second before the onset: the VAD may rise slowly on noise, and the median level of that
        # second is still the quiet before it.
        before = self.history.slice(onset - rate, onset)
        verdict = self.noise_guard.check(before, self.history.slice(onset, self.clock.samples))
        if verdict.noise:
            log.info("onset refused as noise", flatness=round(verdict.flatness, 2), rise_db=round(verdict.rise_db, 1))
            self.bus.publish(NoiseRejected(flatness=round(verdict.flatness, 3), rise_db=round(verdict.rise_db, 1)))
        return verdict.noise

    async def _fire_posted(self) -> None:
        while self._mailbox:
            posted = self._mailbox.popleft()
            if posted.owner is not None and posted.owner.stopped:
                log.debug("stale input dropped", trigger=posted.cause.trigger, posted_at=posted.at)
                continue
            await self.fire(posted.cause)

    async def _check_watchdog(self, samples: int) -> None:
        """Back to idle from a state held past its limit. Time without a worker counts only beyond
        ``worker.restart_wait_s``: a request kept through a restart waits that long for the new
        worker (then the apology), and is not sent back to idle here with nothing said."""
        if not self.can_speak():
            self._without_worker += samples
        rate = self.clock.sample_rate
        waited = min(self._without_worker, int(self.cfg.worker.restart_wait_s * rate))
        held_s = (self.clock.samples - self.state_since - waited) / rate
        limit = self.cfg.max_duration_s(self.state)
        if held_s > limit:
            log.warning("watchdog: state held too long, back to idle", held_s=round(held_s, 2), limit_s=limit)
            await self.fire(Watchdog())

