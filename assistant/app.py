"""The composition root: everything a session needs, built from config in one place."""

from __future__ import annotations

import asyncio
import signal
from contextlib import suppress

import structlog

from assistant.audio.alsa import AlsaSink, AlsaSource
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.events import EventBus
from models.protocols import ModelError, Vad
from models.sherpa_vad import SherpaSileroVad, silero_model_path
from states.session import Backends, Session

log = structlog.get_logger("app")


def build_vad(cfg: Config) -> Vad:
    """The configured VAD backend (not yet loaded)."""
    return SherpaSileroVad(silero_model_path(cfg.model_dirs()), threshold=cfg.vad.threshold)


def build_backends(cfg: Config) -> Backends:
    """The configured backends for a conversation.

    This version ships the real VAD only; ASR, LLM, TTS and KWS backends are not part of it yet,
    so a conversation cannot be started from the command line (the tests inject test doubles).
    """
    raise ModelError("this version ships no ASR, LLM or TTS backend yet, so it cannot hold a "
                     "conversation; `assistant vad FILE.wav` runs the real VAD and endpointing")


def load(backends: Backends) -> None:
    for model in (backends.vad, backends.kws, backends.asr, backends.llm, backends.tts):
        if model is not None:
            model.load()


def close(backends: Backends) -> None:
    for model in (backends.vad, backends.kws, backends.asr, backends.llm, backends.tts):
        if model is not None:
            model.close()


async def run_live(cfg: Config, backends: Backends) -> None:
    """Hold conversations on the ALSA devices until interrupted (Ctrl-C or SIGTERM)."""
    clock = SampleClock(cfg.audio.sample_rate, realtime=True)
    bus = EventBus(clock)
    source = AlsaSource(cfg.audio.capture_device, clock, cfg.audio.chunk_samples)
    try:
        sink = AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate, cfg.audio.playback_buffer_ms)
    except Exception:
        source.close()
        raise
    session = Session(cfg, clock, bus, source, sink, backends)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError):
            loop.add_signal_handler(sig, source.close)
    log.info("listening", capture=cfg.audio.capture_device, playback=cfg.audio.playback_device)
    try:
        await session.run()
    finally:
        source.close()
        sink.close()
