"""Speak while thinking: LLM tokens → chunker → normalizer → TTS → gapless playback.

Three tasks joined by queues. The text task streams the LLM's reply through the chunker and the
normalizer; the synthesis task turns each chunk into audio (trimmed, faded, with a pause fitted to
its punctuation) on the TTS backend's own thread, at most ``lookahead`` chunks ahead of playback;
the playback task hands the audio to the sink and keeps the timeline, so a starved sink shows up as
a gap. Cancelling the pipeline's scope stops all three at once (the backends are told to stop too).

A ``held`` pipeline (a reply prepared before the endpoint) writes and synthesizes ahead, as far as
its queues allow, but plays nothing until ``release()``.

With ``whole_reply`` the chunker is bypassed: the reply is synthesized in one piece once the LLM has
finished — the naive baseline that ``assistant bench`` compares against.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import structlog

from assistant.audio import hygiene
from assistant.audio.protocols import AudioSink, Samples
from assistant.audio.resample import resample
from assistant.config import Config
from assistant.events import ChunkQueued, LlmFirstToken, PlaybackStarted, Publisher, ReplyText, TextChunk, TtsChunk
from assistant.phrase_cache import PhraseCache
from assistant.tasks import TaskScope
from assistant.text.chunk import Chunker
from assistant.text.normalize import normalize, protected_spans
from models.cores import CoreGate
from models.protocols import TextSource

log = structlog.get_logger("pipeline")

CACHED_PHRASE_MAX = 16  # characters: greetings, confirmations, fixed parts of tool replies
HOLD_S = 0.01  # of an early first piece, kept back to fade out if nothing follows it


@dataclass(frozen=True)
class PipelineOptions:
    first_chunk_max: int = 12
    chunk_max: int = 40
    chunk_growth: float = 1.0
    lookahead: int = 2
    comma_pause_ms: int = 150
    period_pause_ms: int = 300
    trim_tail: bool = True
    whole_reply: bool = False
    early_first: bool = False  # each chunk's first piece goes to the sink at once (the TTS speaks it early)
    tts_first: bool = False  # the LLM waits whenever the TTS renders, not only for the first sound

    @classmethod
    def from_config(cls, cfg: Config) -> PipelineOptions:
        t = cfg.tts
        return cls(first_chunk_max=t.first_chunk_max, chunk_max=t.chunk_max, chunk_growth=t.chunk_growth,
                   lookahead=t.lookahead_chunks,
                   comma_pause_ms=t.comma_pause_ms, period_pause_ms=t.period_pause_ms, trim_tail=t.trim_tail,
                   whole_reply=not t.streaming, early_first=cfg.models.tts == "kokoro" and t.first_frames > 0,
                   tts_first=t.llm_waits == "always")


class FixedText:
    """A reply already written (a tool's answer): the text source of its pipeline."""

    def __init__(self, text: str) -> None:
        self.text = text

    def stop(self) -> None: ...

    async def reply(self, question: str) -> AsyncIterator[str]:
        yield self.text


class Voice(Protocol):
    """What speaks each chunk of a reply: the TTS, or audio made already (a ``Recording``, a satellite's
    reply from Home Assistant), which can say one thing only: the one chunk of a ``whole_reply``."""

    sample_rate: int

    def synthesize(self, text: str) -> AsyncIterator[Samples]:
        """Stream the audio of ``text`` piece by piece at ``sample_rate``."""
        ...

    def stop(self) -> None:
        """Stop at the next piece."""
        ...


class Recording:
    """Audio made earlier, in place of the TTS (the apology said while there is no worker to speak).

    It can say one thing only: give it to a pipeline with ``whole_reply``, whose one chunk is that text.
    """

    def __init__(self, audio: Samples, sample_rate: int) -> None:
        self.audio, self.sample_rate = audio, sample_rate

    def stop(self) -> None: ...

    async def synthesize(self, text: str) -> AsyncIterator[Samples]:
        yield self.audio


class SpeechPipeline:
    """One reply's text-to-speech pipeline; ``run()`` returns when the last chunk has been queued."""

    def __init__(self, source: TextSource, tts: Voice, sink: AudioSink, bus: Publisher, options: PipelineOptions,
                 on_first_audio: Callable[[], None], cache: PhraseCache | None = None,
                 on_text: Callable[[str], None] | None = None, cores: CoreGate | None = None,
                 held: bool = False) -> None:
        self.source, self.tts, self.sink, self.bus = source, tts, sink, bus
        self.options = options
        self.on_first_audio = on_first_audio
        self.cache = cache
        self.on_text = on_text
        self.cores = cores
        self.tasks = TaskScope("pipeline")
        self.reply_text = ""
        self.playback_started = False
        self._stopping = False
        # held: a reply prepared before the endpoint writes and synthesizes ahead, but plays nothing
        # until ``release()``
        self._released = asyncio.Event()
        if not held:
            self._released.set()
        self._texts: asyncio.Queue[str | None] = asyncio.Queue()
        # (chunk text, a piece of its audio) or (chunk text, None) once the chunk is complete; None at the end
        self._audio: asyncio.Queue[tuple[str, Samples | None] | None] = asyncio.Queue(maxsize=max(1, options.lookahead))

    async def run(self, question: str) -> None:
        """Speak the LLM's answer to ``question``; return once all of it is queued on the sink."""
        producers = [self.tasks.spawn(self._write(question), "text"), self.tasks.spawn(self._synthesize(), "tts")]
        player = self.tasks.spawn(self._play(), "playback")
        try:
            await asyncio.gather(*producers, player)
        finally:
            await self.tasks.cancel()

    def release(self) -> None:
        """Let a held pipeline play."""
        self._released.set()

    async def stop(self) -> None:
        self._stopping = True
        self.source.stop()
        self.tts.stop()
        await self.tasks.cancel()

    # -- the three stages -----------------------------------------------------------------------
    async def _write(self, question: str) -> None:
        o = self.options
        chunker = Chunker(o.first_chunk_max, o.chunk_max, protected_spans, growth=o.chunk_growth)
        pieces: list[str] = []
        async for piece in self.source.reply(question):
            if not pieces:
                self.bus.publish(LlmFirstToken())
            pieces.append(piece)
            if self.on_text is not None:
                self.on_text(piece)
            if not o.whole_reply:
                for chunk in chunker.feed(piece):
                    await self._queue_text(chunk)
        self.reply_text = "".join(pieces).strip()
        self.bus.publish(ReplyText(text=self.reply_text))
        for chunk in [self.reply_text] if o.whole_reply else chunker.flush():
            await self._queue_text(chunk)
        await self._texts.put(None)

    async def _queue_text(self, raw: str) -> None:
        spoken = normalize(raw).strip()
        if spoken and any(ch.isalnum() for ch in spoken):
            self.bus.publish(TextChunk(text=spoken))
            await self._texts.put(spoken)

    async def _synthesize(self) -> None:
        clock = self.bus.clock
        while (text := await self._texts.get()) is not None:
            synth_s = audio_s = 0.0
            pieces = self._pieces(text)
            while True:
                started = clock.now()
                gate = self.cores if self.options.tts_first or (not self.playback_started and audio_s == 0) else None
                with gate.hold() if gate is not None else nullcontext():
                    audio = await anext(pieces, None)
                synth_s += clock.now() - started
                if audio is None:
                    break
                audio_s += len(audio) / self.tts.sample_rate
                await self._audio.put((text, resample(audio, self.tts.sample_rate, self.sink.sample_rate)))
            self.bus.publish(TtsChunk(text=text, audio_s=round(audio_s, 3), synth_s=round(synth_s, 3)))
            await self._audio.put((text, None))
        await self._audio.put(None)

    async def _pieces(self, text: str) -> AsyncIterator[Samples]:
        """The chunk's audio, cleaned, as the TTS makes it: with ``early_first``, its first piece goes to the
        sink at once (all but the last few ms, kept to fade out if nothing follows); later pieces wait
        for the next, so the last one can have its tail trimmed."""
        rate, early = self.tts.sample_rate, self.options.early_first
        if self.cache is not None and (hit := self.cache.get(text)) is not None:
            yield self._clean(text, resample(hit[0], hit[1], rate), head=True, tail=True)
            return
        made: list[Samples] = []
        held: Samples | None = None  # audio not yet handed on
        started = False  # the chunk's first sample has been handed on
        async for piece in self.tts.synthesize(text):
            made.append(piece)
            if early and not started:
                piece = hygiene.fade_edges(hygiene.trim_head(piece, rate), rate, end=False)
                keep = min(len(piece), int(HOLD_S * rate))
                yield piece[: len(piece) - keep]
                held, started = piece[len(piece) - keep:], True
                continue
            if held is not None:
                yield self._clean(text, held, head=not started, tail=False)
                started = True
            held = piece
        if held is not None:
            yield self._clean(text, held, head=not started, tail=True, trim=len(held) > HOLD_S * rate + 1)
        audio = np.concatenate(made).astype(np.float32) if made else np.zeros(0, np.float32)
        if self.cache is not None and not self._stopping and len(text) <= CACHED_PHRASE_MAX and len(audio):
            self.cache.put(text, audio, rate)

    def _clean(self, text: str, audio: Samples, *, head: bool, tail: bool, trim: bool = True) -> Samples:
        rate, o = self.tts.sample_rate, self.options
        if head:
            audio = hygiene.trim_head(audio, rate)
        if tail and o.trim_tail and trim:
            audio = hygiene.trim_tail(audio, rate)
        audio = hygiene.fade_edges(audio, rate, start=head, end=tail)
        if not tail:
            return audio
        pause = hygiene.pause_after(text, comma_ms=o.comma_pause_ms, period_ms=o.period_pause_ms)
        return np.concatenate([audio, hygiene.silence(pause, rate)]).astype(np.float32)

    async def _play(self) -> None:
        """Hand each piece to the sink; one ``ChunkQueued`` per chunk, with the longest wait on the way."""
        clock, rate = self.bus.clock, self.sink.sample_rate
        play_end: float | None = None
        index, duration, gap = 0, 0.0, 0.0
        while (item := await self._audio.get()) is not None:
            _, audio = item
            if audio is None:
                self.bus.publish(ChunkQueued(index=index, audio_s=round(duration, 3), gap_s=round(gap, 3)))
                index, duration, gap = index + 1, 0.0, 0.0
                continue
            if not self._released.is_set():
                await self._released.wait()
            now = clock.now()
            gap = max(gap, 0.0 if play_end is None else max(0.0, now - play_end))
            await self.sink.write(audio)
            if not self.playback_started:
                self.playback_started = True
                self.bus.publish(PlaybackStarted())
                self.on_first_audio()
            duration += len(audio) / rate
            play_end = max(play_end or now, now) + len(audio) / rate
