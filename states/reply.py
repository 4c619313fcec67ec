"""One reply: transcribe the utterance, then speak the LLM's answer while it is still being written.

Thinking starts it and speaking lets it run on; leaving either for anything but speaking stops it.
``stop()`` is the single way a reply ends early, in this order: cancel and await the tasks (the
LLM and TTS are told to stop in flight), clear the sink's buffer, wait (bounded) for playback to
stop, then report ``PlaybackFinished(interrupted=True)``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from assistant.audio.protocols import Samples
from assistant.audio.wav import resample
from assistant.events import Error, PlaybackFinished, Transcript
from assistant.pipeline import PipelineOptions, SpeechPipeline
from assistant.tasks import TaskScope

if TYPE_CHECKING:
    from states.session import Session

log = structlog.get_logger("reply")


class Reply:
    def __init__(self, session: Session) -> None:
        self.session = session
        self.tasks = TaskScope("reply")
        self.stage = "asr"
        self.stopped = False
        self.playback_finished = False
        self.first_audio_sample: int | None = None
        self.pipeline: SpeechPipeline | None = None

    @property
    def playback_started(self) -> bool:
        return self.pipeline is not None and self.pipeline.playback_started

    def start(self, utterance: Samples) -> None:
        self.tasks.spawn(self._run(utterance), "reply")

    async def _run(self, utterance: Samples) -> None:
        s = self.session
        try:
            text = await self._transcribe(utterance)
            if not text:
                log.info("nothing heard in the utterance")
                s.request("reply_done", owner=self)
                return
            self.stage = "reply"
            options = PipelineOptions.from_config(s.cfg)
            self.pipeline = SpeechPipeline(s.models.llm, s.models.tts, s.sink, s.bus, options, self._first_audio,
                                           cache=s.phrase_cache)
            await self.pipeline.run(text)
            self.stage = "playback"
            await s.sink.wait_playout()
            if self.playback_started:
                self.playback_finished = True
                s.bus.publish(PlaybackFinished(interrupted=False))
            s.request("reply_done", owner=self)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("reply failed", stage=self.stage, error=str(exc))
            s.bus.publish(Error(stage=self.stage, message=str(exc)))
            s.request("error", owner=self)

    def _first_audio(self) -> None:
        self.first_audio_sample = self.session.clock.samples
        self.session.request("first_audio", owner=self)

    async def _transcribe(self, utterance: Samples) -> str:
        s = self.session
        asr = s.models.asr
        audio = resample(utterance, s.cfg.audio.sample_rate, asr.sample_rate)
        text = (await asr.transcribe(audio)).strip()
        s.bus.publish(Transcript(text=text))
        return text

    async def stop(self) -> None:
        """End the reply now: cancel, clear the sink, wait for silence, report the interruption."""
        if self.stopped:
            return
        self.stopped = True
        s = self.session
        s.models.asr.stop()
        if self.pipeline is not None:
            await self.pipeline.stop()
        await self.tasks.cancel()
        if self.playback_started and not self.playback_finished:
            s.sink.clear()
            timeout = s.cfg.barge_in.stop_timeout_ms / 1000
            try:
                await asyncio.wait_for(s.sink.wait_playout(), timeout)
            except TimeoutError:
                log.warning("playback did not stop in time", waited_s=timeout)
            self.playback_finished = True
            s.bus.publish(PlaybackFinished(interrupted=True))

