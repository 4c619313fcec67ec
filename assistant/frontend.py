"""What the front ends share (``assistant run``, ``assistant satellite`` and the live probes of the
tests): the configured sound card opened, a recording folder, and a session held on the devices
until the source ends. A front end calls these; no front end imports another."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import structlog

from assistant import app, health, systemd
from assistant.audio.alsa import AlsaSink, AlsaSource
from assistant.audio.protocols import AudioDeviceError, AudioSink, AudioSource
from assistant.audio.recorder import SessionRecorder
from assistant.clock import SampleClock
from assistant.config import Config
from assistant.events import EventBus, Subscriber
from assistant.tasks import TaskScope

log = structlog.get_logger("app")


def open_devices(cfg: Config, clock: SampleClock) -> tuple[AlsaSource, AlsaSink]:
    """The configured microphone and speaker; a missing sound card is one clear AudioDeviceError."""
    source = AlsaSource(cfg.audio.capture_device, clock, cfg.audio.chunk_samples)
    try:
        sink = AlsaSink(cfg.audio.playback_device, cfg.audio.playback_rate, cfg.audio.playback_buffer_ms)
    except Exception:
        source.close()
        raise
    return source, sink


def recorder(folder: Path, sample_rate: int, max_minutes: float = 0.0, keep: int = 0) -> SessionRecorder:
    """A new session folder under ``folder`` (named by the local start time) for ``run --record``;
    after ``max_minutes`` the next one begins, and only the last ``keep`` are kept."""
    path = _session_folder(folder)
    try:
        return SessionRecorder(path, sample_rate, max_s=60 * max_minutes, keep=keep,
                               next_folder=lambda: _session_folder(folder))
    except OSError as exc:
        raise AudioDeviceError(f"cannot record into {path}: {exc.strerror or exc}") from None


def _session_folder(folder: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = folder / f"session-{stamp}"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"session-{stamp}-{n}"
    return path


async def hold(parts: app.Parts, clock: SampleClock, source: AudioSource, sink: AudioSink,
               subscribers: Sequence[Subscriber] = (), recorder: SessionRecorder | None = None) -> None:
    """Hold conversations on the given devices until the source ends (Ctrl-C or SIGTERM close it).

    With a ``recorder`` the microphone, the playback and the events are saved as they happen.
    """
    cfg = parts.cfg
    bus = EventBus(clock)
    for fn in subscribers:
        bus.subscribe(fn)
    if recorder is not None:
        bus.subscribe(recorder.event)
    session = parts.session(clock, bus, source, sink, tap=recorder)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, source.close)
    session.heartbeat = systemd.Heartbeat()  # WatchdogSec: pinged from the pump, so a stalled pump is restarted
    log.info("ready", wake=cfg.wake.mode, keywords=list(cfg.wake.keywords))
    systemd.notify("READY=1")
    watch = TaskScope("health")
    watch.spawn(health.report_every(cfg.log.health_interval_s, parts.pids), "health")
    try:
        await session.run()
    finally:
        await watch.cancel()
