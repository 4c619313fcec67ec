"""The one-shot jobs of the command line: transcribe, say, ask, file.

Each loads only the backends it needs. Audio goes to ``-o FILE`` or plays on the configured
device, which is opened before any model loads, so a missing sound card is reported at once.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from assistant import backends, respond
from assistant.app import loaded
from assistant.audio.alsa import AlsaSink
from assistant.audio.protocols import AudioSink, Samples
from assistant.audio.wav import WavFileSink, read_wav, resample, write_wav
from assistant.config import Config
from assistant.respond import Responder


def transcribe(cfg: Config, args: argparse.Namespace) -> int:
    audio = [read_wav(p, cfg.audio.sample_rate) for p in args.wavs]  # every file is checked first
    asr = backends.asr(cfg, backends.assets_for(cfg))
    with loaded(asr):
        for path, samples in zip(args.wavs, audio, strict=True):
            print(f"{path}\t{asyncio.run(asr.transcribe(samples))}", flush=True)
    return 0


def say(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.text.normalize import normalize

    if not any(ch.isalnum() for ch in normalize(args.text)):
        print(f"assistant: there is nothing to speak in {args.text!r}", file=sys.stderr)
        return 2
    sink = None if args.output else AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate,
                                             cfg.audio.playback_buffer_ms)
    tts = backends.tts(cfg, backends.assets_for(cfg))
    with loaded(tts):
        asyncio.run(_speak(tts, args.text, sink, args.output))
    return 0


def ask(cfg: Config, args: argparse.Namespace) -> int:
    sink = None if args.output else AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate,
                                             cfg.audio.playback_buffer_ms)
    assets = backends.assets_for(cfg)
    tts = backends.tts(cfg, assets)  # its files are checked first: nothing is saved that cannot be confirmed
    with _responder(cfg) as responder:
        local = responder.local(args.text)
        if local is not None:  # a frequent command or an honest limit: answered without loading the LLM
            with loaded(tts):
                asyncio.run(_answer(cfg, local.source, tts, local.text, sink, args.output))
            return 0
        responder.llm = backends.llm(cfg, assets)
        with loaded(responder.llm, tts):
            answer = responder.answer(args.text)
            asyncio.run(_answer(cfg, answer.source, tts, answer.text, sink, args.output))
    return 0


@contextmanager
def _responder(cfg: Config) -> Iterator[Responder]:
    """Who answers, with the offline tools and their database (closed afterwards); no LLM yet."""
    tools = backends.tools(cfg)
    try:
        yield respond.for_config(cfg, None, tools)
    finally:
        if tools is not None and tools.store is not None:
            tools.store.close()


def answer_file(cfg: Config, args: argparse.Namespace) -> int:
    audio = read_wav(args.wav, cfg.audio.sample_rate)
    sink = None if args.output else AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate,
                                             cfg.audio.playback_buffer_ms)
    assets = backends.assets_for(cfg)
    asr, llm, tts = backends.asr(cfg, assets), backends.llm(cfg, assets), backends.tts(cfg, assets)
    with loaded(asr, llm, tts), _responder(cfg) as responder:
        text = asyncio.run(asr.transcribe(audio))
        print(f"你: {text}", flush=True)
        if not text:
            print("(nothing was heard in the recording)", file=sys.stderr)
            return 1
        responder.llm = llm
        answer = responder.answer(text)
        asyncio.run(_answer(cfg, answer.source, tts, answer.text, sink, args.output))
    return 0


async def _answer(cfg: Config, llm: Any, tts: Any, question: str, sink: AudioSink | None,
                  output: Path | None) -> None:
    """Print the reply as the LLM writes it and speak it at the same time, chunk by chunk."""
    from assistant.clock import WallClock
    from assistant.events import EventBus
    from assistant.pipeline import PipelineOptions, SpeechPipeline

    target = sink if sink is not None else WavFileSink(output or Path("answer.wav"), tts.sample_rate)
    print("听说: ", end="", flush=True)
    pipeline = SpeechPipeline(llm, tts, target, EventBus(WallClock()), PipelineOptions.from_config(cfg),
                              lambda: None, cache=backends.phrase_cache(cfg, backends.assets_for(cfg)),
                              on_text=lambda piece: print(piece, end="", flush=True))
    try:
        await pipeline.run(question)
        await target.wait_playout()
    finally:
        print(flush=True)
        target.close()
    if sink is None:
        print(f"wrote {output}", file=sys.stderr)


async def _speak(tts: Any, text: str, sink: AudioSink | None, output: Path | None) -> None:
    """Play the synthesized audio as it comes, or collect it into ``output``."""
    collected: list[Samples] = []
    try:
        async for piece in _pieces(tts, text):
            if sink is not None:
                await sink.write(resample(piece, tts.sample_rate, sink.sample_rate))
            else:
                collected.append(piece)
        if sink is not None:
            await sink.wait_playout()
    finally:
        if sink is not None:
            sink.close()
    if output is not None:
        audio = np.concatenate(collected) if collected else np.zeros(0, np.float32)
        write_wav(output, audio, tts.sample_rate)
        print(f"wrote {output} ({len(audio) / tts.sample_rate:.2f} s)", file=sys.stderr)


async def _pieces(tts: Any, text: str) -> AsyncIterator[Samples]:
    async for piece in tts.synthesize(text):
        yield np.asarray(piece, np.float32)
