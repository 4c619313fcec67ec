"""One reply: transcribe the utterance, ask the LLM, synthesize and play the answer.

Thinking starts it and speaking lets it run on; leaving either for anything but speaking stops it.
``stop()`` is the single way a reply ends early, in this order: cancel and await the tasks (the
backends are told to stop in flight), clear the sink's buffer, wait (bounded) for playback to
stop, then report ``PlaybackFinished(interrupted=True)``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np
import structlog

from assistant.audio.protocols import Samples
from assistant.audio.wav import resample
from assistant.events import Error, PlaybackFinished, PlaybackStarted, ReplyText, Transcript, TtsChunk
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
        self.playback_started = False
        self.playback_finished = False
        self.first_audio_sample: int | None = None

    def start(self, utterance: Samples) -> None:
        self.tasks.spawn(self._run(utterance), "pipeline")

    async def _run(self, utterance: Samples) -> None:
        s = self.session
        try:
            text = await self._transcribe(utterance)
            if not text:
                log.info("nothing heard in the utterance")
                s.request("reply_done", owner=self)
                return
            self.stage = "llm"
            answer = "".join([piece async for piece in s.models.llm.reply(text)]).strip()
            s.bus.publish(ReplyText(text=answer))
            if answer:
                await self._speak(answer)
            s.request("reply_done", owner=self)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.error("reply failed", stage=self.stage, error=str(exc))
            s.bus.publish(Error(stage=self.stage, message=str(exc)))
            s.request("error", owner=self)

    async def _transcribe(self, utterance: Samples) -> str:
        s = self.session
        asr = s.models.asr
        audio = resample(utterance, s.cfg.audio.sample_rate, asr.sample_rate)
        text = (await asr.transcribe(audio)).strip()
        s.bus.publish(Transcript(text=text))
        return text

    async def _speak(self, text: str) -> None:
        s = self.session
        tts, sink, clock = s.models.tts, s.sink, s.clock
        self.stage = "tts"
        started = clock.now()
        async for piece in tts.synthesize(text):
            synth_s = clock.now() - started
            audio = resample(piece, tts.sample_rate, sink.sample_rate)
            s.bus.publish(TtsChunk(text=text, audio_s=round(len(piece) / tts.sample_rate, 3),
                                   synth_s=round(synth_s, 3)))
            self.stage = "playback"
            await sink.write(np.asarray(audio, np.float32))
            if not self.playback_started:
                self.playback_started = True
                self.first_audio_sample = clock.samples
                s.bus.publish(PlaybackStarted())
                s.request("first_audio", owner=self)
            self.stage = "tts"
            started = clock.now()
        self.stage = "playback"
        await sink.wait_playout()
        if self.playback_started:
            self.playback_finished = True
            s.bus.publish(PlaybackFinished(interrupted=False))

    async def stop(self) -> None:
        """End the reply now: cancel, clear the sink, wait for silence, report the interruption."""
        if self.stopped:
            return
        self.stopped = True
        s = self.session
        s.models.llm.stop()
        s.models.tts.stop()
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
