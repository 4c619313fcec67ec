"""One reply: hear the utterance, then speak the answer while it is still being written.

The session's answerer (``assistant/answerer.py``) hears the utterance and answers it: here, the ASR
and the responder, the reply spoken by the local TTS; on a satellite, Home Assistant, whose answer
brings its own audio. The transcript may already be on its way (the answerer started hearing the
speech before the endpoint). A wake word at its front is taken off; a transcript that is the
assistant's own words, heard while or just after it spoke, is dropped (the transcript layer of the
echo defence).

A ``Reply`` is the turn's handle. Thinking starts it and speaking lets it run on; leaving either
for anything but speaking interrupts it. Two futures say how far it got: ``first_audio`` (the
session sample where its first audio was queued) and ``done``, an ``Outcome`` (``states/outcome.py``)
set exactly once, at ``_end``, the one place a reply ends and posts the input that follows.

``interrupt()`` is the single way a reply ends early, in this order: cancel and await the tasks (the
LLM and TTS are told to stop in flight), clear the sink's buffer, wait (bounded) for playback to
stop, then report ``PlaybackFinished(interrupted=True)``. The answerer is told to give up the
utterance too (the transcription in flight, or Home Assistant's run).

Prepared ahead (``ahead=True``: listening starts it on the speculative transcript, before the
endpoint), a reply runs as far as it can without being heard or doing anything: its events, posts
and effects on the echo defence and the responder wait in ``events`` (a ``Held``), its pipeline
plays nothing, and an answer that would act waits for the endpoint. ``commit()`` (thinking, once the
endpoint confirms the words) lets all of it happen; ``discard()`` (the speaker went on) drops it
unheard and has the answerer undo its answer.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from enum import StrEnum
from typing import TYPE_CHECKING

import structlog

from assistant.audio.protocols import Samples
from assistant.events import Error, Held, PlaybackFinished, Preempted, ToolAnswered, Transcript
from assistant.pipeline import FixedText, PipelineOptions, Recording, SpeechPipeline
from assistant.respond import NOT_HEARD
from assistant.tasks import TaskScope
from assistant.text.echo_match import syllables
from models.protocols import APOLOGY, ModelError, WorkerLost
from states.inputs import FirstAudio
from states.outcome import NEXT, Ended, Outcome

if TYPE_CHECKING:
    from assistant.pipeline import Voice
    from assistant.respond import Answer
    from models.protocols import TextSource
    from states.context import TurnContext
    from states.inputs import Input, Speculation

log = structlog.get_logger("reply")

UNHEARD_MIN_S = 0.8  # a shorter utterance with no words in it was most likely a noise: no answer


class Stage(StrEnum):
    """How far a reply has got (an ``error`` event's ``stage``)."""

    ASR = "asr"
    TOOL = "tool"  # the decision: a tool, a limit or the LLM
    REPLY = "reply"  # speaking: the LLM's text through the TTS
    PLAYBACK = "playback"  # all of it queued, waiting for it to be heard


class Reply:
    """One turn's reply, from its transcript to its last played sample: the handle of the turn."""

    def __init__(self, session: TurnContext, *, ahead: bool = False) -> None:
        self.session = session
        # Prepared ahead (on the speculative transcript, before the endpoint): it plays nothing, posts
        # nothing and acts on nothing until ``commit()``; its events wait in ``events`` till then.
        self.ahead = ahead
        self.events = Held(session.bus, holding=ahead)
        self._committed = asyncio.Event()
        if not ahead:
            self._committed.set()
        self.started_at = session.clock.samples
        self.answered_ahead = False  # its answer was committed ahead, and is undone if it is dropped
        self.dropped = False  # prepared ahead and dropped unheard
        self.tasks = TaskScope("reply")
        self.stage = Stage.ASR
        self.stopped = False  # interrupted: its inputs still in the mailbox are dropped (a ``Requester``)
        loop = asyncio.get_running_loop()
        self.first_audio: asyncio.Future[int] = loop.create_future()
        self.done: asyncio.Future[Outcome] = loop.create_future()
        self.pipeline: SpeechPipeline | None = None
        self.speculation: Speculation | None = None
        self.heard: tuple[int, int] | None = None  # the request's audio: its first sample, its last voiced one
        self.request = ""  # the transcript it answers, once known
        self.answer: Answer | None = None  # once decided

    @property
    def playback_started(self) -> bool:
        return self.pipeline is not None and self.pipeline.playback_started

    @property
    def first_audio_sample(self) -> int | None:
        return self.first_audio.result() if self.first_audio.done() else None

    def _end(self, ended: Ended) -> None:
        """The reply is over: set ``done`` (the first call only) and post the input that follows."""
        if self.done.done():
            return
        said = self.pipeline.reply_text if self.pipeline is not None else ""
        intent = self.answer.intent if self.answer is not None else None
        self.done.set_result(Outcome(ended, self.request, said, intent, self.first_audio_sample))
        log.info("reply ended", ended=str(ended), intent=intent, said_chars=len(said))
        if ended is Ended.SPOKEN and self.session.responder is not None and self.session.cfg.llm.prefill:
            self.session.responder.prepare_next()  # heard out: the user has not spoken yet
        after = NEXT[ended]
        if after is not None:
            self._post(after)

    def _post(self, cause: Input) -> None:
        self.events.later(lambda: self.session.post(cause, owner=self))

    def _played_out(self) -> bool:
        return self.done.done() and self.done.result().ended is Ended.SPOKEN

    def start(self, utterance: Samples, utterance_start: int | None = None,
              speculation: Speculation | None = None, heard: tuple[int, int] | None = None) -> None:
        self.speculation = speculation
        self.heard = heard
        self.tasks.spawn(self._run(utterance, utterance_start), "reply")

    async def _run(self, utterance: Samples, utterance_start: int | None) -> None:
        s = self.session
        try:
            heard = await self._transcribe(utterance)
            self.request = text = s.request_text(heard)
            if text != heard:
                log.debug("wake word taken off the transcript", heard=heard)
            self.events.publish(Transcript(text=text))
            if not heard and len(utterance) >= UNHEARD_MIN_S * s.cfg.audio.sample_rate and s.models.tts is not None:
                # rather than a guess (a satellite has no voice of its own to ask with)
                log.info("speech, but the ASR made nothing of it: asking again")
                self._begin()
                await self._speak(FixedText(NOT_HEARD), "")
                return
            if not text:
                log.info("nothing heard in the utterance")
                self._end(Ended.SILENT)
                return
            if utterance_start is not None and s.echo.is_own_echo(text, utterance_start):
                self._end(Ended.SILENT)
                return
            if self._is_stop_word(text):
                log.info("stop word: no reply", transcript=text)
                self._end(Ended.STOP_WORD)
                return
            self.stage = Stage.TOOL
            # a tool's answer is saved here
            answer = await self._decide(text, len(utterance) / s.cfg.audio.sample_rate)
            self.answer = answer
            if answer.intent is not None:
                self.events.publish(ToolAnswered(intent=answer.intent))
            self.stage = Stage.REPLY
            self._begin()
            await self._speak(answer.source, answer.text, answer.voice)
        except asyncio.CancelledError:
            raise
        except WorkerLost as exc:
            await self._apologize(exc)
        except Exception as exc:
            self._failed(exc)
        finally:
            self._end(Ended.INTERRUPTED)  # cancelled before it ended (otherwise this does nothing)

    async def _decide(self, text: str, spoken_s: float) -> Answer:
        """The answer to ``text``. Prepared ahead, it is committed now unless acting on it would change
        something (a timer, a todo, a device): that waits until the endpoint has confirmed the words."""
        s = self.session
        if self.ahead:
            answer = await s.answerer.answer_ahead(text, spoken_s)
            if answer is not None:
                self.answered_ahead = True
                return answer
            await self._committed.wait()
        return await s.answerer.answer(text, spoken_s)

    def _begin(self) -> None:
        """The reply begins to be said: the echo defence collects what it says from here."""
        self.events.later(self.session.echo.reply_started)

    def commit(self) -> None:
        """The endpoint confirmed the words it was prepared on: what it kept happens now (its events
        with their own times), and it plays."""
        if not self.ahead:
            return
        s = self.session
        self.ahead = False
        s.bus.publish(Preempted(used=True, stage=self.stage, ahead_s=self._ahead_s()))
        self._committed.set()
        self.events.release()
        if self.pipeline is not None:
            self.pipeline.release()

    async def discard(self) -> None:
        """The speaker went on (or listening ended): drop this reply, prepared ahead, unheard, and undo
        what its answer changed."""
        if not self.ahead or self.stopped:
            return
        self.stopped = self.dropped = True
        self.events.drop()
        self.session.bus.publish(Preempted(used=False, stage=self.stage, ahead_s=self._ahead_s()))
        try:
            if self.pipeline is not None:
                await self.pipeline.stop()
            await self.tasks.cancel()
        finally:
            if self.answered_ahead:
                self.session.answerer.retract()
            self._end(Ended.INTERRUPTED)

    def _ahead_s(self) -> float:
        return round((self.session.clock.samples - self.started_at) / self.session.cfg.audio.sample_rate, 3)

    def announce(self, text: str) -> None:
        """Speak ``text`` unasked (a reminder fell due): no transcript, no LLM."""
        self.stage = Stage.REPLY
        self._begin()
        self.tasks.spawn(self._announce(text), "announce")

    async def _announce(self, text: str) -> None:
        try:
            await self._speak(FixedText(text), "")
        except asyncio.CancelledError:
            raise
        except WorkerLost as exc:
            self.session.unsaid = text  # said again once there is a worker to say it
            await self._apologize(exc)
        except Exception as exc:
            self._failed(exc)
        finally:
            self._end(Ended.INTERRUPTED)  # cancelled before it ended (otherwise this does nothing)

    async def _apologize(self, exc: WorkerLost) -> None:
        """The worker was lost mid-reply: say so in its voice, recorded when it started, and listen on."""
        s = self.session
        log.error("the worker was lost", stage=self.stage, error=str(exc))
        self.events.publish(Error(stage=self.stage, message=str(exc)))
        worker = s.models.worker
        if worker is None or not worker.apology.size:
            self._end(Ended.FAILED)
            return
        if self.stage is not Stage.REPLY:
            self._begin()
        self.stage = Stage.REPLY
        try:
            await self._speak(FixedText(APOLOGY), "", Recording(worker.apology, worker.rates["tts"]))
        except asyncio.CancelledError:
            raise
        except Exception as again:
            self._failed(again)

    async def _speak(self, source: TextSource, question: str, voice: Voice | None = None) -> None:
        """The reply from ``source`` through the speech pipeline, then wait for it to be heard. It is
        spoken by the local TTS, or by ``voice``: audio made already, which says it in one piece."""
        s = self.session
        options = PipelineOptions.from_config(s.cfg)
        if voice is not None:
            options = replace(options, whole_reply=True, early_first=False)  # one recording: one chunk
        speaker = voice or s.models.tts
        if speaker is None:
            raise ModelError("no TTS here to speak the reply with")
        self.pipeline = SpeechPipeline(source, speaker, s.sink, self.events, options, self._first_audio,
                                       cache=s.phrase_cache, cores=s.models.cores, held=self.ahead)
        pipeline = self.pipeline
        try:
            await pipeline.run(question)
        finally:
            if s.responder is not None and not self.dropped:
                responder = s.responder
                self.events.later(lambda: responder.said(pipeline.reply_text))  # as far as it got: for "再说一遍"
        self.stage = Stage.PLAYBACK
        await self._committed.wait()  # (a reply with nothing to play is done before the endpoint)
        await s.sink.wait_playout()
        if s.responder is not None:
            s.responder.finished()
        if self.playback_started:
            self.events.publish(PlaybackFinished(interrupted=False))
        self._end(Ended.SPOKEN)

    def _failed(self, exc: Exception) -> None:
        log.error("reply failed", stage=self.stage, error=str(exc))
        self.events.publish(Error(stage=self.stage, message=str(exc)))
        self._end(Ended.FAILED)

    def _first_audio(self) -> None:
        if not self.first_audio.done():
            self.first_audio.set_result(self.session.clock.samples)
        self.session.echo.playback_started()
        self._post(FirstAudio())

    async def _transcribe(self, utterance: Samples) -> str:
        s = self.session
        text = await self._speculated()
        if text is None:
            text = await s.answerer.hear(utterance, s.cfg.audio.sample_rate)
        return text.strip()

    async def _speculated(self) -> str | None:
        """The speculative transcript, if one was started and did not fail."""
        spec, self.speculation = self.speculation, None
        if spec is None:
            return None
        try:
            return await spec.task
        except asyncio.CancelledError:
            me = asyncio.current_task()
            if me is not None and me.cancelling():
                raise  # this reply is being stopped
            return None  # only the speculation was called off
        except Exception as exc:
            log.warning("speculative transcription failed, transcribing again", error=str(exc))
            return None

    def _is_stop_word(self, text: str) -> bool:
        """The whole request is a stop word (it interrupted the last reply by speech, before the
        keyword spotter had heard it all): nothing to answer."""
        words = self.session.cfg.barge_in.stop_words
        return any(syllables(text) == syllables(w) for w in words)

    def continued_by(self, onset: int) -> int | None:
        """Where the request this reply answers began, if speech starting at ``onset`` goes on with it
        (within ``listening.resume_s`` of its last voiced sample, and nothing was done for it yet);
        else None: the speech is a new request. The onset is where the barge-in detector's run of
        speech began, which under the reply's echo is later than the words (hey_xiaozhi's 今天怎么样
        starts 0.26 s after 你在吗 and is detected from 0.74 s)."""
        s = self.session
        rate = s.cfg.audio.sample_rate
        resume = int(s.cfg.listening.resume_s * rate)
        if self.heard is None or not resume or onset - self.heard[1] > resume:
            return None
        if self.answer is not None and self.answer.acted:
            return None  # a timer set, a todo added: answered, and the new speech is a new request
        return self.heard[0]

    def timing(self, onset: int) -> dict[str, float]:
        """How long after the request's last voiced sample, and after the reply's first audio, speech
        began at ``onset`` (seconds, for the barge-in's log line)."""
        rate = self.session.cfg.audio.sample_rate
        out = {}
        if self.heard is not None:
            out["after_request_s"] = round((onset - self.heard[1]) / rate, 3)
        if self.first_audio_sample is not None:
            out["after_first_audio_s"] = round((onset - self.first_audio_sample) / rate, 3)
        return out

    async def interrupt(self) -> None:
        """End the reply now: cancel, clear the sink, wait for silence, report the interruption."""
        if self.stopped:
            return
        self.stopped = True
        played_out = self._played_out()  # read before the tasks are cancelled (they end it)
        s = self.session
        try:
            if self.speculation is not None:
                self.speculation.task.cancel()
            s.answerer.stop()
            if self.pipeline is not None:
                await self.pipeline.stop()
            await self.tasks.cancel()
            if self.playback_started and not played_out:
                s.sink.clear()
                timeout = s.cfg.barge_in.stop_timeout_ms / 1000
                try:
                    await asyncio.wait_for(s.sink.wait_playout(), timeout)
                except TimeoutError:
                    log.warning("playback did not stop in time", waited_s=timeout)
                if s.responder is not None:
                    s.responder.finished()
                s.bus.publish(PlaybackFinished(interrupted=True))
        finally:
            self._end(Ended.INTERRUPTED)  # even if this was cancelled on the way: done is always set

