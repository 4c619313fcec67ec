"""One Wyoming connection: describe, transcribe, synthesize (whole or streamed) and detect.

The models are shared by every connection (``Services``), each behind a lock, so two Home Assistant
pipelines take turns rather than mixing their streams. A text is spoken through the assistant's own
speech pipeline: normalized for the ear, cut into clauses, each clause synthesized while the one
before it is sent. A streamed text (``synthesize-start``/``-chunk``/``-stop``) is spoken as it
arrives, so Home Assistant hears the first clause before the language model has written the rest.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import numpy as np
import structlog
from wyoming.asr import Transcribe, Transcript
from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.error import Error
from wyoming.event import Event
from wyoming.info import Describe, Info
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.tts import Synthesize, SynthesizeChunk, SynthesizeStart, SynthesizeStop, SynthesizeStopped
from wyoming.wake import Detect, Detection, NotDetected

from assistant.audio.protocols import Samples
from assistant.audio.wav import NullSink
from assistant.clock import WallClock
from assistant.events import EventBus
from assistant.phrase_cache import PhraseCache
from assistant.pipeline import FixedText, PipelineOptions, SpeechPipeline
from assistant.status.board import StatusBoard
from assistant.tasks import TaskScope
from assistant.wyoming.pcm import WIDTH, BadAudio, Incoming, chunks
from models.protocols import Asr, Kws, ModelError, Tts, Voices

log = structlog.get_logger("wyoming")

REQUESTS = ("describe", "transcribe", "synthesize", "synthesize-start", "detect")
MAX_UTTERANCE_S = 30.0  # Whisper hears 30 s at most; audio beyond it is not transcribed


@dataclass
class Services:
    """The loaded models every connection shares, and what ``describe`` says about them."""

    info: Info
    asr: Asr
    tts: Tts
    kws: Kws | None
    options: PipelineOptions
    voice: str = ""  # the configured voice, spoken when a request names none
    cache: PhraseCache | None = None  # holds the configured voice's phrases only
    asr_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    tts_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    kws_user: object | None = None  # the connection detecting, if any: the spotter holds one stream
    # A transcript made right: near-miss command words corrected (tools.hotwords), and a wake word said
    # in the same breath as the request taken off its front (a satellite sends both)
    correct: Callable[[str], str] | None = None
    served: Counter[str] = field(default_factory=Counter)  # requests by kind, for the status page
    board: StatusBoard | None = None  # the status page's, which hears of refused requests

    def voice_for(self, name: str | None) -> str | None:
        """The voice to speak a request with: the one asked for if there is one, else the configured one."""
        if not isinstance(self.tts, Voices):
            return None
        if name and name not in self.tts.voices:
            log.warning("unknown voice asked for, speaking with the configured one", voice=name)
            return self.voice
        return name or self.voice


class TextStream:
    """A text that arrives in pieces, the text source of a speech pipeline."""

    def __init__(self) -> None:
        self._pieces: asyncio.Queue[str | None] = asyncio.Queue()

    def put(self, text: str) -> None:
        self._pieces.put_nowait(text)

    def end(self) -> None:
        self._pieces.put_nowait(None)

    def stop(self) -> None:
        self.end()

    async def reply(self, question: str) -> AsyncIterator[str]:
        while (piece := await self._pieces.get()) is not None:
            yield piece


class EventSink(NullSink):
    """The speech pipeline's sink: each piece of audio goes out as ``audio-chunk`` events at once."""

    def __init__(self, handler: AsyncEventHandler, sample_rate: int) -> None:
        super().__init__(sample_rate)
        self.handler = handler

    async def write(self, samples: Samples) -> None:
        for chunk in chunks(samples, self.sample_rate):
            await self.handler.write_event(chunk.event())
        await super().write(samples)


