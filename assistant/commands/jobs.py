"""The one-shot jobs of the command line: transcribe, say, ask, file.

Each loads only the backends it needs. Audio goes to ``-o FILE`` or plays on the configured
device, which is opened before any model loads, so a missing sound card is reported at once.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np

from assistant import app
from assistant.audio.alsa import AlsaSink
from assistant.audio.protocols import AudioSink, Samples
from assistant.audio.resample import resample
from assistant.audio.wav import WavFileSink, read_wav, write_wav
from assistant.config import Config
from assistant.respond import Responder
from models.protocols import char_logprob, readings


def transcribe(cfg: Config, args: argparse.Namespace) -> int:
    audio = [read_wav(p, cfg.audio.sample_rate) for p in args.wavs]  # every file is checked first
    with app.one_shot(cfg, "asr") as parts:
        for path, samples in zip(args.wavs, audio, strict=True):
            print(f"{path}\t{asyncio.run(parts.asr.transcribe(samples))}", flush=True)
    return 0


def say(cfg: Config, args: argparse.Namespace) -> int:
    from assistant.text.normalize import normalize

    if not any(ch.isalnum() for ch in normalize(args.text)):
        print(f"assistant: there is nothing to speak in {args.text!r}", file=sys.stderr)
        return 2
    sink = _sink(cfg, args.output)
    with app.one_shot(cfg, "tts") as parts:
        asyncio.run(_speak(parts.tts, args.text, sink, args.output))
    return 0


def ask(cfg: Config, args: argparse.Namespace) -> int:
    sink = _sink(cfg, args.output)
    # The TTS's files are checked before the tools answer: nothing is saved that cannot be confirmed.
    with app.one_shot(cfg, "tts", answers=True) as parts:
        responder = _responder(parts)
        answer = responder.local(args.text)  # a frequent command or an honest limit: no LLM loaded for it
        if answer is None:
            parts.add_llm()
            answer = responder.answer(args.text)
        asyncio.run(_answer(parts, answer.source, answer.text, sink, args.output))
    return 0


def answer_file(cfg: Config, args: argparse.Namespace) -> int:
    audio = read_wav(args.wav, cfg.audio.sample_rate)
    sink = _sink(cfg, args.output)
    with app.one_shot(cfg, "asr", "llm", "tts", answers=True) as parts:
        text = asyncio.run(parts.asr.transcribe(audio))
        print(f"你: {text}", flush=True)
        if not text:
            print("(nothing was heard in the recording)", file=sys.stderr)
            return 1
        likely = asyncio.run(char_logprob(parts.asr, text))
        others = asyncio.run(readings(parts.asr, text))
        spoken_s = len(audio) / cfg.audio.sample_rate
        answer = _responder(parts).answer(text, spoken_s=spoken_s, char_logprob=likely, readings=others)
        asyncio.run(_answer(parts, answer.source, answer.text, sink, args.output))
    return 0


def _sink(cfg: Config, output: Path | None) -> AudioSink | None:
    """The speaker, opened before any model loads (a missing sound card is found at once); None with -o."""
    if output is not None:
        return None
    return AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate, cfg.audio.playback_buffer_ms)


def _responder(parts: app.OneShot) -> Responder:
    if parts.responder is None:  # pragma: no cover - asked for with answers=True
        raise RuntimeError("one_shot(answers=True) gives a responder")
    return parts.responder


async def _answer(parts: app.OneShot, llm: Any, question: str, sink: AudioSink | None,
                  output: Path | None) -> None:
    """Print the reply as the LLM writes it and speak it at the same time, chunk by chunk."""
    from assistant.clock import WallClock
    from assistant.events import EventBus
    from assistant.pipeline import PipelineOptions, SpeechPipeline

    tts = parts.tts
    target = sink if sink is not None else WavFileSink(output or Path("answer.wav"), tts.sample_rate)
    print("听说: ", end="", flush=True)
    pipeline = SpeechPipeline(llm, tts, target, EventBus(WallClock()), PipelineOptions.from_config(parts.cfg),
                              lambda: None, cache=parts.phrase_cache,
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
