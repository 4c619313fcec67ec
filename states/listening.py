"""Listening: find where the request starts and ends, or give up when nobody speaks.

Endpointing runs on VAD probabilities in sample counts (``states/endpointer.py``): the utterance
ends after an endpoint silence that adapts to its length, or at ``listening.max_utterance_s``; if
no speech starts within the no-speech timeout (the follow-up window after a reply) the assistant
goes back to idle. An onset that is a sudden burst of flat-spectrum noise is not speech.

End of turn by ear: with a turn model (Smart Turn), once the speaker has been quiet for
``vad.turn_check_ms`` the model hears the utterance so far; "finished" ends it as soon as the quiet
has lasted ``vad.turn_min_silence_ms`` (the model is asked early so that its answer, slowed by the
speculative ASR beside it, is in by then); "not yet" leaves it open (asked again after each further
``turn_check_ms``) up to ``vad.turn_max_silence_ms``. If the model fails, that silence ends the turn.

Speculative start: once the speaker has been quiet for ``vad.speculative_silence_ms`` the answerer
starts hearing the speech so far; if no more speech comes before the endpoint, the reply uses that
transcript and the ASR's time is hidden in the endpoint silence.

A reply prepared ahead (``dialog.preempt``): once that transcript is in, still before the endpoint,
the reply starts on it (answered, the LLM's text and the first audio made) but holds everything it
would play, post or act on. The endpoint hands it to thinking, which commits it; if the speaker
goes on instead (or listening ends otherwise), it is dropped unheard and its answer undone.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from assistant.audio.protocols import Samples
from assistant.audio.resample import resample
from assistant.events import SpeechEnded, SpeechStarted
from states.endpointer import Endpointer, Utterance
from states.inputs import BargeIn, Input, NoSpeechTimeout, ReplyDone, Speculation, SpeechEnd, Wake
from states.reply import Reply
from states.state import State, VadWindow

log = structlog.get_logger("listening")

TURN_WINDOW_S = 8  # what a turn model hears at most (Smart Turn: the last 8 s)


@dataclass
class TurnCheck:
    """A turn-model call on the speech up to ``speech_end``, made after ``silence`` samples of quiet."""

    speech_end: int
    silence: int
    task: asyncio.Task[float]
    p: float | None = None  # its answer, once read


class Listening(State):
    name = "listening"

    async def enter(self, cause: Input) -> None:
        s, cfg = self.session, self.session.cfg
        rate = cfg.audio.sample_rate
        s.new_turn()
        onset = cause.onset if isinstance(cause, Wake | BargeIn) else None
        speech_from = cause.speech_from if isinstance(cause, Wake) else None
        follow_up = isinstance(cause, ReplyDone)
        timeout_s = cfg.dialog.follow_up_s if follow_up else cfg.listening.no_speech_timeout_s
        self.deadline = s.clock.samples + int(timeout_s * rate)
        self.endpointer = Endpointer.from_config(cfg, s.vad_window, onset=onset, turn_model=s.models.turn is not None)
        self.speculation: Speculation | None = None
        self.ahead: Reply | None = None  # the reply prepared on the speculation, before the endpoint
        self.turn_check: TurnCheck | None = None
        if speech_from is not None and onset is None:
            self.endpointer.detector.prime(speech_from)  # the request may follow the wake word in one breath
        if onset is not None:
            s.bus.publish(SpeechStarted())
        if isinstance(cause, BargeIn):
            self.endpointer.untrusted_until = s.echo.tail_end()
        # The speaker went on after a pause, over the reply to its first part: heard from that part's start.
        self.resume_from = cause.resume_from if isinstance(cause, BargeIn) else None
        log.debug("listening", follow_up=follow_up, timeout_s=timeout_s, from_onset=onset, speech_from=speech_from)

    async def exit(self, dest: str) -> None:
        await self._drop_speculation(f"listening ended for {dest}")
        self._drop_turn_check()
        await super().exit(dest)

    async def on_audio(self, chunk: Samples, windows: list[VadWindow]) -> None:
        s = self.session
        started, utterance = self.endpointer.feed(windows)
        if started is not None and utterance is None and s.is_noise(started):
            self.endpointer.onset = None
            self.endpointer.detector.skip_run()
            return
        if started is not None:
            s.bus.publish(SpeechStarted())
        if utterance is None and self.endpointer.onset is not None:
            utterance = self._turn_model_verdict()
        if utterance is not None:
            rate = s.cfg.audio.sample_rate
            start = self._speech_from(utterance.start, utterance.end)
            audio = s.heard(start, utterance.end)
            voiced_end = (utterance.end - utterance.trailing_silence) / rate  # the last voiced window's end
            s.bus.publish(SpeechEnded(audio_s=round(len(audio) / rate, 3), speech_end_t=round(voiced_end, 3)))
            log.info("utterance ended", reason=utterance.reason, audio_s=round(len(audio) / rate, 2))
            speculation = await self._take_speculation()
            ahead, self.ahead = self.ahead, None
            if ahead is not None:
                s.reply = ahead  # handed over: thinking commits it
            await s.fire(SpeechEnd(audio, utterance.start, audio_from=start,
                                   voiced_end=utterance.end - utterance.trailing_silence, speculation=speculation,
                                   ahead=ahead is not None))
        elif self.endpointer.onset is None:
            if s.clock.samples >= self.deadline:
                await s.fire(NoSpeechTimeout())
        else:
            await self._speculate()
            self._prepare_ahead()
            if self.ahead is None:
                self._warm_llm()  # a reply prepared ahead evaluates its prompt itself
            self._ask_turn_model()

    def _speech_from(self, onset: int, end: int) -> int:
        """Where the request's audio starts: the preroll before its onset, or the start of the part
        it continues (no more than ``listening.max_utterance_s`` before ``end``)."""
        cfg = self.session.cfg
        rate = cfg.audio.sample_rate
        start = onset - cfg.vad.preroll_ms * rate // 1000
        if self.resume_from is not None:
            start = max(min(start, self.resume_from), end - int(cfg.listening.max_utterance_s * rate))
        return start

    def _ask_turn_model(self) -> None:
        """Start a turn-model call once the silence reaches the next multiple of vad.turn_check_ms."""
        s, ep = self.session, self.endpointer
        turn = s.models.turn
        if turn is None or ep.onset is None or ep.silence == 0:
            return
        step = s.cfg.vad.turn_check_ms * s.cfg.audio.sample_rate // 1000
        check = self.turn_check
        if check is not None and check.speech_end == ep.speech_end:
            if not check.task.done():
                # Still hearing: a model slower than turn_check_ms (a loaded CPU, the ASR beside it) must
                # be let finish. Cancelled and asked again each step, it would never answer (the cancelled
                # calls still run, and queue the next ones behind them), and the silence would decide.
                return
            heard_finished = check.p is not None and check.p >= s.cfg.vad.turn_threshold
            if ep.silence < check.silence + step or heard_finished:
                return  # asked already for this stretch of quiet, or heard finished: waiting for the least silence
        if ep.silence < step:
            return
        self._drop_turn_check()
        rate = s.cfg.audio.sample_rate
        start = max(self._speech_from(ep.onset, s.clock.samples), s.clock.samples - TURN_WINDOW_S * rate)
        audio = resample(s.history.slice(start, s.clock.samples), rate, turn.sample_rate)
        task = asyncio.create_task(turn.complete(audio), name="turn:check")
        self.turn_check = TurnCheck(ep.speech_end, ep.silence, task)

    def _turn_model_verdict(self) -> Utterance | None:
        """The utterance, if the turn model has heard it finished and the least silence has passed."""
        s, check, ep = self.session, self.turn_check, self.endpointer
        if check is None or check.speech_end != ep.speech_end:
            return None  # none asked, or the speaker went on: that verdict was about less than has been said
        if check.p is None:
            if not check.task.done():
                return None
            check.p = self._verdict(check)
        least = s.cfg.vad.turn_min_silence_ms * s.cfg.audio.sample_rate // 1000
        if check.p < s.cfg.vad.turn_threshold or ep.silence < least:
            return None
        self.turn_check = None
        return ep.end_now("turn_model", s.clock.samples)

    def _verdict(self, check: TurnCheck) -> float:
        """The finished call's probability; 0 if it was cancelled or failed (the silence decides then)."""
        if check.task.cancelled():
            return 0.0
        if (error := check.task.exception()) is not None:
            log.warning("turn model failed: the silence decides", error=str(error))
            return 0.0
        p = check.task.result()
        log.debug("turn model", p=round(p, 3), silence_ms=check.silence * 1000 // self.session.cfg.audio.sample_rate)
        return p

    def _drop_turn_check(self) -> None:
        if self.turn_check is not None:
            self.turn_check.task.cancel()
            self.turn_check = None

    async def _speculate(self) -> None:
        s, ep = self.session, self.endpointer
        spec_ms = s.cfg.vad.speculative_silence_ms
        if self.speculation is not None and self.speculation.speech_end != ep.speech_end:
            await self._drop_speculation("the speaker went on")  # that transcript would miss the rest
        if not spec_ms or self.speculation is not None or ep.onset is None:
            return
        if ep.silence >= spec_ms * s.cfg.audio.sample_rate // 1000:
            rate = s.cfg.audio.sample_rate
            audio = s.heard(self._speech_from(ep.onset, s.clock.samples), s.clock.samples)
            task = asyncio.create_task(s.answerer.hear(audio, rate), name="asr:speculative")
            self.speculation = Speculation(ep.speech_end, task)
            log.debug("speculative transcription started", audio_s=round(len(audio) / rate, 2))

    def _warm_llm(self) -> None:
        """Once the speculative transcript is in, the LLM may evaluate its prompt before the endpoint."""
        s, spec = self.session, self.speculation
        if spec is None or spec.warmed or not spec.task.done() or not s.cfg.llm.prefill:
            return
        spec.warmed = True
        if spec.task.cancelled() or spec.task.exception() is not None or s.responder is None:
            return
        s.responder.warm(s.request_text(spec.task.result().strip()))

    def _prepare_ahead(self) -> None:
        """Once the speculative transcript is in, prepare the reply on it (``dialog.preempt``)."""
        s, spec, ep = self.session, self.speculation, self.endpointer
        if (self.ahead is not None or spec is None or not spec.task.done() or not s.cfg.dialog.preempt
                or ep.onset is None or not s.can_speak()):
            return
        if spec.task.cancelled() or spec.task.exception() is not None:
            return  # the endpoint's reply transcribes again
        start = self._speech_from(ep.onset, s.clock.samples)
        self.ahead = Reply(s, ahead=True)
        self.ahead.start(s.heard(start, s.clock.samples), ep.onset, spec, heard=(start, spec.speech_end))
        log.debug("reply prepared ahead of the endpoint", transcript=spec.task.result().strip())

    async def _take_speculation(self) -> Speculation | None:
        spec, self.speculation = self.speculation, None
        if spec is not None and spec.speech_end != self.endpointer.speech_end:
            spec.task.cancel()
            await self._drop_ahead("the speaker went on")
            return None
        return spec

    async def _drop_speculation(self, why: str) -> None:
        if self.speculation is not None:
            self.speculation.task.cancel()
            self.speculation = None
        await self._drop_ahead(why)

    async def _drop_ahead(self, why: str) -> None:
        ahead, self.ahead = self.ahead, None
        if ahead is not None:
            log.info("the reply prepared ahead is dropped", why=why)
            await ahead.discard()