class Handler(AsyncEventHandler):
    """The events of one connection, in the order they come."""

    def __init__(self, services: Services, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.services = services
        self.mode: str | None = None  # "transcribe" or "detect" while an audio stream is expected
        self.incoming = Incoming(16000)
        self.heard: list[Samples] = []
        self.heard_samples = 0
        self.wake_names: list[str] | None = None
        self.detected = False
        self.stream: TextStream | None = None
        self.speaking: asyncio.Task[None] | None = None
        self.tasks = TaskScope("wyoming")

    async def handle_event(self, event: Event) -> bool:
        if event.type in REQUESTS:
            self.services.served[event.type] += 1
        try:
            await self._handle(event)
        except (BadAudio, ModelError) as exc:
            log.warning("request refused", request=event.type, error=str(exc))
            if self.services.board is not None:
                self.services.board.error(f"wyoming {event.type}", str(exc))
            await self.write_event(Error(text=str(exc), code=type(exc).__name__).event())
        return True

    async def disconnect(self) -> None:
        if self.stream is not None:
            self.stream.end()
        await self.tasks.cancel()
        self._release_spotter()

    async def _handle(self, event: Event) -> None:
        if Describe.is_type(event.type):
            await self.write_event(self.services.info.event())
        elif Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif Transcribe.is_type(event.type):
            self.mode = "transcribe"
        elif Detect.is_type(event.type):
            self._claim_spotter(Detect.from_event(event).names)
        elif AudioStart.is_type(event.type):
            self._audio_start(AudioStart.from_event(event))
        elif AudioChunk.is_type(event.type):
            await self._audio_chunk(AudioChunk.from_event(event))
        elif AudioStop.is_type(event.type):
            await self._audio_stop()
        elif Synthesize.is_type(event.type):
            if self.stream is None:  # inside a stream it is the same text again, for older clients
                request = Synthesize.from_event(event)
                await self._speak(FixedText(request.text), request.voice.name if request.voice else None)
        elif SynthesizeStart.is_type(event.type):
            await self._stream_start(SynthesizeStart.from_event(event))
        elif SynthesizeChunk.is_type(event.type):
            if self.stream is not None:
                self.stream.put(SynthesizeChunk.from_event(event).text)
        elif SynthesizeStop.is_type(event.type):
            await self._stream_stop()
        else:
            log.debug("event ignored", request=event.type)

    # -- listening ------------------------------------------------------------------------------
    def _claim_spotter(self, names: list[str] | None) -> None:
        s = self.services
        if s.kws is None:
            raise ModelError("no wake words are configured here (wake.keywords)")
        if s.kws_user is not None and s.kws_user is not self:
            raise ModelError("the wake-word detector is listening to another stream; try again when it ends")
        s.kws_user = self
        s.kws.reset()
        self.mode, self.wake_names, self.detected = "detect", names or None, False

    def _release_spotter(self) -> None:
        if self.services.kws_user is self:
            self.services.kws_user = None

    def _audio_start(self, start: AudioStart) -> None:
        self.incoming.start(start)
        self.heard, self.heard_samples = [], 0
        if self.mode is None:
            self.mode = "transcribe"  # audio without a request: Home Assistant always means speech to text

    async def _audio_chunk(self, chunk: AudioChunk) -> None:
        if self.mode is None:
            return
        audio = self.incoming.read(chunk)
        if self.mode == "transcribe":
            if self.heard_samples + len(audio) <= MAX_UTTERANCE_S * self.incoming.rate:
                self.heard.append(audio)
            self.heard_samples += len(audio)
            return
        kws = self.services.kws
        if kws is None:  # pragma: no cover - a detect request without a spotter was refused
            return
        word = await kws.accept(audio)
        self.heard_samples += len(audio)
        if word and not self.detected and (self.wake_names is None or word in self.wake_names):
            self.detected = True
            at_ms = int(1000 * self.heard_samples / self.incoming.rate)
            log.info("wake word detected", word=word, at_ms=at_ms)
            await self.write_event(Detection(name=word, timestamp=at_ms).event())

    async def _audio_stop(self) -> None:
        mode, self.mode = self.mode, None
        if mode == "transcribe":
            self.heard.append(self.incoming.end())
            audio = np.concatenate(self.heard)
            if self.heard_samples > len(audio):
                log.warning("utterance cut for the ASR", heard_s=round(self.heard_samples / self.incoming.rate, 1),
                            kept_s=MAX_UTTERANCE_S)
            async with self.services.asr_lock:
                text = await self.services.asr.transcribe(audio) if len(audio) else ""
            if text and self.services.correct is not None:
                text = self.services.correct(text)
            log.info("transcribed", text=text, audio_s=round(len(audio) / self.incoming.rate, 2))
            await self.write_event(Transcript(text=text, language="zh").event())
        elif mode == "detect":
            if not self.detected:
                await self.write_event(NotDetected().event())
            self._release_spotter()

    # -- speaking -------------------------------------------------------------------------------
    async def _stream_start(self, start: SynthesizeStart) -> None:
        if self.stream is not None:
            await self._stream_stop()  # a new stream before the last one's stop: finish that one first
        self.stream = TextStream()
        voice = start.voice.name if start.voice else None
        self.speaking = self.tasks.spawn(self._speak(self.stream, voice), "speak")

    async def _stream_stop(self) -> None:
        stream, speaking = self.stream, self.speaking
        if stream is None or speaking is None:
            return
        stream.end()
        try:
            await speaking
        finally:
            self.stream = self.speaking = None
        await self.write_event(SynthesizeStopped().event())

    async def _speak(self, text: FixedText | TextStream, voice: str | None) -> None:
        s = self.services
        async with s.tts_lock:
            chosen = s.voice_for(voice)
            if chosen is not None and isinstance(s.tts, Voices):
                await s.tts.use_voice(chosen)
            cache = s.cache if chosen in (None, s.voice) else None
            rate = s.tts.sample_rate
            await self.write_event(AudioStart(rate=rate, width=WIDTH, channels=1).event())
            pipeline = SpeechPipeline(text, s.tts, EventSink(self, rate), EventBus(WallClock()), s.options,
                                      lambda: None, cache=cache)
            await pipeline.run("")
            await self.write_event(AudioStop().event())
